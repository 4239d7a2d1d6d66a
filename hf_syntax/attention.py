"""One multi-head attention whose score is a sum of pluggable terms and whose output is a sum of value terms.
Each paper adds a term instead of a copy of attention:

* content: `q k^T / sqrt(d_head)` (Vaswani et al.);
* relative position (Shaw et al. 2018) and dependency relative depth (Omote et al. 2019): `RelativeTerm`, an
  embedding per bucket added to keys (score) and/or values (output). `RELATIVE_TERMS` holds one record per term
  (`RelativeTermKind`): buckets, config fields, the column it reads; layers, stacks, configs, cards, exporters and
  recipes all read it. Adding a term is its record here, a preset in `variants.py` and a test (and, for a card
  paragraph of its own, its entry in `hub/descriptions.TERM_CARDS`);
* DBSA (Deguchi et al. 2019): a `parse_head.BiaffineParseHead` (record: `parse_head.DBSA_PARSE_HEAD`) replaces the
  last head (or joins the heads as an extra one); its attention is the parse.

No n x n x d tensor is ever built. Each stack builds one one-hot relation tensor for all its terms (`TermRelations`,
n x buckets x n); key terms are `q @ table^T` (n x buckets) contracted with it, value terms the attention weights
summed per bucket through it and multiplied by the table: batched matmuls, one per side for all terms together.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import torch
from torch import nn
from torch.nn import functional as F
from transformers.utils import is_torchdynamo_compiling


def additive_mask(keep: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Boolean "may attend" mask -> additive float mask (0 or the dtype's minimum; never -inf, so no NaN rows)."""
    return torch.zeros(keep.shape, dtype=dtype, device=keep.device).masked_fill(~keep, torch.finfo(dtype).min)


def mask_as(mask: torch.Tensor | None, dtype: torch.dtype) -> torch.Tensor | None:
    """An additive mask in the scores' `dtype`, its minimum kept finite. Under autocast the hidden states, hence the
    stacks' masks, stay float32 while q/k are half: SDPA wants the query's dtype, and finfo(float32).min cast to a
    half dtype is -inf (a fully masked row, e.g. a left-padded decoder row, then gives 0s or NaN, not the float32 mean)."""
    if mask is None or mask.dtype == dtype:
        return mask
    return mask.clamp(min=torch.finfo(dtype).min).to(dtype)


def softmax_dtype(dtype: torch.dtype) -> torch.dtype:
    """Half precisions take their softmax in float32; float32 and float64 keep their own precision."""
    return torch.promote_types(dtype, torch.float32)


def explicit_weights(config, output_attentions: bool) -> bool:
    """Whether the layers compute their attention weights explicitly: the call asked for them, or the config's
    `attn_implementation` is "eager" (transformers' name for the plain softmax-of-scores path); under "sdpa" (the
    default) they call scaled_dot_product_attention wherever their terms allow it."""
    return output_attentions or config._attn_implementation == "eager"


def padding_mask(attention_mask: torch.Tensor | None, dtype: torch.dtype) -> torch.Tensor | None:
    """(batch, keys) 1/0 mask -> (batch, 1, 1, keys) additive mask; None when nothing is masked (no work per step).
    That shortcut reads the mask's values, so it is skipped while torch.compile traces (a branch on values breaks
    the graph), as in transformers' own models."""
    if attention_mask is None or (not is_torchdynamo_compiling() and attention_mask.all()):
        return None
    return additive_mask(attention_mask[:, None, None, :].bool(), dtype)


def causal_mask(
    query_positions: torch.Tensor, key_length: int, attention_mask: torch.Tensor | None, dtype: torch.dtype
) -> torch.Tensor:
    """(batch|1, 1, queries, keys) additive mask: a query sees keys at or before its position, minus padding."""
    key_positions = torch.arange(key_length, device=query_positions.device)
    keep = (key_positions[None, :] <= query_positions[:, None])[None, None]
    if attention_mask is not None:
        keep = keep & attention_mask[:, None, None, -key_length:].bool()
    return additive_mask(keep, dtype)


def relative_position_buckets(clip: int, query_positions: torch.Tensor, key_length: int, columns) -> torch.Tensor:
    """(1, queries, keys) bucket ids `clip(j - i, k) + k` in [0, 2k]."""
    key_positions = torch.arange(key_length, device=query_positions.device)
    distance = key_positions[None, :] - query_positions[:, None]
    return (distance.clamp(-clip, clip) + clip)[None]


