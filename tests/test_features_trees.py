"""WordTree validation and derived values, multiword-token collapsing, label vocabularies."""

import json

import pytest

from hf_syntax.labels import (
    CASE_VOCAB, DEPREL_VOCAB, RESERVED_LABELS, SPECIAL_ID, UNKNOWN_ID, UPOS_TAGS, UPOS_VOCAB, LabelVocab, deprel_base,
    word_case,
)
from hf_syntax.trees import MultiwordToken, TreeError, WordTree, locate_words


def test_depths():
    # "the cat sat ." : the->cat, cat->sat, sat=root, .->sat
    tree = WordTree.from_words(["the", "cat", "sat", "."], heads=[2, 3, 0, 3])
    assert tree.depths == (2, 1, 0, 1)


def test_from_words_spans_point_into_joined_text():
    tree = WordTree.from_words(["I", "'m", "here"], heads=[2, 0, 2])
    assert tree.text == "I 'm here"
    assert [tree.text[start:end] for start, end in tree.spans] == ["I", "'m", "here"]


def test_forest_keeps_every_sentence_root():
    tree = WordTree.from_words(["Hi", ".", "Go", "!"], heads=[0, 1, 0, 3], sentence_starts=[0, 2])
    assert tree.roots == [0, 2]
    assert [list(sentence) for sentence in tree.sentences()] == [[0, 1], [2, 3]]
    assert tree.depths == (0, 1, 0, 1)


@pytest.mark.parametrize(
    ("heads", "message"),
    [
        ([0, 3, 2], "cycle"),
        ([2, 5, 0], "heads must be integers in 0..3"),
        ([2, 3, 1], "no root"),
        ([1, 0, 2], "its own head"),
        ([-1, 0, 2], "heads must be integers"),
    ],
)
def test_bad_heads_are_rejected(heads, message):
    with pytest.raises(TreeError, match=message):
        WordTree.from_words(["a", "b", "c"], heads=heads)


def test_cycle_error_names_the_words_in_it():
    with pytest.raises(TreeError, match=r"words 2 -> 3 -> 2"):
        WordTree.from_words(["a", "b", "c"], heads=[0, 3, 2])


def test_head_in_another_sentence_is_rejected():
    with pytest.raises(TreeError, match="another sentence"):
        WordTree.from_words(["a", "b", "c", "d"], heads=[0, 3, 0, 3], sentence_starts=[0, 2])


def test_length_and_word_and_span_validation():
    with pytest.raises(TreeError, match="3 words but 2 heads"):
        WordTree(words=["a", "b", "c"], heads=[0, 1])
    with pytest.raises(TreeError, match="non-blank"):
        WordTree(words=["a", " "], heads=[0, 1])
    with pytest.raises(TreeError, match="overlaps"):
        WordTree(words=["ab", "c"], heads=[0, 1], spans=[(0, 2), (1, 3)], text="abc")
    with pytest.raises(TreeError, match="inside the text"):
        WordTree(words=["ab"], heads=[0], spans=[(0, 9)], text="ab")
    with pytest.raises(TreeError, match="sentence_starts"):
        WordTree.from_words(["a", "b"], heads=[0, 1], sentence_starts=[1])
    # the wrong types were a TypeError deep inside (len() of None, unpacking an int)
    with pytest.raises(TreeError, match=r"WordTree heads=None: give a list with one entry per word"):
        WordTree(words=["a", "b"], heads=None)
    with pytest.raises(TreeError, match=r"WordTree words='ab': give a list"):
        WordTree(words="ab", heads=[0, 1])
    with pytest.raises(TreeError, match=r"give one \(start, end\) pair per word"):
        WordTree(words=["a", "b"], heads=[0, 1], spans=[0, 1])


def test_empty_tree_is_allowed():
    tree = WordTree(words=[], heads=[], text="   ", spans=[])
    assert len(tree) == 0 and tree.depths == () and tree.sentences() == []


