"""Where a study's BLEU difference comes from: each run against the baseline of the same seed, by source length.

    python benchmarks/analyses/bleu_by_length.py benchmarks/studies/multi30k_de_en_graph_converged.yaml \
        --split dev ../shared/data/multi30k/val.de.gz ../shared/data/multi30k/val.en.gz \
        --split test_2016_flickr ../shared/data/multi30k/test_2016_flickr.de.gz ../shared/data/multi30k/test_2016_flickr.en.gz

A corpus-level difference can hide where it is made: a model may lose on mid-length sentences and tie on the
rest. This reads the translations ``hf-syntax study`` committed (``<results>/translations/<tag>.<split>.txt``, so it
works after ``runs/`` is gone), splits each test set into source-length quartiles (whitespace words; the bounds
are the split's own quartiles, so every bucket holds about a quarter of the sentences) and scores every bucket with
sacreBLEU and its paired bootstrap against the baseline. Writes ``<results_name>_by_length.{json,md}`` next to the
study's results.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import statistics
import sys
from pathlib import Path

from hf_syntax.data.corpus import read_lines
from hf_syntax.study.significance import paired_bootstrap
from hf_syntax.study.study_file import Study, StudyError


def length_buckets(sources: list[str], count: int = 4) -> list[tuple[int, int]]:
    """Inclusive (shortest, longest) source-word bounds of ``count`` buckets cut at the length quantiles; bounds that
    coincide (many sentences of one length) merge, so a bucket is never empty."""
    lengths = sorted(len(line.split()) for line in sources)
    cuts = sorted({lengths[len(lengths) * k // count] for k in range(1, count)} - {lengths[0]})
    lows = [lengths[0], *cuts]
    highs = [cut - 1 for cut in cuts] + [lengths[-1]]
    return list(zip(lows, highs))


def corpus_bleu(hypotheses: list[str], references: list[str]) -> dict:
    """BLEU with the parts that say why it moved: n-gram precisions (word choice vs order) and the length ratio."""
    from sacrebleu.metrics import BLEU

    score = BLEU().corpus_score(hypotheses, [references])
    return {"bleu": round(score.score, 2), "precisions": [round(value, 2) for value in score.precisions],
            "length_ratio": round(score.sys_len / score.ref_len, 3)}


def compare_by_length(sources: list[str], references: list[str], baseline: list[str], system: list[str]) -> list[dict]:
    """One entry per length bucket: its sentences, both systems' scores, the BLEU difference and the bootstrap p."""
    lengths = [len(line.split()) for line in sources]
    entries = []
    for low, high in length_buckets(sources):
        rows = [i for i, length in enumerate(lengths) if low <= length <= high]
        bucket_baseline, bucket_system, bucket_references = ([lines[i] for i in rows]
                                                             for lines in (baseline, system, references))
        base, other = corpus_bleu(bucket_baseline, bucket_references), corpus_bleu(bucket_system, bucket_references)
        entries.append({"words": f"{low}–{high}", "sentences": len(rows), "baseline": base, "system": other,
                        "delta": round(other["bleu"] - base["bleu"], 2),
                        "p": paired_bootstrap(bucket_baseline, bucket_system, bucket_references)["bleu"]})
    return entries


def translations_of(study: Study, run: str, seed: int, split: str, expected: int) -> list[str] | None:
    """A run's committed translations of a split (None if it has none); a file of the wrong length is an error."""
    path = study.results / "translations" / f"{study.tag(run, seed)}.{split}.txt"
    if not path.exists():
        return None
    lines = read_lines(path)
    if len(lines) != expected:
        raise StudyError(f"{path} has {len(lines)} lines but the split's source has {expected}: "
                         f"pass the source and reference the run translated")
    return lines


def baseline_seeds(study: Study, split: str) -> list[int]:
    """The seeds whose baseline translated ``split`` (read from the committed file names)."""
    folder = study.results / "translations"
    pattern = re.compile(re.escape(study.tag(study.baseline, 0)[:-1]) + r"(\d+)\." + re.escape(split) + r"\.txt")
    names = [path.name for path in folder.iterdir()] if folder.is_dir() else []
    return sorted(int(match[1]) for name in names if (match := pattern.fullmatch(name)))


