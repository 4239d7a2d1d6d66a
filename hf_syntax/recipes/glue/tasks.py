"""The eight GLUE tasks: where each one's files and columns are, how its labels are spelt, how it is scored."""

from __future__ import annotations

from dataclasses import dataclass, field

GLUE_HUB_DATASET = "nyu-mll/glue"
"""The GLUE release on the Hub (one config per task, named as ours, with the same split names): a model card names it
for a run on the release's TSV files."""


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
