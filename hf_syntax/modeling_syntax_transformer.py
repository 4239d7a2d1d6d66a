"""The composable encoder-decoder core: a post-LN Transformer whose syntax mechanisms are switched on by its config.

Data flow: `input_ids` (+ feature columns) -> `SyntaxTransformerEncoder` -> `SyntaxTransformerDecoder` (causal,
cached through transformers' `EncoderDecoderCache`) -> tied output projection -> label-smoothed loss plus the DBSA
parse losses when parse heads are configured. Every paper variant is a preset of this model (see `variants.py`).
This module holds the `PreTrainedModel` classes (weight init, embeddings, outputs, the loss); the two stacks they
own are in `stacks.py`, the parse losses in `parse_losses.py`.
"""

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import fields as dataclass_fields

import torch
from torch import nn
from torch.nn import functional as F
from transformers import GenerationMixin, PreTrainedModel
from transformers import initialization as init
from transformers.cache_utils import Cache, EncoderDecoderCache
from transformers.generation.configuration_utils import GenerationMode
from transformers.modeling_outputs import Seq2SeqLMOutput, Seq2SeqModelOutput
from transformers.utils import ModelOutput

from .attention import RelativeTerm
from .columns import IGNORE_INDEX, SYNTAX_INPUTS, check_ids, check_tensor
from .configuration_syntax_transformer import SyntaxTransformerConfig
from .generation_checks import check_generation_count, check_output_limit
from .parse_head import DBSA_PARSE_HEAD, BiaffineParseHead
from .parse_losses import (
    decoder_parse_loss, encoder_parse_loss, parse_loss_weights, self_parse_loss, shift_decoder_heads,
    weighted_parse_losses,
)
from .saved_files import CheckedFromPretrained
from .stacks import (
    CACHE_NAME,
    FEATURIZER_HINT,
    SyntaxEncoderOutput,
    SyntaxTransformerDecoder,
    SyntaxTransformerEncoder,
    as_returned,
    call_or_config,
    check_same_batch,
)


@dataclass
class SyntaxSeq2SeqModelOutput(Seq2SeqModelOutput):
    encoder_parse_log_probs: torch.FloatTensor | None = None
    decoder_parse_log_probs: torch.FloatTensor | None = None
    encoder_self_parse_log_probs: torch.FloatTensor | None = None


@dataclass
class SyntaxSeq2SeqLMOutput(Seq2SeqLMOutput):
    """`loss` = `translation_loss` + lambda_enc * `encoder_parse_loss` + lambda_dec * `decoder_parse_loss`
    (+ `self_parse_loss_weight` * `self_parse_loss` for a self-parsing model); the parts (`parse_losses.LOSS_PARTS`)
    are reported separately so training logs can show them."""

    translation_loss: torch.FloatTensor | None = None
    encoder_parse_loss: torch.FloatTensor | None = None
    decoder_parse_loss: torch.FloatTensor | None = None
    encoder_parse_log_probs: torch.FloatTensor | None = None
    decoder_parse_log_probs: torch.FloatTensor | None = None
    self_parse_loss: torch.FloatTensor | None = None
    encoder_self_parse_log_probs: torch.FloatTensor | None = None


def shift_tokens_right(labels: torch.Tensor, pad_token_id: int, decoder_start_token_id: int) -> torch.Tensor:
    """Teacher-forcing decoder inputs: start token, then the labels without their last position (-100 -> pad)."""
    shifted = labels.new_full(labels.shape, pad_token_id)
    shifted[:, 1:] = labels[:, :-1]
    shifted[:, 0] = decoder_start_token_id
    return shifted.masked_fill(shifted == IGNORE_INDEX, pad_token_id)


def _either_cache(cache: Cache | None, past_key_values: Cache | None) -> Cache | None:
    """The decoder cache given under either name: `generate` passes it as `past_key_values` before transformers 5.24
    and as `cache` from 5.24 on, whose own models still accept the old name."""
    if past_key_values is None:
        return cache
    if cache is not None:
        raise ValueError("Pass the decoder cache as `cache` or as `past_key_values`, not both.")
    return past_key_values


