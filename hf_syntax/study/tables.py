"""The tables of a study, as Markdown: the results (mean ± std over seeds, the paired differences over seeds, every
run's curve, wall time and settings) and the progress of runs still training. Nothing here trains or translates."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from hf_syntax.recipes.runs import SUMMARY_FILE
from hf_syntax.study.records import (DEFAULT_SETTINGS, check_reportable, committed_records, log_history,
                                     minutes_left)
from hf_syntax.study.significance import against_references, over_seeds
from hf_syntax.study.study_file import Study, StudyError

RELATIVE_EPOCH = "epoch_in_reference_steps"  # a record's epoch time in its machine's reference steps (machine_pace)


def _mean_std(values: list[float], digits: int = 2) -> str:
    if not values:
        return "—"
    spread = f" ± {statistics.stdev(values):.{digits}f}" if len(values) > 1 else ""
    return f"{statistics.mean(values):.{digits}f}{spread}"


def _loss_cell(loss: float | None) -> str:
    """A logged training loss for the table: three decimals, as the Trainer's log shows it ('—' when not logged)."""
    return "—" if loss is None else f"{loss:.3f}"


def _paired_delta(rows: list[dict], baseline_by_seed: dict[int, float], key: str) -> str:
    """Mean difference to the baseline over the seeds both have: a run of one seed is compared with that seed's
    baseline, not with the mean of seeds it did not run (the seed spread would swamp the difference)."""
    differences = [r[key] - baseline_by_seed[r["seed"]] for r in rows if r["seed"] in baseline_by_seed]
    return f"{statistics.mean(differences):+.2f}" if differences else "—"

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


def _cross_entropy_table(summaries: dict[str, dict]) -> list[str]:
    """The references' cross-entropy differences over seeds, one row per run scored at every paired seed (lower is
    better: a negative difference is a win)."""
    lines = ["| run | paired seeds | Δ cross-entropy | 95% interval | lower in | verdict | power · seeds for 80% |",
             "| --- | --- | ---: | --- | ---: | --- | ---: |"]
    for run, summary in summaries.items():
        if "cross_entropy" in summary:
            entropy = summary["cross_entropy"]
            lines.append(f"| {run} | {', '.join(map(str, summary['paired_seeds']))} | {entropy['mean']:+.4f} | "
                         f"{_interval_cell(entropy, 4)} | {entropy['wins']}/{entropy['seeds']} | "
                         f"{entropy['verdict']} | {_power_cell(entropy)} |")
    return lines if len(lines) > 2 else []


def _time_ratio(records: list[dict], rows: list[dict], baseline: str, key: str) -> str:
    """The mean over seeds of a run's time (``key``) over the baseline's of the same seed; times compare only at equal
    threads, jobs and device. Epoch times are divided in reference steps (``epoch_in_reference_steps``) where both
    runs timed their machines, so a pair trained on two machines still compares."""
    base = {(r["seed"], _settings(r)): r for r in records if r["name"] == baseline}
    ratios = []
    for row in rows:
        paired = base.get((row["seed"], _settings(row)), {})
        if key == "seconds_per_epoch" and row.get(RELATIVE_EPOCH) and paired.get(RELATIVE_EPOCH):
            ratios.append(row[RELATIVE_EPOCH] / paired[RELATIVE_EPOCH])
        elif (row.get(key) or 0) > 0 and (paired.get(key) or 0) > 0:
            ratios.append(row[key] / paired[key])
    return f"{statistics.mean(ratios):.2f}" if ratios else "—"


def _interval_cell(summary: dict, digits: int = 2) -> str:
    if summary["interval"] is None:
        return "—"
    low, high = summary["interval"]
    return f"[{low:+.{digits}f}, {high:+.{digits}f}]"


def _power_cell(summary: dict) -> str:
    if summary["interval"] is None:
        return "—"
    needed = summary["seeds_for_80_percent_power"]
    return f"{summary['power']:.2f} · {'> 500' if needed is None else needed}"


def _settings(record: dict) -> tuple:
    """(threads, jobs, device) a run trained with; committed records from before they were recorded used the
    defaults, and every run before the device was recorded trained on CPU."""
    return (*(record.get(key, default) for key, default in DEFAULT_SETTINGS.items()), record.get("device", "cpu"))


def _epoch_cell(record: dict) -> str:
    """Seconds per epoch, and as many of the machine's reference steps where the run timed its machine."""
    seconds, relative = record.get("seconds_per_epoch"), record.get(RELATIVE_EPOCH)
    return f"{seconds or '—'}" + (f" ({relative:.0f} reference steps)" if relative else "")


