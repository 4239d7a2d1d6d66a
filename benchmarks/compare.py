"""One driver for every real-data comparison: named runs of the translation recipe, seeds, a results table.

    python benchmarks/compare.py benchmarks/studies/enja_converged.yaml --seeds 42 43 --jobs 2
    python benchmarks/compare.py STUDY --runs baseline dbsa_enc_dec --extra-test test.ja test.en
    python benchmarks/compare.py STUDY --runs baseline:43 dbsa_dep_rel:43,44 --jobs 3   # seeds per run
    python benchmarks/compare.py STUDY --report            # rebuild the tables from finished runs only
    python benchmarks/compare.py STUDY --progress          # where every run stands, finished or still training

A study file (YAML, see benchmarks/studies/) names a base recipe config, shared ``--set`` overrides, ``prepare``
commands run once (e.g. ``hf-syntax preprocess``, so feature runs share one parse of the corpus), the baseline and
the runs (label + ``--set`` overrides each), and optionally ``against``: runs to pair by seed with other references
than the baseline (``{transformer_rel: [transformer_dep_rel]}``: does the tree add to the relative positions?). Run
from the repository root: the study's paths are relative to it.

Each (run, seed) trains in ``<work_dir>/<run>/seed<seed>`` at ``--threads`` (1), ``--jobs`` of them side by side; a run
whose folder holds ``summary.json`` or whose record is already in the results file is finished and skipped (delete
the record to train it again), one with checkpoints is resumed. After every finished
run the results are rewritten (``results.json``, ``results.md``, ``learning_curves.png``, translations, logs
without progress-bar redraws), so an interrupted session loses nothing but the runs in flight (whose time so far
is already counted in ``driver_seconds.json``; the threads and jobs it ran with are in ``driver_settings.json``, and
a wall time is set against the baseline's only when both ran with the same ones). Every model is
compared with the baseline of the same seed by sacreBLEU's paired bootstrap, and over seeds by the mean of those
paired differences with its 95% t-interval (seed noise, which the bootstrap does not see). ``--extra-test SRC REF``
(repeatable) also translates another test pair with each run's best checkpoint, scores it and compares it the same
way (bootstrap per seed, interval over seeds); ``--blind SRC`` translates a source whose references are kept
elsewhere into ``<results>/blind/<run>.seed<N>.txt``, never scored (``--blind-trees`` gives its parse made
beforehand, where the parser is not installed, e.g. on a GPU machine).

A study with ``continues: <work_dir of another study>`` is a longer budget of the same schedule: each of its runs
starts where that study's run of the same name and seed ended (its checkpoints, log and wall time are copied), and
its early-stopping count starts from that run's evaluations. A run that study never trained (no checkpoint there)
trains the longer budget from scratch: the same schedule, only without the shorter run's head start.

This file runs the study (scheduling, wall-clock bookkeeping, translating, collecting each run's record);
``study_report.py`` beside it turns the records into scores, statistics over seeds, tables and plots.
"""

from __future__ import annotations

import argparse
import functools
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from study_report import (
    DEFAULT_SETTINGS, against_references, committed_records, log_history, markdown, over_seeds, paired_bootstrap,
    plot_learning_curves, progress, scores,
)

TREE = Path(__file__).resolve().parents[1]  # the code this driver runs (its own checkout)
RECIPE = TREE / "training" / "train_translation.py"
HF_SYNTAX = [sys.executable, "-m", "hf_syntax.cli"]  # the command line of this checkout, installed or not
OFFLINE_QUIET = {
    "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_DISABLE_PROGRESS_BARS": "1",
}
WALL_CLOCK_FILE = "driver_seconds.json"  # wall time of every invocation of a run, summed over resumed sessions
SETTINGS_FILE = "driver_settings.json"  # threads and jobs of every invocation: wall times compare only at equal ones


class StudyError(Exception):
    """A malformed study file or command line: printed as one ``error:`` line."""