def takes_syntax_columns(forward: Callable) -> Callable:
    """`forward` (which receives the syntax columns in `**kwargs`) with every column of `columns.SYNTAX_INPUTS`
    named in its signature as a keyword argument defaulting to None: Trainer keeps the dataset columns a model's
    signature names and `generate` checks its keyword arguments against it, so the table is the one list."""
    signature = inspect.signature(forward)
    *named, wildcard = signature.parameters.values()
    columns = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=torch.LongTensor | None)
               for side in SYNTAX_INPUTS.values() for name in side]
    forward.__signature__ = signature.replace(parameters=[*named, *columns, wildcard])
    return forward


SYNTAX_COLUMN_NAMES = frozenset(name for side in SYNTAX_INPUTS.values() for name in side)
"""What `forward`'s wildcard may hold (see `reject_unknown_keywords`)."""

CUSTOM_CACHE_MODES = (GenerationMode.GREEDY_SEARCH, GenerationMode.SAMPLE, GenerationMode.BEAM_SEARCH,
                      GenerationMode.BEAM_SAMPLE)
"""Decoding modes that only append to and reorder the cache, so a `decoding_cache` may replace transformers' own
(assisted and contrastive decoding also crop and re-batch it)."""


class SyntaxTransformerPreTrainedModel(CheckedFromPretrained, PreTrainedModel):
    config_class = SyntaxTransformerConfig
    base_model_prefix = "model"
    main_input_name = "input_ids"
    supports_gradient_checkpointing = True  # every layer type is a GradientCheckpointingLayer
    # attn_implementation: "sdpa" (the default) or "eager" (attention weights always computed explicitly; see
    # attention.explicit_weights). Both give the same outputs up to float rounding.
    _supports_sdpa = True
    _no_split_modules = ["EncoderLayer", "DecoderLayer"]

    def __init__(self, config: SyntaxTransformerConfig, *inputs, **kwargs):
        # The options are checked when the config is built; one set afterwards (config.parse_layer_encoder = 3)
        # built a model without that part, and only save_pretrained refused it, leaving a folder with no config.
        config.validate()
        super().__init__(config, *inputs, **kwargs)

    def read_source_tokenizer(self, tokenizer) -> None:
        """Take from the source tokenizer what the model needs besides the token ids, once before training: a
        self-parsing model learns which vocabulary entries start a word (saved with the weights from then on); the
        others need nothing. The columns a source needs at inference are `config.needs_source_features`."""
        self.get_encoder().read_source_tokenizer(tokenizer)

    @torch.no_grad()
    def _init_weights(self, module):
        """``weight_init="xavier"`` (Vaswani/fairseq): Xavier-uniform projections, N(0, d^-1/2) embeddings (unit
        variance after the sqrt(d) scale); ``"normal"`` (transformers' Marian): N(0, init_std) for both. Either way
        relative tables are Xavier-uniform and the biaffine key bias u starts at zero; the biaffine U starts at zero
        (uniform parse heads at step 0) for ``parse_score_form="unscaled"`` and Xavier-uniform with gain 1/sqrt(2)
        for ``"scaled"``, as in the DBSA authors' code."""
        normal = self.config.weight_init == "normal"
        if isinstance(module, nn.Linear):
            if normal:
                init.normal_(module.weight, mean=0.0, std=self.config.init_std)
            else:
                init.xavier_uniform_(module.weight)
            if module.bias is not None:
                init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            std = self.config.init_std if normal else module.embedding_dim**-0.5
            init.normal_(module.weight, mean=0.0, std=std)
            if module.padding_idx is not None and not getattr(module.weight, "_is_hf_initialized", False):
                init.zeros_(module.weight[module.padding_idx])
        elif isinstance(module, nn.LayerNorm):
            init.ones_(module.weight)
            init.zeros_(module.bias)
        elif isinstance(module, RelativeTerm):
            for table in (module.key_table, module.value_table):
                if table is not None:
                    init.xavier_uniform_(table)
        elif isinstance(module, BiaffineParseHead):
            if self.config.parse_score_form == "scaled":
                init.xavier_uniform_(module.biaffine, gain=2**-0.5)
            else:
                init.zeros_(module.biaffine)
            init.zeros_(module.key_bias)


