"""CPU translation speed of every inference path, as ratios measured in one run (interleaved repeats, medians).

For each variant, beam-4 generation of the same batch by:

  * ``marian``: transformers' ``MarianMTModel.generate`` at the same size (the reference every ratio divides by);
  * ``pytorch``: our model's ``generate`` (float32) with transformers' default cache, the reference of the PyTorch
    path's speed-ups;
  * ``pytorch_fast``: the PyTorch path in float32 (``hf_syntax.fast_inference.optimize_for_cpu``: generation through
    ``DecodingCache``, same outputs);
  * ``pytorch_int8``: the PyTorch path with dynamic int8 linear layers (``optimize_for_cpu(model, "int8")``);
  * ``ctranslate2_float32`` / ``ctranslate2_int8``: the CTranslate2 export, where CTranslate2 can express the model;
  * ``..._Nworkers`` (N = ``--threads`` > 1): the same path with the batch split over N single-threaded workers
    (``optimize_for_cpu(..., workers=N)``, CTranslate2's ``inter_threads``) instead of N threads per operation.

Workloads: ``random`` = 32 sentences x 32 source tokens, exactly 64 new tokens (random weights, the issue's
setting); ``dev`` = the first 32 lines of a real dev set translated by each trained model folder given
(``--model``, with its tokenizer; a feature model's columns from one parse made before timing), a baseline's weights
also loaded into Marian for the reference. Throughput is sentences/s; the
report gives, per variant, each path's speed-up over Marian and over the same model's PyTorch ``generate``.
Targets: CTranslate2-expressible variants >= 2.0x Marian in float32 and >= 3.0x in int8; DBSA, dep_rpe and the
Graph-Transformer through the PyTorch path >= 1.5x their own ``generate``.

Usage: python benchmarks/speed/speed_inference.py [--repeats 5] [--threads 2] [--variants baseline ...]
                                           [--model runs/x/model [runs/y/model ...] --source dev.ja]
                                           [--no-random]
       python benchmarks/speed/speed_inference.py --tiny     # seconds: checks every path runs, timings meaningless
"""

import argparse
import copy
import json
import os
import platform
import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "analyses"))  # ctranslate2_agreement.py
from timing import SMALL_CPU_SIZE, interleaved, random_batch  # noqa: E402
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer, MarianConfig, MarianMTModel  # noqa: E402

from hf_syntax import config_for  # noqa: E402
from hf_syntax.cli.common import positive_int  # noqa: E402
from hf_syntax.fast_inference import (  # noqa: E402
    CTranslate2Seq2SeqModel,
    expressibility_problems,
    export_ctranslate2,
    optimize_for_cpu,
)
from ctranslate2_agreement import encode_sources  # noqa: E402
from hf_syntax.columns import pad_columns  # noqa: E402
from hf_syntax.convert.marian import to_marian  # noqa: E402

RESULTS = Path(__file__).resolve().parents[1] / "results"
VARIANTS = {  # name -> named architecture (DBSA's parse heads in layer 2 of 3, as speed/training_step.py)
    "baseline": ("transformer_abs", {}),
    "relative_no_absolute": ("transformer_noabs", {"relative_position_clip": 2}),
    "syntax_infused": ("syntax_infused", {}),
    "dbsa_enc_dec": ("dbsa_enc_dec", {"parse_layer_encoder": 2, "parse_layer_decoder": 2}),
    "dep_rpe": ("transformer_dep_rel", {}),
    "graph_transformer": ("graph_transformer_half_dim_gate", {}),
}
TINY_SIZE = dict(vocab_size=300, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2,
                 decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=128)


def marian_twin(model, trained: bool = False) -> MarianMTModel | None:
    """A Marian model of the same size as ``model``: its weights when ``model`` is a baseline, random weights
    otherwise, except for a ``trained`` model (random weights would not stop where it stops, so no reference)."""
    config = model.config
    try:
        return to_marian(model).eval()
    except ValueError:
        if trained:
            return None
        torch.manual_seed(0)
        fields = ("vocab_size", "d_model", "encoder_layers", "decoder_layers", "encoder_attention_heads",
                  "decoder_attention_heads", "encoder_ffn_dim", "decoder_ffn_dim", "max_position_embeddings",
                  "pad_token_id", "eos_token_id", "bos_token_id", "decoder_start_token_id")
        return MarianMTModel(MarianConfig(**{name: getattr(config, name) for name in fields},
                                          scale_embedding=True)).eval()


def paths_of(model, tokenizer, work: Path, threads: int, trained: bool = False) -> dict:
    """Every inference path of ``model``: name -> a generate-like callable."""
    marian = marian_twin(model, trained)
    paths = {**({"marian": marian} if marian is not None else {}), "pytorch": model.eval(),
             "pytorch_fast": optimize_for_cpu(copy.deepcopy(model)),  # in float32 it changes the model it is given
             "pytorch_int8": optimize_for_cpu(model, "int8")}
    if threads > 1:
        paths[f"pytorch_fast_{threads}workers"] = optimize_for_cpu(copy.deepcopy(model), workers=threads)
        paths[f"pytorch_int8_{threads}workers"] = optimize_for_cpu(model, "int8", workers=threads)
    if not expressibility_problems(model.config):
        for quantization in ("float32", "int8"):
            folder = export_ctranslate2(model, tokenizer, work / quantization, quantization=quantization,
                                        overwrite=True)
            paths[f"ctranslate2_{quantization}"] = CTranslate2Seq2SeqModel(folder, intra_threads=threads)
            if threads > 1:
                paths[f"ctranslate2_{quantization}_{threads}workers"] = CTranslate2Seq2SeqModel(
                    folder, intra_threads=1, workers=threads)
    return paths