def analyse(study: Study, splits: list[tuple[str, Path, Path]]) -> list[dict]:
    records = []
    for split, source_path, reference_path in splits:
        sources, references = read_lines(source_path), read_lines(reference_path)
        if len(sources) != len(references):
            raise StudyError(f"--split {split}: {source_path} has {len(sources)} lines, {reference_path} "
                             f"{len(references)}; give the two sides of one test set")
        if not sources:
            raise StudyError(f"--split {split}: {source_path} is empty")
        if max(len(line.split()) for line in sources) <= 1:
            raise StudyError(f"--split {split}: no line of {source_path} has a space, so it cannot be cut by length "
                             f"in words (unsegmented text such as Japanese?); pass a word-segmented copy of it")
        seeds = baseline_seeds(study, split)
        for run in study.runs:
            if run == study.baseline:
                continue
            for seed in seeds:
                baseline = translations_of(study, study.baseline, seed, split, len(sources))
                system = translations_of(study, run, seed, split, len(sources))
                if baseline is None or system is None:
                    continue
                records.append({"name": run, "seed": seed, "split": split,
                                "buckets": compare_by_length(sources, references, baseline, system)})
    return records


def markdown(study: Study, records: list[dict]) -> str:
    def label(record: dict) -> str:
        return study.runs[record["name"]].get("label", record["name"])

    lines = [f"# BLEU by source length: {study.name}", "",
             "Each run minus the baseline of the same seed, per source-length quartile (whitespace words), with the",
             "paired-bootstrap p of the bucket (sacreBLEU, 1000 resamples). Written by `benchmarks/analyses/bleu_by_length.py`.", ""]
    for split in dict.fromkeys(record["split"] for record in records):
        of_split = [record for record in records if record["split"] == split]
        buckets = of_split[0]["buckets"]
        lines += [f"## {split}", "",
                  "| run | seed | " + " | ".join(f"{b['words']} words ({b['sentences']})" for b in buckets) + " |",
                  "| --- | ---: |" + " ---: |" * len(buckets)]
        for record in of_split:
            cells = [f"{b['delta']:+.2f} (p {b['p']:.3f}); {b['baseline']['bleu']:.1f} → {b['system']['bleu']:.1f}"
                     for b in record["buckets"]]
            lines.append(f"| {label(record)} | {record['seed']} | " + " | ".join(cells) + " |")
        for run in dict.fromkeys(record["name"] for record in of_split):
            seeded = [record for record in of_split if record["name"] == run]
            if len(seeded) > 1:
                means = [statistics.mean(r["buckets"][i]["delta"] for r in seeded) for i in range(len(buckets))]
                lines.append(f"| {label(seeded[0])} | mean of {len(seeded)} | "
                             + " | ".join(f"**{mean:+.2f}**" for mean in means) + " |")
        lines += ["", "What moved, per bucket: the difference in 1-gram and 4-gram precision (word choice vs. word order",
                  "and phrasing) and the length ratio to the reference (baseline → run).", "",
                  "| run | seed | " + " | ".join(f"{b['words']} words" for b in buckets) + " |",
                  "| --- | ---: |" + " ---: |" * len(buckets)]
        for record in of_split:
            cells = [f"1-gram {b['system']['precisions'][0] - b['baseline']['precisions'][0]:+.1f}, "
                     f"4-gram {b['system']['precisions'][3] - b['baseline']['precisions'][3]:+.1f}; "
                     f"length {b['baseline']['length_ratio']:.2f} → {b['system']['length_ratio']:.2f}"
                     for b in record["buckets"]]
            lines.append(f"| {label(record)} | {record['seed']} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("study", type=Path, help="study file (benchmarks/studies/*.yaml)")
    parser.add_argument("--split", nargs=3, action="append", required=True, metavar=("NAME", "SRC", "REF"),
                        help="a translated split: its name in the translation files (dev, or an extra test's name), "
                             "its source and its reference (repeatable)")
    arguments = parser.parse_args(argv)
    # sacreBLEU warns once per score on pre-tokenized references (small_parallel_enja); the studies score them as they
    # are, so the buckets do the same, without a warning per bucket.
    logging.getLogger("sacrebleu").setLevel(logging.ERROR)
    try:
        study = Study.load(arguments.study)
        splits = [(name, Path(source), Path(reference)) for name, source, reference in arguments.split]
        for _, *paths in splits:
            missing = [str(path) for path in paths if not path.exists()]
            if missing:
                raise StudyError(f"no such file: {', '.join(missing)}")
        records = analyse(study, splits)
    except StudyError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if not records:
        print(f"error: no run of {study.name} has translations of {[name for name, *_ in splits]} beside the "
              f"baseline's in {study.results / 'translations'}", file=sys.stderr)
        return 2
    stem = study.results / f"{study.results_name}_by_length"
    stem.with_suffix(".json").write_text(json.dumps(records, indent=2, ensure_ascii=False) + "\n")
    stem.with_suffix(".md").write_text(markdown(study, records), encoding="utf-8")
    print(f"wrote {stem}.json and {stem}.md ({len(records)} run × seed × split)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