def dependency_depth_buckets(clip: int, query_positions: torch.Tensor, key_length: int, columns) -> torch.Tensor:
    """(batch, n, n) bucket ids `clip(depth(j) - depth(i), l) + l` in [0, 2l]; bucket 2l+1 = "no relation" for
    pairs involving a token without a depth (special tokens and padding carry depth -1)."""
    depths = columns["dep_depths"]
    difference = depths[:, None, :] - depths[:, :, None]
    buckets = difference.clamp(-clip, clip) + clip
    no_depth = depths < 0
    return buckets.masked_fill(no_depth[:, None, :] | no_depth[:, :, None], 2 * clip + 1)


@dataclass(frozen=True)
class RelativeTermKind:
    """Everything about one relative attention term.

    `buckets(clip, query_positions, key_length, columns)` returns (batch or 1, queries, keys) ids in
    [0, 2 * clip + 1 + extra_buckets). `column`: the input column it reads, at training and at inference (the model
    then requires it; an encoder term reads the source columns, a decoder term the target ones).
    Config fields, all declared on `SyntaxTransformerConfig` from this record (`config_fields`): `clip_field` (the
    clip, 0 = off), `keys_field` / `values_field` (the key / value side; both always on when not given),
    `decoder_field` (decoder self-attention too; encoder only when not given), the switches on by default.
    """

    clip_field: str
    buckets: Callable[..., torch.Tensor]
    extra_buckets: int = 0
    column: str | None = None
    keys_field: str | None = None
    values_field: str | None = None
    decoder_field: str | None = None

    def num_buckets(self, clip: int) -> int:
        return 2 * clip + 1 + self.extra_buckets

    def config_fields(self) -> dict[str, int | bool]:
        """The config fields of this term with their defaults: the clip off, every switch on."""
        switches = (self.keys_field, self.values_field, self.decoder_field)
        return {self.clip_field: 0, **{name: True for name in switches if name is not None}}


RELATIVE_TERMS = {
    "relative_positions": RelativeTermKind(
        "relative_position_clip", relative_position_buckets, keys_field="relative_position_keys",
        values_field="relative_position_values", decoder_field="relative_position_in_decoder"),
    "dependency_depths": RelativeTermKind(
        "dependency_depth_clip", dependency_depth_buckets, extra_buckets=1, column="dep_depths",
        keys_field="dependency_depth_keys", values_field="dependency_depth_values"),
}
"""Term name (also its module name inside `SyntaxAttention`, hence in checkpoints) -> its record. The order is the
order the terms are built and initialised in (changing it changes the random initialisation)."""

def enabled_terms(config, side: str) -> dict[str, RelativeTermKind]:
    """The relative terms the self-attention of `side` ("encoder" / "decoder") uses under `config`."""
    return {
        name: kind for name, kind in RELATIVE_TERMS.items()
        if getattr(config, kind.clip_field) > 0
        and (side == "encoder" or (kind.decoder_field is not None and getattr(config, kind.decoder_field)))
    }


class TermRelations(NamedTuple):
    """Which bucket of which relative term every (query, key) pair falls in, built once per layer stack.

    `one_hot`: (batch, queries, buckets, keys), 1 where the pair is in the bucket, in the dtype attention multiplies
    in; the enabled terms' buckets follow each other on axis 2, each term's at `spans[name]`. Contracted with batched
    matmuls it serves all terms of a layer with one product per side; an index per term would need a gather and a
    scatter-add each (an atomic scatter in a GPU backward), and small steps on a GPU are bound by kernel launches
    (`benchmarks/profiles/step_operations.py`).
    """

    one_hot: torch.Tensor
    spans: dict[str, slice]


def matmul_dtype(tensor: torch.Tensor) -> torch.dtype:
    """The dtype matrix products run in for `tensor`'s device: autocast's where it is on, else the tensor's own."""
    device = tensor.device.type
    return torch.get_autocast_dtype(device) if torch.is_autocast_enabled(device) else tensor.dtype


