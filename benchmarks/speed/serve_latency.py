"""Inference Endpoint handler throughput, with and without parsing on the fly, as ratios within one run.

Exports one model of each kind below at the small CPU size (d=256, 3+3 layers) with a BPE vocabulary trained on the
embedded small_parallel_enja sample, then times ``EndpointHandler`` (the exported ``handler.py``, loaded from the
folder) on real held-out Japanese sentences, interleaved:

  * ``baseline``: the plain Transformer, no parser at inference;
  * ``dep_rel``: Transformer_dep+rel, whose handler parses every request with GiNZA (``spacy:ja_ginza``);
  * ``dbsa_dep_rel``: DBSA + Transformer_dep+rel (parse heads in layer 2 of 3), parsing with GiNZA like dep_rel;
  * ``dbsa_dep_rel_self``: the same model parsing for itself (two parser layers under the encoder; no parser);
  * ``dbsa``: DBSA in encoder and decoder (parse heads in layer 2 of 3); its trees are predicted, so no parser;
  * ``rel``: Transformer_rel, Shaw's relative positions alone (no parser);
  * ``syntax_infused``: POS, case and subword-tag embeddings, parsing every request with GiNZA for the POS tags;
  * ``graph``: the Graph-Transformer default (half-dim, gate, parts averaged; trained on German in its study), no
    parser;
  * ``parser``: GiNZA alone on the same sentences (the parsing share of ``dep_rel``);

each for one short sentence and for a batch of 32, in sentences/s, with ratios against the baseline handler measured
alongside. The weights are untrained, so every translation is forced to exactly ``--new-tokens`` tokens (min = max in
the exported generation config): both models do the same decoding work; what differs is the parser and the
dependency-aware attention.

Usage: python benchmarks/speed/serve_latency.py [--repeats 5] [--threads 2]
       python benchmarks/speed/serve_latency.py --tiny --out /tmp/serve_latency   # seconds: checks that it runs
Results: benchmarks/results/serve_latency.{json,md}
"""

import argparse
import importlib.util
import json
import platform
import tempfile
import warnings
from pathlib import Path

import torch
from timing import SMALL_CPU_SIZE, interleaved, parse_heads_at

from hf_syntax import config_for
from hf_syntax.cli.common import positive_int
from hf_syntax.data.corpus import read_parallel
from hf_syntax.data.tokenizer import train_tokenizer
from hf_syntax.hub.export import export
from hf_syntax.parsers import get_parser
from hf_syntax.recipes.translation.data import resolve_data_path

RESULTS = Path(__file__).resolve().parents[1] / "results"
PARSER = "spacy:ja_ginza"
MODELS = {"baseline": ("transformer_abs", {}), "dep_rel": ("transformer_dep_rel", {}),
          "dbsa_dep_rel": ("dbsa_dep_rel", {}), "dbsa_dep_rel_self": ("dbsa_dep_rel_self", {}),
          "dbsa": ("dbsa_enc_dec", {}), "rel": ("transformer_rel", {}),
          "syntax_infused": ("syntax_infused", {"share_encoder_decoder_embeddings": False}),
          "graph": ("graph_transformer_half_dim_gate", {"graph_new_groups": "mean"})}
"""Row name -> (architecture, its overrides at the small CPU size; parse heads go in layer 2 of 3, 1 when tiny)."""
TINY_SIZE = dict(d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2, decoder_attention_heads=2,
                 encoder_ffn_dim=64, decoder_ffn_dim=64)


def sample_sentences(pairs: int) -> tuple[list[str], list[str], list[str]]:
    """(training Japanese, training English, held-out Japanese) from the sample shipped in the package."""
    train, _ = read_parallel(resolve_data_path("sample_data:small_parallel_enja/train.ja.gz"),
                             resolve_data_path("sample_data:small_parallel_enja/train.en.gz"), max_pairs=pairs)
    heldout, _ = read_parallel(resolve_data_path("sample_data:small_parallel_enja/heldout.ja"),
                               resolve_data_path("sample_data:small_parallel_enja/heldout.en"))
    return train["source"], train["target"], heldout["source"]


def workload(description: str, out: Path):
    """The options of a handler benchmark (``--tiny``: tiny models, few sentences, seconds), with the thread count
    set, and its workload: (options, a tokenizer trained on the sample, the held-out Japanese sentences)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--repeats", type=positive_int, default=5)
    parser.add_argument("--threads", type=positive_int, default=2)
    parser.add_argument("--batch-size", dest="batch_size", type=positive_int, default=32)
    parser.add_argument("--new-tokens", dest="new_tokens", type=positive_int, default=24)
    parser.add_argument("--tiny", action="store_true", help="tiny models, few sentences: only checks that it runs")
    parser.add_argument("--out", type=Path, default=out, help="results path without suffix")
    options = parser.parse_args()
    if options.tiny:
        options.repeats, options.batch_size, options.new_tokens = 1, 4, 4
    torch.set_num_threads(options.threads)
    japanese, english, heldout = sample_sentences(500 if options.tiny else 10000)
    tokenizer = train_tokenizer(japanese + english, vocab_size=600 if options.tiny else 4000, model_max_length=128)
    return options, tokenizer, heldout


def write_results(out: Path, result: dict, heading: str, table: list[str]) -> None:
    """``<out>.json`` and ``<out>.md`` (the heading, then the table); the table also goes to stdout."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    out.with_suffix(".md").write_text(heading + "\n\n" + "\n".join(table) + "\n")
    print("\n".join(table))


