"""``hf-syntax study`` end to end: two tiny real runs side by side, results table, bootstrap, extra test, resume."""

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
import yaml

from test_training_recipe import tiny_config

from hf_syntax.cli import main as hf_syntax_main
from hf_syntax.study.machine_pace import time_machine
from hf_syntax.study.processes import without_redraws
from hf_syntax.study.records import (
    SETTINGS_FILE, check_one_vocabulary, committed_records, epoch_in_reference_steps, log_history, minutes_left,
    seconds_per_epoch, tokenizer_fingerprint,
)
from hf_syntax.study.report import report
from hf_syntax.study.scheduling import (check_prepared_vocabulary, chosen_runs, is_finished, reference_or_none,
                                       run_all)
from hf_syntax.study.significance import (
    against_references, over_seeds, paired_bootstrap, seed_interval, seeds_for_power, t_test_power,
)
from hf_syntax.study.study_file import Study, StudyError
from hf_syntax.study.tables import markdown, progress

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = Path(str(resources.files("hf_syntax") / "sample_data" / "small_parallel_enja"))


def study_command(arguments: list[str]) -> int:
    """``hf-syntax study ARGUMENTS``, in this process."""
    return hf_syntax_main(["study", *arguments])


def baseline_and_rel_study(tmp_path):
    """A study of a baseline and one variant, for tests that hand the report records directly."""
    (tmp_path / "study.yaml").write_text(yaml.safe_dump({
        "config": "unused.yaml", "work_dir": "runs", "results": "results", "reference": "ref.en",
        "baseline": "baseline", "runs": {"baseline": {"label": "Transformer"}, "rel": {"label": "Transformer_rel"}}}))
    return Study.load(tmp_path / "study.yaml")


@pytest.fixture(scope="module")
def finished_study(tmp_path_factory):
    """A study of the baseline and Transformer_rel (no parser needed), seed 3, both trained by the driver."""
    folder = tmp_path_factory.mktemp("study")
    config = tiny_config(folder / "unused", max_steps=4, eval_steps=2, save_steps=2, logging_steps=2)
    del config["data"]["test"]  # the recipe then reports the validation split, which the bootstrap compares
    (folder / "tiny.yaml").write_text(yaml.safe_dump(config))
    study = {
        "config": str(folder / "tiny.yaml"), "work_dir": str(folder / "runs"), "results": str(folder / "results"),
        "reference": str(SAMPLE / "valid.en"), "source": str(SAMPLE / "valid.ja"), "baseline": "baseline",
        "common": ["data.max_eval_pairs=8"], "reference_curves": {"measured elsewhere": [0.5, 1.0]},
        "loss_at_steps": [2, 4],
        "runs": {"baseline": {"label": "Transformer", "set": []},
                 "rel": {"label": "Transformer_rel", "set": ["model.type=transformer_rel"]}},
    }
    (folder / "study.yaml").write_text(yaml.safe_dump(study))
    arguments = [str(folder / "study.yaml"), "--seeds", "3", "--jobs", "2",
                 "--extra-test", str(SAMPLE / "heldout.ja"), str(SAMPLE / "heldout.en"), "--blind", str(SAMPLE / "valid.ja")]
    assert study_command(arguments) == 0
    return folder, arguments


def test_results_hold_one_record_per_run_in_the_issue_form(finished_study):
    folder, _ = finished_study
    records = json.loads((folder / "results" / "results.json").read_text())
    assert [(r["name"], r["seed"]) for r in records] == [("baseline", 3), ("rel", 3)]
    for record in records:
        assert record["steps"] == 4 and len(record["dev_bleu_per_epoch"]) == 2
        assert {"model_type", "dev_bleu", "dev_chrf", "train_seconds"} <= set(record) and record["device"] == "cpu"
        assert record["seconds_per_epoch"] is None  # two checkpoints, one stretch: too few to time an epoch
        assert record["epoch_in_reference_steps"] is None and len(record["reference_seconds"]) == 1  # timed once
        assert set(record["extra_tests"]) == {"heldout"}
        assert record["extra_tests"]["heldout"]["reference"] == str(SAMPLE / "heldout.en")
    assert records[1]["model_type"] == "transformer_rel"
    for record, run in zip(records, ("baseline", "rel")):  # the references' cross-entropy, scored once per run
        scored = json.loads((folder / "runs" / run / "seed3" / "reference_cross_entropy.json").read_text())
        assert record["dev_cross_entropy"] == round(scored["cross_entropy"], 4) > 0
        assert record["dev_reference_tokens"] == scored["tokens"] and scored["sentences"] == len(
            (SAMPLE / "valid.en").read_text().splitlines())
    fingerprints = {record["tokenizer_sha256"] for record in records}  # both trained the config's tokenizer
    assert len(fingerprints) == 1 and len(fingerprints.pop()) == 16
    translated = {(run, test): (folder / "results" / "translations" / f"{run}.s3.{test}.txt").read_text().splitlines()
                  for run in ("baseline", "rel") for test in ("dev", "heldout")}
    dev_references = (SAMPLE / "valid.en").read_text().splitlines()[: len(translated["rel", "dev"])]
    assert records[1]["paired_bootstrap_p"] == paired_bootstrap(
        translated["baseline", "dev"], translated["rel", "dev"], dev_references)  # the pair is the same seed's
    assert records[1]["extra_tests"]["heldout"]["paired_bootstrap_p"] == paired_bootstrap(
        translated["baseline", "heldout"], translated["rel", "heldout"], (SAMPLE / "heldout.en").read_text().splitlines())
    assert "paired_bootstrap_p" not in records[0] and "paired_bootstrap_p" not in records[0]["extra_tests"]["heldout"]
    summaries = [json.loads((folder / "runs" / run / "seed3" / "summary.json").read_text()) for run in ("baseline", "rel")]
    assert [record["average_last_checkpoints"] for record in records] == [
        summary.get("average_last_checkpoints") for summary in summaries]  # null where the recipe wrote none
    heldout = (folder / "results" / "translations" / "rel.s3.heldout.txt").read_text().splitlines()
    assert len(heldout) == len((SAMPLE / "heldout.ja").read_text().splitlines())
    assert "| rel | Transformer_rel | 3 |" in (folder / "results" / "results.md").read_text()
    assert (folder / "results" / "learning_curves.png").stat().st_size > 0


def test_blind_sources_are_translated_line_for_line_and_never_scored(finished_study):
    """Every finished run's best checkpoint translates the blind source into blind/<run>.seed<N>.txt, the same text
    the extra test's pipeline gives; no BLEU of it appears anywhere."""
    folder, _ = finished_study
    source_lines = (SAMPLE / "valid.ja").read_text(encoding="utf-8").splitlines()
    for run in ("baseline", "rel"):
        translated = (folder / "results" / "blind" / f"{run}.seed3.txt").read_text(encoding="utf-8").splitlines()
        assert len(translated) == len(source_lines) and any(translated)
        assert translated == (folder / "runs" / run / "seed3" / "predictions_blind_valid.txt").read_text(
            encoding="utf-8").splitlines()
    records = json.loads((folder / "results" / "results.json").read_text())
    assert all(record["blind"] == str(SAMPLE / "valid.ja") and "valid" not in record["extra_tests"]
               for record in records)


def test_a_report_without_blind_keeps_the_blind_source_its_runs_translated(finished_study):
    """Rebuilding the tables (``--report``) without ``--blind`` once stripped the field from every record whose
    folder was still there, though its translation stayed committed."""
    folder, _ = finished_study
    assert study_command([str(folder / "study.yaml"), "--report"]) == 0
    records = json.loads((folder / "results" / "results.json").read_text())
    assert [record["blind"] for record in records] == [str(SAMPLE / "valid.ja")] * 2


def test_a_missing_blind_source_is_one_error_line(finished_study, capsys):
    folder, _ = finished_study
    with pytest.raises(SystemExit) as stopped:
        study_command([str(folder / "study.yaml"), "--report", "--blind", str(folder / "absent.ja")])
    assert stopped.value.code == 2 and f"--blind: no file {folder / 'absent.ja'}" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stopped:  # trees made beforehand belong to a blind source
        study_command([str(folder / "study.yaml"), "--report", "--blind-trees", str(folder / "study.yaml")])
    assert stopped.value.code == 2 and "needs --blind SRC" in capsys.readouterr().err


def test_the_paired_bootstrap_p_is_worked_out_by_hand_on_two_sentences(monkeypatch):
    """Each hypothesis is either the reference (BLEU and chrF 100) or a miss sharing no word or character with it
    (0). sacreBLEU's bootstrap draws 1000 resamples of the two sentences (numpy's default_rng(12345)): 266 draw
    sentence 0 twice, 254 sentence 1 twice, 480 both. Its p is (1 + the resamples whose difference, less the mean
    difference over resamples, exceeds the real difference) / 1001."""
    monkeypatch.delenv("SACREBLEU_SEED", raising=False)
    draws = np.random.default_rng(12345).choice(2, size=(1000, 2), replace=True)
    assert (int(((draws[:, 0] == 0) & (draws[:, 1] == 0)).sum()), int(((draws[:, 0] == 1) & (draws[:, 1] == 1)).sum())) == (
        266, 254)
    references = ["a b c d", "e f g h"]
    # Each system right on one sentence: real difference 0 (50 each); 100 on a resample of one sentence twice, 0 on
    # one of both. The mean is 100 * 520 / 1000 = 52, so the 520 resamples of one sentence twice exceed it.
    assert paired_bootstrap(["a b c d", "w x y z"], ["s t u v", "e f g h"], references) == {
        "bleu": round(521 / 1001, 4), "chrf": round(521 / 1001, 4)}
    # The system right on both, the baseline on sentence 0 only: real difference 50; 0 on sentence 0 twice, 100 on
    # sentence 1 twice, 50 on both. The mean is (100 * 254 + 50 * 480) / 1000 = 49.4: only the 254 differences of
    # 100 exceed 49.4 + 50.
    assert paired_bootstrap(["a b c d", "w x y z"], references, references) == {
        "bleu": round(255 / 1001, 4), "chrf": round(255 / 1001, 4)}


