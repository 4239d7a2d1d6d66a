"""The single-checkpoint comparison (benchmarks/analyses/checkpoint_cross_entropy.py): checkpoints are paired by
epoch, differences are run minus reference, and the summary counts the gaining side of each metric."""

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "analyses" / "checkpoint_cross_entropy.py"
spec = importlib.util.spec_from_file_location("checkpoint_cross_entropy", SCRIPT)
checkpoint_cross_entropy = importlib.util.module_from_spec(spec)
spec.loader.exec_module(checkpoint_cross_entropy)


def scores(*epochs: tuple[int, float, float], split: str = "dev") -> dict[int, dict]:
    return {epoch: {"step": epoch * 782, "cross_entropy": entropy, f"{split}_bleu": bleu}
            for epoch, entropy, bleu in epochs}


def test_checkpoints_are_paired_by_epoch_and_differences_are_run_minus_reference():
    rows = checkpoint_cross_entropy.paired(
        {"baseline": scores((8, 1.263949, 38.97), (9, 1.24164, 41.0149)),
         "dep_rel": scores((7, 1.30, 37.0), (8, 1.222751, 41.6), (9, 1.19851, 40.2801))}, "baseline")
    assert [row["epoch"] for row in rows] == [8, 9]  # epoch 7 is kept by one run only
    assert rows[0]["step"] == 6256
    # differences of the unrounded scores: -0.041198 is -0.0412, where the rounded scores' difference is -0.0411
    assert rows[0]["difference"] == {"dep_rel": {"cross_entropy": -0.0412, "dev_bleu": 2.63}}
    assert rows[1]["difference"] == {"dep_rel": {"cross_entropy": -0.0431, "dev_bleu": -0.73}}
    assert rows[0]["cross_entropy"] == {"baseline": 1.2639, "dep_rel": 1.2228}
    assert rows[1]["dev_bleu"] == {"baseline": 41.01, "dep_rel": 40.28}


def test_the_summary_counts_checkpoints_on_the_gaining_side_of_each_metric():
    rows = checkpoint_cross_entropy.paired(
        {"baseline": scores((8, 1.26, 39.0), (9, 1.24, 41.0), (10, 1.25, 40.0)),
         "dep_rel": scores((8, 1.22, 41.6), (9, 1.25, 40.3), (10, 1.25, 40.0))}, "baseline")
    assert checkpoint_cross_entropy.sign_summary(rows, "dep_rel") == {
        "checkpoints": 3, "lower_cross_entropy": 1, "higher_dev_bleu": 1}  # ties count for neither side


def test_the_bleu_fields_are_named_after_the_studys_split():
    rows = checkpoint_cross_entropy.paired({"baseline": scores((20, 1.5, 40.0), split="val"),
                                            "graph": scores((20, 1.4, 39.5), split="val")}, "baseline", "val")
    assert rows[0]["difference"] == {"graph": {"cross_entropy": -0.1, "val_bleu": -0.5}}
    assert checkpoint_cross_entropy.sign_summary(rows, "graph", "val") == {
        "checkpoints": 1, "lower_cross_entropy": 1, "higher_val_bleu": 0}


def test_a_run_whose_folder_is_gone_keeps_the_scores_the_earlier_report_recorded():
    rows = checkpoint_cross_entropy.paired(
        {"baseline": scores((8, 1.2573, 40.27), (9, 1.2477, 41.12)), "dep_rel": scores((8, 1.234, 41.05))}, "baseline")
    report = {"seeds": [{"seed": 44, "checkpoints": rows}]}
    recorded = checkpoint_cross_entropy.recorded_checkpoints(report, "dep_rel", 44, "dev")
    assert recorded == {8: {"step": 6256, "cross_entropy": 1.234, "dev_bleu": 41.05,
                            "recorded_difference": {"cross_entropy": -0.0233, "dev_bleu": 0.78}}}
    assert checkpoint_cross_entropy.recorded_checkpoints(report, "dep_rel", 43, "dev") is None  # seed not recorded
    assert checkpoint_cross_entropy.recorded_checkpoints(report, "dbsa", 44, "dev") is None  # run not recorded
    assert checkpoint_cross_entropy.recorded_checkpoints(None, "dep_rel", 44, "dev") is None  # no earlier report


def test_with_no_seed_to_pair_nothing_is_written(tmp_path, monkeypatch):
    study = tmp_path / "study.yaml"
    study.write_text(f"config: training/configs/small_cpu_ja_en_plateau.yaml\nwork_dir: {tmp_path / 'runs'}\n"
                     f"results: {tmp_path / 'results'}\nreference: dev.en\nsource: dev.ja\nbaseline: baseline\n"
                     "runs:\n  baseline: {set: []}\n  other: {set: []}\n")
    output = tmp_path / "results" / "checkpoint_cross_entropy"
    monkeypatch.setattr("sys.argv", ["checkpoint_cross_entropy.py", str(study), "--runs", "baseline", "other",
                                     "--seeds", "42", "--output", str(output)])
    with pytest.raises(SystemExit, match="no seed has baseline and another run scored"):
        checkpoint_cross_entropy.main()
    assert not output.with_suffix(".json").exists()


def test_recorded_pairs_keep_their_recorded_difference_and_new_runs_are_set_against_the_recorded_reference():
    # the first test's unrounded scores, as a report records them: the rounded scores' difference would be -0.0411
    first = checkpoint_cross_entropy.paired(
        {"baseline": scores((8, 1.263949, 38.97)), "dep_rel": scores((8, 1.222751, 41.6))}, "baseline")
    report = {"seeds": [{"seed": 42, "checkpoints": first}]}
    recorded = {run: checkpoint_cross_entropy.recorded_checkpoints(report, run, 42, "dev")
                for run in ("baseline", "dep_rel")}
    rows = checkpoint_cross_entropy.paired({**recorded, "dbsa": scores((8, 1.2339, 40.0))}, "baseline")
    assert rows[0]["difference"]["dep_rel"] == {"cross_entropy": -0.0412, "dev_bleu": 2.63}
    assert rows[0]["difference"]["dbsa"] == {"cross_entropy": -0.03, "dev_bleu": 1.03}  # against 1.2639 and 38.97
