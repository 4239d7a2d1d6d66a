"""Real spaCy/GiNZA parsers through the backend layer: raw and pre-tokenized input, forests, bad specs."""

import pytest
from features_support import BAD_TEXTS, ENGLISH_PARSER, FRENCH_PARSER, JAPANESE_PARSER, SAMPLE_DATA, metaspace_bpe

from hf_syntax.featurizer import SyntaxFeaturizer
from hf_syntax.parsers import ParserNotAvailableError, SpacyParser, _cache_key, get_parser, load_parser
from hf_syntax.segmenters import SUDACHI_MAX_BYTES, get_segmenter
from hf_syntax.text_checks import InvalidTextError, TextTooLongError
from hf_syntax.trees import WordTree


@pytest.fixture(scope="module")
def english():
    return get_parser(ENGLISH_PARSER)


def check_tree_matches_text(tree: WordTree, text: str):
    assert tree.text == text
    assert [text[start:end] for start, end in tree.spans] == list(tree.words)
    covered = {position for start, end in tree.spans for position in range(start, end)}
    assert all(text[position].isspace() for position in range(len(text)) if position not in covered)


@pytest.mark.parametrize("name", sorted(BAD_TEXTS))
def test_english_parser_on_awkward_text(english, name):
    text = BAD_TEXTS[name]
    tree = english.parse(text)
    check_tree_matches_text(tree, text)
    if name in ("empty", "whitespace"):
        assert len(tree) == 0 and tree.roots == []
    else:
        assert tree.upos and all(tag for tag in tree.upos) and len(tree.roots) == len(tree.sentence_starts) >= 1
    if name == "two_sentences":
        assert tree.sentence_starts == (0, 3) and tree.roots == [1, 5]
    if name == "contraction":
        assert tree.words == ("I", "do", "n't", "know", ".")


def test_batch_equals_single_and_space_tokens_are_dropped(english):
    texts = ["Hello  world.\n\nSecond one here.", "A cat."]
    batch = english.parse_batch(texts)
    assert batch == [english.parse(text) for text in texts]
    assert batch[0].words == ("Hello", "world", ".", "Second", "one", "here", ".")
    assert batch[0].sentence_starts == (0, 3)


def test_pretokenized_input_is_not_resegmented(english):
    words = ["I", "'m", "gon", "na", "e-mail", "you", "."]
    tree = english.parse(words)
    assert tree.words == tuple(words) and tree.text == " ".join(words)
    assert english.parse(" ".join(words), pretokenized=True) == tree
    with pytest.raises(ValueError, match="positions \\[1\\]"):
        english.parse(["a", "", "b"])
    with pytest.raises(ValueError, match="positions \\[0\\]"):
        english.parse([" a", "b"])
    with pytest.raises(TypeError, match="parse_batch expects a list"):
        english.parse_batch("one string")