@pytest.mark.parametrize(
    "differences, interval, verdict",
    [
        ([1.0, 2.0, 3.0], [-0.48, 4.48], "no difference detected at 3 seeds"),  # mean 2, sd 1, t(0.975, 2) = 4.303
        ([1.0, 1.2, 0.8, 1.1, 0.9], [0.80, 1.20], "helps"),
        ([-1.0, -1.2, -0.8, -1.1, -0.9], [-1.20, -0.80], "hurts"),
        ([2.5], None, "one seed: no interval"),
        ([0.5, 0.5, 0.5], None, "no interval: the seeds agree exactly"),  # was [0.50, 0.50], "helps"
    ],
)
def test_the_interval_over_seeds_is_student_t_and_only_an_interval_excluding_0_helps(differences, interval, verdict):
    by_seed = dict(zip(range(42, 42 + len(differences)), differences))
    summary = seed_interval(by_seed)
    assert summary["interval"] == interval and summary["verdict"] == verdict
    assert summary["seeds"] == len(differences) and summary["wins"] == sum(d > 0 for d in differences)
    assert summary["differences"] == by_seed


def test_seeds_whose_differences_agree_exactly_get_no_interval_power_or_verdict(tmp_path):
    """A spread of 0 (here float noise of ~2e-15 around differences equal at the scores' decimals) gave an interval of
    no width, so "helps", power 1.00 and 2 seeds for 80% power; the table says why there is none."""
    by_seed = {42: 30.13 - 29.12, 43: 31.14 - 30.13, 44: 29.5 - 28.49}
    assert len(set(by_seed.values())) > 1
    assert seed_interval(by_seed) == {"seeds": 3, "mean": 1.01, "wins": 3, "interval": None,
                                      "differences": {42: 1.01, 43: 1.01, 44: 1.01},
                                      "verdict": "no interval: the seeds agree exactly"}
    assert seed_interval({1: 0.0, 2: 0.0})["verdict"] == "no interval: the seeds agree exactly"

    def record(name, seed, bleu, chrf):
        return {"name": name, "label": name, "seed": seed, "steps": 8, "dev_bleu": bleu, "dev_chrf": chrf,
                "dev_bleu_per_epoch": [bleu], "train_seconds": 10, "train_loss": {}, "extra_tests": {}}

    records = [record("baseline", 42, 29.12, 50.0), record("baseline", 43, 30.13, 51.0),
               record("rel", 42, 30.13, 50.5), record("rel", 43, 31.14, 52.0)]
    assert ("| rel | 42, 43 | +1.01 | — | 2/2 | +0.75 | [-2.43, +3.93] | 2/2 | +1.01 — | no interval: the seeds "
            "agree exactly | — |") in markdown(baseline_and_rel_study(tmp_path), records).splitlines()


def test_a_score_where_less_is_better_helps_when_its_interval_is_below_0():
    """The references' cross-entropy: a run that lowers it wins that seed, and only an interval below 0 helps."""
    lower = seed_interval({1: -0.021, 2: -0.019, 3: -0.02}, higher_is_better=False, digits=4)
    assert lower["verdict"] == "helps" and lower["wins"] == 3 and lower["mean"] == -0.02
    assert lower["interval"] == [-0.0225, -0.0175]  # sd 0.001, t(0.975, 2) = 4.303
    assert seed_interval({1: 0.02, 2: 0.021, 3: 0.019}, higher_is_better=False)["verdict"] == "hurts"


def test_the_references_cross_entropy_gets_its_own_interval_where_every_paired_seed_was_scored(tmp_path):
    """A run of which one seed has no cross-entropy (its folder was gone before it was scored) gets none over seeds;
    the others get a row in their own table, lower being better."""
    study = baseline_and_rel_study(tmp_path)

    def record(name, seed, entropy=None):
        return {"name": name, "label": name, "seed": seed, "steps": 8, "dev_bleu": 40.0, "dev_chrf": 50.0,
                "dev_bleu_per_epoch": [40.0], "train_seconds": 10, "train_loss": {}, "extra_tests": {},
                **({"dev_cross_entropy": entropy} if entropy is not None else {})}

    records = [record("baseline", 42, 1.2), record("baseline", 43, 1.25), record("rel", 42, 1.18),
               record("rel", 43, 1.24)]
    summary = over_seeds(study, records)["rel"]["cross_entropy"]
    assert (summary["mean"], summary["wins"], summary["seeds"]) == (-0.015, 2, 2)
    assert summary["differences"] == {42: -0.02, 43: -0.01}
    lines = markdown(study, records).splitlines()
    assert "| rel | 42, 43 | -0.0150 | [-0.0785, +0.0485] | 2/2 | no difference detected at 2 seeds | 0.19 · 5 |" in lines
    assert "| rel | rel | 42, 43 | 40.00 ± 0.00 | +0.00 | 50.00 ± 0.00 | — | 1.00 | 1.2100 ± 0.0424 |" in lines
    del records[3]["dev_cross_entropy"]
    assert "cross_entropy" not in over_seeds(study, records)["rel"]
    assert not any(line.startswith("| rel | 42, 43 | -0.0150") for line in markdown(study, records).splitlines())


def test_the_power_over_seeds_is_the_t_test_s_and_says_how_many_seeds_would_detect_the_difference():
    """Issue 36's five-seed dep+rel (mean +0.90, paired sd 0.90): checked against a simulation of the t-test itself;
    the power grows with the seeds (the search for the smallest count relies on it) and never turns NaN far out."""
    differences = np.random.default_rng(0).normal(0.9, 0.902, (40000, 5))
    t_statistics = differences.mean(axis=1) / (differences.std(axis=1, ddof=1) / 5 ** 0.5)
    simulated = float(np.mean(np.abs(t_statistics) > 2.776))  # t(0.975, 4)
    assert t_test_power(0.9, 0.902, 5) == pytest.approx(simulated, abs=0.01)
    powers = [t_test_power(0.3, 1.0, seeds) for seeds in range(2, 400)]
    assert not np.isnan(powers).any() and powers == sorted(powers)
    assert t_test_power(0.9, 0.902, 9) < 0.8 <= t_test_power(0.9, 0.902, 10) and seeds_for_power(0.9, 0.902) == 10
    assert seeds_for_power(-0.9, 0.902) == 10 and seeds_for_power(0.0, 1.0) is None
    summary = seed_interval({1: 1.0, 2: 2.0, 3: 3.0})
    assert summary["power"] == round(t_test_power(2.0, 1.0, 3), 2) and summary["seeds_for_80_percent_power"] == 5


def test_the_epoch_time_is_the_fastest_stretch_between_checkpoints_and_the_table_divides_it_by_the_baseline_s(tmp_path):
    """Issue 62's speed cost: checkpoints every 2 steps saved 60 s, 900 s (a session break) and 40 s apart, 2 steps an
    epoch: the fastest stretch is 20 s a step, so 40 s an epoch, whatever the breaks. The table divides it by the
    same seed's baseline beside the whole-time ratio; records from before the field get neither column."""
    folder = tmp_path / "run"
    for step, saved_at in ((2, 1000), (4, 1060), (6, 1960), (8, 2000)):
        (folder / f"checkpoint-{step}").mkdir(parents=True)
        os.utime(folder / f"checkpoint-{step}", (saved_at, saved_at))
    assert seconds_per_epoch(folder, {"optimizer_steps": 8, "epochs": 4.0}) == 40.0
    assert seconds_per_epoch(tmp_path / "none", {"optimizer_steps": 8, "epochs": 4.0}) is None
    os.utime(folder / "checkpoint-8", (1960, 1960))  # saved "at once": times not kept (an archive that lost them)
    assert seconds_per_epoch(folder, {"optimizer_steps": 8, "epochs": 4.0}) is None  # two real stretches are too few

    study = baseline_and_rel_study(tmp_path)

    def record(name, seconds, per_epoch):
        return {"name": name, "label": name, "seed": 42, "steps": 8, "dev_bleu": 30.0, "dev_chrf": 50.0,
                "dev_bleu_per_epoch": [30.0], "train_seconds": seconds, "train_loss": {}, "extra_tests": {},
                **({"seconds_per_epoch": per_epoch} if per_epoch else {})}

    lines = markdown(study, [record("baseline", 100, 40.0), record("rel", 300, 50.0)]).splitlines()
    assert "| time × baseline | epoch time × baseline |" in lines[2]
    assert next(line for line in lines if line.startswith("| rel | rel |")).endswith("| 3.00 | 1.25 |")
    assert lines[-1].startswith("| rel | 42 |") and lines[-1].endswith("| 300 | 50.0 | 1 / 2 |")  # the per-run table
    old = markdown(study, [record("baseline", 100, None), record("rel", 300, None)])
    assert "epoch time" not in old and "s / epoch" not in old


