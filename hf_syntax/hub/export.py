"""Export a trained model as a folder that ``huggingface_hub.upload_folder`` can push as is.

The folder holds safetensors weights only, ``config.json`` with ``auto_map`` and ``custom_pipelines``, every
portable module of hf_syntax (``hub.portable``: model, configs, pipeline, featurizer, parsers, trees, tree views),
the tokenizer(s), the generation config, a model card rendered from the variant's template with the run's scores,
and what an Inference Endpoint runs: ``handler.py`` (a copy of the file ``hf_syntax/serving/endpoint_handler.py``)
and the ``requirements.txt`` it installs (the parser packages the model needs at inference).
Model, tokenizer and pipeline are written by the Hugging Face save methods of the pipeline
(``Pipeline.save_pretrained``), so what is exported is what ``pipeline(model=folder, trust_remote_code=True)`` loads.

    from hf_syntax.hub.export import export
    export("runs/demo_ja_en/model", None, "exported/demo-ja-en", {"model_id": "me/demo-ja-en"})
"""

from __future__ import annotations

import json
import warnings
from importlib import resources
from pathlib import Path

from hf_syntax.folder_layout import ENDPOINT_HANDLER_FILE, MODEL_CARD_FILE, REQUIREMENTS_FILE, new_folder_problem
from hf_syntax.hub.cards import CardContext, UNTRAINED_WARNING, is_language_code, parser_requirements, render_card
from hf_syntax.hub.model_folder import ModelFolderError, load_model_folder
from hf_syntax.hub.portable import PACKAGE_DIR, portable_files
from hf_syntax.pipelines import save_pipeline, syntax_pipeline
from hf_syntax.recipes.runs import GLUE_RUN_FILE, SUMMARY_FILE
from hf_syntax.segmenters import SEGMENTER_REQUIREMENTS, segmenter_requirements

CODE_FILES = portable_files()
"""Code files that travel with every exported model: the whole portable set (``hub.portable``)."""
HANDLER_SOURCE = ("hf_syntax.serving", "endpoint_handler.py")
"""The Inference Endpoint handler, copied as a file (never imported here: it imports the inference backends)."""
SERVING_FILES = (ENDPOINT_HANDLER_FILE, REQUIREMENTS_FILE)
"""The Inference Endpoint's entry point and what it installs before loading the model."""
BASE_REQUIREMENTS = ("torch", "transformers>=5.0,<6", "tokenizers", "safetensors")
WEIGHT_FILES_NOT_ALLOWED = ("*.bin", "*.pt", "*.pth", "*.ckpt", "*.h5", "*.msgpack")


class ExportError(ValueError):
    """The model, tokenizer or output folder cannot be exported as asked; the message says what to change."""


def results_from_run(model_dir: Path) -> dict:
    """What a recipe left beside the model folder, as ``CardContext`` fields (results, training settings and, from
    the GLUE recipe, the dataset, its config and whether the task classifies sentence pairs); empty if nothing.

    Translation recipe: ``<output_dir>/summary.json`` with ``<output_dir>/model``. GLUE recipe:
    ``<run_dir>/run.json`` with ``<run_dir>/model``.
    """
    summary_file, run_file = model_dir.parent / SUMMARY_FILE, model_dir.parent / GLUE_RUN_FILE
    if summary_file.is_file():
        return results_from_summary(json.loads(summary_file.read_text()))
    if run_file.is_file():
        return results_from_glue_run(json.loads(run_file.read_text()))
    return {}


def _counts(counts: dict, split: str) -> dict:
    """``examples`` / ``split_size`` of a result, from a recipe's ``{split: {"used": n, "in_split": N}}``."""
    count = counts.get(split)
    return {"examples": count["used"], "split_size": count["in_split"]} if count else {}


def results_from_glue_run(run: dict) -> dict:
    """``CardContext`` fields from a GLUE recipe's ``run.json`` (older files without example counts still load)."""
    counts = run.get("examples", {})
    context = {
        "results": [{"split": split, "metric": metric, "value": value, **_counts(counts, split)}
                    for split, scores in run["eval"].items() for metric, value in scores.items()],
        "training_settings": {"learning rate": run["learning_rate"], "optimizer steps": run["steps"]},
    }
    if "train" in counts:
        context["training_settings"]["training examples"] = _count_text(counts["train"])
    dataset = run.get("dataset") or {}
    if dataset.get("hub_id"):
        context["dataset"] = dataset["hub_id"]
        if dataset.get("config"):  # a configuration of that dataset; local data names its task in training_data
            context["dataset_config"] = dataset["config"]
    if dataset.get("source") and not dataset.get("hub_id"):
        context["training_data"] = f"`{dataset['source']}` (local data, task `{dataset.get('config')}`)."
    if run.get("text_pairs"):
        context["text_pairs"] = True
    return context