@dataclass(frozen=True)
class Study:
    name: str
    results_name: str  # results.json by default; a second study sharing the folder picks another (diagnosis.json)
    config: Path
    work_dir: Path
    results: Path
    reference: Path
    baseline: str
    split: str  # how the records name the evaluated split: dev_bleu (default) or e.g. val_bleu
    loss_at_steps: list[int]  # training losses recorded at these steps (``train_loss``), if any
    config_fields: list[str]  # model config values recorded per run (e.g. the reading of an ablation)
    reference_curves: dict[str, list[float]]  # curves measured elsewhere, drawn dashed beside the runs
    common: list[str]
    prepare: list[dict]
    runs: dict[str, dict]
    continues: Path | None = None  # work_dir of a shorter budget of the same schedule whose runs these continue
    against: dict[str, list[str]] = field(default_factory=dict)  # other references: {reference: [runs paired with it]}

    @classmethod
    def load(cls, path: Path) -> "Study":
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        missing = {"config", "work_dir", "results", "reference", "baseline", "runs"} - set(raw)
        if missing:
            raise StudyError(f"{path}: missing keys {sorted(missing)}")
        if raw["baseline"] not in raw["runs"]:
            raise StudyError(f"{path}: baseline {raw['baseline']!r} is not one of the runs {sorted(raw['runs'])}")
        against = {reference: list(runs) for reference, runs in (raw.get("against") or {}).items()}
        unknown = sorted({name for reference, runs in against.items() for name in [reference, *runs]} - set(raw["runs"]))
        if unknown:
            raise StudyError(f"{path}: 'against' names {unknown}, which are not runs of the study {sorted(raw['runs'])}")
        return cls(name=path.stem, results_name=raw.get("results_name", "results"), config=Path(raw["config"]),
                   work_dir=Path(raw["work_dir"]), results=Path(raw["results"]), reference=Path(raw["reference"]),
                   baseline=raw["baseline"], split=raw.get("split", "dev"),
                   loss_at_steps=list(raw.get("loss_at_steps", [])), config_fields=list(raw.get("config_fields", [])),
                   reference_curves=dict(raw.get("reference_curves", {})), common=list(raw.get("common", [])),
                   prepare=list(raw.get("prepare", [])), runs=raw["runs"],
                   continues=Path(raw["continues"]) if raw.get("continues") else None, against=against)

    def output_dir(self, run: str, seed: int) -> Path:
        return self.work_dir / run / f"seed{seed}"

    def tag(self, run: str, seed: int) -> str:
        """File-name stem of a run's translations and log (prefixed when the folder holds several studies)."""
        prefix = "" if self.results_name == "results" else f"{self.results_name}."
        return f"{prefix}{run}.s{seed}"


def child_environment(threads: int = 1) -> dict[str, str]:
    """``threads`` per job (one by default: runs side by side share the cores evenly), offline, and this checkout's
    code first on the path (a frozen copy stays frozen)."""
    return {**os.environ, **OFFLINE_QUIET, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads),
            "PYTHONPATH": os.pathsep.join(filter(None, [str(TREE), os.environ.get("PYTHONPATH")]))}


