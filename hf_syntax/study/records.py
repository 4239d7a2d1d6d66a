"""What a study keeps of each run: the record of a finished run (scores, curve, the references' cross-entropy, wall
time, settings, extra tests, blind translation), read from its folder or from the committed results file when the
folder is gone.

A run folder is ``<work_dir>/<run>/seed<N>``: the recipe's checkpoints, ``summary.json`` and ``model/``, and the
driver's ``driver_seconds.json`` (wall time of every invocation), ``driver_settings.json`` (threads, jobs, start
time and the machine's reference step time of every invocation) and ``reference_cross_entropy.json``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from hf_syntax.data.corpus import read_lines
from hf_syntax.recipes.runs import (CHECKPOINT_WEIGHTS, SUMMARY_FILE, checkpoint_folders, seconds_per_step, timed_stretches,
                                    write_text_atomically)
from hf_syntax.study.processes import TRAIN_LOG, score_cross_entropy, translate, without_redraws
from hf_syntax.study.significance import scores
from hf_syntax.study.study_file import Study, StudyError, flatten, run_overrides

WALL_CLOCK_FILE = "driver_seconds.json"  # wall time of every invocation of a run, summed over resumed sessions
CROSS_ENTROPY_FILE = "reference_cross_entropy.json"  # the final model's cross-entropy of the split's references
EXTRA_TESTS_FILE = "extra_tests.json"  # the final model's scores on each --extra-test, kept across resumed sessions
SETTINGS_FILE = "driver_settings.json"
"""Threads and jobs of every invocation (wall times compare only at equal ones), and since issue 62's seed 44 when it
started and its machine's reference step time (``machine_pace``), so that epoch times from two machines compare."""
DEFAULT_SETTINGS = {"threads": 1, "jobs": 2}  # what every run before the settings were recorded trained with


def invocation_log(folder: Path, name: str) -> list:
    """One entry per earlier invocation of a run (its wall time or its settings); empty before the first."""
    return json.loads((folder / name).read_text()) if (folder / name).exists() else []


def newest_trainer_state(folder: Path) -> dict | None:
    """The newest checkpoint's ``trainer_state.json`` that can be read: a session that ended while saving leaves the
    newest without it (or with half of it) until the run resumes; None before the first checkpoint."""
    for checkpoint in reversed(checkpoint_folders(folder)):
        try:
            return json.loads((checkpoint / "trainer_state.json").read_text())
        except (OSError, ValueError):
            continue
    return None


def log_history(folder: Path) -> list[dict]:
    """The Trainer's log (the newest checkpoint's trainer_state.json holds all of it up to that checkpoint)."""
    state = newest_trainer_state(folder)
    return state["log_history"] if state else []


def minutes_left(folder: Path) -> float | None:
    """How long a run still training needs to reach its budget at its own pace (``seconds_per_step``) from its newest
    checkpoint. None before two checkpoints; a run that stops early needs less."""
    pace, state = seconds_per_step(folder), newest_trainer_state(folder)
    if pace is None or state is None:
        return None
    return (state["max_steps"] - state["global_step"]) * pace / 60


MIN_TIMED_STRETCHES = 3
"""Stretches between checkpoints an epoch time needs: with fewer (a run that kept only its best and last checkpoints,
``save_total_limit``), the fastest may still span a break."""


def seconds_per_epoch(folder: Path, summary: dict) -> float | None:
    """One epoch's wall time with its evaluation, at the run's fastest stretch between two checkpoints: on a shared
    machine other work (tests, a second run, a pause for CI, a session break) only slows a stretch down, so the fastest
    is the pace the model itself sets, and it compares between runs trained at different times. A run cut from a longer
    one is timed on the checkpoints it copied (copies keep their save times, as do runs packed on another machine).
    None with fewer than :data:`MIN_TIMED_STRETCHES` stretches: time a run by keeping its checkpoints
    (``save_total_limit: null``, as the plateau recipes do)."""
    return _fastest_epoch([pace for _, _, pace in timed_stretches(folder)], summary)