def untrained_model(architecture: str, overrides: dict, tokenizer, tiny: bool, **settings):
    """A model of `architecture` at the small CPU size (tiny: a few dimensions; parse heads in layer 1), seeded."""
    from transformers import AutoModelForSeq2SeqLM

    size = {**SMALL_CPU_SIZE, **(TINY_SIZE if tiny else {}), "vocab_size": len(tokenizer),
            "max_position_embeddings": 128}
    overrides = {**parse_heads_at(architecture, 1 if tiny else 2), **overrides}
    torch.manual_seed(0)
    config = config_for(architecture, **size, **overrides, pad_token_id=tokenizer.pad_token_id,
                        eos_token_id=tokenizer.eos_token_id, bos_token_id=tokenizer.bos_token_id,
                        decoder_start_token_id=tokenizer.bos_token_id, **settings)
    model = AutoModelForSeq2SeqLM.from_config(config).eval()
    model.read_source_tokenizer(tokenizer)
    return model


def export_model(name: str, tokenizer, folder: Path, new_tokens: int, tiny: bool) -> Path:
    model = untrained_model(*MODELS[name], tokenizer, tiny, source_parser=PARSER, source_pretokenized=True)
    model.generation_config.update(num_beams=4, min_new_tokens=new_tokens, max_new_tokens=new_tokens)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # untrained weights: the card's warning is expected here
        return export(model, tokenizer, folder / name, {"model_id": f"benchmark/{name}"})


def load_handler(folder: Path):
    """The folder's own handler.py, imported as an endpoint imports it."""
    spec = importlib.util.spec_from_file_location(f"handler_{folder.name}", folder / "handler.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.EndpointHandler(str(folder))


def main() -> None:
    options, tokenizer, heldout = workload(__doc__.split("\n\n")[0], RESULTS / "serve_latency")
    short = min(heldout[:50], key=lambda line: len(line.split()))
    batch = heldout[: options.batch_size]
    with tempfile.TemporaryDirectory() as folder:
        handlers = {name: load_handler(export_model(name, tokenizer, Path(folder), options.new_tokens, options.tiny))
                    for name in MODELS}
        ginza = get_parser(PARSER)
        cases = {}
        for name, handler in handlers.items():
            cases[f"{name} 1"] = lambda handler=handler: handler({"inputs": short})
            cases[f"{name} {len(batch)}"] = lambda handler=handler: handler({"inputs": batch})
        cases["parser 1"] = lambda: ginza.parse(short.split())
        cases[f"parser {len(batch)}"] = lambda: ginza.parse_batch([line.split() for line in batch])
        answer = handlers["dep_rel"]({"inputs": batch[:2]})
        assert isinstance(answer, list) and len(answer) == 2, answer
        timings = interleaved(cases, options.repeats)

    rows = []
    for count in (1, len(batch)):
        reference = count / timings["wall"][f"baseline {count}"]
        for name in (*MODELS, "parser"):
            rate = count / timings["wall"][f"{name} {count}"]
            rows.append({"what": name, "sentences": count, "sentences_per_s": rate,
                         "ratio_to_baseline": rate / reference,
                         "cpu_s": timings["cpu"][f"{name} {count}"], "wall_s": timings["wall"][f"{name} {count}"]})
    result = {"settings": {**vars(options), "out": str(options.out), "short_sentence": short,
                           "machine": platform.platform(), "torch": torch.__version__, "parser": PARSER},
              "rows": rows}
    table = ["| handler | sentences per request | sentences/s | vs baseline handler | wall s |",
             "| --- | ---: | ---: | ---: | ---: |"]
    table += [f"| {row['what']} | {row['sentences']} | {row['sentences_per_s']:.1f} | {row['ratio_to_baseline']:.2f} "
              f"| {row['wall_s']:.3f} |" for row in rows]
    write_results(options.out, result, f"Handler throughput (`python benchmarks/speed/serve_latency.py`, {options.threads} "
                  f"threads, beam 4, {options.new_tokens} new tokens, median of {options.repeats} interleaved repeats). "
                  f"`parser` is GiNZA alone on the same sentences.", table)


if __name__ == "__main__":
    main()
