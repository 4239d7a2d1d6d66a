"""Translation training recipe on ``Seq2SeqTrainer``: one config file in, a trained Hub-ready model + summary out.

The recipe is variant-agnostic: ``model.type`` is any registered seq2seq ``model_type`` (``syntax_transformer``
and its paper variants, or ``marian`` as a reference) or a named architecture of ``hf_syntax.variants.ARCHITECTURES``
(``dbsa_enc_dec``, ``transformer_dep_rel``, ...: its preset, under ``model.kwargs``), with ``model.kwargs`` for its
config, and the optional
``features`` section is handed to the syntax-feature map function unchanged (a ``data.dataset`` made by
``hf-syntax preprocess`` brings its feature columns and tokenizer along, and is not parsed again). Everything else is plain
Transformers: inverse-sqrt schedule with warm-up, generation-based evaluation with local BLEU/chrF metrics,
best checkpoint by BLEU, ``resume_from_checkpoint``, and ``accelerate launch``/``torchrun`` through the Trainer.
"""

from __future__ import annotations

import difflib
import inspect
import json
import logging
import shutil
import time
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import datasets
import numpy as np
import pyarrow.compute
import torch
from transformers import (
    AutoModelForSeq2SeqLM,
    AutoTokenizer,
    PreTrainedTokenizerBase,
    Seq2SeqTrainer,
    Seq2SeqTrainingArguments,
    TrainerCallback,
    set_seed,
)
from transformers.models.auto.configuration_auto import CONFIG_MAPPING
from transformers.trainer_utils import IntervalStrategy, get_last_checkpoint

from hf_syntax.align import AlignmentError
from hf_syntax.data.collators import SyntaxSeq2SeqCollator
from hf_syntax.data.corpus import SOURCE_COLUMN, TARGET_COLUMN, CorpusError, load_parallel_corpus
from hf_syntax.data.tokenizer import NORMALIZATIONS, TOKENIZER_MODELS, train_translation_tokenizers
from hf_syntax.metrics.translation import GeneratedTranslationScorer
from hf_syntax.modeling_syntax_transformer import SyntaxTransformerPreTrainedModel
from hf_syntax.parsers import ParserNotAvailableError
from hf_syntax.pipelines import TARGET_TOKENIZER_DIR
from hf_syntax.recipes.config import (
    ConfigError, apply_overrides, build_dataclass, check_arguments, check_choice, read_config_file,
)
from hf_syntax.trees import TreeError
from hf_syntax.variants import ARCHITECTURES

logger = logging.getLogger(__name__)

SAMPLE_DATA_PREFIX = "sample_data:"
FINAL_MODEL_DIR = "model"
SUMMARY_FILE = "summary.json"
LONG_LINE_POLICIES = ("truncate", "error")
# Seq2SeqTrainingArguments the recipe sets itself; a config setting them would be overridden or contradict it.
RECIPE_OWNED_ARGUMENTS = {
    "output_dir": "set the top-level output_dir",
    "seed": "set the top-level seed",
    "predict_with_generate": "the recipe always evaluates by generating",
    "metric_for_best_model": "the recipe selects checkpoints by BLEU",
    "greater_is_better": "the recipe selects checkpoints by BLEU",
    "generation_config": "use the generation section",
    "generation_num_beams": "use generation.num_beams",
    "generation_max_length": "use generation.max_new_tokens",
    "resume_from_checkpoint": "pass --resume_from_checkpoint (a folder or 'latest') on the command line",
    "push_to_hub": "set the top-level push_to_hub (--push_to_hub): the recipe uploads its exported model folder, "
                   "not the Trainer's output_dir",
    "hub_model_id": "set the top-level hub_model_id (--hub_model_id)",
    "hub_strategy": "the recipe uploads the exported model folder once, at the end of the run",
}
# Required files in a checkpoint folder for an exact resume (weights are checked separately).
CHECKPOINT_FILES = ("config.json", "trainer_state.json", "optimizer.pt", "scheduler.pt", "training_args.bin")
CHECKPOINT_WEIGHTS = ("model.safetensors", "pytorch_model.bin")


# ----------------------------------------------------------------------------------------------- config schema
@dataclass
class ParallelFiles:
    """One split as two line-aligned files (plain or .gz); ``sample_data:`` paths point into the package."""

    source: str
    target: str


@dataclass
class DataSection:
    """Where the pairs come from (files or a saved DatasetDict), and the empty/long-line policies."""

    source_lang: str = "src"
    target_lang: str = "tgt"
    train: ParallelFiles | None = None
    validation: ParallelFiles | None = None
    test: ParallelFiles | None = None
    dataset: str | None = None  # a datasets.save_to_disk folder instead of files
    train_split: str = "train"
    validation_split: str = "validation"
    test_split: str | None = None
    source_column: str = SOURCE_COLUMN  # "translation.ja" reads a nested translation dict
    target_column: str = TARGET_COLUMN
    skip_empty: bool = False
    max_train_pairs: int | None = None
    max_eval_pairs: int | None = None
    num_proc: int | None = None  # worker processes for parsing/aligning (the features map) and tokenizing
    max_source_length: int = 128
    max_target_length: int = 128
    long_lines: str = "truncate"


@dataclass
class TokenizerSection:
    """Train a subword vocabulary on the training pairs (joint or per side), or load a saved one."""

    path: str | None = None  # load a saved tokenizer (its target_tokenizer/ subfolder if per side) instead
    model: str = "bpe"
    vocab_size: int = 8000
    joint: bool = True
    min_frequency: int = 2
    normalization: str | None = None


@dataclass
class ModelSection:
    """A registered seq2seq ``model_type`` or named architecture, and its config kwargs (vocabulary and special ids
    are filled in)."""

    type: str = "syntax_transformer"
    kwargs: dict = field(default_factory=dict)


@dataclass
class GenerationSection:
    """Decoding used for validation, the final scores and the exported generation_config.json."""

    num_beams: int = 4
    max_new_tokens: int = 128
    length_penalty: float = 1.0