def read_lines(path: Path) -> list[str]:
    """As ``hf_syntax.data.corpus.read_lines``; the driver keeps its own so it never imports the package it runs in
    child processes (their checkout may not be the installed one)."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        return handle.read().splitlines()


def flatten(overrides: list) -> list[str]:
    """``--set`` lists may nest (a YAML alias to a shared list of overrides inside a run's list)."""
    return [item for entry in overrides for item in (flatten(entry) if isinstance(entry, list) else [str(entry)])]


PROGRESS_BAR = re.compile(r"\d+%\|.*\| *\d+/\d+ \[")
"""A tqdm bar as shown ("Writing model shards: 100%|████| 1/1 [00:00<00:00, ...]")."""


def without_redraws(log: Path) -> str:
    """A log as a reader wants it: of each carriage-return-redrawn line, only what was finally shown (read as bytes:
    text mode would turn every ``\r`` into a line break), and no progress bars, finished ones included."""
    text = log.read_bytes().decode("utf-8", errors="replace")
    shown = (line.rsplit("\r", 1)[-1] for line in text.split("\n"))
    return "\n".join(line for line in shown if not PROGRESS_BAR.search(line))


# ------------------------------------------------------------------------------------------------------ running
def prepare(study: Study) -> None:
    """Run each ``prepare`` command once: skipped when the path it ``creates`` exists."""
    for step in study.prepare:
        if Path(step["creates"]).exists():
            continue
        command = [*HF_SYNTAX, *step["command"][1:]] if step["command"][0] == "hf-syntax" else step["command"]
        print("$", " ".join(command), flush=True)
        log = study.results / "logs" / f"prepare_{Path(step['creates']).name}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("w") as handle:
            subprocess.run(command, env=child_environment(threads=2), stdout=handle,
                           stderr=subprocess.STDOUT, check=True)
        log.write_text(without_redraws(log))


def run_overrides(study: Study, run: str, seed: int) -> list[str]:
    """The ``--set`` values of one run: the study's shared ones, the run's own, the seed (no progress bars)."""
    return [*flatten(study.common), *flatten(study.runs[run].get("set", [])), f"seed={seed}",
            "training.disable_tqdm=true"]


def config_path(study: Study) -> Path:
    return study.config if study.config.is_absolute() else TREE / study.config


def training_command(study: Study, run: str, seed: int) -> list[str]:
    output_dir = study.output_dir(run, seed)
    command = [sys.executable, str(RECIPE), "--config", str(config_path(study)), "--output_dir", str(output_dir)]
    command += [argument for override in run_overrides(study, run, seed) for argument in ("--set", override)]
    if any(output_dir.glob("checkpoint-*")):
        command += ["--resume_from_checkpoint", "latest"]
    return command


def invocation_log(folder: Path, name: str) -> list:
    """One entry per earlier invocation of a run (its wall time or its settings); empty before the first."""
    return json.loads((folder / name).read_text()) if (folder / name).exists() else []


def continue_shorter_run(study: Study, run: str, seed: int) -> None:
    """Start a run of a study that ``continues`` another (a longer budget of the same schedule) where that study's
    run of the same name and seed ended: its newest and its best checkpoint are copied (the copy of the best named
    as the best), and so are its log, wall times, settings and tokenizer, so that the record is the whole run's.
    Where that study has no checkpoint of the run, nothing is copied and the run trains from scratch."""
    source, target = study.continues / run / f"seed{seed}", study.output_dir(run, seed)
    checkpoints = sorted(source.glob("checkpoint-*"), key=lambda path: int(path.name.split("-")[1]))
    if not checkpoints:
        print(f"[{time.strftime('%H:%M:%S')}] {run} seed {seed}: {source} has no checkpoint to continue; it trains "
              f"the whole budget from scratch", flush=True)
        return
    best = json.loads((checkpoints[-1] / "trainer_state.json").read_text()).get("best_model_checkpoint")
    copies = {checkpoints[-1], *([source / Path(best).name] if best else [])}
    missing = [str(path) for path in copies if not path.is_dir()]
    if missing:
        raise StudyError(f"{run} seed {seed}: the best checkpoint {missing} of {source} is gone; it cannot be continued")
    target.mkdir(parents=True, exist_ok=True)
    for checkpoint in copies:
        shutil.copytree(checkpoint, target / checkpoint.name)
        state_file = target / checkpoint.name / "trainer_state.json"
        state = json.loads(state_file.read_text())
        if state.get("best_model_checkpoint"):
            state["best_model_checkpoint"] = str(target / Path(state["best_model_checkpoint"]).name)
        state_file.write_text(json.dumps(state, indent=2) + "\n")
    for name in ("train.log", WALL_CLOCK_FILE, SETTINGS_FILE, "tokenizer"):
        if (source / name).is_dir() and not (target / name).exists():
            shutil.copytree(source / name, target / name)
        elif (source / name).is_file() and not (target / name).exists():
            shutil.copyfile(source / name, target / name)
    print(f"[{time.strftime('%H:%M:%S')}] {run} seed {seed} continues {source} from {checkpoints[-1].name}", flush=True)


def start(study: Study, run: str, seed: int, threads: int, jobs: int) -> tuple[subprocess.Popen, float, list[float]]:
    """Start one run; returns its process, its start time and the wall times of its earlier invocations."""
    folder = study.output_dir(run, seed)
    if study.continues is not None and not any(folder.glob("checkpoint-*")):
        continue_shorter_run(study, run, seed)
    command = training_command(study, run, seed)
    folder.mkdir(parents=True, exist_ok=True)
    settings = invocation_log(folder, SETTINGS_FILE)
    (folder / SETTINGS_FILE).write_text(json.dumps([*settings, {"threads": threads, "jobs": jobs}]) + "\n")
    log = (folder / "train.log").open("a")
    print(f"[{time.strftime('%H:%M:%S')}] start {run} seed {seed}: {' '.join(command[1:])}", flush=True)
    earlier = invocation_log(folder, WALL_CLOCK_FILE)
    process = subprocess.Popen(command, env=child_environment(threads), stdout=log, stderr=subprocess.STDOUT)
    return process, time.time(), earlier


def record_wall_clock(folder: Path, earlier: list[float], seconds: float) -> None:
    """The earlier invocations' wall times and this one's so far: rewritten at every poll, so a session end that
    kills the driver mid-run loses a few seconds of the count, not the whole invocation."""
    (folder / WALL_CLOCK_FILE).write_text(json.dumps([*earlier, round(seconds, 1)]) + "\n")


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


def chosen_runs(study: Study, runs: list[str] | None, seeds: list[int]) -> list[tuple[str, int]]:
    """The (run, seed) pairs that ``--runs`` and ``--seeds`` name, seed by seed from the lowest (a seed's runs start
    together, so its baseline is there to compare with early). ``RUN:SEED,SEED`` trains that run at its own seeds
    instead of ``--seeds``: one driver, and one queue for ``--jobs``, for runs that lack different seeds."""
    wanted = {}
    for entry in runs or list(study.runs):
        name, _, own_seeds = entry.partition(":")
        if name not in study.runs:
            raise StudyError(f"--runs {name!r} is not in the study; it has {sorted(study.runs)}")
        try:
            wanted[name] = [int(seed) for seed in own_seeds.split(",")] if own_seeds else seeds
        except ValueError:
            raise StudyError(f"--runs {entry!r}: after ':' come the run's seeds, integers separated by commas "
                             f"(e.g. {name}:43,44)") from None
    every_seed = sorted({seed for run_seeds in wanted.values() for seed in run_seeds})
    return [(run, seed) for seed in every_seed for run, run_seeds in wanted.items() if seed in run_seeds]


def is_finished(study: Study, run: str, seed: int, retrain: bool = False) -> bool:
    """Its folder holds ``summary.json`` (trained here, or unpacked from another machine by gpu_study.py), or its
    record is committed. With ``retrain`` only a folder counts: a run of which only the committed record is left is
    trained again, and its new record replaces the committed one when it finishes (until then the old one stays)."""
    if (study.output_dir(run, seed) / "summary.json").exists():
        return True
    return not retrain and (run, seed) in committed_records(study)


def run_all(study: Study, todo: list[tuple[str, int]], jobs: int, extra_tests: list[tuple[Path, Path]],
            threads: int = 1, blind: BlindSource | None = None, retrain: bool = False) -> None:
    """Keep ``jobs`` runs going; after each one ends, rewrite the results. A pending run that finished elsewhere in
    the meantime (a GPU machine's, unpacked) is skipped."""
    pending, running, failed = list(todo), {}, []
    while pending or running:
        while pending and len(running) < jobs:
            key = pending.pop(0)
            if is_finished(study, *key, retrain):
                print(f"[{time.strftime('%H:%M:%S')}] skip {key[0]} seed {key[1]}: finished elsewhere", flush=True)
                continue
            running[key] = start(study, *key, threads, jobs)
        time.sleep(5)
        for key, (process, started, earlier) in list(running.items()):
            record_wall_clock(study.output_dir(*key), earlier, time.time() - started)
            if process.poll() is None:
                continue
            del running[key]
            if process.returncode:
                failed.append(key)
                print(f"FAILED {key[0]} seed {key[1]} (exit {process.returncode}): see "
                      f"{study.output_dir(*key) / 'train.log'}", flush=True)
            try:
                report(study, extra_tests, blind)
            except StudyError as error:  # the runs in flight go on; the final report tries again
                print(f"report after {key[0]} seed {key[1]} failed, retried at the end: {error}", flush=True)
    if failed:
        raise StudyError(f"{len(failed)} run(s) failed: {failed}")


# ------------------------------------------------------------------------------------------------------ results
def translate(model_dir: Path, lines: list[str], trees: Path | None = None) -> list[str]:
    """The best checkpoint's translations through the same pipeline ``hf-syntax translate`` uses (it parses the
    source on the fly where the model needs features, or reads the source's ``trees`` made beforehand), with the
    beam the recipe evaluated with."""
    num_beams = json.loads((model_dir / "generation_config.json").read_text()).get("num_beams", 4)
    command = [*HF_SYNTAX, "translate", "--model", str(model_dir), "--quiet", "--num-beams", str(num_beams),
               *(["--source-trees", str(trees)] if trees is not None else [])]
    result = subprocess.run(command, input="\n".join(lines) + "\n", env=child_environment(),
                            capture_output=True, text=True)
    if result.returncode:
        raise StudyError(f"translating with {model_dir} failed (exit {result.returncode}): "
                         f"{result.stderr.strip().splitlines()[-1] if result.stderr.strip() else 'no message'}")
    return result.stdout.splitlines()


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
                             f"{blind.source}; see {folder / 'train.log'}")
        cached.write_text("\n".join(hypotheses) + "\n", encoding="utf-8")
    blind = study.results / "blind"
    blind.mkdir(parents=True, exist_ok=True)
    prefix = "" if study.results_name == "results" else f"{study.results_name}."
    (blind / f"{prefix}{run}.seed{seed}.txt").write_text(cached.read_text(encoding="utf-8"), encoding="utf-8")


