"""Reporting a study of ``compare.py``: from the records the driver collects to scores, paired bootstrap, statistics
over seeds, the results tables, the progress table and the learning curves. Nothing here trains or translates.

``compare.py`` (the driver, run by path) imports this file as its sibling module.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import TYPE_CHECKING

from scipy.stats import nct
from scipy.stats import t as student_t

if TYPE_CHECKING:
    from compare import Study

DEFAULT_SETTINGS = {"threads": 1, "jobs": 2}  # what every run before the settings were recorded trained with


def log_history(folder: Path) -> list[dict]:
    """The Trainer's log (the newest checkpoint's trainer_state.json holds all of it up to that checkpoint)."""
    states = sorted(folder.glob("checkpoint-*/trainer_state.json"), key=lambda path: int(path.parent.name.split("-")[1]))
    return json.loads(states[-1].read_text())["log_history"] if states else []


def scores(hypotheses: list[str], references: list[str]) -> dict[str, float]:
    from sacrebleu.metrics import BLEU, CHRF

    # force: the studies score their corpora as given (small_parallel_enja is pre-tokenized on purpose); it only
    # silences sacreBLEU's "forgot to detokenize" warning, the score is the same.
    return {"bleu": round(BLEU(force=True).corpus_score(hypotheses, [references]).score, 2),
            "chrf": round(CHRF().corpus_score(hypotheses, [references]).score, 2)}


def paired_bootstrap(baseline: list[str], system: list[str], references: list[str]) -> dict[str, float]:
    """p-values of sacreBLEU's paired bootstrap (1000 resamples): is the system's difference from the baseline chance?"""
    from sacrebleu.metrics import BLEU, CHRF
    from sacrebleu.significance import PairedTest

    test = PairedTest([("baseline", baseline), ("system", system)], metrics={"bleu": BLEU(force=True), "chrf": CHRF()},
                      references=[references], test_type="bs", n_samples=1000)
    _, results = test()  # results: metric display name -> one result per system, the baseline first
    return {"bleu": round(float(results["BLEU"][1].p_value), 4), "chrf": round(float(results["chrF2"][1].p_value), 4)}


def committed_records(study: Study) -> dict[tuple[str, int], dict]:
    """The records already in the results file, by (run, seed): a run whose folder is gone (``runs/`` is not
    committed and may not outlive a session) keeps its record, and its committed translations still serve the
    paired bootstrap. Labels follow the study file; records of runs it no longer names are dropped."""
    path = study.results / f"{study.results_name}.json"
    if not path.exists():
        return {}
    records = {}
    for record in json.loads(path.read_text()):
        if record["name"] not in study.runs:
            continue
        record["label"] = study.runs[record["name"]].get("label", record["name"])
        if "train_loss" in record:  # JSON made the step keys strings
            record["train_loss"] = {int(step): loss for step, loss in record["train_loss"].items()}
        records[record["name"], record["seed"]] = record
    return records


def _mean_std(values: list[float]) -> str:
    if not values:
        return "—"
    spread = f" ± {statistics.stdev(values):.2f}" if len(values) > 1 else ""
    return f"{statistics.mean(values):.2f}{spread}"


def _loss_cell(loss: float | None) -> str:
    """A logged training loss for the table: three decimals, as the Trainer's log shows it ('—' when not logged)."""
    return "—" if loss is None else f"{loss:.3f}"


def _paired_delta(rows: list[dict], baseline_by_seed: dict[int, float], key: str) -> str:
    """Mean difference to the baseline over the seeds both have: a run of one seed is compared with that seed's
    baseline, not with the mean of seeds it did not run (the seed spread would swamp the difference)."""
    differences = [r[key] - baseline_by_seed[r["seed"]] for r in rows if r["seed"] in baseline_by_seed]
    return f"{statistics.mean(differences):+.2f}" if differences else "—"


def seed_interval(differences: list[float], confidence: float = 0.95) -> dict:
    """Mean of per-seed paired differences with its Student-t interval over seeds (none from a single seed), the
    seeds won, and what may be claimed: "helps"/"hurts" only when the interval excludes 0."""
    n = len(differences)
    mean = statistics.mean(differences)
    summary = {"seeds": n, "mean": round(mean, 2), "wins": sum(difference > 0 for difference in differences)}
    if n < 2:
        return {**summary, "interval": None, "verdict": "one seed: no interval"}
    stdev = statistics.stdev(differences)
    half = student_t.ppf((1 + confidence) / 2, n - 1) * stdev / n ** 0.5
    low, high = mean - half, mean + half
    verdict = "helps" if low > 0 else "hurts" if high < 0 else f"no difference detected at {n} seeds"
    return {**summary, "interval": [round(low, 2), round(high, 2)], "verdict": verdict,
            "power": round(t_test_power(mean, stdev, n, confidence), 2),
            "seeds_for_80_percent_power": seeds_for_power(mean, stdev, 0.8, confidence)}


