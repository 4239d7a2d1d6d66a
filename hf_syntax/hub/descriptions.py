"""What a model is, in words for its model card and demo: which card variant describes it, its readable name, the
settings a reader needs, and the parser it needs at inference. Everything here is read from the config and the
core's records of its mechanisms (``attention.RELATIVE_TERMS``, ``parse_head.DBSA_PARSE_HEAD``); what a card says
about a relative term (its paragraph, its part of the name) is its entry in ``TERM_CARDS``. ``cards.py`` renders the
card.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hf_syntax.attention import RELATIVE_TERMS, RelativeTermKind, enabled_terms
from hf_syntax.configuration_syntax_transformer import GRAPH_OPTIONS
from hf_syntax.parse_head import DBSA_PARSE_HEAD
from hf_syntax.segmenters import segmenter_requirements

VARIANTS = ("baseline", "dbsa", "dep_rpe", "graph_transformer", "syntax_infused", "bert_pos", "dbsa_dep_rel",
            "dbsa_dep_rel_self")
"""The card templates (``model_cards/<variant>.md``), one per mechanism family and per mix in ``COMBINED_VARIANTS``."""
COMBINED_VARIANTS = {("dbsa", "dep_rpe"): "dbsa_dep_rel", ("dbsa", "dep_rpe", "self_parse"): "dbsa_dep_rel_self"}
"""Mixes of mechanisms that have a card of their own (mechanisms in `mechanisms_of` order)."""


class CardError(ValueError):
    """A card template or card context is incomplete or wrong; the message says what to add or fix."""


@dataclass(frozen=True)
class TermCard:
    """What a card says about one relative attention term: `title`, its part of the model's name (Omote et al.'s
    `Transformer_dep+rel`); `text`, its paragraph; `settings`, the config fields the card lists; `card`, the template
    that describes models using it."""

    title: str
    text: str = ""
    settings: tuple[str, ...] = ()
    card: str = "dep_rpe"


TERM_CARDS = {
    "relative_positions": TermCard(
        "rel", settings=("relative_position_clip",),
        text="Relative positions (Shaw et al., 2018): a learned embedding of the clipped distance `clip(j - i, k)` "
             "between two tokens is added to the keys and values of every attention score, in the encoder "
             "self-attention and (`relative_position_in_decoder`) the decoder's.",
    ),
    "dependency_depths": TermCard(
        "dep", settings=("dependency_depth_clip", "dependency_depth_keys", "dependency_depth_values"),
        text="Dependency relative depth (Omote et al., 2019): the encoder self-attention adds a learned embedding of "
             "the *relative depth* of the two words in the source dependency tree, `clip(depth(j) - depth(i), l)`, to "
             "the keys and values of every attention score. Every subword takes the depth of its word; pairs with a "
             "special token use a separate \"no relation\" bucket.",
    ),
}
"""Term name (as in ``attention.RELATIVE_TERMS``) -> what its model card says."""


def term_card(name: str, kind: RelativeTermKind) -> TermCard:
    """The card entry of relative term `name`; a term without one is named by its name, lists its config fields and
    has no paragraph of its own, under the relative-attention card."""
    return TERM_CARDS.get(name) or TermCard(name, settings=tuple(kind.config_fields()))


LANGUAGE_NAMES = {"en": "English", "ja": "Japanese", "de": "German", "fr": "French"}
"""Names shown in a model's title; another language code is shown as it is."""


def variant_of(config) -> str:
    """Which card template describes a model: read from the mechanisms its config switches on."""
    if getattr(config, "pos_parser", None) is not None:
        return "bert_pos"
    mechanisms = mechanisms_of(config)
    if tuple(mechanisms) in COMBINED_VARIANTS:
        return COMBINED_VARIANTS[tuple(mechanisms)]
    if len(mechanisms) > 1:
        raise CardError(
            f"the model combines {mechanisms}; no single card template describes it. Pick the nearest of "
            f"{list(VARIANTS)} (hf-syntax export --card-template NAME; from Python card_context {{'variant': NAME}}) "
            f"and edit the rendered README.md."
        )
    return mechanisms[0] if mechanisms else "baseline"


def mechanisms_of(config) -> list[str]:
    """The card variants whose mechanism a seq2seq config switches on (several for a custom mix)."""
    mechanisms = []
    if DBSA_PARSE_HEAD.sides(config):
        mechanisms.append("dbsa")
    for card in term_cards_of(config):
        if card.card not in mechanisms:
            mechanisms.append(card.card)
    if config.encoder_layer_type == "graph":
        mechanisms.append("graph_transformer")
    if config.source_features:
        mechanisms.append("syntax_infused")
    if getattr(config, "self_parse_layers", 0):
        mechanisms.append("self_parse")
    return mechanisms


