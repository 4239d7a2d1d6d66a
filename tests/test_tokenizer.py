"""Tokenizer training: special ids, </s> appended, lossless round trip, offsets inside words, save/load."""

from pathlib import Path

import pytest
from transformers import AutoTokenizer

from hf_syntax.data.tokenizer import SPECIAL_TOKENS, WORD_START, train_tokenizer, train_translation_tokenizers


@pytest.fixture(scope="module", params=["bpe", "unigram"])
def trained(request, sample_pairs):
    sources, targets = sample_pairs
    return train_tokenizer(sources + targets, model=request.param, vocab_size=2000)


def test_special_token_ids_and_final_eos(trained, sample_pairs):
    assert [trained.convert_tokens_to_ids(token) for token in SPECIAL_TOKENS] == [0, 1, 2, 3]
    assert (trained.pad_token_id, trained.bos_token_id, trained.eos_token_id, trained.unk_token_id) == (0, 1, 2, 3)
    batch = trained(sample_pairs[0][:3], text_target=sample_pairs[1][:3])
    for ids in batch["input_ids"] + batch["labels"]:
        assert ids[-1] == trained.eos_token_id and trained.eos_token_id not in ids[:-1]
        assert trained.bos_token_id not in ids


def test_round_trip_is_lossless_on_real_lines(trained, sample_pairs):
    sources, targets = sample_pairs
    for line in sources[:300] + targets[:300]:
        ids = trained(line)["input_ids"]
        assert trained.unk_token_id not in ids, line
        assert trained.decode(ids, skip_special_tokens=True) == line


def test_offsets_stay_inside_one_word(trained, sample_pairs):
    """Every piece's character span lies within a single whitespace word: what parse alignment relies on."""
    for line in sample_pairs[0][:200] + sample_pairs[1][:200]:
        word_spans, position = [], 0
        for word in line.split(" "):
            word_spans.append((position, position + len(word)))
            position += len(word) + 1
        encoded = trained(line, return_offsets_mapping=True)
        tokens = trained.convert_ids_to_tokens(encoded["input_ids"])
        for token, (start, end) in zip(tokens, encoded["offset_mapping"]):
            if token in SPECIAL_TOKENS:
                assert (start, end) == (0, 0)
                continue
            assert any(word_start <= start < end <= word_end for word_start, word_end in word_spans), (line, token)
            if token != WORD_START:
                assert line[start:end] == token.lstrip(WORD_START), (line, token)


def test_punctuation_glued_to_words_gets_its_own_pieces(trained):
    """Raw text: a parser splits "rained." into two words, so no piece may cover both (and decoding is lossless)."""
    line = "it rained, didn't it? yes, twice."  # lower case: the sample corpus is lower-cased
    encoded = trained(line, return_offsets_mapping=True)
    pieces = [line[start:end] for start, end in encoded["offset_mapping"] if end > start]
    for piece in pieces:
        assert piece.isalnum() or all(not character.isalnum() for character in piece), piece
    assert trained.unk_token_id not in encoded["input_ids"]
    assert trained.decode(encoded["input_ids"], skip_special_tokens=True) == line


def test_save_and_load_gives_identical_encodings(trained, sample_pairs, tmp_path):
    trained.save_pretrained(tmp_path)
    loaded = AutoTokenizer.from_pretrained(tmp_path)
    lines = sample_pairs[0][:50] + sample_pairs[1][:50]
    assert loaded(lines)["input_ids"] == trained(lines)["input_ids"]
    assert loaded(lines[0], return_offsets_mapping=True)["offset_mapping"] == trained(
        lines[0], return_offsets_mapping=True
    )["offset_mapping"]
    assert loaded.pad_token_id == 0 and loaded.eos_token_id == 2


def test_truncation_keeps_final_eos(trained, sample_pairs):
    long_line = " ".join(sample_pairs[1][:20])
    ids = trained(long_line, truncation=True, max_length=8)["input_ids"]
    assert len(ids) == 8 and ids[-1] == trained.eos_token_id


def test_joint_and_per_side_vocabularies(sample_pairs):
    sources, targets = sample_pairs
    source, target = train_translation_tokenizers(sources[:500], targets[:500], joint=True, vocab_size=800)
    assert source is target
    source, target = train_translation_tokenizers(sources[:500], targets[:500], joint=False, vocab_size=800)
    assert source is not target
    assert "▁the" in target.get_vocab() and "▁the" not in source.get_vocab()
    assert target.decode(target(targets[0])["input_ids"], skip_special_tokens=True) == targets[0]


@pytest.mark.parametrize(
    "options, message",
    [
        ({"model": "wordpiece"}, "unknown tokenizer model 'wordpiece'"),
        ({"vocab_size": 4}, "vocab_size=4 leaves no room"),
        ({"normalization": "nfc"}, "unknown normalization 'nfc'"),
        ({"min_frequency": 0}, "min_frequency must be >= 1"),
    ],
)
def test_bad_options_are_rejected(options, message):
    with pytest.raises(ValueError, match=message):
        train_tokenizer(["a b c"], **options)


def test_no_text_is_rejected():
    with pytest.raises(ValueError, match="every given line was empty"):
        train_tokenizer(["", "   "])


def test_one_string_or_path_for_the_texts_is_refused():
    """A file name was trained on character by character: a vocabulary of its letters, and no error."""
    for texts in ("corpus.txt", Path("corpus.txt")):
        with pytest.raises(TypeError, match=r"takes the training texts \(a list or iterable of lines\), got one "):
            train_tokenizer(texts, vocab_size=200)


def test_a_vocabulary_too_small_for_the_characters_says_so(caplog):
    """BPE keeps every character, so vocab_size=8 on these lines gave a larger, character-only vocabulary silently."""
    lines = ["the cat sat on the mat", "a dog ran to the cat"]
    with caplog.at_level("WARNING", logger="hf_syntax.data.tokenizer"):
        tokenizer = train_tokenizer(lines, vocab_size=8, min_frequency=1)
    assert len(tokenizer) > 8
    assert f"the vocabulary has {len(tokenizer)} entries" in caplog.text and "no pieces longer than a character" in caplog.text
    caplog.clear()
    with caplog.at_level("WARNING", logger="hf_syntax.data.tokenizer"):
        train_tokenizer(lines, vocab_size=60, min_frequency=1)
    assert not caplog.text
