"""The folder tree tells the story: the top level of ``hf_syntax/`` is exactly the set of modules an exported
model folder carries (what ``save_pretrained`` copies by following single-dot relative imports), and they reach
each other only that way."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "hf_syntax"
EXPORTED_ENTRY_MODULES = ("variants", "modeling_bert_pos", "pipelines", "tree_views")
"""Modules of the classes an exported folder names in ``auto_map`` / ``custom_pipelines``, and the tree views
``export`` copies for the demos."""


def imported_modules(module: str) -> tuple[set[str], set[str]]:
    """(sibling modules imported with ``from .x import``, other hf_syntax modules imported absolutely or ``..``)."""
    tree = ast.parse((PACKAGE / f"{module}.py").read_text(encoding="utf-8"))
    siblings, others = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1 and node.module:
                siblings.add(node.module.split(".")[0])
            elif node.level > 1 or (node.module or "").startswith("hf_syntax"):
                others.add("." * node.level + (node.module or ""))
        elif isinstance(node, ast.Import):
            others.update(alias.name for alias in node.names if alias.name.startswith("hf_syntax"))
    return siblings, others


def test_top_level_is_exactly_what_an_exported_folder_carries():
    top_level = {path.stem for path in PACKAGE.glob("*.py")} - {"__init__"}
    carried, todo = set(), list(EXPORTED_ENTRY_MODULES)
    while todo:
        module = todo.pop()
        if module not in carried:
            carried.add(module)
            todo.extend(imported_modules(module)[0])
    assert carried == top_level, (
        f"modules that do not travel to the Hub belong in a sub-package: {sorted(top_level - carried)}; "
        f"carried but missing: {sorted(carried - top_level)}"
    )


def test_top_level_modules_import_each_other_only_relatively():
    for path in PACKAGE.glob("*.py"):
        if path.stem != "__init__":
            assert not imported_modules(path.stem)[1], f"{path.name} imports hf_syntax absolutely or from a parent"


def test_the_demos_time_and_score_read_the_same_in_every_doc():
    """README, training/README.md, demo.sh and the demo's config state one time and one score for the demo."""
    import re

    root = PACKAGE.parent
    lines = [line for name in ("README.md", "training/README.md") for line in
             (root / name).read_text(encoding="utf-8").splitlines() if "demo.sh" in line or "demo_ja_en" in line]
    for name in ("scripts/demo.sh", "training/configs/demo_ja_en.yaml"):
        lines += (root / name).read_text(encoding="utf-8").splitlines()
    minutes = {found for line in lines for found in re.findall(r"(\d+(?:\.\d+)?) ?min", line)}
    scores = {found for line in lines for found in re.findall(r"BLEU (\d+\.\d+)", line)}
    assert minutes == {"6.5", "6"} and scores == {"11.27"}, (minutes, scores)  # "about 6.5 min", "6 min 24 s"