def term_relations(config, side: str, query_positions: torch.Tensor, key_length: int, columns,
                   batch_size: int, dtype: torch.dtype) -> TermRelations | None:
    """The relations of every enabled term of `side` (None when it has none) for `batch_size` rows (`columns`:
    name -> tensor)."""
    buckets = {}
    for name, kind in enabled_terms(config, side).items():
        clip = getattr(config, kind.clip_field)
        buckets[name] = kind.buckets(clip, query_positions, key_length, columns), kind.num_buckets(clip)
    return one_hot_relations(buckets, batch_size, dtype) if buckets else None


def one_hot_relations(buckets: dict[str, tuple[torch.Tensor, int]], batch_size: int,
                      dtype: torch.dtype) -> TermRelations:
    """`TermRelations` from each term's (batch or 1, queries, keys) bucket ids and its number of buckets."""
    blocks, spans, start = [], {}, 0
    for name, (ids, count) in buckets.items():
        one_hot = ids[:, :, None, :] == torch.arange(count, device=ids.device)[:, None]
        blocks.append(one_hot.to(dtype).expand(batch_size, -1, -1, -1))
        spans[name] = slice(start, start + count)
        start += count
    return TermRelations(torch.cat(blocks, dim=2), spans)


def relation_scores(scaled_query: torch.Tensor, table: torch.Tensor, one_hot: torch.Tensor) -> torch.Tensor:
    """`q_i a_ij^T / sqrt(d)` as (batch, heads, queries, keys): each query's product with every bucket's key
    embedding, (batch, queries, heads, buckets), picked per key by the one-hot (batch, queries, buckets, keys)."""
    batch, heads, queries, _ = scaled_query.shape
    per_bucket = scaled_query.transpose(1, 2) @ table.T.to(scaled_query.dtype)
    scores = per_bucket.reshape(batch * queries, heads, -1) @ one_hot.flatten(0, 1).to(scaled_query.dtype)
    return scores.view(batch, queries, heads, -1).transpose(1, 2)


def relation_values(weights: torch.Tensor, table: torch.Tensor, one_hot: torch.Tensor) -> torch.Tensor:
    """`sum_j alpha_ij a_ij` as (batch, heads, queries, head_dim): the weights summed per bucket through the one-hot,
    times the buckets' value embeddings."""
    batch, heads, queries, keys = weights.shape
    per_key = weights.transpose(1, 2).reshape(batch * queries, heads, keys)
    per_bucket = per_key @ one_hot.flatten(0, 1).transpose(1, 2).to(weights.dtype)
    return (per_bucket @ table.to(weights.dtype)).view(batch, queries, heads, -1).transpose(1, 2)


class RelativeTerm(nn.Module):
    """Embeddings per relation bucket, shared across heads, added to the keys and/or the values."""

    def __init__(self, num_buckets: int, head_dim: int, keys: bool, values: bool):
        super().__init__()
        self.key_table = nn.Parameter(torch.empty(num_buckets, head_dim)) if keys else None
        self.value_table = nn.Parameter(torch.empty(num_buckets, head_dim)) if values else None


class AttentionOutput(NamedTuple):
    """What `SyntaxAttention` returns: the projected output, the attention weights when asked for, and the DBSA parse
    head's log-probabilities of each query's head, (batch, queries, keys), when the layer has one."""

    output: torch.Tensor
    weights: torch.Tensor | None = None
    parse_log_probs: torch.Tensor | None = None


