"""Baseline core vs transformers' MarianMTModel of identical dimensions, measured in one run.

Prints (and writes to benchmarks/results/speed.json) ratios, never absolute claims: this machine is shared and
noisy, so each pair of measurements is interleaved and the median of the repeats is used.

  * training step (forward + backward + AdamW step), batches of 32 sentences x 32/64/128 tokens: ours / Marian
    (target <= 1.0);
  * beam-4 generation throughput (tokens/s), 32 sentences, a fixed 32 new tokens: ours / Marian (target >= 1.0);
  * cached vs uncached greedy decoding of 64 new tokens, 32 sentences: speed-up for ours and for Marian
    (target >= 10x), and ours / Marian cached decoding throughput.

Usage: python benchmarks/speed.py [--repeats 5] [--threads 2]
"""

import argparse
import json
import platform
from pathlib import Path

import torch
from timing import SMALL_CPU_SIZE, interleaved, random_batch, training_step
from transformers import MarianConfig, MarianMTModel

from hf_syntax.convert.marian import from_marian

RESULTS = Path(__file__).resolve().parent / "results"


def build_pair():
    """A random Marian and our core holding the very same weights (dropout as in training: 0.1). Label smoothing
    is off on our side because MarianMTModel's loss is plain cross-entropy: both steps compute the same thing."""
    torch.manual_seed(0)
    config = MarianConfig(
        **SMALL_CPU_SIZE, activation_function="relu", scale_embedding=True, dropout=0.1, pad_token_id=0,
        decoder_start_token_id=1, eos_token_id=2, bos_token_id=1,
    )
    marian = MarianMTModel(config)
    return marian, from_marian(marian, label_smoothing=0.0)


def generation(model, batch, new_tokens: int, **settings):
    def generate():
        model.eval()
        with torch.no_grad():
            model.generate(
                input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], min_new_tokens=new_tokens,
                max_new_tokens=new_tokens, **settings,
            )

    return generate


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--output", type=Path, default=RESULTS / "speed.json")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    marian, ours = build_pair()
    report = {"threads": args.threads, "repeats": args.repeats, "machine": platform.processor() or platform.machine(),
              "torch": torch.__version__, "dimensions": SMALL_CPU_SIZE}

    for length in (32, 64, 128):
        batch = random_batch(32, length)
        steps = {"ours": training_step(ours, batch), "marian": training_step(marian, batch)}
        times = interleaved(steps, args.repeats)["wall"]
        ratio = times["ours"] / times["marian"]
        report[f"train_step_{length}"] = {"ours_s": times["ours"], "marian_s": times["marian"], "ratio": ratio}
        print(f"training step, 32 x {length:3d} tokens: ours/Marian time = {ratio:.3f} (target <= 1.0)")

    batch = random_batch(32, 32, seed=1)
    times = interleaved(
        {"ours": generation(ours, batch, 32, num_beams=4), "marian": generation(marian, batch, 32, num_beams=4)},
        max(2, args.repeats // 2),
    )["wall"]
    ratio = times["marian"] / times["ours"]
    report["beam4_generation"] = {"ours_s": times["ours"], "marian_s": times["marian"], "throughput_ratio": ratio,
                                  "tokens": 32 * 32}
    print(f"beam-4 generation, 32 x 32 new tokens: ours/Marian throughput = {ratio:.3f} (target >= 1.0)")

    batch = random_batch(32, 32, seed=2)
    decodings = {f"{name}_{mode}": generation(model, batch, 64, use_cache=mode == "cached")
                 for name, model in (("ours", ours), ("marian", marian)) for mode in ("cached", "uncached")}
    times = interleaved(decodings, max(2, args.repeats // 2))["wall"]
    for name in ("ours", "marian"):
        speedup = times[f"{name}_uncached"] / times[f"{name}_cached"]
        report[f"cache_speedup_{name}"] = {"cached_s": times[f"{name}_cached"],
                                           "uncached_s": times[f"{name}_uncached"], "speedup": speedup}
        print(f"{name}: cached decoding of 32 x 64 tokens is {speedup:.1f}x faster than uncached (target >= 10x)")
    ratio = times["marian_cached"] / times["ours_cached"]
    report["cached_decoding_throughput_ratio"] = ratio
    print(f"cached greedy decoding, 32 x 64 new tokens: ours/Marian throughput = {ratio:.3f}")

    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"written to {args.output}")


if __name__ == "__main__":
    main()
