"""How large each encoder layer's attention branch is against the residual it joins (issue 14's diagnosis).

    R=runs/multi30k_de_en_graph_converged
    python benchmarks/analyses/encoder_branch_scale.py --model "Transformer s42=$R/baseline/seed42/model" \
        --model "+half-dim&gate s42=$R/half_dim_gate/seed42/model" [--source val.de.gz] [--sentences 1014] \
        --output benchmarks/results/multi30k_graph/converged_branch_scale

Every encoder layer here is post-LN: `LayerNorm(F_{l-1} + branch)`, where the branch is the self-attention output
(standard layer) or what the Graph-Transformer's fusion adds to its low-order part (its three attention parts,
summed or gated). When the branch's RMS is many times the residual's, the branch dominates what the LayerNorm
normalises and the residual (the token's own representation) becomes a small share of the layer's output: the layer
mostly replaces its input instead of refining it. The script measures both RMS values, and how far each layer's
output F_l moves from its input (RMS of the change, cosine), over the real (non-padding) tokens of trained models.
For Graph-Transformer layers it also gives what the branch is made of: the RMS of each attention part's output, the
RMS of the two streams the layer reads (the increment I against the previous representation P), and for gate fusions
the gate's mean and the shares of its units below 0.1 and above 0.9 (a mean of 0.5 can be a gate that mixes every
unit half and half, or one that keeps the low part in some units and replaces it in others).
"""

import argparse
import json
from pathlib import Path

import torch
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

import hf_syntax  # noqa: F401  (registers the architectures with the Auto classes)
from hf_syntax.cli.common import positive_int
from hf_syntax.data.corpus import read_lines

VAL = Path(__file__).resolve().parents[3] / "shared" / "data" / "multi30k" / "val.de.gz"