def test_epoch_times_from_two_machines_compare_in_each_machine_s_reference_steps(tmp_path):
    """Issue 62's seed 44: a baseline trained on a machine twice as slow as its Graph run's. Each invocation records
    when it started and its machine's reference step time; an epoch is counted in those steps, from the stretches
    that lie within one timed invocation (not the one across the resume, nor those of an untimed invocation), and the
    table divides those instead of the seconds, which would read as a 2x slower model."""
    folder = tmp_path / "run"
    saves = ((2, 900), (4, 950), (6, 1000), (8, 1050), (10, 1100), (12, 1160),  # untimed: 25 s a step
             (14, 5000), (16, 5080), (18, 5160), (20, 5240))  # resumed at 4990 on a machine with 40 s a reference step
    for step, saved_at in saves:
        (folder / f"checkpoint-{step}").mkdir(parents=True)
        os.utime(folder / f"checkpoint-{step}", (saved_at, saved_at))
    (folder / SETTINGS_FILE).write_text(json.dumps([{"threads": 2, "jobs": 1},
                                                    {"threads": 2, "jobs": 1, "started": 4990, "reference_seconds": 40}]))
    summary = {"optimizer_steps": 20, "epochs": 10.0}
    assert seconds_per_epoch(folder, summary) == 50.0  # the untimed machine's 25 s a step
    assert epoch_in_reference_steps(folder, summary) == 2.0  # 40 s a step over 40 s a reference step, 2 steps an epoch
    (folder / SETTINGS_FILE).write_text(json.dumps([{"threads": 2, "jobs": 1, "started": 800, "reference_seconds": 10},
                                                    {"threads": 2, "jobs": 1, "started": 4990, "reference_seconds": 40}]))
    assert epoch_in_reference_steps(folder, summary) == 2.0  # 25/10 before, 40/40 after, never (5000-1160)/2 across
    os.utime(folder / "checkpoint-20", (5160, 5160))  # two timed stretches left after the resume: too few alone
    (folder / SETTINGS_FILE).write_text(json.dumps([{"threads": 2, "jobs": 1},
                                                    {"threads": 2, "jobs": 1, "started": 4990, "reference_seconds": 40}]))
    assert epoch_in_reference_steps(folder, summary) is None

    study = baseline_and_rel_study(tmp_path)

    def record(name, per_epoch, relative):
        return {"name": name, "label": name, "seed": 44, "steps": 8, "dev_bleu": 30.0, "dev_chrf": 50.0,
                "dev_bleu_per_epoch": [30.0], "train_seconds": 100, "train_loss": {}, "extra_tests": {},
                "seconds_per_epoch": per_epoch, "epoch_in_reference_steps": relative}

    lines = markdown(study, [record("baseline", 80.0, 2.0), record("rel", 50.0, 2.5)]).splitlines()
    assert next(line for line in lines if line.startswith("| rel | rel |")).endswith("| 1.00 | 1.25 |")
    assert lines[-1].startswith("| rel | 44 |") and "| 50.0 (2 reference steps) |" in lines[-1]
    lines = markdown(study, [record("baseline", 80.0, None), record("rel", 50.0, 2.5)]).splitlines()
    assert next(line for line in lines if line.startswith("| rel | rel |")).endswith("| 1.00 | 0.62 |")  # seconds


def processes_naming(text: str) -> dict[int, str]:
    """This machine's processes whose command lines contain ``text``, by process id (read from /proc)."""
    found = {}
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            line = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # the process ended meanwhile
            continue
        if text in line:
            found[int(cmdline.parent.name)] = line
    return found


