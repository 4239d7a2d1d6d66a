"""Configuration of the one composable encoder-decoder core that every seq2seq paper variant is a preset of.

Every mechanism of the papers is a field here, off by default, so the default configuration is the plain
Transformer baseline (Vaswani et al. 2017: post-LN, sinusoidal positions, scaled embeddings, label smoothing,
tied embeddings). Variant configs (`DbsaConfig`, `DepRpeConfig`, ...) only change defaults and `model_type`.
A mechanism's own options (`SWITCHED_OPTIONS`) changed while the mechanism is off are refused: they would do nothing.
"""

import difflib
from collections.abc import Callable
from dataclasses import dataclass, fields

from huggingface_hub.dataclasses import strict
from transformers import GenerationConfig, PreTrainedConfig

from .attention import RELATIVE_TERMS, enabled_terms
from .columns import EMBEDDED_FEATURES, SUBWORD_HEAD_RULES
from .parse_head import DBSA_PARSE_HEAD
from .segmenters import segmenter_requirements

ACTIVATIONS = ("relu", "gelu", "swish", "silu")
WEIGHT_INITS = ("xavier", "normal")
ENCODER_LAYER_TYPES = ("standard", "graph")
GRAPH_FUSIONS = ("sum", "gate", "self_gate")
GRAPH_MIDDLE_STREAMS = ("previous", "full")
GRAPH_FIRST_LAYERS = ("standard", "graph")
GRAPH_INCREMENTS = ("output_difference", "residual_branch")
GRAPH_NEW_GROUPS = ("sum", "mean")
# graph_new_groups when unset. The text gives sum "four groups equal weights", so its parts are summed; it is silent
# on how the gate's one new group is built, and averaged parts trained better there (graph_transformer.py).
GRAPH_NEW_GROUPS_BY_FUSION = {"sum": "sum", "gate": "mean", "self_gate": "sum"}
GRAPH_OPTIONS = ("graph_fusion", "graph_half_dim", "graph_shared_qkv", "graph_middle_stream", "graph_first_layer",
                 "graph_increment", "graph_new_groups")
"""The Graph-Transformer's own options (its switch is encoder_layer_type)."""
FEATURE_COMBINES = ("concat_sum", "concat_each", "add")
PARSE_SCORE_FORMS = ("unscaled", "scaled")
PARSE_HEAD_MODES = ("replace", "add")
DECODER_PARSE_LOSS_NORMALIZERS = ("supervised", "all_pairs")

# Keys that transformers itself writes into config.json or passes through from_pretrained; they are never
# typos of ours, so the unknown-key check lets them through.
_BOOKKEEPING_KEYS = {
    "transformers_version", "architectures", "auto_map", "custom_pipelines", "model_type", "torch_dtype",
    "name_or_path", "_name_or_path", "_commit_hash", "output_attentions", "attn_implementation",
    "experts_implementation", "per_layer_config", "_attn_implementation_autoset", "use_return_dict",
}


def known_keys(config_class, extra: tuple[str, ...] = ()) -> set[str]:
    """The keys `config_class` takes: its fields, transformers' bookkeeping, the generation parameters and `extra`
    (keyword arguments a base class reads that are no field, e.g. a task head's `num_labels`)."""
    return ({f.name for f in fields(config_class)} | _BOOKKEEPING_KEYS
            | set(GenerationConfig._get_default_generation_params()) | set(extra))


def reject_unknown_keys(config_class, kwargs, extra: tuple[str, ...] = ()) -> None:
    """A misspelt option must fail loudly instead of silently training the wrong model."""
    unknown = sorted(set(kwargs) - known_keys(config_class, extra))
    if unknown:
        raise ValueError(
            f"{config_class.__name__} got unknown option(s) {unknown}. Check the spelling; the options are the fields "
            f"listed in the {config_class.__name__} docstring."
        )


def eager_if_attentions_asked(config) -> None:
    """A config asking for attentions with no attention implementation named runs "eager", as transformers' own
    `output_attentions` setter decides; under the models' default "sdpa" transformers refuses such a config (the
    seq2seq models) or BERT's layers return no attentions."""
    if config.output_attentions and config._attn_implementation is None:
        config._attn_implementation = "eager"