def epoch_in_reference_steps(folder: Path, summary: dict) -> float | None:
    """:func:`seconds_per_epoch` with each stretch's pace divided by the reference step time
    (:mod:`~hf_syntax.study.machine_pace`) of the invocation that trained it: how many reference steps one epoch
    takes, a pace that compares between machines. Only stretches that lie within one invocation which timed the
    machine count (a stretch across a resume spans two machines, perhaps); None with fewer than
    :data:`MIN_TIMED_STRETCHES` of them."""
    invocations = [entry for entry in invocation_log(folder, SETTINGS_FILE) if "started" in entry]
    relative = []
    for begun, ended, pace in timed_stretches(folder):
        before = [entry for entry in invocations if entry["started"] <= begun]
        if before and "reference_seconds" in before[-1] and not any(begun < entry["started"] <= ended
                                                                      for entry in invocations):
            relative.append(pace / before[-1]["reference_seconds"])
    return _fastest_epoch(relative, summary)


def _fastest_epoch(paces: list[float], summary: dict) -> float | None:
    """The fastest of per-step ``paces`` times the steps of an epoch (0: a stretch whose save times were not kept)."""
    paces = [pace for pace in paces if pace > 0]
    if len(paces) < MIN_TIMED_STRETCHES or not summary["epochs"]:
        return None
    return round(min(paces) * summary["optimizer_steps"] / summary["epochs"], 1)


def tokenizer_fingerprint(folder: Path) -> str | None:
    """The first 16 hex digits of the SHA-256 of a folder's ``tokenizer.json`` (None where it has none): runs of one
    study compare only when they share their vocabulary, and a ``runs/`` prepared anew in a later session might not."""
    path = folder / "tokenizer.json"
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16] if path.is_file() else None


def prepared_tokenizer(study: Study, run: str, seed: int) -> Path | None:
    """The tokenizer folder a run's ``tokenizer.path`` override names (a study's prepared data), if any."""
    paths = [value for key, _, value in (entry.partition("=") for entry in run_overrides(study, run, seed))
             if key == "tokenizer.path"]
    return Path(paths[-1]) if paths else None


def check_one_vocabulary(study: Study, records: list[dict]) -> None:
    """Refuse records of one study trained with different tokenizers (a run that sets its own ``tokenizer.*`` is
    left out): their scores would not compare, and nothing else would show it."""
    own_tokenizer = {name for name, run in study.runs.items()
                     if any(entry.startswith("tokenizer.") for entry in flatten(run.get("set") or []))}
    runs_by_fingerprint: dict[str, list[str]] = {}
    for record in records:
        if record.get("tokenizer_sha256") and record["name"] not in own_tokenizer:
            runs_by_fingerprint.setdefault(record["tokenizer_sha256"], []).append(f"{record['name']} seed {record['seed']}")
    if len(runs_by_fingerprint) > 1:
        groups = "; ".join(f"{', '.join(runs)} with tokenizer {fingerprint}"
                           for fingerprint, runs in runs_by_fingerprint.items())
        raise StudyError(f"{study.name}: its runs use different tokenizers ({groups}), so their scores do not compare. "
                         f"{study.work_dir} was probably prepared anew after the first runs (with other data or library "
                         f"versions): restore the tokenizer they used, or start the study over by moving "
                         f"{study.results / (study.results_name + '.json')} aside")


def committed_records(study: Study) -> dict[tuple[str, int], dict]:
    """The records already in the results file, by (run, seed): a run whose folder is gone (``runs/`` is not
    committed and may not outlive a session) keeps its record, and its committed translations still serve the
    paired bootstrap. Labels follow the study file; records of runs it no longer names are dropped. A record from
    before ``--extra-test`` or ``loss_at_steps`` gets them empty; one without a name and seed is refused."""
    path = results_file(study)
    if not path.exists():
        return {}
    try:
        committed = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise StudyError(f"{path} is not JSON ({error}); restore it (git checkout {path})") from None
    if not isinstance(committed, list):
        raise StudyError(f"{path} holds {type(committed).__name__}, not a list of run records; restore it")
    records = {}
    for number, record in enumerate(committed, start=1):
        if not isinstance(record, dict) or not {"name", "seed"} <= set(record):
            raise StudyError(f"{path}: record {number} has no name and seed ({str(record)[:80]}); restore the file, "
                             f"or remove the record")
        if record["name"] not in study.runs:
            continue
        record["label"] = study.runs[record["name"]].get("label", record["name"])
        record.setdefault("extra_tests", {})
        if "train_loss" in record:  # JSON made the step keys strings
            record["train_loss"] = {int(step): loss for step, loss in record["train_loss"].items()}
        elif study.loss_at_steps:  # shown as not logged
            record["train_loss"] = {}
        records[record["name"], record["seed"]] = record
    return records


def results_file(study: Study) -> Path:
    """The study's committed records (``results.json``, or its ``results_name``)."""
    return study.results / f"{study.results_name}.json"