def t_test_power(mean: float, stdev: float, seeds: int, confidence: float = 0.95) -> float:
    """Probability that the two-sided paired t-test over ``seeds`` seeds rejects 0 (the interval excludes it) when the
    differences have this ``mean`` and spread (noncentral t)."""
    if stdev == 0:
        return float(mean != 0)
    critical = student_t.ppf((1 + confidence) / 2, seeds - 1)
    shift = abs(mean) / stdev * seeds ** 0.5
    # the wrong-side tail as the upper tail of the mirrored shift: scipy's lower tail turns NaN far out
    return float(nct.sf(critical, seeds - 1, shift) + nct.sf(critical, seeds - 1, -shift))


def seeds_for_power(mean: float, stdev: float, power: float = 0.8, confidence: float = 0.95,
                    most: int = 500) -> int | None:
    """How many seeds would detect a difference of the observed size with probability ``power``, taking the observed
    mean and spread as the truth: what a follow-up would cost, not a claim. None: more than ``most``. (The power grows
    with the seeds, so a bisection finds the smallest.)"""
    if t_test_power(mean, stdev, most, confidence) < power:
        return None
    low, high = 1, most  # the power is below the goal at low (one seed has none), reached at high
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if t_test_power(mean, stdev, middle, confidence) >= power else (middle, high)
    return high


def over_seeds(study: Study, records: list[dict], reference: str | None = None,
               runs: list[str] | None = None) -> dict[str, dict]:
    """Per run, BLEU and chrF differences to the baseline (or ``reference``) paired by seed, summarised by
    ``seed_interval``: on the study's split, and under ``extra_tests`` on every extra test both runs of a seed were
    scored on. The split's BLEU also at the last evaluation both runs of a seed reached
    (``bleu_last_shared_evaluation``): the checkpoints are chosen on the split they are scored on, and that
    comparison involves no choice."""
    reference = reference or study.baseline
    reference_by_seed = {r["seed"]: r for r in records if r["name"] == reference}
    summaries = {}
    for run in runs or study.runs:
        paired = [(r, reference_by_seed[r["seed"]]) for r in records
                  if r["name"] == run and r["seed"] in reference_by_seed]
        if run == reference or not paired:
            continue
        summaries[run] = _paired_summary([(_split_scores(study, r), _split_scores(study, base), r["seed"])
                                          for r, base in paired])
        curves = [(r[f"{study.split}_bleu_per_epoch"], base[f"{study.split}_bleu_per_epoch"]) for r, base in paired]
        if all(curve and base_curve for curve, base_curve in curves):
            summaries[run]["bleu_last_shared_evaluation"] = seed_interval(
                [_at_last_shared_evaluation(curve, base_curve) for curve, base_curve in curves])
        tests = sorted({name for r, base in paired for name in set(r["extra_tests"]) & set(base["extra_tests"])})
        summaries[run]["extra_tests"] = {
            name: _paired_summary([(r["extra_tests"][name], base["extra_tests"][name], r["seed"]) for r, base in paired
                                   if name in r["extra_tests"] and name in base["extra_tests"]])
            for name in tests}
    return summaries


def against_references(study: Study, records: list[dict]) -> dict[str, dict]:
    """``over_seeds`` against each of the study's other references (``against``): whether two variants differ needs
    the spread of their own paired differences, which their two intervals against the baseline do not give."""
    return {reference: summaries for reference, runs in study.against.items()
            if (summaries := over_seeds(study, records, reference, runs))}


def _at_last_shared_evaluation(curve: list[float], base_curve: list[float]) -> float:
    """A run's score minus its baseline's at the last evaluation both reached (one may have stopped early)."""
    shared = min(len(curve), len(base_curve))
    return curve[shared - 1] - base_curve[shared - 1]


def _split_scores(study: Study, record: dict) -> dict[str, float]:
    """A record's BLEU and chrF on the study's split, keyed like an extra test's scores."""
    return {metric: record[f"{study.split}_{metric}"] for metric in ("bleu", "chrf")}


def _paired_summary(pairs: list[tuple[dict, dict, int]]) -> dict:
    """``seed_interval`` of BLEU and chrF over (run scores, baseline scores, seed) pairs, and the seeds paired."""
    return {**{metric: seed_interval([run[metric] - base[metric] for run, base, _ in pairs]) for metric in ("bleu", "chrf")},
            "paired_seeds": [seed for _, _, seed in pairs]}


