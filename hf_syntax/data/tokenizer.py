"""Train subword tokenizers (BPE or unigram) with ``tokenizers`` and wrap them as HF fast tokenizers.

Why our own trainer rather than a pretrained tokenizer: the papers train a vocabulary on the parallel corpus
itself. The result is a ``PreTrainedTokenizerFast`` that saves/loads with ``save_pretrained``/``AutoTokenizer``,
has fixed special ids (``<pad>``=0, ``<s>``=1, ``</s>``=2, ``<unk>``=3), appends ``</s>`` to every encoded
sentence (sources and ``text_target`` alike) and returns character offsets, which the syntax features need to
align parser words with subwords. Words are split on whitespace first (SentencePiece-style ``▁`` marks a word
start) and punctuation is isolated, so a subword never straddles two whitespace-separated words nor a word and the
punctuation a parser splits off it in raw text ("rained." -> "▁rained" "."; decoding restores the text).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
from transformers import PreTrainedTokenizerFast

from hf_syntax.self_parse import WORD_START  # the word-start marker self-parsing reads word boundaries by
from hf_syntax.text_checks import is_blank

logger = logging.getLogger(__name__)

PAD, BOS, EOS, UNK = "<pad>", "<s>", "</s>", "<unk>"
SPECIAL_TOKENS = (PAD, BOS, EOS, UNK)  # list order = ids 0, 1, 2, 3
TOKENIZER_MODELS = ("bpe", "unigram")
NORMALIZATIONS = (None, "nfkc")


def _untrained_tokenizer(model: str, normalization: str | None) -> Tokenizer:
    if model == "bpe":
        tokenizer = Tokenizer(models.BPE(unk_token=UNK))
    elif model == "unigram":
        tokenizer = Tokenizer(models.Unigram())
    else:
        raise ValueError(f"unknown tokenizer model {model!r}; choose one of {TOKENIZER_MODELS}")
    if normalization not in NORMALIZATIONS:
        raise ValueError(f"unknown normalization {normalization!r}; choose one of {NORMALIZATIONS}")
    if normalization == "nfkc":
        tokenizer.normalizer = normalizers.NFKC()
    # Split on whitespace first so offsets cover the word only (not the space before it), mark word starts, then
    # isolate punctuation: raw text glues it to words, parsers split it off, and a merged piece would straddle both.
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.WhitespaceSplit(),
            pre_tokenizers.Metaspace(replacement=WORD_START, prepend_scheme="always"),
            pre_tokenizers.Punctuation(behavior="isolated"),
        ]
    )
    tokenizer.decoder = decoders.Metaspace(replacement=WORD_START, prepend_scheme="always")
    return tokenizer


def _trainer(model: str, vocab_size: int, min_frequency: int) -> trainers.Trainer:
    if model == "bpe":
        return trainers.BpeTrainer(
            vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=list(SPECIAL_TOKENS), show_progress=False
        )
    return trainers.UnigramTrainer(
        vocab_size=vocab_size, special_tokens=list(SPECIAL_TOKENS), unk_token=UNK, show_progress=False
    )


def train_tokenizer(
    texts: Iterable[str],
    *,
    model: str = "bpe",
    vocab_size: int = 8000,
    min_frequency: int = 2,
    normalization: str | None = None,
    model_max_length: int = 512,
) -> PreTrainedTokenizerFast:
    """Train a ``model`` ("bpe" or "unigram") vocabulary of at most ``vocab_size`` entries on ``texts``.

    ``normalization="nfkc"`` applies Unicode NFKC before splitting (offsets still point into the raw text).
    ``model_max_length`` is what ``truncation=True`` cuts to (set it to the model's maximum positions).
    """
    if isinstance(texts, (str, bytes, Path)):  # a str was trained on character by character: a vocabulary of letters
        raise TypeError(f"train_tokenizer takes the training texts (a list or iterable of lines), got one "
                        f"{type(texts).__name__} ({str(texts)[:40]!r}); read a file's lines first, e.g. "
                        f"hf_syntax.data.corpus.read_lines(path).")
    if vocab_size <= len(SPECIAL_TOKENS):
        raise ValueError(f"vocab_size={vocab_size} leaves no room next to the {len(SPECIAL_TOKENS)} special tokens")
    if min_frequency < 1:
        raise ValueError(f"min_frequency must be >= 1, got {min_frequency}")
    tokenizer = _untrained_tokenizer(model, normalization)
    texts = [text for text in texts if not is_blank(text)]
    if not texts:
        raise ValueError("cannot train a tokenizer on no text (every given line was empty)")
    tokenizer.train_from_iterator(texts, trainer=_trainer(model, vocab_size, min_frequency), length=len(texts))
    if tokenizer.get_vocab_size() > vocab_size:  # BPE keeps every character of the corpus: no merge was learnt
        logger.warning("vocab_size=%d is below what the texts need for their characters alone: the vocabulary has "
                       "%d entries (the special tokens and every character, which the tokenizer keeps) and few or "
                       "no pieces longer than a character; give vocab_size well above %d for subwords.",
                       vocab_size, tokenizer.get_vocab_size(), tokenizer.get_vocab_size())
    for token_id, token in enumerate(SPECIAL_TOKENS):
        if tokenizer.token_to_id(token) != token_id:
            raise RuntimeError(f"tokenizers put {token} at id {tokenizer.token_to_id(token)}, expected {token_id}")
    eos_id = SPECIAL_TOKENS.index(EOS)
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"$A {EOS}", pair=f"$A {EOS} $B {EOS}", special_tokens=[(EOS, eos_id)]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        pad_token=PAD,
        bos_token=BOS,
        eos_token=EOS,
        unk_token=UNK,
        model_max_length=model_max_length,
        padding_side="right",
        truncation_side="right",
    )


def train_translation_tokenizers(
    source_texts: Iterable[str], target_texts: Iterable[str], *, joint: bool = True, **options
) -> tuple[PreTrainedTokenizerFast, PreTrainedTokenizerFast]:
    """Source and target tokenizers: one shared vocabulary (``joint=True``, the same object twice) or one per side.

    ``options`` go to :func:`train_tokenizer`. With ``joint=False`` each side gets its own ``vocab_size``
    vocabulary; the special tokens have the same ids on both sides, so one model config fits both.
    """
    source_texts, target_texts = list(source_texts), list(target_texts)
    if joint:
        shared = train_tokenizer(source_texts + target_texts, **options)
        return shared, shared
    return train_tokenizer(source_texts, **options), train_tokenizer(target_texts, **options)
