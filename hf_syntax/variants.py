"""Paper variants as presets of the one composable core, and a table of named architectures.

A variant is a config subclass that only changes defaults and `model_type`, plus a model subclass that only points
at that config; all behaviour lives in `SyntaxTransformerForConditionalGeneration`. `ARCHITECTURES` maps a name to
(config class, overrides) like fairseq's `register_model_architecture`, and `PAPER_TABLE_ROWS` says which named
architecture (and which tokenizer) reproduces each row of the papers' result tables.

Word-level vs BPE rows (DBSA Table 3) use the same architecture: only the tokenizer differs (a word-level
vocabulary with an <unk> cutoff instead of BPE). With whole words each word is one token, so the subword head rule
reduces to the word-level tree.
"""

from huggingface_hub.dataclasses import strict

from .configuration_syntax_transformer import SyntaxTransformerConfig
from .modeling_syntax_transformer import SyntaxTransformerForConditionalGeneration


@strict
class DbsaConfig(SyntaxTransformerConfig):
    r"""
    Dependency-based self-attention (Deguchi et al. 2019): one head of encoder layer `parse_layer_encoder` (p_e)
    and of decoder layer `parse_layer_decoder` (p_d) is a biaffine parse head trained on dependency heads
    (`dep_heads` / `decoder_dep_heads`). Paper defaults: p_e = p_d = 4 of 6 layers, lambda_enc = lambda_dec = 1.0
    (the authors' code uses 0.5). Set a parse layer to 0 to switch that side off. No parser runs at inference.
    Every other field is a `SyntaxTransformerConfig` field.
    """

    model_type = "dbsa"

    parse_layer_encoder: int = 4
    parse_layer_decoder: int = 4
    parse_loss_weight_encoder: float | int = 1.0
    parse_loss_weight_decoder: float | int = 1.0


@strict
class DepRpeConfig(SyntaxTransformerConfig):
    r"""
    Dependency-based relative positional encoding (Omote et al. 2019), defaults = their Transformer_dep+rel:
    Shaw et al. relative positions with clip k = 2 in the encoder and decoder self-attention (a^K, a^V), and the
    relative depth on the source dependency tree with clip l = 2 in the encoder self-attention (b^K, b^V),
    sinusoidal absolute positions kept (the paper drops them only for its Table 3 ablation). The source
    dependency depths (`dep_depths`) are needed at inference too. Every other field is a
    `SyntaxTransformerConfig` field.
    """

    model_type = "dep_rpe"

    relative_position_clip: int = 2
    dependency_depth_clip: int = 2


class DbsaForConditionalGeneration(SyntaxTransformerForConditionalGeneration):
    """The core translation model with `DbsaConfig` defaults (its own `model_type` for the Auto classes)."""

    config_class = DbsaConfig


class DepRpeForConditionalGeneration(SyntaxTransformerForConditionalGeneration):
    """The core translation model with `DepRpeConfig` defaults (its own `model_type` for the Auto classes)."""

    config_class = DepRpeConfig


DbsaConfig.register_for_auto_class()
DbsaForConditionalGeneration.register_for_auto_class("AutoModelForSeq2SeqLM")
DepRpeConfig.register_for_auto_class()
DepRpeForConditionalGeneration.register_for_auto_class("AutoModelForSeq2SeqLM")

_NO_ABSOLUTE = {"absolute_positions": False}

