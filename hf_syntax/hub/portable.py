"""Which modules of ``hf_syntax`` travel with an exported model: the one definition of the portable set.

The rule: the classes an exported folder names (``auto_map``, ``custom_pipelines``) and the tree views a demo loads
live in ``ENTRY_MODULES``; everything they reach through single-dot relative imports (``from .x import y``) is
portable, and that set is exactly the top level of the package (``tests/test_package_layout.py`` holds it to that).
``save_pretrained`` copies what the model classes reach; the exporter copies the rest of the set.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parents[1]
ENTRY_MODULES = ("variants", "modeling_bert_pos", "pipelines", "tree_views")
"""Modules of the classes an exported folder names in ``auto_map`` / ``custom_pipelines``, and the tree views the
demos draw with."""


def relative_imports(module: str) -> set[str]:
    """The sibling modules ``module`` imports with ``from .x import ...`` (anywhere in the file)."""
    tree = ast.parse((PACKAGE_DIR / f"{module}.py").read_text(encoding="utf-8"))
    return {node.module.split(".")[0] for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module}


def portable_modules() -> tuple[str, ...]:
    """Every module the entry modules reach by single-dot relative imports, sorted by name."""
    reached, todo = set(), list(ENTRY_MODULES)
    while todo:
        module = todo.pop()
        if module not in reached:
            reached.add(module)
            todo.extend(relative_imports(module))
    return tuple(sorted(reached))


def portable_files() -> tuple[str, ...]:
    """The file names of ``portable_modules()`` (what an exported folder carries as code)."""
    return tuple(f"{module}.py" for module in portable_modules())


__all__ = ["ENTRY_MODULES", "PACKAGE_DIR", "portable_files", "portable_modules", "relative_imports"]