class SyntaxTransformerModel(SyntaxTransformerPreTrainedModel):
    """Encoder + decoder without the output projection."""

    def __init__(self, config: SyntaxTransformerConfig):
        super().__init__(config)
        if config.share_encoder_decoder_embeddings:
            self.shared = nn.Embedding(config.vocab_size, config.d_model, config.pad_token_id)
            source_embeddings = target_embeddings = self.shared
            self._tied_weights_keys = {
                "encoder.embed_tokens.weight": "shared.weight",
                "decoder.embed_tokens.weight": "shared.weight",
            }
        else:
            source_embeddings = nn.Embedding(config.vocab_size, config.source_word_embedding_dim, config.pad_token_id)
            target_embeddings = nn.Embedding(config.decoder_vocab_size, config.d_model, config.pad_token_id)
        self.encoder = SyntaxTransformerEncoder(config, source_embeddings)
        self.decoder = SyntaxTransformerDecoder(config, target_embeddings)
        self.post_init()

    def get_input_embeddings(self):
        return self.encoder.embed_tokens

    def set_input_embeddings(self, embeddings):
        self.encoder.embed_tokens = embeddings
        if self.config.share_encoder_decoder_embeddings:
            self.shared = self.decoder.embed_tokens = embeddings

    def get_encoder(self, modality=None):
        return self.encoder

    def get_decoder(self):
        return self.decoder

    @takes_syntax_columns
    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        decoder_input_ids: torch.LongTensor | None = None,
        decoder_attention_mask: torch.Tensor | None = None,
        encoder_outputs: SyntaxEncoderOutput | tuple | None = None,
        cache: EncoderDecoderCache | None = None,
        use_cache: bool | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        past_key_values: EncoderDecoderCache | None = None,
        inputs_embeds: torch.Tensor | None = None,
        decoder_inputs_embeds: torch.Tensor | None = None,
        **columns,
    ) -> SyntaxSeq2SeqModelOutput:
        r"""
        cache / past_key_values: the decoder's keys and values so far, under either name (see `_either_cache`); the
            output carries it under the installed transformers' name (`CACHE_NAME`).
        inputs_embeds / decoder_inputs_embeds: token embeddings instead of `input_ids` / `decoder_input_ids`, as the
            embedding tables give them (see `SyntaxTransformerEncoder`).
        columns: the syntax columns the featurizer makes (`columns.SYNTAX_INPUTS`, named in the signature): the
            source ones go to the encoder and the target ones to the decoder, which read those their config needs.
        """
        reject_unknown_keywords(self, columns)
        cache = _either_cache(cache, past_key_values)
        if decoder_input_ids is not None and (cache is None or cache.get_seq_length() == 0):
            # The ids' range on a first pass only (training, a decode's first step), not at every cached step; read
            # here, before the encoder's work is queued, so the wait for the values costs nothing on a GPU.
            check_ids("decoder_input_ids", decoder_input_ids, self.config.decoder_vocab_size)
        if encoder_outputs is None:
            encoder_outputs = self.encoder(
                input_ids, attention_mask=attention_mask, output_attentions=output_attentions,
                output_hidden_states=output_hidden_states, return_dict=True, inputs_embeds=inputs_embeds,
                **_side_columns(columns, "source"),
            )
        elif not isinstance(encoder_outputs, SyntaxEncoderOutput):
            encoder_outputs = _as_encoder_output(encoder_outputs)
        if decoder_input_ids is None and decoder_inputs_embeds is None:
            raise ValueError(f"{type(self).__name__} needs `decoder_input_ids` (or `decoder_inputs_embeds`): it has no "
                             "output layer, so it takes no `labels` (SyntaxTransformerForConditionalGeneration shifts "
                             "labels right itself).")
        decoder_outputs = self.decoder(
            decoder_input_ids, attention_mask=decoder_attention_mask, inputs_embeds=decoder_inputs_embeds,
            encoder_hidden_states=encoder_outputs.last_hidden_state, encoder_attention_mask=attention_mask,
            cache=cache,
            use_cache=call_or_config(self.config, "use_cache", use_cache),
            output_attentions=output_attentions, output_hidden_states=output_hidden_states, return_dict=True,
            **_side_columns(columns, "target"),
        )
        outputs = SyntaxSeq2SeqModelOutput(
            last_hidden_state=decoder_outputs.last_hidden_state,
            decoder_hidden_states=decoder_outputs.hidden_states,
            decoder_attentions=decoder_outputs.attentions,
            cross_attentions=decoder_outputs.cross_attentions,
            encoder_last_hidden_state=encoder_outputs.last_hidden_state,
            encoder_hidden_states=encoder_outputs.hidden_states,
            encoder_attentions=encoder_outputs.attentions,
            encoder_parse_log_probs=encoder_outputs.parse_log_probs,
            decoder_parse_log_probs=decoder_outputs.parse_log_probs,
            encoder_self_parse_log_probs=encoder_outputs.self_parse_log_probs,
            **{CACHE_NAME: getattr(decoder_outputs, CACHE_NAME)},
        )
        return as_returned(outputs, self.config, return_dict)