ARCHITECTURES = {
    # Baseline: Vaswani et al. ("Trans." in DBSA, Transformer_abs in Omote et al.).
    "transformer_abs": (SyntaxTransformerConfig, {}),
    # Omote et al. Table 2. Shaw et al. put relative positions in encoder and decoder; the depth term is encoder-only.
    "transformer_rel": (DepRpeConfig, {"dependency_depth_clip": 0}),
    "transformer_dep": (DepRpeConfig, {"relative_position_clip": 0}),
    "transformer_dep_rel": (DepRpeConfig, {}),
    # Omote et al. Table 3: Transformer_dep without absolute positions, ablating b^K / b^V.
    "transformer_dep_noabs": (DepRpeConfig, {"relative_position_clip": 0, **_NO_ABSOLUTE}),
    "transformer_dep_keys_noabs": (
        DepRpeConfig, {"relative_position_clip": 0, "dependency_depth_values": False, **_NO_ABSOLUTE},
    ),
    "transformer_dep_values_noabs": (
        DepRpeConfig, {"relative_position_clip": 0, "dependency_depth_keys": False, **_NO_ABSOLUTE},
    ),
    "transformer_noabs": (SyntaxTransformerConfig, _NO_ABSOLUTE),
    # Deguchi et al. Tables 2 and 3.
    "dbsa_enc": (DbsaConfig, {"parse_layer_decoder": 0}),
    "dbsa_dec": (DbsaConfig, {"parse_layer_encoder": 0}),
    "dbsa_enc_dec": (DbsaConfig, {}),
}

# (paper, table, row as printed) -> (architecture, tokenizer). "bpe" = joint subword vocabulary; "word" = whole
# words with an <unk> cutoff (DBSA: words seen < 5 times; Omote Table 3: < 2 times).
PAPER_TABLE_ROWS = {
    ("deguchi2019", "Table 2", "Trans."): ("transformer_abs", "bpe"),
    ("deguchi2019", "Table 2", "Trans. + DBSA(Enc)"): ("dbsa_enc", "bpe"),
    ("deguchi2019", "Table 2", "Trans. + DBSA(Dec)"): ("dbsa_dec", "bpe"),
    ("deguchi2019", "Table 2", "Trans. + DBSA(Enc) + DBSA(Dec)"): ("dbsa_enc_dec", "bpe"),
    ("deguchi2019", "Table 3", "Trans. w/o BPE"): ("transformer_abs", "word"),
    ("deguchi2019", "Table 3", "Trans. w/ BPE"): ("transformer_abs", "bpe"),
    ("deguchi2019", "Table 3", "Trans. + DBSA(Enc) + DBSA(Dec) w/o BPE"): ("dbsa_enc_dec", "word"),
    ("deguchi2019", "Table 3", "Trans. + DBSA(Enc) + DBSA(Dec) w/ BPE"): ("dbsa_enc_dec", "bpe"),
    ("omote2019", "Table 2", "Transformer_abs"): ("transformer_abs", "word"),
    ("omote2019", "Table 2", "Transformer_rel"): ("transformer_rel", "word"),
    ("omote2019", "Table 2", "Transformer_dep"): ("transformer_dep", "word"),
    ("omote2019", "Table 2", "Transformer_dep+rel"): ("transformer_dep_rel", "word"),
    ("omote2019", "Table 3", "b^V and b^K"): ("transformer_dep_noabs", "word"),
    ("omote2019", "Table 3", "b^K only"): ("transformer_dep_keys_noabs", "word"),
    ("omote2019", "Table 3", "b^V only"): ("transformer_dep_values_noabs", "word"),
    ("omote2019", "Table 3", "neither"): ("transformer_noabs", "word"),
}


def config_for(name: str, **overrides) -> SyntaxTransformerConfig:
    """The config of a named architecture; `overrides` (sizes, vocabulary, ...) win over the preset."""
    if name not in ARCHITECTURES:
        raise ValueError(f"Unknown architecture {name!r}; choose one of {sorted(ARCHITECTURES)}.")
    config_class, preset = ARCHITECTURES[name]
    return config_class(**{**preset, **overrides})


__all__ = [
    "ARCHITECTURES",
    "DbsaConfig",
    "DbsaForConditionalGeneration",
    "DepRpeConfig",
    "DepRpeForConditionalGeneration",
    "PAPER_TABLE_ROWS",
    "config_for",
]