@dataclass
class EvaluationSection:
    """sacreBLEU options and how many example translations the summary shows."""

    bleu_tokenize: str = "13a"
    lowercase: bool = False
    show_examples: int = 5


@dataclass
class TranslationRecipeConfig:
    """One experiment; ``training`` holds Seq2SeqTrainingArguments fields, ``features`` parse_and_align options."""

    output_dir: str
    data: DataSection
    seed: int = 42
    overwrite_output_dir: bool = False  # allow a fresh run into a folder that holds checkpoints of another run
    push_to_hub: bool = False  # upload <output_dir>/model (the exported folder) to hub_model_id at the end
    hub_model_id: str | None = None
    tokenizer: TokenizerSection = field(default_factory=TokenizerSection)
    model: ModelSection = field(default_factory=ModelSection)
    features: dict | None = None
    training: dict = field(default_factory=dict)
    generation: GenerationSection = field(default_factory=GenerationSection)
    evaluation: EvaluationSection = field(default_factory=EvaluationSection)


def load_recipe_config(path: str | Path, overrides: list[str] = ()) -> TranslationRecipeConfig:
    """Read, override (``section.key=value``) and validate a translation experiment config."""
    raw = apply_overrides(read_config_file(path), list(overrides))
    config = build_dataclass(TranslationRecipeConfig, raw, "config")
    validate_recipe_config(config)
    return config


def validate_recipe_config(config: TranslationRecipeConfig) -> None:
    """Value checks that types alone cannot express (each error names its key)."""
    data = config.data
    check_choice(data.long_lines, LONG_LINE_POLICIES, "data.long_lines")
    check_choice(config.tokenizer.model, TOKENIZER_MODELS, "tokenizer.model")
    check_choice(config.tokenizer.normalization, NORMALIZATIONS, "tokenizer.normalization")
    if data.dataset is None and (data.train is None or data.validation is None):
        raise ConfigError("data needs train and validation files (data.train/data.validation) or data.dataset")
    if data.dataset is not None and (data.train or data.validation or data.test):
        raise ConfigError("data.dataset and data.train/validation/test files exclude each other; keep one")
    if data.num_proc is not None and data.num_proc < 1:
        raise ConfigError(f"data.num_proc must be >= 1 (or null for the main process only), got {data.num_proc}")
    for key in ("max_source_length", "max_target_length"):
        if getattr(data, key) < 2:
            raise ConfigError(f"data.{key} must be >= 2 (one token plus </s>), got {getattr(data, key)}")
    resolve_model_type(config.model.type)
    for key in config.training:
        if key in RECIPE_OWNED_ARGUMENTS:
            raise ConfigError(f"training.{key} is set by the recipe: {RECIPE_OWNED_ARGUMENTS[key]}")
    config.training = check_arguments(config.training, Seq2SeqTrainingArguments, "training")
    if config.push_to_hub and not config.hub_model_id:
        raise ConfigError("push_to_hub needs hub_model_id, the Hub repo to upload to (e.g. --hub_model_id me/dbsa-ja-en)")
    if config.generation.num_beams < 1 or config.generation.max_new_tokens < 1:
        raise ConfigError("generation.num_beams and generation.max_new_tokens must be >= 1")


# ------------------------------------------------------------------------------------------------------- data
def resolve_data_path(path: str) -> Path:
    """``sample_data:<relative path>`` -> the file inside the installed package; other paths are used as given."""
    if path.startswith(SAMPLE_DATA_PREFIX):
        return Path(str(resources.files("hf_syntax") / "sample_data" / path[len(SAMPLE_DATA_PREFIX) :]))
    return Path(path).expanduser()


def _check_dataset_texts(dataset: datasets.Dataset, split: str, skip_empty: bool) -> tuple[datasets.Dataset, int]:
    """Same empty-text policy as for files: error naming the row, or drop and count."""
    empty_rows = [
        index
        for index, (source, target) in enumerate(zip(dataset[SOURCE_COLUMN], dataset[TARGET_COLUMN]))
        if not isinstance(source, str) or not isinstance(target, str) or not source.strip() or not target.strip()
    ]
    if empty_rows and not skip_empty:
        raise CorpusError(
            f"split {split!r} has {len(empty_rows)} empty or missing texts (first at row {empty_rows[0]}); "
            "clean the dataset or set data.skip_empty: true to drop and count them"
        )
    if empty_rows:
        dataset = dataset.select(sorted(set(range(len(dataset))) - set(empty_rows)))
    return dataset, len(empty_rows)


def load_translation_data(
    data: DataSection, keep_columns: tuple[str, ...] = ()
) -> tuple[datasets.DatasetDict, dict[str, int]]:
    """Splits ``train``/``validation`` (and ``test`` if configured) with ``source``/``target`` columns + skip counts.

    ``keep_columns``: further columns of a ``data.dataset`` to keep where present (preprocessed feature columns).
    """
    limits = {"train": data.max_train_pairs, "validation": data.max_eval_pairs, "test": data.max_eval_pairs}
    if data.dataset is None:
        files = {"train": data.train, "validation": data.validation, "test": data.test}
        splits = {
            name: (resolve_data_path(pair.source), resolve_data_path(pair.target))
            for name, pair in files.items()
            if pair is not None
        }
        corpus, stats = load_parallel_corpus(splits, skip_empty=data.skip_empty, max_pairs=limits)
        return corpus, {name: split_stats.empty_pairs_skipped for name, split_stats in stats.items()}

    folder = resolve_data_path(data.dataset)
    if not folder.is_dir():
        raise ConfigError(f"data.dataset = {data.dataset!r}: no datasets.save_to_disk folder at {folder}")
    loaded = datasets.load_from_disk(str(folder))
    if not isinstance(loaded, datasets.DatasetDict):
        raise ConfigError(f"data.dataset = {data.dataset!r} holds a single Dataset; save a DatasetDict with splits")
    wanted = {"train": data.train_split, "validation": data.validation_split, "test": data.test_split}
    corpus, skipped = {}, {}
    for name, split in wanted.items():
        if split is None:
            continue
        if split not in loaded:
            raise ConfigError(f"data.{name}_split = {split!r} is not in {folder}; it has {list(loaded)}")
        dataset = loaded[split]
        if "." in data.source_column or "." in data.target_column:
            dataset = dataset.flatten()
        for key, column in (("source_column", data.source_column), ("target_column", data.target_column)):
            if column not in dataset.column_names:
                raise ConfigError(f"data.{key} = {column!r} is not a column of split {split!r}: {dataset.column_names}")
        kept = [column for column in keep_columns if column in dataset.column_names]
        dataset = dataset.select_columns([data.source_column, data.target_column, *kept])
        dataset = dataset.rename_columns({data.source_column: SOURCE_COLUMN, data.target_column: TARGET_COLUMN})
        dataset, skipped[name] = _check_dataset_texts(dataset, split, data.skip_empty)
        if limits[name] is not None:
            dataset = dataset.select(range(min(limits[name], len(dataset))))
        corpus[name] = dataset
    return datasets.DatasetDict(corpus), skipped


