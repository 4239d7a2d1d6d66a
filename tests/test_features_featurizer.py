"""SyntaxFeaturizer end to end with a real parser: awkward text, single vs batch, target side, tensors, errors."""

import copy

import pytest
import torch
from features_support import BAD_TEXTS, ENGLISH_PARSER, byte_level_bpe, metaspace_bpe, minilm_wordpiece

from hf_syntax.align import IGNORE_INDEX, AlignmentError, AlignmentStats, word_heads_from_subword_heads
from hf_syntax.columns import DEFAULT_FEATURES
from hf_syntax.featurizer import SyntaxFeaturizer
from hf_syntax.labels import CASE_VOCAB, DEPREL_VOCAB, SPECIAL_ID, UPOS_VOCAB, LabelVocab
from hf_syntax.parsers import get_parser
from hf_syntax.trees import TreeError, WordTree

TOKENIZERS = {"byte_level_bpe": byte_level_bpe, "metaspace_bpe": metaspace_bpe, "minilm_wordpiece": minilm_wordpiece}


@pytest.mark.parametrize("tokenizer_name", sorted(TOKENIZERS))
def test_awkward_text_never_shifts_silently(tokenizer_name):
    tokenizer = TOKENIZERS[tokenizer_name]()
    parser = get_parser(ENGLISH_PARSER)
    featurizer = SyntaxFeaturizer(tokenizer, parser=ENGLISH_PARSER, return_word_ids=True)
    for name, text in BAD_TEXTS.items():
        before = AlignmentStats(**featurizer.stats.as_dict())
        out = featurizer(text)
        length = len(out["input_ids"])
        assert all(len(out[column]) == length for column in DEFAULT_FEATURES + ("word_ids",)), name
        assert all(head == IGNORE_INDEX or 0 <= head < length for head in out["dep_heads"]), name
        tree = parser.parse(text)
        back = word_heads_from_subword_heads(out["dep_heads"], out["word_ids"], len(tree))
        rules_applied = (featurizer.stats.straddling_subwords - before.straddling_subwords
                         + featurizer.stats.uncovered_subwords - before.uncovered_subwords)
        # Either the parser's heads come back exactly, or a counted rule explains why not.
        assert back == list(tree.heads) or rules_applied > 0, (name, text)
        if name in ("empty", "whitespace"):
            assert set(out["dep_heads"]) <= {IGNORE_INDEX} and set(out["pos_ids"]) <= {SPECIAL_ID}
        if name == "two_sentences":
            assert back.count(0) == 2


def test_single_and_batch_give_the_same_columns():
    featurizer = SyntaxFeaturizer(byte_level_bpe(), parser=ENGLISH_PARSER)
    texts = ["The quick brown fox jumps.", "NASA launched it in 2024!"]
    batch = featurizer(texts)
    assert [featurizer(text) for text in texts] == [{k: v[i] for k, v in batch.items()} for i in range(2)]
    out = featurizer(texts[1])
    words = get_parser(ENGLISH_PARSER).parse(texts[1]).words
    assert out["case_ids"][0] == CASE_VOCAB.id_of("upper") and words[0] == "NASA"


def test_pretokenized_strings_and_word_lists_agree():
    featurizer = SyntaxFeaturizer(byte_level_bpe(), parser=ENGLISH_PARSER, pretokenized=True, return_word_ids=True)
    line = "i 'm fine , thanks ."
    assert featurizer(line) == {key: values[0] for key, values in featurizer([line.split()]).items()}
    # Extra spaces stay in the text the tokenizer sees; the words and their heads do not change.
    spaced = featurizer("i 'm  fine ,   thanks .")
    tree = get_parser(ENGLISH_PARSER).parse(line.split())
    assert word_heads_from_subword_heads(spaced["dep_heads"], spaced["word_ids"]) == list(tree.heads)


def test_target_side_heads_index_labels():
    tokenizer = metaspace_bpe()
    featurizer = SyntaxFeaturizer(tokenizer, parser=ENGLISH_PARSER, target_parser=ENGLISH_PARSER)
    out = featurizer("A small dog barked.", text_target="the dog barked loudly .")
    labels, heads = out["labels"], out["decoder_dep_heads"]
    assert labels[-1] == tokenizer.eos_token_id and heads[-1] == IGNORE_INDEX
    assert len(heads) == len(labels) and all(0 <= head < len(labels) - 1 for head in heads[:-1])
    target_only = featurizer(text_target="the dog barked loudly .")
    assert set(target_only) == {"labels", "decoder_dep_heads"} and target_only["labels"] == labels
    no_target_parser = SyntaxFeaturizer(tokenizer, parser=ENGLISH_PARSER)("Dogs bark.", text_target="dogs bark .")
    assert "labels" in no_target_parser and "decoder_dep_heads" not in no_target_parser
    with pytest.raises(ValueError, match="2 texts but 1 targets"):
        featurizer(["a b", "c d"], text_target=["x"])


