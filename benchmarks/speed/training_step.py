"""What a model costs per training step against the baseline core: one row per model, ratios measured in one run.

Each row is a model at the small CPU size (d=256, 3+3 layers, 4 heads, ffn 1024; DBSA's parse heads in layer 2 of
3, the paper's 4 of 6). A step is forward + backward + one AdamW step on 32 sentences of each ``--lengths``; every
row and the baseline are called in turn so that load changes hit them alike, and the median of ``--repeats`` is
kept. Both clocks are recorded: wall time, and this process's CPU time, the steadier measure of a single-threaded
step on a machine shared with other jobs; the verdict reads ``--clock`` (default: cpu with --threads 1, wall
otherwise) and checks a row's target where it has one. ``--peak-memory`` also measures the peak of the bytes torch's
CPU allocator holds during one step of 8 sentences x 512 tokens, Transformer_dep+rel against the baseline.

    python benchmarks/speed/training_step.py --rows dbsa_enc_dec transformer_rel transformer_dep_rel \\
        --lengths 32 64 128 --peak-memory                    # the dependency variants (speed_variants.json)
    python benchmarks/speed/training_step.py --rows syntax_infused baseline_separate_tables \\
        graph_transformer_half_dim --lengths 32 64 --threads 1  # syntax-infused, Graph-Transformer (speed_graph_si.json)
    python benchmarks/speed/training_step.py --rows dbsa_dep_rel dbsa_dep_rel_self transformer_dep_rel \\
        --lengths 32 64 128 --repeats 9 --output benchmarks/results/speed_dbsa_dep_rel.json
    python benchmarks/speed/training_step.py --rows marian   # transformers' MarianMTModel of the same size
    python benchmarks/speed/training_step.py --rows baseline_eager --lengths 32 64 128 \\
        --output benchmarks/results/speed_attn_implementation.json   # the eager attention path against sdpa
"""

from __future__ import annotations

import argparse
import platform
from dataclasses import dataclass, field
from pathlib import Path

import torch
from timing import SMALL_CPU_SIZE, interleaved, parse_heads_at, random_batch, training_step, write_report
from transformers import AutoModelForSeq2SeqLM, MarianConfig, MarianMTModel

from hf_syntax import config_for
from hf_syntax.cli.common import positive_int

RESULTS = Path(__file__).resolve().parents[1] / "results"
MEMORY_TARGET = 1.3  # Transformer_dep+rel's peak memory of a step against the baseline's


@dataclass(frozen=True)
class Row:
    """A model to time against the baseline: a named architecture with config overrides (``marian``: transformers'
    MarianMTModel), the ratio it should stay under, and another row it is also set against."""

    architecture: str
    overrides: dict = field(default_factory=dict)
    target: float | None = None
    also_against: str | None = None


ROWS = {
    "baseline": Row("transformer_abs"),
    "marian": Row("marian"),  # same size, relu, scaled embeddings; its loss is plain cross-entropy
    # attn_implementation="eager": every attention computes its weights explicitly instead of the fused kernel
    "baseline_eager": Row("transformer_abs", {"attn_implementation": "eager"}),
    "dbsa_enc_dec": Row("dbsa_enc_dec", target=1.10),
    "transformer_rel": Row("transformer_rel", target=1.3),
    "transformer_dep_rel": Row("transformer_dep_rel", target=1.5),
    "dbsa_dep_rel": Row("dbsa_dep_rel"),  # DBSA's parse heads on top of dep+rel
    "dbsa_dep_rel_self": Row("dbsa_dep_rel_self"),  # the same, parsing the source itself in two layers under it
    # syntax-infused needs separate source and target tables: set against a baseline with them too, which isolates
    # the feature embeddings themselves
    "baseline_separate_tables": Row("transformer_abs", {"share_encoder_decoder_embeddings": False}),
    "syntax_infused": Row("syntax_infused", target=1.05, also_against="baseline_separate_tables"),
    "graph_transformer_half_dim": Row("graph_transformer_half_dim", target=1.6),
    "graph_transformer_half_dim_gate": Row("graph_transformer_half_dim_gate"),
    "graph_transformer_half_dim_gate_shared_qkv": Row("graph_transformer_half_dim_gate_shared_qkv"),
    "graph_transformer": Row("graph_transformer_sum"),  # "Our model": sum fusion, full width
    "graph_transformer_gate": Row("graph_transformer_gate"),
    "graph_transformer_self_gate": Row("graph_transformer_self_gate"),
}


