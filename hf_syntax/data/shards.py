"""A corpus parsed in shards, one machine each, read back as one dataset.

Parsing is the cost of a syntax model's data (GiNZA parses ~70-115 sentences/s on two cores), so a corpus of
millions of pairs is split over machines: ``hf-syntax preprocess --num-shards N --shard-index I --out DIR`` parses the
I-th contiguous slice of every split into ``DIR/shard-0000I-of-0000N`` (a cluster job array runs I = 0 .. N-1, all
with the one tokenizer trained or given first). ``DIR`` is then a ``data.dataset`` like any preprocess output:
``load_dataset_folder`` concatenates the shards' splits in shard order (``datasets.concatenate_datasets``), which is
the corpus in its own order, row for row what one unsharded run makes.
"""

from __future__ import annotations

import re
from pathlib import Path

import datasets

from hf_syntax.data.corpus import CorpusError

SHARD_NAME = re.compile(r"shard-(\d{5})-of-(\d{5})")


def shard_folder_name(index: int, count: int) -> str:
    """The folder of shard ``index`` (from 0) of ``count`` inside a preprocess ``--out`` folder."""
    return f"shard-{index:05d}-of-{count:05d}"


def shard_of(corpus: datasets.DatasetDict, index: int, count: int) -> datasets.DatasetDict:
    """The ``index``-th of ``count`` contiguous slices of every split (their concatenation in order is the split)."""
    return datasets.DatasetDict({name: split.shard(count, index, contiguous=True) for name, split in corpus.items()})


def shard_folders(folder) -> list[Path]:
    """The shard folders of a sharded preprocess output, in shard order ([] for any other folder). Refuses a set of
    shards that is not complete and of one count (a job of the array that failed or is still running)."""
    found = {}
    for path in Path(folder).iterdir() if Path(folder).is_dir() else ():
        match = SHARD_NAME.fullmatch(path.name)
        if match and path.is_dir():
            found[path] = (int(match[1]), int(match[2]))
    if not found:
        return []
    counts = sorted({count for _, count in found.values()})
    if len(counts) > 1:
        raise CorpusError(f"{folder} holds shards of {counts} shards each; keep the folders of one --num-shards run")
    missing = sorted(set(range(counts[0])) - {index for index, _ in found.values()})
    incomplete = [path.name for path in found if not (path / "dataset_dict.json").is_file()]
    if missing or incomplete:
        raise CorpusError(
            f"{folder} is a preprocess output in {counts[0]} shards but shard(s) "
            f"{', '.join(map(str, missing)) or ', '.join(incomplete)} {'are missing' if missing else 'are unfinished'}: "
            f"run hf-syntax preprocess --num-shards {counts[0]} --shard-index I for each of them"
        )
    return sorted(found, key=lambda path: found[path][0])


def load_dataset_folder(folder) -> datasets.DatasetDict | datasets.Dataset:
    """``datasets.load_from_disk(folder)``, or for a sharded preprocess output its shards as one DatasetDict."""
    shards = shard_folders(folder)
    if not shards:
        return datasets.load_from_disk(str(folder))
    parts = [datasets.load_from_disk(str(shard)) for shard in shards]
    splits = list(parts[0])
    if any(list(part) != splits for part in parts):
        raise CorpusError(f"the shards in {folder} hold different splits ({[list(part) for part in parts]}); "
                          f"preprocess every shard with the same --validation-source/--validation-target")
    return datasets.DatasetDict({name: datasets.concatenate_datasets([part[name] for part in parts])
                                 for name in splits})


__all__ = ["load_dataset_folder", "shard_folder_name", "shard_folders", "shard_of"]