def _count_text(count: dict) -> str:
    used, in_split = count["used"], count["in_split"]
    return f"{used} of {in_split} (the first {used})" if used < in_split else str(used)


def results_from_summary(summary: dict) -> dict:
    """``CardContext`` fields (results, training settings) of a translation recipe's ``summary.json``."""
    split = summary["reported_split"]
    counts = {name: {"used": used, "in_split": summary["pairs_in_split"][name]}
              for name, used in summary["pairs"].items() if name in summary.get("pairs_in_split", {})}
    names = summary.get("split_names", {})  # what a split is at its source, e.g. a test file cut from dev
    results = [{"split": names.get(split, split), "metric": "bleu", "value": summary["bleu"], **_counts(counts, split)},
               {"split": names.get(split, split), "metric": "chrf", "value": summary["chrf"], **_counts(counts, split)}]
    if split != "validation":
        results += [{"split": names.get("validation", "validation"), "metric": "bleu",
                     "value": summary["validation_bleu"], **_counts(counts, "validation")},
                    {"split": names.get("validation", "validation"), "metric": "chrf",
                     "value": summary["validation_chrf"], **_counts(counts, "validation")}]
    training_pairs = _count_text(counts["train"]) if "train" in counts else summary["pairs"].get("train")
    settings = {"optimizer steps": summary["optimizer_steps"], "epochs": round(summary["epochs"], 2),
                "parameters": summary["parameters"], "training pairs": training_pairs}
    averaged = summary.get("averaged_steps", [])
    if len(averaged) > 1:  # the card says the weights are a mean, not one checkpoint chosen on dev
        settings["final weights"] = f"mean of the checkpoints at steps {', '.join(map(str, averaged))}"
    context = {"results": results, "training_settings": settings, **_summary_languages(summary)}
    if summary.get("training_data"):
        context["training_data"] = summary["training_data"]
    return context


def _summary_languages(summary: dict) -> dict:
    """The run's language codes (``"languages": "ja->en"``) as card fields, so that exporting a run's model folder
    tells what the run's own card told; the recipe's placeholders ("src", "tgt") and names that are not ISO codes
    ("japanese") stay out of the card's metadata."""
    from hf_syntax.recipes.translation.schema import DataSection

    source, _, target = summary.get("languages", "").partition("->")
    return {field: code for field, code, placeholder in (("source_language", source, DataSection.source_lang),
                                                         ("target_language", target, DataSection.target_lang))
            if code and code != placeholder and is_language_code(code)}


def export(model_dir_or_model, tokenizer, out_dir, card_context=None, *, target_tokenizer=None,
           overwrite: bool = False, template_dir=None) -> Path:
    """Write the Hub-ready folder ``out_dir``; returns its path.

    ``model_dir_or_model``: a saved model folder (its tokenizer, ``target_tokenizer/`` and the recipe's results
    beside it are picked up) or a model object (then give ``tokenizer``, and ``target_tokenizer`` when the model has
    separate vocabularies). ``card_context``: a ``CardContext`` or
    dict of its fields; results found beside a model folder fill in what it does not say. A model exported
    without results gets a card that warns that its weights are untrained (and a Python warning).
    """
    context = CardContext.from_value(card_context)
    out_dir = Path(out_dir)
    if problem := new_folder_problem(out_dir, overwrite):
        raise ExportError(problem)
    if isinstance(model_dir_or_model, (str, Path)):
        model_dir = Path(model_dir_or_model)
        try:
            model, saved_tokenizer = load_model_folder(model_dir, hf_syntax_only=True)
        except ModelFolderError as error:
            raise ExportError(str(error)) from error
        tokenizer = tokenizer or saved_tokenizer
        found = results_from_run(model_dir)
        context.results = context.results or found.get("results", [])
        context.training_settings = {**found.get("training_settings", {}), **context.training_settings}
        for key in ("dataset", "dataset_config", "training_data", "text_pairs", "source_language",
                    "target_language"):  # what the caller said wins
            if key in found and not getattr(context, key):
                setattr(context, key, found[key])
    else:
        model = model_dir_or_model
        if tokenizer is None:
            raise ExportError("export of a model object needs its tokenizer (pass tokenizer=...).")
    card = render_card(model.config, context, template_dir)
    extra = {"target_tokenizer": target_tokenizer} if target_tokenizer is not None else {}
    # Saving needs no parser: the end of a run on a machine without one (pre-parsed data, a GPU box) must not fail.
    pipe = syntax_pipeline(model.eval(), tokenizer, load_parser=False, **extra)
    if not context.results:  # said once the export can go ahead
        warnings.warn(f"exporting {out_dir} without training results: {UNTRAINED_WARNING}", stacklevel=2)
    save_pipeline(pipe, str(out_dir))
    drop_loading_flags(out_dir)
    card.save(out_dir / MODEL_CARD_FILE)
    write_endpoint_files(model.config, out_dir)
    readable_by_all(out_dir)
    check_export_folder(out_dir)
    return out_dir


