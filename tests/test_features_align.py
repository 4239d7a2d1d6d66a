"""Offset alignment rules, DBSA subword heads and their inversion, on synthetic offsets and real tokenizers."""

import pytest
import torch
from features_support import TREEBANKS, byte_level_bpe, metaspace_bpe, minilm_wordpiece, treebank, unigram

from hf_syntax.align import (
    IGNORE_INDEX, NO_WORD, AlignmentStats, subword_columns, word_heads_from_subword_heads, word_ids_from_offsets,
)
from hf_syntax.featurizer import SyntaxFeaturizer
from hf_syntax.labels import SPECIAL_ID, SUBWORD_TAG_VOCAB, UPOS_VOCAB
from hf_syntax.conllu import iter_conllu
from hf_syntax.trees import WordTree

B, I, E, O = (SUBWORD_TAG_VOCAB.id_of(tag) for tag in "BIEO")


def test_straddling_subword_goes_to_the_word_it_overlaps_most():
    stats = AlignmentStats()
    # words "ab" "cd" in "abcd"; subwords "abc" "d"
    word_ids = word_ids_from_offsets([(0, 2), (2, 4)], [(0, 3), (3, 4)], [True, True], "abcd", stats)
    assert word_ids == [0, 1]
    assert stats.straddling_subwords == 1 and stats.words_without_subwords == 0


def test_swallowed_word_makes_heads_pointing_to_it_unsupervised():
    tree = WordTree(words=["ab", "cd", "e"], heads=[0, 1, 2], spans=[(0, 2), (2, 4), (5, 6)], text="abcd e")
    stats = AlignmentStats()
    word_ids = word_ids_from_offsets(tree.spans, [(0, 4), (5, 6), (0, 0)], [True, True, False], tree.text, stats)
    assert word_ids == [0, 2, NO_WORD]  # a tie goes to the first word
    columns = subword_columns(tree, word_ids, ("dep_heads",), stats=stats)
    assert columns["dep_heads"] == [0, IGNORE_INDEX, IGNORE_INDEX]
    assert (stats.straddling_subwords, stats.words_without_subwords, stats.unsupervised_heads) == (1, 1, 1)
    assert word_heads_from_subword_heads(columns["dep_heads"], word_ids, 3) == [0, None, None]


def test_uncovered_and_whitespace_subwords_join_the_next_word():
    stats = AlignmentStats()
    # "a\u200bb c": the parser's words are "a", "b", "c"; subword 2 is the zero-width space, subword 4 a lone space.
    text = "a\u200bb c"
    spans = [(0, 1), (2, 3), (4, 5)]
    offsets = [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5)]
    assert word_ids_from_offsets(spans, offsets, [True] * 5, text, stats) == [0, 1, 1, 2, 2]
    assert (stats.uncovered_subwords, stats.whitespace_subwords) == (1, 1)
    # At the end of the text there is no next word: the last word takes it.
    assert word_ids_from_offsets([(0, 1)], [(0, 1), (1, 2)], [True, True], "a ") == [0, 0]
    # A blank text has no word at all: its subwords are counted and treated like special tokens.
    stats = AlignmentStats()
    assert word_ids_from_offsets([], [(0, 1)], [True], " ", stats) == [NO_WORD]
    assert stats.whitespace_subwords == 1


