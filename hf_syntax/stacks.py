"""The encoder and decoder stacks of the syntax-aware core: embeddings in, layer stack, hidden states out.

`SyntaxTransformerEncoder` embeds tokens (+ syntax feature columns) and positions, builds the relative terms' relations
once for the whole stack and runs the encoder layers chosen by `config.encoder_layer_type` (`ENCODER_LAYERS`);
`SyntaxTransformerDecoder` does the same causally, cached through transformers' `EncoderDecoderCache`. Each stack
takes its side's syntax columns as keyword arguments and reads those its terms and embeddings need. Layers return a
`LayerOutput` the stacks read by name. The `PreTrainedModel` classes that own the stacks, their losses and outputs
are in `modeling_syntax_transformer.py`.
"""

import math
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F
from transformers.cache_utils import DynamicCache, EncoderDecoderCache
from transformers.modeling_outputs import BaseModelOutput, BaseModelOutputWithPastAndCrossAttentions
from transformers.utils import is_torchdynamo_compiling

from .attention import causal_mask, explicit_weights, matmul_dtype, padding_mask, term_relations
from .columns import check_ids, check_integer_column, check_tensor
from .embeddings import SourceFeatureEmbedding, sinusoidal_positions
from .graph_transformer import GraphEncoderLayer
from .layers import DecoderLayer, EncoderLayer
from .self_parse import SelfParser

CACHE_NAME = "cache" if "cache" in BaseModelOutputWithPastAndCrossAttentions.__dataclass_fields__ else "past_key_values"
"""What the installed transformers calls the decoder cache: `cache` from 5.24 on, `past_key_values` before. It is
the field of its model outputs and the keyword `generate` hands to `forward` and reads back from the outputs, so
our outputs carry the cache under this name."""

ENCODER_LAYERS = {"standard": EncoderLayer, "graph": GraphEncoderLayer}
"""`config.encoder_layer_type` -> the encoder layer class; every layer takes (config, layer_idx) and returns a
`layers.LayerOutput`."""

FEATURIZER_HINT = (
    "To translate text, use the pipeline, which parses the text and computes the columns itself (hf_syntax need "
    "not be installed): `transformers.pipeline(\"translation\", model=<this model's folder or Hub id>, "
    "trust_remote_code=True)`. To compute them yourself, use the featurizer that built the training data: "
    "`hf_syntax.SyntaxFeaturizer(tokenizer, parser=config.source_parser)` for raw text, or the "
    "`hf_syntax.parse_and_align` map function for a datasets dataset."
)


@dataclass
class SyntaxEncoderOutput(BaseModelOutput):
    """`parse_log_probs`: (batch, n, n) log-probabilities of each token's head from the DBSA encoder parse head;
    `self_parse_log_probs`: the same from a self-parsing model's bottom parser (`self_parse.py`)."""

    parse_log_probs: torch.FloatTensor | None = None
    self_parse_log_probs: torch.FloatTensor | None = None


@dataclass
class SyntaxDecoderOutput(BaseModelOutputWithPastAndCrossAttentions):
    """`parse_log_probs`: (batch, queries, keys) head log-probabilities of the DBSA decoder parse head."""

    parse_log_probs: torch.FloatTensor | None = None


def _kept(per_layer: tuple | None, item) -> tuple | None:
    """`per_layer` + (`item`,) for an output the caller asked for (a tuple), None for one it did not."""
    return None if per_layer is None else per_layer + (item,)


def _embedding_scale(config) -> float:
    return math.sqrt(config.d_model) if config.scale_embedding else 1.0


