"""Model cards for exported models: one template per variant in ``model_cards/``, rendered with huggingface_hub.

A template is Markdown with a YAML header placeholder (``{{ card_data }}``) and the placeholders of
``TEMPLATE_FIELDS``; the prose that never changes (what the variant does, limitations, citation) is written in the
template, what comes from the run (languages, parser, settings, scores) is filled in here. Rendering is strict: a
template that lacks a field or a section, or uses a name we do not fill, is an error naming the template.

Templates ship inside the package as ``hf_syntax/hub/model_card_templates`` (a link to the repository's
``model_cards/`` folder, picked up by package-data), so an installed hf_syntax finds them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from pathlib import Path

from huggingface_hub import EvalResult, ModelCard, ModelCardData
from huggingface_hub.errors import HFValidationError
from huggingface_hub.utils import validate_repo_id

from hf_syntax.attention import enabled_terms

TEMPLATE_DIR = Path(__file__).resolve().parent / "model_card_templates"
VARIANTS = ("baseline", "dbsa", "dep_rpe", "graph_transformer", "syntax_infused", "bert_pos")
TERM_CARDS = {"relative_positions": "dep_rpe", "dependency_depths": "dep_rpe"}
"""The card variant that describes each relative attention term (``attention.RELATIVE_TERMS``). A term without one
counts as a mechanism of its own name, for which ``load_template`` finds no template and says so: a card never
presents such a model as another variant."""
TEMPLATE_FIELDS = (
    "card_data", "model_id", "untrained_warning", "parser_section", "example", "training_data",
    "training_settings", "results_table", "license",
)
TEMPLATE_SECTIONS = ("## What this variant changes", "## Parser at inference", "## Limitations", "## Citation")

UNTRAINED_WARNING = (
    "> **Warning: untrained weights.** No training results were given when this folder was exported, so the "
    "weights are most likely randomly initialised and the outputs are meaningless. Use it to test loading only."
)
EXAMPLE_SENTENCES = {
    "en": ("The cat is sleeping on the sofa.", "She bought two books yesterday."),
    "ja": ("彼 は 毎朝 コーヒー を 飲 む 。", "私 は 昨日 本 を 二 冊 買 っ た 。"),
    "de": ("Die Katze schläft auf dem Sofa.", "Sie hat gestern zwei Bücher gekauft."),
    "fr": ("Le chat dort sur le canapé.", "Elle a acheté deux livres hier."),
}
"""Widget examples per source language. The Japanese ones are KyTea-style segmented like small_parallel_enja; pass
``widget`` in the card context for a model trained on other text."""
EXAMPLE_PAIRS = {
    "en": (("A man is playing a guitar on the stage.", "Someone is making music."),
           ("The cat is sleeping on the sofa.", "The sofa is empty.")),
}
"""Widget examples of a sentence-pair classifier (``CardContext.text_pairs``), per language."""
LANGUAGE_NAMES = {"en": "English", "ja": "Japanese", "de": "German", "fr": "French"}
"""Names shown in a model's title; another language code is shown as it is."""


PLACEHOLDER_MODEL_ID = "<your-name>/<model-name>"
"""The model id a card shows until it is told the Hub repo the folder will be uploaded to (``--model-id``): plainly
a placeholder, never a name that looks like a real repo and does not resolve."""


class CardError(ValueError):
    """A card template or card context is incomplete or wrong; the message says what to add or fix."""


