"""Model cards for exported models: one template per variant in ``model_cards/``, rendered with huggingface_hub.

A template is Markdown with a YAML header placeholder (``{{ card_data }}``) and the placeholders of
``TEMPLATE_FIELDS``; the prose that never changes (what the variant does, limitations, citation) is written in the
template, what comes from the model and the run is filled in here: what the model is (its variant, name, settings,
parser and attention terms) from ``descriptions.py``, the run's languages, data and scores from the card context.
Rendering is strict: a template that lacks a field or a section, or uses a name we do not fill, is an error naming
the template.

Templates ship inside the package as ``hf_syntax/hub/model_card_templates`` (a link to the repository's
``model_cards/`` folder, picked up by package-data), so an installed hf_syntax finds them.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, fields
from pathlib import Path

from huggingface_hub import EvalResult, ModelCard, ModelCardData
from huggingface_hub.errors import HFValidationError
from huggingface_hub.utils import validate_repo_id

from hf_syntax.text_checks import is_blank
from hf_syntax.hub.descriptions import (
    VARIANTS, CardError, attention_terms_text, language_of_parser, model_settings, model_title, parser_requirements,
    parser_section, variant_of,
)

TEMPLATE_DIR = Path(__file__).resolve().parent / "model_card_templates"
TEMPLATE_FIELDS = (
    "card_data", "model_id", "untrained_warning", "parser_section", "example", "training_data",
    "training_settings", "results_table", "license",
)
"""Fields every template must use. ``attention_terms`` (the paragraph of each relative attention term the model
uses, from its entry in ``descriptions.TERM_CARDS``) is filled for every card too, for the templates that use it."""
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
PLACEHOLDER_MODEL_ID = "<your-name>/<model-name>"
"""The model id a card shows until it is told the Hub repo the folder will be uploaded to (``--model-id``): plainly
a placeholder, never a name that looks like a real repo and does not resolve."""


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
        if not isinstance(context.license, str) or not context.license or any(c.isspace() for c in context.license):
            raise CardError(f"the card's license {context.license!r} (--license, card_context license) is not a "
                            f"license identifier; give one the Hub knows, e.g. 'apache-2.0', 'cc-by-4.0', 'mit' or "
                            f"'other'.")
        for name, flag in (("source_language", "--source-lang"), ("target_language", "--target-lang")):
            code = getattr(context, name)
            if code is not None and not is_language_code(code):
                raise CardError(f"the card's {name} {code!r} ({flag}, card_context {name}) is not a language code; "
                                f"the Hub's language metadata takes a lowercase ISO 639 code of two or three letters, "
                                f"e.g. 'de', 'ja', 'en'.")
        if context.dataset_config and not context.dataset:
            raise CardError(f"the card's dataset_config {context.dataset_config!r} (--dataset-config) names a "
                            f"configuration of no dataset; give the dataset too, e.g. --dataset nyu-mll/glue "
                            f"--dataset-config rte.")
        for index, example in enumerate(context.widget or []):
            texts = [example.get("text"), *([example["text_pair"]] if "text_pair" in example else [])] \
                if isinstance(example, dict) else [example]
            if not all(isinstance(text, str) and not is_blank(text) for text in texts):
                raise CardError(f"widget example {index + 1} ({example!r}; --widget, card_context widget) is not a "
                                f"sentence; each is a text in the model's input language (a str, or a dict with "
                                f"'text' and, for a pair, 'text_pair').")
        return context


def is_language_code(code: str) -> bool:
    """Whether the Hub takes ``code`` as a model's language: an ISO 639 code, two or three lowercase letters
    ("german" or "DE" is refused by the Hub's metadata check, and the card would pick English widget examples)."""
    return isinstance(code, str) and bool(re.fullmatch(r"[a-z]{2,3}", code))


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
    if context.text_pairs and not is_classifier:
        raise CardError("text_pairs (--text-pairs) is for a sentence-pair classifier; a translation model reads one "
                        "text, so its widget shows single sentences.")
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
        # the inside of the template's "..." Python string: JSON's escapes are Python's (a backslash, as in C:\new,
        # or a quote no longer breaks the usage snippet), and ensure_ascii=False keeps the text readable
        "example": json.dumps(widget[0]["text"], ensure_ascii=False)[1:-1],
        "training_data": _training_data(context),
        "training_settings": _settings_list({**model_settings(config, variant), **context.training_settings}),
        "attention_terms": attention_terms_text(config),
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