def test_tensors_and_left_padding_keep_heads_on_their_subwords():
    tokenizer = copy.deepcopy(byte_level_bpe())
    texts = ["Birds fly.", "The old man walked slowly home."]
    right = SyntaxFeaturizer(tokenizer, parser=ENGLISH_PARSER)(texts, return_tensors="pt")
    assert right["dep_heads"].dtype == torch.long and right["input_ids"].shape == right["dep_depths"].shape
    assert right["dep_depths"][0, -1] == -1 and right["pos_ids"][0, -1] == 0
    tokenizer.padding_side = "left"
    left = SyntaxFeaturizer(tokenizer, parser=ENGLISH_PARSER)(texts, return_tensors="pt")
    short = int(right["attention_mask"][0].sum())
    shift = right["input_ids"].shape[1] - short
    heads_right = right["dep_heads"][0, :short]
    heads_left = left["dep_heads"][0, shift:]
    assert torch.equal(heads_left, torch.where(heads_right >= 0, heads_right + shift, heads_right))
    assert torch.equal(left["input_ids"][0, shift:], right["input_ids"][0, :short])


def test_truncation_marks_heads_to_cut_words_unsupervised():
    featurizer = SyntaxFeaturizer(byte_level_bpe(), parser=ENGLISH_PARSER, max_length=5)
    out = featurizer("The committee approved the new budget yesterday.")
    assert len(out["input_ids"]) == 5 and all(h == IGNORE_INDEX or 0 <= h < 5 for h in out["dep_heads"])
    assert featurizer.stats.truncated_words > 0 and featurizer.stats.words_without_subwords == 0
    both_sides = SyntaxFeaturizer(byte_level_bpe(), parser=ENGLISH_PARSER, target_parser=ENGLISH_PARSER,
                                  max_length=64, max_target_length=3)
    out = both_sides("Dogs bark.", text_target="the dogs bark loudly at night .")
    assert len(out["labels"]) == len(out["decoder_dep_heads"]) == 3 and len(out["input_ids"]) < 64
    assert all(h == IGNORE_INDEX or 0 <= h < 3 for h in out["decoder_dep_heads"])


def test_a_tokenizer_that_cuts_at_the_start_is_refused():
    """truncation_side='left' kept the sentence's end, but the features were cut as if its start was kept: every
    kept subword lost its head and the words were counted as partly truncated."""
    tree = WordTree.from_words("the big dog saw a small cat in the garden".split(),
                               heads=[3, 3, 4, 0, 7, 7, 4, 10, 10, 4])
    left_cutting = copy.deepcopy(byte_level_bpe())  # the shared one stays as it is
    left_cutting.truncation_side = "left"
    for featurizer in (SyntaxFeaturizer(left_cutting, features=("dep_heads",), max_length=6),
                       SyntaxFeaturizer(byte_level_bpe(), target_tokenizer=left_cutting, max_target_length=6)):
        with pytest.raises(ValueError, match="truncation_side='left'.*set tokenizer.truncation_side = 'right'"):
            featurizer(trees=[tree], target_trees=[tree])
    uncut = SyntaxFeaturizer(left_cutting, features=("dep_heads",))(trees=[tree])  # no limit: nothing is cut
    assert IGNORE_INDEX not in uncut["dep_heads"][:-1]


def test_a_pair_that_cannot_be_cut_on_the_chosen_side_is_refused_in_words():
    """The tokenizer's own error was a bare Exception ('Truncation error: Sequence to truncate too short ...')."""
    short = WordTree.from_words(["Dogs", "bark"], heads=[2, 0])
    long = WordTree.from_words("the big dog saw a small cat in the garden".split(),
                               heads=[3, 3, 4, 0, 7, 7, 4, 10, 10, 4])
    only_first = SyntaxFeaturizer(byte_level_bpe(), features=("dep_heads",), max_length=8, truncation="only_first")
    with pytest.raises(ValueError, match="truncation='only_first' cuts only one text of a pair.*'longest_first'"):
        only_first(trees=[short], pair_trees=[long])
    assert len(only_first(trees=[long], pair_trees=[short])["input_ids"][0]) == 8