def relative_terms_of(config) -> dict:
    """The relative attention terms a seq2seq config switches on, on either side, by name (their records)."""
    return {**enabled_terms(config, "encoder"), **enabled_terms(config, "decoder")}


def term_settings(variant: str) -> tuple[str, ...]:
    """The settings card `variant` lists for the relative terms it describes."""
    cards = (term_card(name, kind) for name, kind in RELATIVE_TERMS.items())
    return tuple(setting for card in cards if card.card == variant for setting in card.settings)


def term_cards_of(config) -> list[TermCard]:
    """The card entries of the relative terms a seq2seq config switches on."""
    return [term_card(name, kind) for name, kind in relative_terms_of(config).items()]


def attention_terms_text(config) -> str:
    """The card paragraphs of the relative attention terms a model uses (empty for a model without them)."""
    if getattr(config, "pos_parser", None) is not None:
        return ""
    return "\n\n".join(card.text for card in term_cards_of(config) if card.text)


def model_title(config, source_language: str | None = None, target_language: str | None = None) -> str:
    """A readable name of the model for people (the card's ``model_name``, the Space demo's title), in the papers'
    names of what its config switches on: "Transformer_dep+rel, Japanese→English", "Transformer + DBSA(Enc)".
    Without a ``source_language`` the parser's language stands for it (``spacy:ja_ginza`` -> Japanese)."""
    if getattr(config, "pos_parser", None) is not None:
        name = "BERT+POS"
    else:
        parts = []
        for mechanism in mechanisms_of(config):
            titles = sorted(card.title for card in term_cards_of(config) if card.card == mechanism)
            if titles:  # Omote et al.'s names: Transformer_dep, Transformer_rel, Transformer_dep+rel
                parts.append("Transformer_" + "+".join(titles))
            elif mechanism == "dbsa":
                parts.append(" + ".join(f"DBSA({side[:3].title()})" for side in DBSA_PARSE_HEAD.sides(config)))
            else:
                parts.append({"graph_transformer": "Graph-Transformer", "syntax_infused": "Syntax-infused Transformer",
                              "self_parse": "self-parsing"}.get(mechanism, mechanism))
        if not parts or parts[0].startswith("DBSA"):
            parts.insert(0, "Transformer")
        name = " + ".join(parts)
    source_language = source_language or language_of_parser(
        getattr(config, "pos_parser", None) or getattr(config, "source_parser", None))
    source, target = (LANGUAGE_NAMES.get(code, code) if code else None for code in (source_language, target_language))
    if getattr(config, "pos_parser", None) is not None:  # a classifier reads one language
        return f"{name}, {source}" if source else name
    if source and target:
        return f"{name}, {source}→{target}"
    if source or target:
        return f"{name}, {'from ' + source if source else 'into ' + target}"
    return name


def parser_install_hint(spec: str) -> str:
    """The pip command that provides a parser spec's package."""
    backend, _, name = spec.partition(":")
    if backend == "spacy":
        if name.startswith("ja_ginza"):
            return f"pip install ginza {name.replace('_', '-')}"
        return f"pip install spacy {name.replace('_', '-')}  # or: python -m spacy download {name}"
    if backend == "stanza":
        return f"pip install stanza  # then: python -c \"import stanza; stanza.download('{name}')\""
    return f"(parser backend {backend!r}: see hf_syntax.parsers)"


def parser_requirements(spec: str) -> list[str]:
    """The pip requirements that provide a parser spec (for an exported folder's ``requirements.txt``)."""
    backend, _, name = spec.partition(":")
    if backend == "spacy":
        if name.startswith("ja_ginza"):
            return ["ginza", name.replace("_", "-")]
        is_package = name.isidentifier()  # a path to a pipeline folder is not pip-installable
        return ["spacy", name.replace("_", "-")] if is_package else ["spacy"]
    if backend == "stanza":
        return ["stanza"]
    return []


def language_of_parser(spec: str | None) -> str | None:
    """The language a parser spec names (``spacy:ja_ginza`` -> ``ja``, ``stanza:fr`` -> ``fr``), if it names one:
    an export without ``source_language`` then still gets widget examples in the model's own language."""
    if not spec:
        return None
    backend, _, name = spec.partition(":")
    if backend == "stanza":
        return name or None
    if backend == "spacy":
        prefix = Path(name).name.split("_")[0]
        return prefix if len(prefix) == 2 and prefix.isalpha() else None
    return None


RAW_SENTENCE = "no whitespace, or in Japanese spaces only around words of another script: 私はNew Yorkに行った。"
"""What the pipeline reads as a raw sentence to segment, for a model trained on pre-split words
(``source_reading.is_split_into_words``)."""


