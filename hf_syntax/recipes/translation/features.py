"""The translation recipe's syntax features: the ``features`` section through ``parse_and_align``, or the columns a
``data.dataset`` made by ``hf-syntax preprocess`` already carries; and the check, before anything is parsed, that
the model gets every feature column it trains on.
"""

from __future__ import annotations

import difflib
import inspect
import logging
from pathlib import Path
from typing import Any

import datasets
import pyarrow.compute
from transformers import PreTrainedTokenizerBase

from hf_syntax.data.corpus import SOURCE_COLUMN, TARGET_COLUMN
from hf_syntax.recipes.config import ConfigError
from hf_syntax.recipes.translation.data import resolve_data_path
from hf_syntax.recipes.translation.schema import DataSection, TranslationRecipeConfig, resolve_model_type

logger = logging.getLogger(__name__)


def add_syntax_features(
    corpus: datasets.DatasetDict,
    source_tokenizer: PreTrainedTokenizerBase,
    target_tokenizer: PreTrainedTokenizerBase,
    features: dict[str, Any],
    data: DataSection,
) -> tuple[datasets.DatasetDict, dict[str, Any]]:
    """The seam for syntax-aware variants: the ``features`` section goes to ``parse_and_align`` unchanged.

    The map function re-tokenizes with the same tokenizer (it needs the offsets), so its ``input_ids`` replace
    ours; the length limits of the data section apply unless the section sets its own. Returns the featurized
    splits and the settings a model config keeps for featurizing at inference (parsers, label vocabularies).
    """
    from hf_syntax.data.features import parse_and_align

    check_feature_keys(features)
    options = {"max_length": data.max_source_length, "truncation": data.long_lines == "truncate", **features}
    if target_tokenizer is not source_tokenizer:
        options.setdefault("target_tokenizer", target_tokenizer)
    try:
        map_function = parse_and_align(source_tokenizer, **options)
    except (TypeError, ValueError) as error:
        raise ConfigError(f"features section: {error}") from error
    featurized = corpus.map(map_function, batched=True, num_proc=data.num_proc, desc="Parsing and aligning")
    return featurized, _model_feature_settings(map_function.settings, map_function.label_vocabularies)