def check_padding_mask(attention_mask: torch.Tensor | None, absolute_positions: bool) -> None:
    """Every source row must hold a token (an all-padding row gave a finite output, and generate translated the
    padding), and with absolute positions padding must be on the right: they count from the row's first column, so a
    left-padded sentence was encoded at other positions than the same sentence alone. The values are read once, and
    only eagerly (a compiled graph cannot branch on them)."""
    if attention_mask is None or is_torchdynamo_compiling():
        return
    kept = attention_mask.bool()
    empty = ~kept.any(dim=1)
    left_padded = ~kept[:, 0] if absolute_positions else empty
    if not bool((empty | left_padded).any()):
        return
    if empty.any():
        raise ValueError(f"`attention_mask` row {int(empty.nonzero()[0])} is all zeros: that sentence has no token to "
                         "encode. Drop empty sentences from the batch.")
    raise ValueError(f"`attention_mask` row {int(left_padded.nonzero()[0])} starts with padding, but this model's "
                     "absolute positions count from the first column, so left padding changes its output: pad on the "
                     "right (tokenizer.padding_side = 'right').")


def check_same_batch(name: str, tensor: torch.Tensor, reference_name: str, reference: torch.Tensor) -> None:
    """One row of `tensor` per sentence of `reference` (a mask per token where the shapes must be equal is checked
    by the caller)."""
    if tensor.shape[0] != reference.shape[0]:
        raise ValueError(f"`{name}` has {tensor.shape[0]} rows but `{reference_name}` has {reference.shape[0]}: "
                         f"one row per sentence of the batch.")


def check_growing_cache(cache) -> None:
    """The decoder attends to every key its cache holds, which must be the positions decoded so far. A cache of fixed
    length (generate's ``cache_implementation="static"``, ``"sliding_window"``, ``"offloaded_static"``, ...: slots
    set aside up to the longest output, for torch.compile) holds empty slots too, and failed with a mask-shape error
    that named none of this."""
    self_attention = cache.self_attention_cache if isinstance(cache, EncoderDecoderCache) else cache
    if self_attention is not None and any(layer.is_compileable for layer in getattr(self_attention, "layers", ())):
        raise ValueError(f"The decoder cache is of fixed length ({type(self_attention).__name__}: generate's "
                         "cache_implementation 'static', 'sliding_window' and the like), but this model's decoder "
                         "attends to every cached slot, so it needs a cache that grows with the output: leave "
                         "cache_implementation unset (or 'dynamic'). For faster decoding on the CPU, "
                         "hf_syntax.fast_inference.optimize_for_cpu(model) sets a cache made for this model.")


def call_or_config(config, flag: str, value: bool | None) -> bool:
    """A call's `flag` (`use_cache`, `return_dict`, `output_attentions`, ...), or the config's where the call leaves
    it unset, as in every transformers model."""
    return bool(getattr(config, flag) if value is None else value)


def as_returned(output, config, return_dict: bool | None):
    """`output`, or its tuple where the call's `return_dict` (else the config's) is False, as in every transformers
    model."""
    return output if call_or_config(config, "return_dict", return_dict) else output.to_tuple()


def ids_or_embeddings(ids: torch.Tensor | None, embeddings: torch.Tensor | None, names: tuple[str, str],
                      table: nn.Embedding, vocab_size: int | None = None) -> torch.Tensor:
    """The one of a stack's token ids (checked below `vocab_size` where given) or their embeddings (`table`'s width,
    floats) that was given: its first two dimensions are (batch, length)."""
    ids_name, embeddings_name = names
    if (ids is None) == (embeddings is None):
        raise ValueError(f"Pass `{ids_name}` (batch, length) or `{embeddings_name}` (batch, length, "
                         f"{table.embedding_dim}), exactly one of them.")
    if ids is not None:
        check_ids(ids_name, ids, vocab_size)
        return ids.long()  # int32 (numpy's default on Windows) or int16 ids: the embedding lookup takes int64
    width = table.embedding_dim
    if not torch.is_tensor(embeddings) or embeddings.dim() != 3 or embeddings.shape[-1] != width:
        shape = tuple(embeddings.shape) if torch.is_tensor(embeddings) else type(embeddings).__name__
        raise ValueError(f"`{embeddings_name}` is {shape}; give a float tensor (batch, length, {width}): token "
                         f"embeddings as the model's embedding table gives them.")
    if not embeddings.is_floating_point():
        raise ValueError(f"`{embeddings_name}` holds {embeddings.dtype}, not embeddings; token ids go in `{ids_name}`.")
    return embeddings


