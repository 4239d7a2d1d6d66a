"""Draw "which model should I use" as one picture: each model's difference to the baseline with its 95% interval
over seeds, from a study folder's results_over_seeds.json (budget from its results.json), one panel per metric.

    python benchmarks/forest_plot.py benchmarks/results/enja_converged            # writes <folder>/forest_bleu.png
    python benchmarks/forest_plot.py benchmarks/results/enja_plateau --metrics bleu cross_entropy
                                                                   # writes <folder>/forest_bleu_cross_entropy.png

The README and the model cards link the PNG; rerun this after the study's report changes, so the picture follows the
numbers the docs quote (tests/test_doc_numbers.py checks those).
"""

import argparse
import json
import sys
from pathlib import Path


# Each metric's name in the title, the decimals its numbers are written with and its axis label; cross-entropy is in
# the summaries only of studies that score it (a `source:` line in the study file).
METRICS = {
    "bleu": ("BLEU", 2, "Δ dev BLEU against the same seed's baseline"),
    "chrf": ("chrF", 2, "Δ dev chrF against the same seed's baseline"),
    "cross_entropy": ("cross-entropy", 4,
                      "Δ dev-reference cross-entropy against the same seed's baseline, nats per token (lower is better)"),
}


def load_rows(folder: Path, metric: str = "bleu") -> list[dict]:
    """One row per compared model, in the study's order: its run name, mean Δ of `metric`, interval, seeds, epochs."""
    over_seeds_file, results_file = folder / "results_over_seeds.json", folder / "results.json"
    for path in (over_seeds_file, results_file):
        if not path.is_file():
            raise SystemExit(f"error: {path} is missing; pass a study folder that the study report wrote "
                             "(results.json and results_over_seeds.json).")
    over_seeds = json.loads(over_seeds_file.read_text(encoding="utf-8"))
    records = json.loads(results_file.read_text(encoding="utf-8"))
    first_record = {}
    for record in records:
        first_record.setdefault(record["name"], record)
    rows = []
    for name, summary in over_seeds.items():
        if metric not in summary:
            raise SystemExit(f"error: {over_seeds_file} has no {metric!r} for {name}; a study scores cross-entropy only "
                             "when its study file names a `source:`. Leave that metric out of --metrics.")
        difference = summary[metric]
        record = first_record.get(name, {})
        rows.append({"name": name, "mean": difference["mean"], "interval": difference["interval"],
                     "seeds": difference["seeds"], "epochs": record.get("epochs")})
    if not rows:
        raise SystemExit(f"error: {over_seeds_file} compares no model with the baseline; run the study's report first.")
    return rows


def plot(panels: dict[str, list[dict]], out: Path, title: str) -> None:
    """Forest plot, one panel per metric, stacked: a point at the mean difference, a bar across the interval, a
    dashed line at no difference, the numbers in a column right of the widest interval."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    first_rows = next(iter(panels.values()))
    figure, panel_axes = plt.subplots(len(panels), 1, figsize=(8, len(panels) * (0.45 * len(first_rows) + 1.3)),
                                      squeeze=False)
    positions = range(len(first_rows))[::-1]
    for axes, (metric, rows) in zip(panel_axes[:, 0], panels.items()):
        lowest = min(min(row["interval"][0] for row in rows), 0.0)
        highest = max(max(row["interval"][1] for row in rows), 0.0)
        text_x = highest + 0.08 * (highest - lowest)
        _, digits, axis_label = METRICS[metric]
        for y, row in zip(positions, rows):
            low, high = row["interval"]
            axes.plot([low, high], [y, y], color="tab:blue", linewidth=2)
            axes.plot([row["mean"]], [y], marker="o", color="tab:blue")
            axes.text(text_x, y, f"{row['mean']:+.{digits}f} [{low:+.{digits}f}, {high:+.{digits}f}]",
                      va="center", fontsize=8)
        axes.axvline(0.0, color="grey", linestyle="--", linewidth=1)
        axes.set_yticks(list(positions), [f"{row['name']} ({row['seeds']} seeds)" for row in rows], fontsize=8)
        text_room = 0.3 + 0.075 * digits  # the numbers' column: wider for more decimals
        axes.set_xlim(lowest - 0.05 * (highest - lowest), highest + text_room * (highest - lowest))
        axes.set_ylim(-0.6, len(rows) - 0.4)
        axes.set_xlabel(axis_label, fontsize=8)
    figure.suptitle(title, fontsize=9)
    figure.tight_layout()
    figure.savefig(out, dpi=110)
    plt.close(figure)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="a study's results folder, e.g. benchmarks/results/enja_converged")
    parser.add_argument("--metrics", nargs="+", choices=sorted(METRICS), default=["bleu"],
                        help="one panel per metric, in this order (default: bleu)")
    parser.add_argument("--out", type=Path, help="the PNG to write (default: <folder>/forest_<metrics>.png)")
    parser.add_argument("--title", help="the picture's title (default: the folder's name and the budget)")
    args = parser.parse_args(argv)
    panels = {metric: load_rows(args.folder, metric) for metric in args.metrics}
    epochs = sorted({row["epochs"] for row in panels[args.metrics[0]] if row["epochs"] is not None})
    budget = f", {'/'.join(f'{e:g}' for e in epochs)} epochs" if epochs else ""
    out = args.out or args.folder / f"forest_{'_'.join(args.metrics)}.png"
    names = " and ".join(METRICS[metric][0] for metric in args.metrics)
    plot(panels, out, args.title or f"{args.folder.name}{budget}: dev {names} against the baseline, "
                                     "mean and 95% interval over seeds")
    print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
