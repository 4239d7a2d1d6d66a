"""Self-parsing: a small parser at the bottom of the encoder whose own tree gives the dependency-depth term its
`dep_depths`, so a dep+rel model runs no dependency parser at inference.

The parser is `config.self_parse_layers` ordinary encoder layers (relative positions as configured, no depth term)
over the encoder's input embeddings and DBSA's biaffine scorer on top, trained on `dep_heads`. Its
log-probabilities are decoded into one well-formed tree over *words* (`word_heads_from_parse`: a word's final
subword scores its head word's first/last subword, as the training heads were built), and every subword takes its
word's depth: exactly how `align.subword_columns` made the `dep_depths` the depth term was trained on. A subword tree's
own depths would not do: a word of three subwords would span three depths.

Word boundaries come from the vocabulary, not from a parser or a featurizer: with the Metaspace/SentencePiece
tokenizers of hf_syntax, a subword that begins with "▁" begins a word, so `word_roles` (one entry per vocabulary id,
saved with the weights) turns `input_ids` alone into word ids. The pipeline then feeds a self-parsing model like the
baseline: tokenizer only.

Why this design rather than the alternatives (the model card says more):

* a two-pass encoder (run the encoder without depths, decode its DBSA head, run it again with the depths) doubles the
  encoder at inference, and its first pass must learn to work without depths;
* moving the depth term above the DBSA parse layer needs no extra layers but drops the depth term from the layers
  below it, where dep+rel has it, and makes the term per-layer inside the attention;
* soft expected depths would need fractional buckets inside the depth term; decoding a tree keeps the term as it is.

Training is teacher-forced: the depth term reads the given (parser) `dep_depths`, while the parser learns `dep_heads`;
`config.self_parse_sampling` replaces a share of the sentences' depths by the model's own tree (scheduled sampling
against exposure bias). At inference the own tree is used unless `config.self_parse_at_inference` is False.
"""

from __future__ import annotations

import copy

import torch
from torch import nn

from .columns import NO_WORD, check_integer_column
from .attention import explicit_weights, matmul_dtype, term_relations
from .layers import EncoderLayer
from .parse_head import BiaffineParseHead
from .parse_head_trees import word_heads_from_parse
from .trees import WordTree

WORD_START = "\u2581"
"""The marker Metaspace / SentencePiece tokenizers put at the start of every word."""
UNSET, CONTINUES, STARTS, NOT_A_WORD = -1, 0, 1, 2
"""`word_roles` values: not yet read from a tokenizer; continues the word before it; starts a word; a special
token (end of sentence, padding), which has no depth."""


def word_roles_of(tokenizer, vocab_size: int) -> torch.Tensor:
    """The role of every vocabulary id of `tokenizer` (see `UNSET` ...). The unknown token is a continuation: it stands
    for characters inside a word, after the word's "▁" piece."""
    if len(tokenizer) > vocab_size:
        raise ValueError(f"the tokenizer has {len(tokenizer)} tokens but the model's vocabulary {vocab_size}.")
    tokens = tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
    if not any(token and token.startswith(WORD_START) for token in tokens):
        raise ValueError(
            f"{type(tokenizer).__name__} marks no word start with {WORD_START!r}: self-parsing reads word boundaries "
            "from a Metaspace/SentencePiece vocabulary (as hf_syntax.data.tokenizer trains)."
        )
    specials = set(tokenizer.all_special_ids) - {tokenizer.unk_token_id}
    roles = torch.full((vocab_size,), CONTINUES, dtype=torch.int8)
    for token_id, token in enumerate(tokens):
        if token_id in specials:
            roles[token_id] = NOT_A_WORD
        elif token and token.startswith(WORD_START):
            roles[token_id] = STARTS
    return roles


def word_ids_from_roles(input_ids: torch.Tensor, roles: torch.Tensor,
                        attention_mask: torch.Tensor | None = None) -> torch.Tensor:
    """(batch, n) 0-based word index of every subword, `NO_WORD` for special tokens and padding."""
    role = roles[input_ids]
    if (role == UNSET).any():
        raise ValueError(
            "the self-parser does not know the tokenizer's word boundaries: call "
            "`model.read_source_tokenizer(tokenizer)` once (the translation recipe does)."
        )
    content = role != NOT_A_WORD
    if attention_mask is not None:
        content &= attention_mask.bool()
    words = ((role == STARTS) & content).long().cumsum(-1) - 1
    return words.clamp(min=0).masked_fill(~content, NO_WORD)


def depths_from_parse(parse_log_probs: torch.Tensor, word_ids: torch.Tensor, head_rule: str = "first") -> torch.Tensor:
    """(batch, n) `dep_depths` of the best well-formed word tree of each sequence's parse: every subword gets its
    word's depth (roots 0), special tokens and padding -1, as the featurizer makes them from a parser's tree."""
    depths = torch.full(word_ids.shape, -1, dtype=torch.long)
    for row, ids in enumerate(word_ids.tolist()):
        count = max(ids, default=NO_WORD) + 1
        if count == 0:
            continue
        heads = word_heads_from_parse(parse_log_probs[row], ids, head_rule=head_rule)
        word_depths = WordTree(("w",) * count, tuple(heads)).depths
        depths[row] = torch.tensor([NO_WORD if word == NO_WORD else word_depths[word] for word in ids])
    return depths.to(word_ids.device)