@pytest.mark.parametrize("last_word", ["\x00", "\u200b"])
def test_a_last_word_without_subwords_is_not_called_truncated(last_word):
    """WordPiece drops a control or zero-width character the parser kept as the last word (here the root): uncut, the
    sequence lost a word, which strict alignment refuses; counted as truncated, it passed unseen."""
    text = f"Hello world {last_word}"
    lenient = SyntaxFeaturizer(minilm_wordpiece(), parser=ENGLISH_PARSER)
    lenient(text)
    assert (lenient.stats.words_without_subwords, lenient.stats.truncated_words) == (1, 0)
    with pytest.raises(AlignmentError, match="'words_without_subwords': 1"):
        SyntaxFeaturizer(minilm_wordpiece(), parser=ENGLISH_PARSER, strict=True)(text)
    cut = SyntaxFeaturizer(minilm_wordpiece(), parser=ENGLISH_PARSER, max_length=3)
    cut(text)
    assert (cut.stats.words_without_subwords, cut.stats.truncated_words) == (0, 2)


def test_a_pair_counts_words_as_truncated_only_in_the_text_that_was_cut():
    """Cutting the first text of a pair made a word lost in the second (uncut) one count as truncated too, so strict
    alignment passed and the count of words without subwords stayed 0."""
    long = WordTree.from_words("the birds fly south every winter and come back in spring".split(),
                               heads=[2, 3, 0, 3, 6, 3, 8, 3, 8, 11, 8])
    zero_width_last = WordTree.from_words(["Hello", "world", "\u200b"], heads=[2, 0, 2])  # WordPiece drops "\u200b"
    lenient = SyntaxFeaturizer(minilm_wordpiece(), max_length=12)
    lenient(trees=[long], pair_trees=[zero_width_last])
    assert (lenient.stats.truncated_words, lenient.stats.words_without_subwords) == (4, 1)
    for length in (None, 12):
        strict = SyntaxFeaturizer(minilm_wordpiece(), max_length=length, strict=True)
        with pytest.raises(AlignmentError, match="'words_without_subwords': 1"):
            strict(trees=[long], pair_trees=[zero_width_last])


def test_strict_mode_raises_instead_of_applying_a_rule():
    featurizer = SyntaxFeaturizer(metaspace_bpe(), parser=ENGLISH_PARSER, strict=True)
    featurizer("Birds fly south")
    with pytest.raises(AlignmentError, match="straddling_subwords"):
        featurizer("I don't know.")  # the parser splits "do" + "n't"; the piece "don" straddles both


def test_a_label_vocabulary_is_a_list_of_distinct_strings():
    """One string was split into letters ('duplicate labels [N]' for "NOUN"), and a None label was kept."""
    with pytest.raises(TypeError, match=r"LabelVocab 'x': labels='NOUN' is one string; give a list"):
        LabelVocab("x", "NOUN")
    with pytest.raises(TypeError, match=r"every label is a string; got \['A', None\]"):
        LabelVocab("x", ["A", None])
    with pytest.raises(ValueError, match=r"duplicate labels \['A'\]"):
        LabelVocab("x", ["A", "B", "A"])
    assert LabelVocab("x", ["A", "B"]).id_of("B") == LabelVocab("x", ("A", "B")).id_of("B")