def build_model(row: Row):
    torch.manual_seed(0)
    if row.architecture == "marian":
        return MarianMTModel(MarianConfig(**SMALL_CPU_SIZE, activation_function="relu", scale_embedding=True,
                                          dropout=0.1, pad_token_id=0, decoder_start_token_id=1, eos_token_id=2,
                                          bos_token_id=1))
    overrides = {**SMALL_CPU_SIZE, **parse_heads_at(row.architecture, 2), **row.overrides}
    return AutoModelForSeq2SeqLM.from_config(config_for(row.architecture, **overrides))


def peak_step_memory_mib(model, batch) -> float:
    """Peak of the bytes held by torch's CPU allocator during one training step, above what was held before it.

    Read from the profiler's per-operator allocation records (``profile_memory=True``) replayed in time order, so it
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


def time_rows(rows: dict[str, Row], models: dict, lengths: list[int], repeats: int, clock: str) -> dict:
    """One entry per row and length: both rows' seconds, the ratio on ``clock`` and on the other clock, the target."""
    other = "wall" if clock == "cpu" else "cpu"
    entries = {}
    for length in lengths:
        batch = random_batch(32, length)
        measured = interleaved({name: training_step(model, batch) for name, model in models.items()}, repeats)
        times = measured[clock]
        for name, row in rows.items():
            if name == "baseline":
                continue
            ratio = times[name] / times["baseline"]
            entry = {"variant_s": times[name], "baseline_s": times["baseline"], "ratio": ratio, "target": row.target,
                     f"{other}_ratio": measured[other][name] / measured[other]["baseline"]}
            line = (f"training step, 32 x {length:3d} tokens: {name}/baseline {clock} time = {ratio:.3f} "
                    f"({other} {entry[f'{other}_ratio']:.3f})")
            if row.also_against in times:
                entry[f"ratio_vs_{row.also_against}"] = times[name] / times[row.also_against]
                line += f" (vs {row.also_against} {entry[f'ratio_vs_{row.also_against}']:.3f})"
            if row.target is not None:
                line += f" (target <= {row.target}) {'ok' if ratio <= row.target else 'MISSED'}"
            entries[f"train_step_{length}_{name}"] = entry
            print(line, flush=True)
    return entries


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    choices = [name for name in ROWS if name != "baseline"]
    parser.add_argument("--rows", nargs="+", choices=choices, default=choices,
                        help="models to time against the baseline (default: all)")
    parser.add_argument("--lengths", nargs="+", type=positive_int, default=[32, 64],
                        help="tokens per sentence, one table each")
    parser.add_argument("--repeats", type=positive_int, default=5)
    parser.add_argument("--threads", type=positive_int, default=2)
    parser.add_argument("--clock", choices=("cpu", "wall"), help="clock of the verdict (default: cpu if --threads 1)")
    parser.add_argument("--peak-memory", action="store_true",
                        help="also Transformer_dep+rel's peak memory of a step, 8 x 512 tokens, against the baseline's")
    parser.add_argument("--output", type=Path, default=RESULTS / "training_step.json")
    options = parser.parse_args(argv)
    clock = options.clock or ("cpu" if options.threads == 1 else "wall")
    torch.set_num_threads(options.threads)
    rows = {name: ROWS[name] for name in ("baseline", *options.rows)}
    models = {name: build_model(row) for name, row in rows.items()}
    report = {"threads": options.threads, "repeats": options.repeats, "clock": clock, "torch": torch.__version__,
              "machine": platform.processor() or platform.machine(), "dimensions": SMALL_CPU_SIZE,
              "parameters": {name: sum(p.numel() for p in model.parameters()) for name, model in models.items()},
              **time_rows(rows, models, options.lengths, options.repeats, clock)}
    if options.peak_memory:
        batch = random_batch(8, 512)
        memory = {name: peak_step_memory_mib(models.get(name) or build_model(ROWS[name]), batch)
                  for name in ("baseline", "transformer_dep_rel")}
        ratio = memory["transformer_dep_rel"] / memory["baseline"]
        report["peak_memory_512"] = {"baseline_mib": memory["baseline"], "transformer_dep_rel_mib":
                                     memory["transformer_dep_rel"], "ratio": ratio, "target": MEMORY_TARGET,
                                     "batch": "8 x 512 tokens"}
        print(f"peak memory of a training step, 8 x 512 tokens: transformer_dep_rel/baseline = {ratio:.3f} "
              f"(target <= {MEMORY_TARGET}) {'ok' if ratio <= MEMORY_TARGET else 'MISSED'}")
    write_report(report, options.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
