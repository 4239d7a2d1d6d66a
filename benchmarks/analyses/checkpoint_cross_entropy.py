"""Is the references' cross-entropy a steadier comparison than dev BLEU? Every epoch checkpoint that a study run's
averaged model is made of, scored both ways, paired by seed and epoch with the reference run's checkpoint.

    python benchmarks/analyses/checkpoint_cross_entropy.py benchmarks/studies/enja_plateau.yaml \
        --runs baseline transformer_dep_rel dbsa_dep_rel_self --seeds 42 43 \
        --output benchmarks/results/enja_plateau/checkpoint_cross_entropy

The first of ``--runs`` is the reference. A checkpoint's BLEU on the study's split is the one the Trainer logged at
its step (the recipe's beam); its cross-entropy is ``hf-syntax evaluate --metrics cross-entropy`` on the study's
``source`` and ``reference`` (teacher-forced, nats per reference token, no label smoothing), scored once and cached in
the checkpoint folder. Unfinished runs are left out. If the cross-entropy difference keeps its sign from epoch to epoch
while the BLEU difference of the same checkpoints changes sign, one averaged model's BLEU on this split says little
about the models. Writes ``<output>.json`` and ``<output>.md``.

Checkpoint folders live under ``runs/`` and may be gone by the next session: a run whose folder is missing keeps the
scores an earlier ``<output>.json`` recorded for it (rounded as written there), so a new run can still be paired with
earlier ones and a rerun never drops what is committed. With no seed to pair, nothing is written.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from hf_syntax.cli.common import non_negative_int
from hf_syntax.recipes.runs import SUMMARY_FILE, checkpoint_folders
from hf_syntax.study.records import CROSS_ENTROPY_FILE, cached_cross_entropy, log_history
from hf_syntax.study.study_file import Study


def scored_checkpoints(study: Study, run: str, seed: int) -> dict[int, dict] | None:
    """{epoch: {step, cross_entropy, <split>_bleu}} for the kept checkpoints of a finished run; None if unfinished."""
    folder = study.output_dir(run, seed)
    if not (folder / SUMMARY_FILE).exists():
        return None
    bleu_at_step = {entry["step"]: entry["eval_bleu"] for entry in log_history(folder) if "eval_bleu" in entry}
    scores = {}
    for checkpoint in checkpoint_folders(folder):
        state = json.loads((checkpoint / "trainer_state.json").read_text())
        scored = cached_cross_entropy(study, checkpoint, checkpoint / CROSS_ENTROPY_FILE)
        scores[round(state["epoch"])] = {"step": state["global_step"], "cross_entropy": scored["cross_entropy"],
                                         f"{study.split}_bleu": bleu_at_step[state["global_step"]]}
    return scores


def recorded_checkpoints(previous: dict | None, run: str, seed: int, split: str) -> dict[int, dict] | None:
    """{epoch: scores} of a run at a seed as an earlier report of this analysis recorded them, with the difference
    to the reference it recorded (None for the reference itself); None if it has none."""
    for by_seed in (previous or {}).get("seeds", []):
        if by_seed["seed"] == seed:
            return {row["epoch"]: {"step": row["step"], "cross_entropy": row["cross_entropy"][run],
                                   f"{split}_bleu": row[f"{split}_bleu"][run],
                                   "recorded_difference": row["difference"].get(run)}
                    for row in by_seed["checkpoints"] if run in row["cross_entropy"]} or None
    return None


def paired(scores: dict[str, dict[int, dict]], reference: str, split: str = "dev") -> list[dict]:
    """One row per epoch every run has a checkpoint of: each run's scores and each other run's difference to the
    reference run (run − reference, from unrounded scores, or as recorded where both come from an earlier report; a
    negative cross-entropy difference is a gain)."""
    digits = {"cross_entropy": 4, f"{split}_bleu": 2}
    epochs = sorted(set.intersection(*(set(by_epoch) for by_epoch in scores.values())))
    rows = []
    for epoch in epochs:
        at_epoch = {run: by_epoch[epoch] for run, by_epoch in scores.items()}
        row = {"epoch": epoch, "step": at_epoch[reference]["step"]}
        for metric, places in digits.items():
            row[metric] = {run: round(scored[metric], places) for run, scored in at_epoch.items()}
        row["difference"] = {run: difference(at_epoch[run], at_epoch[reference], digits)
                             for run in scores if run != reference}
        rows.append(row)
    return rows


def difference(scored: dict, reference: dict, digits: dict[str, int]) -> dict[str, float]:
    """A run's scores minus the reference's at one checkpoint; the recorded difference where both scores are recorded
    (recomputing it from their rounded values could move its last digit)."""
    if "recorded_difference" in scored and "recorded_difference" in reference:
        return scored["recorded_difference"]
    return {metric: round(scored[metric] - reference[metric], places) for metric, places in digits.items()}


def sign_summary(rows: list[dict], run: str, split: str = "dev") -> dict:
    """How often the run's checkpoint is on the gaining side of the reference's, by each metric."""
    differences = [row["difference"][run] for row in rows]
    return {"checkpoints": len(rows),
            "lower_cross_entropy": sum(difference["cross_entropy"] < 0 for difference in differences),
            f"higher_{split}_bleu": sum(difference[f"{split}_bleu"] > 0 for difference in differences)}


def markdown(report: dict) -> str:
    split = report["split"]
    lines = [f"# Single checkpoints: cross-entropy and {split} BLEU against `{report['reference_run']}`", "",
             report["what"], "", f"`{report['command']}`", "",
             f"| run | seed | epoch | Δ cross-entropy | Δ {split} BLEU |", "| --- | ---: | ---: | ---: | ---: |"]
    for by_seed in report["seeds"]:
        for row in by_seed["checkpoints"]:
            for run, difference in row["difference"].items():
                lines.append(f"| {run} | {by_seed['seed']} | {row['epoch']} | {difference['cross_entropy']:+.4f} | "
                             f"{difference[f'{split}_bleu']:+.2f} |")
    lines += ["", f"| run | seed | checkpoints | lower cross-entropy | higher {split} BLEU |",
              "| --- | ---: | ---: | ---: | ---: |"]
    for by_seed in report["seeds"]:
        for run, summary in by_seed["summary"].items():
            lines.append(f"| {run} | {by_seed['seed']} | {summary['checkpoints']} | {summary['lower_cross_entropy']} | "
                         f"{summary[f'higher_{split}_bleu']} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("study", type=Path, help="the study file (it must name a 'source')")
    parser.add_argument("--runs", nargs="+", required=True, help="runs of the study; the first is the reference")
    parser.add_argument("--seeds", type=non_negative_int, nargs="+", required=True)
    parser.add_argument("--output", type=Path, required=True, help="path without suffix for the .json and .md")
    options = parser.parse_args()
    study = Study.load(options.study)
    if study.source is None:
        raise SystemExit(f"error: {options.study} names no 'source'; the cross-entropy needs the split's sources")
    reference, *others = options.runs
    earlier = options.output.with_suffix(".json")
    previous = json.loads(earlier.read_text()) if earlier.exists() else None
    if previous and (previous["split"], previous["reference_run"]) != (study.split, reference):
        previous = None  # another comparison: nothing of it can stand in for a missing run
    report = {"what": f"teacher-forced cross-entropy of the {study.split} references (nats per token, no label "
                      f"smoothing) and {study.split} BLEU of every kept epoch checkpoint, paired by seed and epoch",
              "command": " ".join(["python", "benchmarks/analyses/checkpoint_cross_entropy.py", *sys.argv[1:]]),
              "split": study.split, "reference_run": reference, "seeds": []}
    for seed in options.seeds:
        scores = {}
        for run in options.runs:
            scores[run] = scored_checkpoints(study, run, seed)
            if scores[run] is None:
                scores[run] = recorded_checkpoints(previous, run, seed, study.split)
                if scores[run] is not None:
                    print(f"seed {seed}: {run} has no finished run folder; its scores are those in {earlier}",
                          file=sys.stderr)
        finished = {run: by_epoch for run, by_epoch in scores.items() if by_epoch}
        if reference not in finished or len(finished) < 2:
            print(f"seed {seed}: left out, {reference} and another run must have finished", file=sys.stderr)
            continue
        rows = paired(finished, reference, study.split)
        report["seeds"].append({"seed": seed, "checkpoints": rows, "summary": {
            run: sign_summary(rows, run, study.split) for run in others if run in finished}})
    if not report["seeds"]:
        raise SystemExit(f"error: no seed has {reference} and another run scored, in {study.work_dir} or in "
                         f"{earlier}; nothing written. Train the runs (hf-syntax study {options.study}) first.")
    options.output.parent.mkdir(parents=True, exist_ok=True)
    options.output.with_suffix(".json").write_text(json.dumps(report, indent=2) + "\n")
    options.output.with_suffix(".md").write_text(markdown(report))
    print(markdown(report))


if __name__ == "__main__":
    main()