def needed_columns(needed: tuple[str, ...], shape: torch.Size, given: dict, side: str) -> dict[str, torch.Tensor]:
    """The columns `needed` out of those `given`, each checked to be there with one value per token of the `side`
    stack's input, (batch, length) `shape`."""
    columns = {}
    for name in needed:
        column = given.get(name)
        if column is None:
            raise ValueError(f"This model reads the {side} columns {list(needed)} but `{name}` was not given. "
                             f"{FEATURIZER_HINT}")
        check_tensor(name, column)
        if column.shape != shape:
            added = " (positions put before it, as PEFT's prompt tuning does, need values too)" * (side == "source")
            raise ValueError(f"{name} has shape {tuple(column.shape)} but the {side} has {tuple(shape)} (sentences, "
                             f"tokens): feature columns hold one value per token{added}, aligned to the subwords.")
        check_integer_column(name, column, "syntax columns")
        columns[name] = column
    return columns


class SyntaxTransformerEncoder(nn.Module):
    """Token (+ syntax feature) embeddings, sinusoidal positions and a stack of encoder layers.

    The source syntax columns come as keyword arguments named as in the column table (`dep_depths=...`,
    `pos_ids=...`); the encoder reads those its config needs (`config.needs_source_features`: the embedded
    features and the columns of its relative terms) and ignores the rest, so a new term or feature reading a
    column the featurizer makes needs no change here. The wildcard is named `kwargs` because `generate` passes
    everything on to an encoder only when its `forward` has a parameter of that name; it passes the columns on
    every step, but the encoder only runs once, so they cost nothing after the first call.
    """

    main_input_name = "input_ids"

    def __init__(self, config, embed_tokens: nn.Embedding):
        super().__init__()
        self.config = config
        self.embed_tokens = embed_tokens
        self.embed_scale = _embedding_scale(config)
        self.feature_embedding = SourceFeatureEmbedding(config) if config.source_features else None
        layer_class = ENCODER_LAYERS[config.encoder_layer_type]
        self.layers = nn.ModuleList([layer_class(config, i) for i in range(config.encoder_layers)])
        self.self_parser = SelfParser(config) if config.self_parse_layers else None

    def read_source_tokenizer(self, tokenizer) -> None:
        """What the encoder reads of its source vocabulary besides the ids: a self-parser's word starts."""
        if self.self_parser is not None:
            self.self_parser.set_word_roles(tokenizer)

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        inputs_embeds: torch.Tensor | None = None,
        **kwargs,
    ) -> SyntaxEncoderOutput | tuple:
        r"""
        inputs_embeds: instead of `input_ids`, their token embeddings as `get_input_embeddings()` gives them (batch,
            source_length, its width), scaled as the model scales its own; e.g. PEFT's prompt tuning puts learnt
            embeddings before the source's. The syntax columns and `attention_mask` then cover every position.
        """
        config = self.config
        output_attentions = call_or_config(config, "output_attentions", output_attentions)
        output_hidden_states = call_or_config(config, "output_hidden_states", output_hidden_states)
        explicit = explicit_weights(config, output_attentions)
        source = ids_or_embeddings(input_ids, inputs_embeds, ("input_ids", "inputs_embeds"), self.embed_tokens,
                                   config.vocab_size)
        if inputs_embeds is not None and self.self_parser is not None:
            raise ValueError("This model parses the source itself and reads its words from `input_ids` (which "
                             "subwords start a word); it cannot take `inputs_embeds`. Pass `input_ids`.")
        source_shape = source.shape[:2]
        if attention_mask is not None:  # a list was "'list' object has no attribute 'shape'"
            check_tensor("attention_mask", attention_mask)
        if attention_mask is not None and attention_mask.shape != source_shape:
            raise ValueError(f"`attention_mask` has shape {tuple(attention_mask.shape)} but the source "
                             f"{tuple(source_shape)}: one value per source token (1 = a token, 0 = padding).")
        check_padding_mask(attention_mask, config.absolute_positions)
        length = source_shape[1]
        if config.absolute_positions and length > config.max_position_embeddings:
            raise ValueError(
                f"The source has {length} tokens but max_position_embeddings={config.max_position_embeddings}: "
                "truncate it (tokenizer(..., truncation=True, max_length=...)) or raise max_position_embeddings."
            )
        columns = needed_columns(config.needs_source_features, source_shape, kwargs, "source")
        hidden = (self.embed_tokens(source) if inputs_embeds is None else source) * self.embed_scale
        if self.feature_embedding is not None:
            hidden = self.feature_embedding(hidden, columns)
        if config.absolute_positions:
            positions = torch.arange(length, device=hidden.device)
            hidden = hidden + sinusoidal_positions(positions, config.d_model, hidden.dtype)
        hidden = F.dropout(hidden, p=config.dropout, training=self.training)

        mask = padding_mask(attention_mask, hidden.dtype)
        self_parse = None
        if self.self_parser is not None:  # a self-parsing model makes the depths its depth term reads
            self_parse = self.self_parser(hidden, mask)
            columns["dep_depths"] = self.self_parser.depths(self_parse, source, attention_mask,
                                                            kwargs.get("dep_depths"))
        positions = torch.arange(length, device=hidden.device)
        # What layers read besides hidden states and mask (each names its own in `stack_inputs`): the relative
        # terms' relations, and what the previous layer handed over (the Graph-Transformer's P and I; None at first).
        relations = term_relations(config, "encoder", positions, length, columns, source_shape[0],
                                   matmul_dtype(hidden))
        stack_inputs = {"term_relations": relations, "streams": None}

        all_hidden = (hidden,) if output_hidden_states else None
        all_attentions = () if output_attentions else None
        parse_log_probs = None
        for layer in self.layers:
            output = layer(hidden, mask, explicit_weights=explicit,
                           **{name: stack_inputs[name] for name in layer.stack_inputs})
            hidden, stack_inputs["streams"] = output.hidden_states, output.streams
            parse_log_probs = output.parse_log_probs if output.parse_log_probs is not None else parse_log_probs
            all_hidden, all_attentions = _kept(all_hidden, hidden), _kept(all_attentions, output.attentions)
        output = SyntaxEncoderOutput(
            last_hidden_state=hidden, hidden_states=all_hidden, attentions=all_attentions,
            parse_log_probs=parse_log_probs, self_parse_log_probs=self_parse,
        )
        return as_returned(output, config, return_dict)


