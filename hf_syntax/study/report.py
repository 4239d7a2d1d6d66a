"""The results of a study, rewritten from every finished run: ``results.json`` (one record per run and seed, each
compared with the baseline of its seed by the paired bootstrap), ``results_over_seeds.json``,
``results_against.json`` (with ``against``), ``results.md`` and ``learning_curves.png``, the runs' translations
and logs. ``results`` is the study's ``results_name``."""

from __future__ import annotations

import functools
import json
import statistics
from pathlib import Path

from hf_syntax.data.corpus import read_lines
from hf_syntax.recipes.runs import write_text_atomically
from hf_syntax.study.records import (BlindSource, blind_cache, check_one_vocabulary, check_reportable, collect,
                                     committed_records, extra_test_name, results_file)
from hf_syntax.study.significance import against_references, over_seeds, paired_bootstrap
from hf_syntax.study.study_file import Study, StudyError
from hf_syntax.study.tables import markdown


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
    hypotheses = [read_lines(path) for path in files]
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
    check_reportable(study, {key: record for key, record in committed.items() if key not in collected})
    for key, record in collected.items():  # a report without --blind keeps what the run folder translated before
        earlier = committed.get(key, {}).get("blind")
        if "blind" not in record and earlier and blind_cache(study.output_dir(*key), Path(earlier)).exists():
            record["blind"] = earlier
    records = sorted({**committed, **collected}.values(),
                     key=lambda record: (list(study.runs).index(record["name"]), record["seed"]))
    if not records:  # nothing to report yet: keep the results folder free of empty tables
        return records
    check_one_vocabulary(study, records)
    references = read_lines(study.reference)
    test_references = {extra_test_name(source): reference for source, reference in extra_tests}
    by_key = {(record["name"], record["seed"]): record for record in records}
    for record in records:
        base = by_key.get((study.baseline, record["seed"]))
        if base is None or record is base:
            continue
        hypotheses = [read_lines(translations / f"{study.tag(r['name'], r['seed'])}.dev.txt") for r in (base, record)]
        if len(references) < len(hypotheses[0]):  # was an IndexError inside the bootstrap
            raise StudyError(f"reference {study.reference} has {len(references)} lines but the runs translated "
                             f"{len(hypotheses[0])} validation sentences; point 'reference' at their references")
        record["paired_bootstrap_p"] = paired_bootstrap(*hypotheses, references[: len(hypotheses[0])])
        for name in set(record["extra_tests"]) & set(base["extra_tests"]):
            extra_test_bootstrap(study, name, base, record, test_references.get(name))
    write_text_atomically(results_file(study), json.dumps(records, indent=2) + "\n")
    write_text_atomically(study.results / f"{study.results_name}_over_seeds.json",
                          json.dumps(over_seeds(study, records), indent=2) + "\n")
    if study.against:
        write_text_atomically(study.results / f"{study.results_name}_against.json",
                              json.dumps(against_references(study, records), indent=2) + "\n")
    write_text_atomically(study.results / f"{study.results_name}.md", markdown(study, records))
    plot_learning_curves(study, records)
    return records



def plot_learning_curves(study: Study, records: list[dict]) -> None:
    """Dev BLEU after each evaluation, one line per run (mean of its seeds over the evaluations all seeds reached)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4.5))
    for run in study.runs:
        curves = [r[f"{study.split}_bleu_per_epoch"] for r in records if r["name"] == run and r[f"{study.split}_bleu_per_epoch"]]
        if not curves:
            continue
        length = min(len(curve) for curve in curves)
        mean = [statistics.mean(curve[i] for curve in curves) for i in range(length)]
        axes.plot(range(1, length + 1), mean, marker="o", label=f"{run} ({len(curves)} seed{'s' * (len(curves) > 1)})")
    for label, curve in study.reference_curves.items():
        axes.plot(range(1, len(curve) + 1), curve, linestyle="--", marker=".", label=label)
    axes.set_xlabel("evaluation (epoch)")
    axes.set_ylabel(f"{study.split} BLEU")
    axes.set_title(study.name)
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8)
    figure.tight_layout()
    prefix = "" if study.results_name == "results" else f"{study.results_name}_"
    figure.savefig(study.results / f"{prefix}learning_curves.png", dpi=120)
    plt.close(figure)
