"""Running a study: which (run, seed) pairs to train, ``--jobs`` of them side by side at ``--threads`` each, the
wall time of every invocation counted as it goes, a run of a longer budget started from the shorter study's, and
the results rewritten after every finished run (an interrupted session loses only the runs in flight)."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from hf_syntax.data.corpus import read_lines, read_parallel
from hf_syntax.recipes.config import ConfigError
from hf_syntax.recipes.runs import SUMMARY_FILE, checkpoint_folders, seconds_per_step, write_text_atomically
from hf_syntax.recipes.translation.data import resolve_data_path
from hf_syntax.recipes.translation.resume import recipe_differences
from hf_syntax.recipes.translation.schema import AVERAGING_OPTION, TranslationRecipeConfig, load_recipe_config
from hf_syntax.study.machine_pace import time_machine
from hf_syntax.study.processes import TRAIN_LOG, config_path, start_training
from hf_syntax.study.records import (SETTINGS_FILE, WALL_CLOCK_FILE, BlindSource, check_one_vocabulary,
                                     committed_records, invocation_log, prepared_tokenizer, tokenizer_fingerprint)
from hf_syntax.study.report import report
from hf_syntax.study.study_file import Study, StudyError, run_overrides


def chosen_runs(study: Study, runs: list[str] | None, seeds: list[int]) -> list[tuple[str, int]]:
    """The (run, seed) pairs that ``--runs`` and ``--seeds`` name, seed by seed from the lowest (a seed's runs start
    together, so its baseline is there to compare with early). ``RUN:SEED,SEED`` trains that run at its own seeds
    instead of ``--seeds``: one driver, and one queue for ``--jobs``, for runs that lack different seeds."""
    wanted = {}
    for entry in runs or list(study.runs):
        name, _, own_seeds = entry.partition(":")
        if name not in study.runs:
            raise StudyError(f"--runs {name!r} is not in the study; it has {sorted(study.runs)}")
        if name in wanted:  # the later entry replaced the earlier one's seeds
            raise StudyError(f"--runs names {name!r} twice; name each run once, with all its seeds (e.g. "
                             f"{name}:42,43)")
        try:
            run_seeds = [int(seed) for seed in own_seeds.split(",")] if own_seeds else seeds
        except ValueError:
            run_seeds = None
        if run_seeds is None or min(run_seeds) < 0:
            raise StudyError(f"--runs {entry!r}: after ':' come the run's seeds, whole numbers from 0 separated by "
                             f"commas (e.g. {name}:43,44)")
        wanted[name] = run_seeds
    every_seed = sorted({seed for run_seeds in wanted.values() for seed in run_seeds})
    return [(run, seed) for seed in every_seed for run, run_seeds in wanted.items() if seed in run_seeds]


def check_run_configs(study: Study, todo: list[tuple[str, int]]) -> None:
    """Load every run's recipe config (the study's file with the run's ``--set`` values) before any of them trains:
    a misspelt setting of the third run is refused now, not hours later when that run would start."""
    compared = set()  # the validation splits already compared with the reference: read once, not once per run
    for run, seed in todo:
        try:
            config = load_recipe_config(config_path(study), run_overrides(study, run, seed))
        except (ConfigError, FileNotFoundError) as error:
            raise StudyError(f"run {run!r} (seed {seed}) cannot train: {error}") from None
        check_scored_split(config, f"run {run!r} (seed {seed})")
        validation = config.data.validation
        split = (validation.target, config.data.max_eval_pairs) if validation is not None else None
        if split not in compared:
            check_reference(study, config, f"run {run!r} (seed {seed})")
            compared.add(split)


def check_reference(study: Study, config: TranslationRecipeConfig, name: str) -> None:
    """The study's ``reference`` must hold the references of the validation pairs the run translates, line for line:
    a reference in another language gave p-values against the wrong text without an error, a shorter one an
    IndexError in the report after every run had trained."""
    validation = config.data.validation
    if validation is None:  # a datasets split: its references are read with it
        return
    if not study.reference.is_file():
        raise StudyError(f"reference {study.reference}: no such file; give the validation references of the runs "
                         f"({validation.target})")
    expected = read_lines(resolve_data_path(validation.target))[: config.data.max_eval_pairs]
    given = read_lines(study.reference)
    differing = next((number for number, (line, wanted) in enumerate(zip(given, expected), start=1)
                      if line != wanted), None)
    if differing is not None or len(given) < len(expected):
        where = f"line {differing} differs" if differing is not None else f"it has {len(given)} lines"
        raise StudyError(f"{name}: the study's reference {study.reference} is not the {len(expected)} validation "
                         f"references the run translates ({validation.target}): {where}; point 'reference' at that "
                         f"file")


def check_scored_split(config: TranslationRecipeConfig, name: str) -> None:
    """A study scores every run's validation translations line by line against its ``reference``; refuse a recipe
    that would leave it none (a test split is what the recipe then translates last: the study failed after the
    whole run trained, and every later session again) or whose lines would not pair with the reference's (blank
    pairs dropped by ``skip_empty`` shift every later line: the paired bootstrap compared other sentences)."""
    data = config.data
    if data.test is not None or data.test_split is not None:
        raise StudyError(f"{name}: its config has a test split (data.test or data.test_split), so the recipe "
                         f"translates that one last and leaves no validation translations for the study to score; "
                         f"drop it (common: [data.test=null]) and score a test set with --extra-test SOURCE "
                         f"REFERENCE")
    if data.skip_empty and data.validation is not None:
        _, read = read_parallel(resolve_data_path(data.validation.source), resolve_data_path(data.validation.target),
                                skip_empty=True, max_pairs=data.max_eval_pairs)
        if read.skipped_line_numbers:
            raise StudyError(f"{name}: data.skip_empty drops the blank pair(s) at line(s) "
                             f"{read.skipped_line_numbers[:5]} of {data.validation.source}, and the study pairs the "
                             f"translations with the reference line by line; remove those lines from both "
                             f"validation files")


def is_finished(study: Study, run: str, seed: int, retrain: bool = False) -> bool:
    """Its folder holds ``summary.json`` (trained here, or unpacked from another machine by gpu_study.py), or its
    record is committed. With ``retrain`` only a folder counts: a run of which only the committed record is left is
    trained again, and its new record replaces the committed one when it finishes (until then the old one stays)."""
    if (study.output_dir(run, seed) / SUMMARY_FILE).exists():
        return True
    return not retrain and (run, seed) in committed_records(study)


def copy_run_files(source: Path, target: Path, names: tuple[str, ...]) -> None:
    """Copy the named files and folders (those present) of one run folder into another that starts from it."""
    for name in names:
        if (source / name).is_dir():
            shutil.copytree(source / name, target / name)
        elif (source / name).is_file():
            shutil.copyfile(source / name, target / name)


def start_from_copies(target: Path, fill: Callable[[Path], None]) -> None:
    """Build what a run starts from (``fill`` copies it into the folder it is given) beside the run's folder, then
    move it in, checkpoints last, oldest first; what the run's folder already has is kept. A session end mid-copy left
    some of the checkpoints in the run's folder, which the next start took for the whole copy (it copies nothing once
    a checkpoint is there): the run resumed from an older one, or went on without the others and its wall time."""
    staging = target.with_name(f".{target.name}.partial")
    if staging.exists():  # what a session end left
        shutil.rmtree(staging)
    staging.mkdir(parents=True)
    fill(staging)
    target.mkdir(parents=True, exist_ok=True)
    checkpoints = {path.name: step for step, path in enumerate(checkpoint_folders(staging))}
    for item in sorted(staging.iterdir(), key=lambda path: (path.name in checkpoints, checkpoints.get(path.name, 0))):
        if not (target / item.name).exists():
            os.replace(item, target / item.name)
    shutil.rmtree(staging)


def continue_shorter_run(study: Study, run: str, seed: int) -> None:
    """Start a run of a study that ``continues`` another (a longer budget of the same schedule) where that study's
    run of the same name and seed ended: its newest and its best checkpoint are copied (the copy of the best named
    as the best), and so are its log, wall times, settings and tokenizer, so that the record is the whole run's.
    Where that study has no checkpoint of the run, nothing is copied and the run trains from scratch."""
    source, target = study.continues / run / f"seed{seed}", study.output_dir(run, seed)
    checkpoints = checkpoint_folders(source)
    if not checkpoints:
        print(f"[{time.strftime('%H:%M:%S')}] {run} seed {seed}: {source} has no checkpoint to continue; it trains "
              f"the whole budget from scratch", flush=True)
        return
    best = json.loads((checkpoints[-1] / "trainer_state.json").read_text()).get("best_model_checkpoint")
    copies = {checkpoints[-1], *([source / Path(best).name] if best else [])}
    missing = [str(path) for path in copies if not path.is_dir()]
    if missing:
        raise StudyError(f"{run} seed {seed}: the best checkpoint {missing} of {source} is gone; it cannot be continued")

    def fill(staging: Path) -> None:
        for checkpoint in copies:
            shutil.copytree(checkpoint, staging / checkpoint.name)
            state_file = staging / checkpoint.name / "trainer_state.json"
            state = json.loads(state_file.read_text())
            if state.get("best_model_checkpoint"):  # where the copy of the best will be
                state["best_model_checkpoint"] = str(target / Path(state["best_model_checkpoint"]).name)
            state_file.write_text(json.dumps(state, indent=2) + "\n")
        copy_run_files(source, staging, (TRAIN_LOG, WALL_CLOCK_FILE, SETTINGS_FILE, "tokenizer"))

    start_from_copies(target, fill)
    print(f"[{time.strftime('%H:%M:%S')}] {run} seed {seed} continues {source} from {checkpoints[-1].name}", flush=True)


def cut_longer_run(study: Study, run: str, seed: int, source: Path) -> None:
    """Start a run that a longer run of the same recipe and seed on an open-ended schedule (inverse-sqrt does not
    depend on the budget) has already trained past, such as a recipe measurement's curve: the checkpoints the final
    average takes (the last ``average_last_checkpoints`` epochs up to the budget) are copied with the tokenizer and
    settings, and the run resumes at its budget with no step left, so it only averages and scores. Its wall time is
    the budget's share of the source's (median pace x steps), not a time of its own."""
    recipe = load_recipe_config(config_path(study), run_overrides(study, run, seed))
    budget, count = recipe.training.get("num_train_epochs"), recipe.training.get(AVERAGING_OPTION, 1)
    if not isinstance(budget, int):
        raise StudyError(f"{run} seed {seed}: 'cut_from' cuts a run at a whole number of epochs; the run's "
                         f"training.num_train_epochs is {budget!r}")
    epochs = {round(json.loads((folder / "trainer_state.json").read_text())["epoch"]): folder
              for folder in checkpoint_folders(source)}
    wanted = list(range(budget - count + 1, budget + 1))
    missing = [epoch for epoch in wanted if epoch not in epochs]
    if missing:
        raise StudyError(f"{run} seed {seed}: {source} has no checkpoint of epoch(s) {missing}, which the average of "
                         f"the last {count} epochs up to {budget} takes; train it that far first (or drop cut_from)")
    check_same_recipe(f"{run} seed {seed}", recipe, epochs[budget])
    pace = seconds_per_step(source)
    if pace is None:
        raise StudyError(f"{run} seed {seed}: {source} needs two checkpoints to time its epochs")
    steps = json.loads((epochs[budget] / "trainer_state.json").read_text())["global_step"]

    def fill(staging: Path) -> None:
        for epoch in wanted:
            shutil.copytree(epochs[epoch], staging / epochs[epoch].name)
        copy_run_files(source, staging, (SETTINGS_FILE, "tokenizer"))
        (staging / WALL_CLOCK_FILE).write_text(json.dumps([round(pace * steps, 1)]) + "\n")

    start_from_copies(study.output_dir(run, seed), fill)
    print(f"[{time.strftime('%H:%M:%S')}] {run} seed {seed} is {source} cut at epoch {budget} (epochs {wanted[0]}-"
          f"{budget} copied)", flush=True)


def check_same_recipe(name: str, recipe: TranslationRecipeConfig, checkpoint: Path) -> None:
    """Refuse to cut a run out of one that trained another recipe (:func:`recipe_differences`): the copied
    checkpoints would make another run than the one the study reports."""
    differences = recipe_differences(recipe, checkpoint)
    if differences:
        raise StudyError(f"{name}: 'cut_from' names {checkpoint.parent}, which trained another recipe ("
                         f"{'; '.join(differences)}); train the run itself (drop cut_from) or point it at a run of "
                         f"this recipe")


def check_prepared_vocabulary(study: Study, run: str, seed: int) -> None:
    """Before a run trains on the study's prepared tokenizer, refuse it if that tokenizer is not the one the
    committed runs used (``runs/`` prepared anew in a later session), instead of finding out after hours."""
    tokenizer = prepared_tokenizer(study, run, seed)
    fingerprint = tokenizer_fingerprint(tokenizer) if tokenizer is not None else None
    if fingerprint is not None:
        candidate = {"name": run, "seed": seed, "tokenizer_sha256": fingerprint}
        check_one_vocabulary(study, [*committed_records(study).values(), candidate])


def start(study: Study, run: str, seed: int, threads: int, jobs: int, reference_seconds: float | None,
          ) -> tuple[subprocess.Popen, float, list[float]]:
    """Start one run, its settings recorded with the machine's ``reference_seconds`` (``machine_pace``; None: not
    timed); returns its process, its start time and the wall times of its earlier invocations."""
    check_prepared_vocabulary(study, run, seed)
    folder = study.output_dir(run, seed)
    if study.continues is not None and not any(folder.glob("checkpoint-*")):
        continue_shorter_run(study, run, seed)
    cut_seed, longer_run = study.cut_from.get(run, (None, None))
    if cut_seed == seed and not any(folder.glob("checkpoint-*")):
        cut_longer_run(study, run, seed, longer_run)
    folder.mkdir(parents=True, exist_ok=True)
    settings = invocation_log(folder, SETTINGS_FILE)
    invocation = {"threads": threads, "jobs": jobs, "started": round(time.time(), 1),
                  **({"reference_seconds": reference_seconds} if reference_seconds is not None else {})}
    write_text_atomically(folder / SETTINGS_FILE, json.dumps([*settings, invocation]) + "\n")
    earlier = invocation_log(folder, WALL_CLOCK_FILE)
    return start_training(study, run, seed, threads), time.time(), earlier


def record_wall_clock(folder: Path, earlier: list[float], seconds: float) -> None:
    """The earlier invocations' wall times and this one's so far: rewritten at every poll, so a session end that
    kills the driver mid-run loses a few seconds of the count, not the whole invocation."""
    write_text_atomically(folder / WALL_CLOCK_FILE, json.dumps([*earlier, round(seconds, 1)]) + "\n")


def run_all(study: Study, todo: list[tuple[str, int]], jobs: int, extra_tests: list[tuple[Path, Path]],
            threads: int = 1, blind: BlindSource | None = None, retrain: bool = False) -> None:
    """Keep ``jobs`` runs going; after each one ends, rewrite the results. A pending run that finished elsewhere in
    the meantime (a GPU machine's, unpacked) is skipped. The machine is timed once, before the first run starts
    (nothing of the study's own shares it then)."""
    pending, running, failed = list(todo), {}, []
    machine = functools.cache(lambda: reference_or_none(threads))
    try:
        while pending or running:
            while pending and len(running) < jobs:
                key = pending.pop(0)
                if is_finished(study, *key, retrain):
                    print(f"[{time.strftime('%H:%M:%S')}] skip {key[0]} seed {key[1]}: finished elsewhere", flush=True)
                    continue
                running[key] = start(study, *key, threads, jobs, machine())
            time.sleep(5)
            for key, (process, started, earlier) in list(running.items()):
                record_wall_clock(study.output_dir(*key), earlier, time.time() - started)
                if process.poll() is None:
                    continue
                del running[key]
                if process.returncode:
                    log = study.output_dir(*key) / TRAIN_LOG
                    failed.append((*key, last_line(log)))
                    print(f"FAILED {key[0]} seed {key[1]} (exit {process.returncode}): {failed[-1][2]} (see {log})",
                          flush=True)
                try:
                    report(study, extra_tests, blind)
                except Exception as error:  # the runs in flight and those queued go on (hours of training
                    # outweigh a table): the final report tries again and raises what still fails
                    print(f"report after {key[0]} seed {key[1]} failed, retried at the end: "
                          f"{type(error).__name__}: {error}", flush=True)
    except BaseException:  # an unforeseen failure (a start) or Ctrl-C: no run trains on without its driver
        stop_runs(running)
        raise
    if failed:
        raise StudyError(f"{len(failed)} run(s) failed: "
                         + "; ".join(f"{run} seed {seed}: {reason}" for run, seed, reason in failed))


def reference_or_none(threads: int) -> float | None:
    """The machine's reference step time (``machine_pace``), said in the log; None, with the reason, where timing it
    failed: the runs train all the same, their epochs only stay uncounted in reference steps."""
    try:
        seconds = time_machine(threads)
    except StudyError as error:
        print(f"[{time.strftime('%H:%M:%S')}] the machine is not timed ({error}); epoch times of this invocation "
              f"will not be counted in reference steps", flush=True)
        return None
    print(f"[{time.strftime('%H:%M:%S')}] the reference workload takes {seconds} s a step here at {threads} "
          f"thread(s)", flush=True)
    return seconds


@contextlib.contextmanager
def terminate_stops_runs():
    """Within it, ``kill DRIVER`` (SIGTERM) ends :func:`run_all` through the clean-up Ctrl-C takes, which stops its
    runs: by default the signal ended the driver alone, its runs trained on, and a rerun trained each of them twice in
    one folder. Only the main thread may handle signals; elsewhere the default stays."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signal_number, _frame):
        print(f"[{time.strftime('%H:%M:%S')}] stopped by signal {signal_number}: the runs in flight are stopped and "
              f"resume from their newest checkpoints when the study is run again", flush=True)
        raise SystemExit(128 + signal_number)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def stop_runs(running: dict) -> None:
    """End the training processes still in flight (they checkpoint every epoch, so a rerun resumes them): left
    running, a rerun of the study would start the same run again in the same folder."""
    for process, _, _ in running.values():
        process.terminate()
    for process, _, _ in running.values():
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()


def last_line(log: Path) -> str:
    """What a failed run said last (its error line), from the end of its log."""
    lines = log.read_text(encoding="utf-8", errors="replace").strip().splitlines() if log.is_file() else []
    return lines[-1].strip() if lines else "no output"

