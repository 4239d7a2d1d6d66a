"""Cost of the Graph-Transformer and the syntax-infused Transformer relative to the baseline core, in one run.

Training step (forward + backward + AdamW step) time, 32 sentences x 32/64 tokens, at the small CPU size
(d=256, 3+3 layers, 4 heads, ffn 1024), all models called in turn so load changes hit them alike (median of the
repeats). Both clocks are recorded: wall time, and the CPU time of this process, which on a machine shared with
other jobs is the steadier measure of a single-threaded step (wall time there mostly measures the neighbours);
the verdict uses `--clock` (default: cpu with --threads 1, wall otherwise). Ratios against the baseline measured
alongside, with the targets the verdict checks:

  * syntax_infused (POS + case + subword tag, f = 20 of d): <= 1.05x. It needs separate source and target tables
    (the source one is d - f wide), so it is also compared with a baseline that has separate tables
    (`baseline_separate_tables`), which isolates the feature embeddings themselves;
  * graph_transformer_half_dim: <= 1.6x; the other Table 2 rows are listed for information.

Writes benchmarks/results/speed_graph_si.json. Usage:
    python benchmarks/speed_graph_si.py [--repeats 5] [--threads 2] [--variants syntax_infused ...]
(on a machine shared with other jobs, --threads 1 avoids threads spinning while they wait for each other).
"""

import argparse
import json
import platform
from pathlib import Path

import torch
from timing import SMALL_CPU_SIZE as DIMENSIONS
from timing import interleaved, random_batch, training_step
from transformers import AutoModelForSeq2SeqLM

from hf_syntax import config_for

RESULTS = Path(__file__).resolve().parent / "results"
VARIANTS = {  # name -> (architecture, extra overrides, target ratio against "baseline")
    "baseline": ("transformer_abs", {}, None),
    "baseline_separate_tables": ("transformer_abs", {"share_encoder_decoder_embeddings": False}, None),
    "syntax_infused": ("syntax_infused", {}, 1.05),
    "graph_transformer_half_dim": ("graph_transformer_half_dim", {}, 1.6),
    "graph_transformer_half_dim_gate": ("graph_transformer_half_dim_gate", {}, None),
    "graph_transformer_half_dim_gate_shared_qkv": ("graph_transformer_half_dim_gate_shared_qkv", {}, None),
    "graph_transformer": ("graph_transformer_sum", {}, None),  # "Our model": sum fusion, full width
    "graph_transformer_gate": ("graph_transformer_gate", {}, None),
    "graph_transformer_self_gate": ("graph_transformer_self_gate", {}, None),
}


def build_model(architecture: str, overrides: dict):
    torch.manual_seed(0)
    return AutoModelForSeq2SeqLM.from_config(config_for(architecture, **DIMENSIONS, **overrides))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--output", type=Path, default=RESULTS / "speed_graph_si.json")
    parser.add_argument("--variants", nargs="+", choices=[name for name in VARIANTS if name != "baseline"],
                        default=[name for name in VARIANTS if name != "baseline"],
                        help="models to compare with the baseline (default: all)")
    parser.add_argument("--clock", choices=("cpu", "wall"), help="clock of the verdict (default: cpu if --threads 1)")
    args = parser.parse_args()
    clock = args.clock or ("cpu" if args.threads == 1 else "wall")
    chosen = {name: VARIANTS[name] for name in ("baseline", *args.variants)}
    torch.set_num_threads(args.threads)
    report = {"threads": args.threads, "repeats": args.repeats, "clock": clock, "torch": torch.__version__,
              "machine": platform.processor() or platform.machine(), "dimensions": DIMENSIONS}
    models = {name: build_model(architecture, overrides) for name, (architecture, overrides, _) in chosen.items()}
    report["parameters"] = {name: sum(p.numel() for p in model.parameters()) for name, model in models.items()}
    for length in (32, 64):
        batch = random_batch(32, length)
        measured = interleaved({name: training_step(model, batch) for name, model in models.items()}, args.repeats)
        times = measured[clock]
        for name, (_, _, target) in chosen.items():
            if name == "baseline":
                continue
            ratio = times[name] / times["baseline"]
            other = "wall" if clock == "cpu" else "cpu"
            other_ratio = measured[other][name] / measured[other]["baseline"]
            entry = {"variant_s": times[name], "baseline_s": times["baseline"], "ratio": ratio, "target": target,
                     f"{other}_ratio": other_ratio}
            line = (f"training step, 32 x {length:3d} tokens: {name}/baseline {clock} time = {ratio:.3f} "
                    f"({other} {other_ratio:.3f})")
            if name == "syntax_infused" and "baseline_separate_tables" in times:
                entry["ratio_vs_separate_tables"] = times[name] / times["baseline_separate_tables"]
                line += f" (vs baseline_separate_tables {entry['ratio_vs_separate_tables']:.3f})"
            if target is not None:
                line += f" (target <= {target}) {'ok' if ratio <= target else 'MISSED'}"
            report[f"train_step_{length}_{name}"] = entry
            print(line)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"written to {args.output}")


if __name__ == "__main__":
    main()
