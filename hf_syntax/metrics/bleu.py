"""Corpus BLEU from sacreBLEU as a local ``evaluate`` metric.

Why local: ``evaluate.load("sacrebleu")`` fetches its script from the Hub, which offline machines (this one, and
many training clusters) cannot reach. Load this file instead, or instantiate the class directly::

    bleu = evaluate.load("/path/to/hf_syntax/metrics/bleu.py")
    bleu.compute(predictions=["the cat sat ."], references=[["the cat sat ."]])

It imports nothing from hf_syntax: evaluate copies it with its sibling ``sacrebleu_corpus.py`` only.
"""

import evaluate
import sacrebleu

from .sacrebleu_corpus import corpus_metric_info, reference_streams, refuse_empty_predictions

_CITATION = """\
@inproceedings{post-2018-call,
    title = "A Call for Clarity in Reporting {BLEU} Scores",
    author = "Post, Matt",
    booktitle = "Proceedings of the Third Conference on Machine Translation: Research Papers",
    year = "2018",
    pages = "186--191",
}
"""

_DESCRIPTION = "Corpus-level BLEU (Papineni et al., 2002) computed by sacreBLEU, with its reproducibility signature."

_INPUTS = """
Args:
    predictions: list of system outputs (detokenized strings, one per segment).
    references: for each prediction a list of reference strings (the same number for every prediction),
        or one reference string per prediction.
    tokenize: sacreBLEU tokenizer ("13a" default, "intl", "zh", "ja-mecab" if installed, "char", "none").
    lowercase: compare case-insensitively.
    smooth_method, smooth_value, force, use_effective_order: as in ``sacrebleu.BLEU``.
Returns:
    score (0-100), counts, totals, precisions, bp, sys_len, ref_len, signature.
"""


class SacreBleuScore(evaluate.Metric):
    """sacreBLEU corpus BLEU; returns the same numbers as ``sacrebleu.corpus_bleu`` with the same options."""

    def _info(self):
        return corpus_metric_info(_DESCRIPTION, _CITATION, _INPUTS)

    def compute(self, *, predictions=None, references=None, **kwargs):
        """As ``evaluate.Metric.compute``, with a clear error for empty input (evaluate itself hits an IndexError)."""
        refuse_empty_predictions(predictions, "BLEU")
        return super().compute(predictions=predictions, references=references, **kwargs)

    def _compute(
        self,
        predictions,
        references,
        tokenize="13a",
        lowercase=False,
        smooth_method="exp",
        smooth_value=None,
        force=False,
        use_effective_order=False,
    ):
        scorer = sacrebleu.BLEU(
            tokenize=tokenize,
            lowercase=lowercase,
            smooth_method=smooth_method,
            smooth_value=smooth_value,
            force=force,
            effective_order=use_effective_order,
        )
        result = scorer.corpus_score(list(predictions), reference_streams(references))
        return {
            "score": result.score,
            "counts": result.counts,
            "totals": result.totals,
            "precisions": result.precisions,
            "bp": result.bp,
            "sys_len": result.sys_len,
            "ref_len": result.ref_len,
            "signature": str(scorer.get_signature()),
        }