def test_label_vocabularies_and_feature_errors():
    featurizer = SyntaxFeaturizer(byte_level_bpe(), parser=ENGLISH_PARSER, features=("pos", "case", "dep_heads"))
    assert featurizer.features == ("pos_ids", "case_ids", "dep_heads")
    assert featurizer.label_vocabularies == {"pos_ids": UPOS_VOCAB.to_dict(), "case_ids": CASE_VOCAB.to_dict()}
    text = "The dogs chase a cat."
    out = SyntaxFeaturizer(byte_level_bpe(), parser=ENGLISH_PARSER, features=("deprel",), return_word_ids=True)(text)
    tree = get_parser(ENGLISH_PARSER).parse(text)
    expected = [DEPREL_VOCAB.id_of(tree.deprels[word].lower()) for word in out["word_ids"][:-1]]
    assert out["deprel_ids"] == expected + [SPECIAL_ID] and DEPREL_VOCAB.id_of("root") in expected
    assert tree.deprels[4] == "dobj" and DEPREL_VOCAB.id_of("obj") in expected  # spaCy's ClearNLP name read as UD
    with pytest.raises(ValueError, match="unknown feature 'morph'"):
        SyntaxFeaturizer(byte_level_bpe(), features=("morph",))
    with pytest.raises(TypeError, match=r"features=None: give a feature name or a list of them from"):
        SyntaxFeaturizer(byte_level_bpe(), features=None)  # was "'NoneType' object is not iterable"
    with pytest.raises(TypeError, match="needs a fast tokenizer"):
        SyntaxFeaturizer(object())
    with pytest.raises(TypeError, match="needs the tokenizer whose subwords the features align to; got None"):
        SyntaxFeaturizer(None, parser=ENGLISH_PARSER)  # it failed at the first text: 'NoneType' is not callable
    for flag in ("pretokenized", "strict", "return_word_ids"):  # "false" was read as True
        with pytest.raises(TypeError, match=rf"{flag}='false': give True or False"):
            SyntaxFeaturizer(byte_level_bpe(), parser=ENGLISH_PARSER, **{flag: "false"})
    with pytest.raises(ValueError, match="has no parser"):
        SyntaxFeaturizer(byte_level_bpe())("some text")
    with pytest.raises(ValueError, match="needs `text`"):
        featurizer()
    with pytest.raises(ValueError, match="got an empty batch: pass at least one text"):
        featurizer([])
    with pytest.raises(TypeError, match="expected a string or a list of word strings"):
        featurizer([3])
    with pytest.raises(TypeError, match="not WordTrees"):
        featurizer(trees=["not a tree"])
    with pytest.raises(ValueError, match="return_tensors"):
        featurizer("x", return_tensors="np")
    # a limit below the special tokens was ignored by the tokenizer (the text went uncut), a negative one overflowed
    specials = byte_level_bpe().num_special_tokens_to_add()
    for length in (specials, -5, 2.5):
        with pytest.raises(ValueError, match=rf"max_length={length!r}: give a whole number of tokens >= {specials + 1}"):
            SyntaxFeaturizer(byte_level_bpe(), parser=ENGLISH_PARSER, max_length=length)
    with pytest.raises(ValueError, match=r"truncation='yes': give one of \(None, True, False, 'longest_first'"):
        SyntaxFeaturizer(byte_level_bpe(), parser=ENGLISH_PARSER, truncation="yes")  # failed at the first call


def test_given_trees_skip_the_parser():
    tree = WordTree.from_words(["Dogs", "bark"], heads=[2, 0], upos=["NOUN", "VERB"])
    out = SyntaxFeaturizer(byte_level_bpe(), return_word_ids=True)(trees=tree)
    assert word_heads_from_subword_heads(out["dep_heads"], out["word_ids"]) == [2, 0]


def test_a_given_tree_without_spans_is_located_in_its_text():
    """A tree given with a text but no spans lost every feature silently: no subword found its word."""
    featurizer = SyntaxFeaturizer(metaspace_bpe(), return_word_ids=True)
    words, heads, upos = ["Hello", "world"], [2, 0], ["INTJ", "NOUN"]
    without_spans = featurizer(trees=WordTree(words=words, heads=heads, upos=upos, text="Hello world"))
    assert without_spans == featurizer(trees=WordTree.from_words(words, heads=heads, upos=upos))
    assert word_heads_from_subword_heads(without_spans["dep_heads"], without_spans["word_ids"]) == heads
    mismatched = WordTree(words=words, heads=heads, text="Hello there")
    with pytest.raises(TreeError, match=r"text tree 1 has no spans, and its words could not be located in its text: "
                                        r"word 2 'world' does not match"):
        featurizer(trees=[WordTree.from_words(words, heads=heads), mismatched])


def test_source_trees_refuses_a_single_string():
    """A string given to source_trees was parsed character by character, one tree per letter."""
    featurizer = SyntaxFeaturizer(metaspace_bpe(), parser=ENGLISH_PARSER)
    with pytest.raises(TypeError, match=r"source_trees takes a list of texts; got the string 'Hi there'\. Use "
                                        r"source_tree\(text\) for one text"):
        featurizer.source_trees("Hi there")
    assert featurizer.source_trees(["Hi there"]) == [featurizer.source_tree("Hi there")]


def test_a_pair_needs_room_for_a_token_of_each_text():
    """max_length=3 was accepted for a pair and gave [CLS] [SEP] [SEP]: both texts were cut away silently."""
    first = WordTree.from_words(["Birds", "fly", "south", "today"], heads=[2, 0, 2, 2])
    second = WordTree.from_words(["Fish", "swim"], heads=[2, 0])
    for length in (3, 4):  # at 4 the first text was emptied
        with pytest.raises(ValueError, match=rf"max_length={length} leaves no room for both texts of a pair: give "
                                             rf"max_length >= 5"):
            SyntaxFeaturizer(minilm_wordpiece(), max_length=length)(trees=[first], pair_trees=[second])
    out = SyntaxFeaturizer(minilm_wordpiece(), max_length=5)(trees=[first], pair_trees=[second])
    assert minilm_wordpiece().convert_ids_to_tokens(out["input_ids"][0]) == ["[CLS]", "birds", "[SEP]", "fish", "[SEP]"]
