"""benchmarks/speed/training_step.py: every row builds the model it names, and a run writes one entry per row and
length, set against the baseline (and against the row a row names besides)."""

import importlib.util
import json
import sys
from pathlib import Path

import pytest
import torch
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


def test_the_machine_reference_benchmark_counts_each_model_in_reference_steps_at_every_thread_count(tmp_path):
    """benchmarks/speed/machine_reference.py: at each thread count the baseline and the Graph default (its averaged
    parts) are counted in the study's reference steps, and each pair of thread counts gives both the seconds' ratio
    and the drift of those counts (what the study's division leaves of a machine's speed)."""
    spec = importlib.util.spec_from_file_location("machine_reference", SPEED / "machine_reference.py")
    tool = importlib.util.module_from_spec(spec)
    load_tool()  # puts timing.py on the path
    spec.loader.exec_module(tool)
    output, threads = tmp_path / "reference.json", torch.get_num_threads()
    try:
        assert tool.main(["--threads", "1", "2", "--length", "6", "--repeats", "1", "--output", str(output)]) == 0
    finally:
        torch.set_num_threads(threads)  # the tool sets them for this process
    report = json.loads(output.read_text())
    assert set(report["by_threads"]) == {"1", "2"}
    for measured in report["by_threads"].values():
        seconds, counted = measured["seconds"], measured["in_reference_steps"]
        assert counted["graph_default"] == pytest.approx(seconds["graph_default"] / seconds["reference"])
        assert measured["graph_default_over_baseline"] == pytest.approx(seconds["graph_default"] / seconds["baseline"])
    drift = report["comparisons"]["1_vs_2_threads"]["reference_steps_drift"]
    seconds_ratio = report["comparisons"]["1_vs_2_threads"]["seconds_ratio"]
    assert drift["baseline"] == pytest.approx(seconds_ratio["baseline"] / seconds_ratio["reference"])
    assert tool.MODELS["graph_default"] == ("graph_transformer_half_dim_gate", {"graph_new_groups": "mean"})
