"""Do the fast CPU backends translate like the PyTorch model? Output agreement and BLEU on real dev sentences.

For one trained model folder (a recipe checkpoint or ``<output_dir>/model``) and a dev set, each sentence encoded
once as the translation pipeline encodes it (for a model that embeds source features, with the feature columns of
one parse) and given to every backend:

  * greedy decoding, PyTorch vs CTranslate2 float32: share of sentences whose output ids are identical
    (target >= 99%), and the sentences that differ (index and both outputs);
  * beam-4 BLEU / chrF of PyTorch float32, CTranslate2 float32 (target within 0.1 BLEU), CTranslate2 int8 and the
    PyTorch path's int8 linear layers (targets within 0.5 BLEU);
  * greedy BLEU of PyTorch and CTranslate2 float32;
  * CTranslate2 float32 with ``early_stopping=True`` (beam patience 1), against PyTorch with the model's own
    ``early_stopping``: how much the stopping rule of the beam search changes (see ``BEAM_SEARCH_NOTE``);
  * with ``--workers N`` (N > 1), every backend again with each batch split over N parallel workers
    (``..._Nworkers``): splitting must not change what is translated.

A model CTranslate2 cannot express (e.g. relative + absolute positions) is checked on the PyTorch path only (int8
linear layers against float32). No timing: agreement and quality only (speed is ``benchmarks/speed/speed_inference.py``).
Writes ``<output>.json`` and ``<output>.md``.

Usage: python benchmarks/analyses/ctranslate2_agreement.py --model runs/x/checkpoint-N [--tokenizer DIR]
           --source ../shared/data/small_parallel_enja/dev.ja --reference ../shared/data/small_parallel_enja/dev.en
"""

import argparse
import copy
import json
import platform
import tempfile
import time
from pathlib import Path

import ctranslate2
import torch
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

import hf_syntax  # noqa: F401  (registers the Auto classes)
from hf_syntax.cli.common import positive_int
from hf_syntax.columns import pad_columns
from hf_syntax.data.corpus import read_lines
from hf_syntax.fast_inference import (
    CTranslate2Seq2SeqModel,
    export_ctranslate2,
    expressibility_problems,
    optimize_for_cpu,
)
from hf_syntax.metrics.translation import score_translations
from hf_syntax.pipelines import syntax_pipeline

RESULTS = Path(__file__).resolve().parents[1] / "results"
BEAM_RUNS = {
    "pytorch_float32": ("pytorch_float32", {}),  # first: every other run is compared with it
    "ctranslate2_float32": ("ctranslate2_float32", {}),
    "ctranslate2_int8": ("ctranslate2_int8", {}),
    "pytorch_int8": ("pytorch_int8", {}),
    "ctranslate2_float32_early_stopping": ("ctranslate2_float32", {"early_stopping": True}),
}
"""Beam-4 runs: name -> (backend, ``generate`` settings on top of the model's own)."""


def worker_runs(workers: int) -> dict:
    """The beam-4 runs of every backend with its batches split over ``workers`` parallel workers."""
    if workers < 2:
        return {}
    return {f"{name}_{workers}workers": (f"{name}_{workers}workers", {})
            for name in ("pytorch_float32", "pytorch_int8", "ctranslate2_float32", "ctranslate2_int8")}
BEAM_SEARCH_NOTE = (
    "Both beam searches keep the same running beams and score a finished hypothesis alike (sum of log-probs / "
    "generated length including the end token): the scores of identical outputs agree to ~1e-6. They differ only "
    "in when they stop. CTranslate2 stops once `beam_size * patience` hypotheses are finished; transformers with "
    "`early_stopping=True` once `num_beams` are (the same search as patience 1), and with its default "
    "`early_stopping=False` it goes on while the best running beam, divided by its current length, beats the worst "
    "kept hypothesis, a heuristic CTranslate2 cannot express. The backend maps True to patience 1 and False to "
    "patience 2. `ctranslate2_float32_early_stopping` is CTranslate2 with patience 1 (what the backend did for "
    "every model before that mapping). On the converged ja->en baseline (recipe_gap/normal_init), transformers "
    "with `early_stopping=True` and CTranslate2 with patience 1 gave 500/500 identical outputs; the 8 outputs "
    "where patience 1 differs from transformers' default are hypotheses transformers found after CTranslate2 had "
    "stopped, whose normalised scores are higher by 0.011-0.205 (not numerical ties)."
)


