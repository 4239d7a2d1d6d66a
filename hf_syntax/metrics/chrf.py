"""chrF / chrF++ from sacreBLEU as a local ``evaluate`` metric.

Why local: ``evaluate.load("chrf")`` fetches its script from the Hub, which offline machines cannot reach. Load
this file instead (``evaluate.load("/path/to/hf_syntax/metrics/chrf.py")``) or instantiate the class directly.
The file is self-contained (evaluate copies it on its own), so it imports nothing from hf_syntax.
"""

import datasets
import evaluate
import sacrebleu

_CITATION = """\
@inproceedings{popovic-2015-chrf,
    title = "chr{F}: character n-gram {F}-score for automatic {MT} evaluation",
    author = "Popovi{\\'c}, Maja",
    booktitle = "Proceedings of the Tenth Workshop on Statistical Machine Translation",
    year = "2015",
    pages = "392--395",
}
"""

_DESCRIPTION = "Corpus-level chrF (character n-gram F-score; chrF++ with word_order=2) computed by sacreBLEU."

_INPUTS = """
Args:
    predictions: list of system outputs (one string per segment).
    references: for each prediction a list of reference strings (the same number for every prediction),
        or one reference string per prediction.
    char_order, word_order, beta, lowercase, whitespace, eps_smoothing: as in ``sacrebleu.CHRF``.
Returns:
    score (0-100), char_order, word_order, beta, signature.
"""


def _reference_streams(references):
    """Per-prediction reference lists -> sacreBLEU's per-reference-set streams, rejecting ragged input."""
    per_prediction = [[refs] if isinstance(refs, str) else list(refs) for refs in references]
    counts = {len(refs) for refs in per_prediction}
    if len(counts) != 1 or 0 in counts:
        raise ValueError(
            f"every prediction needs the same, non-zero number of references; got counts {sorted(counts)}. "
            "Pad missing references with an empty string only if that is what you mean."
        )
    return [list(stream) for stream in zip(*per_prediction)]


class SacreChrfScore(evaluate.Metric):
    """sacreBLEU corpus chrF; returns the same number as ``sacrebleu.corpus_chrf`` with the same options."""

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_INPUTS,
            homepage="https://github.com/mjpost/sacrebleu",
            features=[
                datasets.Features(
                    {"predictions": datasets.Value("string"), "references": datasets.Sequence(datasets.Value("string"))}
                ),
                datasets.Features({"predictions": datasets.Value("string"), "references": datasets.Value("string")}),
            ],
            reference_urls=["https://github.com/mjpost/sacrebleu"],
        )

    def compute(self, *, predictions=None, references=None, **kwargs):
        """As ``evaluate.Metric.compute``, with a clear error for empty input (evaluate itself hits an IndexError)."""
        if predictions is not None and len(predictions) == 0:
            raise ValueError("chrF needs at least one prediction")
        return super().compute(predictions=predictions, references=references, **kwargs)

    def _compute(
        self,
        predictions,
        references,
        char_order=6,
        word_order=0,
        beta=2,
        lowercase=False,
        whitespace=False,
        eps_smoothing=False,
    ):
        scorer = sacrebleu.CHRF(
            char_order=char_order,
            word_order=word_order,
            beta=beta,
            lowercase=lowercase,
            whitespace=whitespace,
            eps_smoothing=eps_smoothing,
        )
        result = scorer.corpus_score(list(predictions), _reference_streams(references))
        return {
            "score": result.score,
            "char_order": char_order,
            "word_order": word_order,
            "beta": beta,
            "signature": str(scorer.get_signature()),
        }
