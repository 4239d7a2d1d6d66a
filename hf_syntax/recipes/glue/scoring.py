"""GLUE scores: the local GLUE metric for ``Trainer``'s ``compute_metrics``, and the GLUE server's prediction files."""

from __future__ import annotations

from pathlib import Path

import datasets
import evaluate
import numpy as np

from hf_syntax.recipes.glue.tasks import GlueTask

GLUE_METRIC_SCRIPT = Path(__file__).resolve().parents[2] / "metrics" / "glue.py"


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