RELATIVE_TERM_FIELDS = {name: default for kind in RELATIVE_TERMS.values() for name, default in kind.config_fields().items()}
"""Every relative attention term's config fields (clip, switches) with defaults, from its record."""


@dataclass(frozen=True)
class SwitchedOptions:
    """Options that act only while a mechanism is switched on. Changed from their defaults with the whole mechanism
    off they do nothing, so the run would train another model under the name of the options' ablation: the config
    refuses that. A part switched off while the mechanism stays on (one side's parse head, one feature) keeps its
    options: a study's shared settings with one side or feature left out is a design, not a slip."""

    options: tuple[str, ...]
    mechanism: str  # what the options set, for the message
    switches: tuple[str, ...]  # the fields that switch it on, shown with their values
    how_to_switch_on: str
    is_on: Callable[["SyntaxTransformerConfig"], bool]


def _has_parse_head(config) -> bool:
    return any(DBSA_PARSE_HEAD.layer(config, side) > 0 for side in DBSA_PARSE_HEAD.layer_fields)


SWITCHED_OPTIONS = (
    SwitchedOptions(GRAPH_OPTIONS, "the Graph-Transformer's encoder layers", ("encoder_layer_type",),
                    "set encoder_layer_type='graph' (or use a graph_transformer_* architecture)",
                    lambda config: config.encoder_layer_type == "graph"),
    SwitchedOptions(("parse_head", "parse_loss_warmup_steps", *DBSA_PARSE_HEAD.loss_weight_fields.values(),
                     "decoder_parse_loss_normalizer"), "the DBSA parse heads",
                    tuple(DBSA_PARSE_HEAD.layer_fields.values()),
                    "set a parse layer (or use a dbsa_* architecture)",
                    _has_parse_head),
    SwitchedOptions(("parse_score_form",), "the biaffine parse scores",
                    (*DBSA_PARSE_HEAD.layer_fields.values(), "self_parse_layers"),
                    "set a parse layer or self_parse_layers",
                    lambda config: config.self_parse_layers > 0 or _has_parse_head(config)),
    SwitchedOptions(("self_parse_loss_weight", "self_parse_sampling", "self_parse_at_inference"), "the self-parser",
                    ("self_parse_layers",), "set self_parse_layers > 0 (or use the dbsa_dep_rel_self architecture)",
                    lambda config: config.self_parse_layers > 0),
    SwitchedOptions(("feature_embedding_dim", "feature_combine",
                     *(column.size_field for column in EMBEDDED_FEATURES.values())),
                    "the syntax-infused feature embeddings", ("source_features",),
                    "set source_features (or use a syntax_infused_* architecture)",
                    lambda config: bool(config.source_features)),
    *(SwitchedOptions(tuple(name for name in (kind.keys_field, kind.values_field, kind.decoder_field) if name),
                      f"the {name.replace('_', ' ')} term", (kind.clip_field,), f"set {kind.clip_field} > 0",
                      lambda config, kind=kind: getattr(config, kind.clip_field) > 0)
      for name, kind in RELATIVE_TERMS.items()),
)
"""Every mechanism's switched options; a new mechanism with options of its own adds a record here."""


