"""``hf-syntax average``: one model from the parameter mean of several checkpoints of one run."""

from __future__ import annotations

from hf_syntax.cli.common import described


def command_average(options) -> None:
    """Average the weights of saved checkpoints of one model (``checkpoint-*`` folders of a run, or exported model
    folders) into ``--output``: every floating-point parameter and buffer is the mean over the checkpoints; other
    tensors, the tokenizer, generation config and code are those of the last checkpoint named, so the folder
    translates, evaluates and exports like any model folder. Checkpoints of different architectures, configs or
    vocabularies are refused, and so is a folder named twice.
    Example: hf-syntax average runs/x/checkpoint-{5474,6256} --output runs/x/averaged"""
    from pathlib import Path

    from hf_syntax.recipes.checkpoint_averaging import average_checkpoints

    folders = [Path(folder) for folder in options.checkpoints]
    written = average_checkpoints(folders, Path(options.output))
    print(f"averaged {len(folders)} checkpoint(s) into {written}")


def add_commands(commands) -> None:
    """Register ``average``."""
    average = commands.add_parser("average", help="average the weights of several checkpoints of one model",
                                  description=described(command_average))
    average.add_argument("checkpoints", nargs="+", metavar="CHECKPOINT",
                         help="checkpoint-* folders of one run (or saved model folders of one model)")
    average.add_argument("--output", required=True, help="new (or empty) folder for the averaged model")
    average.set_defaults(run=command_average)
