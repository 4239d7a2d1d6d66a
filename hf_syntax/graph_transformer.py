"""Graph-Transformer encoder layer (Duan, Zhao and Wang 2020, "Graph-to-Sequence Neural Machine Translation").

The paper's equations were lost from our copy of it, so this layer is a *reconstruction*. What comes from the
paper's text and what is inferred:

Sourced from the text
  * Layer l sees two representations: the full one `F = F_{l-1}` (the previous layer's output) and the incremental
    one `I = F_{l-1} - F_{l-2}` ("the difference between full representation and previous representation").
  * Self-attention is split into three parts: high order `h = MHA(q=I, k=I, v=I)`; middle order
    `m1 = MHA(q=I, kv=P)` and `m2 = MHA(q=P, kv=I)`; low order `l = F` passes through without attention.
  * Fusions: `sum` of the four groups; `gate` ("weight-gate", Eq. 6) weighting the new groups against `l`;
    `self_gate` (Eq. 7): self-attention across the four group vectors of a token, divided by 4.
  * `graph_half_dim`: the attention parts work in half the model width; `graph_shared_qkv`: "two kinds of
    representations as query, key and value, which means six vectors are enough".
  * The decoder is the Transformer's; the encoder output is the last full representation.

Inferred (each a choice checked against the "#Para" column of the paper's Table 2 in the tests)
  * F_{-1} = 0, so the first layer gets I = F = the embeddings.
  * P, the "input previous representation" the middle parts pair with I (`graph_middle_stream`): "full" (default)
    reads P = F_{l-1}; "previous" reads P = F_{l-2}, the representation the layer receives next to I (the two sum
    to F_{l-1}). The text's subgraph orders favour "previous": there I x P covers orders the high part I x I cannot,
    while with P = F_{l-1} = F_{l-2} + I the middle parts overlap the high one. Measured on Multi30K De->En
    (+half-dim&gate, 1000 steps): val BLEU 18.96 ("previous") vs 14.33 ("full"), paired bootstrap p = 0.001; the
    baseline Transformer has 27.78 (benchmarks/results/multi30k_graph_si.README.md). Not the default because with
    F_{-1} = 0 the first layer's P is zero, so there the middle parts reduce to their biases and the projection
    weights that read P get no gradient (tested); what the first layer should pair I with is an open choice.
  * Every part is an ordinary multi-head attention with its own output projection (inner width -> d); in
    `sum`, `fused = l + h + m1 + m2`, so `l` plays the residual; then post-LN and the usual feed-forward sublayer.
  * gate: `g = sigmoid(W [h + m1 + m2 ; l] + b)` with W in R^{2d x d}, `fused = g * (h + m1 + m2) + (1 - g) * l`.
  * self_gate has no parameters (Table 2 lists the same size for "+self-gate" as for the plain model on En-De):
    with the four vectors R = [h; m1; m2; l] of a token, `fused = mean_rows(softmax(R R^T / sqrt(d)) R)`.
  * shared_qkv: one Q/K/V projection set per *stream* (I and F), used by every part that reads that stream;
    the three output projections stay separate.
  * Dropout: on `h + m1 + m2` for sum/gate (the new groups form one group), per part for self_gate.

Exact equivalence (tested): for `previous_hidden_states = 0` (the first layer), a `sum` layer whose two middle parts
have all-zero output projections computes exactly the standard `EncoderLayer` whose self-attention carries the
high part's weights, because then I = F, `h` is F's self-attention and `m1 = m2 = 0`.
"""

import torch
from torch import nn
from torch.nn import functional as F

from .layers import ENCODER_LAYER_TYPES, FeedForward

STREAMS = ("incremental", "full")
# attention part -> (stream giving the queries, stream giving the keys and values)
ATTENTION_PARTS = {
    "high": ("incremental", "incremental"),
    "middle_incremental": ("incremental", "full"),
    "middle_full": ("full", "incremental"),
}


class QueryKeyValue(nn.Module):
    """One set of query/key/value projections (owned by a part, or by a stream when `graph_shared_qkv`)."""

    def __init__(self, d_model: int, inner_dim: int):
        super().__init__()
        self.q_proj = nn.Linear(d_model, inner_dim)
        self.k_proj = nn.Linear(d_model, inner_dim)
        self.v_proj = nn.Linear(d_model, inner_dim)


def _check_supported(config):
    """The attention parts are plain multi-head attention: mechanisms that live inside `SyntaxAttention` would be
    silently dropped, so asking for them together with graph layers is an error."""
    unsupported = {
        "relative_position_clip": config.relative_position_clip,
        "dependency_depth_clip": config.dependency_depth_clip,
        "parse_layer_encoder": config.parse_layer_encoder,
    }
    enabled = [f"{name}={value}" for name, value in unsupported.items() if value]
    if enabled:
        raise ValueError(
            f"encoder_layer_type='graph' does not combine with {', '.join(enabled)}: the Graph-Transformer's attention "
            "parts have no relative-position, dependency-depth or parse-head terms. Set them to 0 (a decoder parse "
            "head, parse_layer_decoder, is fine) or use encoder_layer_type='standard'."
        )
    inner_dim = config.d_model // 2 if config.graph_half_dim else config.d_model
    odd_half = config.graph_half_dim and config.d_model % 2
    if odd_half or inner_dim % config.encoder_attention_heads:
        raise ValueError(
            f"graph_half_dim={config.graph_half_dim} gives attention parts of width {inner_dim} (d_model="
            f"{config.d_model}), which must be divisible by encoder_attention_heads={config.encoder_attention_heads}."
        )
    return inner_dim