@strict
class SyntaxTransformerConfig(PreTrainedConfig):
    r"""
    Encoder-decoder Transformer with pluggable syntax mechanisms. The defaults are the papers' baseline
    ("Trans." / Transformer_abs) at the base size (6+6 layers, d=512, 8 heads, ffn 2048).

    Core (Marian-compatible names): `vocab_size`, `decoder_vocab_size` (only when the vocabularies are separate),
    `d_model`, `encoder_layers`, `decoder_layers`, `encoder_attention_heads`, `decoder_attention_heads`,
    `encoder_ffn_dim`, `decoder_ffn_dim`, `activation_function`, `dropout`, `attention_dropout`,
    `activation_dropout`, `max_position_embeddings`, `scale_embedding`, `share_encoder_decoder_embeddings`,
    `tie_word_embeddings`, `label_smoothing`, `output_bias` (a bias on the output projection, as
    converted OPUS-MT checkpoints carry), `weight_init` ("xavier": Vaswani/fairseq, Xavier-uniform projections and
    N(0, d^-1/2) embeddings; "normal": N(0, `init_std`) for every projection and embedding, as transformers' Marian).

    Positions: `absolute_positions` (sinusoidal, added to the embeddings). Relative attention terms, each with the
    fields its record in `attention.RELATIVE_TERMS` declares: relative positions (Shaw et al. 2018):
    `relative_position_clip` k (0 = off), `relative_position_keys` (a^K), `relative_position_values` (a^V),
    `relative_position_in_decoder`; dependency relative depth (Omote et al. 2019), encoder self-attention only:
    `dependency_depth_clip` l (0 = off), `dependency_depth_keys` (b^K), `dependency_depth_values` (b^V).

    DBSA (Deguchi et al. 2019): `parse_layer_encoder` / `parse_layer_decoder` (1-based layer with a biaffine parse
    head; 0 = off), `parse_loss_weight_encoder` / `parse_loss_weight_decoder` (lambda), `subword_head_rule`
    ("first" / "last": which subword of the head word a word's final subword points to). Where our reading of the
    paper and the authors' code differ, an option picks one (see `DbsaConfig`): `parse_head` ("replace": the
    parse head takes the place of the layer's last head; "add": it is an extra head), `parse_score_form`
    ("unscaled" / "scaled"), `decoder_parse_loss_normalizer` ("supervised" / "all_pairs"),
    `parse_loss_warmup_steps` (lambda ramps up linearly from 0 over that many optimizer steps; 0 = off).

    Self-parsing (ours, `self_parse.py`): `self_parse_layers` (0 = off) encoder layers at the bottom with a biaffine
    scorer on top, whose well-formed tree gives the `dep_depths` the dependency-depth term reads, so no parser runs
    at inference; `self_parse_loss_weight` (its parse loss on `dep_heads`), `self_parse_sampling` (share of
    training sentences whose depths come from the model's own tree instead of the given ones), `self_parse_at_inference`
    (False: inference reads given `dep_depths`, e.g. to compare the own tree with the training parser's).

    Graph-Transformer (Duan et al.): `encoder_layer_type` ("standard" / "graph"), `graph_fusion`
    ("sum" / "gate" / "self_gate"), `graph_half_dim`, `graph_shared_qkv`, `graph_middle_stream` (the P the two
    middle parts pair with the incremental representation I: "previous" = F_{l-2}, "full" = F_{l-1}),
    `graph_first_layer` ("standard": layer 1 is a standard encoder layer and the split starts at layer 2;
    "graph": layer 1 is split too, with F_{-1} = 0), `graph_increment` (where I is taken: "output_difference" =
    F_{l-1} - F_{l-2}; "residual_branch" = what the previous layer's attention parts added before its LayerNorm),
    `graph_new_groups` (how the sum and gate fusions join the three attention parts: "sum", or "mean" = their sum
    divided by 3, so the new groups weigh as much as one part against the residual; unset, the fusion decides:
    "mean" for gate, "sum" for sum and self_gate).

    Syntax-infused embeddings (Sundararaman et al. 2019), encoder only: `source_features` (subset of
    "pos", "case", "subword_tag"), `feature_embedding_dim` f, `feature_combine` ("concat_sum": sum of the feature
    embeddings concatenated to a (d-f)-wide word embedding; "concat_each": one f-wide block per feature;
    "add": d-wide feature embeddings added), `num_pos_tags`, `num_case_tags`, `num_subword_tags`.

    Featurizing at inference: `source_parser` / `target_parser` (parser spec strings such as
    "spacy:ja_ginza"), `feature_labels` (label vocabularies the features were built with), `source_pretokenized`
    (the training corpus was split into space-separated words, so pipelines parse input as given by default),
    `source_segmenter` (a segmenter spec such as "sudachi:C", `hf_syntax.segmenters`: what splits raw text into
    words for such a model instead of the parser's tokenizer).
    """

    model_type = "syntax_transformer"
    keys_to_ignore_at_inference = ["cache", "past_key_values"]
    """Output keys Trainer's evaluation leaves out of the logits: the decoder cache, named `cache` from transformers
    5.24 on and `past_key_values` before."""
    attribute_map = {
        "num_attention_heads": "encoder_attention_heads",
        "hidden_size": "d_model",
        "num_hidden_layers": "decoder_layers",
    }

    vocab_size: int = 8000
    decoder_vocab_size: int | None = None
    d_model: int = 512
    encoder_layers: int = 6
    decoder_layers: int = 6
    encoder_attention_heads: int = 8
    decoder_attention_heads: int = 8
    encoder_ffn_dim: int = 2048
    decoder_ffn_dim: int = 2048
    activation_function: str = "relu"
    dropout: float | int = 0.1
    attention_dropout: float | int = 0.0
    activation_dropout: float | int = 0.0
    max_position_embeddings: int = 1024
    scale_embedding: bool = True
    share_encoder_decoder_embeddings: bool = True
    tie_word_embeddings: bool = True
    label_smoothing: float | int = 0.1
    output_bias: bool = False
    weight_init: str = "xavier"
    init_std: float = 0.02
    use_cache: bool = True
    is_encoder_decoder: bool = True
    pad_token_id: int | None = 0
    bos_token_id: int | None = 1
    eos_token_id: int | list[int] | None = 2
    decoder_start_token_id: int | None = 1

    absolute_positions: bool = True
    # The relative terms' fields come from their records, so a new term needs no edit here. A class body's namespace
    # is a real dict (locals() is it), and transformers turns the class into a dataclass as soon as the body ends.
    __annotations__.update({name: type(default) for name, default in RELATIVE_TERM_FIELDS.items()})
    locals().update(RELATIVE_TERM_FIELDS)

    parse_layer_encoder: int = 0
    parse_layer_decoder: int = 0
    parse_loss_weight_encoder: float | int = 1.0
    parse_loss_weight_decoder: float | int = 1.0
    subword_head_rule: str = "first"
    parse_head: str = "replace"
    parse_score_form: str = "unscaled"
    decoder_parse_loss_normalizer: str = "supervised"
    parse_loss_warmup_steps: int = 0

    self_parse_layers: int = 0
    self_parse_loss_weight: float | int = 0.5
    self_parse_sampling: float | int = 0.0
    self_parse_at_inference: bool = True

    encoder_layer_type: str = "standard"
    graph_fusion: str = "sum"
    graph_half_dim: bool = False
    graph_shared_qkv: bool = False
    graph_middle_stream: str = "previous"
    graph_first_layer: str = "standard"
    graph_increment: str = "output_difference"
    graph_new_groups: str | None = None

    source_features: list[str] | tuple[str, ...] = ()
    feature_embedding_dim: int = 20
    feature_combine: str = "concat_sum"
    num_pos_tags: int = 20
    num_case_tags: int = 7
    num_subword_tags: int = 7

    source_parser: str | None = None
    target_parser: str | None = None
    feature_labels: dict | None = None
    source_pretokenized: bool = False
    source_segmenter: str | None = None

    def __post_init__(self, **kwargs):
        kwargs = self._set_aliases(kwargs)
        reject_unknown_keys(type(self), kwargs)
        self.decoder_vocab_size = self.decoder_vocab_size or self.vocab_size
        self.source_features = list(self.source_features)
        if self.graph_new_groups is None:
            self.graph_new_groups = GRAPH_NEW_GROUPS_BY_FUSION.get(self.graph_fusion, "sum")
        super().__post_init__(**kwargs)
        eager_if_attentions_asked(self)

    def _set_aliases(self, kwargs: dict) -> dict:
        """The transformers-wide names (`attribute_map`: `hidden_size=` for `d_model`, ...) set their field, as in
        every transformers config; given beside a different value of that field, which one was meant is unclear."""
        for alias in set(kwargs) & set(self.attribute_map):
            field, value = self.attribute_map[alias], kwargs.pop(alias)
            default = self.__dataclass_fields__[field].default
            if getattr(self, field) not in (default, value):
                raise ValueError(f"{alias}={value!r} is another name for {field}, which is given as "
                                 f"{getattr(self, field)!r}: give one of the two.")
            setattr(self, field, value)
        return kwargs

    @classmethod
    def from_dict(cls, config_dict, **kwargs):
        """A config.json saved before `graph_new_groups` existed was trained with the parts summed: a model with graph
        layers keeps them summed instead of taking today's fusion-dependent default (without graph layers the option
        does nothing and keeps its default)."""
        layer_type = config_dict.get("encoder_layer_type", getattr(cls, "encoder_layer_type", "standard"))
        if "transformers_version" in config_dict and "graph_new_groups" not in config_dict and layer_type == "graph":
            config_dict = {**config_dict, "graph_new_groups": "sum"}
        return_unused_kwargs = kwargs.pop("return_unused_kwargs", False)
        config, unused = super().from_dict(config_dict, return_unused_kwargs=True, **kwargs)
        if return_unused_kwargs:  # the caller (AutoModel's from_pretrained) hands them on and checks them
            return config, unused
        # from_pretrained(path, dropuot=0.3) dropped the misspelt option silently. Loading options meant for the model
        # (pipeline's model_kwargs: device_map, low_cpu_mem_usage) reach here too and are let through, as
        # transformers does: only a near-spelling of an option is refused.
        fields_by_name = sorted(known_keys(cls))
        misspelt = {key: close[0] for key in unused
                    if (close := difflib.get_close_matches(key, fields_by_name, n=1, cutoff=0.8))}
        if misspelt:
            raise ValueError(f"{cls.__name__}.from_pretrained/from_dict got unknown option(s) {sorted(misspelt)}: "
                             + "; ".join(f"did you mean {field!r} for {key!r}?" for key, field in misspelt.items()))
        return config

    def validate_syntax_options(self):
        """Called by `@strict` on construction: every option value is checked against what the model supports."""
        choices = {
            "activation_function": ACTIVATIONS,
            "weight_init": WEIGHT_INITS,
            "encoder_layer_type": ENCODER_LAYER_TYPES,
            "graph_fusion": GRAPH_FUSIONS,
            "graph_middle_stream": GRAPH_MIDDLE_STREAMS,
            "graph_first_layer": GRAPH_FIRST_LAYERS,
            "graph_increment": GRAPH_INCREMENTS,
            "graph_new_groups": GRAPH_NEW_GROUPS,
            "feature_combine": FEATURE_COMBINES,
            "subword_head_rule": SUBWORD_HEAD_RULES,
            "parse_head": PARSE_HEAD_MODES,
            "parse_score_form": PARSE_SCORE_FORMS,
            "decoder_parse_loss_normalizer": DECODER_PARSE_LOSS_NORMALIZERS,
        }
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name}={getattr(self, name)!r} is not supported; choose one of {allowed}.")
        unknown_features = [f for f in self.source_features if f not in EMBEDDED_FEATURES]
        if unknown_features:
            raise ValueError(f"source_features {unknown_features} unknown; choose from {tuple(EMBEDDED_FEATURES)}.")
        if len(set(self.source_features)) != len(self.source_features):  # was a bare error deep in the embedding
            raise ValueError(f"source_features={self.source_features} names a feature twice; name each once.")
        for column in (EMBEDDED_FEATURES[feature] for feature in self.source_features):  # an empty table failed
            if getattr(self, column.size_field) < 1:
                raise ValueError(f"{column.size_field} must be >= 1 (rows of the {column.feature} embedding table), "
                                 f"got {getattr(self, column.size_field)}.")
        if self.init_std < 0:  # weight_init="normal" failed inside torch's normal_
            raise ValueError(f"init_std={self.init_std} is a standard deviation: it must be >= 0.")
        for name in ("vocab_size", "decoder_vocab_size", "d_model", "encoder_layers", "decoder_layers",
                     "encoder_attention_heads", "decoder_attention_heads", "encoder_ffn_dim", "decoder_ffn_dim",
                     "max_position_embeddings"):
            if getattr(self, name) < 1:  # 0 layers or heads would build an encoder that passes its input through
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}.")
        self._validate_special_token_ids()
        for name in ("dropout", "attention_dropout", "activation_dropout", "label_smoothing"):
            if not 0 <= getattr(self, name) < 1:  # else the first training step fails deep in torch, or learns nothing
                raise ValueError(f"{name}={getattr(self, name)} is a probability: 0 <= {name} < 1 (0 switches it off).")
        for name in ("parse_loss_weight_encoder", "parse_loss_weight_decoder", "self_parse_loss_weight"):
            if getattr(self, name) < 0:  # a negative weight would train the model to parse badly
                raise ValueError(f"{name} must be >= 0 (0 trains no parse), got {getattr(self, name)}.")
        for side, heads, layers in (
            ("encoder", self.encoder_attention_heads, self.encoder_layers),
            ("decoder", self.decoder_attention_heads, self.decoder_layers),
        ):
            if self.d_model % heads:
                raise ValueError(f"d_model={self.d_model} is not divisible by {side}_attention_heads={heads}.")
            parse_layer = DBSA_PARSE_HEAD.layer(self, side)
            if not 0 <= parse_layer <= layers:
                raise ValueError(f"{DBSA_PARSE_HEAD.layer_fields[side]}={parse_layer} must be between 1 and "
                                 f"{side}_layers={layers} (0 disables it).")
        for name in (*(kind.clip_field for kind in RELATIVE_TERMS.values()), "parse_loss_warmup_steps"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0 (0 switches it off), got {getattr(self, name)}.")
        for kind in RELATIVE_TERMS.values():
            sides = [name for name in (kind.keys_field, kind.values_field) if name]
            if getattr(self, kind.clip_field) > 0 and sides and not any(getattr(self, name) for name in sides):
                raise ValueError(  # the term then had no table and did nothing, yet its column was still required
                    f"{kind.clip_field}={getattr(self, kind.clip_field)} switches the term on but "
                    f"{', '.join(f'{name}=False' for name in sides)} leave(s) it nothing to add: switch one of them "
                    f"on, or set {kind.clip_field}=0."
                )
        self._validate_self_parsing()
        self._validate_switched_options()
        if self.source_segmenter is not None:
            segmenter_requirements(self.source_segmenter)  # a spec it cannot load is an error now, not at inference
        if self.share_encoder_decoder_embeddings and self.decoder_vocab_size != self.vocab_size:
            raise ValueError(  # the shared table has vocab_size rows: labels beyond it were a bare IndexError
                f"share_encoder_decoder_embeddings=True gives both sides one table of vocab_size={self.vocab_size} "
                f"rows, but decoder_vocab_size={self.decoder_vocab_size}: drop decoder_vocab_size, or set "
                f"share_encoder_decoder_embeddings=False (and tie_word_embeddings as wanted) for separate tables."
            )
        if self.share_encoder_decoder_embeddings and not self.tie_word_embeddings:
            raise ValueError(
                "share_encoder_decoder_embeddings=True ties source, target and output embeddings, so it needs "
                "tie_word_embeddings=True; set share_encoder_decoder_embeddings=False for separate tables."
            )
        if self.source_features and self.feature_combine != "add":
            if not 0 < self.feature_embedding_dim * self._feature_blocks() < self.d_model:
                raise ValueError(
                    f"feature_embedding_dim={self.feature_embedding_dim} leaves no room for the word embedding "
                    f"in d_model={self.d_model}."
                )
            if self.share_encoder_decoder_embeddings:
                raise ValueError(
                    f"feature_combine={self.feature_combine!r} narrows the source word embedding, so it cannot be "
                    "shared with the target one: set share_encoder_decoder_embeddings=False (or feature_combine='add')."
                )

    def _validate_special_token_ids(self):
        """A special token id outside the vocabulary failed late and obscurely (a padding id as an assertion inside
        torch, a start id as an IndexError in generate) or not at all (an end id the model can never produce, so
        every translation runs to its length limit). Padding and end ids are in source and target, so both
        vocabularies count for them; the start ids only index the target."""
        both = min(self.vocab_size, self.decoder_vocab_size)
        for name, size, tokenizer_field in (("pad_token_id", both, "pad_token_id"),
                                            ("eos_token_id", both, "eos_token_id"),
                                            ("bos_token_id", self.decoder_vocab_size, "bos_token_id"),
                                            ("decoder_start_token_id", self.decoder_vocab_size,
                                             "bos_token_id, or its pad_token_id without a bos token")):
            value = getattr(self, name)
            if value == []:
                raise ValueError(f"{name}=[] names no end token, so generation could never stop; give the "
                                 f"tokenizer's {tokenizer_field} (or None).")
            outside = [token_id for token_id in (value if isinstance(value, list) else [value])
                       if token_id is not None and not 0 <= token_id < size]
            if outside:
                raise ValueError(f"{name}={value!r} has {outside} outside the vocabulary: ids run from 0 to {size - 1} "
                                 f"(vocab_size={self.vocab_size}, decoder_vocab_size={self.decoder_vocab_size}); give "
                                 f"the id the tokenizer has for that token (its {tokenizer_field}).")

    def _validate_self_parsing(self):
        if self.self_parse_layers < 0:
            raise ValueError(f"self_parse_layers={self.self_parse_layers} must be >= 0 (0 switches it off).")
        if not 0 <= self.self_parse_sampling <= 1:
            raise ValueError(f"self_parse_sampling={self.self_parse_sampling} is a share of sentences: 0 to 1.")
        if self.self_parse_layers and not self.dependency_depth_clip:
            raise ValueError("self_parse_layers > 0 parses to give the dependency-depth term its depths, but "
                             "dependency_depth_clip=0 switches that term off; set dependency_depth_clip > 0.")

    def _validate_switched_options(self):
        """Refuse options changed for a mechanism this config switches off (:data:`SWITCHED_OPTIONS`): compared with
        the defaults of this config class, so a preset's own settings pass with its mechanism off (a `DbsaConfig`
        with both parse layers at 0 keeps its lambda of 0.5)."""
        defaults = {option.name: option.default for option in fields(type(self))}
        defaults["graph_new_groups"] = GRAPH_NEW_GROUPS_BY_FUSION.get(self.graph_fusion, "sum")
        for group in SWITCHED_OPTIONS:
            changed = [name for name in group.options if getattr(self, name) != defaults[name]]
            if changed and not group.is_on(self):
                state = ", ".join(f"{name}={getattr(self, name)!r}" for name in group.switches)
                raise ValueError(f"{changed} set {group.mechanism}, but this config switches it off ({state}), so "
                                 f"they would do nothing; {group.how_to_switch_on}, or drop them.")

    def _feature_blocks(self) -> int:
        return len(self.source_features) if self.feature_combine == "concat_each" else 1

    @property
    def source_word_embedding_dim(self) -> int:
        """Width of the source word embedding: d minus the concatenated feature blocks (Sundararaman et al.)."""
        if not self.source_features or self.feature_combine == "add":
            return self.d_model
        return self.d_model - self.feature_embedding_dim * self._feature_blocks()

    def term_columns(self, side: str) -> tuple[str, ...]:
        """The columns the relative terms of `side` read (at training and at inference)."""
        return tuple(kind.column for kind in enabled_terms(self, side).values() if kind.column is not None)

    @property
    def needs_source_features(self) -> tuple[str, ...]:
        """Feature columns `forward` cannot run without at inference (used for clear errors and by the pipelines):
        those of the encoder's relative terms and embedded features, less the `dep_depths` a self-parsing model
        makes itself."""
        embedded = (EMBEDDED_FEATURES[feature].name for feature in self.source_features)
        needed = (*self.term_columns("encoder"), *embedded)
        if self.self_parse_layers and self.self_parse_at_inference:
            return tuple(column for column in needed if column != "dep_depths")
        return needed

    @property
    def training_columns(self) -> tuple[str, ...]:
        """Columns training needs besides those of inference: the gold heads of each DBSA parse head, and for a
        self-parsing model the `dep_heads` its parser learns and the given `dep_depths` it is teacher-forced with."""
        needed = list(DBSA_PARSE_HEAD.training_columns(self))
        if self.self_parse_layers:
            inference = self.needs_source_features
            needed += [column for column in ("dep_heads", "dep_depths") if column not in (*needed, *inference)]
        return tuple(needed)

    @property
    def segmenter_spec(self) -> str | None:
        """What splits raw text into the training words at inference: `source_segmenter`, else the parser's
        tokenizer, except for a self-parsing model, which is meant to run where no parser is installed."""
        if self.source_segmenter or (self.self_parse_layers and self.self_parse_at_inference):
            return self.source_segmenter
        return self.source_parser


__all__ = ["SyntaxTransformerConfig", "known_keys", "reject_unknown_keys"]