def branch_scales(model_dir: Path, sentences: list[str]) -> list[dict]:
    """Per encoder layer: RMS of the residual input, of the branch added to it and their ratio, and how far the
    layer's output moved from its input; for graph layers the RMS of each attention part and of the streams I and P,
    and the gate's statistics (None where a layer has no such thing: a standard layer, or the first graph layer,
    which reads no P)."""
    model = AutoModelForSeq2SeqLM.from_pretrained(model_dir).eval()
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    batch = tokenizer(sentences, return_tensors="pt", padding=True)
    real = batch["attention_mask"].bool()

    def rms(states: torch.Tensor) -> float:
        return states[real].pow(2).mean().sqrt().item()

    layers = model.get_encoder().layers
    seen = [{} for _ in layers]
    handles = []
    for index, layer in enumerate(layers):
        def keep_input(module, args, kwargs, index=index):
            seen[index]["residual"] = args[0] if args else kwargs["hidden_states"]
            if kwargs.get("streams") is not None:
                seen[index]["streams"] = kwargs["streams"]

        def keep_sum(module, args, index=index):
            seen[index]["branch"] = args[0] - seen[index]["residual"]

        handles.append(layer.register_forward_pre_hook(keep_input, with_kwargs=True))
        handles.append(layer.self_attn_layer_norm.register_forward_pre_hook(keep_sum))
        handles.append(layer.register_forward_hook(
            lambda module, args, output, index=index: seen[index].update(output=output[0])))
        for part, projection in getattr(layer, "out_projections", {}).items():
            handles.append(projection.register_forward_hook(
                lambda module, args, output, index=index, part=part: seen[index].setdefault("parts", {}).update(
                    {part: output})))
        gate = getattr(layer, "fusion_gate", None)
        if gate is not None:
            handles.append(gate.register_forward_hook(
                lambda module, args, output, index=index: seen[index].update(gate=torch.sigmoid(output))))
    with torch.no_grad():
        model.get_encoder()(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
    for handle in handles:
        handle.remove()
    rows = []
    for index, values in enumerate(seen):
        residual, branch = rms(values["residual"]), rms(values["branch"])
        streams, gate = values.get("streams"), values.get("gate")
        rows.append({"layer": index + 1, "residual_rms": residual, "branch_rms": branch,
                     "branch_over_residual": branch / residual,
                     "output_change": rms(values["output"] - values["residual"]) / residual,
                     "output_cosine": torch.cosine_similarity(values["output"][real], values["residual"][real],
                                                              dim=-1).mean().item(),
                     "part_rms": {part: rms(output) for part, output in values["parts"].items()} if "parts" in values
                     else None,
                     "increment_rms": rms(streams.incremental) if streams else None,
                     "previous_rms": rms(streams.previous) if streams else None,
                     **_gate_statistics(gate[real] if gate is not None else None)})
    return rows


def _gate_statistics(gate: torch.Tensor | None) -> dict:
    """The gate's (tokens, dims) values: their mean, the shares of saturated units, and the dimensions whose gate
    averaged over all tokens is below 0.1 or above 0.9, where it acts as a fixed mask (the layer passes its input
    through, or replaces it) rather than deciding per token. All None for a layer without a gate."""
    keys = ("mean_gate", "gate_below_0.1", "gate_above_0.9", "dims_fixed_low", "dims_fixed_new", "dims")
    if gate is None:
        return dict.fromkeys(keys)
    per_dimension = gate.mean(dim=0)
    values = (gate.mean().item(), (gate < 0.1).float().mean().item(), (gate > 0.9).float().mean().item(),
              int((per_dimension < 0.1).sum()), int((per_dimension > 0.9).sum()), per_dimension.numel())
    return dict(zip(keys, values))


def markdown(results: dict, sentences: int, source: Path) -> str:
    lines = [f"# Encoder branch vs residual, RMS over the real tokens of {sentences} sentences of `{source.name}`", "",
             "`LayerNorm(residual + branch)` in every post-LN encoder layer; ratio = branch RMS / residual RMS "
             "(above 1 the branch dominates the LayerNorm's input and the residual's share of the output shrinks); "
             "change = RMS(F_l - F_{l-1}) / RMS(F_{l-1}) and cos = the mean cosine of a token's F_l and F_{l-1} "
             "(how much the whole layer rewrites its input). "
             "Graph layers: the RMS of each attention part's output (high / middle I→P / middle P→I), of the "
             "streams they read (I / P), and the gate fusion's mean weight on the new groups with the share of its "
             "units below 0.1 (keeps the low part) and above 0.9 (takes the new groups), over all tokens, and the "
             "number of dimensions whose gate averaged over the tokens is below 0.1 / above 0.9 (a fixed mask, not a "
             "per-token choice).", "",
             "| model | layer | residual RMS | branch RMS | ratio | change | cos | parts RMS | I / P RMS | mean gate "
             "| gate < 0.1 / > 0.9 | fixed dims |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name, rows in results.items():
        for row in rows:
            parts = " / ".join(f"{value:.2f}" for value in row["part_rms"].values()) if row["part_rms"] else "—"
            read = row["increment_rms"] is not None
            streams = f"{row['increment_rms']:.2f} / {row['previous_rms']:.2f}" if read else "—"
            gated = row["mean_gate"] is not None
            gate = f"{row['mean_gate']:.2f}" if gated else "—"
            saturated = f"{row['gate_below_0.1']:.0%} / {row['gate_above_0.9']:.0%}" if gated else "—"
            fixed = f"{row['dims_fixed_low']} / {row['dims_fixed_new']} of {row['dims']}" if gated else "—"
            lines.append(f"| {name} | {row['layer']} | {row['residual_rms']:.2f} | {row['branch_rms']:.2f} | "
                         f"{row['branch_over_residual']:.2f} | {row['output_change']:.2f} | "
                         f"{row['output_cosine']:.2f} | {parts} | {streams} | {gate} | "
                         f"{saturated} | {fixed} |")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", action="append", required=True, metavar="NAME=FOLDER",
                        help="a trained model folder and the name to report it under (repeatable)")
    parser.add_argument("--source", type=Path, default=VAL, help="source sentences, one per line (.gz or plain)")
    parser.add_argument("--sentences", type=positive_int, default=200)
    parser.add_argument("--output", type=Path, help="write OUTPUT.json and OUTPUT.md")
    args = parser.parse_args()
    named = []
    for item in args.model:
        name, separator, folder = item.partition("=")
        if not separator or not name or not folder:
            parser.error(f"--model takes NAME=FOLDER, got {item!r}")
        named.append((name, Path(folder)))
    sentences = read_lines(args.source)[:args.sentences]
    results = {name: branch_scales(folder, sentences) for name, folder in named}
    table = markdown(results, len(sentences), args.source)
    print(table)
    if args.output:
        args.output.with_suffix(".json").write_text(json.dumps(results, indent=2) + "\n")
        args.output.with_suffix(".md").write_text(table)


if __name__ == "__main__":
    main()
