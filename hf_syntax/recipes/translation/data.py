"""The translation recipe's data: parallel files or a saved DatasetDict -> ``source``/``target`` splits -> token ids.

Empty pairs and over-long lines follow the data section's policies (``skip_empty``, ``long_lines``): an error that
names the place, or dropped/truncated and counted, never silently.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import datasets
from transformers import PreTrainedTokenizerBase

from hf_syntax.data.corpus import SOURCE_COLUMN, TARGET_COLUMN, CorpusError, load_parallel_corpus
from hf_syntax.data.shards import load_dataset_folder
from hf_syntax.text_checks import is_blank
from hf_syntax.recipes.config import ConfigError
from hf_syntax.recipes.translation.schema import DataSection

SAMPLE_DATA_PREFIX = "sample_data:"


def resolve_data_path(path: str) -> Path:
    """``sample_data:<relative path>`` -> the file inside the installed package; other paths are used as given."""
    if path.startswith(SAMPLE_DATA_PREFIX):
        return Path(str(resources.files("hf_syntax") / "sample_data" / path[len(SAMPLE_DATA_PREFIX) :]))
    return Path(path).expanduser()


def _check_dataset_texts(dataset: datasets.Dataset, split: str, skip_empty: bool) -> tuple[datasets.Dataset, int]:
    """Same empty-text policy as for files: error naming the row, or drop and count."""
    empty_rows = [
        index
        for index, (source, target) in enumerate(zip(dataset[SOURCE_COLUMN], dataset[TARGET_COLUMN]))
        if not isinstance(source, str) or not isinstance(target, str) or is_blank(source) or is_blank(target)
    ]
    if empty_rows and not skip_empty:
        raise CorpusError(
            f"split {split!r} has {len(empty_rows)} empty or missing texts (first at row {empty_rows[0]}); "
            "clean the dataset or set data.skip_empty: true to drop and count them"
        )
    if empty_rows:
        dataset = dataset.select(sorted(set(range(len(dataset))) - set(empty_rows)))
    return dataset, len(empty_rows)


def load_translation_data(
    data: DataSection, keep_columns: tuple[str, ...] = ()
) -> tuple[datasets.DatasetDict, dict[str, int], dict[str, int]]:
    """Splits ``train``/``validation`` (and ``test`` if configured) with ``source``/``target`` columns, the empty
    pairs skipped per split, and the non-empty pairs each split has (more than it keeps when
    ``max_train_pairs``/``max_eval_pairs`` cut it: the summary and the card report both counts).

    ``keep_columns``: further columns of a ``data.dataset`` to keep where present (preprocessed feature columns).
    """
    limits = {"train": data.max_train_pairs, "validation": data.max_eval_pairs, "test": data.max_eval_pairs}
    if data.dataset is None:
        files = {"train": data.train, "validation": data.validation, "test": data.test}
        splits = {
            name: (resolve_data_path(pair.source), resolve_data_path(pair.target))
            for name, pair in files.items()
            if pair is not None
        }
        corpus, stats = load_parallel_corpus(splits, skip_empty=data.skip_empty, max_pairs=limits)
        return (corpus, {name: split_stats.empty_pairs_skipped for name, split_stats in stats.items()},
                {name: split_stats.pairs_available for name, split_stats in stats.items()})

    folder = resolve_data_path(data.dataset)
    if not folder.is_dir():
        raise ConfigError(f"data.dataset = {data.dataset!r}: no datasets.save_to_disk folder at {folder}")
    loaded = load_dataset_folder(folder)  # a sharded preprocess output is read as one dataset
    if not isinstance(loaded, datasets.DatasetDict):
        raise ConfigError(f"data.dataset = {data.dataset!r} holds a single Dataset; save a DatasetDict with splits")
    wanted = {"train": data.train_split, "validation": data.validation_split, "test": data.test_split}
    corpus, skipped, available = {}, {}, {}
    for name, split in wanted.items():
        if split is None:
            continue
        if split not in loaded:
            raise ConfigError(f"data.{name}_split = {split!r} is not in {folder}; it has {list(loaded)}")
        dataset = loaded[split]
        if "." in data.source_column or "." in data.target_column:
            dataset = dataset.flatten()
        for key, column in (("source_column", data.source_column), ("target_column", data.target_column)):
            if column not in dataset.column_names:
                raise ConfigError(f"data.{key} = {column!r} is not a column of split {split!r}: {dataset.column_names}")
        kept = [column for column in keep_columns if column in dataset.column_names]
        dataset = dataset.select_columns([data.source_column, data.target_column, *kept])
        dataset = dataset.rename_columns({data.source_column: SOURCE_COLUMN, data.target_column: TARGET_COLUMN})
        dataset, skipped[name] = _check_dataset_texts(dataset, split, data.skip_empty)
        available[name] = len(dataset)
        if limits[name] is not None:
            dataset = dataset.select(range(min(limits[name], len(dataset))))
        corpus[name] = dataset
    return datasets.DatasetDict(corpus), skipped, available


def encode_with_length_policy(
    tokenizer: PreTrainedTokenizerBase, texts: list[str], max_length: int, policy: str, side: str
) -> tuple[list[list[int]], list[bool]]:
    """Encode (ending in </s>); over-long sequences are cut to ``max_length`` keeping </s>, or rejected."""
    encoded = tokenizer(texts, add_special_tokens=True, verbose=False)["input_ids"]  # we count long lines ourselves
    truncated = [len(ids) > max_length for ids in encoded]
    if policy == "error" and any(truncated):
        first = truncated.index(True)
        raise CorpusError(
            f"a {side} sentence has {len(encoded[first])} tokens, more than data.max_{side}_length={max_length}: "
            f"{texts[first][:80]!r}; raise the limit (within the model's max_position_embeddings) or set "
            "data.long_lines: truncate"
        )
    return [ids[: max_length - 1] + [tokenizer.eos_token_id] if cut else ids for ids, cut in zip(encoded, truncated)], truncated


def tokenize_translation_data(
    corpus: datasets.DatasetDict,
    source_tokenizer: PreTrainedTokenizerBase,
    target_tokenizer: PreTrainedTokenizerBase,
    data: DataSection,
    *,
    encode_source: bool = True,
) -> tuple[datasets.DatasetDict, dict[str, dict[str, int]]]:
    """Add ``input_ids``/``attention_mask``/``labels``; returns how many sources/targets were truncated per split.

    ``encode_source=False`` makes ``labels`` only: a preprocessed dataset brings source ids its features align to.
    """

    def encode(batch: dict[str, list[str]]) -> dict[str, list]:
        labels, target_cut = encode_with_length_policy(
            target_tokenizer, batch[TARGET_COLUMN], data.max_target_length, data.long_lines, "target"
        )
        columns = {"labels": labels, "target_truncated": target_cut}
        if encode_source:
            input_ids, source_cut = encode_with_length_policy(
                source_tokenizer, batch[SOURCE_COLUMN], data.max_source_length, data.long_lines, "source"
            )
            columns.update(input_ids=input_ids, attention_mask=[[1] * len(ids) for ids in input_ids],
                           source_truncated=source_cut)
        return columns

    encoded = corpus.map(encode, batched=True, num_proc=data.num_proc, desc="Tokenizing")
    sides = ("source", "target") if encode_source else ("target",)
    truncated = {
        split: {"source": 0, **{side: int(sum(dataset[f"{side}_truncated"])) for side in sides}}
        for split, dataset in encoded.items()
    }
    return encoded.remove_columns([f"{side}_truncated" for side in sides]), truncated
