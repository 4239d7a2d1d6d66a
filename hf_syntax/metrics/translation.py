"""BLEU + chrF for generated translations, loaded from this package's local ``evaluate`` modules.

``bleu.py`` and ``chrf.py`` beside this file are ``evaluate`` metric scripts (each loadable with
``evaluate.load(<file path>)`` without the Hub or this package, given its sibling ``sacrebleu_corpus.py``); this module loads them and turns generated token ids into
scores for ``Seq2SeqTrainer(compute_metrics=...)``.
"""

from __future__ import annotations

from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

import evaluate
import numpy as np
from transformers import EvalPrediction, PreTrainedTokenizerBase

METRICS_DIR = Path(__file__).resolve().parent
BLEU_SCRIPT = METRICS_DIR / "bleu.py"
CHRF_SCRIPT = METRICS_DIR / "chrf.py"


@lru_cache(maxsize=1)
def load_bleu() -> evaluate.EvaluationModule:
    """sacreBLEU corpus BLEU from the local module (no Hub access)."""
    return evaluate.load(str(BLEU_SCRIPT))


@lru_cache(maxsize=1)
def load_chrf() -> evaluate.EvaluationModule:
    """sacreBLEU corpus chrF from the local module (no Hub access)."""
    return evaluate.load(str(CHRF_SCRIPT))


def score_translations(
    predictions: list[str], references: list[str], *, bleu_tokenize: str = "13a", lowercase: bool = False,
    pretokenized: bool = False,
) -> dict[str, float]:
    """``{"bleu": ..., "chrf": ...}`` (0-100) for one reference per prediction.

    ``pretokenized``: both sides are tokenized on purpose (a pre-tokenized corpus such as small_parallel_enja, and a
    model trained on it), so sacreBLEU's "forgot to detokenize" warning does not apply and is not printed.
    """
    if len(predictions) != len(references):
        raise ValueError(f"{len(predictions)} predictions but {len(references)} references; they must pair up")
    references = [[reference] for reference in references]
    bleu = load_bleu().compute(
        predictions=predictions, references=references, tokenize=bleu_tokenize, lowercase=lowercase,
        force=pretokenized,
    )
    chrf = load_chrf().compute(predictions=predictions, references=references, lowercase=lowercase)
    return {"bleu": bleu["score"], "chrf": chrf["score"]}


class GeneratedTranslationScorer:
    """``compute_metrics`` for ``Seq2SeqTrainer(predict_with_generate=True)``: decode ids, then BLEU and chrF.

    ``target_tokenizer`` decodes the generations. The references are the corpus's own lines while
    ``scoring_against`` holds them (the recipe's Trainer sets them for each evaluated split), so that the score is
    the one ``hf-syntax evaluate`` or sacreBLEU gives for the same translations; otherwise the labels are decoded
    (padding -100 becomes the pad id first), which drops what the target vocabulary cannot spell (an unknown
    character) and what ``max_target_length`` cut. Also reports the mean generated length in tokens (``gen_len``),
    a quick check for truncated or runaway output.
    """

    def __init__(self, target_tokenizer: PreTrainedTokenizerBase, *, bleu_tokenize: str = "13a", lowercase: bool = False):
        self.tokenizer = target_tokenizer
        self.bleu_tokenize = bleu_tokenize
        self.lowercase = lowercase
        self.references: list[str] | None = None

    @contextmanager
    def scoring_against(self, references: list[str]):
        """Score the predictions made inside the block against these lines, in the dataset's order."""
        previous, self.references = self.references, list(references)
        try:
            yield
        finally:
            self.references = previous

    def decode(self, token_ids: np.ndarray) -> list[str]:
        """Token ids (any padding: -100 or pad id) -> stripped strings without special tokens."""
        token_ids = np.where(token_ids < 0, self.tokenizer.pad_token_id, token_ids)
        return [text.strip() for text in self.tokenizer.batch_decode(token_ids, skip_special_tokens=True)]

    def __call__(self, prediction: EvalPrediction) -> dict[str, float]:
        generated = prediction.predictions[0] if isinstance(prediction.predictions, tuple) else prediction.predictions
        generated = np.asarray(generated)
        if self.references is not None:
            # a multi-process evaluation repeats a few samples at its end to even out the last batches
            generated, references = generated[: len(self.references)], self.references
        else:
            references = self.decode(np.asarray(prediction.label_ids))
        scores = score_translations(
            self.decode(generated),
            references,
            bleu_tokenize=self.bleu_tokenize,
            lowercase=self.lowercase,
        )
        scores["gen_len"] = float(self.generated_lengths(generated).mean())
        return scores

    def generated_lengths(self, generated: np.ndarray) -> np.ndarray:
        """Tokens per row up to its first end of sentence: generate may fill a finished beam with more end-of-sentence
        tokens rather than padding, and those must not count (they made the length depend on the batch)."""
        counted = (generated != self.tokenizer.pad_token_id) & (generated >= 0)
        eos = self.tokenizer.eos_token_id
        if eos is not None:
            ends = generated == eos
            counted &= (np.cumsum(ends, axis=1) - ends) == 0
        return counted.sum(axis=1)
