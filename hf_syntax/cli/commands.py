"""``hf-syntax``: one command line for the whole path, corpus -> features -> model -> scores -> Hub folder.

    hf-syntax preprocess --source train.ja --target train.en --tokenizer runs/x/tokenizer --src-parser spacy:ja_ginza --out data/ja-en
    hf-syntax train --config training/configs/demo_ja_en.yaml
    hf-syntax average runs/x/checkpoint-5474 runs/x/checkpoint-6256 --output runs/x/averaged
    hf-syntax evaluate --model runs/x/model --source dev.ja --reference dev.en
    hf-syntax translate --model runs/x/model < input.txt > output.txt
    hf-syntax parse --model runs/x/model < input.txt > trees.conllu      # then, where no parser is installed:
    hf-syntax translate --model runs/x/model --source-trees trees.conllu < input.txt > output.txt
    hf-syntax export runs/x/model exported/x --model-id me/x --source-lang ja --target-lang en --space spaces/x
    hf-syntax export runs/x/model exported/x-ct2 --format ctranslate2 --quantization int8
    hf-syntax plot-attention --model runs/x/model --text "..." --out attention.png
    hf-syntax show --model runs/x/model --source dev.ja --max-sentences 3
    hf-syntax study benchmarks/studies/enja_converged.yaml --seeds 42 43 --jobs 2   # several models over seeds

Every subcommand has ``--help``. Models are used through the same pipelines an exported folder carries, so what the
command line translates is what ``pipeline(model=folder, trust_remote_code=True)`` translates. Each command group is
a module with its ``command_*`` functions and an ``add_commands`` that registers them: ``preprocess``, ``train``,
``average``, ``translate`` (evaluate, translate), ``parse``, ``export``, ``analysis`` (show, plot-attention), ``study``;
``common`` holds what they share. This module assembles them and turns user errors into one ``error:`` line.
"""

from __future__ import annotations

import argparse

from hf_syntax.cli import analysis, average, export, parse, preprocess, study, train, translate
from hf_syntax.cli.common import CliError

COMMAND_GROUPS = (preprocess, train, average, translate, parse, export, analysis, study)
"""Modules whose ``add_commands`` register the subcommands, in the order ``--help`` lists them."""


def user_errors() -> tuple[type[Exception], ...]:
    """Errors that come from what the user gave (files, options, parsers, configs), each with a message that says
    what to fix: ``main`` prints them as one ``error:`` line (``--debug`` shows the traceback instead)."""
    from hf_syntax.align import AlignmentError
    from hf_syntax.hub.cards import CardError
    from hf_syntax.data.corpus import CorpusError
    from hf_syntax.text_checks import InvalidTextError, TextTooLongError
    from hf_syntax.hub.export import ExportError
    from hf_syntax.hub.model_folder import ModelFolderError
    from hf_syntax.parsers import ParserNotAvailableError, ParserSpecError, TreeNotFoundError
    from hf_syntax.pipelines import EmptyInputError
    from hf_syntax.recipes.checkpoint_averaging import CheckpointAveragingError
    from hf_syntax.recipes.config import ConfigError
    from hf_syntax.saved_files import DamagedFileError
    from hf_syntax.trees import TreeError

    return (CliError, AlignmentError, CardError, CheckpointAveragingError, ConfigError, CorpusError, DamagedFileError,
            EmptyInputError, ExportError, FileNotFoundError, InvalidTextError, ModelFolderError,
            ParserNotAvailableError, ParserSpecError, TextTooLongError, TreeError, TreeNotFoundError)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hf-syntax",
        description="Syntax-aware Transformers: preprocess, train, average, evaluate, translate, parse, export, show, "
                    "plot-attention, study."
    )
    parser.add_argument("--debug", action="store_true",
                        help="show the full traceback of an error instead of one 'error:' line")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for group in COMMAND_GROUPS:
        group.add_commands(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    options = parser.parse_args(argv)
    try:
        options.run(options)
    except user_errors() as error:
        if options.debug:
            raise
        parser.exit(2, f"error: {error}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