def generation(model, batch: dict, columns: tuple, **settings):
    inputs = {name: batch[name] for name in ("input_ids", "attention_mask", *columns)}
    if isinstance(model, MarianMTModel):
        inputs = {name: inputs[name] for name in ("input_ids", "attention_mask")}

    def generate():
        with torch.no_grad():
            model.generate(**inputs, num_beams=4, **settings)

    return generate


def float32_agreement(paths: dict, batch: dict, columns: tuple, **settings) -> dict:
    """Sentences whose beam output on each float32 PyTorch path equals today's ``generate``'s. ``pytorch_fast``
    must agree on every sentence (a speed-up that changes outputs would not count). The worker paths decode on one
    thread per worker, and a matrix product summed by another number of threads rounds differently, so on a trained
    model a near tie may flip: their count is reported (``ctranslate2_agreement.py --workers`` measures it on 500
    sentences at one thread, where the split alone is compared)."""
    inputs = {name: batch[name] for name in ("input_ids", "attention_mask", *columns)}
    with torch.no_grad():
        outputs = {name: paths[name].generate(**inputs, num_beams=4, **settings) for name in paths
                   if name == "pytorch" or name.startswith("pytorch_fast")}
    pad = paths["pytorch"].config.pad_token_id
    tokens = {name: [[token for token in row.tolist() if token != pad] for row in output]
              for name, output in outputs.items()}  # a split batch is padded to its own longest output
    identical = {name: sum(row == reference for row, reference in zip(rows, tokens["pytorch"]))
                 for name, rows in tokens.items()}
    if identical["pytorch_fast"] != len(tokens["pytorch"]):
        raise SystemExit("pytorch_fast generated other tokens than pytorch: the fast path is broken.")
    return identical


def measure(paths: dict, batch: dict, columns: tuple, repeats: int, sentences: int, **settings) -> dict:
    identical = float32_agreement(paths, batch, columns, **settings)
    times = interleaved({name: generation(model, batch, columns, **settings) for name, model in paths.items()},
                        repeats)["wall"]
    result = {name: {"seconds": round(seconds, 4), "sentences_per_s": round(sentences / seconds, 2),
                     "vs_marian": round(times["marian"] / seconds, 3) if "marian" in times else None,
                     "vs_own_pytorch": round(times["pytorch"] / seconds, 3),
                     **({"identical_to_pytorch": identical[name]} if name in identical else {})}
              for name, seconds in times.items()}
    return result


def synthetic_tokenizer(vocab_size: int):
    """A real tokenizer object for the export's vocabulary files; the random workload feeds ids directly."""
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    vocabulary = {"<pad>": 0, "<s>": 1, "</s>": 2, "<unk>": 3, **{f"t{i}": i for i in range(4, vocab_size)}}
    return PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.WordLevel(vocabulary, unk_token="<unk>")),
                                   pad_token="<pad>", bos_token="<s>", eos_token="</s>", unk_token="<unk>")


def random_workload(args, size: dict, work: Path) -> dict:
    sentences, length, new_tokens = (4, 8, 8) if args.tiny else (32, 32, 64)
    tokenizer = synthetic_tokenizer(size["vocab_size"])
    batch = random_batch(sentences, length, seed=1, vocab_size=size["vocab_size"])
    report = {}
    for name in args.variants:
        architecture, overrides = VARIANTS[name]
        torch.manual_seed(0)
        model = AutoModelForSeq2SeqLM.from_config(config_for(architecture, **size, **overrides))
        paths = paths_of(model, tokenizer, work / name, args.threads)
        report[name] = measure(paths, batch, model.config.needs_source_features, args.repeats, sentences,
                               min_new_tokens=new_tokens, max_new_tokens=new_tokens)
        print(name, json.dumps({path: values["vs_marian"] for path, values in report[name].items()}))
    return report