def _over_seeds_table(split: str, summaries: dict[str, dict], p_values: dict[str, str] | None = None) -> list[str]:
    """One row per run of ``_paired_summary``; with ``p_values``, a column of each seed's paired bootstrap p; where
    every run has it, the BLEU difference at the last shared evaluation with its interval."""
    p_header, p_rule = (" p (BLEU) per seed |", " --- |") if p_values is not None else ("", "")
    with_last = all("bleu_last_shared_evaluation" in summary for summary in summaries.values())
    last_header, last_rule = (" Δ BLEU, last shared evaluation [95%] |", " --- |") if with_last else ("", "")
    lines = [f"| run | paired seeds | Δ {split} BLEU | 95% interval | wins | Δ {split} chrF | 95% interval | "
             f"wins |{p_header}{last_header} verdict (BLEU) | power · seeds for 80% (BLEU) |",
             f"| --- | --- | ---: | --- | ---: | ---: | --- | ---: |{p_rule}{last_rule} --- | ---: |"]
    for run, summary in summaries.items():
        bleu, chrf = summary["bleu"], summary["chrf"]
        p_cell = f" {p_values[run] or '—'} |" if p_values is not None else ""
        last = summary.get("bleu_last_shared_evaluation")
        last_cell = f" {last['mean']:+.2f} {_interval_cell(last)} |" if with_last else ""
        lines.append(f"| {run} | {', '.join(map(str, summary['paired_seeds']))} | {bleu['mean']:+.2f} | "
                     f"{_interval_cell(bleu)} | {bleu['wins']}/{bleu['seeds']} | {chrf['mean']:+.2f} | "
                     f"{_interval_cell(chrf)} | {chrf['wins']}/{chrf['seeds']} |{p_cell}{last_cell} "
                     f"{bleu['verdict']} | {_power_cell(bleu)} |")
    return lines


def _interval_cell(summary: dict) -> str:
    return "—" if summary["interval"] is None else f"[{summary['interval'][0]:+.2f}, {summary['interval'][1]:+.2f}]"


def _power_cell(summary: dict) -> str:
    if summary["interval"] is None:
        return "—"
    needed = summary["seeds_for_80_percent_power"]
    return f"{summary['power']:.2f} · {'> 500' if needed is None else needed}"


def _settings(record: dict) -> tuple:
    """(threads, jobs, device) a run trained with; committed records from before they were recorded used the
    defaults, and every run before the device was recorded trained on CPU."""
    return (*(record.get(key, default) for key, default in DEFAULT_SETTINGS.items()), record.get("device", "cpu"))


def _settings_cell(record: dict) -> str:
    """"threads / jobs", and the device where it is not the CPU (a study says which runs trained on a GPU)."""
    *threads_jobs, device = _settings(record)
    cell = " / ".join("mixed" if value is None else str(value) for value in threads_jobs)
    return cell if device == "cpu" else f"{cell} on {device}"


