"""Draw "which model should I use" as one picture: each model's BLEU difference to the baseline with its 95% interval
over seeds, from a study folder's results_over_seeds.json (labels and budget from its results.json).

    python benchmarks/forest_plot.py benchmarks/results/enja_converged            # writes <folder>/forest_bleu.png
    python benchmarks/forest_plot.py benchmarks/results/enja_plateau --title "..."

The README and the model cards link the PNG; rerun this after the study's report changes, so the picture follows the
numbers the docs quote (tests/test_doc_numbers.py checks those).
"""

import argparse
import json
import sys
from pathlib import Path


def load_rows(folder: Path) -> list[dict]:
    """One row per compared model, in the study's order: its run name, mean Δ BLEU, interval, seeds, epochs."""
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
        bleu = summary["bleu"]
        record = first_record.get(name, {})
        rows.append({"name": name, "mean": bleu["mean"], "interval": bleu["interval"], "seeds": bleu["seeds"],
                     "epochs": record.get("epochs")})
    if not rows:
        raise SystemExit(f"error: {over_seeds_file} compares no model with the baseline; run the study's report first.")
    return rows


def plot(rows: list[dict], out: Path, title: str) -> None:
    """Forest plot: a point at the mean difference, a bar across the interval, a dashed line at no difference."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lowest = min(min(row["interval"][0] for row in rows), 0.0)
    highest = max(max(row["interval"][1] for row in rows), 0.0)
    text_x = highest + 0.08 * (highest - lowest)   # the numbers in a column right of the widest interval
    figure, axes = plt.subplots(figsize=(8, 0.45 * len(rows) + 1.3))
    positions = range(len(rows))[::-1]
    for y, row in zip(positions, rows):
        low, high = row["interval"]
        axes.plot([low, high], [y, y], color="tab:blue", linewidth=2)
        axes.plot([row["mean"]], [y], marker="o", color="tab:blue")
        axes.text(text_x, y, f"{row['mean']:+.2f} [{low:+.2f}, {high:+.2f}]", va="center", fontsize=8)
    axes.axvline(0.0, color="grey", linestyle="--", linewidth=1)
    axes.set_yticks(list(positions), [f"{row['name']} ({row['seeds']} seeds)" for row in rows], fontsize=8)
    axes.set_xlim(lowest - 0.05 * (highest - lowest), highest + 0.45 * (highest - lowest))
    axes.set_xlabel("Δ dev BLEU over the baseline on the same seeds: mean and 95% interval over seeds", fontsize=8)
    axes.set_title(title, fontsize=9)
    figure.tight_layout()
    figure.savefig(out, dpi=110)
    plt.close(figure)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="a study's results folder, e.g. benchmarks/results/enja_converged")
    parser.add_argument("--out", type=Path, help="the PNG to write (default: <folder>/forest_bleu.png)")
    parser.add_argument("--title", help="the picture's title (default: the folder's name and the budget)")
    args = parser.parse_args(argv)
    rows = load_rows(args.folder)
    epochs = sorted({row["epochs"] for row in rows if row["epochs"] is not None})
    budget = f", {'/'.join(f'{e:g}' for e in epochs)} epochs" if epochs else ""
    out = args.out or args.folder / "forest_bleu.png"
    plot(rows, out, args.title or f"{args.folder.name}{budget}: dev BLEU against the baseline")
    print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