@pytest.mark.parametrize(("rule", "expected"), [("first", [1, 4, 3, 3, 0]), ("last", [1, 4, 3, 3, 1])])
def test_dbsa_subword_heads_and_inversion(rule, expected):
    # words: "un-believ-able"(head 2) "story"(root) "." (head 2) -> subwords [un believ able] [sto ry] [.]
    tree = WordTree(words=["unbelievable", "story", "."], heads=[2, 0, 2], upos=["ADJ", "NOUN", "PUNCT"],
                    spans=[(0, 12), (13, 18), (18, 19)], text="unbelievable story.")
    word_ids = [NO_WORD, 0, 0, 0, 1, 1, 2, NO_WORD]
    columns = subword_columns(tree, word_ids, ("dep_heads", "dep_depths", "pos_ids", "subword_tags"), head_rule=rule)
    heads = columns["dep_heads"]
    assert heads[0] == heads[-1] == IGNORE_INDEX
    assert heads[1:3] == [2, 3]  # non-final subwords point to the next subword of their word
    assert heads[3] == (4 if rule == "first" else 5)  # final subword -> first/last subword of the head word
    assert heads[4] == 5 and heads[5] == 5  # the root's final subword points to itself
    assert heads[6] == (4 if rule == "first" else 5)
    assert columns["dep_depths"] == [-1, 1, 1, 1, 0, 0, 1, -1]
    assert columns["pos_ids"][0] == SPECIAL_ID and columns["pos_ids"][1] == UPOS_VOCAB.id_of("ADJ")
    assert columns["subword_tags"] == [SPECIAL_ID, B, I, E, B, E, O, SPECIAL_ID]
    assert word_heads_from_subword_heads(heads, word_ids) == [2, 0, 2]
    # as the featurizer returns them with return_tensors="pt" (every head came out None: tensors as dict keys)
    assert word_heads_from_subword_heads(torch.tensor(heads), torch.tensor(word_ids)) == [2, 0, 2]
    with pytest.raises(ValueError, match=r"head 9 at subword 1 is outside 0 \.\. 7: heads are positions in this "
                                         r"same sequence \(-100 where unknown\)"):  # was an IndexError (9), or
        word_heads_from_subword_heads([heads[0], 9, *heads[2:]], word_ids)  # read from the end (-2)
    with pytest.raises(ValueError, match=r"head -2 at subword 1 is outside"):
        word_heads_from_subword_heads([heads[0], -2, *heads[2:]], word_ids)
    with pytest.raises(ValueError, match="head_rule"):
        subword_columns(tree, word_ids, ("dep_heads",), head_rule="middle")
    with pytest.raises(ValueError, match="same sequence"):
        word_heads_from_subword_heads(heads[:-1], word_ids)


def test_word_split_into_ten_or_more_pieces():
    tokenizer = byte_level_bpe()
    word = "Pneumonoultramicroscopicsilicovolcanoconiosis"
    tree = WordTree.from_words([word, "kills", "."], heads=[2, 0, 2], upos=["NOUN", "VERB", "PUNCT"])
    featurizer = SyntaxFeaturizer(tokenizer, return_word_ids=True)
    out = featurizer(trees=tree)
    pieces = [position for position, word_id in enumerate(out["word_ids"]) if word_id == 0]
    assert len(pieces) >= 10
    assert [out["dep_heads"][p] for p in pieces[:-1]] == pieces[1:]
    first_of_kills = out["word_ids"].index(1)
    assert out["dep_heads"][pieces[-1]] == first_of_kills
    assert [out["subword_tags"][p] for p in pieces] == [B] + [I] * (len(pieces) - 2) + [E]
    assert set(out["pos_ids"][p] for p in pieces) == {UPOS_VOCAB.id_of("NOUN")}


@pytest.mark.parametrize("rule", ["first", "last"])
def test_a_word_cut_inside_by_truncation_has_no_final_subword(rule):
    """The last kept piece of a word cut by truncation was tagged E and took the word's head (with head_rule="last"
    the word's dependents pointed at it too), as if the word ended there; no statistic counted the word."""
    # "dogs unbelievable": subwords [dogs] [un believ], the tokenizer cut "able" (from character 13) and kept </s>
    tree = WordTree.from_words(["dogs", "unbelievable"], heads=[2, 0])
    word_ids = [0, 1, 1, NO_WORD]
    stats = AlignmentStats()
    columns = subword_columns(tree, word_ids, ("dep_heads", "subword_tags"), rule, stats, content_end=13)
    assert columns["subword_tags"] == [O, B, I, SPECIAL_ID]  # "believ" is not the word's end
    # "believ" points to the cut "able"; "dogs" points to the first subword of its head, or to its cut last one
    assert columns["dep_heads"] == [1 if rule == "first" else IGNORE_INDEX, 2, IGNORE_INDEX, IGNORE_INDEX]
    assert (stats.partially_truncated_words, stats.truncated_words, stats.words_without_subwords) == (1, 0, 0)
    assert stats.unsupervised_heads == (1 if rule == "last" else 0)
    assert word_heads_from_subword_heads(columns["dep_heads"], word_ids, 2) == [2 if rule == "first" else None, None]


def test_truncation_inside_a_word_keeps_the_uncut_tags_and_heads_of_the_kept_subwords():
    """The featurizer tagged the last kept piece of a cut word E and gave it the word's head."""
    tree = WordTree.from_words(["dogs", "Pneumonoultramicroscopicsilicovolcanoconiosis"], heads=[2, 0])
    full = SyntaxFeaturizer(byte_level_bpe())(trees=tree)
    featurizer = SyntaxFeaturizer(byte_level_bpe(), max_length=5)  # "dogs", the long word's first pieces, </s>
    cut = featurizer(trees=tree)
    assert cut["subword_tags"] == full["subword_tags"][:4] + [SPECIAL_ID] and cut["subword_tags"][3] == I
    assert cut["dep_heads"] == full["dep_heads"][:3] + [IGNORE_INDEX, IGNORE_INDEX]
    assert (featurizer.stats.partially_truncated_words, featurizer.stats.truncated_words) == (1, 0)

