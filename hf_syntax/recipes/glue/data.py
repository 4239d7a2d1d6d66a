"""GLUE data: a task's TSV folder (or a saved ``DatasetDict``) as splits, checked; empty texts by policy; the first N
examples of a split for short runs."""

from __future__ import annotations

import csv
import gzip
from pathlib import Path

import datasets

from hf_syntax.data.corpus import CorpusError
from hf_syntax.text_checks import is_blank
from hf_syntax.recipes.glue.schema import EMPTY_TEXT_POLICIES, GlueRunConfig
from hf_syntax.recipes.glue.tasks import GlueTask


def _open_tsv(path: Path):
    """A TSV file, or its ``.gz`` twin; ``utf-8-sig`` drops the byte-order mark MRPC's files start with."""
    if path.is_file():
        return open(path, encoding="utf-8-sig", newline="")
    gz = path.with_name(path.name + ".gz")
    if gz.is_file():
        return gzip.open(gz, "rt", encoding="utf-8-sig", newline="")
    raise FileNotFoundError(f"GLUE file {path} (or {gz.name}) not found.")


def read_glue_tsv(path: Path, columns: dict, task: GlueTask, labelled: bool) -> dict[str, list]:
    """Read one GLUE TSV into ``{column: values}``; malformed rows and unknown labels name the file and line.

    Quotes are data in GLUE files (``"the witness"``), so the reader does no quote processing.
    """
    with _open_tsv(Path(path)) as handle:
        rows = csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        has_header = any(isinstance(where, str) for where in columns.values())
        positions = dict(columns)
        first_line = 1
        if has_header:
            header = next(rows, None) or []
            first_line = 2
            missing = [name for name in columns.values() if name not in header]
            if missing:
                raise CorpusError(f"{path}: header {header} lacks the column(s) {missing} that GLUE {task.folder} has.")
            positions = {ours: header.index(theirs) for ours, theirs in columns.items()}
        width = max(positions.values()) + 1
        widest = len(header) if has_header else width
        data = {name: [] for name in columns}
        for line_number, row in enumerate(rows, start=first_line):
            if not row:
                continue
            if len(row) < width:
                raise CorpusError(
                    f"{path}:{line_number}: {len(row)} tab-separated fields, expected at least {width} "
                    f"(a stray tab or newline inside a sentence?)."
                )
            if len(row) > widest:
                raise CorpusError(
                    f"{path}:{line_number}: {len(row)} tab-separated fields, expected {widest}: a tab inside a "
                    f"sentence shifts every column after it. Replace it with a space."
                )
            for name, position in positions.items():
                value = row[position]
                if name == "label" and labelled:
                    value = _parse_label(value, task, f"{path}:{line_number}")
                elif name == "idx":
                    if not (value.isascii() and value.isdigit()):
                        raise CorpusError(f"{path}:{line_number}: index {value!r} is not a whole number.")
                    value = int(value)
                data[name].append(value)
    if "idx" not in data:
        data["idx"] = list(range(len(next(iter(data.values())))))
    return data


def _parse_label(value: str, task: GlueTask, where: str):
    if task.is_regression:
        try:
            return float(value)
        except ValueError:
            raise CorpusError(f"{where}: {task.name} score {value!r} is not a number.") from None
    spelling = task.label_values or task.label_names
    if value not in spelling:
        raise CorpusError(f"{where}: {task.name} label {value!r} is not one of {list(spelling)}.")
    return spelling.index(value)


def load_glue_tsv_folder(task: GlueTask, data_dir: str | Path) -> datasets.DatasetDict:
    """A GLUE task folder (``train.tsv``, ``dev.tsv``, ``test.tsv`` ...) as a ``DatasetDict``.

    CoLA may also be the public CoLA release (``v1.0/raw/``), which GLUE's CoLA was built from: train =
    ``in_domain_train``, validation = ``in_domain_dev`` followed by ``out_of_domain_dev``, no test split.
    """
    data_dir = Path(data_dir)
    if (data_dir / task.folder).is_dir():
        data_dir = data_dir / task.folder
    if not data_dir.is_dir():
        raise FileNotFoundError(f"GLUE data folder {data_dir} does not exist.")
    labelled_files = {"train": ["train.tsv"], **{split: [name] for split, name in task.eval_splits.items()}}
    test_files = dict(task.test_splits)
    cola_release = data_dir / "v1.0" / "raw"
    if task.name == "cola" and not (data_dir / "train.tsv").is_file() and cola_release.is_dir():
        labelled_files = {
            "train": ["v1.0/raw/in_domain_train.tsv"],
            "validation": ["v1.0/raw/in_domain_dev.tsv", "v1.0/raw/out_of_domain_dev.tsv"],
        }
        test_files = {}
    splits = {}
    for split, names in labelled_files.items():
        parts = [read_glue_tsv(data_dir / name, task.columns, task, labelled=True) for name in names]
        merged = {column: [value for part in parts for value in part[column]] for column in parts[0]}
        merged["idx"] = list(range(len(merged["idx"])))
        splits[split] = merged
    for split, name in test_files.items():
        if (data_dir / name).is_file() or (data_dir / (name + ".gz")).is_file():
            test = read_glue_tsv(data_dir / name, task.test_columns, task, labelled=False)
            test["label"] = [-1] * len(test["idx"])
            splits[split] = test
    features = datasets.Features(
        {
            **{column: datasets.Value("string") for column in task.text_columns},
            "label": datasets.Value("float32" if task.is_regression else "int64"),
            "idx": datasets.Value("int64"),
        }
    )
    return datasets.DatasetDict(
        {split: datasets.Dataset.from_dict(columns, features=features) for split, columns in splits.items()}
    )


