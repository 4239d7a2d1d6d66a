"""Post-LN Transformer layers (Vaswani et al. 2017) built on `SyntaxAttention`.

Parameter names follow Marian/BART (`self_attn`, `self_attn_layer_norm`, `encoder_attn`, `final_layer_norm`;
the feed-forward is one `ffn` module), which keeps the Marian converter a short renaming rule.
"""

from typing import Any, NamedTuple

import torch
from torch import nn
from torch.nn import functional as F
from transformers.activations import ACT2FN
from transformers.modeling_layers import GradientCheckpointingLayer

from .attention import RelativeTerm, SyntaxAttention, enabled_terms
from .parse_head import DBSA_PARSE_HEAD, BiaffineParseHead


class LayerOutput(NamedTuple):
    """What every encoder and decoder layer returns; the stacks read it by name.

    `parse_log_probs`: the DBSA parse head's (batch, queries, keys) head log-probabilities, in the one layer that
    has it. `streams`: what an encoder layer hands the next one (the Graph-Transformer's P and I; None otherwise).
    """

    hidden_states: torch.Tensor
    attentions: torch.Tensor | None = None
    cross_attentions: torch.Tensor | None = None
    parse_log_probs: torch.Tensor | None = None
    streams: Any = None


class FeedForward(nn.Module):
    def __init__(self, d_model: int, ffn_dim: int, activation: str, activation_dropout: float):
        super().__init__()
        self.fc1 = nn.Linear(d_model, ffn_dim)
        self.fc2 = nn.Linear(ffn_dim, d_model)
        self.activation = ACT2FN[activation]
        self.activation_dropout = activation_dropout

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        hidden_states = self.activation(self.fc1(hidden_states))
        hidden_states = F.dropout(hidden_states, p=self.activation_dropout, training=self.training)
        return self.fc2(hidden_states)


def relative_terms(config, side: str) -> dict[str, RelativeTerm]:
    """The relative terms one self-attention layer of `side` gets, by name; tables are per layer and shared across
    heads (Shaw et al.)."""
    head_dim = config.d_model // getattr(config, f"{side}_attention_heads")
    return {
        name: RelativeTerm(
            kind.num_buckets(getattr(config, kind.clip_field)), head_dim,
            getattr(config, kind.keys_field) if kind.keys_field else True,
            getattr(config, kind.values_field) if kind.values_field else True,
        )
        for name, kind in enabled_terms(config, side).items()
    }


def parse_head_arguments(config, side: str, layer_idx: int) -> dict:
    """The DBSA parse-head arguments of `SyntaxAttention` for self-attention layer `layer_idx` of `side`: a
    biaffine head in the configured layer (`parse_layer_<side>`, 1-based), nothing elsewhere."""
    if DBSA_PARSE_HEAD.layer(config, side) != layer_idx + 1:
        return {}
    head_dim = config.d_model // getattr(config, f"{side}_attention_heads")
    scaled = config.parse_score_form == "scaled"
    return {"parse_head": BiaffineParseHead(config.d_model, head_dim, scale_query=scaled),
            "parse_head_mode": config.parse_head}


class EncoderLayer(GradientCheckpointingLayer):
    """Self-attention + feed-forward, each followed by dropout, residual and LayerNorm (post-LN). Recomputed in
    backward under activation checkpointing, as every layer type here (`GradientCheckpointingLayer`)."""

    stack_inputs = ("term_relations",)
    """What the encoder stack passes besides hidden states and mask (see `SyntaxTransformerEncoder`)."""

    def __init__(self, config, layer_idx: int):
        super().__init__()
        self.self_attn = SyntaxAttention(
            config.d_model, config.encoder_attention_heads, config.attention_dropout, layer_idx,
            relative_terms=relative_terms(config, "encoder"), **parse_head_arguments(config, "encoder", layer_idx),
        )
        self.self_attn_layer_norm = nn.LayerNorm(config.d_model)
        self.ffn = FeedForward(config.d_model, config.encoder_ffn_dim, config.activation_function,
                               config.activation_dropout)
        self.final_layer_norm = nn.LayerNorm(config.d_model)
        self.dropout = config.dropout

    def forward(self, hidden_states, attention_mask, *, term_relations=None, explicit_weights=False) -> LayerOutput:
        attention = self.self_attn(
            hidden_states, attention_mask=attention_mask, term_relations=term_relations,
            explicit_weights=explicit_weights,
        )
        hidden_states = self.self_attn_layer_norm(
            hidden_states + F.dropout(attention.output, self.dropout, self.training))
        transformed = self.ffn(hidden_states)
        hidden_states = self.final_layer_norm(hidden_states + F.dropout(transformed, self.dropout, self.training))
        return LayerOutput(hidden_states, attention.weights, parse_log_probs=attention.parse_log_probs)


class DecoderLayer(GradientCheckpointingLayer):
    """Causal self-attention, cross-attention and feed-forward, each post-LN."""

    def __init__(self, config, layer_idx: int):
        super().__init__()
        self.self_attn = SyntaxAttention(
            config.d_model, config.decoder_attention_heads, config.attention_dropout, layer_idx,
            relative_terms=relative_terms(config, "decoder"), **parse_head_arguments(config, "decoder", layer_idx),
        )
        self.self_attn_layer_norm = nn.LayerNorm(config.d_model)
        self.encoder_attn = SyntaxAttention(
            config.d_model, config.decoder_attention_heads, config.attention_dropout, layer_idx,
            is_cross_attention=True,
        )
        self.encoder_attn_layer_norm = nn.LayerNorm(config.d_model)
        self.ffn = FeedForward(config.d_model, config.decoder_ffn_dim, config.activation_function,
                               config.activation_dropout)
        self.final_layer_norm = nn.LayerNorm(config.d_model)
        self.dropout = config.dropout

    def forward(self, hidden_states, attention_mask, encoder_hidden_states, encoder_attention_mask, *,
                cache=None, term_relations=None, explicit_weights=False) -> LayerOutput:
        attention = self.self_attn(
            hidden_states, attention_mask=attention_mask, cache=cache,
            term_relations=term_relations, explicit_weights=explicit_weights,
        )
        hidden_states = self.self_attn_layer_norm(
            hidden_states + F.dropout(attention.output, self.dropout, self.training))
        cross = self.encoder_attn(
            hidden_states, key_value_states=encoder_hidden_states, attention_mask=encoder_attention_mask,
            cache=cache, explicit_weights=explicit_weights,
        )
        hidden_states = self.encoder_attn_layer_norm(
            hidden_states + F.dropout(cross.output, self.dropout, self.training))
        transformed = self.ffn(hidden_states)
        hidden_states = self.final_layer_norm(hidden_states + F.dropout(transformed, self.dropout, self.training))
        return LayerOutput(hidden_states, attention.weights, cross.weights, attention.parse_log_probs)


__all__ = ["DecoderLayer", "EncoderLayer", "FeedForward", "LayerOutput", "parse_head_arguments", "relative_terms"]