def readable_by_all(out_dir: Path) -> None:
    """Mode 644 for every file of the folder: transformers writes ``model.safetensors`` through a private temporary
    file (mode 600), which a web server, a container user or a colleague could then not read."""
    for path in Path(out_dir).rglob("*"):
        if path.is_file():
            path.chmod(0o644)


LOADING_FLAGS = ("is_local", "local_files_only")
"""Keys transformers copies into a saved tokenizer's config from how it was loaded (from a local folder, offline):
in a published folder they would describe this machine, not the tokenizer."""


def drop_loading_flags(out_dir: Path) -> None:
    for path in Path(out_dir).rglob("tokenizer_config.json"):
        config = json.loads(path.read_text(encoding="utf-8"))
        if any(key in config for key in LOADING_FLAGS):
            kept = {key: value for key, value in config.items() if key not in LOADING_FLAGS}
            path.write_text(json.dumps(kept, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def inference_parsers(config) -> list[str]:
    """Parser and segmenter specs a model runs at inference: BERT+POS's tagger, the source parser of a feature model,
    and what splits raw text into words for a model trained on a pre-split corpus (`config.segmenter_spec`: its
    segmenter, else the parser; a self-parsing model names none but its segmenter)."""
    if getattr(config, "pos_parser", None):
        return [config.pos_parser]
    specs = [config.source_parser] if getattr(config, "needs_source_features", ()) and config.source_parser else []
    if getattr(config, "source_pretokenized", False):
        segmenter = getattr(config, "segmenter_spec", config.source_parser)
        specs += [segmenter] if segmenter and segmenter not in specs else []
    return specs


def write_endpoint_files(config, out_dir: Path) -> None:
    """``handler.py`` (the Inference Endpoint contract), the ``requirements.txt`` an endpoint installs (the
    libraries the folder's code imports plus the parser packages the config names) and the portable modules
    ``save_pretrained`` did not copy (those the model classes do not import, such as the demos' tree views)."""
    handler = resources.files(HANDLER_SOURCE[0]).joinpath(HANDLER_SOURCE[1]).read_text(encoding="utf-8")
    (out_dir / ENDPOINT_HANDLER_FILE).write_text(handler, encoding="utf-8")
    for name in CODE_FILES:
        if not (out_dir / name).is_file():
            (out_dir / name).write_text((PACKAGE_DIR / name).read_text(encoding="utf-8"), encoding="utf-8")
    requirements = list(BASE_REQUIREMENTS)
    for spec in inference_parsers(config):
        needs = segmenter_requirements if spec.partition(":")[0] in SEGMENTER_REQUIREMENTS else parser_requirements
        requirements += [name for name in needs(spec) if name not in requirements]
    (out_dir / REQUIREMENTS_FILE).write_text("\n".join(requirements) + "\n", encoding="utf-8")


def check_export_folder(folder: Path) -> None:
    """Raise if the folder lacks what a Hub model with remote code and a custom pipeline needs."""
    folder = Path(folder)
    config = json.loads((folder / "config.json").read_text())
    problems = []
    if not config.get("auto_map"):
        problems.append("config.json has no auto_map")
    if not config.get("custom_pipelines"):
        problems.append("config.json has no custom_pipelines")
    problems += [f"code file {name} is missing" for name in CODE_FILES + SERVING_FILES
                 if not (folder / name).is_file()]
    if not list(folder.glob("*.safetensors")):
        problems.append("no .safetensors weights")
    problems += [f"non-safetensors weights {path.name}" for pattern in WEIGHT_FILES_NOT_ALLOWED
                 for path in folder.rglob(pattern)]
    if config.get("is_encoder_decoder") and not (folder / "generation_config.json").is_file():
        problems.append("generation_config.json is missing")
    if not (folder / "tokenizer_config.json").is_file():
        problems.append("tokenizer files are missing")
    if problems:
        raise ExportError(f"export folder {folder} is incomplete: {'; '.join(problems)}.")


__all__ = ["CODE_FILES", "ExportError", "SERVING_FILES", "check_export_folder", "export",
           "results_from_glue_run", "results_from_run", "results_from_summary"]
