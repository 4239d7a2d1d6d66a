"""The folder tree tells the story: the top level of ``hf_syntax/`` is exactly the portable set an exported model
folder carries (``hf_syntax.hub.portable``), those modules reach each other only by single-dot relative imports, and
the model core reaches nothing on the text side."""

import ast

from hf_syntax.hub.portable import PACKAGE_DIR, portable_modules, relative_imports

MODEL_CORE = ("attention", "layers", "stacks", "self_parse", "parse_losses", "parse_head_trees",
              "modeling_syntax_transformer", "modeling_bert_pos", "configuration_syntax_transformer",
              "configuration_bert_pos", "embeddings", "graph_transformer", "variants")
"""The modules that define and run the models: what loading a model needs."""
TEXT_SIDE = ("featurizer", "parsers", "align", "pipelines", "source_reading", "conllu")
"""Modules that read text: parsers, alignment of words to subwords, the pipelines."""


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


def test_the_model_core_imports_nothing_from_the_text_side():
    """Every import statement of the core, at module level or inside a function, and of everything it reaches: loading
    a model never pulls in a parser, the aligner or the pipelines (nor ``data/`` or ``recipes/``, which the test
    above already keeps out of the top level)."""
    reached, todo, imported_by = set(), list(MODEL_CORE), {}
    while todo:
        module = todo.pop()
        if module not in reached:
            reached.add(module)
            for imported in relative_imports(module):
                imported_by.setdefault(imported, module)
                todo.append(imported)
    assert set(MODEL_CORE) <= reached
    text_side = {module: imported_by[module] for module in reached & set(TEXT_SIDE)}
    assert not text_side, f"the model core reaches the text side (module: imported by): {text_side}"
    assert not any(other_hf_syntax_imports(module) for module in reached)


def test_fast_inference_loads_models_without_the_pipelines():
    """The backends give a model; the pipeline around it is built by ``serving.loading``. Both read the export
    folder's layout from ``folder_layout``."""
    for path in (PACKAGE_DIR / "fast_inference").glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
        imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        assert not {"pipelines", "hf_syntax.pipelines"} & imported, f"fast_inference/{path.name} imports the pipelines"


def test_the_recipes_and_tools_use_the_models_own_api():
    """Training, export and serving ask the model (``read_source_tokenizer``, ``config.needs_source_features``)
    rather than reaching into its encoder or self-parser."""
    for package in ("recipes", "cli", "hub", "serving", "data"):
        for path in (PACKAGE_DIR / package).rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            assert "get_encoder()." not in text and ".self_parser" not in text, f"{path} reaches into the encoder"


def test_the_demos_time_and_score_read_the_same_in_every_doc():
    """README, training/README.md, demo.sh and the demo's config state one time, one install time and the score the
    recorded demo run (benchmarks/results/demo_ja_en/summary.json) printed."""
    import json
    import re

    root = PACKAGE_DIR.parent
    lines = [line for name in ("README.md", "training/README.md", "benchmarks/results/README.md") for line in
             (root / name).read_text(encoding="utf-8").splitlines() if "demo" in line]
    for name in ("scripts/demo.sh", "training/configs/demo_ja_en.yaml"):
        lines += (root / name).read_text(encoding="utf-8").splitlines()
    minutes = {found for line in lines for found in re.findall(r"(\d+(?:\.\d+)?) ?min", line)}
    scores = {found for line in lines for found in re.findall(r"BLEU (\d+\.\d+)", line)}
    recorded = json.loads((root / "benchmarks/results/demo_ja_en/summary.json").read_text(encoding="utf-8"))["bleu"]
    assert minutes == {"6.5", "3"}, minutes  # "about 6.5 minutes once installed", "the install adds about 3 minutes"
    assert scores == {f"{recorded:.2f}"}, (scores, recorded)
