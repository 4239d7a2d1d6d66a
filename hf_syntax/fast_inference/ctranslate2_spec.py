"""What CTranslate2's Transformer can compute of our models, and the weight mapping for what it can.

What maps, and why (checked against CTranslate2's ``dot_product_attention`` and ``TransformerEncoder``):

* The baseline (post-LN, sinusoidal positions, scaled embeddings), also when converted from Marian. The position
  table is written out from ``sinusoidal_positions`` so CTranslate2 adds the very same values.
* Shaw relative positions: CTranslate2 indexes a (2k+1, d_head) table by ``clip(j - i, -k, k) + k`` with
  ``i`` the query's absolute position (``offset = keys - queries`` during cached decoding), shares it across heads,
  adds ``q a^K`` to the scaled scores and ``sum_j w_ij a^V`` to the output: our ``RelativeTerm`` exactly, in the
  encoder and the decoder. Keys-only or values-only models get a zero table for the other side (adding zeros is
  exact). What does not map: CTranslate2 drops absolute position encodings in any stack whose first self-attention
  has relative tables, so relative positions *with* absolute ones (``transformer_rel``, ``transformer_dep_rel``)
  are refused; relative positions without absolute ones export.
* Syntax-infused source features: CTranslate2's extra source embeddings (``num_source_embeddings``), one token
  stream each, merged by ``embeddings_merge``. ``concat_each`` is CONCAT with one stream per feature.
  ``concat_sum`` and ``add`` sum the feature embeddings first; that sum is one table over the product of the
  feature vocabularies (20 x 7 x 7 = 980 rows for POS, case and subword tag), fed as one combined stream, CONCAT
  or ADD with the word embedding. CTranslate2 scales the merged embedding, while we scale the word embedding only,
  so a feature model gets its source word table pre-multiplied by sqrt(d) and an unscaled encoder (the same
  float products).
* DBSA's parse head (``parse_head="replace"``, the paper's) is an ordinary attention head at inference:
  ``(c Q) U K^T + K u = (c Q U + u) K^T`` (c = the head's query scale, 1 for the paper's unscaled form), so the
  head's query projection becomes ``(c W_q U, c b_q U + u)`` divided by CTranslate2's query scale. Not bit-exact
  (the folded product rounds once more) but within float32 noise; the parse log-probabilities themselves are not
  available from CTranslate2. ``parse_head="add"`` gives one layer one more head than the others, while
  CTranslate2 has one head count per stack: refused.

Refused with the reason and the PyTorch path: every relative attention term but Shaw's positions, e.g. dependency
relative depths (their buckets are per-sentence tree relations, CTranslate2 indexes by ``j - i`` only), and
Graph-Transformer encoder layers (two streams and gates).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ..attention import enabled_terms
from ..columns import EMBEDDED_FEATURES
from ..embeddings import sinusoidal_positions
from ..parse_head import DBSA_PARSE_HEAD

MAX_COMBINED_FEATURE_ROWS = 100_000
PYTORCH_PATH_HINT = (
    "Use the PyTorch path instead: `hf_syntax.serving.loading.load_pipeline(model_dir, backend='pytorch', "
    "quantization='int8')` or `hf-syntax translate --model DIR --backend pytorch --quantization int8`."
)
INSTALL_HINT = "CTranslate2 is not installed: `pip install 'hf-syntax[ctranslate2]'` (or `pip install ctranslate2`)."
POSITION_TERM = "relative_positions"
"""The one relative attention term CTranslate2 has tables for (Shaw et al.'s, indexed by j - i); any other term of
``attention.RELATIVE_TERMS`` makes a model inexpressible."""


class NotExpressibleError(ValueError):
    """CTranslate2's Transformer cannot compute this model; the message says which mechanism and why."""


@dataclass
class FeatureStream:
    """One extra CTranslate2 source stream: the feature columns it encodes and each column's vocabulary size.

    A stream of several columns carries one combined id per token (row-major over ``sizes``), indexing the table
    of summed feature embeddings.
    """

    columns: list[str]
    sizes: list[int]

    @property
    def vocabulary_size(self) -> int:
        return math.prod(self.sizes)

    def token_ids(self, columns: dict[str, list[int]]) -> list[int]:
        """Per-token ids of this stream from the featurizer's columns of one sentence."""
        ids = [0] * len(columns[self.columns[0]])
        for name, size in zip(self.columns, self.sizes):
            ids = [combined * size + value for combined, value in zip(ids, columns[name])]
        return ids


def import_ctranslate2():
    try:
        import ctranslate2
    except ImportError as error:
        raise ImportError(INSTALL_HINT) from error
    return ctranslate2


def feature_streams(config) -> list[FeatureStream]:
    """The extra source streams a syntax-infused config needs (none for the other models)."""
    if not config.source_features:
        return []
    columns = [EMBEDDED_FEATURES[name] for name in config.source_features]
    sizes = [getattr(config, column.size_field) for column in columns]
    if config.feature_combine == "concat_each":
        return [FeatureStream([column.name], [size]) for column, size in zip(columns, sizes)]
    return [FeatureStream([column.name for column in columns], sizes)]


def expressibility_problems(config) -> list[str]:
    """Why CTranslate2 cannot run this config exactly (empty when it can)."""
    problems = []
    terms = {**enabled_terms(config, "encoder"), **enabled_terms(config, "decoder")}
    for name, kind in terms.items():
        if name != POSITION_TERM:
            source = f"from `{kind.column}` of each sentence's parse" if kind.column else f"by {kind.buckets.__name__}"
            problems.append(
                f"the {name} attention term ({kind.clip_field} > 0): its buckets are computed {source}, while "
                "CTranslate2's relative tables are indexed by the position difference j - i only"
            )
    if config.encoder_layer_type != "standard":
        problems.append(
            f"encoder_layer_type={config.encoder_layer_type!r}: Graph-Transformer layers attend over two streams "
            "(F and I = F_l-1 - F_l-2) and fuse them with gates, which CTranslate2's encoder layer has no slot for"
        )
    if config.relative_position_clip > 0 and config.absolute_positions:
        problems.append(
            "relative positions together with absolute ones: CTranslate2 skips the absolute position encodings of "
            "any stack whose self-attention has relative tables (only relative positions without absolute ones, "
            "absolute_positions=False, export)"
        )
    if DBSA_PARSE_HEAD.sides(config):
        if config.relative_position_clip > 0:
            problems.append("a DBSA parse head together with relative positions (the parse head has no relative term)")
        if getattr(config, "parse_head", "replace") != "replace":
            problems.append(
                f"parse_head={config.parse_head!r}: the parse layer has one head more than the other layers, while "
                "CTranslate2 uses one head count for a whole stack"
            )
    for stream in feature_streams(config):
        if stream.vocabulary_size > MAX_COMBINED_FEATURE_ROWS:
            problems.append(
                f"the combined feature vocabulary of {stream.columns} has {stream.vocabulary_size} rows "
                f"(more than {MAX_COMBINED_FEATURE_ROWS})"
            )
    return problems


def check_expressible(config) -> None:
    problems = expressibility_problems(config)
    if problems:
        raise NotExpressibleError(
            f"CTranslate2 cannot compute this {config.model_type} model exactly: {'; '.join(problems)}. "
            f"{PYTORCH_PATH_HINT}"
        )


def _numpy(tensor: torch.Tensor):
    """A float32 copy: CTranslate2's quantization rewrites spec arrays in place, which must not reach the model."""
    return tensor.detach().to(torch.float32, copy=True).cpu().contiguous().numpy()


def _set_linear(spec, linears):
    """One CTranslate2 linear from one or more (weight, bias) pairs of ours stacked along the output dimension
    (fused QKV / KV)."""
    spec.weight = _numpy(torch.cat([weight for weight, _ in linears]))
    spec.bias = _numpy(torch.cat([bias for _, bias in linears]))


def _set_layer_norm(spec, norm: torch.nn.LayerNorm):
    spec.gamma = _numpy(norm.weight)
    spec.beta = _numpy(norm.bias)


def _attention_projections(attention) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """(weight, bias) of q/k/v with a DBSA parse head folded in as the last ordinary head."""
    projections = {name: (getattr(attention, f"{name}_proj").weight, getattr(attention, f"{name}_proj").bias)
                   for name in ("q", "k", "v")}
    head = attention.parse_head
    if head is None:
        return projections
    # c (x W^T + b) U + u = x (c U^T W)^T + (c b U + u); CTranslate2 multiplies every query by `scaling`.
    scale = getattr(head, "query_scale", None) or 1.0
    query_weight = (head.biaffine.T @ head.q_proj.weight) * (scale / attention.scaling)
    query_bias = (head.q_proj.bias @ head.biaffine * scale + head.key_bias) / attention.scaling
    parts = {"q": (query_weight, query_bias), "k": (head.k_proj.weight, head.k_proj.bias),
             "v": (head.v_proj.weight, head.v_proj.bias)}
    return {name: (torch.cat([weight, parts[name][0]]), torch.cat([bias, parts[name][1]]))
            for name, (weight, bias) in projections.items()}


def _set_relative_tables(spec, attention, head_dim: int):
    term = getattr(attention, POSITION_TERM, None)  # a term module exists only when the config enables it
    if term is None:
        return
    buckets = (term.key_table if term.key_table is not None else term.value_table).shape[0]
    zeros = torch.zeros(buckets, head_dim)
    spec.relative_position_keys = _numpy(term.key_table if term.key_table is not None else zeros)
    spec.relative_position_values = _numpy(term.value_table if term.value_table is not None else zeros)


def _set_self_attention(spec, attention, norm, head_dim: int):
    projections = _attention_projections(attention)
    _set_linear(spec.linear[0], [projections["q"], projections["k"], projections["v"]])
    _set_linear(spec.linear[1], [(attention.out_proj.weight, attention.out_proj.bias)])
    _set_layer_norm(spec.layer_norm, norm)
    _set_relative_tables(spec, attention, head_dim)


def _set_cross_attention(spec, attention, norm):
    _set_linear(spec.linear[0], [(attention.q_proj.weight, attention.q_proj.bias)])
    _set_linear(spec.linear[1], [(attention.k_proj.weight, attention.k_proj.bias),
                                 (attention.v_proj.weight, attention.v_proj.bias)])
    _set_linear(spec.linear[2], [(attention.out_proj.weight, attention.out_proj.bias)])
    _set_layer_norm(spec.layer_norm, norm)


def _set_feed_forward(spec, ffn, norm):
    _set_linear(spec.linear_0, [(ffn.fc1.weight, ffn.fc1.bias)])
    _set_linear(spec.linear_1, [(ffn.fc2.weight, ffn.fc2.bias)])
    _set_layer_norm(spec.layer_norm, norm)


def _position_table(config, stack_uses_relative: bool):
    """Positions CTranslate2 adds to a stack's embeddings: ours, zeros when we add none, None for relative stacks
    (CTranslate2 adds nothing to them)."""
    if stack_uses_relative:
        return None
    if not config.absolute_positions:
        return torch.zeros(config.max_position_embeddings, config.d_model)
    positions = torch.arange(config.max_position_embeddings)
    return sinusoidal_positions(positions, config.d_model, torch.float32)


def _summed_feature_table(tables: list[torch.nn.Embedding]) -> torch.Tensor:
    """Row r = sum of the feature rows r decodes to (row-major), summed in the model's order (stack().sum(0))."""
    grids = torch.meshgrid(*[torch.arange(table.num_embeddings) for table in tables], indexing="ij")
    rows = [table.weight[grid.reshape(-1)] for table, grid in zip(tables, grids)]
    return torch.stack(rows).sum(0)


def build_spec(model):
    """CTranslate2 ``TransformerSpec`` holding the weights of ``model`` (a ``SyntaxTransformerForConditionalGeneration``)."""
    import_ctranslate2()
    from ctranslate2.specs import common_spec, transformer_spec

    config = model.config
    check_expressible(config)
    activations = {"relu": common_spec.Activation.RELU, "gelu": common_spec.Activation.GELU,
                   "swish": common_spec.Activation.SWISH, "silu": common_spec.Activation.SWISH}
    streams = feature_streams(config)
    merge = (common_spec.EmbeddingsMerge.ADD if config.feature_combine == "add"
             else common_spec.EmbeddingsMerge.CONCAT)
    encoder_relative = config.relative_position_clip > 0
    decoder_relative = encoder_relative and config.relative_position_in_decoder
    encoder_spec = transformer_spec.TransformerEncoderSpec(
        config.encoder_layers, config.encoder_attention_heads, pre_norm=False,
        activation=activations[config.activation_function], num_source_embeddings=1 + len(streams),
        embeddings_merge=merge, relative_position=encoder_relative,
    )
    decoder_spec = transformer_spec.TransformerDecoderSpec(
        config.decoder_layers, config.decoder_attention_heads, pre_norm=False,
        activation=activations[config.activation_function], relative_position=decoder_relative,
    )
    core = model.model
    scale = math.sqrt(config.d_model) if config.scale_embedding else 1.0

    source_words = core.encoder.embed_tokens.weight
    if streams:  # CTranslate2 scales the merged embedding; we scale the word part only.
        encoder_spec.embeddings[0].weight = _numpy(source_words * scale)
        encoder_spec.scale_embeddings = False
        tables = core.encoder.feature_embedding.tables
        for spec, stream in zip(encoder_spec.embeddings[1:], streams):
            names = [name for name in tables if EMBEDDED_FEATURES[name].name in stream.columns]
            spec.weight = _numpy(_summed_feature_table([tables[name] for name in names]))
    else:
        encoder_spec.embeddings[0].weight = _numpy(source_words)
        encoder_spec.scale_embeddings = config.scale_embedding
    for stack_spec, relative in ((encoder_spec, encoder_relative), (decoder_spec, decoder_relative)):
        table = _position_table(config, relative)
        if table is not None:
            stack_spec.position_encodings.encodings = _numpy(table)

    encoder_head_dim = config.d_model // config.encoder_attention_heads
    for layer_spec, layer in zip(encoder_spec.layer, core.encoder.layers):
        _set_self_attention(layer_spec.self_attention, layer.self_attn, layer.self_attn_layer_norm, encoder_head_dim)
        _set_feed_forward(layer_spec.ffn, layer.ffn, layer.final_layer_norm)

    decoder_head_dim = config.d_model // config.decoder_attention_heads
    decoder_spec.embeddings.weight = _numpy(core.decoder.embed_tokens.weight)
    decoder_spec.scale_embeddings = config.scale_embedding
    for layer_spec, layer in zip(decoder_spec.layer, core.decoder.layers):
        _set_self_attention(layer_spec.self_attention, layer.self_attn, layer.self_attn_layer_norm, decoder_head_dim)
        _set_cross_attention(layer_spec.attention, layer.encoder_attn, layer.encoder_attn_layer_norm)
        _set_feed_forward(layer_spec.ffn, layer.ffn, layer.final_layer_norm)
    decoder_spec.projection.weight = _numpy(model.lm_head.weight)
    if model.lm_head.bias is not None:
        decoder_spec.projection.bias = _numpy(model.lm_head.bias)
    return transformer_spec.TransformerSpec(encoder_spec, decoder_spec)


__all__ = [
    "FeatureStream",
    "NotExpressibleError",
    "build_spec",
    "check_expressible",
    "expressibility_problems",
    "feature_streams",
    "import_ctranslate2",
]
