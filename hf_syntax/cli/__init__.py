"""The ``hf-syntax`` command line (``hf_syntax.cli:main``): one module per command group, assembled by
``commands.py``."""

from hf_syntax.cli.commands import build_parser, main

__all__ = ["build_parser", "main"]
