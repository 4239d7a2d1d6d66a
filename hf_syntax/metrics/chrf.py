"""chrF / chrF++ from sacreBLEU as a local ``evaluate`` metric.

Why local: ``evaluate.load("chrf")`` fetches its script from the Hub, which offline machines cannot reach. Load
this file instead (``evaluate.load("/path/to/hf_syntax/metrics/chrf.py")``) or instantiate the class directly.
It imports nothing from hf_syntax: evaluate copies it with its sibling ``sacrebleu_corpus.py`` only.
"""

import evaluate
import sacrebleu

from .sacrebleu_corpus import corpus_metric_info, reference_streams, refuse_empty_predictions

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


class SacreChrfScore(evaluate.Metric):
    """sacreBLEU corpus chrF; returns the same number as ``sacrebleu.corpus_chrf`` with the same options."""

    def _info(self):
        return corpus_metric_info(_DESCRIPTION, _CITATION, _INPUTS)

    def compute(self, *, predictions=None, references=None, **kwargs):
        """As ``evaluate.Metric.compute``, with a clear error for empty input (evaluate itself hits an IndexError)."""
        refuse_empty_predictions(predictions, "chrF")
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
        result = scorer.corpus_score(list(predictions), reference_streams(references))
        return {
            "score": result.score,
            "char_order": char_order,
            "word_order": word_order,
            "beta": beta,
            "signature": str(scorer.get_signature()),
        }
