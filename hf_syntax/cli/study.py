"""``hf-syntax study``: train the runs of a study file over seeds and compare them with its baseline (see
``hf_syntax.study``)."""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import subprocess
from pathlib import Path

from hf_syntax.cli.common import CliError, described, non_negative_int, positive_int


def command_study(options) -> None:
    """Train a study's runs and seeds (``--jobs`` side by side, each resumed where an earlier session left it),
    then write its results: results.json (one record per run and seed, with the paired bootstrap against the
    baseline of the same seed), results.md (mean ± std over seeds, the 95% t-interval of the paired differences,
    every run's curve), learning_curves.png, translations and logs. The results are rewritten after every finished
    run. A study file names the base recipe config, the baseline and the runs (see benchmarks/studies/)."""
    from hf_syntax.study.processes import prepare
    from hf_syntax.study.records import BlindSource, check_extra_tests
    from hf_syntax.study.report import report
    from hf_syntax.study.scheduling import check_run_configs, chosen_runs, is_finished, run_all, terminate_stops_runs
    from hf_syntax.study.study_file import Study, StudyError
    from hf_syntax.study.tables import progress

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
        if options.source_trees is not None:
            if study.source is None or not options.source_trees.is_file():
                raise StudyError(f"--source-trees {options.source_trees}: needs a study with 'source' and an existing "
                                 f"file (write it with 'hf-syntax parse --parser SPEC < SOURCE > FILE')")
            study = dataclasses.replace(study, source_trees=options.source_trees)
        if options.progress:
            print(progress(study), end="")
            return
        study.results.mkdir(parents=True, exist_ok=True)
        if not options.report:
            prepare(study)
            todo = [(run, seed) for run, seed in chosen if not is_finished(study, run, seed, options.retrain)]
            check_run_configs(study, todo)
            with terminate_stops_runs():
                run_all(study, todo, options.jobs, options.extra_test, options.threads, blind, options.retrain)
        records = report(study, options.extra_test, blind)
    except (StudyError, subprocess.CalledProcessError, OSError) as error:
        raise CliError(str(error)) from error
    if not records:
        print(f"no finished run of {options.study} yet; nothing written to {study.results}")
        return
    print((study.results / f"{study.results_name}.md").read_text())
    print(f"{len(records)} finished runs; results in {study.results}")


EXAMPLES = """examples:
  hf-syntax study benchmarks/studies/enja_converged.yaml --seeds 42 43 --jobs 2
  hf-syntax study STUDY --runs baseline dbsa_enc_dec --extra-test test.ja test.en
  hf-syntax study STUDY --runs baseline:43 dbsa_dep_rel:43,44 --jobs 3   # seeds per run
  hf-syntax study STUDY --report      # rebuild the tables from finished runs only
  hf-syntax study STUDY --progress    # where every run stands, finished or still training"""


def data_path(text: str) -> Path:
    """argparse type for a file or a ``sample_data:...`` name; the recipe it comes from loads only when one is given."""
    from hf_syntax.recipes.translation.data import resolve_data_path

    return resolve_data_path(text)


def add_commands(commands) -> None:
    """Register ``study``."""
    study = commands.add_parser(
        "study", help="train a study's runs over seeds and compare them with its baseline",
        description=inspect.cleandoc(described(command_study)) + "\n\n" + EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    study.add_argument("study", type=Path, help="study file (YAML; see benchmarks/studies/)")
    study.add_argument("--runs", nargs="+", metavar="RUN[:SEEDS]",
                       help="only these runs of the study (default: all); RUN:43,44 trains RUN at seeds 43 and 44 "
                            "instead of --seeds")
    study.add_argument("--seeds", nargs="+", type=non_negative_int, default=[42],
                       help="seeds of every chosen run (default: 42); a run given as RUN:SEEDS keeps its own")
    study.add_argument("--jobs", type=positive_int, default=2, help="runs side by side")
    study.add_argument("--threads", type=positive_int, default=1,
                       help="threads per run (e.g. --jobs 1 --threads 2: one long run that must end sooner)")
    study.add_argument("--extra-test", nargs=2, action="append", default=[], type=data_path,
                       metavar=("SRC", "REF"),
                       help="also score every run's final model (the average of its last checkpoints, or the best "
                            "checkpoint where the recipe chooses on dev) on this test pair (repeatable; "
                            "sample_data:... names a file of the package's sample)")
    study.add_argument("--blind", type=data_path, metavar="SRC",
                       help="also translate SRC (a source whose references are kept elsewhere) with every finished "
                            "run's final model into <results>/blind/<run>.seed<N>.txt; never scored")
    study.add_argument("--blind-trees", type=Path, metavar="CONLLU",
                       help="the trees of --blind's source made beforehand with the models' parser ('hf-syntax "
                            "parse'), read instead of parsing: for a machine where that parser is not installed")
    study.add_argument("--source-trees", type=Path, metavar="CONLLU",
                       help="the trees of the study's 'source' made beforehand with the models' parser, read instead "
                            "of parsing when its references' cross-entropy is scored: for a machine without that parser")
    study.add_argument("--retrain", action="store_true",
                       help="train the chosen runs and seeds again where only their committed record is left (their "
                            "folders are gone), e.g. to translate --blind with them; each new record replaces the "
                            "committed one when its run finishes")
    study.add_argument("--report", action="store_true", help="only rebuild the results of finished runs")
    study.add_argument("--progress", action="store_true",
                       help="only print every run's score after each evaluation so far, finished or still training")
    study.set_defaults(run=command_study)