def _settings_cell(record: dict) -> str:
    """"threads / jobs", and the device where it is not the CPU (a study says which runs trained on a GPU)."""
    *threads_jobs, device = _settings(record)
    cell = " / ".join("mixed" if value is None else str(value) for value in threads_jobs)
    return cell if device == "cpu" else f"{cell} on {device}"


def markdown(study: Study, records: list[dict]) -> str:
    split = study.split
    bleu_key, chrf_key, curve_key = f"{split}_bleu", f"{split}_chrf", f"{split}_bleu_per_epoch"
    base_bleu = {r["seed"]: r[bleu_key] for r in records if r["name"] == study.baseline}
    entropy_key = f"{split}_cross_entropy"
    tests = sorted({name for r in records for name in r["extra_tests"]})
    scored = any(entropy_key in r for r in records)
    paced = any(r.get("seconds_per_epoch") for r in records)
    lines = [f"# {study.name}: mean ± std over seeds", "",
             f"| run | model | seeds | {split} BLEU | Δ BLEU (same seeds) | {split} chrF | p (BLEU) per seed | time × baseline |"
             + " epoch time × baseline |" * paced + f" {split} cross-entropy |" * scored
             + "".join(f" {test} BLEU |" for test in tests),
             "| --- | --- | --- | ---: | ---: | ---: | --- | ---: |" + " ---: |" * (paced + scored + len(tests))]
    for run in study.runs:
        rows = [r for r in records if r["name"] == run]
        if not rows:
            continue
        bleu = [r[bleu_key] for r in rows]
        delta = "—" if run == study.baseline else _paired_delta(rows, base_bleu, bleu_key)
        p_values = ", ".join(f"{r['seed']}: {r['paired_bootstrap_p']['bleu']:.3f}" for r in rows if "paired_bootstrap_p" in r)
        cells = [run, rows[0]["label"], ", ".join(str(r["seed"]) for r in rows), _mean_std(bleu), delta,
                 _mean_std([r[chrf_key] for r in rows]), p_values or "—",
                 _time_ratio(records, rows, study.baseline, "train_seconds"),
                 *([_time_ratio(records, rows, study.baseline, "seconds_per_epoch")] if paced else []),
                 *([_mean_std([r[entropy_key] for r in rows if entropy_key in r], 4)] if scored else []),
                 *(_mean_std([r["extra_tests"][t]["bleu"] for r in rows if t in r["extra_tests"]]) for t in tests)]
        lines.append("| " + " | ".join(cells) + " |")
    if paced:
        lines += ["", "`time × baseline` divides whole wall times (breaks, pauses and shared cores included); `epoch "
                      "time × baseline` divides one epoch with its evaluation at each run's fastest stretch between two "
                      "checkpoints (`seconds_per_epoch`), the pace the model sets, whatever else shared the machine; "
                      "where both runs timed their machine when they started, in its reference steps "
                      "(`epoch_in_reference_steps`: the epoch over one step of a fixed PyTorch workload there), so "
                      "that two machines compare."]
    summaries = over_seeds(study, records)
    if summaries:
        lines += ["", "Over seeds: the difference to the baseline of the same seed, its mean and 95% t-interval "
                      "over the paired seeds, and the seeds won. \"helps\" only where the BLEU interval excludes 0. "
                      "Power: how often a paired t-test at these seeds would detect a difference of the observed mean "
                      "and spread, and how many seeds would detect it 80% of the time (a budget, not a claim). "
                      "The last shared evaluation compares each seed's pair at the last evaluation both reached, "
                      "not at the checkpoints chosen on this split: the difference without selection.",
                  "", *_over_seeds_table(split, summaries)]
        entropy = _cross_entropy_table(summaries)
        if entropy:
            lines += ["", f"The {split} references' cross-entropy under each final model (teacher-forced, nats per "
                          f"target token, no label smoothing, nothing generated: `hf-syntax evaluate --metrics "
                          f"cross-entropy`), paired by seed; lower is better, so a negative Δ is a gain. It averages over "
                          f"every reference token and involves no search; it says which model fits the references "
                          f"better, not which translates better.",
                      "", *entropy]
        for reference, against in against_references(study, records).items():
            lines += ["", f"The same against `{reference}` (Δ = run − {reference}, paired by seed):", "",
                      *_over_seeds_table(split, against)]
            if entropy := _cross_entropy_table(against):
                lines += ["", f"Its references' cross-entropy against `{reference}`:", "", *entropy]
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
    if study.beside is not None:
        lines += ["", *_beside_table(study, records)]
    loss_steps = study.loss_at_steps
    lines += ["", f"Per run: {split} BLEU after each evaluation"
              + (f", training loss at steps {', '.join(map(str, loss_steps))}" if loss_steps else "")
              + f". `{split} BLEU` is the final model's: the mean of the last N epoch checkpoints where `averaged` "
                f"is N > 1, else the checkpoint the recipe kept (the best evaluation where the study chose on "
                f"{split}, else the last).", "",
              f"| run | seed | steps | {split} BLEU | {split} chrF | averaged | best / last evaluation | last {split} BLEU | "
              f"per evaluation |" + "".join(f" loss @{step} |" for step in loss_steps) + " train s |" + " s / epoch |" * paced
              + " threads / jobs |",
              "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |" + " ---: |" * (len(loss_steps) + paced)
              + " ---: | ---: |"]
    for r in records:
        losses = "".join(f" {_loss_cell(r['train_loss'].get(step))} |" for step in loss_steps)
        curve = r[curve_key]
        best_at = f"{curve.index(max(curve)) + 1} / {len(curve)}" if curve else "—"
        last = f"{curve[-1]:.2f}" if curve else "—"
        averaged = r.get("average_last_checkpoints") or 1
        lines.append(f"| {r['name']} | {r['seed']} | {r['steps']} | {r[bleu_key]:.2f} | {r[chrf_key]:.2f} | "
                     f"{averaged} | {best_at} | {last} | "
                     f"{' / '.join(f'{b:.1f}' for b in r[curve_key])} |{losses} {r['train_seconds']} | "
                     + f"{_epoch_cell(r)} | " * paced + f"{_settings_cell(r)} |")
    return "\n".join(lines) + "\n"