class SyntaxTransformerForConditionalGeneration(SyntaxTransformerPreTrainedModel, GenerationMixin):
    """Translation model: the core plus a (tied) output projection, the label-smoothed loss and DBSA parse losses.

    `forward` names every feature column (Trainer drops the columns `forward` does not name). The model shifts
    `labels` right itself and returns the loss as a mean over tokens, so `accepts_loss_kwargs` is False.

    `parse_loss_step` is the optimizer step the DBSA lambda warm-up (`config.parse_loss_warmup_steps`) ramps
    with. Whoever runs the optimizer sets it (the recipe's `ParseLossWarmupCallback` does, from the Trainer's
    `global_step`), rather than the model counting its own training forward passes: with gradient accumulation a
    step is several forward passes, a resumed run restarts a counter that is not part of the weights while the
    Trainer restores its step, and forward passes for evaluation or analysis must not advance the schedule.

    `decoding_cache` is what `generate` caches keys and values in: None for transformers' default (an
    `EncoderDecoderCache` of `DynamicCache`s), or a factory taking the most positions generate will cache, for
    greedy, sampling and beam-search decoding without a cache of the caller's; `hf_syntax.fast_inference`'s
    `optimize_for_cpu` sets its `DecodingCache`, which copies less per step and gives the same outputs.
    """

    accepts_loss_kwargs = False
    parse_loss_step: int | None = None
    decoding_cache: Callable[[int], Cache] | None = None

    def __init__(self, config: SyntaxTransformerConfig):
        super().__init__(config)
        self.model = SyntaxTransformerModel(config)
        self.lm_head = nn.Linear(config.d_model, config.decoder_vocab_size, bias=config.output_bias)
        source = "model.shared.weight" if config.share_encoder_decoder_embeddings else "model.decoder.embed_tokens.weight"
        self._tied_weights_keys = {"lm_head.weight": source}
        self.post_init()
        if self.generation_config.max_length is None:  # generate() would fall back to 20 new tokens, too few to translate
            self.generation_config.max_length = min(256, config.max_position_embeddings)

    def get_encoder(self, modality=None):
        return self.model.encoder

    def get_decoder(self):
        return self.model.decoder

    def save_pretrained(self, save_directory, *args, state_dict=None, **kwargs):
        """A config set untied (`tie_word_embeddings=False`; peft's `merge_and_unload` sets it whenever the source and
        target tables are separate) while the output layer still shares the target table's storage: transformers
        saves that tensor once, under the table's name, and the untied reload starts the output layer from random.
        The output layer is saved under its own name as well."""
        output = self.get_output_embeddings().weight
        target = self.get_decoder().embed_tokens.weight
        if not self.config.tie_word_embeddings and output.data_ptr() == target.data_ptr():
            state_dict = {**(self.state_dict() if state_dict is None else state_dict),
                          "lm_head.weight": output.detach().clone()}
        return super().save_pretrained(save_directory, *args, state_dict=state_dict, **kwargs)

    def _prepare_cache_for_generation(self, generation_config, model_kwargs, generation_mode, batch_size,
                                      max_cache_length):
        """`decoding_cache` when set and it applies (see the class docstring), else transformers' choice."""
        if (self.decoding_cache is not None and model_kwargs.get(CACHE_NAME) is None
                and generation_config.use_cache is not False and generation_config.cache_implementation is None
                and generation_mode in CUSTOM_CACHE_MODES):
            model_kwargs[CACHE_NAME] = self.decoding_cache(max_cache_length)
            return
        super()._prepare_cache_for_generation(generation_config, model_kwargs, generation_mode, batch_size,
                                              max_cache_length)

    def _validate_generated_length(self, generation_config, input_ids_length, has_default_max_length):
        """`generate` called directly gets the checks the pipeline makes: 0 beams was a ZeroDivisionError, a limit
        of 1 new token beside the forced end token a silently empty translation, a limit past the decoder's position
        table a failure midway that lost the whole batch. With a decoder prefix the limits count from it, as
        transformers' own check says."""
        check_generation_count("num_beams", generation_config.num_beams)
        if input_ids_length == 1:
            new_tokens = generation_config.max_new_tokens
            check_output_limit(new_tokens, None if new_tokens is not None else generation_config.max_length,
                               generation_config.forced_eos_token_id, self.config.max_position_embeddings)
        super()._validate_generated_length(generation_config, input_ids_length, has_default_max_length)

    def _validate_model_kwargs(self, model_kwargs):
        """The inputs `generate` got, checked before transformers reads them: ids or masks given as lists, and a
        decoder prefix without its batch dimension, failed inside transformers ("'list' object has no attribute
        'shape'", "too many indices"). `generate` feeds the decoder the ids it writes, starting from
        `decoder_start_token_id` or a prefix in `decoder_input_ids`; it has no place for decoder embeddings
        (transformers' own seq2seq models take none either). Given them, it also passed its start ids beside them,
        and the refusal named two inputs where the caller gave one."""
        for name in ("input_ids", "decoder_input_ids"):  # type and shape: forward reads the values' range once
            if model_kwargs.get(name) is not None:  # a list or one unbatched row failed inside transformers
                check_ids(name, model_kwargs[name])
        for name in ("attention_mask", "decoder_attention_mask"):
            if model_kwargs.get(name) is not None:
                check_tensor(name, model_kwargs[name])
        if torch.is_tensor(model_kwargs.get("encoder_outputs")):
            _as_encoder_output(model_kwargs["encoder_outputs"])
        if model_kwargs.get("decoder_inputs_embeds") is not None:
            raise ValueError("generate() writes the translation from token ids, so it cannot start from "
                             "`decoder_inputs_embeds`. Give a decoder prefix as `decoder_input_ids` (batch, length), "
                             "or leave it out to start from decoder_start_token_id; `decoder_inputs_embeds` is for "
                             "forward() (training and scoring).")
        super()._validate_model_kwargs(model_kwargs)

    def get_output_embeddings(self):
        return self.lm_head

    def set_output_embeddings(self, embeddings):
        self.lm_head = embeddings

    def _resize_token_embeddings(self, new_num_tokens, pad_to_multiple_of=None, mean_resizing=True):
        """`resize_token_embeddings` resizes the source vocabulary. One vocabulary shared by both sides is also the
        target's: the output layer follows and `decoder_vocab_size` with it (left stale, a saved model would not
        load). Separate vocabularies keep the target's; `resize_decoder_token_embeddings` resizes that."""
        if self.config.share_encoder_decoder_embeddings:
            embeddings = super()._resize_token_embeddings(new_num_tokens, pad_to_multiple_of, mean_resizing)
            self.config.decoder_vocab_size = embeddings.weight.shape[0]
            return embeddings
        embeddings = self._get_resized_embeddings(self.get_input_embeddings(), new_num_tokens, pad_to_multiple_of,
                                                  mean_resizing)
        self.set_input_embeddings(embeddings)
        return embeddings

    def resize_decoder_token_embeddings(self, new_num_tokens: int, mean_resizing: bool = True) -> nn.Embedding:
        """Resize the target vocabulary of a model with separate vocabularies (decoder embeddings, output layer and
        `decoder_vocab_size`), e.g. after adding tokens to its target tokenizer."""
        if self.config.share_encoder_decoder_embeddings:
            raise ValueError("This model's encoder and decoder share one vocabulary: resize it with "
                             "resize_token_embeddings, which resizes both sides.")
        decoder = self.model.decoder
        decoder.embed_tokens = self._get_resized_embeddings(decoder.embed_tokens, new_num_tokens,
                                                            mean_resizing=mean_resizing)
        self.lm_head = self._get_resized_lm_head(self.lm_head, new_num_tokens, mean_resizing=mean_resizing)
        self.config.decoder_vocab_size = new_num_tokens
        self.tie_weights()
        return decoder.embed_tokens

    def prepare_decoder_input_ids_from_labels(self, labels: torch.Tensor):
        missing = [name for name in ("pad_token_id", "decoder_start_token_id") if getattr(self.config, name) is None]
        if missing:  # was a bare TypeError from torch's new_full / item assignment
            raise ValueError(f"Shifting `labels` into decoder inputs needs config {' and '.join(missing)} (None here): "
                             "set it to the target tokenizer's id, or pass `decoder_input_ids` yourself.")
        return shift_tokens_right(labels, self.config.pad_token_id, self.config.decoder_start_token_id)

    @takes_syntax_columns
    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        decoder_input_ids: torch.LongTensor | None = None,
        decoder_attention_mask: torch.Tensor | None = None,
        encoder_outputs: SyntaxEncoderOutput | tuple | None = None,
        cache: EncoderDecoderCache | None = None,
        labels: torch.LongTensor | None = None,
        use_cache: bool | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        past_key_values: EncoderDecoderCache | None = None,
        inputs_embeds: torch.Tensor | None = None,
        decoder_inputs_embeds: torch.Tensor | None = None,
        **columns,
    ) -> SyntaxSeq2SeqLMOutput | tuple:
        r"""
        cache / past_key_values: the decoder's keys and values so far, under either name (see `_either_cache`).
        inputs_embeds / decoder_inputs_embeds: token embeddings instead of `input_ids` / `decoder_input_ids`, as the
            embedding tables give them (see `SyntaxTransformerEncoder`).
        labels: target ids (batch, target_length), -100 where no loss is wanted; shifted right internally.
        columns: the syntax columns (`columns.SYNTAX_INPUTS`, named in the signature), aligned to the subwords:
            dep_heads: per source token, the 0-based index of its head token (-100 unsupervised); trains the DBSA
            encoder parse head. decoder_dep_heads: the same for `labels` positions (trains the decoder parse head).
            dep_depths: per source token, the depth of its word in the dependency tree (-1 for special tokens);
            needed by the dependency relative-depth attention term.
            pos_ids / case_ids / subword_tags: source syntax features of the syntax-infused embedding.
        """
        reject_unknown_keywords(self, columns)
        if labels is None and decoder_input_ids is None and decoder_inputs_embeds is None:
            raise ValueError("Pass `decoder_input_ids` or `labels` (the model shifts labels right itself).")
        if labels is not None:
            check_ids("labels", labels, self.config.decoder_vocab_size, ignore=IGNORE_INDEX)
            labels = labels.long()  # int32 labels (numpy's default on Windows) failed inside cross_entropy
            if input_ids is not None:
                check_ids("input_ids", input_ids)  # its shape first: a 3-d batch was named a row-count mismatch
                check_same_batch("labels", labels, "input_ids", input_ids)
            elif torch.is_tensor(inputs_embeds):
                check_same_batch("labels", labels, "inputs_embeds", inputs_embeds)
            use_cache = False
            if decoder_input_ids is None and decoder_inputs_embeds is None:
                decoder_input_ids = self.prepare_decoder_input_ids_from_labels(labels)
            _check_one_label_per_decoder_input(labels, decoder_input_ids, decoder_inputs_embeds)
        outputs = self.model(
            input_ids, attention_mask=attention_mask, decoder_input_ids=decoder_input_ids,
            decoder_attention_mask=decoder_attention_mask, encoder_outputs=encoder_outputs, cache=cache,
            use_cache=use_cache, output_attentions=output_attentions, output_hidden_states=output_hidden_states,
            return_dict=True, past_key_values=past_key_values, inputs_embeds=inputs_embeds,
            decoder_inputs_embeds=decoder_inputs_embeds, **columns,
        )
        logits = self.lm_head(outputs.last_hidden_state)

        loss = translation_loss = encoder_parse = decoder_parse = self_parse = None
        if labels is not None:
            translation_loss = F.cross_entropy(
                logits.flatten(0, 1).float(), labels.flatten(), ignore_index=IGNORE_INDEX,
                label_smoothing=self.config.label_smoothing,
            )
            # A batch without a supervised label: 0 (as the parse losses give), not the mean over nothing (NaN);
            # chosen on the device, without a wait, and the mean itself is untouched.
            translation_loss = torch.where((labels != IGNORE_INDEX).any(), translation_loss,
                                           translation_loss.new_zeros(()))
            encoder_parse = encoder_parse_loss(self.config, outputs.encoder_parse_log_probs,
                                               columns.get(DBSA_PARSE_HEAD.gold_columns["encoder"]), FEATURIZER_HINT,
                                               attention_mask=attention_mask)
            decoder_parse = decoder_parse_loss(self.config, outputs.decoder_parse_log_probs,
                                               columns.get(DBSA_PARSE_HEAD.gold_columns["decoder"]), labels,
                                               decoder_attention_mask)
            self_parse = self_parse_loss(self.config, outputs.encoder_self_parse_log_probs,
                                         columns.get(DBSA_PARSE_HEAD.gold_columns["encoder"]), FEATURIZER_HINT,
                                         attention_mask)
            loss = translation_loss
            for weighted in self.weighted_parse_losses(encoder_parse, decoder_parse, self_parse):
                loss = loss + weighted

        result = SyntaxSeq2SeqLMOutput(
            loss=loss, logits=logits, **{CACHE_NAME: getattr(outputs, CACHE_NAME)},
            decoder_hidden_states=outputs.decoder_hidden_states, decoder_attentions=outputs.decoder_attentions,
            cross_attentions=outputs.cross_attentions, encoder_last_hidden_state=outputs.encoder_last_hidden_state,
            encoder_hidden_states=outputs.encoder_hidden_states, encoder_attentions=outputs.encoder_attentions,
            translation_loss=translation_loss, encoder_parse_loss=encoder_parse, decoder_parse_loss=decoder_parse,
            encoder_parse_log_probs=outputs.encoder_parse_log_probs,
            decoder_parse_log_probs=outputs.decoder_parse_log_probs,
            self_parse_loss=self_parse, encoder_self_parse_log_probs=outputs.encoder_self_parse_log_probs,
        )
        return as_returned(result, self.config, return_dict)

    def parse_loss_weights(self) -> tuple[float, float]:
        """(lambda_enc, lambda_dec) at `parse_loss_step` (see `parse_losses.parse_loss_weights`)."""
        return parse_loss_weights(self.config, self.parse_loss_step, self.training)

    def weighted_parse_losses(self, encoder_parse, decoder_parse, self_parse=None) -> list[torch.Tensor]:
        """The parse losses this model has, each times its lambda (the self-parser's times `self_parse_loss_weight`):
        what `forward` adds to the translation loss."""
        has_dbsa = encoder_parse is not None or decoder_parse is not None
        weights = self.parse_loss_weights() if has_dbsa else (0.0, 0.0)
        return weighted_parse_losses(weights, encoder_parse, decoder_parse,
                                     self_parse, getattr(self.config, "self_parse_loss_weight", 0.0))