@pytest.mark.skipif(not Path("/proc/self/cmdline").is_file(), reason="lists processes from /proc (Linux only)")
def test_killing_the_driver_stops_the_runs_it_started(tmp_path):
    """``kill DRIVER`` (SIGTERM, what a session end or a job scheduler sends) stops the training it started, as
    Ctrl-C does, and says how to go on: before, the driver died alone and its run trained on, so a rerun of the study
    trained the same run twice in one folder."""
    config = tiny_config(tmp_path / "unused", max_steps=100000, eval_steps=50000, save_steps=50000)
    del config["data"]["test"]  # a study scores its split (and --extra-test sets) itself
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(config))
    (tmp_path / "study.yaml").write_text(yaml.safe_dump({
        "config": str(tmp_path / "tiny.yaml"), "work_dir": str(tmp_path / "runs"), "results": str(tmp_path / "results"),
        "reference": str(SAMPLE / "valid.en"), "baseline": "baseline", "runs": {"baseline": {"label": "Transformer"}}}))
    run_folder = tmp_path / "runs" / "baseline" / "seed1"
    driver = subprocess.Popen([sys.executable, "-m", "hf_syntax.cli", "study", str(tmp_path / "study.yaml"),
                               "--seeds", "1", "--jobs", "1"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.time() + 300
        while "'loss'" not in ((run_folder / "train.log").read_text() if (run_folder / "train.log").exists() else ""):
            assert time.time() < deadline, "the run did not start training in 5 minutes"
            assert driver.poll() is None, driver.communicate()[0]
            time.sleep(1)
        assert processes_naming(str(run_folder))  # the training process, seen from here
        driver.send_signal(signal.SIGTERM)
        output, _ = driver.communicate(timeout=120)
        assert driver.returncode == 128 + signal.SIGTERM
        assert "stopped by signal 15: the runs in flight are stopped and resume from their newest checkpoints" in output
        assert processes_naming(str(run_folder)) == {}
    finally:
        driver.kill()
        for process_id in processes_naming(str(run_folder)):  # a run left training by a failure above
            os.kill(process_id, signal.SIGKILL)


def test_a_machine_that_cannot_be_timed_still_trains_and_says_why(monkeypatch, capsys):
    """Timing the machine is a help, not a condition: where its child process fails (here: an interpreter that
    exits 1), the driver says so and starts the runs without a reference."""
    monkeypatch.setattr(sys, "executable", "/bin/false")
    assert reference_or_none(threads=1) is None
    assert "the machine is not timed (timing the machine's reference workload failed (exit 1)" in capsys.readouterr().out


def test_the_reference_workload_times_this_machine():
    """The machine's reference step, timed in a child process as the runs train: a positive time that repeats
    within a factor of two here (the fastest of five repetitions)."""
    first, second = time_machine(threads=1), time_machine(threads=1)
    assert 0 < first < 60 and 0.5 < first / second < 2


def test_the_report_pairs_seeds_for_the_interval_and_shows_best_and_last_evaluations(tmp_path):
    """Seeds a variant has but the baseline lacks are left out of its interval; the per-run table says which
    evaluation was chosen and what the last one scored (selection on the reported split is visible)."""
    study = baseline_and_rel_study(tmp_path)

    def record(name, seed, curve):
        return {"name": name, "label": name, "seed": seed, "steps": 8, "dev_bleu": max(curve), "dev_chrf": 50.0,
                "dev_bleu_per_epoch": curve, "train_seconds": 10, "train_loss": {}, "extra_tests": {}}

    records = [record("baseline", 42, [30.0, 39.0]), record("baseline", 43, [30.0, 40.0]),
               record("rel", 42, [30.0, 40.0]), record("rel", 43, [30.0, 41.0]), record("rel", 44, [41.0, 35.0])]
    summary = over_seeds(study, records)["rel"]
    assert summary["paired_seeds"] == [42, 43] and summary["bleu"]["mean"] == 1.0 and summary["bleu"]["wins"] == 2
    lines = markdown(study, records).splitlines()
    # the differences are equal at both seeds: no interval (it read [+1.00, +1.00], "helps", power 1.00 at 2 seeds)
    assert ("| rel | 42, 43 | +1.00 | — | 2/2 | +0.00 | — | 0/2 | +1.00 — | no interval: the seeds agree exactly | — "
            "|") in lines
    assert next(line for line in lines if line.startswith("| rel | 44 |")).startswith(
        "| rel | 44 | 8 | 41.00 | 50.00 | 1 | 1 / 2 | 35.00 |")  # a record without averaging: 1 (the kept one)


def test_the_difference_without_selection_pairs_the_last_evaluation_both_runs_of_a_seed_reached(tmp_path):
    """Issue 36: checkpoints are chosen on dev and scored on dev, so the report also pairs each seed's curves at one
    evaluation chosen by neither run; a run stopped early (the 16-epoch budget) is compared where both still ran."""
    study = baseline_and_rel_study(tmp_path)

    def record(name, seed, curve):
        return {"name": name, "label": name, "seed": seed, "steps": 8, "dev_bleu": max(curve), "dev_chrf": 50.0,
                "dev_bleu_per_epoch": curve, "train_seconds": 10, "train_loss": {}, "extra_tests": {}}

    records = [record("baseline", 42, [30.0, 39.0, 38.0]), record("baseline", 43, [30.0, 41.0, 40.0, 39.5]),
               record("rel", 42, [30.0, 38.0, 39.0, 40.0]), record("rel", 43, [30.0, 40.5, 40.5, 40.0])]
    summary = over_seeds(study, records)["rel"]
    assert summary["bleu"]["mean"] == 0.25  # chosen: 40.0 - 39.0 and 40.5 - 41.0
    last = summary["bleu_last_shared_evaluation"]
    assert (last["mean"], last["wins"], last["seeds"]) == (0.75, 2, 2)  # 39.0 - 38.0 at the third, 40.0 - 39.5 at the fourth
    assert any(line.startswith("| rel | 42, 43 | +0.25 |") and "| +0.75 [" in line
               for line in markdown(study, records).splitlines())


def test_extra_tests_get_their_own_interval_over_seeds_and_per_seed_bootstrap(tmp_path):
    """A study chosen on its dev split and judged on a test (issue 37's test_2016): the test's differences are paired
    by seed like the split's, a seed the baseline lacks on that test is left out, and each seed's p shows."""
    study = baseline_and_rel_study(tmp_path)

    def record(name, seed, test_bleu, p=None):
        test = {"bleu": test_bleu, "chrf": 60.0, **({"paired_bootstrap_p": {"bleu": p, "chrf": p}} if p else {})}
        return {"name": name, "label": name, "seed": seed, "steps": 8, "dev_bleu": 40.0, "dev_chrf": 50.0,
                "dev_bleu_per_epoch": [40.0], "train_seconds": 10, "train_loss": {}, "extra_tests": {"test": test}}

    records = [record("baseline", 42, 40.0), record("baseline", 43, 41.0), record("rel", 42, 39.0, 0.01),
               record("rel", 43, 40.5, 0.2), record("rel", 44, 45.0)]
    records[1]["extra_tests"] = {}  # seed 43's baseline was never scored on the test
    summary = over_seeds(study, records)["rel"]["extra_tests"]["test"]
    assert summary["paired_seeds"] == [42] and summary["bleu"]["mean"] == -1.0 and summary["bleu"]["interval"] is None
    records[1]["extra_tests"] = {"test": {"bleu": 41.0, "chrf": 61.0}}
    lines = markdown(study, records).splitlines()
    assert ("| rel | 42, 43 | -0.75 | [-3.93, +2.43] | 0/2 | -0.50 | [-6.85, +5.85] | 0/2 | 42: 0.010, 43: 0.200 | "
            "no difference detected at 2 seeds | 0.19 · 5 |") in lines  # t(0.975, 1) = 12.706, sd 0.354 (BLEU) / 0.707 (chrF)


def test_variants_are_paired_by_seed_with_the_other_references_a_study_names(tmp_path, capsys):
    """Issues 36/39 ask how two syntax models differ (dep+rel against Transformer_rel, the self-parsing model against
    dep+rel): ``against`` pairs runs with a reference other than the baseline, in the report and its own json."""
    study_file = tmp_path / "study.yaml"
    runs = {name: {"label": name} for name in ("baseline", "rel", "dep_rel")}
    study_file.write_text(yaml.safe_dump({"config": "unused.yaml", "work_dir": "runs", "results": "results",
                                          "reference": "ref.en", "baseline": "baseline", "runs": runs,
                                          "against": {"rel": ["dep_rel"]}}))
    study = Study.load(study_file)

    def record(name, seed, bleu):
        return {"name": name, "label": name, "seed": seed, "steps": 8, "dev_bleu": bleu, "dev_chrf": 50.0,
                "dev_bleu_per_epoch": [bleu], "train_seconds": 10, "train_loss": {}, "extra_tests": {}}

    records = [record("baseline", 42, 39.0), record("baseline", 43, 41.0), record("rel", 42, 40.0),
               record("rel", 43, 41.5), record("dep_rel", 42, 41.0), record("dep_rel", 43, 42.0), record("dep_rel", 44, 45.0)]
    against = against_references(study, records)
    assert list(against) == ["rel"] and list(against["rel"]) == ["dep_rel"]
    summary = against["rel"]["dep_rel"]
    assert summary["paired_seeds"] == [42, 43] and summary["bleu"]["mean"] == 0.75  # 41.0 - 40.0 and 42.0 - 41.5
    assert summary["bleu"]["interval"] == [-2.43, 3.93]  # t(0.975, 1) = 12.706, sd 0.354
    assert over_seeds(study, records)["dep_rel"]["bleu"]["mean"] == 1.5  # the baseline's table is unchanged
    lines = markdown(study, records).splitlines()
    table = lines.index("The same against `rel` (Δ = run − rel, paired by seed):")
    assert lines[table + 4].startswith("| dep_rel | 42, 43 | +0.75 | [-2.43, +3.93] | 2/2 |")

    study_file.write_text(study_file.read_text().replace("- dep_rel", "- dep+rel"))
    with pytest.raises(SystemExit) as stopped:
        study_command([str(study_file), "--report"])
    assert stopped.value.code == 2 and "'against' names ['dep+rel'], which are not runs of the study" in capsys.readouterr().err


def test_committed_logs_carry_no_progress_bars(finished_study):
    folder, _ = finished_study
    logs = list((folder / "results" / "logs").glob("*.log"))
    assert logs
    for log in logs:
        text = log.read_text()
        assert "\r" not in text and "%|" not in text, log
        assert "'eval_bleu'" in text or log.name.startswith("prepare_"), log


def test_a_finished_progress_bar_is_dropped_and_every_other_line_kept(tmp_path):
    log = tmp_path / "train.log"
    log.write_bytes("{'loss': '3.1'}\nWriting model shards:   0%|    | 0/1 [00:00<?, ?it/s]\rWriting model shards: "
                    "100%|████| 1/1 [00:00<00:00, 46.79it/s]\nsaved 100% | 3/4 of it\n".encode())
    assert without_redraws(log) == "{'loss': '3.1'}\nsaved 100% | 3/4 of it\n"


def test_a_pending_run_finished_elsewhere_in_the_meantime_is_not_started(tmp_path, capsys):
    """The driver lists its runs when it starts; one that a GPU machine trained and gpu_study.py unpacked while the
    driver worked through the others is skipped when its turn comes, not trained a second time."""
    study = baseline_and_rel_study(tmp_path)
    study = Study(**{**vars(study), "work_dir": tmp_path / "runs", "results": tmp_path / "results"})
    folder = study.output_dir("rel", 9)
    folder.mkdir(parents=True)
    (folder / "summary.json").write_text("{}")
    run_all(study, [("rel", 9)], jobs=1, extra_tests=[])
    assert "skip rel seed 9: finished elsewhere" in capsys.readouterr().out and not (folder / "train.log").exists()


def test_a_run_can_name_its_own_seeds_and_the_queue_goes_seed_by_seed(tmp_path):
    """One GPU call trained two runs at seeds 42-43 and a third at 43-44: ``RUN:SEEDS`` puts them in one queue
    instead of two drivers side by side; the others keep ``--seeds``."""
    study = baseline_and_rel_study(tmp_path)
    assert chosen_runs(study, ["rel:44,43", "baseline"], [42, 43]) == [
        ("baseline", 42), ("rel", 43), ("baseline", 43), ("rel", 44)]
    assert chosen_runs(study, None, [7]) == [("baseline", 7), ("rel", 7)]


def test_a_run_named_twice_in_runs_is_refused(tmp_path):
    """``--runs base base:43 --seeds 42`` trained only (base, 43): the second entry replaced the first's seeds."""
    study = baseline_and_rel_study(tmp_path)
    with pytest.raises(StudyError, match=r"--runs names 'baseline' twice; name each run once, with all its seeds "
                                         r"\(e.g. baseline:42,43\)"):
        chosen_runs(study, ["baseline", "baseline:43"], [42])


def test_retrain_trains_again_a_run_of_which_only_the_committed_record_is_left(tmp_path):
    """A committed record counts as finished (its folder may be gone with ``runs/``), except under ``--retrain``,
    which trains such a run again (e.g. for a blind translation); a run folder with its summary counts either way."""
    study = baseline_and_rel_study(tmp_path)
    study = Study(**{**vars(study), "work_dir": tmp_path / "runs", "results": tmp_path / "results"})
    study.results.mkdir()
    (study.results / "results.json").write_text(json.dumps([{"name": "rel", "seed": 9}]))
    assert is_finished(study, "rel", 9) and not is_finished(study, "rel", 9, retrain=True)
    assert not is_finished(study, "baseline", 9)
    (study.output_dir("rel", 9)).mkdir(parents=True)
    (study.output_dir("rel", 9) / "summary.json").write_text("{}")
    assert is_finished(study, "rel", 9, retrain=True)


def test_a_committed_record_lacking_what_the_report_reads_is_named(tmp_path, capsys):
    """An older or hand-edited results.json failed deep in the report with a bare KeyError ('val_bleu',
    'extra_tests', 'train_loss'). A missing score names the file, the record and the key; a record from before
    --extra-test or loss_at_steps gets them empty."""
    study = baseline_and_rel_study(tmp_path)
    study = Study(**{**vars(study), "work_dir": tmp_path / "runs", "results": tmp_path / "results",
                     "loss_at_steps": [5]})
    study.results.mkdir()
    record = {"name": "rel", "seed": 9, "steps": 10, "train_seconds": 3, "dev_bleu": 1.0, "dev_chrf": 2.0,
              "dev_bleu_per_epoch": [1.0]}
    (study.results / "results.json").write_text(json.dumps([record]))
    (committed,) = committed_records(study).values()
    assert committed["extra_tests"] == {} and committed["train_loss"] == {}
    progress(study)
    (study.results / "results.json").write_text(json.dumps([{key: value for key, value in record.items()
                                                             if key != "dev_bleu"}]))
    with pytest.raises(StudyError, match=r"results.json: the record of rel seed 9 lacks dev_bleu \(written by an "
                                         r"older version or edited by hand\); restore the file, or remove the record"):
        report(study)
    assert "rel" in progress(study)  # progress reads only the curve (it refused the record for its dev_bleu)
    (study.results / "results.json").write_text(json.dumps([{key: value for key, value in record.items()
                                                             if key != "dev_bleu_per_epoch"}]))
    with pytest.raises(StudyError, match=r"the record of rel seed 9 lacks dev_bleu_per_epoch"):
        progress(study)
    (study.results / "results.json").write_text("{}")
    with pytest.raises(StudyError, match=r"results.json holds dict, not a list of run records"):
        committed_records(study)


def test_a_run_on_a_tokenizer_the_committed_runs_did_not_use_is_refused_before_it_trains(tmp_path):
    """runs/ may be prepared anew in a later session; a run on a tokenizer other than the committed runs' would not
    compare with them, so the driver refuses it (one error naming both groups) before anything trains, and the
    report refuses records that mix tokenizers. The same tokenizer passes."""
    tokenizer = tmp_path / "prepared" / "tokenizer"
    tokenizer.mkdir(parents=True)
    (tokenizer / "tokenizer.json").write_text('{"model": "prepared again"}')
    study = baseline_and_rel_study(tmp_path)
    study = Study(**{**vars(study), "work_dir": tmp_path / "runs", "results": tmp_path / "results",
                     "common": [f"tokenizer.path={tokenizer}"]})
    study.results.mkdir()
    committed = {"name": "baseline", "seed": 9, "tokenizer_sha256": "0123456789abcdef"}
    (study.results / "results.json").write_text(json.dumps([committed]))
    with pytest.raises(StudyError, match=r"different tokenizers \(baseline seed 9 with tokenizer 0123456789abcdef; "
                                         r"rel seed 9 with tokenizer [0-9a-f]{16}\)"):
        run_all(study, [("rel", 9)], jobs=1, extra_tests=[])
    assert not study.output_dir("rel", 9).exists()
    committed["tokenizer_sha256"] = tokenizer_fingerprint(tokenizer)
    (study.results / "results.json").write_text(json.dumps([committed]))
    check_prepared_vocabulary(study, "rel", 9)  # the same tokenizer: no error
    own = Study(**{**vars(study), "runs": {**study.runs, "rel": {"set": ["tokenizer.vocab_size=500"]}}})
    check_one_vocabulary(own, [committed, {"name": "rel", "seed": 9, "tokenizer_sha256": "fedcba9876543210"}])


def test_a_longer_budget_continues_the_shorter_study_s_run_of_the_same_seed(finished_study):
    """A study that ``continues`` another trains each run on from that study's run (4 of 6 steps there): the record
    has every evaluation of the whole run and both invocations' wall time, its log starts with the shorter run's
    (each start marked with where it began), and the copied best checkpoint is the one named as the best."""
    folder, _ = finished_study
    config = yaml.safe_load((folder / "tiny.yaml").read_text())
    config["training"]["max_steps"] = 6
    (folder / "longer.yaml").write_text(yaml.safe_dump(config))
    study = yaml.safe_load((folder / "study.yaml").read_text())
    study.update(config=str(folder / "longer.yaml"), work_dir=str(folder / "runs_longer"), continues=str(folder / "runs"),
                 results=str(folder / "results_longer"))
    (folder / "longer_study.yaml").write_text(yaml.safe_dump(study))
    assert study_command([str(folder / "longer_study.yaml"), "--runs", "rel", "--seeds", "3", "--jobs", "1"]) == 0
    shorter = json.loads((folder / "results" / "results.json").read_text())[1]
    (record,) = json.loads((folder / "results_longer" / "results.json").read_text())
    assert record["steps"] == 6 and record["dev_bleu_per_epoch"][:2] == shorter["dev_bleu_per_epoch"]
    assert len(record["dev_bleu_per_epoch"]) == 3 and record["train_seconds"] > shorter["train_seconds"]
    run_folder = folder / "runs_longer" / "rel" / "seed3"
    assert len(json.loads((run_folder / "driver_seconds.json").read_text())) == 2
    shorter_log = (folder / "runs" / "rel" / "seed3" / "train.log").read_text()
    log = (run_folder / "train.log").read_text()
    assert log.startswith(shorter_log) and shorter_log.startswith("[hf-syntax study ")
    assert shorter_log.splitlines()[0].endswith("] rel seed 3 started from step 0")
    assert log[len(shorter_log):].splitlines()[0].endswith("] rel seed 3 resumed from checkpoint-4")
    for state_file in run_folder.glob("checkpoint-*/trainer_state.json"):
        assert Path(json.loads(state_file.read_text())["best_model_checkpoint"]).parent == run_folder
    # a seed the shorter study never trained: the longer budget from scratch, in one invocation
    assert study_command([str(folder / "longer_study.yaml"), "--runs", "rel", "--seeds", "4", "--jobs", "1"]) == 0
    fresh = next(r for r in json.loads((folder / "results_longer" / "results.json").read_text()) if r["seed"] == 4)
    assert fresh["steps"] == 6 and len(fresh["dev_bleu_per_epoch"]) == 3
    assert len(json.loads((folder / "runs_longer" / "rel" / "seed4" / "driver_seconds.json").read_text())) == 1


def test_a_run_starts_from_whole_copies_only(tmp_path):
    """A session end mid-copy left some checkpoints in the run's folder, which the next start took for the whole
    copy: copies are made beside it and moved in at the end, and what a killed copy left there is thrown away."""
    from hf_syntax.study.scheduling import start_from_copies

    run = tmp_path / "baseline" / "seed3"
    leftover = tmp_path / "baseline" / ".seed3.partial"
    (leftover / "checkpoint-4").mkdir(parents=True)  # a killed copy's
    run.mkdir(parents=True)
    (run / "driver_settings.json").write_text("[]")  # the run's own file is kept

    def fill(staging):
        for step in (8, 4):
            (staging / f"checkpoint-{step}").mkdir()
            (staging / f"checkpoint-{step}" / "trainer_state.json").write_text(json.dumps({"global_step": step}))
        (staging / "driver_settings.json").write_text('["copied"]')
        (staging / "train.log").write_text("copied log")

    start_from_copies(run, fill)
    assert sorted(path.name for path in run.iterdir()) == ["checkpoint-4", "checkpoint-8", "driver_settings.json",
                                                           "train.log"]
    assert (run / "driver_settings.json").read_text() == "[]" and not leftover.exists()
    assert json.loads((run / "checkpoint-4" / "trainer_state.json").read_text()) == {"global_step": 4}


def test_a_run_cut_from_a_longer_open_ended_run_only_averages_and_scores_that_run_s_checkpoints(tmp_path, capsys):
    """``cut_from``: the seed-3 baseline of a 2-epoch study is a 3-epoch run of the same recipe cut at epoch 2 (the
    schedule does not depend on the budget): exactly its epoch 1-2 checkpoints are copied, the run resumes with no
    step left, its final model is their mean, its record has their evaluations, and its time is the source's pace
    times its steps. A budget the source has not reached is refused, naming the missing epochs."""
    import torch
    from safetensors.torch import load_file

    from hf_syntax.recipes.checkpoint_averaging import average_state_dicts
    from hf_syntax.study.scheduling import cut_longer_run

    epochs = {"max_steps": -1, "eval_strategy": "epoch", "save_strategy": "epoch", "save_total_limit": None}
    config = tiny_config(tmp_path / "unused", num_train_epochs=3, **epochs)
    del config["data"]["test"]
    (tmp_path / "curve.yaml").write_text(yaml.safe_dump(config))
    config["training"].update(num_train_epochs=2, average_last_checkpoints=2)
    (tmp_path / "cut.yaml").write_text(yaml.safe_dump(config))
    common = {"reference": str(SAMPLE / "valid.en"), "baseline": "baseline", "common": ["data.max_eval_pairs=8"],
              "runs": {"baseline": {"label": "Transformer", "set": []}}}
    (tmp_path / "curve_study.yaml").write_text(yaml.safe_dump({
        **common, "config": str(tmp_path / "curve.yaml"), "work_dir": str(tmp_path / "curve"),
        "results": str(tmp_path / "curve_results")}))
    source = tmp_path / "curve" / "baseline" / "seed3"
    (tmp_path / "cut_study.yaml").write_text(yaml.safe_dump({
        **common, "config": str(tmp_path / "cut.yaml"), "work_dir": str(tmp_path / "cut"),
        "results": str(tmp_path / "cut_results"), "cut_from": {"baseline": {"seed": 3, "run_dir": str(source)}}}))
    assert study_command([str(tmp_path / "curve_study.yaml"), "--seeds", "3", "--jobs", "1"]) == 0
    assert study_command([str(tmp_path / "cut_study.yaml"), "--seeds", "3", "--jobs", "1"]) == 0
    assert "baseline seed 3 is " in capsys.readouterr().out

    curve_checkpoints = sorted(source.glob("checkpoint-*"), key=lambda folder: int(folder.name.split("-")[1]))
    run = tmp_path / "cut" / "baseline" / "seed3"
    assert sorted(folder.name for folder in run.glob("checkpoint-*")) == [f.name for f in curve_checkpoints[:2]]
    (curve,) = json.loads((tmp_path / "curve_results" / "results.json").read_text())
    (record,) = json.loads((tmp_path / "cut_results" / "results.json").read_text())
    assert record["epochs"] == 2 and record["average_last_checkpoints"] == 2
    assert record["dev_bleu_per_epoch"] == curve["dev_bleu_per_epoch"][:2]
    mean = average_state_dicts(load_file(folder / "model.safetensors") for folder in curve_checkpoints[:2])
    final = load_file(run / "model" / "model.safetensors")
    assert all(torch.allclose(final[name], mean[name]) for name in final)
    first_invocation = json.loads((run / "driver_seconds.json").read_text())[0]
    steps = json.loads((curve_checkpoints[1] / "trainer_state.json").read_text())["global_step"]
    assert 0 < first_invocation < curve["train_seconds"] and steps < curve["steps"]

    too_long = Study.load(tmp_path / "cut_study.yaml")
    too_long = Study(**{**vars(too_long), "runs": {"baseline": {"set": ["training.num_train_epochs=5"]}}})
    with pytest.raises(StudyError, match=r"has no checkpoint of epoch\(s\) \[4, 5\]"):
        cut_longer_run(too_long, "baseline", 3, source)
    # a source of another recipe is refused before anything is copied: a setting of the model, a schedule that
    # depends on the length (cosine over 3 epochs is not cosine over 2 cut short), another number of pairs per step
    for setting, difference in [("model.kwargs.dropout=0.45", r"model dropout: 0.1 there, 0.45 here"),
                                ("training.lr_scheduler_type=cosine", r"lr_scheduler_type: 'inverse_sqrt' there, "
                                 r"'cosine' here; the cosine schedule's length: 3 epochs there, 2 epochs here"),
                                ("training.gradient_accumulation_steps=2", r"training effective batch \("
                                 r"per_device_train_batch_size x gradient_accumulation_steps\): 16 there, 32 here")]:
        other = Study(**{**vars(too_long), "work_dir": tmp_path / "other",
                         "runs": {"baseline": {"set": [setting]}}})
        with pytest.raises(StudyError, match=rf"'cut_from' names .*seed3, which trained another recipe \(.*{difference}"):
            cut_longer_run(other, "baseline", 3, source)
        assert not (tmp_path / "other").exists()
    # the same pairs per step in two halves (8 x 2 for 16 x 1) is the same trajectory: cut as the source's own
    halves = Study(**{**vars(too_long), "work_dir": tmp_path / "halves", "runs": {"baseline": {"set": [
        "training.per_device_train_batch_size=8", "training.gradient_accumulation_steps=2"]}}})
    cut_longer_run(halves, "baseline", 3, source)
    assert sorted(folder.name for folder in (tmp_path / "halves" / "baseline" / "seed3").glob("checkpoint-*")) == [
        folder.name for folder in curve_checkpoints[:2]]


@pytest.mark.parametrize("cut_from", [{"nope": {"seed": 3, "run_dir": "runs/x"}}, {"rel": {"seed": 3}},
                                      {"rel": {"seed": "3", "run_dir": "runs/x"}}, {"rel": "runs/x"}])
def test_a_cut_from_that_names_no_run_or_lacks_its_seed_and_folder_is_refused(tmp_path, cut_from):
    baseline_and_rel_study(tmp_path)
    study = yaml.safe_load((tmp_path / "study.yaml").read_text())
    (tmp_path / "study.yaml").write_text(yaml.safe_dump({**study, "cut_from": cut_from}))
    with pytest.raises(StudyError, match=r"'cut_from' maps a run of the study \['baseline', 'rel'\] to \{seed: N, run_dir"):
        Study.load(tmp_path / "study.yaml")


def test_finished_runs_are_skipped(finished_study):
    folder, arguments = finished_study
    checkpoint = folder / "runs" / "rel" / "seed3" / "checkpoint-4"
    before = checkpoint.stat().st_mtime
    assert study_command(arguments) == 0
    assert checkpoint.stat().st_mtime == before
    assert json.loads((folder / "runs" / "rel" / "seed3" / "driver_seconds.json").read_text()).__len__() == 1


def test_a_driver_killed_mid_run_has_counted_the_run_s_time_so_far(finished_study, tmp_path):
    """A session end kills the driver and its runs together. The run's wall time so far must already be on disk
    (driver_seconds.json is rewritten at every poll), so a resumed run's train_seconds counts both sessions."""
    import os
    import signal
    import subprocess
    import time

    folder, _ = finished_study
    study = yaml.safe_load((folder / "study.yaml").read_text())
    study.update(work_dir=str(tmp_path / "runs"), results=str(tmp_path / "results"),
                 common=[*study["common"], "training.max_steps=100000"])
    (tmp_path / "study.yaml").write_text(yaml.safe_dump(study))
    wall_clock = tmp_path / "runs" / "rel" / "seed5" / "driver_seconds.json"
    driver = subprocess.Popen([sys.executable, "-m", "hf_syntax.cli", "study", str(tmp_path / "study.yaml"),
                               "--runs", "rel", "--seeds", "5", "--jobs", "1"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    started = time.time()
    try:
        while not wall_clock.exists() and time.time() - started < 120 and driver.poll() is None:
            time.sleep(0.5)
        time.sleep(6)  # at least one more poll
    finally:
        os.killpg(driver.pid, signal.SIGKILL)
        driver.wait()
    killed_after = time.time() - started
    assert not (wall_clock.parent / "summary.json").exists()  # the run was cut, as by a session end
    (seconds,) = json.loads(wall_clock.read_text())
    assert 5 <= seconds <= killed_after


def test_bad_study_and_arguments_are_one_error_line(finished_study, capsys):
    folder, _ = finished_study
    with pytest.raises(SystemExit) as stopped:
        study_command([str(folder / "study.yaml"), "--runs", "nope"])
    assert stopped.value.code == 2 and "--runs 'nope' is not in the study" in capsys.readouterr().err
    for seeds in ("rel:4x", "rel:4,-1"):
        with pytest.raises(SystemExit):
            study_command([str(folder / "study.yaml"), "--runs", seeds])
        assert "after ':' come the run's seeds, whole numbers from 0" in capsys.readouterr().err
    for option, value in (("--jobs", "0"), ("--threads", "-1"), ("--seeds", "-3")):  # --jobs 0 waited forever
        with pytest.raises(SystemExit):
            study_command([str(folder / "study.yaml"), option, value])
        assert f"argument {option}: must be at least" in capsys.readouterr().err
    one_line = folder / "one_line.en"
    one_line.write_text("just one line\n")
    with pytest.raises(SystemExit):
        study_command([str(folder / "study.yaml"), "--extra-test", str(SAMPLE / "heldout.ja"), str(one_line)])
    assert "different line counts" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        study_command([str(folder / "study.yaml"), "--report", "--source-trees", str(folder / "absent.conllu")])
    error = capsys.readouterr().err
    assert "--source-trees" in error and "an existing file" in error
    assert not (folder / "runs" / "baseline" / "seed42").exists()  # nothing started


@pytest.mark.parametrize(("edit", "message"), [
    (lambda study: study.update(cut_form={}), "unknown key(s) 'cut_form' (did you mean 'cut_from'?) in the study"),
    (lambda study: study["runs"]["rel"].update(sett=[]), "unknown key(s) 'sett' (did you mean 'set'?) in run 'rel'"),
    (lambda study: study["runs"]["rel"]["set"].append("model.kwargs.dropuot=0.3"),
     "run 'rel' (seed 3) cannot train: unknown config key model.kwargs.dropuot (did you mean 'dropout'?)"),
    (lambda study: study.update(prepare=[{"creates": "data"}]), "prepare step 1 is {creates: PATH, command: ["),
    # each failed later with a TypeError or AttributeError naming no key, or read a name letter by letter
    (lambda study: study.update(baseline=["baseline"]), "'baseline' is a name or path (text), got ['baseline']"),
    (lambda study: study.update(cut_from=[]), "'cut_from' is a mapping ({name: ...}), got []"),
    (lambda study: study.update(against={"baseline": "rel"}), "'against' maps a run to the list of runs paired"),
    (lambda study: study["runs"]["rel"].update(label=["x"]), "run 'rel': 'label' is the text the report shows"),
    (lambda study: study.update(results_name="sub/x"), "'results_name' names the files in 'results' (no '/')"),
    # the recipe then translated the test split last: the study failed after the run trained, and in every session
    (lambda study: study["runs"]["rel"]["set"].append(
        f"data.test={{source: {SAMPLE / 'heldout.ja'}, target: {SAMPLE / 'heldout.en'}}}"),
     "run 'rel' (seed 3): its config has a test split (data.test or data.test_split)"),
])
def test_a_misspelt_study_key_or_run_setting_is_refused_before_any_run_trains(finished_study, tmp_path, edit, message,
                                                                              capsys):
    """Before, a misspelt key was ignored (the run trained without its settings) and a misspelt setting of a later
    run failed only when that run started, hours into a session."""
    folder, _ = finished_study
    study = yaml.safe_load((folder / "study.yaml").read_text())
    study.update(work_dir=str(tmp_path / "runs"), results=str(tmp_path / "results"))
    edit(study)
    (tmp_path / "study.yaml").write_text(yaml.safe_dump(study))
    with pytest.raises(SystemExit):
        study_command([str(tmp_path / "study.yaml"), "--seeds", "3"])
    assert message in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()  # nothing trained


@pytest.mark.parametrize(("reference", "says"), [
    (SAMPLE / "valid.ja", "line 1 differs"),  # another language: p-values against the wrong text, no error
    ("short", "it has 2 lines"),  # an IndexError in the report, after every run had trained
])
def test_a_reference_that_is_not_the_runs_validation_references_is_refused_before_any_run_trains(
        finished_study, tmp_path, capsys, reference, says):
    folder, _ = finished_study
    if reference == "short":
        reference = tmp_path / "short.en"
        reference.write_text("".join((SAMPLE / "valid.en").read_text(encoding="utf-8").splitlines(True)[:2]),
                             encoding="utf-8")
    study = yaml.safe_load((folder / "study.yaml").read_text())
    study.update(work_dir=str(tmp_path / "runs"), results=str(tmp_path / "results"), reference=str(reference))
    (tmp_path / "study.yaml").write_text(yaml.safe_dump(study))
    with pytest.raises(SystemExit):
        study_command([str(tmp_path / "study.yaml"), "--seeds", "3"])
    err = capsys.readouterr().err
    assert f"the study's reference {reference} is not the" in err and says in err, err
    assert not (tmp_path / "runs").exists()


def test_blank_validation_pairs_dropped_by_skip_empty_are_refused_before_any_run_trains(finished_study, tmp_path,
                                                                                      capsys):
    """The translations of the pairs left were bootstrapped against the reference lines in order, every line after
    the blank one paired with the next sentence's reference."""
    folder, _ = finished_study
    lines = {side: (SAMPLE / f"valid.{side}").read_text(encoding="utf-8").splitlines()[:9] for side in ("ja", "en")}
    lines["en"][1] = ""
    for side, text in lines.items():
        (tmp_path / f"valid.{side}").write_text("\n".join(text) + "\n", encoding="utf-8")
    study = yaml.safe_load((folder / "study.yaml").read_text())
    study.update(work_dir=str(tmp_path / "runs"), results=str(tmp_path / "results"),
                 common=[*study["common"], "data.skip_empty=true", f"data.validation.source={tmp_path / 'valid.ja'}",
                         f"data.validation.target={tmp_path / 'valid.en'}"])
    (tmp_path / "study.yaml").write_text(yaml.safe_dump(study))
    with pytest.raises(SystemExit):
        study_command([str(tmp_path / "study.yaml"), "--seeds", "3"])
    assert "data.skip_empty drops the blank pair(s) at line(s) [2] of" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()


STUDY_TEXT = """config: unused.yaml
work_dir: runs
results: results
reference: ref.en
baseline: baseline
runs:
  baseline: {label: Transformer}
  rel: {label: Transformer_rel, set: [model.kwargs.dropout=0.3]}
"""


@pytest.mark.parametrize(("added", "message"), [
    ("  rel: {label: again}\n", r"the key 'rel' is given twice, on lines 8 and 9 \(YAML would keep only the second\)"),
    ("baseline: rel\n", r"the key 'baseline' is given twice, on lines 5 and 9"),
    ("loss_at_steps: 500\n", r"'loss_at_steps' is a list \(\[..., ...\]\), got 500"),
    ("loss_at_steps: [500, '1000']\n", r"'loss_at_steps' lists optimizer steps \(whole numbers from 1\)"),
    ('common: "training.max_steps=5"\n', r"'common' is a list \(\[..., ...\]\), got 'training.max_steps=5'"),
    ("config_fields: dropout\n", r"'config_fields' is a list"),
    ("reference_curves: [20.1, 24.3]\n", r"'reference_curves' maps a label to BLEU per evaluation"),
    ("reference_curves: {elsewhere: [20.1, high]}\n", r"'reference_curves' maps a label to BLEU per evaluation"),
])
def test_a_key_given_twice_or_a_list_given_as_one_value_is_refused(tmp_path, added, message):
    """PyYAML kept the second of two equal keys silently (a study with two runs of a name kept only the second); a
    string where a list goes was read character by character, a number failed with a TypeError."""
    (tmp_path / "study.yaml").write_text(STUDY_TEXT + added)
    with pytest.raises(StudyError, match=rf"study.yaml: .*{message}"):
        Study.load(tmp_path / "study.yaml")


def test_reference_curves_left_empty_means_none(tmp_path):
    """``reference_curves:`` with nothing after it (YAML null) was a TypeError from dict(None)."""
    (tmp_path / "study.yaml").write_text(STUDY_TEXT + "reference_curves:\n")
    assert Study.load(tmp_path / "study.yaml").reference_curves == {}


def test_a_run_s_set_given_as_one_string_is_refused(tmp_path):
    (tmp_path / "study.yaml").write_text(STUDY_TEXT.replace("[model.kwargs.dropout=0.3]", "model.kwargs.dropout=0.3"))
    with pytest.raises(StudyError, match=r"run 'rel': 'set' is a list of --set values"):
        Study.load(tmp_path / "study.yaml")


def test_a_run_that_fails_says_why_in_the_driver_s_error(finished_study, tmp_path, capsys):
    folder, _ = finished_study
    study = yaml.safe_load((folder / "study.yaml").read_text())
    study.update(work_dir=str(tmp_path / "runs"), results=str(tmp_path / "results"))
    study["runs"]["rel"]["set"].append(f"data.train={{source: {tmp_path / 'absent.ja'}, target: {tmp_path / 'absent.en'}}}")
    (tmp_path / "study.yaml").write_text(yaml.safe_dump(study))
    with pytest.raises(SystemExit):
        study_command([str(tmp_path / "study.yaml"), "--seeds", "3", "--runs", "rel"])
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.startswith("error: 1 run(s) failed: rel seed 3: error: ") and "absent.ja" in error


def test_a_report_that_fails_between_runs_leaves_the_queue_going(tmp_path, capsys):
    """A report after one run fails for any reason (here its results folder is a file): the next run still starts,
    rather than the driver ending there with the session's remaining hours unused. That next run was cut off during
    its first save, so it starts over."""
    config = tiny_config(tmp_path / "unused", max_steps=4)
    config["data"]["train"] = {"source": str(tmp_path / "absent.ja"), "target": str(tmp_path / "absent.en")}
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(config))
    (tmp_path / "results").write_text("not a folder")
    (tmp_path / "study.yaml").write_text(yaml.safe_dump({
        "config": str(tmp_path / "tiny.yaml"), "work_dir": str(tmp_path / "runs"), "results": str(tmp_path / "results"),
        "reference": str(SAMPLE / "valid.en"), "baseline": "baseline",
        "runs": {"baseline": {"label": "Transformer"}, "rel": {"label": "Transformer_rel"}}}))
    (tmp_path / "runs" / "rel" / "seed4" / "checkpoint-2").mkdir(parents=True)  # cut off during its first save
    with pytest.raises(StudyError, match=r"2 run\(s\) failed"):
        run_all(Study.load(tmp_path / "study.yaml"), [("rel", 3), ("rel", 4)], jobs=1, extra_tests=[])
    output = capsys.readouterr().out
    assert "report after rel seed 3 failed, retried at the end: NotADirectoryError" in output
    started = (tmp_path / "runs" / "rel" / "seed4" / "train.log").read_text().splitlines()[0]
    assert started.endswith("rel seed 4 started from step 0 (cut off while saving, moved aside: "
                            "incomplete-checkpoint-2)")  # not resumed from it, which failed in every session


def test_committed_records_outlive_their_run_folders(finished_study):
    """runs/ is not committed: when a run's folder is gone its committed record counts as finished (not trained
    again), stays in the results and still serves the bootstrap of the other runs (from its committed translations)."""
    folder, arguments = finished_study
    before = json.loads((folder / "results" / "results.json").read_text())
    baseline_runs, parked = folder / "runs" / "baseline", folder / "parked_baseline"
    baseline_runs.rename(parked)
    try:
        assert study_command(arguments) == 0
        assert not baseline_runs.exists()  # nothing trained
    finally:
        parked.rename(baseline_runs)
    after = json.loads((folder / "results" / "results.json").read_text())
    assert [(r["name"], r["seed"]) for r in after] == [("baseline", 3), ("rel", 3)]
    assert after[0] == before[0]
    assert after[1]["paired_bootstrap_p"] == before[1]["paired_bootstrap_p"]
    per_run_rows = [line for line in (folder / "results" / "results.md").read_text().splitlines()
                    if line.startswith("| baseline | 3 |")]
    assert len(per_run_rows) == 1 and "—" not in per_run_rows[0]  # the committed losses are still shown


def test_a_run_still_training_says_how_long_it_still_needs_at_its_own_pace(tmp_path, capsys):
    """Checkpoints every 2 steps, 60 s apart except for a session break of 900 s: the median pace is 30 s a step
    (the break is ignored), and 4 of the 12 steps are left, so 2 minutes. One checkpoint gives no estimate; one cut
    off while saving is read past."""
    study = baseline_and_rel_study(tmp_path)
    study = Study(**{**vars(study), "work_dir": tmp_path / "runs", "results": tmp_path / "results"})
    folder = study.output_dir("rel", 9)
    for step, saved_at in ((2, 1000), (4, 1060), (6, 1960), (8, 2020)):
        checkpoint = folder / f"checkpoint-{step}"
        checkpoint.mkdir(parents=True)
        history = [{"eval_bleu": float(done), "step": done} for done in range(2, step + 1, 2)]
        state = {"global_step": step, "max_steps": 12, "log_history": history}
        (checkpoint / "trainer_state.json").write_text(json.dumps(state))
        os.utime(checkpoint, (saved_at, saved_at))  # the folder's time is its save time
        if step == 2:
            assert minutes_left(folder) is None
    assert minutes_left(folder) == pytest.approx(2.0)
    cut_off = folder / "checkpoint-10"  # a session ended while saving it: no trainer_state.json (the progress failed)
    cut_off.mkdir()
    os.utime(cut_off, (2080, 2080))
    assert minutes_left(folder) == pytest.approx(2.0)  # read from checkpoint-8 until the run resumes
    print(progress(study))
    assert "| rel | 9 | training, ~2 min left | 2.00 | 4.00 | 6.00 | 8.00 |" in capsys.readouterr().out


def test_a_report_before_any_finished_run_writes_no_empty_tables(finished_study, tmp_path, capsys):
    folder, _ = finished_study
    study = yaml.safe_load((folder / "study.yaml").read_text())
    study.update(work_dir=str(tmp_path / "runs"), results=str(tmp_path / "results"))
    (tmp_path / "study.yaml").write_text(yaml.safe_dump(study))
    assert study_command([str(tmp_path / "study.yaml"), "--report"]) == 0
    assert "no finished run" in capsys.readouterr().out
    assert not list((tmp_path / "results").glob("results.*"))


def test_progress_shows_runs_still_training_beside_the_same_seeds_baseline(finished_study, tmp_path, capsys):
    """--progress reads a run that is still training from its newest checkpoint (seed 4: a copy of seed 3 without
    summary.json and its last checkpoint, as a session end leaves it), compares every row with the baseline's
    evaluation of the same number and seed, and writes nothing."""
    import shutil

    folder, _ = finished_study
    study = yaml.safe_load((folder / "study.yaml").read_text())
    study.update(work_dir=str(tmp_path / "runs"), results=str(tmp_path / "results"))
    (tmp_path / "study.yaml").write_text(yaml.safe_dump(study))
    for run in ("baseline", "rel"):
        shutil.copytree(folder / "runs" / run / "seed3", tmp_path / "runs" / run / "seed3")
    interrupted = tmp_path / "runs" / "rel" / "seed4"
    shutil.copytree(folder / "runs" / "rel" / "seed3", interrupted)
    (interrupted / "summary.json").unlink()
    shutil.rmtree(interrupted / "checkpoint-4")

    assert study_command([str(tmp_path / "study.yaml"), "--progress"]) == 0
    rows = {tuple(cell.strip() for cell in line.split("|")[1:4]): line.split("|")[4:-1]
            for line in capsys.readouterr().out.splitlines() if line.startswith("| ") and "---" not in line}
    history = log_history(folder / "runs" / "rel" / "seed3")
    scores = [f"{entry['eval_bleu']:.2f}" for entry in history if "eval_bleu" in entry]
    baseline = [entry["eval_bleu"] for entry in log_history(folder / "runs" / "baseline" / "seed3")
                if "eval_bleu" in entry]
    last_delta = f"{float(scores[1]) - baseline[1]:+.2f}"
    assert [cell.strip() for cell in rows["rel", "3", "finished"]] == [*scores, last_delta]
    assert [cell.strip() for cell in rows["rel", "4", "training"]] == [scores[0], "", "—"]  # no baseline of seed 4
    assert set(rows) == {("run", "seed", "state"), ("baseline", "3", "finished"), ("rel", "3", "finished"),
                         ("rel", "4", "training")}
    assert not (tmp_path / "results").exists()


def test_the_difference_to_the_baseline_is_taken_over_the_same_seeds(tmp_path):
    """A run of seed 43 only is compared with seed 43's baseline, not with the mean over seeds 42 and 43."""
    study = baseline_and_rel_study(tmp_path)

    def record(name, seed, bleu):
        return {"name": name, "label": name, "seed": seed, "steps": 8, "dev_bleu": bleu, "dev_chrf": 50.0,
                "dev_bleu_per_epoch": [bleu], "train_seconds": 10, "train_loss": {}, "extra_tests": {}}

    records = [record("baseline", 42, 39.0), record("baseline", 43, 42.0), record("rel", 43, 41.5)]
    rel_row = next(line for line in markdown(study, records).splitlines() if line.startswith("| rel | "))
    assert "| -0.50 |" in rel_row  # 41.5 - 42.0; against the two-seed mean 40.5 it would read +1.00


def test_wall_times_are_set_against_the_baseline_s_only_at_equal_threads_jobs_and_device(tmp_path):
    """A run trained alone at two threads (or on a GPU) is not 0.45x the baseline's time because it is faster: its
    ratio is left out, and the per-run table says how and where each run was trained."""
    study = baseline_and_rel_study(tmp_path)

    def record(name, seed, seconds, **settings):
        return {"name": name, "label": name, "seed": seed, "steps": 8, "dev_bleu": 40.0, "dev_chrf": 50.0,
                "dev_bleu_per_epoch": [40.0], "train_seconds": seconds, "train_loss": {}, "extra_tests": {}, **settings}

    records = [record("baseline", 42, 100), record("baseline", 43, 100),  # committed before settings were recorded
               record("rel", 42, 120, threads=1, jobs=2), record("rel", 43, 45, threads=2, jobs=1)]
    lines = markdown(study, records).splitlines()
    assert next(line for line in lines if line.startswith("| rel | rel |")).endswith("| 1.20 |")  # seed 42 only
    assert next(line for line in lines if line.startswith("| rel | 43 |")).endswith("| 45 | 2 / 1 |")
    assert next(line for line in lines if line.startswith("| baseline | 42 |")).endswith("| 100 | 1 / 2 |")
    records.append(record("rel", 44, 30, threads=2, jobs=8, device="NVIDIA H100 80GB HBM3"))
    records.append(record("baseline", 44, 300, threads=2, jobs=8))  # the same settings on CPU: no ratio either
    lines = markdown(study, records).splitlines()
    assert next(line for line in lines if line.startswith("| rel | 44 |")).endswith("| 2 / 8 on NVIDIA H100 80GB HBM3 |")
    assert next(line for line in lines if line.startswith("| rel | rel |")).endswith("| 1.20 |")
    records[3].update(threads=None, jobs=None)  # resumed with other settings than it started with
    assert next(line for line in markdown(study, records).splitlines()
                if line.startswith("| rel | 43 |")).endswith("| mixed / mixed |")


def load_benchmark(path: str):
    """A script of benchmarks/ by its path there (analyses/bleu_by_length, gpu_study)."""
    spec = importlib.util.spec_from_file_location(Path(path).name, ROOT / "benchmarks" / f"{path}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_length_buckets_cut_at_quartiles_and_never_come_out_empty():
    analysis = load_benchmark("analyses/bleu_by_length")
    eight_lengths = [" ".join(["w"] * n) for n in range(1, 9)]
    assert analysis.length_buckets(eight_lengths) == [(1, 2), (3, 4), (5, 6), (7, 8)]
    two_lengths = ["a b"] * 5 + ["a b c d e"] * 5
    assert analysis.length_buckets(two_lengths) == [(2, 4), (5, 5)]
    assert analysis.length_buckets(["a b c"] * 5) == [(3, 3)]


def test_bleu_by_length_scores_every_sentence_once_against_the_same_seed(finished_study, capsys):
    folder, _ = finished_study
    analysis = load_benchmark("analyses/bleu_by_length")
    heldout = ["--split", "heldout", str(SAMPLE / "heldout.ja"), str(SAMPLE / "heldout.en")]
    assert analysis.main([str(folder / "study.yaml"), *heldout]) == 0
    records = json.loads((folder / "results" / "results_by_length.json").read_text())
    assert [(r["name"], r["seed"], r["split"]) for r in records] == [("rel", 3, "heldout")]
    buckets = records[0]["buckets"]
    assert len(buckets) == 4 and sum(b["sentences"] for b in buckets) == 100
    for bucket in buckets:
        assert bucket["delta"] == pytest.approx(bucket["system"]["bleu"] - bucket["baseline"]["bleu"], abs=0.011)
        assert len(bucket["system"]["precisions"]) == 4 and bucket["baseline"]["length_ratio"] > 0
        assert 0 <= bucket["p"] <= 1
    assert "| Transformer_rel | 3 |" in (folder / "results" / "results_by_length.md").read_text()


def test_bleu_by_length_rejects_inputs_it_cannot_cut(finished_study, tmp_path, capsys):
    folder, _ = finished_study
    analysis = load_benchmark("analyses/bleu_by_length")
    unsegmented = tmp_path / "unsegmented.ja"
    unsegmented.write_text("".join(line.replace(" ", "") + "\n" for line in (SAMPLE / "heldout.ja").read_text().splitlines()))
    assert analysis.main([str(folder / "study.yaml"), "--split", "heldout", str(unsegmented), str(SAMPLE / "heldout.en")]) == 2
    assert "pass a word-segmented copy" in capsys.readouterr().err
    short = tmp_path / "short.ja"
    short.write_text("彼 は 来 た 。\n")
    assert analysis.main([str(folder / "study.yaml"), "--split", "heldout", str(short), str(short)]) == 2
    assert "has 100 lines but the split's source has 1" in capsys.readouterr().err
    assert analysis.main([str(folder / "study.yaml"), "--split", "nosuchsplit", str(short), str(short)]) == 2
    assert "no run of study has translations of ['nosuchsplit']" in capsys.readouterr().err
    study = yaml.safe_load((folder / "study.yaml").read_text())
    (tmp_path / "fresh.yaml").write_text(yaml.safe_dump({**study, "results": str(tmp_path / "no_results_yet")}))
    heldout = ["--split", "heldout", str(SAMPLE / "heldout.ja"), str(SAMPLE / "heldout.en")]
    assert analysis.main([str(tmp_path / "fresh.yaml"), *heldout]) == 2  # no translations folder yet
    assert "no run of fresh has translations" in capsys.readouterr().err


def test_forest_plot_draws_one_panel_per_metric_and_names_a_metric_the_study_did_not_score(tmp_path):
    forest_plot = load_benchmark("forest_plot")
    summary = {"bleu": {"mean": 0.6, "interval": [-2.2, 3.4], "seeds": 3},
               "cross_entropy": {"mean": -0.024, "interval": [-0.076, 0.029], "seeds": 3}}
    (tmp_path / "results_over_seeds.json").write_text(json.dumps({"rel": summary, "dep": {"bleu": summary["bleu"]}}))
    (tmp_path / "results.json").write_text(json.dumps([{"name": "rel", "seed": 42, "epochs": 12}]))
    with pytest.raises(SystemExit, match="no 'cross_entropy' for dep.*Leave that metric out"):
        forest_plot.main([str(tmp_path), "--metrics", "bleu", "cross_entropy"])
    (tmp_path / "results_over_seeds.json").write_text(json.dumps({"rel": summary}))
    assert forest_plot.load_rows(tmp_path, "cross_entropy") == [
        {"name": "rel", "mean": -0.024, "interval": [-0.076, 0.029], "seeds": 3, "epochs": 12}]
    forest_plot.main([str(tmp_path), "--metrics", "bleu", "cross_entropy"])
    from PIL import Image

    with Image.open(tmp_path / "forest_bleu_cross_entropy.png") as two_panels:
        forest_plot.main([str(tmp_path)])
        with Image.open(tmp_path / "forest_bleu.png") as one_panel:
            assert two_panels.width == one_panel.width and two_panels.height > 1.8 * one_panel.height


def test_another_study_s_results_of_the_same_runs_are_tabled_beside_over_the_seeds_both_have(tmp_path):
    """The plateau study beside the 8-epoch one: scores and differences to each study's own baseline, per run, over
    the seeds both studies ran (seed 44, only here, is left out)."""
    study = baseline_and_rel_study(tmp_path)

    def record(name, seed, bleu):
        return {"name": name, "label": name, "seed": seed, "steps": 8, "dev_bleu": bleu, "dev_chrf": 50.0,
                "dev_bleu_per_epoch": [bleu], "train_seconds": 10, "train_loss": {}, "extra_tests": {}}

    (tmp_path / "early.json").write_text(json.dumps([record("baseline", 42, 38.0), record("baseline", 43, 39.0),
                                                     record("rel", 42, 39.5), record("rel", 43, 39.5)]))
    study = Study(**{**vars(study), "beside": {"label": "8 epochs", "results": str(tmp_path / "early.json")}})
    records = [record("baseline", 42, 43.0), record("baseline", 43, 43.5), record("rel", 42, 43.0),
               record("rel", 43, 44.0), record("rel", 44, 50.0)]
    lines = markdown(study, records).splitlines()
    assert "| rel | 42, 43 | 43.50 | 39.50 | +0.25 | +1.00 |" in lines
    assert "| baseline | 42, 43 | 43.25 | 38.50 | — | — |" in lines
    study = Study(**{**vars(study), "beside": {"label": "8 epochs", "results": str(tmp_path / "missing.json")}})
    with pytest.raises(StudyError, match="missing.json"):
        markdown(study, records)


SHIPPED_STUDIES = sorted((ROOT / "benchmarks" / "studies").glob("*.yaml"))


@pytest.mark.parametrize("study_file", SHIPPED_STUDIES, ids=[path.stem for path in SHIPPED_STUDIES])
def test_every_shipped_study_run_resolves_to_a_config_that_can_train(study_file, tmp_path):
    """A misspelt override in a study file used to surface only when its run started, hours into a session: every
    run's settings (the base config, the shared and the run's own ``--set`` values) must pass the recipe's checks."""
    from hf_syntax.recipes.translation.schema import load_recipe_config
    from hf_syntax.study.processes import config_path
    from hf_syntax.study.study_file import run_overrides

    study = Study.load(study_file)
    assert (ROOT / study.config).is_file(), study.config
    for run in study.runs:
        config = load_recipe_config(config_path(study), [*run_overrides(study, run, 42), f"output_dir={tmp_path}"])
        assert config.seed == 42, run
