"""GLUE features: WordPieces (and, for BERT + POS, aligned POS ids), with an optional on-disk cache between runs."""

from __future__ import annotations

from pathlib import Path

import datasets


def featurize(task, dataset, tokenizer, use_pos: bool, pos_parser: str, max_length: int, num_proc: int = 1,
              cache_dir: str | Path | None = None):
    """Tokenize (and POS-tag with ``parse_and_align``) every split; ``label`` becomes ``labels``.

    Both paths call the tokenizer with the same arguments (``truncation=True`` = ``longest_first``,
    ``max_length``), so the baseline and the POS model see identical ``input_ids``. With ``cache_dir`` the
    featurized splits are written there as Arrow files named by a hash of the split's fingerprint and the map
    function (tokenizer, parser spec, features, ``max_length``), so the next run with other seeds or learning
    rates reads them instead of parsing again. The parser model's own version is not part of the key: clear
    the folder after upgrading a parser.
    """
    first, second = task.text_columns[0], (task.text_columns[1] if len(task.text_columns) > 1 else None)
    if use_pos:
        from hf_syntax.data.features import parse_and_align

        map_function = parse_and_align(
            tokenizer, src_parser=pos_parser, features=("pos_ids",), source_column=first, pair_column=second,
            max_length=max_length, truncation=True, allow_empty=True,  # handle_empty_texts applied the policy
        )
    else:
        def map_function(batch):
            return tokenizer(batch[first], batch[second] if second else None, truncation=True, max_length=max_length)

    text_columns = list(task.text_columns)
    featurized = dataset.map(
        map_function, batched=True, num_proc=num_proc if num_proc > 1 else None, remove_columns=text_columns,
        desc=f"{'parse + align' if use_pos else 'tokenize'} {task.name}",
        cache_file_names=featurized_cache_files(dataset, map_function, cache_dir) if cache_dir else None,
    )
    return featurized.rename_column("label", "labels")


def featurized_cache_files(dataset: datasets.DatasetDict, map_function, cache_dir: str | Path) -> dict[str, str]:
    """One Arrow file per split, named by a hash of the split's fingerprint and the map function.

    An in-memory dataset (read from TSV) has no cache of its own in ``datasets``. Its fingerprint hashes the content
    it was built from and the transforms since (``select`` for ``max_train_samples``...), and ``parse_and_align``
    hashes to the same value in every process, so a run that reads the same files the same way meets the same names.
    """
    from datasets.fingerprint import Hasher

    folder = Path(cache_dir)
    folder.mkdir(parents=True, exist_ok=True)
    return {
        split: str(folder / f"{split}-{Hasher.hash((part._fingerprint, map_function))}.arrow")
        for split, part in dataset.items()
    }


def count_truncated(featurized: datasets.DatasetDict, max_length: int) -> dict[str, int]:
    return {split: sum(len(ids) >= max_length for ids in part["input_ids"]) for split, part in featurized.items()}
