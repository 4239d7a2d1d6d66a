"""Which training budget and schedule reach the plateau cheapest: the measurement behind
``training/configs/small_cpu_ja_en_plateau.yaml`` (issue 61) and the Multi30K recipe of issue 62.

    python benchmarks/analyses/plateau_recipe.py --curve runs/enja_plateau_recipe/inverse_sqrt_40/seed42 \
        --candidates runs/enja_plateau_recipe/cosine_8/seed42 ... --results benchmarks/results/enja_plateau

The curve run trains the baseline on an open-ended schedule (inverse-sqrt) and keeps every epoch's checkpoint. An
open-ended schedule does not depend on the budget, so the average of its last N checkpoints ending at epoch B *is* the
model a run of B epochs with ``training.average_last_checkpoints: N`` ends with: every budget of that schedule is
measured from one run. The candidate runs are schedules that end (linear or cosine decay to 0 over their budget), each
ending on its own averaged model. Every averaged model is scored on dev by ``hf-syntax evaluate`` (the pipeline a user
translates with, the model's own beam), once: scores are cached beside the averaged folder.

The plateau is the mean averaged dev BLEU over the curve's last ``--plateau-budgets`` budgets (not the best of them:
the best of several noisy scores is biased upwards); their standard deviation, reported beside the choice, is how far
one averaged score of one run scatters. The choice is the cheapest candidate, in training seconds,
whose averaged dev BLEU is within ``--tolerance`` of it. ``--split`` names the set scored as dev in the
report's prose (Multi30K calls it val); the JSON keys say ``dev`` whatever it is called. Writes ``recipe.json``, ``recipe.md`` and ``recipe.png``
(dev BLEU against training time, one line per candidate) into ``--results``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from hf_syntax.cli.common import positive_int
from hf_syntax.data.corpus import read_lines
from hf_syntax.recipes.runs import SUMMARY_FILE, checkpoint_folders, seconds_per_step

TREE = Path(__file__).resolve().parents[2]
SCORES_FILE = "dev_scores.json"


def trainer_log(run_dir: Path) -> tuple[list[dict], int]:
    """The newest checkpoint's log history and the run's optimizer steps per epoch."""
    checkpoints = checkpoint_folders(run_dir)
    if not checkpoints:
        raise SystemExit(f"error: {run_dir} has no checkpoint-* folder; give a run folder of the recipe study")
    state = json.loads((checkpoints[-1] / "trainer_state.json").read_text())
    return state["log_history"], round(state["global_step"] / state["epoch"])


def seconds_per_epoch(run_dir: Path) -> float:
    """Wall time of one epoch with its evaluation: the run's median pace (``seconds_per_step``: a run spread over
    sessions has breaks, and epochs that shared the cores ran slow) times its steps per epoch."""
    pace = seconds_per_step(run_dir)
    if pace is None:
        raise SystemExit(f"error: {run_dir} needs two checkpoints to time an epoch")
    return pace * trainer_log(run_dir)[1]


def dev_score(model_dir: Path, source: Path, reference: Path) -> dict:
    """BLEU/chrF of a model folder on dev through ``hf-syntax evaluate``, cached in the folder."""
    cache = model_dir / SCORES_FILE
    if cache.exists():
        return json.loads(cache.read_text())
    command = [sys.executable, "-m", "hf_syntax.cli", "evaluate", "--model", str(model_dir), "--source", str(source),
               "--reference", str(reference)]
    environment = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    result = subprocess.run(command, capture_output=True, text=True, env=environment, cwd=TREE, check=False)
    if result.returncode:
        raise SystemExit(f"error: evaluating {model_dir} failed: {result.stderr.strip().splitlines()[-1:]}")
    scores = json.loads(result.stdout)
    cache.write_text(json.dumps(scores, indent=2) + "\n")
    return scores


def averaged_curve(run_dir: Path, budgets: list[int], count: int, source: Path, reference: Path) -> list[dict]:
    """For each budget B whose last ``count`` epoch checkpoints exist: the average of epochs B-count+1..B, scored."""
    log, steps_per_epoch = trainer_log(run_dir)
    per_epoch = {round(entry["epoch"]): entry for entry in log if "eval_bleu" in entry}
    cost = seconds_per_epoch(run_dir)
    points = []
    for budget in budgets:
        epochs = list(range(budget - count + 1, budget + 1))
        folders = [run_dir / f"checkpoint-{epoch * steps_per_epoch}" for epoch in epochs]
        if epochs[0] < 1 or not all(folder.is_dir() for folder in folders):
            continue
        averaged = run_dir / f"averaged_last{count}_epoch{budget}"
        if not averaged.is_dir():
            subprocess.run([sys.executable, "-m", "hf_syntax.cli", "average", *map(str, folders), "--output",
                            str(averaged)], check=True, cwd=TREE, capture_output=True)
        scores = dev_score(averaged, source, reference)
        points.append({"budget_epochs": budget, "averaged_epochs": epochs, "dev_bleu": round(scores["bleu"], 2),
                       "dev_chrf": round(scores["chrf"], 2), "seconds": round(cost * budget),
                       "single_checkpoint_dev_bleu": round(per_epoch[budget]["eval_bleu"], 2),
                       "single_checkpoint_dev_loss": round(per_epoch[budget]["eval_loss"], 4)})
    return points


def single_checkpoints(run_dir: Path) -> list[dict]:
    """Every epoch's own checkpoint as the Trainer scored it on dev (beam as the recipe's), with its time."""
    log, _ = trainer_log(run_dir)
    cost = seconds_per_epoch(run_dir)
    return [{"epoch": round(entry["epoch"]), "dev_bleu": round(entry["eval_bleu"], 2),
             "dev_loss": round(entry["eval_loss"], 4), "seconds": round(cost * entry["epoch"])}
            for entry in log if "eval_bleu" in entry]


def candidate(run_dir: Path, source: Path, reference: Path) -> dict:
    """A finished run of a schedule that ends: its averaged final model, scored as the curve's points are."""
    summary = json.loads((run_dir / SUMMARY_FILE).read_text())
    log, _ = trainer_log(run_dir)
    scores = dev_score(run_dir / "model", source, reference)
    return {"name": run_dir.parent.name, "budget_epochs": round(summary["epochs"]),
            "average_last_checkpoints": summary.get("average_last_checkpoints", 1),
            "dev_bleu": round(scores["bleu"], 2), "dev_chrf": round(scores["chrf"], 2),
            "seconds": round(seconds_per_epoch(run_dir) * summary["epochs"]),
            "dev_bleu_per_epoch": [round(entry["eval_bleu"], 2) for entry in log if "eval_bleu" in entry]}