@dataclass
class CardContext:
    """What a card says about a run that the model folder itself does not know.

    ``results``: a list of ``{"metric": "bleu", "value": 31.2, "split": "validation"}`` (the run's scores); empty
    means untrained and the card says so. A result may also say how many examples it was measured on and how many
    the split has (``"examples": 40, "split_size": 277``): a score on part of a split is shown in the card's text
    with its count and left out of the ``model-index`` metadata, which would present it as the split's score.
    ``dataset``: a Hub dataset id (with ``dataset_config``, e.g. ``nyu-mll/glue`` + ``rte``) goes into the card's
    ``datasets`` and ``model-index`` metadata; anything else (a local path, a description) only into its text.
    ``training_settings``: name -> value shown as a list. ``widget``: example inputs in the source language
    (default: ``EXAMPLE_SENTENCES``; ``EXAMPLE_PAIRS`` with ``text_pairs``, for a sentence-pair classifier).
    ``variant``: the template to use when it cannot be read from the config (a custom mix of mechanisms).
    """

    model_id: str = PLACEHOLDER_MODEL_ID
    source_language: str | None = None
    target_language: str | None = None
    dataset: str | None = None
    dataset_config: str | None = None
    training_data: str | None = None
    task_name: str | None = None
    training_settings: dict = field(default_factory=dict)
    results: list = field(default_factory=list)
    license: str = "apache-2.0"
    base_model: str | None = None
    widget: list | None = None
    text_pairs: bool = False
    variant: str | None = None

    @classmethod
    def from_value(cls, value) -> "CardContext":
        """Accept a ``CardContext``, a dict of its fields (unknown keys rejected) or ``None``."""
        if value is None:
            return cls()
        if isinstance(value, cls):
            return value
        if not isinstance(value, dict):
            raise CardError(f"card_context must be a dict or CardContext; got {type(value).__name__}.")
        known = {item.name for item in fields(cls)}
        unknown = sorted(set(value) - known)
        if unknown:
            raise CardError(f"card_context has unknown keys {unknown}; the keys are {sorted(known)}.")
        context = cls(**value)
        for index, result in enumerate(context.results):
            if not isinstance(result, dict) or not {"metric", "value", "split"} <= set(result):
                raise CardError(
                    f"card_context results[{index}] = {result!r}; each result is a dict with 'metric', 'value' "
                    f"and 'split' (e.g. {{'metric': 'bleu', 'value': 31.2, 'split': 'validation'}})."
                )
            counts = [result.get(key) for key in ("examples", "split_size") if result.get(key) is not None]
            if not all(isinstance(count, int) and count >= 0 for count in counts):
                raise CardError(
                    f"card_context results[{index}] has examples/split_size {counts}; both are counts of examples "
                    f"(whole numbers), e.g. {{'examples': 40, 'split_size': 277}}."
                )
        return context


def is_hub_dataset_id(name: str | None) -> bool:
    """Whether ``name`` can be a Hub dataset id, ``owner/name`` (``nyu-mll/glue``); a bare name
    (``small_parallel_enja``) or a local path (one that exists here, or starts like one) is not, and never goes into
    a card's metadata: offline nothing can confirm a bare name exists on the Hub, and most do not."""
    if not name or name.count("/") != 1 or name.startswith(("/", ".", "~")) or Path(name).expanduser().exists():
        return False
    try:
        validate_repo_id(name)
    except HFValidationError:
        return False
    return True


def is_subsample(result: dict) -> bool:
    """A score measured on fewer examples than its split has (a recipe's ``max_eval_samples`` / ``max_eval_pairs``)."""
    examples, split_size = result.get("examples"), result.get("split_size")
    return examples is not None and split_size is not None and examples < split_size


def variant_of(config) -> str:
    """Which card template describes a model: read from the mechanisms its config switches on."""
    if getattr(config, "pos_parser", None) is not None:
        return "bert_pos"
    mechanisms = mechanisms_of(config)
    if len(mechanisms) > 1:
        raise CardError(
            f"the model combines {mechanisms}; no single card template describes it. Pass card_context "
            f"{{'variant': <one of {list(VARIANTS)}>}} and edit the rendered README.md."
        )
    return mechanisms[0] if mechanisms else "baseline"


def mechanisms_of(config) -> list[str]:
    """The card variants whose mechanism a seq2seq config switches on (several for a custom mix)."""
    mechanisms = []
    if config.parse_layer_encoder or config.parse_layer_decoder:
        mechanisms.append("dbsa")
    for term in {**enabled_terms(config, "encoder"), **enabled_terms(config, "decoder")}:
        if TERM_CARDS.get(term, term) not in mechanisms:
            mechanisms.append(TERM_CARDS.get(term, term))
    if config.encoder_layer_type == "graph":
        mechanisms.append("graph_transformer")
    if config.source_features:
        mechanisms.append("syntax_infused")
    return mechanisms


def model_title(config, source_language: str | None = None, target_language: str | None = None) -> str:
    """A readable name of the model for people (the card's ``model_name``, the Space demo's title), in the papers'
    names of what its config switches on: "Transformer_dep+rel, Japanese→English", "Transformer + DBSA(Enc)".
    Without a ``source_language`` the parser's language stands for it (``spacy:ja_ginza`` -> Japanese)."""
    if getattr(config, "pos_parser", None) is not None:
        name = "BERT+POS"
    else:
        parts = []
        for mechanism in mechanisms_of(config):
            if mechanism == "dep_rpe":
                terms = {**enabled_terms(config, "encoder"), **enabled_terms(config, "decoder")}
                parts.append("Transformer_" + "+".join(
                    short for term, short in (("dependency_depths", "dep"), ("relative_positions", "rel"))
                    if term in terms))
            elif mechanism == "dbsa":
                sides = [side for side, layer in (("Enc", config.parse_layer_encoder), ("Dec", config.parse_layer_decoder))
                         if layer]
                parts.append(" + ".join(f"DBSA({side})" for side in sides))
            else:
                parts.append({"graph_transformer": "Graph-Transformer",
                              "syntax_infused": "Syntax-infused Transformer"}.get(mechanism, mechanism))
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


