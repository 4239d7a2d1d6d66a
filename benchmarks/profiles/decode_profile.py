"""Where beam-4 generate spends its operations, with transformers' default cache and with the PyTorch path's
``DecodingCache``: counts per decoder step, which do not depend on how busy the machine is.

For each model (the speed benchmark's random workload and size, one thread), two generate calls of different
lengths are profiled with torch.profiler and differenced, so the counts are per generated token: all aten
operations, reorders of cached keys/values (``index_select`` of a 4-D tensor) and concatenations along the position
axis (``cat`` along dim -2), plus the share of profiled self-CPU time those two took (this share does depend on
load and memory bandwidth: read it as rough).

Usage: python benchmarks/profiles/decode_profile.py [--steps 16] [--tiny]
"""

import argparse
import collections
import json
import sys
from pathlib import Path

import torch
from torch.profiler import profile

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "speed"))  # timing.py
from speed_inference import TINY_SIZE, VARIANTS  # noqa: E402
from timing import SMALL_CPU_SIZE, random_batch  # noqa: E402
from transformers import AutoModelForSeq2SeqLM  # noqa: E402

from hf_syntax import config_for  # noqa: E402
from hf_syntax.cli.common import positive_int  # noqa: E402
from hf_syntax.fast_inference import DecodingCache  # noqa: E402

RESULTS = Path(__file__).resolve().parents[1] / "results"
PROFILED = ("dbsa_enc_dec", "dep_rpe", "graph_transformer")
FIRST_STEPS = 4


def counts(model, inputs: dict, steps: int) -> tuple[collections.Counter, collections.Counter]:
    """(operation counts, self-CPU microseconds) of one beam-4 generate of exactly `steps` tokens."""
    with torch.no_grad(), profile(record_shapes=True) as profiler:
        model.generate(**inputs, num_beams=4, min_new_tokens=steps, max_new_tokens=steps)
    number, time = collections.Counter(), collections.Counter()
    for event in profiler.events():
        name = event.name
        if name == "aten::index_select" and len(event.input_shapes[0]) == 4:
            name = "cache reorder (index_select, 4-D)"
        elif name == "aten::cat" and event.concrete_inputs[1] == -2:
            name = "cache append (cat along positions)"
        number[name] += 1
        time[name] += event.self_cpu_time_total
    return number, time


def per_step(model, inputs: dict, steps: int) -> dict:
    short_counts, short_time = counts(model, inputs, FIRST_STEPS)
    long_counts, long_time = counts(model, inputs, FIRST_STEPS + steps)
    number = {name: (long_counts[name] - short_counts[name]) / steps for name in long_counts}
    time = {name: long_time[name] - short_time[name] for name in long_time}
    copies = ("cache reorder (index_select, 4-D)", "cache append (cat along positions)")
    return {"operations_per_step": round(sum(number.values()), 1),
            **{f"{name}_per_step": round(number.get(name, 0), 2) for name in copies},
            "cache_copy_share_of_self_time": round(sum(time.get(name, 0) for name in copies)
                                                   / max(sum(time.values()), 1), 3)}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=positive_int, default=16)
    parser.add_argument("--tiny", action="store_true", help="tiny sizes: checks the script runs")
    parser.add_argument("--output", type=Path, default=RESULTS / "decode_profile")
    args = parser.parse_args()
    torch.set_num_threads(1)
    size = TINY_SIZE if args.tiny else SMALL_CPU_SIZE
    sentences, length = (4, 8) if args.tiny else (32, 32)
    batch = random_batch(sentences, length, seed=1, vocab_size=size["vocab_size"])
    report = {"size": size, "sentences": sentences, "source_tokens": length, "steps": args.steps, "models": {}}
    for name in PROFILED:
        architecture, overrides = VARIANTS[name]
        torch.manual_seed(0)
        model = AutoModelForSeq2SeqLM.from_config(config_for(architecture, **size, **overrides)).eval()
        inputs = {column: batch[column]
                  for column in ("input_ids", "attention_mask", *model.config.needs_source_features)}
        report["models"][name] = {}
        for cache_name, cache in (("transformers_default", None), ("DecodingCache", DecodingCache)):
            model.decoding_cache = cache
            report["models"][name][cache_name] = per_step(model, inputs, args.steps)
        print(name, json.dumps(report["models"][name]))
    args.output.with_suffix(".json").write_text(json.dumps(report, indent=2) + "\n")
    args.output.with_suffix(".md").write_text(markdown(report, args.tiny))


def markdown(report: dict, tiny: bool) -> str:
    lines = ["# Operations per beam-4 decoder step: transformers' default cache vs DecodingCache", ""]
    if tiny:
        lines += ["**Tiny smoke-test run: the numbers below mean nothing.**", ""]
    lines += [f"{report['sentences']} sentences x {report['source_tokens']} source tokens, beam 4, one thread, "
              f"averaged over {report['steps']} steps; produced by `benchmarks/profiles/decode_profile.py`. The time share "
              "is of profiled self-CPU time on a busy machine: rough.", "",
              "| model | cache | aten ops / step | cache reorders / step | cache concatenations / step | "
              "share of time in both |", "| --- | --- | ---: | ---: | ---: | ---: |"]
    for name, caches in report["models"].items():
        for cache, values in caches.items():
            lines.append(f"| {name} | {cache} | {values['operations_per_step']:.0f} | "
                         f"{values['cache reorder (index_select, 4-D)_per_step']:.0f} | "
                         f"{values['cache append (cat along positions)_per_step']:.0f} | "
                         f"{100 * values['cache_copy_share_of_self_time']:.0f}% |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