class SyntaxTransformerDecoder(nn.Module):
    """Causal decoder; incremental decoding goes through `EncoderDecoderCache` (self- and cross-attention). The target
    syntax columns come as keyword arguments, as the source ones to the encoder; the decoder's relative terms read
    those they need (`config.term_columns("decoder")`)."""

    def __init__(self, config, embed_tokens: nn.Embedding):
        super().__init__()
        self.config = config
        self.embed_tokens = embed_tokens
        self.embed_scale = _embedding_scale(config)
        self.layers = nn.ModuleList([DecoderLayer(config, i) for i in range(config.decoder_layers)])

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        encoder_hidden_states: torch.Tensor | None = None,
        encoder_attention_mask: torch.Tensor | None = None,
        cache: EncoderDecoderCache | None = None,
        use_cache: bool | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        inputs_embeds: torch.Tensor | None = None,
        **columns,
    ) -> SyntaxDecoderOutput | tuple:
        """`inputs_embeds`: instead of `input_ids`, their embeddings (the model's `decoder_inputs_embeds`)."""
        config = self.config
        output_attentions = call_or_config(config, "output_attentions", output_attentions)
        output_hidden_states = call_or_config(config, "output_hidden_states", output_hidden_states)
        explicit = explicit_weights(config, output_attentions)
        # shape and type only: the model checks the ids' range once, not at every decoding step
        target = ids_or_embeddings(input_ids, inputs_embeds, ("decoder_input_ids", "decoder_inputs_embeds"),
                                   self.embed_tokens)
        check_growing_cache(cache)
        past_length = cache.get_seq_length() if cache is not None else 0
        if encoder_hidden_states is not None:
            check_same_batch("decoder_input_ids" if inputs_embeds is None else "decoder_inputs_embeds", target,
                             "input_ids", encoder_hidden_states)
            if encoder_attention_mask is not None:
                check_tensor("attention_mask", encoder_attention_mask)
                if encoder_attention_mask.shape != encoder_hidden_states.shape[:2]:
                    raise ValueError(f"`attention_mask` has shape {tuple(encoder_attention_mask.shape)} but the "
                                     f"encoder outputs cover {tuple(encoder_hidden_states.shape[:2])}: pass the source "
                                     "mask the encoder outputs were computed with.")
        if use_cache and cache is None:
            cache = EncoderDecoderCache(DynamicCache(config=config), DynamicCache(config=config))
        batch, length = target.shape[:2]
        total = past_length + length
        if attention_mask is not None:
            check_tensor("decoder_attention_mask", attention_mask)
        if attention_mask is not None and attention_mask.shape != (batch, total):
            raise ValueError(  # a longer mask was cut to its last columns silently, a shorter one a size mismatch
                f"`decoder_attention_mask` has shape {tuple(attention_mask.shape)} but the decoder has "
                f"{batch} rows of {total} tokens ({past_length} cached + {length} new): one value per "
                "decoder token, the cached ones included."
            )
        if config.absolute_positions and total > config.max_position_embeddings:
            raise ValueError(
                f"The target reached {total} tokens but max_position_embeddings={config.max_position_embeddings}: "
                "truncate the labels or lower max_length/max_new_tokens for generation."
            )
        positions = torch.arange(past_length, total, device=target.device)
        hidden = (self.embed_tokens(target) if inputs_embeds is None else target) * self.embed_scale
        if config.absolute_positions:
            hidden = hidden + sinusoidal_positions(positions, config.d_model, hidden.dtype)
        hidden = F.dropout(hidden, p=config.dropout, training=self.training)

        # One new token (cached decoding) may see every key: no mask to build or add at each step.
        needs_self_mask = length > 1 or (attention_mask is not None
                                         and (is_torchdynamo_compiling() or not attention_mask.all()))
        self_mask = causal_mask(positions, total, attention_mask, hidden.dtype) if needs_self_mask else None
        cross_mask = padding_mask(encoder_attention_mask, hidden.dtype)
        columns = needed_columns(config.term_columns("decoder"), target.shape[:2], columns, "target")
        relations = term_relations(config, "decoder", positions, total, columns, batch,
                                   matmul_dtype(hidden))

        all_hidden = (hidden,) if output_hidden_states else None
        self_attentions = () if output_attentions else None
        cross_attentions = () if output_attentions else None
        parse_log_probs = None
        for layer in self.layers:
            output = layer(hidden, self_mask, encoder_hidden_states, cross_mask, cache=cache,
                           term_relations=relations, explicit_weights=explicit)
            hidden = output.hidden_states
            parse_log_probs = output.parse_log_probs if output.parse_log_probs is not None else parse_log_probs
            all_hidden = _kept(all_hidden, hidden)
            self_attentions = _kept(self_attentions, output.attentions)
            cross_attentions = _kept(cross_attentions, output.cross_attentions)
        output = SyntaxDecoderOutput(
            last_hidden_state=hidden, hidden_states=all_hidden, attentions=self_attentions,
            cross_attentions=cross_attentions, parse_log_probs=parse_log_probs,
            **{CACHE_NAME: cache if use_cache else None},
        )
        return as_returned(output, config, return_dict)


__all__ = [
    "CACHE_NAME",
    "ENCODER_LAYERS",
    "FEATURIZER_HINT",
    "SyntaxDecoderOutput",
    "SyntaxEncoderOutput",
    "SyntaxTransformerDecoder",
    "SyntaxTransformerEncoder",
    "as_returned",
    "check_same_batch",
    "needed_columns",
]
