"""GLUE task metrics as a local ``evaluate`` metric (MCC, accuracy, F1, Pearson/Spearman).

Why local: ``evaluate.load("glue", ...)`` fetches its script from the Hub, which offline machines cannot reach.
Load this file with the task as configuration name, or instantiate the class directly::

    glue = evaluate.load("/path/to/hf_syntax/metrics/glue.py", "cola")
    glue.compute(predictions=[1, 0, 1], references=[1, 1, 1])   # {"matthews_correlation": ...}

Scores are fractions (0-1) as sklearn/scipy return them. The file is self-contained (evaluate copies it on its own),
so it imports nothing from hf_syntax.
"""

import datasets
import evaluate
from scipy.stats import pearsonr, spearmanr
from sklearn.metrics import accuracy_score, f1_score, matthews_corrcoef

_CITATION = """\
@inproceedings{wang2019glue,
    title = "{GLUE}: A Multi-Task Benchmark and Analysis Platform for Natural Language Understanding",
    author = "Wang, Alex and Singh, Amanpreet and Michael, Julian and Hill, Felix and Levy, Omer and Bowman, Samuel R.",
    booktitle = "International Conference on Learning Representations",
    year = "2019",
}
"""

_DESCRIPTION = (
    "The metric(s) GLUE reports for each task: CoLA Matthews correlation; SST-2, MNLI, QNLI, RTE accuracy; "
    "MRPC and QQP accuracy and F1 of the positive class; STS-B Pearson and Spearman correlation."
)

_INPUTS = """
Args:
    predictions: predicted label ids (floats for stsb).
    references: gold label ids (floats for stsb).
Returns, by configuration (task) name:
    cola: matthews_correlation; sst2, mnli, qnli, rte: accuracy; mrpc, qqp: accuracy, f1;
    stsb: pearson, spearmanr.
"""

TASK_METRICS = {
    "cola": ("matthews_correlation",),
    "sst2": ("accuracy",),
    "mrpc": ("accuracy", "f1"),
    "stsb": ("pearson", "spearmanr"),
    "qqp": ("accuracy", "f1"),
    "mnli": ("accuracy",),
    "qnli": ("accuracy",),
    "rte": ("accuracy",),
}


class GlueScore(evaluate.Metric):
    """GLUE's metric for the task named by ``config_name``."""

    def _info(self):
        if self.config_name not in TASK_METRICS:
            raise KeyError(
                f"GLUE metric: unknown task {self.config_name!r}; load it with one of {sorted(TASK_METRICS)} as the "
                f"configuration name, e.g. evaluate.load(path_to_this_file, 'cola')."
            )
        value_type = "float32" if self.config_name == "stsb" else "int64"
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_INPUTS,
            homepage="https://gluebenchmark.com/",
            features=datasets.Features(
                {"predictions": datasets.Value(value_type), "references": datasets.Value(value_type)}
            ),
        )

    def _compute(self, predictions, references):
        if len(predictions) == 0:
            raise ValueError("GLUE metric: no predictions to score (the evaluation split is empty).")
        scores = {}
        for name in TASK_METRICS[self.config_name]:
            if name == "matthews_correlation":
                scores[name] = float(matthews_corrcoef(references, predictions))
            elif name == "accuracy":
                scores[name] = float(accuracy_score(references, predictions))
            elif name == "f1":
                scores[name] = float(f1_score(references, predictions))
            elif name == "pearson":
                scores[name] = float(pearsonr(predictions, references)[0])
            else:
                scores[name] = float(spearmanr(predictions, references)[0])
        return scores
