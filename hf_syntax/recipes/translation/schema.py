"""The translation experiment's config schema: one YAML file's sections as dataclasses, checked before anything runs.

``load_recipe_config`` reads a file through the strict machinery of ``hf_syntax.recipes.config`` (unknown keys and
wrong types are errors naming the key), then ``validate_recipe_config`` checks what types cannot express.
"""

from __future__ import annotations

import difflib
import inspect
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from huggingface_hub.errors import StrictDataclassError
from transformers import Seq2SeqTrainingArguments
from transformers.models.auto.configuration_auto import CONFIG_MAPPING
from transformers.models.auto.modeling_auto import MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING

from hf_syntax.data.corpus import SOURCE_COLUMN, TARGET_COLUMN
from hf_syntax.data.tokenizer import NORMALIZATIONS, SPECIAL_TOKENS, TOKENIZER_MODELS
from hf_syntax.metrics.bleu_tokenizers import check_bleu_tokenizer
from hf_syntax.recipes.config import (
    ConfigError, check_arguments, check_choice, check_finite, check_recipe, check_training_values, load_config,
    recipe_of,
)
from hf_syntax.variants import ARCHITECTURES

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
    "resume_from_checkpoint": "pass --resume-from-checkpoint (a folder or 'latest') on the command line",
    "push_to_hub": "set the top-level push_to_hub (--push-to-hub): the recipe uploads its exported model folder, "
                   "not the Trainer's output_dir",
    "hub_model_id": "set the top-level hub_model_id (--hub-model-id)",
    "hub_strategy": "the recipe uploads the exported model folder once, at the end of the run",
    # read by no Trainer (scripts consult them), so setting them changed nothing:
    "do_train": "the recipe always trains", "do_eval": "the recipe evaluates on the eval_strategy schedule",
    "do_predict": "the recipe predicts the test split (else validation) at the end",
    "sortish_sampler": "transformers' Seq2SeqTrainer no longer reads it; the recipe orders evaluation batches itself",
}
AVERAGING_OPTION = "average_last_checkpoints"
"""The ``training`` key that is the recipe's own rather than a Seq2SeqTrainingArguments field: the final model is the
mean of the run's last N states (``hf_syntax.recipes.checkpoint_averaging``); 1, the default, keeps the last or, with
load_best_model_at_end, the best checkpoint."""


@dataclass
class ParallelFiles:
    """One split as two line-aligned files (plain or .gz); ``sample_data:`` paths point into the package."""

    source: str
    target: str
    split: str | None = None
    """What these lines are at their source when that differs from their role here, as the summary and the model
    card report it: a test file cut from the upstream dev split is e.g. "dev (lines 101-200)"."""


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
    recipe: str = "translation"  # the key `hf-syntax train` picks the recipe by
    seed: int = 42
    overwrite_output_dir: bool = False  # allow a fresh run into a folder that holds checkpoints of another run
    push_to_hub: bool = False  # upload <output_dir>/model (the exported folder) to hub_model_id at the end
    hub_model_id: str | None = None
    # stop after this many evaluations without a better validation BLEU (transformers' EarlyStoppingCallback); the
    # best checkpoint is still the one loaded at the end. null trains for the whole schedule.
    early_stopping_patience: int | None = None
    tokenizer: TokenizerSection = field(default_factory=TokenizerSection)
    model: ModelSection = field(default_factory=ModelSection)
    features: dict | None = None
    training: dict = field(default_factory=dict)
    generation: GenerationSection = field(default_factory=GenerationSection)
    evaluation: EvaluationSection = field(default_factory=EvaluationSection)


def load_recipe_config(path: str | Path, overrides: list[str] = ()) -> TranslationRecipeConfig:
    """Read, override (``section.key=value``) and validate a translation experiment config."""
    check_recipe(recipe_of(path), "translation")
    config = load_config(TranslationRecipeConfig, path, overrides)
    validate_recipe_config(config)
    return config