def reject_unknown_keywords(model: nn.Module, columns: dict) -> None:
    """`forward`'s wildcard takes the syntax columns only: a misspelt keyword (`attention_masks=`) was dropped
    silently and the model ran without it. A keyword given as None asks for nothing (a wrapper may pass on an
    argument it has no value for), so it is let through."""
    unknown = sorted(name for name, value in columns.items() if name not in SYNTAX_COLUMN_NAMES and value is not None)
    if unknown:
        accepted = [parameter.name for parameter in inspect.signature(type(model).forward).parameters.values()
                    if parameter.name != "self" and parameter.kind is not inspect.Parameter.VAR_KEYWORD]
        raise TypeError(f"{type(model).__name__}.forward() got unexpected keyword argument(s) {unknown}; it takes "
                        f"{accepted}. Check the spelling.")


def _check_one_label_per_decoder_input(labels: torch.Tensor, decoder_input_ids, decoder_inputs_embeds) -> None:
    """The decoder predicts one label per input position: other lengths failed inside the loss as a "batch_size"
    mismatch of the flattened tensors."""
    name, given = (("decoder_input_ids", decoder_input_ids) if decoder_inputs_embeds is None
                   else ("decoder_inputs_embeds", decoder_inputs_embeds))
    if torch.is_tensor(given) and given.dim() >= 2 and tuple(given.shape[:2]) != tuple(labels.shape):
        raise ValueError(f"`{name}` covers {tuple(given.shape[:2])} (sentences, tokens) but `labels` is "
                         f"{tuple(labels.shape)}: one label per decoder input. Pass `labels` alone (the model shifts "
                         f"them right into the decoder inputs) or decoder inputs of the labels' length.")


