"""What the local sacreBLEU metrics (``bleu.py``, ``chrf.py``) share: their input schema and input checks.

Why a sibling file and not ``hf_syntax``: ``evaluate.load(<file path>)`` copies a metric script together with the
files it imports relatively (``from .sacrebleu_corpus import ...``), and nothing else, so the scripts stay loadable
by path on a machine that has ``evaluate`` and ``sacrebleu`` but not this package. Only functions live here: evaluate
takes the first ``Metric`` class it finds in a script as the metric, so a shared base class would be picked instead.
"""

import datasets
import evaluate

SACREBLEU_HOMEPAGE = "https://github.com/mjpost/sacrebleu"


def corpus_metric_info(description, citation, inputs_description):
    """The ``MetricInfo`` of a corpus-level sacreBLEU score: one prediction string, one or many references."""
    return evaluate.MetricInfo(
        description=description,
        citation=citation,
        inputs_description=inputs_description,
        homepage=SACREBLEU_HOMEPAGE,
        features=[
            datasets.Features(
                {"predictions": datasets.Value("string"), "references": datasets.Sequence(datasets.Value("string"))}
            ),
            datasets.Features({"predictions": datasets.Value("string"), "references": datasets.Value("string")}),
        ],
        reference_urls=[SACREBLEU_HOMEPAGE],
    )


def refuse_empty_predictions(predictions, metric_name):
    """A clear error for no predictions at all (``evaluate`` itself fails with an IndexError)."""
    if predictions is not None and len(predictions) == 0:
        raise ValueError(f"{metric_name} needs at least one prediction")


def reference_streams(references):
    """Per-prediction reference lists -> sacreBLEU's per-reference-set streams, rejecting ragged input."""
    per_prediction = [[refs] if isinstance(refs, str) else list(refs) for refs in references]
    counts = {len(refs) for refs in per_prediction}
    if len(counts) != 1 or 0 in counts:
        raise ValueError(
            f"every prediction needs the same, non-zero number of references; got counts {sorted(counts)}. "
            "Pad missing references with an empty string only if that is what you mean."
        )
    return [list(stream) for stream in zip(*per_prediction)]