def _beside_table(study: Study, records: list[dict]) -> list[str]:
    """Each run here beside the same run in another study (``beside``), over the seeds both have: the mean score and
    the mean paired difference to that study's own baseline of the same seed."""
    label, path = study.beside["label"], Path(study.beside["results"])
    try:
        others = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise StudyError(f"beside: cannot read {path} ({error}); give another study's results.json") from None
    key = f"{study.split}_bleu"
    here = {(r["name"], r["seed"]): r[key] for r in records}
    there = {(r["name"], r["seed"]): r[key] for r in others if key in r}
    lines = [f"The same runs and seeds beside {label} (`{path}`): mean {study.split} BLEU, and the mean difference to "
             f"the baseline of the same seed in each study.", "",
             f"| run | seeds in both | {study.split} BLEU here | {label} | Δ baseline here | Δ baseline, {label} |",
             "| --- | --- | ---: | ---: | ---: | ---: |"]
    for run in study.runs:
        seeds = sorted(seed for name, seed in here if name == run and (name, seed) in there)
        if not seeds:
            continue
        paired = [seed for seed in seeds if (study.baseline, seed) in here and (study.baseline, seed) in there]
        deltas = [[scores[run, seed] - scores[study.baseline, seed] for seed in paired] for scores in (here, there)]
        delta_cells = (["—", "—"] if run == study.baseline or not paired
                       else [f"{statistics.mean(values):+.2f}" for values in deltas])
        lines.append(f"| {run} | {', '.join(map(str, seeds))} | {statistics.mean(here[run, s] for s in seeds):.2f} | "
                     f"{statistics.mean(there[run, s] for s in seeds):.2f} | {delta_cells[0]} | {delta_cells[1]} |")
    return lines


def progress(study: Study) -> str:
    """Validation BLEU after each evaluation of every run and seed, the ones still training included (read from
    their newest checkpoint, with the minutes they still need at their pace), beside the baseline of the same seed:
    how a study that spans sessions stands before it has results. Committed records stand in for run folders that
    are gone. Prints only; writes nothing."""
    split = study.split
    committed = committed_records(study)
    check_reportable(study, committed, split_keys=("bleu_per_epoch",))  # all that progress reads of a record
    curves = {key: (record[f"{split}_bleu_per_epoch"], "finished") for key, record in committed.items()}
    for folder in sorted(study.work_dir.glob("*/seed*")):
        run, seed = folder.parent.name, folder.name.removeprefix("seed")
        evaluated = [entry["eval_bleu"] for entry in log_history(folder) if "eval_bleu" in entry]
        if run in study.runs and seed.isdigit() and evaluated:
            if (folder / SUMMARY_FILE).exists():
                state = "finished"
            else:
                left = minutes_left(folder)
                state = "training" + (f", ~{left:.0f} min left" if left is not None else "")
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

