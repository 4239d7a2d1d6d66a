"""Corpus BLEU from sacreBLEU as a local ``evaluate`` metric.

Why local: ``evaluate.load("sacrebleu")`` fetches its script from the Hub, which offline machines (this one, and
many training clusters) cannot reach. Load this file instead, or instantiate the class directly::

    bleu = evaluate.load("/path/to/hf_syntax/metrics/bleu.py")
    bleu.compute(predictions=["the cat sat ."], references=[["the cat sat ."]])

The file is self-contained (evaluate copies it on its own), so it imports nothing from hf_syntax.
"""

import datasets
import evaluate
import sacrebleu

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


class SacreBleuScore(evaluate.Metric):
    """sacreBLEU corpus BLEU; returns the same numbers as ``sacrebleu.corpus_bleu`` with the same options."""

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
            raise ValueError("BLEU needs at least one prediction")
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
        result = scorer.corpus_score(list(predictions), _reference_streams(references))
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
