"""How large each encoder layer's attention branch is against the residual it joins (issue 14's diagnosis).

    python benchmarks/encoder_branch_scale.py --model baseline=runs/multi30k_de_en_graph/baseline/seed42/model \
        --model gate_text=runs/multi30k_de_en_graph/gate_text/seed42/model [--source val.de.gz] [--sentences 200] \
        --output benchmarks/results/multi30k_graph/branch_scale

Every encoder layer here is post-LN: `LayerNorm(F_{l-1} + branch)`, where the branch is the self-attention output
(standard layer) or what the Graph-Transformer's fusion adds to its low-order part (its three attention parts,
summed or gated). When the branch's RMS is many times the residual's, the branch dominates what the LayerNorm
normalises and the residual (the token's own representation) becomes a small share of the layer's output: the layer
mostly replaces its input instead of refining it. The script
measures both RMS values over the real (non-padding) tokens of trained models, and the mean gate of gate fusions.
"""

import argparse
import gzip
import json
from pathlib import Path

import torch
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

import hf_syntax  # noqa: F401  (registers the architectures with the Auto classes)

VAL = Path(__file__).resolve().parents[2] / "shared" / "data" / "multi30k" / "val.de.gz"


def read_lines(path: Path, count: int) -> list[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as lines:
        return [line.strip() for line, _ in zip(lines, range(count))]


def branch_scales(model_dir: Path, sentences: list[str]) -> list[dict]:
    """Per encoder layer: RMS of the residual input, of the branch added to it, their ratio, and the mean gate."""
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

        def keep_sum(module, args, index=index):
            seen[index]["branch"] = args[0] - seen[index]["residual"]

        handles.append(layer.register_forward_pre_hook(keep_input, with_kwargs=True))
        handles.append(layer.self_attn_layer_norm.register_forward_pre_hook(keep_sum))
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
        rows.append({"layer": index + 1, "residual_rms": residual, "branch_rms": branch,
                     "branch_over_residual": branch / residual,
                     "mean_gate": values["gate"][real].mean().item() if "gate" in values else None})
    return rows


def markdown(results: dict, sentences: int, source: Path) -> str:
    lines = [f"# Encoder branch vs residual, RMS over the real tokens of {sentences} sentences of `{source.name}`", "",
             "`LayerNorm(residual + branch)` in every post-LN encoder layer; ratio = branch RMS / residual RMS "
             "(above 1 the branch dominates the LayerNorm's input and the residual's share of the output shrinks); "
             "mean gate = the gate fusion's weight on the new groups.", "",
             "| model | layer | residual RMS | branch RMS | ratio | mean gate |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for name, rows in results.items():
        for row in rows:
            gate = "—" if row["mean_gate"] is None else f"{row['mean_gate']:.2f}"
            lines.append(f"| {name} | {row['layer']} | {row['residual_rms']:.2f} | {row['branch_rms']:.2f} | "
                         f"{row['branch_over_residual']:.2f} | {gate} |")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", action="append", required=True, metavar="NAME=FOLDER",
                        help="a trained model folder and the name to report it under (repeatable)")
    parser.add_argument("--source", type=Path, default=VAL, help="source sentences, one per line (.gz or plain)")
    parser.add_argument("--sentences", type=int, default=200)
    parser.add_argument("--output", type=Path, help="write OUTPUT.json and OUTPUT.md")
    args = parser.parse_args()
    named = []
    for item in args.model:
        name, separator, folder = item.partition("=")
        if not separator or not name or not folder:
            parser.error(f"--model takes NAME=FOLDER, got {item!r}")
        named.append((name, Path(folder)))
    sentences = read_lines(args.source, args.sentences)
    results = {name: branch_scales(folder, sentences) for name, folder in named}
    table = markdown(results, len(sentences), args.source)
    print(table)
    if args.output:
        args.output.with_suffix(".json").write_text(json.dumps(results, indent=2) + "\n")
        args.output.with_suffix(".md").write_text(table)


if __name__ == "__main__":
    main()
