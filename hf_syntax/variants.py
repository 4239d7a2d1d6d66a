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
    (`dep_heads` / `decoder_dep_heads`), p_e = p_d = 4 of 6 layers as in the paper. Set a parse layer to 0 to switch
    that side off. No parser runs at inference.

    Where the paper and the authors' fairseq code (de9uch1/dbsa) differ, an option picks either. The defaults are
    the authors' code's effective settings (score form, lambda = 0.5, decoder loss over all pairs), chosen by a
    1000-step ablation against the paper's reading (lambda = 1.0, unscaled, supervised pairs), whose parse losses
    dominate the gradient so that clipping shrinks every update, translation included: the measurements are in
    benchmarks/results/enja_converged/README.md.

    * `parse_score_form`: "scaled" (default; the authors' code: Q is scaled by d_head^-1/2 before U, as for the
      content heads, and U starts Xavier-uniform with gain 1/sqrt(2)) or "unscaled" (the paper's eq. 14,
      s = Q U K^T + K u, with U started at zero so every parse head starts uniform). u starts at zero in both.
    * `parse_loss_weight_encoder` / `parse_loss_weight_decoder` (lambda): 0.5 (default, the authors' code) or the
      paper's 1.0.
    * `decoder_parse_loss_normalizer`: the decoder parse loss sums -log A[t, head(t)] over the rows whose head is at
      or before them (the others are masked) and divides by the number of all target tokens with a head, future
      heads included ("all_pairs", default, the authors' code) or by the supervised rows only ("supervised", the
      paper read literally). "all_pairs" weighs the decoder loss down by the share of tokens whose head comes
      later: 38.9% of the words of small_parallel_enja's dev.en by spaCy's English parser, more among subwords (a
      non-final subword's head is the next subword).
    * `parse_head`: the parse head replaces the layer's last head ("replace", the paper and the authors' code) or
      is an extra head ("add": the layer keeps all its ordinary heads; the output projection reads
      d_model + d_head features).
    * `parse_loss_warmup_steps` (neither: an option of ours): lambda grows linearly from 0 to its value over that
      many optimizer steps (0 = off); the Trainer tells the model the step (`ParseLossWarmupCallback`).

    Every other field is a `SyntaxTransformerConfig` field.
    """

    model_type = "dbsa"

    parse_layer_encoder: int = 4
    parse_layer_decoder: int = 4
    parse_loss_weight_encoder: float | int = 0.5
    parse_loss_weight_decoder: float | int = 0.5
    parse_score_form: str = "scaled"
    decoder_parse_loss_normalizer: str = "all_pairs"


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


@strict
class DbsaDepRelConfig(DbsaConfig):
    r"""
    DBSA with the dependency-based relative positional encoding (ours; neither paper combines them): `DbsaConfig`'s
    parse heads and their authors' settings (encoder and decoder layer 4, lambda = 0.5, scaled scores), plus
    `DepRpeConfig`'s Shaw relative positions (k = 2, encoder and decoder) and relative source depths (l = 2, encoder).
    As a Transformer_dep+rel it reads `dep_depths` from a parser at inference; with `self_parse_layers` > 0
    (architecture `dbsa_dep_rel_self`) it parses for itself: a small parser at the bottom of the encoder gives the
    depths, and no parser runs at inference (`hf_syntax/self_parse.py`). Every other field is a
    `SyntaxTransformerConfig` field.
    """

    model_type = "dbsa_dep_rel"

    relative_position_clip: int = 2
    dependency_depth_clip: int = 2


@strict
class GraphTransformerConfig(SyntaxTransformerConfig):
    r"""
    Graph-Transformer (Duan et al. 2020): from the second layer on, every encoder layer attends over the previous
    representation P = F_{l-2} and the incremental one I (P + I = F_{l-1}) in three parts (high: I->I, middle:
    I->P and P->I) and fuses them with the low-order part F_{l-1} (`graph_fusion`: "sum" / "gate" / "self_gate");
    `graph_half_dim` halves the parts' width, `graph_shared_qkv` shares one Q/K/V set per stream. The readings of
    the lost equations are options: `graph_first_layer` ("standard" / "graph"), `graph_increment`
    ("output_difference" / "residual_branch"), `graph_middle_stream` ("previous" / "full") and `graph_new_groups`
    ("sum" / "mean" of the three parts; unset, "mean" under the gate, on which the text is silent, and "sum" under
    the other fusions). The decoder is the Transformer's. This is a reconstruction (see
    `hf_syntax/graph_transformer.py` for which parts are sourced and which inferred). Defaults = the paper's best
    En-De row, "+half-dim&gate". Every other field is a `SyntaxTransformerConfig` field.
    """

    model_type = "graph_transformer"

    encoder_layer_type: str = "graph"
    graph_fusion: str = "gate"
    graph_half_dim: bool = True


@strict
class SyntaxInfusedConfig(SyntaxTransformerConfig):
    r"""
    Syntax-infused Transformer (Sundararaman et al. 2019): the source embedding is a (d - f)-wide word embedding
    concatenated with the sum of f-wide embeddings of the word's UPOS, its case and the subword's B/I/E/O position
    tag (f = 20: 492 + 20 = 512). The decoder keeps d-wide word embeddings, so source and target tables are
    separate (`share_encoder_decoder_embeddings=False`; the target table stays tied to the output projection).
    `source_features` picks any subset, `feature_combine` the combination ("concat_sum" paper default,
    "concat_each", "add"). The feature columns (`pos_ids`, `case_ids`, `subword_tags`) are needed at inference
    too. Every other field is a `SyntaxTransformerConfig` field.
    """

    model_type = "syntax_infused"

    source_features: list[str] | tuple[str, ...] = ("pos", "case", "subword_tag")
    feature_embedding_dim: int = 20
    feature_combine: str = "concat_sum"
    share_encoder_decoder_embeddings: bool = False


class DbsaForConditionalGeneration(SyntaxTransformerForConditionalGeneration):
    """The core translation model with `DbsaConfig` defaults (its own `model_type` for the Auto classes)."""

    config_class = DbsaConfig


class DepRpeForConditionalGeneration(SyntaxTransformerForConditionalGeneration):
    """The core translation model with `DepRpeConfig` defaults (its own `model_type` for the Auto classes)."""

    config_class = DepRpeConfig


class DbsaDepRelForConditionalGeneration(SyntaxTransformerForConditionalGeneration):
    """The core translation model with `DbsaDepRelConfig` defaults (its own `model_type` for the Auto classes)."""

    config_class = DbsaDepRelConfig


class GraphTransformerForConditionalGeneration(SyntaxTransformerForConditionalGeneration):
    """The core translation model with `GraphTransformerConfig` defaults (its own `model_type` for the Auto classes)."""

    config_class = GraphTransformerConfig


class SyntaxInfusedForConditionalGeneration(SyntaxTransformerForConditionalGeneration):
    """The core translation model with `SyntaxInfusedConfig` defaults (its own `model_type` for the Auto classes)."""

    config_class = SyntaxInfusedConfig


PRESET_CLASSES = (
    (DbsaConfig, DbsaForConditionalGeneration),
    (DepRpeConfig, DepRpeForConditionalGeneration),
    (DbsaDepRelConfig, DbsaDepRelForConditionalGeneration),
    (GraphTransformerConfig, GraphTransformerForConditionalGeneration),
    (SyntaxInfusedConfig, SyntaxInfusedForConditionalGeneration),
)
"""Every preset's (config class, model class): registered here for the `auto_map` of saved folders, and with the
Auto classes by `hf_syntax/__init__.py`. A new model type is one more pair."""
for _config_class, _model_class in PRESET_CLASSES:
    _config_class.register_for_auto_class()
    _model_class.register_for_auto_class("AutoModelForSeq2SeqLM")

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
    # Ours: DBSA(Enc)+DBSA(Dec) with Transformer_dep+rel's terms, reading a parser's depths at inference, and the same
    # model parsing for itself (two parser layers at the bottom of the encoder give the depths; no parser at inference).
    "dbsa_dep_rel": (DbsaDepRelConfig, {}),
    "dbsa_dep_rel_self": (DbsaDepRelConfig, {"self_parse_layers": 2}),
    # Duan et al. Table 2 ("Our model" = three attention parts with sum fusion); sizes in DUAN2020_SIZES.
    **{
        name: (GraphTransformerConfig, {"graph_fusion": fusion, "graph_half_dim": half_dim, "graph_shared_qkv": shared})
        for name, fusion, half_dim, shared in (
            ("graph_transformer_sum", "sum", False, False),
            ("graph_transformer_half_dim", "sum", True, False),
            ("graph_transformer_gate", "gate", False, False),
            ("graph_transformer_self_gate", "self_gate", False, False),
            ("graph_transformer_shared_qkv_gate", "gate", False, True),
            ("graph_transformer_half_dim_gate", "gate", True, False),
            ("graph_transformer_half_dim_gate_shared_qkv", "gate", True, True),
        )
    },
    # Sundararaman et al.: all three features summed into f = 20 (Table 1), the "two of three features" comparison,
    # POS alone, and the other combine modes. "concat_each" splits the 20 dimensions over the three features:
    # 3 x 7 = 21 is the nearest width a per-feature block allows.
    "syntax_infused": (SyntaxInfusedConfig, {}),
    "syntax_infused_pos": (SyntaxInfusedConfig, {"source_features": ["pos"]}),
    "syntax_infused_pos_case": (SyntaxInfusedConfig, {"source_features": ["pos", "case"]}),
    "syntax_infused_pos_subword_tag": (SyntaxInfusedConfig, {"source_features": ["pos", "subword_tag"]}),
    "syntax_infused_case_subword_tag": (SyntaxInfusedConfig, {"source_features": ["case", "subword_tag"]}),
    "syntax_infused_concat_each": (SyntaxInfusedConfig, {"feature_combine": "concat_each", "feature_embedding_dim": 7}),
    "syntax_infused_add": (SyntaxInfusedConfig, {"feature_combine": "add"}),
}

# Duan et al. Table 1 sizes (6 + 6 layers, d = 512). De-En follows fairseq's Transformer-small with separate
# source/target tables of a 10k BPE vocabulary; En-De is Transformer-base with one shared 40k table. With these,
# the baselines come to 41.8M / 64.6M parameters (paper: 42M / 66M).
DUAN2020_SIZES = {
    "De-En": {
        "vocab_size": 10000, "share_encoder_decoder_embeddings": False, "d_model": 512,
        "encoder_attention_heads": 4, "decoder_attention_heads": 4, "encoder_ffn_dim": 1024, "decoder_ffn_dim": 1024,
        "dropout": 0.3,
    },
    "En-De": {
        "vocab_size": 40000, "d_model": 512, "encoder_attention_heads": 8, "decoder_attention_heads": 8,
        "encoder_ffn_dim": 2048, "decoder_ffn_dim": 2048, "dropout": 0.1,
    },
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
    # Duan et al. Table 2: the same rows for De-En and En-De, at the sizes of DUAN2020_SIZES.
    ("duan2020", "Table 2", "TF (small) / TF (base)"): ("transformer_abs", "bpe"),
    ("duan2020", "Table 2", "Our model"): ("graph_transformer_sum", "bpe"),
    ("duan2020", "Table 2", "+half-dim"): ("graph_transformer_half_dim", "bpe"),
    ("duan2020", "Table 2", "+gate"): ("graph_transformer_gate", "bpe"),
    ("duan2020", "Table 2", "+self-gate"): ("graph_transformer_self_gate", "bpe"),
    ("duan2020", "Table 2", "+shared-qkv&gate"): ("graph_transformer_shared_qkv_gate", "bpe"),
    ("duan2020", "Table 2", "+half-dim&gate"): ("graph_transformer_half_dim_gate", "bpe"),
    ("duan2020", "Table 2", "+half-dim&gate&shared-qkv"): ("graph_transformer_half_dim_gate_shared_qkv", "bpe"),
    ("sundararaman2019", "Table 1", "Baseline"): ("transformer_abs", "bpe"),
    ("sundararaman2019", "Table 1", "Syntax-infused"): ("syntax_infused", "bpe"),
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
    "DbsaDepRelConfig",
    "DbsaDepRelForConditionalGeneration",
    "DbsaForConditionalGeneration",
    "DepRpeConfig",
    "DepRpeForConditionalGeneration",
    "DUAN2020_SIZES",
    "GraphTransformerConfig",
    "GraphTransformerForConditionalGeneration",
    "PAPER_TABLE_ROWS",
    "PRESET_CLASSES",
    "SyntaxInfusedConfig",
    "SyntaxInfusedForConditionalGeneration",
    "config_for",
]