def _segmentation_note(config) -> str:
    if getattr(config, "source_pretokenized", False):
        return ("The training corpus was split into words (separated by spaces), so the pipeline parses its input "
                "as given: split text the same way, or pass `pretokenized=False` to let the parser segment raw text. "
                f"A raw sentence ({RAW_SENTENCE}, typed into the widget or sent to an endpoint) is segmented by the "
                "parser, and the log says so once.")
    return ("Input that is already split into words (separated by spaces) is parsed as given with "
            "`pipeline(..., pretokenized=True)`.")


def parser_section(config) -> str:
    """Which parser the model needs at inference and how to install it, from the config."""
    if getattr(config, "pos_parser", None) is not None:
        needed, spec = ("pos_ids",), config.pos_parser
    else:
        needed, spec = tuple(config.needs_source_features), config.source_parser
    if needed and not spec:
        raise CardError(
            f"this {config.model_type} model needs `{', '.join(needed)}` at inference, computed by a parser, but its "
            f"config names none: set model.config.source_parser to the parser it was trained with (e.g. "
            f"'spacy:ja_ginza', 'spacy:en_core_web_sm') and save it again. The training recipe sets it for you."
        )
    if needed:
        return (
            f"This model needs `{', '.join(needed)}` for every input, computed from a parse of the input by "
            f"`{spec}`. The pipeline runs the parser itself; install it first:\n\n```bash\n"
            f"{parser_install_hint(spec)}\n```\n\n{_segmentation_note(config)}"
        )
    segmenter = getattr(config, "segmenter_spec", spec)
    if getattr(config, "source_pretokenized", False) and segmenter and segmenter != spec:
        return (
            f"No parser runs at inference: the model reads plain tokens (it parses for itself). It was trained on "
            f"text split into words (separated by spaces); text split that way is read as given, and a raw sentence "
            f"({RAW_SENTENCE}, typed into the widget or sent to an endpoint) is split into words by the segmenter "
            f"`{segmenter}` first (a segmenter, not a parser), so install it:\n\n```bash\n"
            f"pip install {' '.join(segmenter_requirements(segmenter))}\n```"
        )
    if getattr(config, "source_pretokenized", False) and spec and segmenter == spec:
        return (
            f"The model reads no tree at inference, but it was trained on words split by `{spec}` (separated by "
            f"spaces). Text already split that way is read as given; a raw sentence ({RAW_SENTENCE}, typed into the "
            f"widget or sent to an endpoint) is split into words by `{spec}` first, so install it:\n\n```bash\n"
            f"{parser_install_hint(spec)}\n```"
        )
    trained_with = [value for value in (getattr(config, "source_parser", None), getattr(config, "target_parser", None))
                    if value]
    during_training = f" (training used `{'`, `'.join(trained_with)}`)" if trained_with else ""
    return f"No parser is needed at inference: the model reads plain tokens{during_training}."


MODEL_SETTINGS = {
    "baseline": (),
    "dbsa": (*DBSA_PARSE_HEAD.layer_fields.values(), *DBSA_PARSE_HEAD.loss_weight_fields.values(),
             "subword_head_rule", "parse_head", "parse_score_form", "decoder_parse_loss_normalizer",
             "parse_loss_warmup_steps"),
    "dep_rpe": ("absolute_positions",),
    "graph_transformer": GRAPH_OPTIONS,
    "syntax_infused": ("source_features", "feature_embedding_dim", "feature_combine"),
    "self_parse": ("self_parse_layers", "self_parse_loss_weight", "self_parse_sampling", "self_parse_at_inference",
                   "source_segmenter"),
    "bert_pos": ("pos_combine", "pos_gate", "pos_parser", "hidden_size", "num_hidden_layers", "num_attention_heads"),
}
"""Each card variant's own settings; a variant that describes relative attention terms lists their ``settings``
(from ``TERM_CARDS``) before these."""
SEQ2SEQ_SIZES = ("vocab_size", "d_model", "encoder_layers", "decoder_layers", "encoder_attention_heads",
                 "encoder_ffn_dim", "label_smoothing")


def model_settings(config, variant: str) -> dict:
    """The architecture settings a reader of the card needs: sizes, then the variant's own switches."""
    if variant == "bert_pos":
        names = MODEL_SETTINGS[variant]
    else:  # a combined variant lists the settings of each mechanism it mixes
        parts = next((mix for mix, name in COMBINED_VARIANTS.items() if name == variant), (variant,))
        names = SEQ2SEQ_SIZES + tuple(name for part in parts for name in (*term_settings(part), *MODEL_SETTINGS[part]))
    return {name: getattr(config, name) for name in names if hasattr(config, name)}


__all__ = ["COMBINED_VARIANTS", "CardError", "LANGUAGE_NAMES", "MODEL_SETTINGS", "TERM_CARDS", "TermCard", "VARIANTS",
           "attention_terms_text", "language_of_parser", "mechanisms_of", "model_settings", "model_title",
           "parser_install_hint", "parser_requirements", "parser_section", "relative_terms_of", "term_card",
           "term_cards_of", "term_settings", "variant_of"]