def validate_recipe_config(config: TranslationRecipeConfig) -> None:
    """Value checks that types alone cannot express (each error names its key)."""
    check_recipe(config.recipe, "translation")
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
    for key in ("max_train_pairs", "max_eval_pairs"):  # 0 or less kept one pair: the first read is kept unchecked
        if getattr(data, key) is not None and getattr(data, key) < 1:
            raise ConfigError(f"data.{key} must be >= 1 (or null for every pair), got {getattr(data, key)}")
    if config.tokenizer.vocab_size <= len(SPECIAL_TOKENS):
        raise ConfigError(f"tokenizer.vocab_size = {config.tokenizer.vocab_size} leaves no room next to the "
                          f"{len(SPECIAL_TOKENS)} special tokens; give more, e.g. tokenizer.vocab_size=8000")
    if config.tokenizer.min_frequency < 1:
        raise ConfigError(f"tokenizer.min_frequency must be >= 1 (a pair seen that often is merged), got "
                          f"{config.tokenizer.min_frequency}")
    for key in ("max_source_length", "max_target_length"):
        if getattr(data, key) < 2:
            raise ConfigError(f"data.{key} must be >= 2 (one token plus </s>), got {getattr(data, key)}")
    check_model_section(config)
    if config.features is not None:  # an unknown key was refused only after the tokenizer trained
        from hf_syntax.recipes.translation.features import check_feature_keys

        check_feature_keys(config.features)
    for key in config.training:
        if key in RECIPE_OWNED_ARGUMENTS:
            raise ConfigError(f"training.{key} is set by the recipe: {RECIPE_OWNED_ARGUMENTS[key]}")
    averaging = config.training.pop(AVERAGING_OPTION, 1)
    config.training = check_arguments(config.training, Seq2SeqTrainingArguments, "training", (AVERAGING_OPTION,))
    check_averaging(averaging, config)
    config.training[AVERAGING_OPTION] = averaging
    limit = config.training.get("save_total_limit")
    if limit is not None and limit < 1:  # 0 and -1 kept every checkpoint, as null does
        raise ConfigError(f"training.save_total_limit must be >= 1 (or null to keep every checkpoint), got {limit}")
    max_steps = config.training.get("max_steps", -1)
    if max_steps != -1 and max_steps < 1:  # transformers would quietly train the epoch schedule instead
        raise ConfigError(f"training.max_steps must be >= 1 (or -1, the default: train num_train_epochs), got "
                          f"{max_steps}")
    if config.push_to_hub and not config.hub_model_id:
        raise ConfigError("push_to_hub needs hub_model_id, the Hub repo to upload to (e.g. --hub-model-id "
                          "me/dbsa-ja-en)")
    if config.early_stopping_patience is not None and config.early_stopping_patience < 1:
        raise ConfigError(f"early_stopping_patience must be >= 1 evaluations (or null to train the whole schedule), "
                          f"got {config.early_stopping_patience}")
    if config.generation.num_beams < 1 or config.generation.max_new_tokens < 1:
        raise ConfigError("generation.num_beams and generation.max_new_tokens must be >= 1")
    check_finite("generation.length_penalty", config.generation.length_penalty, "1.0")  # NaN scored every beam NaN
    if config.evaluation.show_examples < 0:  # -2 kept all but the last two, by Python's slicing
        raise ConfigError(f"evaluation.show_examples must be >= 0 (how many translations the summary shows), got "
                          f"{config.evaluation.show_examples}")
    try:
        check_bleu_tokenizer(config.evaluation.bleu_tokenize)
    except ValueError as error:
        raise ConfigError(f"evaluation.bleu_tokenize: {error}") from None
    check_training_values(config.training)
    check_best_checkpoint_saving(training_values(config))


def training_values(config: TranslationRecipeConfig) -> dict[str, Any]:
    """The ``training`` section as the Trainer gets it: the recipe's defaults (evaluate and save every
    ``eval_steps``, load the best checkpoint at the end; averaging the last N keeps N and loads none) under the
    config's own values."""
    training = dict(config.training)
    averaging = training.pop(AVERAGING_OPTION, 1)
    defaults = {"lr_scheduler_type": "inverse_sqrt", "eval_strategy": "steps", "save_strategy": "steps",
                "load_best_model_at_end": True, "report_to": "none", "save_total_limit": 3}
    if averaging > 1:
        defaults.update(load_best_model_at_end=False, save_total_limit=averaging)
    return {**defaults, **training}


def check_best_checkpoint_saving(values: dict[str, Any]) -> None:
    """Loading the best checkpoint at the end needs one saved at every evaluation; TrainingArguments refused
    anything else with a traceback when the run started (in a study, when that run's turn came)."""
    if not values.get("load_best_model_at_end"):
        return
    evaluation, saving = (str(getattr(values[key], "value", values[key])) for key in ("eval_strategy", "save_strategy"))
    fix = ("or set training.average_last_checkpoints to average the last checkpoints instead of choosing one "
           "(or training.load_best_model_at_end=false to keep the last)")
    if evaluation != saving:
        raise ConfigError(f"training.load_best_model_at_end loads the best evaluated checkpoint, so "
                          f"training.save_strategy ({saving!r}) must be training.eval_strategy ({evaluation!r}): "
                          f"set both alike, {fix}")
    save_steps, eval_steps = values.get("save_steps", 500), values.get("eval_steps") or values.get("logging_steps", 500)
    if evaluation == "steps" and save_steps >= 1 and eval_steps >= 1 and save_steps % eval_steps:
        raise ConfigError(f"training.load_best_model_at_end loads the best evaluated checkpoint, so "
                          f"training.save_steps ({save_steps}) must be a multiple of training.eval_steps "
                          f"({eval_steps}): a checkpoint at every evaluation, {fix}")