def choose(curve: list[dict], candidates: list[dict], plateau_budgets: int, tolerance: float, full_budget: int
           ) -> dict:
    """The plateau and the cheapest candidate within ``tolerance`` of it; pending until the curve is complete."""
    if not curve or curve[-1]["budget_epochs"] < full_budget:
        reached = curve[-1]["budget_epochs"] if curve else 0
        return {"status": "pending", "why": f"the curve run has reached epoch {reached} of {full_budget}"}
    last = curve[-plateau_budgets:]
    plateau = sum(point["dev_bleu"] for point in last) / len(last)
    options = [{"name": f"inverse_sqrt, {point['budget_epochs']} epochs", **point} for point in curve] + candidates
    good = [option for option in options if option["dev_bleu"] >= plateau - tolerance]
    chosen = min(good, key=lambda option: option["seconds"])
    return {"status": "chosen", "plateau_dev_bleu": round(plateau, 2),
            "plateau_budgets": [point["budget_epochs"] for point in last],
            "plateau_scatter": round(statistics.stdev(point["dev_bleu"] for point in last), 2),
            "tolerance": tolerance, "choice": chosen}


def markdown(report: dict) -> str:
    split = report["split"]
    lines = ["# The plateau recipe", "",
             f"Baseline, seed {report['seed']}, averaged over the last {report['average']} epoch checkpoints, scored "
             f"on `{report['source']}` ({report['reference_lines']} lines, the {split} set) by `hf-syntax evaluate`. "
             f"Time: epochs × the median epoch (training plus its evaluation) of the run, on the machine it trained "
             f"on.", "",
             f"| schedule | epochs | averaged {split} BLEU | chrF | single checkpoint | {split} loss | hours |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for point in report["curve"]:
        lines.append(f"| inverse-sqrt (curve) | {point['budget_epochs']} | {point['dev_bleu']:.2f} | "
                     f"{point['dev_chrf']:.2f} | {point['single_checkpoint_dev_bleu']:.2f} | "
                     f"{point['single_checkpoint_dev_loss']:.3f} | {point['seconds'] / 3600:.2f} |")
    for option in report["candidates"]:
        lines.append(f"| {option['name']} | {option['budget_epochs']} | {option['dev_bleu']:.2f} | "
                     f"{option['dev_chrf']:.2f} | — | — | {option['seconds'] / 3600:.2f} |")
    decision = report["decision"]
    lines.append("")
    if decision["status"] == "pending":
        lines.append(f"**No choice yet:** {decision['why']}.")
    else:
        choice = decision["choice"]
        lines.append(f"**Plateau:** {decision['plateau_dev_bleu']:.2f} {split} BLEU (mean of the averaged curve at epochs "
                     f"{decision['plateau_budgets']}). **Choice:** {choice['name']} ({choice['dev_bleu']:.2f}, "
                     f"{choice['seconds'] / 3600:.2f} h), the cheapest within {decision['tolerance']} BLEU of it.")
        lines.append("")
        lines.append(f"One averaged score is a single run on {report['reference_lines']} {split} lines: the plateau budgets' scores scatter by "
                     f"{decision['plateau_scatter']:.2f} BLEU (standard deviation), so options closer than that to "
                     f"each other are not told apart by this measurement.")
    return "\n".join(lines) + "\n"


def plot(report: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4.5))
    curve = report["curve"]
    axes.plot([p["seconds"] / 3600 for p in curve], [p["dev_bleu"] for p in curve], "o-",
              label=f"inverse-sqrt, last {report['average']} averaged")
    single = report["single_checkpoints"]
    axes.plot([p["seconds"] / 3600 for p in single], [p["dev_bleu"] for p in single], "x:", color="grey",
              label="inverse-sqrt, each epoch's own checkpoint")
    for option in report["candidates"]:
        axes.plot([option["seconds"] / 3600], [option["dev_bleu"]], "s", label=option["name"])
    decision = report["decision"]
    if decision["status"] == "chosen":
        plateau = decision["plateau_dev_bleu"]
        axes.axhspan(plateau - decision["tolerance"], plateau, color="green", alpha=0.15,
                     label=f"within {decision['tolerance']} of the plateau")
    axes.set_xlabel("training time (hours)")
    axes.set_ylabel(f"{report['split']} BLEU")
    axes.set_title("Baseline dev BLEU against training time")
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--curve", type=Path, required=True, help="run folder of the open-ended schedule")
    parser.add_argument("--candidates", type=Path, nargs="*", default=[], help="finished run folders of schedules "
                                                                                "that end")
    parser.add_argument("--average", type=positive_int, default=5,
                        help="checkpoints averaged (as average_last_checkpoints)")
    parser.add_argument("--budgets", type=positive_int, nargs="+", default=list(range(8, 41, 4)))
    parser.add_argument("--plateau-budgets", type=positive_int, default=3)
    parser.add_argument("--tolerance", type=float, default=0.3)
    parser.add_argument("--source", type=Path, default=Path("../shared/data/small_parallel_enja/dev.ja"))
    parser.add_argument("--reference", type=Path, default=Path("../shared/data/small_parallel_enja/dev.en"))
    parser.add_argument("--split", default="dev", help="what the report calls the scored set (Multi30K: val)")
    parser.add_argument("--results", type=Path, default=Path("benchmarks/results/enja_plateau"))
    options = parser.parse_args()
    if not 2 <= options.plateau_budgets <= len(options.budgets):
        parser.error(f"--plateau-budgets {options.plateau_budgets}: the plateau is the mean of at least 2 of the "
                     f"{len(options.budgets)} --budgets (its scatter is their standard deviation); give more budgets")
    curve = averaged_curve(options.curve, options.budgets, options.average, options.source, options.reference)
    candidates = [candidate(run, options.source, options.reference) for run in options.candidates]
    report = {"seed": int(options.curve.name.removeprefix("seed")), "average": options.average,
              "source": str(options.source), "reference": str(options.reference), "split": options.split,
              "reference_lines": len(read_lines(options.reference)), "curve": curve,
              "single_checkpoints": single_checkpoints(options.curve),
              "candidates": candidates,
              "decision": choose(curve, candidates, options.plateau_budgets, options.tolerance, max(options.budgets))}
    options.results.mkdir(parents=True, exist_ok=True)
    (options.results / "recipe.json").write_text(json.dumps(report, indent=2) + "\n")
    (options.results / "recipe.md").write_text(markdown(report))
    plot(report, options.results / "recipe.png")
    print(markdown(report))


if __name__ == "__main__":
    main()