def collect(study: Study, run: str, seed: int, extra_tests: list[tuple[Path, Path]], translations: Path,
            blind: BlindSource | None = None) -> dict | None:
    """The record of one finished run (extra tests and the blind source are translated once and cached in the run
    folder)."""
    folder = study.output_dir(run, seed)
    if not (folder / "summary.json").exists():
        return None
    summary = json.loads((folder / "summary.json").read_text())
    history = log_history(folder)
    evaluated = [entry for entry in history if "eval_bleu" in entry]
    losses = {entry["step"]: entry["loss"] for entry in history if "loss" in entry}
    wall_clock = folder / WALL_CLOCK_FILE
    settings = invocation_log(folder, SETTINGS_FILE)
    distinct = {(entry["threads"], entry["jobs"]) for entry in settings} or {tuple(DEFAULT_SETTINGS.values())}
    threads, jobs = distinct.pop() if len(distinct) == 1 else (None, None)  # None: invocations differed
    tag = study.tag(run, seed)
    dev = (folder / "predictions_validation.txt").read_text(encoding="utf-8")
    (translations / f"{tag}.dev.txt").write_text(dev, encoding="utf-8")
    if (folder / "train.log").exists():
        logs = study.results / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        (logs / f"{tag}.log").write_text(without_redraws(folder / "train.log"))
    extra = json.loads((folder / "extra_tests.json").read_text()) if (folder / "extra_tests.json").exists() else {}
    for source, reference in extra_tests:
        name = extra_test_name(source)
        if name not in extra:
            hypotheses = translate(folder / "model", read_lines(source))
            (folder / f"predictions_{name}.txt").write_text("\n".join(hypotheses) + "\n", encoding="utf-8")
            extra[name] = {**scores(hypotheses, read_lines(reference)), "source": str(source)}
        extra[name]["reference"] = str(reference)  # the report's paired bootstrap on this test reads it
        (folder / "extra_tests.json").write_text(json.dumps(extra, indent=2) + "\n")
        (translations / f"{tag}.{name}.txt").write_text((folder / f"predictions_{name}.txt").read_text(encoding="utf-8"),
                                                       encoding="utf-8")
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
        **({"train_loss": {step: losses.get(step) for step in study.loss_at_steps}} if study.loss_at_steps else {}),
        "train_seconds": round(sum(json.loads(wall_clock.read_text())) if wall_clock.exists() else summary["train_seconds"]),
        "threads": threads, "jobs": jobs, "device": summary.get("device", "cpu"),
        "parameters": summary["parameters"],
        "extra_tests": {name: {key: value[key] for key in ("bleu", "chrf", "reference") if key in value}
                        for name, value in extra.items()},
        **({"blind": str(blind.source)} if blind is not None else {}),
    }