def encode_sources(model, tokenizer, sources: list[str]) -> list[dict]:
    """Every source as the translation pipeline feeds it to ``generate``: ids, mask and, for a model that embeds
    source features, its feature columns from one parse (so every backend reads the same parse)."""
    pipe = syntax_pipeline(model, tokenizer)
    return [pipe.encode(pipe.read(source)) for source in sources]


def generate_all(model, rows: list[dict], pad_token_id: int, batch_size: int, **settings) -> list[list[int]]:
    """Output ids (without padding) of every encoded source, in batches, with ``settings`` on top of the model's
    own."""
    outputs = []
    for start in range(0, len(rows), batch_size):
        batch = pad_columns(rows[start : start + batch_size], pad_token_id, padding_side="right")
        with torch.no_grad():
            ids = model.generate(**batch, **settings)
        outputs += [until_end(row.tolist(), model.config.eos_token_id, pad_token_id) for row in ids]
    return outputs


def until_end(ids: list[int], eos_token_id: int, pad_token_id: int) -> list[int]:
    """The ids up to the first end token (beam search pads finished hypotheses with more end tokens), or without
    the padding when the output was cut at the maximum length."""
    if eos_token_id in ids[1:]:
        return ids[: ids.index(eos_token_id, 1) + 1]
    while ids and ids[-1] == pad_token_id:
        ids = ids[:-1]
    return ids


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, required=True, help="trained model folder (PyTorch weights)")
    parser.add_argument("--tokenizer", type=Path, help="tokenizer folder (default: the model folder)")
    parser.add_argument("--source", type=Path, required=True)
    parser.add_argument("--reference", type=Path, required=True)
    parser.add_argument("--max-sentences", type=positive_int, default=500)
    parser.add_argument("--batch-size", type=positive_int, default=32)
    parser.add_argument("--threads", type=positive_int, default=1)
    parser.add_argument("--workers", type=positive_int, default=1,
                        help="also run every backend with its batches split over this many workers")
    parser.add_argument("--output", type=Path,
                        help="output stem (default: benchmarks/results/ctranslate2_agreement/<model_type>)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    started = time.time()

    model = AutoModelForSeq2SeqLM.from_pretrained(args.model).eval()
    tokenizer = AutoTokenizer.from_pretrained(args.tokenizer or args.model)
    args.output = args.output or RESULTS / "ctranslate2_agreement" / model.config.model_type
    sources = read_lines(args.source)[:args.max_sentences]
    references = read_lines(args.reference)[:args.max_sentences]
    rows = encode_sources(model, tokenizer, sources)
    work = Path(tempfile.mkdtemp(prefix="ct2_agreement_"))
    backends = {"pytorch_float32": model, "pytorch_int8": optimize_for_cpu(model, "int8")}
    if args.workers > 1:
        backends[f"pytorch_float32_{args.workers}workers"] = optimize_for_cpu(copy.deepcopy(model),
                                                                              workers=args.workers)
        backends[f"pytorch_int8_{args.workers}workers"] = optimize_for_cpu(model, "int8", workers=args.workers)
    not_expressible = expressibility_problems(model.config)  # such a model is checked on the PyTorch path only
    if not not_expressible:
        for quantization in ("float32", "int8"):
            folder = export_ctranslate2(model, tokenizer, work / quantization, quantization=quantization)
            backends[f"ctranslate2_{quantization}"] = CTranslate2Seq2SeqModel(folder, intra_threads=args.threads)
            if args.workers > 1:
                backends[f"ctranslate2_{quantization}_{args.workers}workers"] = CTranslate2Seq2SeqModel(
                    folder, intra_threads=1, workers=args.workers)

    def translate(backend: str, num_beams: int, **settings) -> list[list[int]]:
        return generate_all(backends[backend], rows, tokenizer.pad_token_id, args.batch_size, num_beams=num_beams,
                            **settings)

    def scores(outputs: list[list[int]]) -> dict:
        texts = tokenizer.batch_decode(outputs, skip_special_tokens=True)
        return {name: round(value, 2) for name, value in score_translations(texts, references).items()}

    greedy = {name: translate(name, 1) for name in ("pytorch_float32", "ctranslate2_float32") if name in backends}
    differing = [] if not_expressible else [
        index for index, (ours, theirs) in enumerate(zip(greedy["pytorch_float32"], greedy["ctranslate2_float32"]))
        if ours != theirs]
    report = {
        "model": str(args.model),
        "model_type": model.config.model_type,
        "source_features": list(getattr(model.config, "source_features", None) or []),
        "sentences": len(sources),
        "source": str(args.source),
        "threads": args.threads,
        "torch": torch.__version__,
        "ctranslate2": ctranslate2.__version__,
        "machine": platform.processor() or platform.machine(),
        "ctranslate2_not_expressible": not_expressible,
        "workers": args.workers,
        "greedy_identical_share": None if not_expressible else round(1 - len(differing) / len(sources), 4),
        "greedy_identical": None if not_expressible else len(sources) - len(differing),
        "greedy_bleu": {name: scores(outputs) for name, outputs in greedy.items()},
        "greedy_differences": [
            {"index": index, "source": sources[index],
             "pytorch": tokenizer.decode(greedy["pytorch_float32"][index], skip_special_tokens=True),
             "ctranslate2": tokenizer.decode(greedy["ctranslate2_float32"][index], skip_special_tokens=True)}
            for index in differing],
        "beam4_bleu": {},
        "beam4_bleu_difference_to_pytorch": {},
        "beam4_identical_to_pytorch": {},
    }
    write(report, args.output)
    beam = {}
    for name in applicable_beam_runs(report):
        backend, settings = beam_runs(report)[name]
        beam[name] = translate(backend, 4, **settings)
        report["beam4_bleu"][name] = scores(beam[name])
        report["beam4_bleu_difference_to_pytorch"][name] = round(
            report["beam4_bleu"][name]["bleu"] - report["beam4_bleu"]["pytorch_float32"]["bleu"], 2)
        report["beam4_identical_to_pytorch"][name] = sum(
            a == b for a, b in zip(beam["pytorch_float32"], beam[name]))
        report["seconds"] = round(time.time() - started, 1)
        write(report, args.output)
    print(markdown(report))


def write(report: dict, output: Path) -> None:
    """Written after every stage, so a long run on a busy machine leaves what it has measured."""
    output.parent.mkdir(parents=True, exist_ok=True)
    output.with_suffix(".json").write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    output.with_suffix(".md").write_text(markdown(report))


def beam_runs(report: dict) -> dict:
    return {**BEAM_RUNS, **worker_runs(report.get("workers", 1))}


def applicable_beam_runs(report: dict) -> list[str]:
    return [name for name, (backend, _) in beam_runs(report).items()
            if not (report["ctranslate2_not_expressible"] and backend.startswith("ctranslate2"))]


def greedy_line(report: dict) -> str:
    if report["ctranslate2_not_expressible"]:
        return ("CTranslate2 cannot express this model (" + "; ".join(report["ctranslate2_not_expressible"])
                + "), so only the PyTorch path's int8 linear layers are compared with the float32 model.")
    return (f"Greedy decoding, PyTorch vs CTranslate2 float32: **{report['greedy_identical']} / "
            f"{report['sentences']}** outputs token-identical ({100 * report['greedy_identical_share']:.1f}%; "
            "target >= 99%).")


def markdown(report: dict) -> str:
    lines = [
        f"# CTranslate2 / int8 agreement with the PyTorch model ({report['sentences']} sentences of "
        f"`{Path(report['source']).name}`)",
        "",
        f"Model `{report['model']}` ({report['model_type']}; source features: "
        f"{', '.join(report['source_features']) or 'none'}); torch {report['torch']}, CTranslate2 "
        f"{report['ctranslate2']}, "
        f"{report['threads']} thread(s). Produced by `benchmarks/analyses/ctranslate2_agreement.py`.",
        "",
        greedy_line(report),
        "",
        f"Beam-4 ({len(report['beam4_bleu'])} of {len(applicable_beam_runs(report))} runs measured):",
        "",
        "| backend | beam-4 BLEU | chrF | BLEU - PyTorch | beam-4 outputs identical to PyTorch |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for name, values in report["beam4_bleu"].items():
        lines.append(f"| {name} | {values['bleu']:.2f} | {values['chrf']:.2f} | "
                     f"{report['beam4_bleu_difference_to_pytorch'][name]:+.2f} | "
                     f"{report['beam4_identical_to_pytorch'][name]} |")
    lines += ["", "Greedy BLEU: " + ", ".join(f"{name} {values['bleu']:.2f}"
                                             for name, values in report["greedy_bleu"].items()), ""]
    if not report["ctranslate2_not_expressible"]:
        lines += [BEAM_SEARCH_NOTE, ""]
    if report["greedy_differences"]:
        lines += ["Sentences whose greedy outputs differ:", ""]
        lines += [f"* {item['index']}: PyTorch `{item['pytorch']}` / CTranslate2 `{item['ctranslate2']}`"
                  for item in report["greedy_differences"]]
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