def dev_workload(args, model_dir: Path, work: Path) -> dict:
    """The first 32 dev lines translated by one trained model, encoded as its translation pipeline encodes them (a
    feature model's columns come from one parse, made before any timing)."""
    model = AutoModelForSeq2SeqLM.from_pretrained(model_dir).eval()
    tokenizer = AutoTokenizer.from_pretrained(args.tokenizer or model_dir)
    lines = args.source.read_text(encoding="utf-8").splitlines()[: 4 if args.tiny else 32]
    batch = pad_columns(encode_sources(model, tokenizer, lines), tokenizer.pad_token_id, padding_side="right")
    paths = paths_of(model, tokenizer, work, args.threads, trained=True)
    return measure(paths, batch, model.config.needs_source_features, args.repeats, len(lines),
                   max_new_tokens=8 if args.tiny else 128)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=positive_int, default=5)
    parser.add_argument("--threads", type=positive_int, default=2)
    parser.add_argument("--model", type=Path, nargs="+", default=[],
                        help="trained model folder(s) for the dev workload, timed one after the other")
    parser.add_argument("--tokenizer", type=Path, help="their tokenizer folder (default: each model folder)")
    parser.add_argument("--source", type=Path, help="dev source sentences for the dev workload")
    parser.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=list(VARIANTS),
                        help="random workload: which variants to time (default: all)")
    parser.add_argument("--no-random", action="store_true", help="time the dev workload only")
    parser.add_argument("--tiny", action="store_true", help="tiny sizes and inputs: checks the script runs")
    parser.add_argument("--output", type=Path, default=RESULTS / "speed_inference")
    args = parser.parse_args()
    if bool(args.model) != bool(args.source):
        parser.error("--model and --source go together (the dev workload).")
    if args.no_random and not args.model:
        parser.error("--no-random leaves nothing to time without --model and --source (the dev workload).")
    torch.set_num_threads(args.threads)
    if args.tiny:
        args.repeats = 1
    work = Path(tempfile.mkdtemp(prefix="speed_inference_"))
    import ctranslate2

    report = {"threads": args.threads, "repeats": args.repeats, "tiny": args.tiny, "torch": torch.__version__,
              "ctranslate2": ctranslate2.__version__, "machine": platform.processor() or platform.machine(),
              "ctranslate2_cpu_backend": ctranslate2_cpu_backend()}
    if not args.no_random:  # the random workload's model size (a trained model brings its own)
        report["dimensions"] = TINY_SIZE if args.tiny else SMALL_CPU_SIZE
        report["random"] = random_workload(args, report["dimensions"], work)
    if args.model:
        report["dev_source"] = str(args.source)
        report["dev"] = {str(model_dir): dev_workload(args, model_dir, work / f"dev{index}")
                         for index, model_dir in enumerate(args.model)}
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.with_suffix(".json").write_text(json.dumps(report, indent=2) + "\n")
    args.output.with_suffix(".md").write_text(markdown(report))
    print(markdown(report))


def ctranslate2_cpu_backend() -> dict:
    """The CPU vendor and the environment variables that pick CTranslate2's matrix-product library: on AMD CPUs it
    uses oneDNN unless ``CT2_USE_MKL=1`` (``CT2_VERBOSE=1`` prints the choice), so a ratio depends on them."""
    cpuinfo = Path("/proc/cpuinfo")
    vendor = next((line.split(":", 1)[1].strip() for line in cpuinfo.read_text().splitlines()
                   if line.startswith("vendor_id")), None) if cpuinfo.exists() else None
    return {"cpu_vendor": vendor, **{name: os.environ.get(name) for name in ("CT2_USE_MKL", "CT2_FORCE_CPU_ISA")}}


def markdown(report: dict) -> str:
    lines = [f"# Beam-4 translation speed on CPU ({report['threads']} threads, median of {report['repeats']})", ""]
    if report["tiny"]:
        lines += ["**Tiny smoke-test run: the numbers below mean nothing.**", ""]
    backend = report["ctranslate2_cpu_backend"]
    lines += [f"CTranslate2 {report['ctranslate2']} on a {backend['cpu_vendor']} CPU, CT2_USE_MKL="
              f"{backend['CT2_USE_MKL']}, CT2_FORCE_CPU_ISA={backend['CT2_FORCE_CPU_ISA']}.", ""]
    lines += ["Speed-up = sentences/s of the path / sentences/s of `MarianMTModel.generate` (and of the same model's "
              "PyTorch `generate`). Produced by `benchmarks/speed/speed_inference.py`.", ""]
    workloads = [(name, title) for name, title in (
        ("random", "32 x 32 tokens, 64 new tokens"),
        ("dev", f"first 32 lines of `{report.get('dev_source')}`, trained models (variant = model folder)"))
        if name in report]
    for workload, description in workloads:
        lines += [f"## {workload}: {description}", "",
                  "| variant | path | sentences/s | vs Marian | vs own PyTorch | float32 outputs = PyTorch's |",
                  "| --- | --- | ---: | ---: | ---: | ---: |"]
        for variant, paths in report[workload].items():
            sentences = max(values.get("identical_to_pytorch", 0) for values in paths.values())
            for path, values in paths.items():
                vs_marian = "—" if values["vs_marian"] is None else f"{values['vs_marian']:.2f}x"
                identical = values.get("identical_to_pytorch")
                agreement = "" if identical is None else f"{identical}/{sentences}"
                lines.append(f"| {variant} | {path} | {values['sentences_per_s']:.2f} | {vs_marian} | "
                             f"{values['vs_own_pytorch']:.2f}x | {agreement} |")
        lines.append("")
    if "dev" in report:
        lines += ["A trained model that is not a baseline has no Marian reference (\"—\"): random Marian weights "
                  "would not stop where the trained model stops.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