def check_feature_keys(features: dict[str, Any]) -> None:
    """Every key of the ``features`` section must be a ``parse_and_align`` option (the nearest one is named)."""
    from hf_syntax.data.features import ParseAndAlign

    accepted = set(inspect.signature(ParseAndAlign.__init__).parameters) - {"self", "tokenizer"}
    for key in features:
        if key not in accepted:
            close = difflib.get_close_matches(key, accepted, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ConfigError(f"unknown config key features.{key}{hint}; parse_and_align accepts {sorted(accepted)}")


def _model_feature_settings(made_with: dict[str, Any], label_vocabularies: dict) -> dict[str, Any]:
    """What a model config keeps so its pipeline featurizes raw text the way the training data was featurized."""
    return {
        "source_parser": made_with.get("src_parser"),
        "target_parser": made_with.get("tgt_parser"),
        "feature_labels": label_vocabularies,
        "source_pretokenized": bool(made_with.get("pretokenized", False)),
    }


# Columns of a preprocessed dataset that the recipe reuses (besides the source feature columns it records).
PREPROCESSED_COLUMNS = ("input_ids", "attention_mask", "labels", "decoder_dep_heads")


def reusable_preprocessed_features(config: TranslationRecipeConfig) -> dict[str, Any] | None:
    """The features record of a ``data.dataset`` made by ``hf-syntax preprocess``, if its columns can be reused.

    Reused when the ``features`` section is absent or asks for nothing the dataset was not made with (same parsers,
    options, and a subset of its feature columns); otherwise the texts are parsed again, and the log says why.
    """
    from hf_syntax.data.features import load_features_record
    from hf_syntax.columns import normalise_features

    if config.data.dataset is None:
        return None
    record = load_features_record(resolve_data_path(config.data.dataset))
    if record is None:
        return None
    made_with, wanted = record["features"], dict(config.features or {})
    requested = set(normalise_features(wanted.pop("features", made_with["features"])))
    differing = sorted(key for key, value in wanted.items() if made_with.get(key) != value)
    missing = sorted(requested - set(made_with["features"]))
    if differing or missing:
        logger.warning(
            "data.dataset was featurized with %s; parsing again because %s", made_with,
            "; ".join([*(f"features.{key} = {wanted[key]!r}" for key in differing),
                       *([f"it lacks the columns {missing}"] if missing else [])]),
        )
        return None
    if config.tokenizer.path and Path(config.tokenizer.path).expanduser().resolve() != Path(record["tokenizer"]):
        raise ConfigError(
            f"tokenizer.path = {config.tokenizer.path!r}, but the feature columns of data.dataset were aligned to the "
            f"subwords of the tokenizer in {record['tokenizer']}; drop tokenizer.path (the recipe then uses that one) "
            f"or run hf-syntax preprocess again with --tokenizer {config.tokenizer.path}"
        )
    return record


def attach_preprocessed_features(
    encoded: datasets.DatasetDict, loaded: datasets.DatasetDict, record: dict[str, Any], data: DataSection
) -> tuple[datasets.DatasetDict, dict[str, Any]]:
    """Replace the recipe's token columns with the preprocessed ones (the features are aligned to those)."""
    attached = {}
    for split, dataset in encoded.items():
        columns = loaded[split].remove_columns([SOURCE_COLUMN, TARGET_COLUMN])
        # Arrow, not Python lists: no copy of the column; the arrow format honours a select()ed subset.
        lengths = pyarrow.compute.list_value_length(columns.with_format("arrow")["input_ids"])
        longest = pyarrow.compute.max(lengths).as_py() or 0
        if longest > data.max_source_length:
            raise ConfigError(
                f"data.dataset split {split!r} has sources of {longest} tokens, more than data.max_source_length="
                f"{data.max_source_length}; raise the limit or preprocess again with --max-length "
                f"{data.max_source_length}"
            )
        dataset = dataset.remove_columns([name for name in columns.column_names if name in dataset.column_names])
        attached[split] = datasets.concatenate_datasets([dataset, columns], axis=1)
    return datasets.DatasetDict(attached), _model_feature_settings(record["features"], record["feature_labels"])


def check_feature_columns(config: TranslationRecipeConfig, preprocessed: dict[str, Any] | None) -> None:
    """The feature columns ``model.type`` trains on must come from the features section or the preprocessed
    dataset. Checked before anything is read or parsed: the model would otherwise stop at its first training step."""
    from hf_syntax.columns import COLUMNS, DEFAULT_FEATURES, normalise_features

    config_class, preset = resolve_model_type(config.model.type)
    try:
        model_config = config_class(**{**preset, **config.model.kwargs})
    except (TypeError, ValueError) as error:
        raise ConfigError(f"model.kwargs for {config.model.type}: {error}") from error
    trains_on = (*getattr(model_config, "needs_source_features", ()), *getattr(model_config, "training_columns", ()))
    needed = [column for column in trains_on if COLUMNS[column].side == "source"]
    needed_target = [column for column in trains_on if COLUMNS[column].side == "target"]
    if preprocessed is not None:
        given, target_parser = set(preprocessed["features"]["features"]), preprocessed["features"].get("tgt_parser")
        where = f"the data.dataset made by hf-syntax preprocess has {sorted(given)}"
    elif config.features is not None:
        has_source = config.features.get("src_parser") is not None
        given = set(normalise_features(config.features.get("features", DEFAULT_FEATURES))) if has_source else set()
        target_parser = config.features.get("tgt_parser")
        where = f"the features section gives {sorted(given)}"
    else:
        given, target_parser, where = set(), None, "there is no features section"
    missing = [column for column in needed if column not in given]
    if missing:
        raise ConfigError(
            f"model.type = {config.model.type!r} needs the feature columns {missing}, but {where}; add them, e.g. "
            f"--set 'features={{src_parser: \"spacy:ja_ginza\", pretokenized: true, features: [{', '.join(missing)}]}}' "
            f"(with your parser and corpus)"
        )
    if needed_target and not target_parser:
        raise ConfigError(
            f"model.type = {config.model.type!r} trains on {needed_target}, columns of the parsed target side; set "
            f"features.tgt_parser (e.g. --set features.tgt_parser=spacy:en_core_web_sm)"
        )