class ArcScorer(BiaffineParseHead):
    """DBSA's biaffine head scores alone: the parser gives a tree, not an attention output, so no value projection."""

    def __init__(self, d_model: int, head_dim: int, scale_query: bool):
        super().__init__(d_model, head_dim, scale_query)
        del self.v_proj

    def forward(self, hidden: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        """(batch, n, d_model) -> (batch, n, n) head log-probabilities; the score is `attend`'s (one definition),
        whose small mixed output is not used."""
        query, key = self.q_proj(hidden)[:, None], self.k_proj(hidden)[:, None]
        return self.attend(query, key, key, mask)[1]


class SelfParser(nn.Module):
    """The parsing layers at the bottom of a self-parsing encoder and the depths they give.

    A few layers under the encoder rather than a second encoder pass (twice the encoder's cost) or the DBSA head's
    tree fed to the layers above it (no depth term below it): the rest of the model stays `dbsa_dep_rel`, and its
    depth term reads depths of exactly the training form (see the module docstring).
    """

    def __init__(self, config):
        super().__init__()
        self.config = config
        # The parser's own layers: the configured relative positions; no depths (it makes them), no parse head.
        self.layer_config = copy.copy(config)
        for name, value in (("dependency_depth_clip", 0), ("parse_layer_encoder", 0),
                            ("encoder_layers", config.self_parse_layers), ("self_parse_layers", 0)):
            setattr(self.layer_config, name, value)
        self.layers = nn.ModuleList([EncoderLayer(self.layer_config, i) for i in range(config.self_parse_layers)])
        head_dim = config.d_model // config.encoder_attention_heads
        self.scorer = ArcScorer(config.d_model, head_dim, scale_query=config.parse_score_form == "scaled")
        self.register_buffer("word_roles", torch.full((config.vocab_size,), UNSET, dtype=torch.int8))

    def set_word_roles(self, tokenizer) -> None:
        """Read the word boundaries of `tokenizer`'s vocabulary (saved with the weights from then on)."""
        self.word_roles.copy_(word_roles_of(tokenizer, self.word_roles.shape[0]))

    def forward(self, hidden: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        """(batch, n, n) head log-probabilities from the encoder's input embeddings `hidden` (additive `mask`)."""
        length = hidden.shape[1]
        positions = torch.arange(length, device=hidden.device)
        relations = term_relations(self.layer_config, "encoder", positions, length, {}, hidden.shape[0],
                                   matmul_dtype(hidden))
        explicit = explicit_weights(self.config, output_attentions=False)
        for layer in self.layers:
            hidden = layer(hidden, mask, term_relations=relations, explicit_weights=explicit)[0]
        return self.scorer(hidden, mask)

    def depths(self, parse_log_probs, input_ids, attention_mask, given: torch.Tensor | None) -> torch.Tensor:
        """The `dep_depths` the depth term reads: the given ones in training (a `self_parse_sampling` share of the
        sentences replaced by the own tree's), the own tree's at inference unless `self_parse_at_inference` is off."""
        config = self.config
        if given is not None and given.shape != input_ids.shape:
            raise ValueError(f"dep_depths has shape {tuple(given.shape)} but input_ids has {tuple(input_ids.shape)}: "
                             "feature columns must be aligned to the subwords.")
        if given is not None:
            check_integer_column("dep_depths", given, "syntax columns")
        reads_given = self.training or not config.self_parse_at_inference
        if reads_given and given is None and not self.training:
            raise ValueError("self_parse_at_inference=False: this model reads the given `dep_depths` at inference "
                             "(from the parser named in config.source_parser); pass them or set it back to True.")
        if reads_given and given is not None:
            if not (self.training and config.self_parse_sampling):
                return given
            sampled = torch.rand(given.shape[0], device=given.device) < config.self_parse_sampling
            if not sampled.any():
                return given
            own = self.own_depths(parse_log_probs, input_ids, attention_mask)
            return torch.where(sampled[:, None], own, given)
        return self.own_depths(parse_log_probs, input_ids, attention_mask)

    @torch.no_grad()
    def own_depths(self, parse_log_probs, input_ids, attention_mask) -> torch.Tensor:
        """The depths of the model's own best tree (no gradient: the tree is discrete)."""
        word_ids = word_ids_from_roles(input_ids, self.word_roles.to(input_ids.device).long(), attention_mask)
        return depths_from_parse(parse_log_probs.detach().float().cpu(), word_ids.cpu(),
                                 self.config.subword_head_rule).to(input_ids.device)


__all__ = ["ArcScorer", "SelfParser", "depths_from_parse", "word_ids_from_roles", "word_roles_of"]