REPORTED_KEYS = ("steps", "train_seconds")
REPORTED_SPLIT_KEYS = ("bleu", "chrf", "bleu_per_epoch")
"""What the report reads from every record besides its name and seed (the split's keys as ``<split>_bleu``)."""


def check_reportable(study: Study, records: dict[tuple[str, int], dict], split_keys: tuple[str, ...] | None = None,
                     ) -> None:
    """Refuse committed records that lack what the report reads (or only the ``split_keys`` a lighter reader needs),
    naming the file, the record and the keys: an older or hand-edited results.json failed deep in the report with a
    bare KeyError."""
    required = ((*REPORTED_KEYS, *REPORTED_SPLIT_KEYS) if split_keys is None else split_keys)
    required = tuple(f"{study.split}_{key}" if key in REPORTED_SPLIT_KEYS else key for key in required)
    for (run, seed), record in records.items():
        if missing := [key for key in required if key not in record]:
            raise StudyError(f"{results_file(study)}: the record of {run} seed {seed} lacks {', '.join(missing)} "
                             f"(written by an older version or edited by hand); restore the file, or remove the "
                             f"record to train that run again")


def extra_test_name(source: Path) -> str:
    """What an extra test is called in records and file names: its source file's name up to the first dot."""
    return source.name.split(".")[0]


def check_extra_tests(pairs: list[tuple[Path, Path]]) -> None:
    """Refuse ``--extra-test`` pairs that are missing or whose sides differ in length, before anything trains."""
    for source, reference in pairs:
        for path in (source, reference):
            if not path.is_file():
                raise StudyError(f"--extra-test: no file {path}")
        if len(read_lines(source)) != len(read_lines(reference)):
            raise StudyError(f"--extra-test: {source} and {reference} have different line counts")


@dataclass(frozen=True)
class BlindSource:
    """A source whose references are kept elsewhere (``--blind``), and optionally its trees made beforehand
    (``--blind-trees``, written by ``hf-syntax parse``) for a machine where the models' parser is not installed."""

    source: Path
    trees: Path | None = None


def blind_cache(folder: Path, source: Path) -> Path:
    """Where a run folder keeps its translation of a blind source."""
    return folder / f"predictions_blind_{source.name.split('.')[0]}.txt"


def translate_blind(study: Study, run: str, seed: int, blind: BlindSource) -> None:
    """Translate a blind source with the run's chosen checkpoint, exactly as an extra test, into
    ``<results>/blind/``: translated once and cached in the run folder, one line per source line."""
    folder = study.output_dir(run, seed)
    cached = blind_cache(folder, blind.source)
    if not cached.exists():
        lines = read_lines(blind.source)
        hypotheses = translate(folder / "model", lines, blind.trees)
        if len(hypotheses) != len(lines):
            raise StudyError(f"--blind: {run} seed {seed} gave {len(hypotheses)} lines for the {len(lines)} of "
                             f"{blind.source}; see {folder / TRAIN_LOG}")
        write_text_atomically(cached, "\n".join(hypotheses) + "\n")
    blind_folder = study.results / "blind"
    blind_folder.mkdir(parents=True, exist_ok=True)
    prefix = "" if study.results_name == "results" else f"{study.results_name}."
    write_text_atomically(blind_folder / f"{prefix}{run}.seed{seed}.txt", cached.read_text(encoding="utf-8"))


def _extra_test_scores(folder: Path, extra_tests: list[tuple[Path, Path]], translations: Path, tag: str) -> dict:
    """Each extra test's scores, translated with the run's chosen checkpoint once and cached in the run folder
    (``extra_tests.json``); the translations are copied to the results."""
    extra = json.loads((folder / EXTRA_TESTS_FILE).read_text()) if (folder / EXTRA_TESTS_FILE).exists() else {}
    for source, reference in extra_tests:
        name = extra_test_name(source)
        if name not in extra:
            hypotheses = translate(folder / "model", read_lines(source))
            write_text_atomically(folder / f"predictions_{name}.txt", "\n".join(hypotheses) + "\n")
            extra[name] = {**scores(hypotheses, read_lines(reference)), "source": str(source)}
        extra[name]["reference"] = str(reference)  # the report's paired bootstrap on this test reads it
        write_text_atomically(folder / EXTRA_TESTS_FILE, json.dumps(extra, indent=2) + "\n")
        write_text_atomically(translations / f"{tag}.{name}.txt",
                              (folder / f"predictions_{name}.txt").read_text(encoding="utf-8"))
    return extra


