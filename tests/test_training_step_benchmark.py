"""benchmarks/speed/training_step.py: every row builds the model it names, and a run writes one entry per row and
length, set against the baseline (and against the row a row names besides)."""

import importlib.util
import json
import sys
from pathlib import Path

import pytest
from transformers import MarianMTModel

from hf_syntax.variants import ARCHITECTURES

SPEED = Path(__file__).resolve().parents[1] / "benchmarks" / "speed"


def load_tool():
    if str(SPEED) not in sys.path:  # as when run by path: its sibling timing.py is importable
        sys.path.insert(0, str(SPEED))
    spec = importlib.util.spec_from_file_location("training_step", SPEED / "training_step.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["training_step"] = module  # its dataclass looks its module up by name
    spec.loader.exec_module(module)
    return module


def test_every_row_builds_the_model_it_names():
    tool = load_tool()
    for name, row in tool.ROWS.items():
        model = tool.build_model(row)
        config = model.config
        if row.architecture == "marian":
            assert type(model) is MarianMTModel
            continue
        assert config.model_type == ARCHITECTURES[row.architecture][0].model_type, name
        assert config.d_model == tool.SMALL_CPU_SIZE["d_model"], name
        if config.model_type == "dbsa":
            assert (config.parse_layer_encoder, config.parse_layer_decoder) == (2, 2), name
    assert not tool.build_model(tool.ROWS["baseline_separate_tables"]).config.share_encoder_decoder_embeddings


def test_a_run_writes_one_entry_per_row_and_length(tmp_path, capsys):
    tool = load_tool()
    output = tmp_path / "steps.json"
    assert tool.main(["--rows", "syntax_infused", "baseline_separate_tables", "--lengths", "8", "12", "--repeats", "1",
                      "--threads", "1", "--output", str(output)]) == 0
    report = json.loads(output.read_text())
    assert report["clock"] == "cpu" and set(report["parameters"]) == {"baseline", "syntax_infused",
                                                                      "baseline_separate_tables"}
    for length in (8, 12):
        entry = report[f"train_step_{length}_syntax_infused"]
        assert entry["ratio"] == entry["variant_s"] / entry["baseline_s"] and entry["target"] == 1.05
        assert entry["ratio_vs_baseline_separate_tables"] > 0 and entry["wall_ratio"] > 0
        assert report[f"train_step_{length}_baseline_separate_tables"]["target"] is None
    assert "training step, 32 x  12 tokens: syntax_infused/baseline cpu time" in capsys.readouterr().out


def test_counts_below_one_are_refused_before_any_timing(capsys):
    """--repeats 0 failed after the models were built and warmed up (a median of no times); a count below 1 is
    refused by argparse now, as in every benchmark and analysis script."""
    tool = load_tool()
    for flags in (["--repeats", "0"], ["--threads", "0"], ["--lengths", "32", "-4"]):
        with pytest.raises(SystemExit):
            tool.main(flags)
        assert "must be at least 1" in capsys.readouterr().err
