"""Where Transformer_dep+rel's model part spends the time the baseline's does not, as the Endpoint handler runs it.

The handler's batch of 32 held-out Japanese sentences (pre-split, as in training) is featurized once with GiNZA, then
each model's `generate` (beam 4, exactly `--new-tokens` tokens, untrained weights at the small CPU size) is timed
interleaved: the model part only, no parsing. Besides the baseline and dep+rel, rows switch one term off at a time,
which attributes the cost: decoder relative positions (`relative_position_in_decoder=False`), relative-position
values (`relative_position_values=False`: the key side alone lets attention use the fused kernel), the depth term,
and the rows of `dbsa_dep_rel` and `dbsa_dep_rel_self`. One generate per row is also profiled (torch.profiler): the
operations with the most self-CPU time. Two parser rows time the rest of dep+rel's handler: GiNZA parsing the 32
sentences in one batch (what serve_latency.py's `parser` row measures, and what the pipeline has done with a
request since it reads a list as one batch) and one sentence at a time (what the pipeline did before).

Usage: python benchmarks/profiles/dep_rel_model_profile.py [--repeats 5] [--threads 2]   (--tiny: checks that it runs)
Results: benchmarks/results/dep_rel_model_profile.{json,md}
"""

import collections
import platform
import sys
from pathlib import Path

import torch
from torch.profiler import profile

from hf_syntax.featurizer import SyntaxFeaturizer
from hf_syntax.parsers import get_parser

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "speed"))  # serve_latency.py, timing.py
from serve_latency import PARSER, untrained_model, workload, write_results  # noqa: E402
from timing import interleaved  # noqa: E402

RESULTS = Path(__file__).resolve().parents[1] / "results"
ROWS = {
    "baseline": ("transformer_abs", {}),
    "dep_rel": ("transformer_dep_rel", {}),
    "dep_rel, no decoder relative positions": ("transformer_dep_rel", {"relative_position_in_decoder": False}),
    "dep_rel, relative-position keys only": ("transformer_dep_rel", {"relative_position_values": False}),
    "rel (no depth term)": ("transformer_rel", {}),
    "dbsa_dep_rel": ("dbsa_dep_rel", {}),
    "dbsa_dep_rel_self": ("dbsa_dep_rel_self", {}),
}
"""Row -> (architecture, overrides); `untrained_model` puts parse heads in layer 2 of 3."""


def top_operations(function, count: int = 8) -> list[tuple[str, float]]:
    """The `count` aten operations with the most self-CPU milliseconds in one call of `function`."""
    with torch.no_grad(), profile() as profiler:
        function()
    totals = collections.Counter()
    for event in profiler.events():
        totals[event.name] += event.self_cpu_time_total / 1000
    return [(name, round(milliseconds, 1)) for name, milliseconds in totals.most_common(count)]


def main() -> None:
    options, tokenizer, heldout = workload(__doc__.split("\n\n")[0], RESULTS / "dep_rel_model_profile")
    featurizer = SyntaxFeaturizer(tokenizer, parser=PARSER, features=("dep_depths",), pretokenized=True, max_length=128)
    batch = featurizer(heldout[: options.batch_size], return_tensors="pt")
    models = {name: untrained_model(architecture, overrides, tokenizer, options.tiny)
              for name, (architecture, overrides) in ROWS.items()}
    settings = dict(num_beams=4, min_new_tokens=options.new_tokens, max_new_tokens=options.new_tokens)

    def generate(model):
        columns = ("input_ids", "attention_mask", *model.config.needs_source_features)
        with torch.no_grad():
            return model.generate(**{name: batch[name] for name in columns}, **settings)

    def encode(model):
        with torch.no_grad():
            return model.get_encoder()(**{name: batch[name] for name in ("input_ids", "attention_mask",
                                                                            *model.config.needs_source_features)})

    cases = {}
    for name, model in models.items():
        cases[f"{name} | generate"] = lambda model=model: generate(model)
        cases[f"{name} | encoder"] = lambda model=model: encode(model)
    ginza, words = get_parser(PARSER), [line.split() for line in heldout[: options.batch_size]]
    cases["parser | one batch"] = lambda: ginza.parse_batch(words)
    cases["parser | one sentence at a time"] = lambda: [ginza.parse(sentence) for sentence in words]
    timings = interleaved(cases, options.repeats)
    reference = timings["wall"]["baseline | generate"]
    rows = [{"model": name, "generate_wall_s": timings["wall"][f"{name} | generate"],
             "encoder_wall_s": timings["wall"][f"{name} | encoder"],
             "generate_vs_baseline": timings["wall"][f"{name} | generate"] / reference,
             "top_operations_ms": top_operations(lambda model=model: generate(model))}
            for name, model in models.items()]
    parsing = {case: timings["wall"][f"parser | {case}"] for case in ("one batch", "one sentence at a time")}
    result = {"settings": {**vars(options), "out": str(options.out), "machine": platform.platform(),
                           "torch": torch.__version__}, "rows": rows, "parser_wall_s": parsing}
    table = ["| model | generate s | vs baseline | encoder s | top self-CPU operations (ms, one generate) |",
             "| --- | ---: | ---: | ---: | --- |"]
    table += [f"| {row['model']} | {row['generate_wall_s']:.3f} | {row['generate_vs_baseline']:.2f} | "
              f"{row['encoder_wall_s']:.3f} | "
              f"{', '.join(f'{name} {ms}' for name, ms in row['top_operations_ms'][:5])} |" for row in rows]
    table += ["", "| GiNZA on the same sentences | wall s |", "| --- | ---: |"]
    table += [f"| {case} | {seconds:.3f} |" for case, seconds in parsing.items()]
    write_results(options.out, result, f"Model part of the handler (`python benchmarks/profiles/dep_rel_model_profile.py`, "
                  f"{options.threads} threads, batch {options.batch_size}, beam 4, {options.new_tokens} new tokens, "
                  f"median of {options.repeats} interleaved repeats, untrained weights, GiNZA depths featurized "
                  f"beforehand).", table)


if __name__ == "__main__":
    main()