def load_template(variant: str, template_dir: Path | None = None) -> str:
    """The template text of ``variant``, checked for every field and section a card must have."""
    if variant not in VARIANTS:
        raise CardError(f"no model card template for variant {variant!r}; the variants are {list(VARIANTS)}.")
    folder = Path(template_dir) if template_dir is not None else TEMPLATE_DIR
    path = folder / f"{variant}.md"
    if not path.is_file():
        raise CardError(
            f"model card template {path} is missing. An installed hf_syntax ships the templates as package data "
            f"(hf_syntax/hub/model_card_templates -> model_cards/); reinstall it, or pass template_dir=<a folder with "
            f"{variant}.md>."
        )
    text = path.read_text(encoding="utf-8")
    missing = [name for name in TEMPLATE_FIELDS if not re.search(r"\{\{\s*" + name + r"\s*\}\}", text)]
    if missing:
        raise CardError(f"model card template {path} lacks the field(s) {missing}; add {{{{ name }}}} for each.")
    missing_sections = [section for section in TEMPLATE_SECTIONS if section not in text]
    if missing_sections:
        raise CardError(f"model card template {path} lacks the section(s) {missing_sections}.")
    return text


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


def _segmentation_note(config) -> str:
    if getattr(config, "source_pretokenized", False):
        return ("The training corpus was split into words (separated by spaces), so the pipeline parses its input "
                "as given: split text the same way, or pass `pretokenized=False` to let the parser segment raw text. "
                "Input with no whitespace at all (an unsegmented sentence typed into the widget or sent to an "
                "endpoint) is segmented by the parser, and the log says so once.")
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
    if getattr(config, "source_pretokenized", False) and spec:
        return (
            f"The model reads no tree at inference, but it was trained on words split by `{spec}` (separated by "
            f"spaces). Text already split that way is read as given; a raw sentence with no whitespace (typed into "
            f"the widget or sent to an endpoint) is split into words by `{spec}` first, so install it:\n\n```bash\n"
            f"{parser_install_hint(spec)}\n```"
        )
    trained_with = [value for value in (getattr(config, "source_parser", None), getattr(config, "target_parser", None))
                    if value]
    during_training = f" (training used `{'`, `'.join(trained_with)}`)" if trained_with else ""
    return f"No parser is needed at inference: the model reads plain tokens{during_training}."


def _examples_cell(result: dict) -> str:
    examples, split_size = result.get("examples"), result.get("split_size")
    if examples is None:
        return "not recorded"
    if is_subsample(result):
        return f"{examples} of {split_size} (subsample)"
    return str(examples)


def _results_table(results: list, dataset: str) -> str:
    if not results:
        return "No results: this folder was exported without a training run's scores."
    rows = [f"| {item.get('dataset', dataset)} | {item['split']} | {item['metric']} | {float(item['value']):.2f} | "
            f"{_examples_cell(item)} |" for item in results]
    table = "| dataset | split | metric | value | examples |\n| --- | --- | --- | ---: | ---: |\n" + "\n".join(rows)
    if any(is_subsample(item) for item in results):
        table += ("\n\nA score on a subsample of its split is not that split's score: it is left out of the card's "
                  "`model-index` metadata.")
    return table


def _dataset_label(context: CardContext) -> str:
    if not context.dataset:
        return "unknown"
    return f"{context.dataset} ({context.dataset_config})" if context.dataset_config else context.dataset


def _training_data(context: CardContext) -> str:
    if context.training_data:
        return context.training_data
    if not context.dataset:
        return "Not recorded."
    if is_hub_dataset_id(context.dataset):
        config = f", config `{context.dataset_config}`" if context.dataset_config else ""
        return f"[`{context.dataset}`](https://huggingface.co/datasets/{context.dataset}){config}"
    return f"`{_dataset_label(context)}` (local data)."


def _widget(context: CardContext, example_language: str | None) -> list[dict]:
    if context.widget:
        return [item if isinstance(item, dict) else {"text": item} for item in context.widget]
    if context.text_pairs:
        pairs = EXAMPLE_PAIRS.get(example_language or "en", EXAMPLE_PAIRS["en"])
        return [{"text": text, "text_pair": text_pair} for text, text_pair in pairs]
    examples = EXAMPLE_SENTENCES.get(example_language or "en", EXAMPLE_SENTENCES["en"])
    return [{"text": example} for example in examples]