def cached_cross_entropy(study: Study, model_dir: Path, cache: Path) -> dict:
    """``hf-syntax evaluate --metrics cross-entropy`` of a model folder on the study's split, read from ``cache`` where
    it was scored before, else scored and written there."""
    if cache.exists():
        return json.loads(cache.read_text())
    scored = score_cross_entropy(model_dir, study.source, study.reference, study.source_trees)
    write_text_atomically(cache, json.dumps(scored, indent=2) + "\n")
    return scored


def reference_cross_entropy(study: Study, folder: Path) -> dict:
    """The split's fields of the final model's teacher-forced cross-entropy of the study's references, scored once
    and cached in the run folder; none where the study names no ``source``, or where the run came back from
    another machine without its weights and without that score (``benchmarks/gpu_study.py`` scores it there)."""
    cached = folder / CROSS_ENTROPY_FILE
    has_weights = any((folder / "model" / name).is_file() for name in CHECKPOINT_WEIGHTS)
    if study.source is None or not (cached.exists() or has_weights):
        return {}
    scored = cached_cross_entropy(study, folder / "model", cached)
    return {f"{study.split}_cross_entropy": round(scored["cross_entropy"], 4),
            f"{study.split}_reference_tokens": scored["tokens"]}


def collect(study: Study, run: str, seed: int, extra_tests: list[tuple[Path, Path]], translations: Path,
            blind: BlindSource | None = None) -> dict | None:
    """The record of one finished run (None before it has finished); its dev translations and log (without
    progress-bar redraws) are copied to the results."""
    folder = study.output_dir(run, seed)
    if not (folder / SUMMARY_FILE).exists():
        return None
    summary = json.loads((folder / SUMMARY_FILE).read_text())
    history = log_history(folder)
    evaluated = [entry for entry in history if "eval_bleu" in entry]
    losses = {entry["step"]: entry["loss"] for entry in history if "loss" in entry}
    wall_clock = folder / WALL_CLOCK_FILE
    settings = invocation_log(folder, SETTINGS_FILE)
    distinct = {(entry["threads"], entry["jobs"]) for entry in settings} or {tuple(DEFAULT_SETTINGS.values())}
    threads, jobs = distinct.pop() if len(distinct) == 1 else (None, None)  # None: invocations differed
    tag = study.tag(run, seed)
    dev = (folder / "predictions_validation.txt").read_text(encoding="utf-8")
    write_text_atomically(translations / f"{tag}.dev.txt", dev)
    if (folder / TRAIN_LOG).exists():
        logs = study.results / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        write_text_atomically(logs / f"{tag}.log", without_redraws(folder / TRAIN_LOG))
    extra = _extra_test_scores(folder, extra_tests, translations, tag)
    if blind is not None:
        translate_blind(study, run, seed, blind)
    split = study.split
    model_config = json.loads((folder / "model" / "config.json").read_text())
    return {
        "name": run, "label": study.runs[run].get("label", run), "model_type": summary["model_type"], "seed": seed,
        **{field: model_config.get(field) for field in study.config_fields},
        "steps": summary["optimizer_steps"], "epochs": round(summary["epochs"], 2),
        f"{split}_bleu": round(summary["validation_bleu"], 2), f"{split}_chrf": round(summary["validation_chrf"], 2),
        f"{split}_bleu_per_epoch": [round(entry["eval_bleu"], 2) for entry in evaluated],
        **reference_cross_entropy(study, folder),
        **({"train_loss": {step: losses.get(step) for step in study.loss_at_steps}} if study.loss_at_steps else {}),
        "train_seconds": round(sum(json.loads(wall_clock.read_text())) if wall_clock.exists() else summary["train_seconds"]),
        "seconds_per_epoch": seconds_per_epoch(folder, summary),
        "epoch_in_reference_steps": epoch_in_reference_steps(folder, summary),
        "reference_seconds": [entry["reference_seconds"] for entry in settings if "reference_seconds" in entry],
        "threads": threads, "jobs": jobs, "device": summary.get("device", "cpu"),
        "parameters": summary["parameters"],
        "tokenizer_sha256": tokenizer_fingerprint(folder / "model"),
        # how the final model was made from the last checkpoints, where the recipe averaged them (null: it did not)
        "average_last_checkpoints": summary.get("average_last_checkpoints"),
        "extra_tests": {name: {key: value[key] for key in ("bleu", "chrf", "reference") if key in value}
                        for name, value in extra.items()},
        **({"blind": str(blind.source)} if blind is not None else {}),
    }
