"""The folder tree tells the story: the top level of ``hf_syntax/`` is exactly the portable set an exported model
folder carries (``hf_syntax.hub.portable``), and those modules reach each other only by single-dot relative imports."""

import ast

from hf_syntax.hub.portable import PACKAGE_DIR, portable_modules


def other_hf_syntax_imports(module: str) -> set[str]:
    """hf_syntax modules ``module`` imports absolutely or from a parent (``..``)."""
    tree = ast.parse((PACKAGE_DIR / f"{module}.py").read_text(encoding="utf-8"))
    others = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level > 1 or (node.level == 0 and (node.module or "").startswith("hf_syntax")):
                others.add("." * node.level + (node.module or ""))
        elif isinstance(node, ast.Import):
            others.update(alias.name for alias in node.names if alias.name.startswith("hf_syntax"))
    return others


def test_top_level_is_exactly_what_an_exported_folder_carries():
    top_level = {path.stem for path in PACKAGE_DIR.glob("*.py")} - {"__init__"}
    carried = set(portable_modules())
    assert carried == top_level, (
        f"modules that do not travel to the Hub belong in a sub-package: {sorted(top_level - carried)}; "
        f"carried but missing: {sorted(carried - top_level)}"
    )


def test_top_level_modules_import_each_other_only_relatively():
    for path in PACKAGE_DIR.glob("*.py"):
        if path.stem != "__init__":
            assert not other_hf_syntax_imports(path.stem), f"{path.name} imports hf_syntax absolutely or from a parent"


def test_the_demos_time_and_score_read_the_same_in_every_doc():
    """README, training/README.md, demo.sh and the demo's config state one time and one score for the demo."""
    import re

    root = PACKAGE_DIR.parent
    lines = [line for name in ("README.md", "training/README.md") for line in
             (root / name).read_text(encoding="utf-8").splitlines() if "demo.sh" in line or "demo_ja_en" in line]
    for name in ("scripts/demo.sh", "training/configs/demo_ja_en.yaml"):
        lines += (root / name).read_text(encoding="utf-8").splitlines()
    minutes = {found for line in lines for found in re.findall(r"(\d+(?:\.\d+)?) ?min", line)}
    scores = {found for line in lines for found in re.findall(r"BLEU (\d+\.\d+)", line)}
    assert minutes == {"6.5", "6"} and scores == {"11.27"}, (minutes, scores)  # "about 6.5 min", "6 min 24 s"