def test_collapse_multiword_token_takes_the_head_of_the_member_pointing_outside():
    # French "du chat" parsed as "de le chat": de->chat (case), le->chat (det), chat->root.
    text = "Le bruit du chat"
    tree = WordTree(
        words=["Le", "bruit", "de", "le", "chat"],
        heads=[2, 0, 5, 5, 2],
        upos=["DET", "NOUN", "ADP", "DET", "NOUN"],
        deprels=["det", "root", "case", "det", "nmod"],
        spans=[(0, 2), (3, 8), (9, 11), (9, 11), (12, 16)],
        text=text,
        multiword_tokens=[MultiwordToken(2, 3, "du")],
    )
    surface = tree.collapse_multiword_tokens()
    assert surface.words == ("Le", "bruit", "du", "chat")
    assert surface.heads == (2, 0, 4, 2)
    assert surface.upos[2] == "ADP" and surface.deprels[2] == "case"
    assert surface.spans[2] == (9, 11) and surface.multiword_tokens == ()


def test_collapse_redirects_heads_that_point_into_the_token():
    # English "don't go": do (aux of go), n't (advmod of go) as one token; "go" is the root.
    tree = WordTree(
        words=["do", "n't", "go", "there"], heads=[3, 3, 0, 3],
        spans=[(0, 5), (0, 5), (6, 8), (9, 14)], text="don't go there",
        multiword_tokens=[MultiwordToken(0, 1, "don't")],
    )
    assert tree.collapse_multiword_tokens().heads == (2, 0, 2)
    # The token containing the root becomes the root, and words attached to its members attach to it.
    tree = WordTree(
        words=["a", "b", "c"], heads=[0, 1, 2], spans=[(0, 2), (0, 2), (3, 4)], text="ab c",
        multiword_tokens=[MultiwordToken(0, 1, "ab")],
    )
    assert tree.collapse_multiword_tokens().heads == (0, 1)


def test_collapse_anchors_the_token_on_its_root_member_even_when_another_member_points_outside():
    """x -> z, y -> root, z -> y with "xy" one token: the token took x's head (the first member pointing outside)
    and became a cycle xy -> z -> xy; the first member whose head is outside every member's subtree (here the
    root) decides."""
    tree = WordTree(
        words=["x", "y", "z"], heads=[3, 0, 2], upos=["ADP", "PRON", "NOUN"], deprels=["case", "root", "nmod"],
        spans=[(0, 2), (0, 2), (3, 4)], text="xy z", multiword_tokens=[MultiwordToken(0, 1, "xy")],
    )
    surface = tree.collapse_multiword_tokens()
    assert surface.words == ("xy", "z") and surface.heads == (0, 1)
    assert surface.upos == ("PRON", "NOUN") and surface.deprels == ("root", "nmod")


def test_collapse_keeps_the_first_member_pointing_outside_where_no_cycle_threatens():
    """French "au" = à + le in "grâce au courage": à -> grâce (fixed), le -> courage (det); "au" stays fixed under
    grâce, as before the cycle fix (anchoring on the member highest in the tree changed 11 tokens of the UD dev sets)."""
    tree = WordTree(
        words=["grâce", "à", "le", "courage"], heads=[4, 1, 4, 0], upos=["ADP", "ADP", "DET", "NOUN"],
        deprels=["case", "fixed", "det", "root"], spans=[(0, 5), (6, 8), (6, 8), (9, 16)], text="grâce au courage",
        multiword_tokens=[MultiwordToken(1, 2, "au")],
    )
    surface = tree.collapse_multiword_tokens()
    assert surface.words == ("grâce", "au", "courage") and surface.heads == (3, 1, 0)
    assert surface.deprels == ("case", "fixed", "root")


def test_locate_words_reports_mismatch():
    assert locate_words("a  b\tc", ["a", "b", "c"]) == [(0, 1), (3, 4), (5, 6)]
    with pytest.raises(TreeError, match="word 2 'x'"):
        locate_words("a b", ["a", "x"])


