"""The ``hf-syntax`` command line (``hf_syntax.cli:main``); the subcommands live in ``commands.py``."""

from hf_syntax.cli.commands import build_parser, main

__all__ = ["build_parser", "main"]