@pytest.mark.parametrize(("spec", "side"), [(JAPANESE_PARSER, "ja"), (ENGLISH_PARSER, "en")])
def test_small_parallel_enja_dev_words_come_back_unchanged(spec, side):
    folder = SAMPLE_DATA / "small_parallel_enja"  # valid + heldout: lines 1-200 of the source's dev split
    lines = [line for name in ("valid", "heldout") for line in
             (folder / f"{name}.{side}").read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 200
    trees = get_parser(spec).parse_batch(lines, pretokenized=True)
    assert sum(tree.words == tuple(line.split()) for tree, line in zip(trees, lines)) == 200
    if side == "ja":
        assert not any(label.endswith("_bunsetu") for tree in trees for label in tree.deprels)


def test_ginza_raw_text_and_french_pipeline():
    tree = get_parser(JAPANESE_PARSER).parse("今日は良い天気です。明日は雨でしょう。")
    check_tree_matches_text(tree, "今日は良い天気です。明日は雨でしょう。")
    assert len(tree.roots) == 2 and "compound_splitter" not in get_parser(JAPANESE_PARSER).nlp.pipe_names
    french = get_parser(FRENCH_PARSER)
    tree = french.parse("Le bruit du chat réveille les enfants.")
    check_tree_matches_text(tree, "Le bruit du chat réveille les enfants.")
    assert tree.upos[tree.words.index("chat")] == "NOUN"
    assert "ner" not in french.nlp.pipe_names and "lemmatizer" not in french.nlp.pipe_names


def test_a_text_longer_than_the_parser_reads_is_named_before_the_batch_is_parsed(english):
    """SudachiPy refused a Japanese text of over 49,149 UTF-8 bytes with an error naming neither the text nor the fix;
    spaCy's own character limit is checked the same way. The check counts bytes, as SudachiPy does: the same number
    of ASCII characters passes."""
    japanese = get_parser(JAPANESE_PARSER)
    longest = "猫が走る。" * (SUDACHI_MAX_BYTES // len("猫が走る。".encode()))  # parsed, it would take a minute
    with pytest.raises(TextTooLongError, match=r"a text of 49155 UTF-8 bytes \(it begins '猫が走る。.*reads \(49149\): "
                                               r"split it into sentences"):
        japanese.parse_batch(["短い文。", longest + "猫が走る。"])
    assert len(japanese.parse("a" * len(longest + "猫が走る。")).words) == 1
    with pytest.raises(TextTooLongError, match=f"characters .*reads \\({english.nlp.max_length}\\)"):
        english.parse("a " * (english.nlp.max_length // 2 + 1))


def test_splitting_words_alone_checks_the_text_as_parsing_does(english):
    """What splits a raw line for a model trained on words (GiNZA's tokenizer, SudachiPy alone) raised SudachiPy's
    own error on a long text, and every parser's entry points a bare UnicodeEncodeError on a lone surrogate."""
    too_long = "猫が走る。" * (SUDACHI_MAX_BYTES // len("猫が走る。".encode()) + 1)
    for splitter in (get_parser(JAPANESE_PARSER), get_segmenter("sudachi:C")):
        with pytest.raises(TextTooLongError, match=r"a text of 49155 UTF-8 bytes .*split it into sentences"):
            splitter.split_words(too_long)
        with pytest.raises(InvalidTextError, match="lone surrogate"):
            splitter.split_words("猫\ud800")
    for call in (lambda: english.parse("ab \ud800"), lambda: english.parse_batch(["fine", "ab \ud800"]),
                 lambda: english.parse(["ab", "\ud800"])):
        with pytest.raises(InvalidTextError, match=r"input [01] contains a lone surrogate"):
            call()


def test_n_process_two_gives_the_same_trees(english):
    texts = [f"Sentence number {index} is here." for index in range(8)]
    parallel = SpacyParser(english.nlp, n_process=2, batch_size=2)
    assert parallel.parse_batch(texts) == english.parse_batch(texts)


def test_parser_options_of_the_wrong_type_are_named(english):
    """batch_size="64" was "'<' not supported"; parser_options="n_process=2" was "dictionary update sequence"."""
    for options in ({"batch_size": "64"}, {"n_process": 1.5}, {"batch_size": 0}):
        with pytest.raises(ValueError, match=r"n_process and batch_size must be whole numbers >= 1"):
            SpacyParser(english.nlp, **options)
    with pytest.raises(TypeError, match=r"parser_options='n_process=2': give a dict of the parser's keyword"):
        SyntaxFeaturizer(metaspace_bpe(), parser=ENGLISH_PARSER, parser_options="n_process=2")


def test_a_misspelt_parser_option_is_refused_with_the_options_of_its_backend(english):
    """n_proc=2 failed with "__init__() got an unexpected keyword argument 'n_proc'", naming no valid option."""
    refusal = (r"the spacy parser has no option 'n_proc'; did you mean 'n_process'\? its options are n_process, "
               r"batch_size\.")
    with pytest.raises(TypeError, match=refusal):
        get_parser(ENGLISH_PARSER, n_proc=2)
    with pytest.raises(TypeError, match=refusal):
        load_parser(english.nlp, n_proc=2)
    with pytest.raises(TypeError, match=refusal):
        SyntaxFeaturizer(metaspace_bpe(), parser=ENGLISH_PARSER, parser_options={"n_proc": 2})("A dog barks.")


def test_parser_options_holding_dicts_or_lists_make_one_cache_key_in_any_order():
    """get_parser("stanza:en", processors={"tokenize": "ewt", "pos": "ewt"}) failed with "unhashable type: 'dict'"
    while building its cache key, before loading anything."""
    key = _cache_key("stanza:en", {"processors": {"tokenize": "ewt", "pos": "ewt"}, "langs": ["en"]})
    assert {key: "parser"}[_cache_key("stanza:en", {"langs": ["en"], "processors": {"pos": "ewt", "tokenize": "ewt"}})]
    assert key != _cache_key("stanza:en", {"processors": {"tokenize": "gum", "pos": "ewt"}, "langs": ["en"]})


def test_a_loaded_spacy_language_is_accepted_and_needs_a_parser(english):
    assert load_parser(english.nlp).parse("A dog barks.").words == ("A", "dog", "barks", ".")
    spacy = pytest.importorskip("spacy")
    with pytest.raises(ValueError, match="has no dependency parser"):
        load_parser(spacy.blank("en"))


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("spacy:en_core_web_sm", r"python -m spacy download en_core_web_sm.*pip install en-core-web-sm"),
        ("spacy:ja_ginza_electra", r"pip install ginza ja-ginza-electra"),
        ("spacy:./no/such/folder", r"no spaCy pipeline folder at './no/such/folder'"),
        ("stanza:xx", r"stanza.download\('xx'\)"),
    ],
)
def test_parser_that_is_not_installed_says_what_to_install(spec, message):
    with pytest.raises(ParserNotAvailableError, match=message):
        load_parser(spec)


@pytest.mark.parametrize("spec", ["spacy", "nltk:en", "spacy:", 42])
def test_malformed_specs(spec):
    with pytest.raises((ValueError, TypeError), match="spec|parser must be"):
        load_parser(spec)