def _as_encoder_output(given) -> SyntaxEncoderOutput:
    """``encoder_outputs`` given as another model's output (read by field name) or as a tuple:
    ``(last_hidden_state,)``, or every field in order. ``to_tuple()`` drops the fields that are None, so a shorter
    tuple cannot be read by position: a DBSA encoder's parse_log_probs landed in hidden_states and the parse loss
    silently dropped out."""
    fields = [field.name for field in dataclass_fields(SyntaxEncoderOutput)]
    if torch.is_tensor(given):  # was unpacked along the batch: its rows were taken for the output's fields
        raise ValueError(f"encoder_outputs is a tensor of shape {tuple(given.shape)}; pass the SyntaxEncoderOutput "
                         f"the encoder returned (model.get_encoder()(...)), or (last_hidden_state,).")
    if isinstance(given, ModelOutput):  # another model's output class (BaseModelOutput): read by field name
        unknown = sorted(set(given.keys()) - set(fields))
        if unknown:
            raise ValueError(f"encoder_outputs has the field(s) {unknown}, which a SyntaxEncoderOutput does not "
                             f"have ({fields}).")
        return SyntaxEncoderOutput(**given)
    if isinstance(given, (tuple, list)) and len(given) not in (1, len(fields)):
        raise ValueError(f"encoder_outputs is a tuple of {len(given)}, whose items cannot be matched to the fields "
                         f"{fields} (to_tuple() leaves out those that are None); pass the SyntaxEncoderOutput the "
                         f"encoder returned, or (last_hidden_state,).")
    return SyntaxEncoderOutput(*given)


def _side_columns(columns: dict, side: str) -> dict:
    """The syntax columns of `side` ("source" / "target") among the keyword arguments `forward` got."""
    return {name: columns[name] for name in SYNTAX_INPUTS[side] if name in columns}


SyntaxTransformerConfig.register_for_auto_class()
SyntaxTransformerModel.register_for_auto_class("AutoModel")
SyntaxTransformerForConditionalGeneration.register_for_auto_class("AutoModelForSeq2SeqLM")

__all__ = [
    "SyntaxEncoderOutput",
    "SyntaxSeq2SeqLMOutput",
    "SyntaxSeq2SeqModelOutput",
    "SyntaxTransformerForConditionalGeneration",
    "SyntaxTransformerModel",
    "SyntaxTransformerPreTrainedModel",
    "shift_decoder_heads",
    "shift_tokens_right",
]
