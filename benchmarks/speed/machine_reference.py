"""Does counting epochs in the machine's reference steps make two machines' epoch times compare?

A study times each machine with a fixed PyTorch workload (``hf_syntax/study/machine_pace.py``) and divides a run's
epoch time by it, so that issue 62's seed-44 pair, trained on two machines, still gives the Graph-Transformer's speed
cost. That holds if the recipe's models and the reference slow down alike from one machine to another. Here the
"machines" are this one at different thread counts (the speed that can be changed on one machine): at each, the
reference step and a training step of the baseline and of the Graph default (small CPU size, 64 sentences, the
multi30k recipe's batch) are timed in turn, and the models' steps are counted in reference steps. If the count
stays put while the seconds change, the division removes the machine's speed; the drift says by how much it does not.

    python benchmarks/speed/machine_reference.py --threads 1 2 --output benchmarks/results/machine_reference.json
"""

from __future__ import annotations

import argparse
import platform
from pathlib import Path

import torch
from timing import SMALL_CPU_SIZE, interleaved, random_batch, training_step, write_report
from transformers import AutoModelForSeq2SeqLM

from hf_syntax import config_for
from hf_syntax.cli.common import positive_int
from hf_syntax.study.machine_pace import reference_step

RESULTS = Path(__file__).resolve().parents[1] / "results"
MODELS = {"baseline": ("transformer_abs", {}),
          "graph_default": ("graph_transformer_half_dim_gate", {"graph_new_groups": "mean"})}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", nargs="+", type=positive_int, default=[1, 2], help="thread counts to compare")
    parser.add_argument("--length", type=positive_int, default=20, help="tokens per sentence (Multi30K's ~13 words)")
    parser.add_argument("--repeats", type=positive_int, default=7)
    parser.add_argument("--output", type=Path, default=RESULTS / "machine_reference.json")
    options = parser.parse_args(argv)
    torch.manual_seed(0)
    models = {name: AutoModelForSeq2SeqLM.from_config(config_for(architecture, **SMALL_CPU_SIZE, **overrides))
              for name, (architecture, overrides) in MODELS.items()}
    batch = random_batch(64, options.length)
    by_threads = {}
    for threads in options.threads:
        torch.set_num_threads(threads)
        steps = {"reference": reference_step(), **{name: training_step(model, batch) for name, model in models.items()}}
        seconds = interleaved(steps, options.repeats)["wall"]
        by_threads[threads] = {"seconds": seconds,
                               "in_reference_steps": {name: seconds[name] / seconds["reference"] for name in models},
                               "graph_default_over_baseline": seconds["graph_default"] / seconds["baseline"]}
        counted = ", ".join(f"{name} {value:.2f}" for name, value in by_threads[threads]["in_reference_steps"].items())
        print(f"{threads} thread(s): reference step {seconds['reference']:.4f} s; in reference steps: {counted}; "
              f"graph_default/baseline {by_threads[threads]['graph_default_over_baseline']:.3f}", flush=True)
    first, *others = options.threads
    comparisons = {}
    for threads in others:
        slower, faster = by_threads[first], by_threads[threads]
        comparisons[f"{first}_vs_{threads}_threads"] = {
            "seconds_ratio": {name: slower["seconds"][name] / faster["seconds"][name] for name in ("reference", *models)},
            "reference_steps_drift": {name: slower["in_reference_steps"][name] / faster["in_reference_steps"][name]
                                      for name in models},
        }
        entry = comparisons[f"{first}_vs_{threads}_threads"]
        print(f"{first} against {threads} threads: seconds x{entry['seconds_ratio']['baseline']:.2f} (baseline), "
              f"x{entry['seconds_ratio']['graph_default']:.2f} (graph_default), "
              f"x{entry['seconds_ratio']['reference']:.2f} (reference); in reference steps x"
              f"{entry['reference_steps_drift']['baseline']:.3f} and x{entry['reference_steps_drift']['graph_default']:.3f}")
    report = {"repeats": options.repeats, "batch": f"64 x {options.length} tokens", "torch": torch.__version__,
              "machine": platform.processor() or platform.machine(), "dimensions": SMALL_CPU_SIZE,
              "by_threads": by_threads, "comparisons": comparisons}
    write_report(report, options.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