class SyntaxAttention(nn.Module):
    """Multi-head attention (self or cross) with optional relative terms and an optional DBSA parse head.

    `parse_head_mode="replace"` (the paper): `num_heads - 1` ordinary heads plus the parse head share the output
    projection, so the layer keeps its width and its parameter count up to the biaffine U and u. `"add"`: all
    `num_heads` ordinary heads stay and the parse head is one more, so the heads' concatenation is
    `d_model + d_head` wide and the output projection maps that back to `d_model` (`d_head * d_model` more
    weights), besides the parse head's own Q/K/V projections. The cache stores all heads together.
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        dropout: float,
        layer_idx: int,
        *,
        is_cross_attention: bool = False,
        relative_terms: dict[str, RelativeTerm] | None = None,
        parse_head: nn.Module | None = None,  # a parse_head.BiaffineParseHead
        parse_head_mode: str = "replace",
    ):
        super().__init__()
        self.head_dim = d_model // num_heads
        self.num_heads = num_heads
        self.dropout = dropout
        self.layer_idx = layer_idx
        self.is_cross_attention = is_cross_attention
        self.scaling = self.head_dim**-0.5
        if parse_head_mode not in ("replace", "add"):
            raise ValueError(f"parse_head_mode={parse_head_mode!r} is not supported; choose 'replace' or 'add'.")
        replaces_a_head = parse_head is not None and parse_head_mode == "replace"
        self.ordinary_heads = num_heads - 1 if replaces_a_head else num_heads
        ordinary = self.ordinary_heads * self.head_dim
        self.q_proj = nn.Linear(d_model, ordinary)
        self.k_proj = nn.Linear(d_model, ordinary)
        self.v_proj = nn.Linear(d_model, ordinary)
        concatenated = ordinary + (self.head_dim if parse_head is not None else 0)
        self.out_proj = nn.Linear(concatenated, d_model)
        # Registered under their own names (not a ModuleDict) so checkpoint keys stay `self_attn.<term>.key_table`.
        self.term_names = tuple(relative_terms or ())
        for name, term in (relative_terms or {}).items():
            self.add_module(name, term)
        self.parse_head = parse_head

    def forward(
        self,
        hidden_states: torch.Tensor,
        key_value_states: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        cache=None,
        term_relations: TermRelations | None = None,
        explicit_weights: bool = False,
    ) -> AttentionOutput:
        """`term_relations`: the stack's relations of the relative terms (see `term_relations`). `explicit_weights`:
        compute the attention weights as a softmax of the scores and return them (attentions were asked for, or
        `attn_implementation="eager"`); otherwise scaled_dot_product_attention wherever the terms allow it."""
        batch, length, _ = hidden_states.shape
        (query, *parse_query) = self._project(hidden_states, "q_proj")
        (key, *parse_key), (value, *parse_value) = self._keys_values(
            hidden_states if key_value_states is None else key_value_states, cache)

        key_terms = self._joined_terms("key_table", term_relations)
        value_terms = self._joined_terms("value_table", term_relations)
        output, weights = self._attend(query, key, value, attention_mask, key_terms, value_terms, explicit_weights)
        parse_log_probs = None
        if self.parse_head is not None:
            parse_output, parse_log_probs = self.parse_head.attend(*parse_query, *parse_key, *parse_value,
                                                                   attention_mask)
            output = torch.cat([output, parse_output], dim=1)
        output = output.transpose(1, 2).reshape(batch, length, -1)
        return AttentionOutput(self.out_proj(output), weights, parse_log_probs)

    def _heads(self, states: torch.Tensor) -> torch.Tensor:
        return states.view(states.shape[0], states.shape[1], -1, self.head_dim).transpose(1, 2)

    def _project(self, states: torch.Tensor, projection: str) -> list[torch.Tensor]:
        """Every head's `projection` ("q_proj" / "k_proj" / "v_proj") of `states`, (batch, heads, n, d_head): the
        ordinary heads, then the parse head where the layer has one. Kept apart (joined only for the cache): a join
        and a split cost a copy per projection and its backward, and traced by torch.compile with dynamic lengths,
        the split's saved views got fixed strides. Each projection stays a module call, so quantized or
        adapter-wrapped layers keep working."""
        groups = [self._heads(getattr(self, projection)(states))]
        if self.parse_head is not None:
            groups.append(self._heads(getattr(self.parse_head, projection)(states)))
        return groups

    def _keys_values(self, states, cache) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        """Project (or fetch) keys and values as head groups (see `_project`), going through the transformers
        `EncoderDecoderCache`, which stores all heads of a layer together."""
        if cache is not None and self.is_cross_attention and cache.is_updated.get(self.layer_idx):
            layer = cache.cross_attention_cache.layers[self.layer_idx]
            return self._head_groups(layer.keys), self._head_groups(layer.values)
        key, value = self._project(states, "k_proj"), self._project(states, "v_proj")
        if cache is None:
            return key, value
        stored = cache.cross_attention_cache if self.is_cross_attention else cache.self_attention_cache
        key, value = stored.update(torch.cat(key, 1), torch.cat(value, 1), self.layer_idx)
        if self.is_cross_attention:
            cache.is_updated[self.layer_idx] = True
        return self._head_groups(key), self._head_groups(value)

    def _head_groups(self, heads: torch.Tensor) -> list[torch.Tensor]:
        """A cached (batch, heads, n, d_head) tensor as `_project`'s head groups."""
        return list(heads.split([self.ordinary_heads, 1], dim=1)) if self.parse_head is not None else [heads]

    def _joined_terms(self, table_name: str, relations: TermRelations | None):
        """This layer's `table_name` tables ("key_table" / "value_table") of the terms `relations` covers, joined in
        bucket order, with the one-hot cut to their buckets (a view where they are adjacent, as when every term has
        the table); None when no term has one."""
        if relations is None:
            return None
        parts = [(relations.spans[name], getattr(getattr(self, name), table_name))
                 for name in self.term_names if name in relations.spans]
        parts = [(span, table) for span, table in parts if table is not None]
        if not parts:
            return None
        table = torch.cat([table for _, table in parts]) if len(parts) > 1 else parts[0][1]
        spans = [span for span, _ in parts]
        if all(before.stop == after.start for before, after in zip(spans, spans[1:])):
            one_hot = relations.one_hot[:, :, spans[0].start:spans[-1].stop]
        else:
            one_hot = torch.cat([relations.one_hot[:, :, span] for span in spans], dim=2)
        return table, one_hot

    def _attend(self, query, key, value, mask, key_terms, value_terms, explicit_weights):
        dropout = self.dropout if self.training else 0.0
        mask = mask_as(mask, query.dtype)
        if not explicit_weights and value_terms is None:
            bias = mask if key_terms is None else self._score_bias(query * self.scaling, mask, key_terms)
            output = F.scaled_dot_product_attention(
                query, key, value, attn_mask=bias, dropout_p=dropout, scale=self.scaling
            )
            return output, None
        # Value terms need the (batch, heads, n, n) weights themselves, kept for backward (with the one-hot relations,
        # ~1.5x the baseline's peak memory at 512 tokens). Where memory matters, activation checkpointing
        # (`training.gradient_checkpointing`, HF's usual switch) recomputes whole layers in backward; recomputing
        # here always cost every step.
        output, weights = self._attend_explicitly(query, key, value, mask, key_terms, value_terms, dropout)
        return output, (weights if explicit_weights else None)

    @staticmethod
    def _score_bias(scaled_query, mask, key_terms):
        """The key terms' scores plus the padding/causal mask, as one additive (batch, heads, queries, keys) bias."""
        bias = relation_scores(scaled_query, *key_terms)
        if mask is not None:
            bias = bias + mask
            if torch.finfo(bias.dtype).bits < 32:  # float16's minimum + a score may be -inf
                bias = bias.clamp(min=torch.finfo(bias.dtype).min)
        return bias

    def _attend_explicitly(self, query, key, value, mask, key_terms, value_terms, dropout):
        """Attention with materialised weights: content + key-term scores, softmax, values + value terms."""
        scaled_query = query * self.scaling
        scores = scaled_query @ key.transpose(-1, -2)
        scores = scores.to(softmax_dtype(scores.dtype))  # the bias is added where it cannot overflow to -inf
        bias = mask if key_terms is None else self._score_bias(scaled_query, mask, key_terms)
        if bias is not None:
            scores = scores + bias
        weights = torch.softmax(scores, dim=-1).to(query.dtype)
        if dropout > 0:  # even p=0 dropout would keep a second (batch, heads, n, n) copy alive for backward
            weights = F.dropout(weights, p=dropout, training=self.training)
        if value_terms is None:
            return weights @ value, weights
        # The value terms first: the sum takes their (batch, queries, heads, d) layout, which the caller's
        # concatenation of the heads then reads without a copy.
        return relation_values(weights, *value_terms) + weights @ value, weights


__all__ = [
    "AttentionOutput",
    "RELATIVE_TERMS",
    "RelativeTerm",
    "RelativeTermKind",
    "SyntaxAttention",
    "TermRelations",
    "additive_mask",
    "causal_mask",
    "dependency_depth_buckets",
    "enabled_terms",
    "mask_as",
    "matmul_dtype",
    "one_hot_relations",
    "padding_mask",
    "relation_scores",
    "relation_values",
    "relative_position_buckets",
    "softmax_dtype",
    "term_relations",
]
