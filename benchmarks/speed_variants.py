"""Cost of the dependency variants relative to the baseline core, measured in one run.

Prints (and writes to benchmarks/results/speed_variants.json) ratios against the baseline measured alongside:

  * training step (forward + backward + AdamW step) time, 32 sentences x 32/64/128 tokens, at the small CPU size
    (d=256, 3+3 layers, 4 heads; DBSA's parse heads in layer 2 of 3, the paper's 4 of 6):
    DBSA(Enc+Dec) (target <= 1.10x), Transformer_rel (<= 1.3x), Transformer_dep+rel (<= 1.5x);
  * peak memory of one Transformer_dep+rel training step, 8 sentences x 512 tokens, vs the baseline (target <= 1.3x):
    the peak of the bytes torch's CPU allocator holds during the step (profiler allocation records; no GPU here).

Usage: python benchmarks/speed_variants.py [--repeats 5] [--threads 2]
"""

import argparse
import json
import platform
from pathlib import Path

import torch
from timing import SMALL_CPU_SIZE as DIMENSIONS
from timing import interleaved, random_batch, training_step

from hf_syntax import config_for
from hf_syntax.variants import ARCHITECTURES

RESULTS = Path(__file__).resolve().parent / "results"
VARIANTS = {  # name -> (architecture, target ratio)
    "baseline": ("transformer_abs", None),
    "dbsa_enc_dec": ("dbsa_enc_dec", 1.10),
    "transformer_rel": ("transformer_rel", 1.3),
    "transformer_dep_rel": ("transformer_dep_rel", 1.5),
}
MEMORY_TARGET = 1.3


def build_model(architecture: str):
    torch.manual_seed(0)
    overrides = dict(DIMENSIONS)
    if ARCHITECTURES[architecture][0].model_type == "dbsa":
        overrides.update(parse_layer_encoder=2 if architecture != "dbsa_dec" else 0,
                         parse_layer_decoder=2 if architecture != "dbsa_enc" else 0)
    from transformers import AutoModelForSeq2SeqLM

    return AutoModelForSeq2SeqLM.from_config(config_for(architecture, **overrides))


def peak_step_memory_mib(model, batch) -> float:
    """Peak of the bytes held by torch's CPU allocator during one training step, above what was held before it.

    Read from the profiler's per-operator allocation records (`profile_memory=True`) replayed in time order, so it
    is deterministic and unaffected by other processes. A warm-up step first creates the optimizer state."""
    step = training_step(model, batch)
    step()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True) as profile:
        step()
    held = peak = 0
    for event in sorted(profile.events(), key=lambda event: event.time_range.start):
        held += event.self_cpu_memory_usage
        peak = max(peak, held)
    return peak / 2**20


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--output", type=Path, default=RESULTS / "speed_variants.json")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    report = {"threads": args.threads, "repeats": args.repeats, "machine": platform.processor() or platform.machine(),
              "torch": torch.__version__, "dimensions": DIMENSIONS}

    models = {name: build_model(architecture) for name, (architecture, _) in VARIANTS.items()}
    for length in (32, 64, 128):
        batch = random_batch(32, length)
        steps = {name: training_step(model, batch) for name, model in models.items()}
        times = interleaved(steps, args.repeats)["wall"]
        for name, (_, target) in VARIANTS.items():
            if target is None:
                continue
            ratio = times[name] / times["baseline"]
            report[f"train_step_{length}_{name}"] = {"variant_s": times[name], "baseline_s": times["baseline"],
                                                     "ratio": ratio, "target": target}
            verdict = "ok" if ratio <= target else "MISSED"
            print(f"training step, 32 x {length:3d} tokens: {name}/baseline time = {ratio:.3f} "
                  f"(target <= {target}) {verdict}")

    batch = random_batch(8, 512)
    memory = {name: peak_step_memory_mib(models[name], batch) for name in ("baseline", "transformer_dep_rel")}
    ratio = memory["transformer_dep_rel"] / memory["baseline"]
    report["peak_memory_512"] = {"baseline_mib": memory["baseline"], "transformer_dep_rel_mib": memory["transformer_dep_rel"],
                                 "ratio": ratio, "target": MEMORY_TARGET, "batch": "8 x 512 tokens"}
    verdict = "ok" if ratio <= MEMORY_TARGET else "MISSED"
    print(f"peak memory of a training step, 8 x 512 tokens: transformer_dep_rel/baseline = {ratio:.3f} "
          f"(target <= {MEMORY_TARGET}) {verdict}")

    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"written to {args.output}")


if __name__ == "__main__":
    main()