class GraphEncoderLayer(nn.Module):
    """Three attention parts over the full and incremental representations, fused with the low-order part, then
    post-LN and feed-forward (see the module docstring for the reconstruction)."""

    def __init__(self, config, layer_idx: int):
        super().__init__()
        inner_dim = _check_supported(config)
        self.layer_idx = layer_idx
        self.num_heads = config.encoder_attention_heads
        self.head_dim = inner_dim // self.num_heads
        self.shared_qkv = config.graph_shared_qkv
        self.middle_stream = config.graph_middle_stream
        owners = STREAMS if self.shared_qkv else ATTENTION_PARTS
        self.projections = nn.ModuleDict({owner: QueryKeyValue(config.d_model, inner_dim) for owner in owners})
        self.out_projections = nn.ModuleDict({part: nn.Linear(inner_dim, config.d_model) for part in ATTENTION_PARTS})
        self.fusion = config.graph_fusion
        self.fusion_gate = nn.Linear(2 * config.d_model, config.d_model) if self.fusion == "gate" else None
        self.self_attn_layer_norm = nn.LayerNorm(config.d_model)
        self.ffn = FeedForward(config.d_model, config.encoder_ffn_dim, config.activation_function,
                               config.activation_dropout)
        self.final_layer_norm = nn.LayerNorm(config.d_model)
        self.dropout = config.dropout
        self.attention_dropout = config.attention_dropout

    def forward(self, hidden_states, attention_mask, *, position_buckets=None, depth_buckets=None,
                output_attentions=False, previous_hidden_states=None):
        """hidden_states = F_{l-1}, previous_hidden_states = F_{l-2} (None or zeros for the first layer).

        Returns (F_l, attention weights of the parts concatenated along the head axis in the order high,
        middle_incremental, middle_full — (batch, 3 * heads, n, n) — or None, None: no parse head).
        """
        full = hidden_states
        previous = torch.zeros_like(full) if previous_hidden_states is None else previous_hidden_states
        incremental = full - previous
        streams = {"incremental": incremental, "full": full if self.middle_stream == "full" else previous}
        projected = {}

        def project(part: str, stream: str, role: str) -> torch.Tensor:
            owner = stream if self.shared_qkv else part
            if (owner, stream, role) not in projected:
                states = getattr(self.projections[owner], f"{role}_proj")(streams[stream])
                states = states.view(*states.shape[:2], self.num_heads, self.head_dim)
                projected[owner, stream, role] = states.transpose(1, 2)
            return projected[owner, stream, role]

        parts, weights = [], []
        for part, (query_stream, key_stream) in ATTENTION_PARTS.items():
            attended, part_weights = self._attend(
                project(part, query_stream, "q"), project(part, key_stream, "k"), project(part, key_stream, "v"),
                attention_mask, output_attentions,
            )
            attended = attended.transpose(1, 2).reshape(*full.shape[:2], -1)
            parts.append(self.out_projections[part](attended))
            weights.append(part_weights)

        fused = self._fuse(parts, full)
        hidden_states = self.self_attn_layer_norm(fused)
        transformed = self.ffn(hidden_states)
        hidden_states = self.final_layer_norm(hidden_states + F.dropout(transformed, self.dropout, self.training))
        return hidden_states, (torch.cat(weights, dim=1) if output_attentions else None), None

    def _attend(self, query, key, value, mask, output_attentions):
        dropout = self.attention_dropout if self.training else 0.0
        if not output_attentions:
            return F.scaled_dot_product_attention(query, key, value, attn_mask=mask, dropout_p=dropout), None
        scores = (query * self.head_dim**-0.5) @ key.transpose(-1, -2)
        if mask is not None:
            scores = scores + mask
        weights = torch.softmax(scores.float(), dim=-1).to(query.dtype)
        return F.dropout(weights, p=dropout, training=self.training) @ value, weights

    def _fuse(self, parts: list[torch.Tensor], low: torch.Tensor) -> torch.Tensor:
        if self.fusion == "self_gate":
            groups = torch.stack([*(F.dropout(p, self.dropout, self.training) for p in parts), low], dim=-2)
            scores = groups @ groups.transpose(-1, -2) / groups.shape[-1] ** 0.5
            return (torch.softmax(scores.float(), dim=-1).to(groups.dtype) @ groups).mean(dim=-2)
        new = F.dropout(sum(parts), self.dropout, self.training)
        if self.fusion == "sum":
            return low + new
        gate = torch.sigmoid(self.fusion_gate(torch.cat([new, low], dim=-1)))
        return gate * new + (1 - gate) * low


ENCODER_LAYER_TYPES["graph"] = GraphEncoderLayer

__all__ = ["ATTENTION_PARTS", "GraphEncoderLayer", "QueryKeyValue"]