def extra_test_bootstrap(study: Study, name: str, base: dict, record: dict, reference: Path | None) -> None:
    """The paired bootstrap of a run against the baseline of its seed on an extra test, from both runs' committed
    translations of it; the reference is the one given with ``--extra-test`` or, failing that, the one the record
    kept. Records from before references were kept, with no ``--extra-test`` given, stay without it."""
    reference = reference or record["extra_tests"][name].get("reference") or base["extra_tests"][name].get("reference")
    files = [study.results / "translations" / f"{study.tag(r['name'], r['seed'])}.{name}.txt" for r in (base, record)]
    if reference is None or not all(path.is_file() for path in files):
        return
    for entry in (base, record):
        entry["extra_tests"][name]["reference"] = str(reference)
    hypotheses = [path.read_text(encoding="utf-8").splitlines() for path in files]
    record["extra_tests"][name]["paired_bootstrap_p"] = paired_bootstrap(*hypotheses, reference_lines(str(reference)))


@functools.cache
def reference_lines(path: str) -> list[str]:
    """A test's references, read once per driver however many runs and seeds are compared on them."""
    return read_lines(Path(path))


def report(study: Study, extra_tests: list[tuple[Path, Path]] = (), blind: BlindSource | None = None) -> list[dict]:
    """Rewrite results.json / results.md / learning_curves.png from every finished run of the study: the runs in
    ``work_dir`` and the committed records of runs whose folders are gone (nothing is written before the first)."""
    translations = study.results / "translations"
    translations.mkdir(parents=True, exist_ok=True)
    seeds = sorted({int(folder.name[4:]) for folder in study.work_dir.glob("*/seed*") if folder.name[4:].isdigit()})
    collected = {(run, seed): record for run in study.runs for seed in seeds
                 if (record := collect(study, run, seed, list(extra_tests), translations, blind)) is not None}
    committed = committed_records(study)
    for key, record in collected.items():  # a report without --blind keeps what the run folder translated before
        earlier = committed.get(key, {}).get("blind")
        if "blind" not in record and earlier and blind_cache(study.output_dir(*key), Path(earlier)).exists():
            record["blind"] = earlier
    records = sorted({**committed, **collected}.values(),
                     key=lambda record: (list(study.runs).index(record["name"]), record["seed"]))
    if not records:  # nothing to report yet: keep the results folder free of empty tables
        return records
    references = read_lines(study.reference)
    test_references = {extra_test_name(source): reference for source, reference in extra_tests}
    by_key = {(record["name"], record["seed"]): record for record in records}
    for record in records:
        base = by_key.get((study.baseline, record["seed"]))
        if base is None or record is base:
            continue
        hypotheses = [(translations / f"{study.tag(r['name'], r['seed'])}.dev.txt").read_text(encoding="utf-8").splitlines()
                      for r in (base, record)]
        record["paired_bootstrap_p"] = paired_bootstrap(*hypotheses, references[: len(hypotheses[0])])
        for name in set(record["extra_tests"]) & set(base["extra_tests"]):
            extra_test_bootstrap(study, name, base, record, test_references.get(name))
    (study.results / f"{study.results_name}.json").write_text(json.dumps(records, indent=2) + "\n")
    (study.results / f"{study.results_name}_over_seeds.json").write_text(
        json.dumps(over_seeds(study, records), indent=2) + "\n")
    if study.against:
        (study.results / f"{study.results_name}_against.json").write_text(
            json.dumps(against_references(study, records), indent=2) + "\n")
    (study.results / f"{study.results_name}.md").write_text(markdown(study, records))
    plot_learning_curves(study, records)
    return records


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("study", type=Path, help="study file (benchmarks/studies/*.yaml)")
    parser.add_argument("--runs", nargs="+", metavar="RUN[:SEEDS]",
                        help="only these runs of the study (default: all); RUN:43,44 trains RUN at seeds 43 and 44 "
                             "instead of --seeds")
    parser.add_argument("--seeds", nargs="+", type=int, default=[42])
    parser.add_argument("--jobs", type=int, default=2, help="runs side by side")
    parser.add_argument("--threads", type=int, default=1,
                        help="threads per run (e.g. --jobs 1 --threads 2: one long run that must end sooner)")
    parser.add_argument("--extra-test", nargs=2, action="append", default=[], type=Path, metavar=("SRC", "REF"),
                        help="also score every run's best checkpoint on this test pair (repeatable)")
    parser.add_argument("--blind", type=Path, metavar="SRC",
                        help="also translate SRC (a source whose references are kept elsewhere) with every finished "
                             "run's best checkpoint into <results>/blind/<run>.seed<N>.txt; never scored")
    parser.add_argument("--blind-trees", type=Path, metavar="CONLLU",
                        help="the trees of --blind's source made beforehand with the models' parser ('hf-syntax "
                             "parse'), read instead of parsing: for a machine where that parser is not installed")
    parser.add_argument("--retrain", action="store_true",
                        help="train the chosen runs and seeds again where only their committed record is left (their "
                             "folders are gone), e.g. to translate --blind with them; each new record replaces the "
                             "committed one when its run finishes")
    parser.add_argument("--report", action="store_true", help="only rebuild the results of finished runs")
    parser.add_argument("--progress", action="store_true",
                        help="only print every run's score after each evaluation so far, finished or still training")
    options = parser.parse_args(argv)
    try:
        study = Study.load(options.study)
        chosen = chosen_runs(study, options.runs, options.seeds)
        check_extra_tests(options.extra_test)
        if options.blind is not None and not options.blind.is_file():
            raise StudyError(f"--blind: no file {options.blind}")
        if options.blind_trees is not None and (options.blind is None or not options.blind_trees.is_file()):
            raise StudyError(f"--blind-trees {options.blind_trees}: needs --blind SRC and an existing file (write it "
                             f"with 'hf-syntax parse --parser SPEC < SRC > FILE')")
        blind = None if options.blind is None else BlindSource(options.blind, options.blind_trees)
        if options.progress:
            print(progress(study), end="")
            return 0
        study.results.mkdir(parents=True, exist_ok=True)
        if not options.report:
            prepare(study)
            todo = [(run, seed) for run, seed in chosen if not is_finished(study, run, seed, options.retrain)]
            run_all(study, todo, options.jobs, options.extra_test, options.threads, blind, options.retrain)
        records = report(study, options.extra_test, blind)
    except (StudyError, subprocess.CalledProcessError, OSError) as error:
        parser.exit(2, f"error: {error}\n")
    if not records:
        print(f"no finished run of {options.study} yet; nothing written to {study.results}")
        return 0
    print((study.results / f"{study.results_name}.md").read_text())
    print(f"{len(records)} finished runs; results in {study.results}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
