"""Which sacreBLEU tokenizers a score may use, checked where a command or a recipe starts. A module of its own so
the command line can list them without importing ``evaluate``."""

from __future__ import annotations

BLEU_TOKENIZERS = ("13a", "intl", "zh", "ja-mecab", "ko-mecab", "char", "none")
"""sacreBLEU tokenizers that work offline (its spm/flores ones download a model)."""


def check_bleu_tokenizer(name: str) -> None:
    """Refuse, before anything is translated or trained, a BLEU tokenizer that is not one of ``BLEU_TOKENIZERS`` or
    that cannot run here (ja-mecab and ko-mecab need ``pip install sacrebleu[ja]`` / ``[ko]``): sacreBLEU said so
    only when it scored, after every sentence was translated or the first epoch trained."""
    from sacrebleu.metrics import BLEU

    if name not in BLEU_TOKENIZERS:
        raise ValueError(f"BLEU tokenizer {name!r} is not one of {list(BLEU_TOKENIZERS)}; 13a is sacreBLEU's default.")
    try:
        BLEU(tokenize=name)
    except (RuntimeError, ImportError) as error:  # what sacreBLEU raises for a tokenizer's missing package
        raise ValueError(f"BLEU tokenizer {name!r} cannot run here: {' '.join(str(error).split())}") from None