def check_task_dataset(task: GlueTask, dataset: datasets.DatasetDict) -> None:
    """A user-supplied dataset must have the task's splits and columns (the Hub ``glue`` dataset's names)."""
    needed_splits = ["train", *task.eval_splits]
    missing_splits = [split for split in needed_splits if split not in dataset]
    if missing_splits:
        raise CorpusError(
            f"the {task.name} dataset lacks the split(s) {missing_splits} (it has {sorted(dataset)}); GLUE "
            f"{task.name} needs {needed_splits} and optionally {list(task.test_splits)}."
        )
    for split, part in dataset.items():
        missing = [column for column in (*task.text_columns, "label") if column not in part.column_names]
        if missing:
            raise CorpusError(
                f"split {split!r} of the {task.name} dataset lacks the column(s) {missing} (it has "
                f"{part.column_names}); name them as the Hugging Face 'glue' dataset does."
            )


def handle_empty_texts(task: GlueTask, dataset: datasets.DatasetDict, policy: str) -> dict[str, int]:
    """Apply the empty-text policy; returns how many examples per split had an empty (blank) text.

    ``error`` (default): an empty sentence in any split is an error naming the split, row and column.
    ``skip``: labelled examples with an empty text are dropped; test examples are kept (every test row needs a
    prediction). ``keep``: empty segments are fed as such (``[CLS] [SEP]`` or ``[CLS] a [SEP] [SEP]``).
    """
    if policy not in EMPTY_TEXT_POLICIES:
        raise CorpusError(f"empty_text policy must be one of {EMPTY_TEXT_POLICIES}; got {policy!r}.")
    counts = {}
    for split in list(dataset):
        part = dataset[split]
        empty_rows = [
            (row, column)
            for column in task.text_columns
            for row, text in enumerate(part[column])
            if text is None or is_blank(text)
        ]
        counts[split] = len({row for row, _ in empty_rows})
        if not empty_rows:
            continue
        if policy == "error":
            row, column = empty_rows[0]
            raise CorpusError(
                f"{task.name} {split}: {len(empty_rows)} empty text(s), first in row {row} (idx "
                f"{part[row]['idx'] if 'idx' in part.column_names else row}), column {column!r}. Fix the data, or "
                f"choose empty_text='skip' (drop labelled examples with an empty text) or 'keep' (encode it as an "
                f"empty segment)."
            )
        if policy == "skip" and split not in task.test_splits:
            bad = {row for row, _ in empty_rows}
            dataset[split] = part.select([row for row in range(len(part)) if row not in bad])
        else:  # kept rows: a missing text (None) becomes an empty segment
            dataset[split] = part.map(lambda example: {column: example[column] or "" for column in task.text_columns})
    return counts


def load_task_dataset(task: GlueTask, data_dir=None, dataset_path=None) -> datasets.DatasetDict:
    """The task's splits from a GLUE-layout TSV folder or from a ``DatasetDict`` saved with ``save_to_disk``."""
    if (data_dir is None) == (dataset_path is None):
        raise CorpusError("give exactly one data source: data_dir (GLUE-layout TSV folder) or dataset_path.")
    if dataset_path is not None:
        return datasets.load_from_disk(dataset_path)
    return load_glue_tsv_folder(task, data_dir)


def with_example_indices(raw: datasets.DatasetDict) -> datasets.DatasetDict:
    """GLUE prediction files are keyed by ``idx``; a user dataset without it gets row numbers."""
    return datasets.DatasetDict(
        {
            split: part if "idx" in part.column_names else part.add_column("idx", list(range(len(part))))
            for split, part in raw.items()
        }
    )


def subsample(raw: datasets.DatasetDict, task: GlueTask, config: GlueRunConfig) -> datasets.DatasetDict:
    """First N examples (not a random sample: runs with and without POS must see the same ones)."""
    limits = {"train": config.max_train_samples, **{split: config.max_eval_samples for split in task.eval_splits}}
    return datasets.DatasetDict(
        {
            split: part.select(range(min(len(part), limits[split]))) if limits.get(split) else part
            for split, part in raw.items()
        }
    )
