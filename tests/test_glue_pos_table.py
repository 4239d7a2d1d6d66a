"""benchmarks/glue_pos.py's issue-18 table: differences on the same seeds, and how much POS the trained input carries."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def glue_pos():
    spec = importlib.util.spec_from_file_location("glue_pos", ROOT / "benchmarks" / "glue_pos.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def record(setting, seed, value, pos_input=None):
    row = {"task": "cola", "setting": setting, "seed": seed, "metric": "matthews_correlation", "value": value,
           "final_train_loss": 0.5}
    return {**row, "pos_input": pos_input} if pos_input else row


def test_table_reports_the_pos_share_of_the_runs_that_recorded_it(glue_pos):
    records = [record("no_pos", 42, 20.0), record("no_pos", 43, 30.0), record("no_pos", 44, 40.0),
               record("gate_pos_lr_1e-3", 42, 24.0, {"gate": 0.2, "pos_rms": 0.01, "word_rms": 0.05}),
               record("gate_pos_lr_1e-3", 43, 28.0)]
    rows, markdown = glue_pos.training_table(records)
    gate = next(row for row in rows if row["setting"] == "gate_pos_lr_1e-3")
    assert gate["difference_to_no_pos"] == pytest.approx(26.0 - 25.0)  # seeds 42 and 43 only
    assert gate["pos_to_word_rms"] == pytest.approx(0.2) and gate["gate"] == pytest.approx(0.2)
    assert "| 0.200 (gate +0.200), 1 of 2 runs |" in markdown
    plain = next(row for row in rows if row["setting"] == "no_pos")
    assert plain["pos_to_word_rms"] is None and markdown.splitlines()[2].endswith("| — |")