def markdown(study: Study, records: list[dict]) -> str:
    split = study.split
    bleu_key, chrf_key, curve_key = f"{split}_bleu", f"{split}_chrf", f"{split}_bleu_per_epoch"
    base_seconds = {(r["seed"], _settings(r)): r["train_seconds"] for r in records if r["name"] == study.baseline}
    base_bleu = {r["seed"]: r[bleu_key] for r in records if r["name"] == study.baseline}
    tests = sorted({name for r in records for name in r["extra_tests"]})
    lines = [f"# {study.name}: mean ± std over seeds", "",
             f"| run | model | seeds | {split} BLEU | Δ BLEU (same seeds) | {split} chrF | p (BLEU) per seed | time × baseline |"
             + "".join(f" {test} BLEU |" for test in tests),
             "| --- | --- | --- | ---: | ---: | ---: | --- | ---: |" + " ---: |" * len(tests)]
    for run in study.runs:
        rows = [r for r in records if r["name"] == run]
        if not rows:
            continue
        bleu = [r[bleu_key] for r in rows]
        delta = "—" if run == study.baseline else _paired_delta(rows, base_bleu, bleu_key)
        p_values = ", ".join(f"{r['seed']}: {r['paired_bootstrap_p']['bleu']:.3f}" for r in rows if "paired_bootstrap_p" in r)
        ratios = [r["train_seconds"] / base_seconds[r["seed"], _settings(r)] for r in rows
                  if (r["seed"], _settings(r)) in base_seconds]  # wall times compare only at equal threads and jobs
        cells = [run, rows[0]["label"], ", ".join(str(r["seed"]) for r in rows), _mean_std(bleu), delta,
                 _mean_std([r[chrf_key] for r in rows]), p_values or "—",
                 f"{statistics.mean(ratios):.2f}" if ratios else "—",
                 *(_mean_std([r["extra_tests"][t]["bleu"] for r in rows if t in r["extra_tests"]]) for t in tests)]
        lines.append("| " + " | ".join(cells) + " |")
    summaries = over_seeds(study, records)
    if summaries:
        lines += ["", f"Over seeds: the difference to the baseline of the same seed, its mean and 95% t-interval "
                      f"over the paired seeds, and the seeds won. \"helps\" only where the BLEU interval excludes 0. "
                      "Power: how often a paired t-test at these seeds would detect a difference of the observed mean "
                      "and spread, and how many seeds would detect it 80% of the time (a budget, not a claim). "
                      "The last shared evaluation compares each seed's pair at the last evaluation both reached, "
                      "not at the checkpoints chosen on this split: the difference without selection.",
                  "", *_over_seeds_table(split, summaries)]
        for reference, against in against_references(study, records).items():
            lines += ["", f"The same against `{reference}` (Δ = run − {reference}, paired by seed):", "",
                      *_over_seeds_table(split, against)]
        for test in tests:
            on_test = {run: summary["extra_tests"][test] for run, summary in summaries.items()
                       if test in summary["extra_tests"]}
            p_values = {run: ", ".join(f"{r['seed']}: {r['extra_tests'][test]['paired_bootstrap_p']['bleu']:.3f}"
                                       for r in records if r["name"] == run
                                       and "paired_bootstrap_p" in r["extra_tests"].get(test, {}))
                        for run in on_test}
            if on_test:
                lines += ["", f"The same on {test}, with the paired bootstrap of each seed on it:", "",
                          *_over_seeds_table(test, on_test, p_values)]
    loss_steps = study.loss_at_steps
    lines += ["", f"Per run: {split} BLEU after each evaluation (the best checkpoint's is `{split} BLEU`)"
              + (f", training loss at steps {', '.join(map(str, loss_steps))}" if loss_steps else "") + ".", "",
              f"| run | seed | steps | {split} BLEU | {split} chrF | best / last evaluation | last {split} BLEU | "
              f"per evaluation |" + "".join(f" loss @{step} |" for step in loss_steps) + " train s | threads / jobs |",
              "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |" + " ---: |" * len(loss_steps) + " ---: | ---: |"]
    for r in records:
        losses = "".join(f" {_loss_cell(r['train_loss'].get(step))} |" for step in loss_steps)
        curve = r[curve_key]
        best_at = f"{curve.index(max(curve)) + 1} / {len(curve)}" if curve else "—"
        last = f"{curve[-1]:.2f}" if curve else "—"
        lines.append(f"| {r['name']} | {r['seed']} | {r['steps']} | {r[bleu_key]:.2f} | {r[chrf_key]:.2f} | "
                     f"{best_at} | {last} | "
                     f"{' / '.join(f'{b:.1f}' for b in r[curve_key])} |{losses} {r['train_seconds']} | "
                     f"{_settings_cell(r)} |")
    return "\n".join(lines) + "\n"


def progress(study: Study) -> str:
    """Validation BLEU after each evaluation of every run and seed, the ones still training included (read from
    their newest checkpoint), beside the baseline of the same seed: how a study that spans sessions stands before it
    has results. Committed records stand in for run folders that are gone. Prints only; writes nothing."""
    split = study.split
    curves = {key: (record[f"{split}_bleu_per_epoch"], "finished") for key, record in committed_records(study).items()}
    for folder in sorted(study.work_dir.glob("*/seed*")):
        run, seed = folder.parent.name, folder.name.removeprefix("seed")
        evaluated = [entry["eval_bleu"] for entry in log_history(folder) if "eval_bleu" in entry]
        if run in study.runs and seed.isdigit() and evaluated:
            state = "finished" if (folder / "summary.json").exists() else "training"
            curves[run, int(seed)] = (evaluated, state)
    if not curves:
        return f"no run of {study.name} has been evaluated yet ({study.work_dir} holds no checkpoint with a score)\n"
    order = sorted(curves, key=lambda key: (key[1], list(study.runs).index(key[0])))
    width = max(len(curve) for curve, _ in curves.values())
    lines = [f"# {study.name}: {split} BLEU after each evaluation", "",
             "| run | seed | state | " + " | ".join(str(number) for number in range(1, width + 1))
             + " | Δ baseline, last |",
             "| --- | ---: | --- |" + " ---: |" * (width + 1)]
    for run, seed in order:
        curve, state = curves[run, seed]
        baseline = curves.get((study.baseline, seed), ([], ""))[0]
        delta = (f"{curve[-1] - baseline[len(curve) - 1]:+.2f}" if run != study.baseline and len(baseline) >= len(curve)
                 else "—")
        cells = [f"{bleu:.2f}" for bleu in curve] + [""] * (width - len(curve))
        lines.append(f"| {run} | {seed} | {state} | " + " | ".join(cells) + f" | {delta} |")
    return "\n".join(lines) + "\n"


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
