"""How many device operations one training step of each model type dispatches, against MarianMTModel of the same size.

A training step of these small models on a GPU is bound by kernel launches (issue 41's GPU check: Transformer_dep+rel
trained at 0.66x Marian's tokens/s while its arithmetic is a few percent more), so the number of operations a step
dispatches predicts its GPU cost, and it can be counted on any machine. Counted: forward + backward of one batch of
64 pairs x 24 tokens at the small size (every syntax column given), under torch.profiler on the CPU; each operator
that does work counts once (a matrix product once, whatever it calls inside), views, no-op casts and the host-side
copies of Python numbers not at all. The
optimizer step is left out (on a GPU AdamW runs as a few multi-tensor kernels, the same for every model type).

Usage: python benchmarks/profiles/step_operations.py [--batch 64] [--length 24]
Results: benchmarks/results/step_operations.{json,md}
"""

import argparse
import collections
import inspect
import json
import sys
from pathlib import Path

import torch
from torch.profiler import profile
from transformers import AutoModelForSeq2SeqLM, MarianConfig, MarianMTModel

from hf_syntax import config_for
from hf_syntax.cli.common import positive_int

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "speed"))  # timing.py
from timing import SMALL_CPU_SIZE, random_batch  # noqa: E402

RESULTS = Path(__file__).resolve().parents[1] / "results"
ROWS = {  # row -> (architecture, overrides): the rows of benchmarks/gpu_check.py
    "syntax_transformer": ("transformer_abs", {}),
    "dbsa": ("dbsa_enc_dec", {"parse_layer_encoder": 2, "parse_layer_decoder": 2}),
    "dep_rpe": ("transformer_dep_rel", {}),
    "transformer_rel": ("transformer_rel", {}),
    "graph_transformer": ("graph_transformer_sum", {}),
    "syntax_infused": ("syntax_infused", {"share_encoder_decoder_embeddings": False}),
    "dbsa_dep_rel_self": ("dbsa_dep_rel_self", {"parse_layer_encoder": 2, "parse_layer_decoder": 2}),
}
NO_WORK = {"aten::" + name for name in (
    "view _unsafe_view _reshape_alias reshape as_strided expand expand_as transpose t numpy_T permute select slice "
    "narrow unsqueeze squeeze alias detach split chunk unbind flatten unflatten empty empty_like empty_strided "
    "new_empty new_empty_strided lift_fresh result_type promote_types resolve_conj resolve_neg resize_ to _to_copy "
    "contiguous"
).split()}
"""Operators that launch nothing themselves (views, allocation, dtype bookkeeping); `to`/`contiguous` launch through
the `copy_` they call, which is counted."""
ONE_KERNEL = {"aten::mm", "aten::bmm", "aten::addmm", "aten::baddbmm", "aten::addbmm"}
"""Matrix products: one library call on a GPU, whatever the CPU implementation dispatches inside."""


def marian(size: dict) -> MarianMTModel:
    torch.manual_seed(0)
    return MarianMTModel(MarianConfig(**size, pad_token_id=0, eos_token_id=2, decoder_start_token_id=0))


def syntax_model(architecture: str, overrides: dict, size: dict):
    torch.manual_seed(0)
    config = config_for(architecture, **size, **overrides, pad_token_id=0, eos_token_id=2, bos_token_id=1,
                        decoder_start_token_id=1)
    return AutoModelForSeq2SeqLM.from_config(config)


def copies_a_python_number(event) -> bool:
    """A 0-dimensional copy: a Python float (`x * 0.125`) wrapped as a tensor on the host, no device work."""
    return event.name == "aten::copy_" and bool(event.input_shapes) and event.input_shapes[0] == []


def dispatched_operations(model, batch: dict) -> collections.Counter:
    """The working operators of one forward + backward of `model` on `batch`, by name."""
    accepted = set(inspect.signature(model.forward).parameters)
    inputs = {name: value for name, value in batch.items() if name in accepted}
    model.train()
    model(**inputs).loss.backward()  # warm-up: lazily built state does not count
    model.zero_grad(set_to_none=True)
    with profile(record_shapes=True) as profiled:
        model(**inputs).loss.backward()
    events = [event for event in profiled.events() if event.name.startswith("aten::")]
    children = collections.defaultdict(list)
    for event in events:
        if event.cpu_parent is not None:
            children[id(event.cpu_parent)].append(event)
    counts = collections.Counter()

    def count(event) -> int:
        if event.name in ONE_KERNEL:
            counts[event.name] += 1
            return 1
        inner = sum(count(child) for child in children[id(event)] if child.name.startswith("aten::"))
        if inner == 0 and event.name not in NO_WORK and not copies_a_python_number(event):
            counts[event.name] += 1
            return 1
        return inner

    def outermost(event) -> bool:
        parent = event.cpu_parent
        while parent is not None:
            if parent.name.startswith("aten::"):
                return False
            parent = parent.cpu_parent
        return True

    for event in events:
        if outermost(event):
            count(event)
    return counts


def markdown(report: dict) -> str:
    lines = [
        "# Operations one training step dispatches (`python benchmarks/profiles/step_operations.py`)",
        "",
        f"Forward + backward of {report['batch']} pairs x {report['length']} tokens at the small size (d=256, 3+3 "
        "layers, 4 heads), counted under torch.profiler on the CPU: every operator that does work once (a matrix "
        "product once), views, no-op casts and host-side copies of Python numbers not at all; no optimizer step. On a GPU, where these small steps are "
        "bound by kernel launches, the count predicts the step's cost.",
        "",
        "| model type | operations | × Marian | × syntax_transformer | most added over syntax_transformer |",
        "|---|---:|---:|---:|---|",
    ]
    rows = report["rows"]
    for row, counted in rows.items():
        base = rows["syntax_transformer"]["by_operator"]
        added = sorted(((name, number - base.get(name, 0)) for name, number in counted["by_operator"].items()),
                       key=lambda item: -item[1])
        added_text = ", ".join(f"{name.removeprefix('aten::')} +{number}" for name, number in added[:4] if number > 0)
        label = "MarianMTModel (reference)" if row == "marian" else row
        lines.append(f"| {label} | {counted['operations']} | {counted['vs_marian']} | "
                     f"{counted['vs_syntax_transformer']} | {added_text or '-'} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=positive_int, default=64)
    parser.add_argument("--length", type=positive_int, default=24)
    parser.add_argument("--output", type=Path, default=RESULTS / "step_operations")
    args = parser.parse_args()
    torch.set_num_threads(1)
    size = dict(SMALL_CPU_SIZE, max_position_embeddings=128)
    batch = random_batch(args.batch, args.length)
    models = {"marian": marian(size),
              **{row: syntax_model(architecture, overrides, size) for row, (architecture, overrides) in ROWS.items()}}
    counted = {row: dispatched_operations(model, batch) for row, model in models.items()}
    totals = {row: sum(counts.values()) for row, counts in counted.items()}
    report = {"batch": args.batch, "length": args.length, "torch": torch.__version__, "rows": {
        row: {"operations": totals[row], "vs_marian": round(totals[row] / totals["marian"], 3),
              "vs_syntax_transformer": round(totals[row] / totals["syntax_transformer"], 3),
              "by_operator": dict(sorted(counted[row].items()))}
        for row in models}}
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.with_suffix(".json").write_text(json.dumps(report, indent=1) + "\n")
    text = markdown(report)
    args.output.with_suffix(".md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