def round_trip(tokenizer, trees):
    """How many trees come back exactly through subword heads; also the alignment statistics."""
    featurizer = SyntaxFeaturizer(tokenizer, features=("dep_heads",), return_word_ids=True)
    exact = 0
    for tree in trees:
        out = featurizer(trees=tree)
        back = word_heads_from_subword_heads(out["dep_heads"], out["word_ids"], len(tree))
        exact += back == list(tree.heads)
    return exact, featurizer.stats


@pytest.mark.parametrize("lang", sorted(TREEBANKS))
@pytest.mark.parametrize("tokenizer_name", ["byte_level_bpe", "metaspace_bpe", "unigram", "minilm_wordpiece"])
def test_gold_trees_round_trip_exactly_from_pre_split_words(lang, tokenizer_name):
    tokenizer = {"byte_level_bpe": byte_level_bpe, "metaspace_bpe": metaspace_bpe, "unigram": unigram,
                 "minilm_wordpiece": minilm_wordpiece}[tokenizer_name]()
    sentences = [sentence for sentence, _ in zip(iter_conllu(treebank(lang)), range(200))]
    # Multiword tokens are one surface token: the tokenizer sees the surface form (collapse rule in trees.py).
    surface = [sentence.tree.collapse_multiword_tokens() for sentence in sentences]
    trees = [WordTree.from_words(tree.words, tree.heads, tree.upos) for tree in surface]
    exact, stats = round_trip(tokenizer, trees)
    assert exact == len(trees) == 200
    assert stats.straddling_subwords == stats.words_without_subwords == stats.unsupervised_heads == 0


@pytest.mark.parametrize("tokenizer_name", ["byte_level_bpe", "minilm_wordpiece"])
def test_raw_english_text_round_trips_for_sentences_without_multiword_tokens(tokenizer_name):
    tokenizer = byte_level_bpe() if tokenizer_name == "byte_level_bpe" else minilm_wordpiece()
    sentences = [sentence for sentence, _ in zip(iter_conllu(treebank("en")), range(200))]
    plain = [sentence.tree for sentence in sentences if not sentence.tree.multiword_tokens]
    exact, stats = round_trip(tokenizer, plain)  # each tree's spans point into its raw '# text'
    assert exact / len(plain) >= 0.95
    # Every failure is explained by a counted rule, never a silent shift.
    assert len(plain) - exact <= stats.straddling_subwords


def test_pairs_align_each_segment_to_its_own_tree():
    tokenizer = minilm_wordpiece()
    first = WordTree.from_words(["The", "cat", "sleeps"], heads=[2, 3, 0], upos=["DET", "NOUN", "VERB"])
    second = WordTree.from_words(["Dogs", "bark", "loudly"], heads=[2, 0, 2], upos=["NOUN", "VERB", "ADV"])
    featurizer = SyntaxFeaturizer(tokenizer, return_word_ids=True)
    pair = featurizer(trees=first, pair_trees=second)
    alone = featurizer(trees=second)
    assert pair["token_type_ids"].count(1) == len(alone["input_ids"]) - 1  # [CLS] is not repeated
    offset = len(pair["input_ids"]) - len(alone["input_ids"]) + 1
    second_positions = range(offset, len(pair["input_ids"]) - 1)
    assert [pair["pos_ids"][p] for p in second_positions] == alone["pos_ids"][1:-1]
    assert [pair["dep_heads"][p] - offset for p in second_positions] == [h - 1 for h in alone["dep_heads"][1:-1]]
    first_heads = pair["dep_heads"][1:offset - 1]
    assert all(1 <= head < offset - 1 for head in first_heads)
    assert word_heads_from_subword_heads(pair["dep_heads"][:offset], pair["word_ids"][:offset]) == [2, 3, 0]


def test_every_parsed_column_of_the_table_has_a_producer():
    """The column table decides what the aligner makes: a parsed column without a producer (or a producer for a
    column the table does not list) would be silently missing from featurized data."""
    from hf_syntax.align import COLUMN_PRODUCERS
    from hf_syntax.columns import DEFAULT_FEATURES, OPTIONAL_FEATURES

    assert set(COLUMN_PRODUCERS) == {*DEFAULT_FEATURES, *OPTIONAL_FEATURES}