def check_averaging(count: Any, config: TranslationRecipeConfig, steps_per_epoch: int | None = None) -> None:
    """Averaging needs its checkpoints kept and excludes choosing one on dev. ``steps_per_epoch`` (known once the
    data is read, before training) counts the saves that depend on it."""
    key = f"training.{AVERAGING_OPTION}"
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ConfigError(f"{key} must be a whole number >= 1 (1 keeps the final model as it is), got {count!r}")
    if count == 1:
        return
    if config.training.get("load_best_model_at_end"):
        raise ConfigError(f"{key}={count} averages the last checkpoints and chooses none on dev; it excludes "
                          f"training.load_best_model_at_end=true: leave that unset or false")
    if config.early_stopping_patience is not None:
        raise ConfigError(f"{key}={count} averages the last checkpoints and chooses none on dev; it excludes "
                          f"early_stopping_patience (set it to null)")
    limit = config.training.get("save_total_limit", count)
    if limit is not None and limit < count:
        raise ConfigError(f"training.save_total_limit={limit} keeps fewer checkpoints than {key}={count} averages: "
                          f"set it to at least {count}, or null to keep all")
    saves = saves_before_the_end(config.training, steps_per_epoch)
    if saves is not None and saves < count - 1:
        raise ConfigError(f"{key}={count} averages the final weights with the {count - 1} checkpoint(s) saved before "
                          f"the final step, but the run saves {saves} before it; save more often (training.save_steps "
                          f"or save_strategy: epoch) or average fewer")


def saves_before_the_end(training: dict[str, Any], steps_per_epoch: int | None = None) -> int | None:
    """How many checkpoints a run saves before its final step, where the config (and, once the data is read,
    ``steps_per_epoch``) tells; ``None`` where it does not yet. Counted before training so that averaging too many
    is refused then, not after the whole run."""
    strategy = str(getattr(training.get("save_strategy"), "value", training.get("save_strategy", "steps")))
    max_steps, save_steps = training.get("max_steps", -1), training.get("save_steps", 500)
    epochs = training.get("num_train_epochs", 3)
    if strategy == "no":
        return 0
    if strategy == "epoch" and max_steps <= 0:
        return math.ceil(epochs) - 1
    if max_steps <= 0:  # the run's steps come from its epochs and the data's size
        if steps_per_epoch is None:
            return None
        max_steps = math.ceil(epochs * steps_per_epoch)
    if strategy == "epoch":
        return None if steps_per_epoch is None else (max_steps - 1) // steps_per_epoch
    if strategy == "steps" and save_steps >= 1:  # below 1: a fraction of the total steps
        return (max_steps - 1) // int(save_steps)
    return None


def check_model_section(config: TranslationRecipeConfig) -> None:
    """Build the model's config from ``model.type`` and ``model.kwargs`` now, so that a setting it cannot hold (an
    unknown key, fewer layers than its parse layers, positions shorter than the data's lengths) is refused in one
    line before any data is read (the vocabulary and special ids are filled in later, from the tokenizer)."""
    section = config.model
    config_class, preset = resolve_model_type(section.type)
    if config_class not in MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING:  # was refused only after the tokenizer trained
        raise ConfigError(f"model.type = {section.type!r} is not a sequence-to-sequence model, which the translation "
                          f"recipe trains; the architectures are {sorted(ARCHITECTURES)} (or 'marian')")
    accepted = set(inspect.signature(config_class.__init__).parameters) | set(config_class().to_dict())
    for key in section.kwargs:
        if key not in accepted:
            close = difflib.get_close_matches(key, accepted, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ConfigError(f"unknown config key model.kwargs.{key}{hint}: {config_class.__name__} has no such setting")
    try:
        model_config = config_class(**{**preset, **section.kwargs})
    except (StrictDataclassError, TypeError, ValueError) as error:
        reason = str(error.__cause__ or error).rstrip(".")  # huggingface_hub wraps the config's check in more text
        raise ConfigError(f"model.type={section.type!r} with model.kwargs {section.kwargs}: {reason}; change the "
                          f"model.kwargs key it names") from None
    if "label_smoothing" in accepted and config.training.get("label_smoothing_factor", 0) != 0:
        raise ConfigError(
            f"training.label_smoothing_factor must stay 0 for {section.type}: it smooths in its own loss; "
            "set model.kwargs.label_smoothing instead"
        )
    longest = max(config.data.max_source_length, config.data.max_target_length + 1)  # +1: decoder start token
    max_positions = getattr(model_config, "max_position_embeddings", None)
    if max_positions is not None and longest > max_positions:
        raise ConfigError(
            f"data.max_source_length/max_target_length ({longest} positions with the decoder start) exceed "
            f"model.kwargs.max_position_embeddings = {max_positions}; lower the lengths or raise the positions"
        )


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