def _encode_with_length_policy(
    tokenizer: PreTrainedTokenizerBase, texts: list[str], max_length: int, policy: str, side: str
) -> tuple[list[list[int]], list[bool]]:
    """Encode (ending in </s>); over-long sequences are cut to ``max_length`` keeping </s>, or rejected."""
    encoded = tokenizer(texts, add_special_tokens=True, verbose=False)["input_ids"]  # we count long lines ourselves
    truncated = [len(ids) > max_length for ids in encoded]
    if policy == "error" and any(truncated):
        first = truncated.index(True)
        raise CorpusError(
            f"a {side} sentence has {len(encoded[first])} tokens, more than data.max_{side}_length={max_length}: "
            f"{texts[first][:80]!r}; raise the limit (within the model's max_position_embeddings) or set "
            "data.long_lines: truncate"
        )
    return [ids[: max_length - 1] + [tokenizer.eos_token_id] if cut else ids for ids, cut in zip(encoded, truncated)], truncated


def tokenize_translation_data(
    corpus: datasets.DatasetDict,
    source_tokenizer: PreTrainedTokenizerBase,
    target_tokenizer: PreTrainedTokenizerBase,
    data: DataSection,
    *,
    encode_source: bool = True,
) -> tuple[datasets.DatasetDict, dict[str, dict[str, int]]]:
    """Add ``input_ids``/``attention_mask``/``labels``; returns how many sources/targets were truncated per split.

    ``encode_source=False`` makes ``labels`` only: a preprocessed dataset brings source ids its features align to.
    """

    def encode(batch: dict[str, list[str]]) -> dict[str, list]:
        labels, target_cut = _encode_with_length_policy(
            target_tokenizer, batch[TARGET_COLUMN], data.max_target_length, data.long_lines, "target"
        )
        columns = {"labels": labels, "target_truncated": target_cut}
        if encode_source:
            input_ids, source_cut = _encode_with_length_policy(
                source_tokenizer, batch[SOURCE_COLUMN], data.max_source_length, data.long_lines, "source"
            )
            columns.update(input_ids=input_ids, attention_mask=[[1] * len(ids) for ids in input_ids],
                           source_truncated=source_cut)
        return columns

    encoded = corpus.map(encode, batched=True, num_proc=data.num_proc, desc="Tokenizing")
    sides = ("source", "target") if encode_source else ("target",)
    truncated = {
        split: {"source": 0, **{side: int(sum(dataset[f"{side}_truncated"])) for side in sides}}
        for split, dataset in encoded.items()
    }
    return encoded.remove_columns([f"{side}_truncated" for side in sides]), truncated


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
    from hf_syntax.data.features import ParseAndAlign, parse_and_align

    accepted = set(inspect.signature(ParseAndAlign.__init__).parameters) - {"self", "tokenizer"}
    for key in features:
        if key not in accepted:
            close = difflib.get_close_matches(key, accepted, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ConfigError(f"unknown config key features.{key}{hint}; parse_and_align accepts {sorted(accepted)}")
    options = {"max_length": data.max_source_length, "truncation": data.long_lines == "truncate", **features}
    if target_tokenizer is not source_tokenizer:
        options.setdefault("target_tokenizer", target_tokenizer)
    try:
        map_function = parse_and_align(source_tokenizer, **options)
    except (TypeError, ValueError) as error:
        raise ConfigError(f"features section: {error}") from error
    featurized = corpus.map(map_function, batched=True, num_proc=data.num_proc, desc="Parsing and aligning")
    return featurized, _model_feature_settings(map_function.settings, map_function.label_vocabularies)


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
    from hf_syntax.columns import DEFAULT_FEATURES, normalise_features

    config_class, preset = resolve_model_type(config.model.type)
    try:
        model_config = config_class(**{**preset, **config.model.kwargs})
    except (TypeError, ValueError) as error:
        raise ConfigError(f"model.kwargs for {config.model.type}: {error}") from error
    needed = list(getattr(model_config, "needs_source_features", ()))
    if getattr(model_config, "parse_layer_encoder", 0):
        needed.append("dep_heads")
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
    if getattr(model_config, "parse_layer_decoder", 0) and not target_parser:
        raise ConfigError(
            f"model.type = {config.model.type!r} has a decoder parse head: it trains on ['decoder_dep_heads'], the "
            f"parsed target side; set features.tgt_parser (e.g. --set features.tgt_parser=spacy:en_core_web_sm)"
        )


# ---------------------------------------------------------------------------------------------------- tokenizer
def prepare_tokenizers(
    config: TranslationRecipeConfig, train: datasets.Dataset, args: Seq2SeqTrainingArguments, resume_dir: Path | None,
    dataset_tokenizer: str | None = None,
) -> tuple[PreTrainedTokenizerBase, PreTrainedTokenizerBase]:
    """Load (configured path, the tokenizer a preprocessed dataset was made with, or the checkpoint being resumed)
    or train + save the source/target tokenizers.

    The main process trains and saves first; other processes (``torchrun``) then load the saved files, so
    every rank uses the identical vocabulary.
    """
    section = config.tokenizer
    configured = section.path or dataset_tokenizer
    load_from = Path(configured).expanduser() if configured else resume_dir
    if load_from is None:
        saved = Path(config.output_dir) / "tokenizer"
        with args.main_process_first(desc="training the tokenizer"):
            if args.process_index == 0:
                source, target = train_translation_tokenizers(
                    train[SOURCE_COLUMN],
                    train[TARGET_COLUMN],
                    joint=section.joint,
                    model=section.model,
                    vocab_size=section.vocab_size,
                    min_frequency=section.min_frequency,
                    normalization=section.normalization,
                    model_max_length=config.data.max_source_length,
                )
                save_tokenizers(source, target, saved)
        load_from = saved
    return load_tokenizers(load_from)


def save_tokenizers(source: PreTrainedTokenizerBase, target: PreTrainedTokenizerBase, folder: Path) -> None:
    """Source tokenizer at ``folder``; a separate target tokenizer (per-side vocabularies) in a subfolder."""
    source.save_pretrained(folder)
    if target is not source:
        target.save_pretrained(folder / TARGET_TOKENIZER_DIR)


def load_tokenizers(folder: Path) -> tuple[PreTrainedTokenizerBase, PreTrainedTokenizerBase]:
    if not (folder / "tokenizer_config.json").is_file():
        raise ConfigError(f"no saved tokenizer in {folder} (tokenizer_config.json missing)")
    source = AutoTokenizer.from_pretrained(str(folder))
    target_folder = folder / TARGET_TOKENIZER_DIR
    target = AutoTokenizer.from_pretrained(str(target_folder)) if target_folder.is_dir() else source
    for tokenizer in {id(source): source, id(target): target}.values():
        if tokenizer.pad_token_id is None or tokenizer.eos_token_id is None:
            raise ConfigError(f"the tokenizer in {folder} needs pad and eos tokens for translation training")
    if (source.pad_token_id, source.eos_token_id) != (target.pad_token_id, target.eos_token_id):
        raise ConfigError(f"source and target tokenizers in {folder} disagree on the pad/eos ids")
    return source, target


class SaveTargetTokenizer(TrainerCallback):
    """Per-side vocabularies: put the target tokenizer in every checkpoint, so a resume finds both."""

    def __init__(self, target_tokenizer: PreTrainedTokenizerBase):
        self.target_tokenizer = target_tokenizer

    def on_save(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            checkpoint = Path(args.output_dir) / f"checkpoint-{state.global_step}"
            self.target_tokenizer.save_pretrained(checkpoint / TARGET_TOKENIZER_DIR)


# -------------------------------------------------------------------------------------------------------- model
def resolve_model_type(name: str) -> tuple[type, dict[str, Any]]:
    """(config class, preset) of ``model.type``: a named architecture (``dbsa_enc_dec``) or a ``model_type``."""
    if name in ARCHITECTURES:
        config_class, preset = ARCHITECTURES[name]
        return config_class, dict(preset)
    if name in CONFIG_MAPPING:
        return CONFIG_MAPPING[name], {}
    close = difflib.get_close_matches(name, [*CONFIG_MAPPING, *ARCHITECTURES], n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise ConfigError(
        f"model.type = {name!r} is neither a registered model type nor a named architecture{hint}; the "
        f"architectures are {sorted(ARCHITECTURES)}"
    )


def build_model(config: TranslationRecipeConfig, source, target, feature_settings: dict[str, Any] | None = None):
    """A freshly initialised seq2seq model of ``model.type`` with ``model.kwargs``, sized to the tokenizers.

    ``feature_settings`` (parsers, label vocabularies) are stored in the config where the config has the field,
    so the exported model can featurize raw text at inference the way it was trained.
    """
    section = config.model
    config_class, preset = resolve_model_type(section.type)
    accepted = set(inspect.signature(config_class.__init__).parameters) | set(config_class().to_dict())
    for key in section.kwargs:
        if key not in accepted:
            close = difflib.get_close_matches(key, accepted, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ConfigError(f"unknown config key model.kwargs.{key}{hint}: {config_class.__name__} has no such setting")
    derived = {
        "vocab_size": len(source),
        "pad_token_id": target.pad_token_id,
        "eos_token_id": target.eos_token_id,
        "bos_token_id": target.bos_token_id,
        "decoder_start_token_id": target.bos_token_id if target.bos_token_id is not None else target.pad_token_id,
    }
    if source is not target:
        if section.kwargs.get("share_encoder_decoder_embeddings"):
            raise ConfigError("model.kwargs.share_encoder_decoder_embeddings needs one joint vocabulary (tokenizer.joint)")
        if "decoder_vocab_size" not in accepted:
            raise ConfigError(f"{config_class.__name__} has no decoder_vocab_size; use tokenizer.joint: true")
        derived.update(decoder_vocab_size=len(target), share_encoder_decoder_embeddings=False)
    derived.update({key: value for key, value in (feature_settings or {}).items() if key in accepted})
    for key, value in derived.items():
        if key in section.kwargs and section.kwargs[key] != value:
            raise ConfigError(
                f"model.kwargs.{key} = {section.kwargs[key]!r} contradicts the tokenizer or features section "
                f"({value!r}); drop it from model.kwargs"
            )
    kwargs = {**preset, **section.kwargs, **derived}
    if "label_smoothing" in accepted and config.training.get("label_smoothing_factor", 0) != 0:
        raise ConfigError(
            f"training.label_smoothing_factor must stay 0 for {section.type}: it smooths in its own loss; "
            "set model.kwargs.label_smoothing instead"
        )
    max_positions = kwargs.get("max_position_embeddings", getattr(config_class(), "max_position_embeddings", None))
    longest = max(config.data.max_source_length, config.data.max_target_length + 1)  # +1: decoder start token
    if max_positions is not None and longest > max_positions:
        raise ConfigError(
            f"data.max_source_length/max_target_length ({longest} positions with the decoder start) exceed "
            f"model.kwargs.max_position_embeddings = {max_positions}; lower the lengths or raise the positions"
        )
    model_config = config_class(**kwargs)
    try:
        model = AutoModelForSeq2SeqLM.from_config(model_config)
    except ValueError as error:
        raise ConfigError(f"model.type = {section.type!r} is not a sequence-to-sequence model: {error}") from error
    # max_length (not max_new_tokens): Seq2SeqTrainer fills in max_length=20 otherwise, and generate then warns.
    model.generation_config.update(
        num_beams=config.generation.num_beams,
        max_length=config.generation.max_new_tokens + 1,  # + the decoder start token
        max_new_tokens=None,
        length_penalty=config.generation.length_penalty,
        forced_eos_token_id=target.eos_token_id,
        **{key: value for key, value in derived.items() if key.endswith("token_id")},
    )
    return model


class ParseLossWarmupCallback(TrainerCallback):
    """Tells a DBSA model the optimizer step its lambda warm-up ramps with (`parse_loss_step`) at the start of every
    step. Any Trainer can take it; `SyntaxSeq2SeqTrainer` adds it itself. Why the step comes from the Trainer and
    is not counted by the model: see `SyntaxTransformerForConditionalGeneration`."""

    def on_step_begin(self, args, state, control, model=None, **kwargs):
        if model is not None and hasattr(model, "parse_loss_step"):
            model.parse_loss_step = state.global_step


class SyntaxSeq2SeqTrainer(Seq2SeqTrainer):
    """``Seq2SeqTrainer`` that logs the parts of a syntax model's loss next to ``loss``: ``translation_loss`` and the
    DBSA ``encoder_parse_loss`` / ``decoder_parse_loss``, averaged over the same training steps.

    For a model with parse heads it also logs ``grad_norm_translation`` and ``grad_norm_parse``: the gradient norms
    of the translation loss and of the lambda-weighted parse losses, before clipping, on the step the log line
    belongs to (as ``grad_norm``, which is their sum's norm). They are measured only on the steps that will be
    logged (``logging_strategy="steps"`` every ``logging_steps``, and the first step with ``logging_first_step``):
    two extra backward passes through the retained graph on those steps (about 1.9x such a step's time at the small
    CPU size: +2% of the run when logging every 50 steps; `benchmarks/dbsa_gradient_parts_overhead.py`), none on
    the others. With gradient accumulation the parts are summed over the step's micro-batches, scaled as the
    Trainer scales the loss. In a multi-process run each process measures its own batch (rank 0's is logged).
    """

    LOSS_PARTS = ("translation_loss", "encoder_parse_loss", "decoder_parse_loss")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.add_callback(ParseLossWarmupCallback)
        self._loss_part_sums: dict[str, float] = {}
        self._loss_part_counts: dict[str, int] = {}
        self._gradient_parts: dict[str, list[torch.Tensor | None]] = {}

    def compute_loss(self, model, inputs, return_outputs=False, **kwargs):
        loss, outputs = super().compute_loss(model, inputs, return_outputs=True, **kwargs)
        if model.training:
            for name in self.LOSS_PARTS:
                value = getattr(outputs, name, None) if not isinstance(outputs, dict) else outputs.get(name)
                if value is not None:
                    self._loss_part_sums[name] = self._loss_part_sums.get(name, 0.0) + float(value.detach())
                    self._loss_part_counts[name] = self._loss_part_counts.get(name, 0) + 1
            if self._step_will_be_logged():
                self._accumulate_gradient_parts(outputs)
        return (loss, outputs) if return_outputs else loss

    def _step_will_be_logged(self) -> bool:
        """The rule of transformers' `DefaultFlowCallback`, applied to the step being computed."""
        step = self.state.global_step + 1
        first = self.args.logging_first_step and step == 1
        every = self.args.logging_strategy == IntervalStrategy.STEPS and step % self.state.logging_steps == 0
        return first or every

    def _accumulate_gradient_parts(self, outputs) -> None:
        """Add this micro-batch's gradients of the translation loss and of the weighted parse losses."""
        encoder_parse = getattr(outputs, "encoder_parse_loss", None)
        decoder_parse = getattr(outputs, "decoder_parse_loss", None)
        if encoder_parse is None and decoder_parse is None:
            return
        weights = self.model.parse_loss_weights()
        parse = sum(weight * part for weight, part in zip(weights, (encoder_parse, decoder_parse)) if part is not None)
        parameters = [parameter for parameter in self.model.parameters() if parameter.requires_grad]
        scale = 1.0 / self.current_gradient_accumulation_steps
        for name, part in (("translation", outputs.translation_loss), ("parse", parse)):
            gradients = torch.autograd.grad(part * scale, parameters, retain_graph=True, allow_unused=True)
            summed = self._gradient_parts.get(name, [None] * len(parameters))
            self._gradient_parts[name] = [
                new if old is None else old if new is None else old + new for old, new in zip(summed, gradients)
            ]

    def log(self, logs, *args, **kwargs):
        if "loss" in logs and self._loss_part_counts:
            logs = {**logs, **{name: round(total / self._loss_part_counts[name], 4)
                               for name, total in self._loss_part_sums.items()}}
            self._loss_part_sums, self._loss_part_counts = {}, {}
        if "loss" in logs and self._gradient_parts:
            logs = {**logs, **{f"grad_norm_{name}": _norm(parts) for name, parts in self._gradient_parts.items()}}
            self._gradient_parts = {}
        super().log(logs, *args, **kwargs)

    def _issue_warnings_after_load(self, load_result) -> None:
        """Reloading a checkpoint (the best one at the end, or on resume) reports tied parameters as missing:
        ``save_pretrained`` stores a tied parameter once, under its source's name (``lm_head.weight`` is
        ``model.shared.weight``), and transformers 5's Trainer only excuses ``_keys_to_ignore_on_save``. Keys in the
        model's ``all_tied_weights_keys`` were loaded through their source, so they are tied again and not reported;
        any other missing key is still warned about."""
        tied = set(getattr(self.model, "all_tied_weights_keys", {}))
        missing = [key for key in load_result.missing_keys if key not in tied]
        if len(missing) < len(load_result.missing_keys):
            self.model.tie_weights()
        super()._issue_warnings_after_load(type(load_result)(missing, load_result.unexpected_keys))


def _norm(gradients: list[torch.Tensor | None]) -> float:
    """The 2-norm of a list of parameter gradients taken together (None: a parameter the loss does not reach)."""
    return float(torch.stack([gradient.float().norm() for gradient in gradients if gradient is not None]).norm())


def _collator(source_tokenizer: PreTrainedTokenizerBase, model) -> SyntaxSeq2SeqCollator:
    """Pads every feature column; a model other than ours (the Marian reference) gets its decoder inputs made here,
    because the Trainer's label smoother takes ``labels`` away before the forward."""
    is_ours = isinstance(model, SyntaxTransformerPreTrainedModel)
    return SyntaxSeq2SeqCollator(source_tokenizer, model=None if is_ours else model)


# ------------------------------------------------------------------------------------------------------ running
def check_checkpoint_folder(folder: Path) -> None:
    """Refuse to resume from a folder that lacks what an exact resume needs (names the missing files)."""
    if not folder.is_dir():
        raise ConfigError(f"resume_from_checkpoint: {folder} is not a folder")
    missing = [name for name in CHECKPOINT_FILES if not (folder / name).is_file()]
    if not any((folder / name).is_file() for name in CHECKPOINT_WEIGHTS):
        missing.append(" or ".join(CHECKPOINT_WEIGHTS))
    if not any(folder.glob("rng_state*.pth")):
        missing.append("rng_state.pth (random states: without them the resumed run is not exact)")
    if not (folder / "tokenizer_config.json").is_file():
        missing.append("tokenizer_config.json")
    if missing:
        raise ConfigError(
            f"checkpoint {folder} is incomplete, missing: {', '.join(missing)}; it was probably cut off while "
            "saving; resume from an earlier checkpoint-* folder or start again"
        )


def resolve_resume(resume_from_checkpoint: str | None, output_dir: str, overwrite: bool) -> Path | None:
    """``None``, a checkpoint folder, or ``"latest"`` (the newest ``checkpoint-*`` in output_dir).

    A fresh run into a folder with checkpoints is refused unless ``overwrite``: "latest" would later pick up
    the other run's newest checkpoint.
    """
    if resume_from_checkpoint is None:
        if not overwrite and Path(output_dir).is_dir() and get_last_checkpoint(output_dir) is not None:
            raise ConfigError(
                f"output_dir {output_dir} already holds checkpoints; continue that run with "
                "--resume_from_checkpoint latest, pick a new output_dir, or set overwrite_output_dir: true"
            )
        return None
    if resume_from_checkpoint == "latest":
        latest = get_last_checkpoint(output_dir) if Path(output_dir).is_dir() else None
        if latest is None:
            raise ConfigError(f"resume_from_checkpoint=latest: no checkpoint-* folder in {output_dir}")
        folder = Path(latest)
    else:
        folder = Path(resume_from_checkpoint).expanduser()
    check_checkpoint_folder(folder)
    return folder


def training_arguments(config: TranslationRecipeConfig) -> Seq2SeqTrainingArguments:
    """Seq2SeqTrainingArguments from the ``training`` section plus the recipe's fixed choices."""
    defaults = {
        "lr_scheduler_type": "inverse_sqrt",
        "eval_strategy": "steps",
        "save_strategy": "steps",
        "load_best_model_at_end": True,
        "report_to": "none",
        "save_total_limit": 3,
        "dataloader_pin_memory": torch.cuda.is_available(),
    }
    return Seq2SeqTrainingArguments(
        output_dir=config.output_dir,
        seed=config.seed,
        predict_with_generate=True,
        metric_for_best_model="bleu",
        greater_is_better=True,
        **{**defaults, **config.training},
    )


def best_validation_scores(trainer: Seq2SeqTrainer) -> dict[str, float]:
    """Validation scores of the model the trainer ended with: taken from the log when training already evaluated
    that checkpoint (saves a generation pass), computed otherwise."""
    evaluations = [entry for entry in trainer.state.log_history if "eval_bleu" in entry]
    best = trainer.state.best_metric
    if trainer.args.load_best_model_at_end and best is not None:
        chosen = next((entry for entry in evaluations if entry["eval_bleu"] == best), None)
    else:
        chosen = next((entry for entry in evaluations if entry["step"] == trainer.state.global_step), None)
    if chosen is None:
        return trainer.evaluate(metric_key_prefix="validation")
    return {f"validation_{key[len('eval_'):]}": value for key, value in chosen.items() if key.startswith("eval_")}


def whole_run_training_loss(log_history: list[dict], train_result, resume_dir: Path | None) -> dict[str, float]:
    """``train_loss`` (mean training loss per optimizer step) over the whole run, and ``train_loss_steps``, the steps
    it covers.

    The Trainer's ``training_loss`` averages only the steps this process ran; after a resume, the steps before the
    checkpoint come from its log history (a ``loss`` logged at step s is the mean since the previously logged step).
    Steps between the checkpoint's last log and the checkpoint itself (``save_steps`` not a multiple of
    ``logging_steps``) were never logged: ``train_loss_steps`` is then less than the run's steps.
    """
    resumed_at = json.loads((resume_dir / "trainer_state.json").read_text())["global_step"] if resume_dir else 0
    total, covered = 0.0, 0
    for entry in log_history:
        if "loss" in entry and covered < entry["step"] <= resumed_at:
            total += entry["loss"] * (entry["step"] - covered)
            covered = entry["step"]
    resumed_steps = train_result.global_step - resumed_at
    total += train_result.training_loss * resumed_steps
    covered += resumed_steps
    return {"train_loss": total / covered if covered else train_result.training_loss, "train_loss_steps": covered}


def _examples(dataset: datasets.Dataset, hypotheses: list[str], count: int) -> list[dict[str, str]]:
    return [
        {"source": source, "reference": reference, "hypothesis": hypothesis}
        for source, reference, hypothesis in zip(dataset[SOURCE_COLUMN][:count], dataset[TARGET_COLUMN][:count], hypotheses)
    ]


def train_translation(
    config: TranslationRecipeConfig, *, resume_from_checkpoint: str | None = None, callbacks: list | None = None
) -> dict[str, Any]:
    """Run the whole recipe; returns (and writes to ``<output_dir>/summary.json``) the final summary."""
    started = time.perf_counter()
    set_seed(config.seed)
    args = training_arguments(config)
    resume_dir = resolve_resume(resume_from_checkpoint, config.output_dir, config.overwrite_output_dir)
    preprocessed = reusable_preprocessed_features(config)
    check_feature_columns(config, preprocessed)
    keep = (*PREPROCESSED_COLUMNS, *preprocessed["features"]["features"]) if preprocessed else ()
    loaded, skipped = load_translation_data(config.data, keep_columns=keep)
    raw = loaded.select_columns([SOURCE_COLUMN, TARGET_COLUMN])
    source_tokenizer, target_tokenizer = prepare_tokenizers(
        config, raw["train"], args, resume_dir, dataset_tokenizer=preprocessed["tokenizer"] if preprocessed else None
    )
    with args.main_process_first(desc="tokenizing"):
        encoded, truncated = tokenize_translation_data(
            raw, source_tokenizer, target_tokenizer, config.data, encode_source=preprocessed is None
        )
        feature_settings: dict[str, Any] = {}
        if preprocessed is not None:
            encoded, feature_settings = attach_preprocessed_features(encoded, loaded, preprocessed, config.data)
        elif config.features is not None:
            encoded, feature_settings = add_syntax_features(
                encoded, source_tokenizer, target_tokenizer, config.features, config.data
            )
    model = build_model(config, source_tokenizer, target_tokenizer, feature_settings)
    scorer = GeneratedTranslationScorer(
        target_tokenizer, bleu_tokenize=config.evaluation.bleu_tokenize, lowercase=config.evaluation.lowercase
    )
    trainer = SyntaxSeq2SeqTrainer(
        model=model,
        args=args,
        train_dataset=encoded["train"],
        eval_dataset=encoded["validation"],
        processing_class=source_tokenizer,
        data_collator=_collator(source_tokenizer, model),
        compute_metrics=scorer,
        callbacks=[
            *(callbacks or []),
            *([SaveTargetTokenizer(target_tokenizer)] if target_tokenizer is not source_tokenizer else []),
        ],
    )
    train_result = trainer.train(resume_from_checkpoint=str(resume_dir) if resume_dir else None)
    train_seconds = time.perf_counter() - started

    final_split = "test" if "test" in encoded else "validation"
    prediction = trainer.predict(encoded[final_split], metric_key_prefix=final_split)
    results = {final_split: prediction.metrics}
    if final_split != "validation":
        results["validation"] = best_validation_scores(trainer)
    hypotheses = scorer.decode(np.asarray(prediction.predictions))
    examples = _examples(raw[final_split], hypotheses, config.evaluation.show_examples)

    model_dir = Path(config.output_dir) / FINAL_MODEL_DIR
    summary = {
        "model_type": config.model.type,
        "languages": f"{config.data.source_lang}->{config.data.target_lang}",
        "reported_split": final_split,
        "bleu": results[final_split][f"{final_split}_bleu"],
        "chrf": results[final_split][f"{final_split}_chrf"],
        "validation_bleu": results["validation"]["validation_bleu"],
        "validation_chrf": results["validation"]["validation_chrf"],
        "optimizer_steps": trainer.state.global_step,
        "epochs": trainer.state.epoch,
        **whole_run_training_loss(trainer.state.log_history, train_result, resume_dir),
        "best_checkpoint": trainer.state.best_model_checkpoint,
        "seconds": round(time.perf_counter() - started, 1),
        "train_seconds": round(train_seconds, 1),
        "parameters": sum(parameter.numel() for parameter in model.parameters()),
        "pairs": {split: len(dataset) for split, dataset in encoded.items()},
        "empty_pairs_skipped": skipped,
        "truncated": truncated,
        "model_dir": str(model_dir),
        # One line per sentence of the reported split, in corpus order (for sacrebleu --paired-bs and the like).
        "predictions_file": str(Path(config.output_dir) / f"predictions_{final_split}.txt"),
        "examples": examples,
    }
    if trainer.is_world_process_zero():
        Path(summary["predictions_file"]).write_text("".join(f"{line}\n" for line in hypotheses), encoding="utf-8")
        (Path(config.output_dir) / SUMMARY_FILE).write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
        save_model_folder(trainer.model, source_tokenizer, target_tokenizer, config, summary, model_dir)
        print_summary(summary)
        if config.push_to_hub:
            upload = hub_upload(config, model_dir)
            print(f"    uploading {upload['folder_path']} to {upload['repo_id']}")
            push_model_folder(upload)
    return summary


def save_model_folder(model, source_tokenizer, target_tokenizer, config: TranslationRecipeConfig,
                      summary: dict[str, Any], model_dir: Path) -> None:
    """Write the final model folder as ``hf-syntax export`` does: safetensors only, the code, the pipeline, the
    tokenizer(s) and a model card with this run's scores, so the folder the run prints (and ``push_to_hub``
    uploads) loads with ``pipeline("translation", model=folder, trust_remote_code=True)`` anywhere.

    A stock reference model (``model.type: marian``) has no hf_syntax code or card: it is saved with
    ``save_pretrained`` and its tokenizer(s).
    """
    from hf_syntax.hub.cards import mechanisms_of
    from hf_syntax.hub.export import export, results_from_summary

    if model_dir.exists():  # a resumed or repeated run replaces its own folder, leaving nothing stale
        shutil.rmtree(model_dir)
    if not isinstance(model, SyntaxTransformerPreTrainedModel):
        model.save_pretrained(model_dir)
        save_tokenizers(source_tokenizer, target_tokenizer, model_dir)
        return
    results, settings = results_from_summary(summary)
    data = config.data
    context = {
        "model_id": config.hub_model_id or Path(config.output_dir).name,
        "results": results,
        "training_settings": settings,
        "training_data": f"{summary['pairs'].get('train')} sentence pairs ({data.source_lang}->{data.target_lang}) "
                         f"from {describe_training_data(data)}.",
    }
    if data.source_lang != DataSection.source_lang:  # the placeholders "src"/"tgt" are not language codes
        context["source_language"] = data.source_lang
    if data.target_lang != DataSection.target_lang:
        context["target_language"] = data.target_lang
    mechanisms = mechanisms_of(model.config)
    if len(mechanisms) > 1:  # a custom mix: the card uses the first mechanism's template; say so
        context["variant"] = mechanisms[0]
        logger.warning("the model combines %s; its card describes %s only: edit %s", mechanisms, mechanisms[0],
                       model_dir / "README.md")
    separate = {"target_tokenizer": target_tokenizer} if target_tokenizer is not source_tokenizer else {}
    export(model, source_tokenizer, model_dir, context, **separate)


def describe_training_data(data: DataSection) -> str:
    """Where the training pairs came from, for the card."""
    if data.dataset is not None:
        return f"the saved dataset `{data.dataset}` (split `{data.train_split}`)"
    return f"`{data.train.source}` / `{data.train.target}`"


def hub_upload(config: TranslationRecipeConfig, model_dir: Path) -> dict[str, str]:
    """The arguments of ``huggingface_hub.upload_folder`` for ``push_to_hub``: the exported model folder only
    (never the checkpoints, logs or ``training_args.bin`` of the output_dir)."""
    return {"repo_id": config.hub_model_id, "folder_path": str(model_dir),
            "commit_message": f"hf-syntax {config.model.type}: trained model folder"}


def push_model_folder(upload: dict[str, str]) -> None:
    """Create the Hub repo if needed and upload the folder (needs a login: ``hf auth login``)."""
    from huggingface_hub import create_repo, upload_folder

    create_repo(upload["repo_id"], exist_ok=True)
    upload_folder(**upload)


def print_summary(summary: dict[str, Any]) -> None:
    """Human-readable end of a run: scores, cost, where the model is, a few translations."""
    split = summary["reported_split"]
    print(f"\n=== {summary['model_type']} {summary['languages']}: {split} BLEU {summary['bleu']:.2f} "
          f"chrF {summary['chrf']:.2f} ({summary['pairs'].get(split, 0)} sentences)")
    print(f"    {summary['optimizer_steps']} optimizer steps, {summary['epochs']:.2f} epochs, "
          f"{summary['train_seconds']:.0f} s training, {summary['seconds']:.0f} s total, "
          f"{summary['parameters'] / 1e6:.2f}M parameters")
    print(f"    skipped empty pairs {summary['empty_pairs_skipped']}, truncated {summary['truncated']}")
    print(f"    Hub-ready model folder: {summary['model_dir']}")
    for example in summary["examples"]:
        print(f"  SRC {example['source']}\n  REF {example['reference']}\n  HYP {example['hypothesis']}\n")


def main(argv: list[str] | None = None) -> int:
    """Command line: ``--config`` file, ``--set section.key=value`` overrides, resume and empty-line policy."""
    import argparse

    parser = argparse.ArgumentParser(description="Train a translation model with the hf-syntax recipe.")
    parser.add_argument("--config", required=True, help="YAML/JSON experiment config (see training/configs/)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="SECTION.KEY=VALUE",
                        help="override one config value, e.g. --set training.max_steps=200 (repeatable)")
    parser.add_argument("--output_dir", help="shortcut for --set output_dir=...")
    parser.add_argument("--resume_from_checkpoint", metavar="FOLDER|latest",
                        help="continue a run from a checkpoint-* folder, or the newest one in output_dir")
    parser.add_argument("--skip_empty", action="store_true",
                        help="drop (and count) pairs with an empty side instead of stopping with an error")
    parser.add_argument("--push_to_hub", action="store_true",
                        help="upload the exported model folder (<output_dir>/model) at the end (needs a login)")
    parser.add_argument("--hub_model_id", help="the Hub repo to upload to, e.g. me/dbsa-ja-en")
    parser.add_argument("--debug", action="store_true",
                        help="show the full traceback of an error instead of one 'error:' line")
    options = parser.parse_args(argv)
    overrides = list(options.overrides)
    if options.output_dir:
        overrides.append(f"output_dir={options.output_dir}")
    if options.skip_empty:
        overrides.append("data.skip_empty=true")
    if options.push_to_hub:
        overrides.append("push_to_hub=true")
    if options.hub_model_id:
        overrides.append(f"hub_model_id={options.hub_model_id}")
    try:
        config = load_recipe_config(options.config, overrides)
        train_translation(config, resume_from_checkpoint=options.resume_from_checkpoint)
    except (ConfigError, CorpusError, ParserNotAvailableError, TreeError, AlignmentError) as error:
        if options.debug:
            raise
        parser.exit(2, f"error: {error}\n")
    return 0