MODEL_SETTINGS = {
    "baseline": (),
    "dbsa": ("parse_layer_encoder", "parse_layer_decoder", "parse_loss_weight_encoder", "parse_loss_weight_decoder",
             "subword_head_rule", "parse_head", "parse_score_form", "decoder_parse_loss_normalizer",
             "parse_loss_warmup_steps"),
    "dep_rpe": ("relative_position_clip", "dependency_depth_clip", "dependency_depth_keys", "dependency_depth_values",
                "absolute_positions"),
    "graph_transformer": ("graph_fusion", "graph_half_dim", "graph_shared_qkv", "graph_middle_stream",
                          "graph_first_layer", "graph_increment", "graph_new_groups"),
    "syntax_infused": ("source_features", "feature_embedding_dim", "feature_combine"),
    "bert_pos": ("pos_combine", "pos_gate", "pos_parser", "hidden_size", "num_hidden_layers", "num_attention_heads"),
}
SEQ2SEQ_SIZES = ("vocab_size", "d_model", "encoder_layers", "decoder_layers", "encoder_attention_heads",
                 "encoder_ffn_dim", "label_smoothing")


def model_settings(config, variant: str) -> dict:
    """The architecture settings a reader of the card needs: sizes, then the variant's own switches."""
    names = MODEL_SETTINGS[variant] if variant == "bert_pos" else SEQ2SEQ_SIZES + MODEL_SETTINGS[variant]
    return {name: getattr(config, name) for name in names if hasattr(config, name)}


def _settings_list(settings: dict) -> str:
    if not settings:
        return "Not recorded."
    return "\n".join(f"- `{key}`: {value}" for key, value in settings.items())


def render_card(config, context: CardContext | dict | None, template_dir: Path | None = None) -> ModelCard:
    """The model card of a model with ``config``, filled from ``context`` (see ``CardContext``)."""
    import jinja2

    context = CardContext.from_value(context)
    variant = context.variant or variant_of(config)
    template = load_template(variant, template_dir)
    is_classifier = variant == "bert_pos"
    pipeline_tag = "text-classification" if is_classifier else "translation"
    languages = [language for language in (context.source_language, context.target_language) if language]
    example_language = context.source_language or language_of_parser(
        getattr(config, "pos_parser", None) or getattr(config, "source_parser", None))
    widget = _widget(context, example_language)
    hub_dataset = context.dataset if is_hub_dataset_id(context.dataset) else None
    eval_results = [  # model-index names a Hub dataset and a whole split; other scores stay in the text
        EvalResult(
            task_type=pipeline_tag, task_name=context.task_name or pipeline_tag, dataset_type=hub_dataset,
            dataset_name=_dataset_label(context), dataset_config=context.dataset_config, dataset_split=item["split"],
            metric_type=item["metric"], metric_name=item["metric"], metric_value=float(item["value"]),
        )
        for item in context.results if hub_dataset and not is_subsample(item)
    ]
    card_data = ModelCardData(
        language=languages or None,
        license=context.license,
        library_name="transformers",
        pipeline_tag=pipeline_tag,
        tags=["hf-syntax", variant, "syntax", "custom_code"],
        datasets=[hub_dataset] if hub_dataset else None,
        base_model=context.base_model,
        model_name=model_title(config, context.source_language, context.target_language),
        eval_results=eval_results or None,
        widget=widget,
    )
    values = {
        "card_data": card_data.to_yaml(),
        "model_id": context.model_id,
        "untrained_warning": "" if context.results else UNTRAINED_WARNING,
        "parser_section": parser_section(config),
        "example": widget[0]["text"].replace('"', '\\"'),
        "training_data": _training_data(context),
        "training_settings": _settings_list({**model_settings(config, variant), **context.training_settings}),
        "results_table": _results_table(context.results, _dataset_label(context)),
        "license": context.license,
    }
    environment = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    try:
        text = environment.from_string(template).render(**values)
    except jinja2.UndefinedError as error:
        raise CardError(f"model card template {variant}.md uses a field hf_syntax does not fill: {error}") from error
    return ModelCard(text)


__all__ = ["CardContext", "CardError", "PLACEHOLDER_MODEL_ID", "VARIANTS", "is_hub_dataset_id", "load_template",
           "model_title", "parser_requirements", "render_card", "variant_of"]
