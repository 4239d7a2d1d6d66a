"""The DBSA parse head (Deguchi et al. 2019), one record and one module: what configs, layers, losses, scorers,
exporters and cards read about it.

`DBSA_PARSE_HEAD` says, per side, which config field puts the head in which layer, the gold-head column it trains on
(none is read at inference), the field of its loss weight lambda, and which encoder output holds its parse;
`BiaffineParseHead` is the head itself, which `attention.SyntaxAttention` runs beside its ordinary heads.
"""

from dataclasses import dataclass

import torch
from torch import nn

from .attention import softmax_dtype

SIDES = ("encoder", "decoder")


@dataclass(frozen=True)
class ParseHeadKind:
    """Everything about one kind of parse head, per side ("encoder" / "decoder"): `layer_fields` (the 1-based layer
    holding it, 0 = none on that side), `gold_columns` (the gold heads it trains on), `loss_weight_fields` (lambda);
    `encoder_output`: the encoder output field with its (batch, n, n) log-probabilities."""

    layer_fields: dict[str, str]
    gold_columns: dict[str, str]
    loss_weight_fields: dict[str, str]
    encoder_output: str

    def layer(self, config, side: str) -> int:
        """The 1-based layer of `side` holding the head under `config` (0: none)."""
        return getattr(config, self.layer_fields[side], 0)

    def sides(self, config) -> tuple[str, ...]:
        """The sides whose stacks have the head under `config` (empty: the model has none)."""
        return tuple(side for side in SIDES if self.layer(config, side))

    def training_columns(self, config) -> tuple[str, ...]:
        """The gold-head columns training needs under `config`."""
        return tuple(self.gold_columns[side] for side in self.sides(config))


DBSA_PARSE_HEAD = ParseHeadKind(
    layer_fields={"encoder": "parse_layer_encoder", "decoder": "parse_layer_decoder"},
    gold_columns={"encoder": "dep_heads", "decoder": "decoder_dep_heads"},
    loss_weight_fields={"encoder": "parse_loss_weight_encoder", "decoder": "parse_loss_weight_decoder"},
    encoder_output="parse_log_probs",
)


class BiaffineParseHead(nn.Module):
    """DBSA's parse head: `s[t, q] = Q_t U K_q^T + K_q . u` (Dozat & Manning's biaffine form, as in the authors' code;
    the paper's `Q U^(2)` term is constant along a row and cancels in the softmax). Its own d_head projections;
    `softmax(s)` is both the predicted head distribution and the attention that mixes `V_parse`.

    `scale_query`: the authors' code multiplies Q by d_head^-1/2 before U (as for content attention); the paper's
    equation 14 does not. The scale is not absorbed by U in training: with Adam, each step moves U by about the
    learning rate whatever the scale, so unscaled scores move sqrt(d_head) times further per step.
    """

    def __init__(self, d_model: int, head_dim: int, scale_query: bool = False):
        super().__init__()
        self.q_proj = nn.Linear(d_model, head_dim)
        self.k_proj = nn.Linear(d_model, head_dim)
        self.v_proj = nn.Linear(d_model, head_dim)
        self.biaffine = nn.Parameter(torch.empty(head_dim, head_dim))
        self.key_bias = nn.Parameter(torch.empty(head_dim))
        self.query_scale = head_dim**-0.5 if scale_query else None

    def attend(self, query, key, value, mask):
        """query (batch, 1, queries, d_head), key/value (batch, 1, keys, d_head) -> output, log-probabilities."""
        if self.query_scale is not None:
            query = query * self.query_scale
        scores = (query @ self.biaffine) @ key.transpose(-1, -2) + (key @ self.key_bias)[:, :, None, :]
        scores = scores.to(softmax_dtype(scores.dtype))  # float16's minimum plus a negative score would be -inf
        if mask is not None:
            scores = scores + mask
        # The log-probabilities stay in the softmax's precision (float32 for a half model): the parse loss reads them.
        log_probs = torch.log_softmax(scores, dim=-1)
        return log_probs.exp().to(value.dtype) @ value, log_probs[:, 0]


__all__ = ["BiaffineParseHead", "DBSA_PARSE_HEAD", "ParseHeadKind", "SIDES"]
