"""The ``hf-syntax`` console script: ``--help`` and argument errors answer in about a second.

It lives outside ``hf_syntax`` because importing any module of that package first runs ``hf_syntax/__init__.py``,
which imports torch and transformers to register the models with the Auto classes (seconds, ~11 on a 2-core
machine). Here the argument parser is built from ``hf_syntax.cli`` under the package's module object before its
``__init__`` has run (the command modules import their heavy dependencies inside the commands); the package proper
is loaded only once the arguments parsed, right before the command runs. ``python -m hf_syntax.cli`` and
``hf_syntax.cli.main`` behave the same, with the package loaded from the start.
"""

from __future__ import annotations

import importlib.util
import sys


def main(argv: list[str] | None = None) -> int:
    if "hf_syntax" in sys.modules:  # already imported (a program that calls this after import hf_syntax)
        from hf_syntax.cli.commands import main as run_command

        return run_command(argv)
    spec = importlib.util.find_spec("hf_syntax")
    package = importlib.util.module_from_spec(spec)
    sys.modules["hf_syntax"] = package  # submodules import under it; its __init__ waits until a command runs
    from hf_syntax.cli.commands import build_parser, main as run_command

    build_parser().parse_args(argv)  # --help and argument errors end here, before torch is imported
    spec.loader.exec_module(package)  # now the real hf_syntax: models registered with transformers
    return run_command(argv)
