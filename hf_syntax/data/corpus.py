"""Parallel text files (plain or gzip) -> ``datasets.DatasetDict`` with ``source``/``target`` columns.

Line *i* of the source file is the translation of line *i* of the target file. Bad corpora fail loudly here,
before any tokenizer or model sees them: a count mismatch names both files and both counts, an empty line names
its file and line number (or, with ``skip_empty=True``, the pair is dropped and counted).
"""

from __future__ import annotations

import gzip
import os
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import datasets

from hf_syntax.text_checks import BLANK_TEXT, is_blank

SOURCE_COLUMN = "source"
TARGET_COLUMN = "target"
GZIP_MAGIC = b"\x1f\x8b"  # the first two bytes of every gzip file


class CorpusError(ValueError):
    """A parallel corpus that cannot be used as it is (the message says which file and how to fix it)."""


@dataclass
class CorpusStats:
    """What reading a corpus dropped, so a training summary can report it instead of hiding it."""

    pairs_read: int = 0
    pairs_available: int = 0  # non-empty pairs in the files: what max_pairs chose pairs_read from
    empty_pairs_skipped: int = 0
    skipped_line_numbers: list[int] = field(default_factory=list)


def read_lines(path: str | Path) -> list[str]:
    """All lines of a UTF-8 text file (``.gz`` is decompressed), without their line breaks or a byte-order mark
    before the first (``utf-8-sig``: it would otherwise be part of the first sentence's first word)."""
    if not isinstance(path, (str, os.PathLike)):  # None was "expected str, bytes or os.PathLike object"
        raise TypeError(f"give the corpus file's path (a str or pathlib.Path); got {path!r}.")
    path = Path(path)
    if path.is_dir():
        raise CorpusError(f"{path} is a folder; give the corpus file in it (one sentence per line)")
    if not path.is_file():
        raise CorpusError(f"corpus file not found: {path}")
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8-sig", newline="") as handle:
            text = handle.read()
    except UnicodeDecodeError as error:
        with open(path, "rb") as handle:
            if handle.read(2) == GZIP_MAGIC:
                raise CorpusError(f"{path} is gzip-compressed but its name does not end in .gz; rename it to "
                                  f"{path.name}.gz (or gunzip it)") from None
        raise CorpusError(f"{path} is not UTF-8 text ({error}); convert it with iconv first") from error
    except (OSError, EOFError, zlib.error) as error:  # zlib.error: a damaged .gz
        raise CorpusError(f"cannot read {path}: {error}") from error
    return split_lines(text)


def split_lines(text: str) -> list[str]:
    r"""The lines of a text file's contents, broken at ``\n`` only (the ``\r`` of a ``\r\n`` dropped).

    ``str.splitlines`` also breaks at ``\v``, ``\f``, ``\x1c``-``\x1e``, ``\x85``, U+2028 and U+2029; output
    written one line per input line would then no longer line up with the input.
    """
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the final line break ends the last line, it does not start a new one
    return [line.rstrip("\r") for line in lines]


def check_no_carriage_return(path: str | Path, lines: list[str]) -> None:
    r"""Refuse a ``\r`` inside a line: a file whose lines end in ``\r`` alone (old Mac line ends) reads as one line,
    so two such files made one pair of every sentence run together."""
    line_number = next((number for number, line in enumerate(lines, start=1) if "\r" in line), None)
    if line_number is not None:
        raise CorpusError(f"line {line_number} of {path} holds a carriage return (\\r) inside it: the file's lines "
                          f"probably end in \\r alone, which reads as one line; convert them with "
                          f"tr '\\r' '\\n' < FILE > NEW_FILE (or remove a stray \\r)")


def read_parallel(
    source_path: str | Path, target_path: str | Path, *, skip_empty: bool = False, max_pairs: int | None = None
) -> tuple[dict[str, list[str]], CorpusStats]:
    """Read two line-aligned files into ``{"source": [...], "target": [...]}`` plus what was dropped.

    ``skip_empty=False`` (default) rejects an empty or whitespace-only line on either side; ``True`` drops such
    pairs and counts them in the returned stats. ``max_pairs`` keeps the first pairs (after skipping).
    """
    sources, targets = read_lines(source_path), read_lines(target_path)
    for path, lines in ((source_path, sources), (target_path, targets)):
        check_no_carriage_return(path, lines)
    if len(sources) != len(targets):
        raise CorpusError(
            f"parallel files differ in line count: {source_path} has {len(sources)} lines, "
            f"{target_path} has {len(targets)} lines; line i of one must translate line i of the other"
        )
    if not sources:
        raise CorpusError(f"parallel files {source_path} and {target_path} are empty")
    stats = CorpusStats()
    kept_sources: list[str] = []
    kept_targets: list[str] = []
    for line_number, (source, target) in enumerate(zip(sources, targets), start=1):
        source, target = source.strip(), target.strip()
        if is_blank(source) or is_blank(target):
            if not skip_empty:
                empty_file = source_path if is_blank(source) else target_path
                raise CorpusError(
                    f"empty line {line_number} in {empty_file} ({BLANK_TEXT}); remove the pair from both files or "
                    f"set skip_empty (--skip-empty / data.skip_empty: true) to drop and count such pairs"
                )
            stats.empty_pairs_skipped += 1
            stats.skipped_line_numbers.append(line_number)
            continue
        kept_sources.append(source)
        kept_targets.append(target)
        if max_pairs is not None and len(kept_sources) >= max_pairs:
            break
    if not kept_sources:
        raise CorpusError(f"no non-empty pairs left in {source_path} / {target_path}")
    stats.pairs_read = len(kept_sources)
    stats.pairs_available = sum(1 for source, target in zip(sources, targets)
                                if not (is_blank(source) or is_blank(target)))
    return {SOURCE_COLUMN: kept_sources, TARGET_COLUMN: kept_targets}, stats


def load_parallel_corpus(
    splits: dict[str, tuple[str | Path, str | Path]], *, skip_empty: bool = False, max_pairs: dict[str, int] | None = None
) -> tuple[datasets.DatasetDict, dict[str, CorpusStats]]:
    """Read ``{"train": (src_file, tgt_file), "validation": (...), ...}`` into a DatasetDict (one per split)."""
    max_pairs = max_pairs or {}
    dataset_splits = {}
    stats = {}
    for split, (source_path, target_path) in splits.items():
        columns, stats[split] = read_parallel(
            source_path, target_path, skip_empty=skip_empty, max_pairs=max_pairs.get(split)
        )
        dataset_splits[split] = datasets.Dataset.from_dict(columns)
    return datasets.DatasetDict(dataset_splits), stats