def test_label_vocab_ids_and_round_trip_through_json():
    assert UPOS_VOCAB.id_of("ADJ") == len(RESERVED_LABELS)
    assert UPOS_VOCAB.id_of("NOT_A_TAG") == UNKNOWN_ID and UPOS_VOCAB.id_of(None) == UNKNOWN_ID
    assert len(UPOS_VOCAB) == len(UPOS_TAGS) + 3 == 20
    assert UPOS_VOCAB.label_of(SPECIAL_ID) == "<special>"
    restored = LabelVocab.from_dict(json.loads(json.dumps(UPOS_VOCAB.to_dict())))
    assert restored == UPOS_VOCAB and hash(restored) == hash(UPOS_VOCAB)
    with pytest.raises(ValueError, match="from_dict expects"):
        LabelVocab.from_dict({"labels": ["A"]})
    with pytest.raises(ValueError, match="duplicate"):
        LabelVocab("x", ["A", "A"])
    with pytest.raises(ValueError, match="reserved"):
        LabelVocab("x", ["<pad>"])
    with pytest.raises(ValueError, match="outside"):
        UPOS_VOCAB.label_of(99)


@pytest.mark.parametrize(
    ("word", "case"),
    [("house", "lower"), ("House", "capitalized"), ("I", "capitalized"), ("NASA", "upper"),
     ("2024", "no_case"), ("東京", "no_case"), ("Élan", "capitalized"), ("é", "lower")],
)
def test_word_case(word, case):
    assert word_case(word) == case
    assert CASE_VOCAB.id_of(case) >= 3


def test_deprel_base():
    assert deprel_base("nsubj:pass") == "nsubj" and deprel_base("ROOT") == "root" and deprel_base(None) is None


def test_deprel_vocabulary_reads_older_and_clearnlp_names_as_ud():
    for other, ud in (("dobj", "obj"), ("nsubjpass", "nsubj"), ("relcl", "acl"), ("poss", "nmod"), ("prt", "compound")):
        assert DEPREL_VOCAB.id_of(other) == DEPREL_VOCAB.id_of(ud) >= 3
    for elsewhere_in_ud in ("prep", "pobj", "dative", "acomp"):  # UD attaches these words to another head
        assert DEPREL_VOCAB.id_of(elsewhere_in_ud) == UNKNOWN_ID
    assert LabelVocab.from_dict(DEPREL_VOCAB.to_dict()) == DEPREL_VOCAB
    # a model trained before the aliases carries a vocabulary that now means other ids: it must compare unequal
    assert LabelVocab.from_dict({"name": "deprel", "labels": list(DEPREL_VOCAB.labels)}) != DEPREL_VOCAB
    assert "aliases" not in UPOS_VOCAB.to_dict()  # configs of POS models are unchanged
    with pytest.raises(ValueError, match=r"aliases \['x->nope'\] must map a name outside the labels to one of them"):
        LabelVocab("t", ["a"], {"x": "nope"})
    with pytest.raises(TypeError, match="give a dict from other names to labels"):
        LabelVocab("t", ["a"], ["x"])


def test_upos_outside_the_universal_tags_is_refused():
    """PTB tags (DT, NN) were each read as the unknown tag, so the POS features learned nothing; read_conllu refused
    them, a WordTree built by hand did not."""
    with pytest.raises(TreeError, match=r"WordTree word 2 \('cat'\) has UPOS 'NN', which is not one of the 17 "
                                        r"Universal POS tags") as refused:
        WordTree.from_words(["the", "cat"], heads=[2, 0], upos=["DET", "NN"])
    assert refused.value.word == 1
    assert WordTree.from_words(["the", "cat"], heads=[2, 0], upos=[None, "NOUN"]).upos == (None, "NOUN")


def test_spacy_conj_from_ud_version_1_reads_as_cconj():
    spacy = pytest.importorskip("spacy")
    from spacy.tokens import Doc

    from hf_syntax.parsers import tree_from_spacy_doc

    doc = Doc(spacy.blank("en").vocab, words=["cats", "and", "dogs"], pos=["NOUN", "CONJ", "NOUN"],
              heads=[0, 2, 0], deps=["ROOT", "cc", "conj"])
    assert tree_from_spacy_doc(doc).upos == ("NOUN", "CCONJ", "NOUN")
