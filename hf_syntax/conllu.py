"""CoNLL-U files (plain or ``.gz``) and ``WordTree``s: the gold trees of Universal Dependencies treebanks, and
parses made on one machine for use on another.

Every format or tree error names the file and the line of the word at fault. The ``conllu:<file>`` parser backend
(``parsers.ConlluParser``) serves these trees by sentence text; evaluation reads them directly. ``conllu_block``
writes a tree so that reading it back gives the same tree (``hf-syntax parse`` writes a file of them), so a model
can translate on a machine that has no parser with the trees its parser made elsewhere.
"""

from __future__ import annotations

import gzip
import os
import zlib

from .trees import MultiwordToken, TreeError, WordTree, locate_words


SENTENCE_STARTS = "sentence_starts"
"""Comment listing the first word id of every sentence of one block that holds several (a parser split one input
line into sentences). CoNLL-U has no such field; with it, each of those sentences may have its own root."""


class ConlluSentence:
    """One sentence of a CoNLL-U file: its tree plus where it came from (for error messages and statistics)."""

    __slots__ = ("tree", "sent_id", "line", "empty_nodes")

    def __init__(self, tree: WordTree, sent_id: str | None, line: int, empty_nodes: int):
        self.tree, self.sent_id, self.line, self.empty_nodes = tree, sent_id, line, empty_nodes


def _open_bytes(path):
    if not isinstance(path, (str, os.PathLike)):  # None was "expected str, bytes or os.PathLike object"
        raise TypeError(f"give the CoNLL-U file's path (a str or pathlib.Path); got {path!r}.")
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"CoNLL-U file {path!r} does not exist.")
    if os.path.isdir(path):
        raise TreeError(f"{path} is a folder; give the CoNLL-U file (plain or .gz), e.g. one of its *.conllu files")
    return gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")


def _decoded(path, number: int, raw: bytes) -> str:
    """One line as text; CoNLL-U is UTF-8, so other bytes are an error naming the file and line."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise TreeError(f"{path}:{number}: not UTF-8 text (byte 0x{raw[error.start]:02x} at column "
                        f"{error.start + 1}); CoNLL-U files are UTF-8: convert the file, e.g. with iconv -t utf-8."
                        ) from None


def iter_conllu(path, allow_multiple_roots: bool = False):
    """Yield ``ConlluSentence``s from a CoNLL-U file (plain or .gz).

    Multiword-token lines (``3-4``) become ``MultiwordToken``s sharing one span; empty nodes (``8.1``, enhanced
    graphs only) are skipped and counted. A byte-order mark at the start and CRLF line ends are read as plain UTF-8
    text. Every format or tree error names the file and line. UD allows one root
    per sentence, so a second one is an error (a file that is not valid UD); ``allow_multiple_roots=True`` reads
    such sentences as forests instead.
    """
    with _open_bytes(path) as handle:
        block, first_line, blank_line = [], None, None
        for number, raw in enumerate(_lines_of(path, handle), start=1):
            line = _decoded(path, number, raw).rstrip("\n").rstrip("\r")
            if number == 1:
                line = line.removeprefix("\ufeff")  # the byte-order mark some editors write first
            elif line.startswith("\ufeff"):
                raise TreeError(f"{path}:{number}: the line starts with a byte-order mark (U+FEFF), which belongs only "
                                f"at the start of a file (were files joined with cat?); remove it, e.g. with "
                                f"sed -i '1!s/^\\xEF\\xBB\\xBF//' {path}")
            if line.strip():
                if blank_line is not None:
                    _check_blank_line_ends_sentence(path, blank_line, block, number, line)
                    yield _sentence_from_block(path, first_line, block, allow_multiple_roots)
                    block, first_line, blank_line = [], None, None
                if first_line is None:
                    first_line = number
                block.append((number, line))
            elif block and blank_line is None:
                blank_line = (number, line)
        if block:
            yield _sentence_from_block(path, first_line, block, allow_multiple_roots)


def _check_blank_line_ends_sentence(path, blank_line, block, number, line):
    """A blank line ends a sentence, so one inside a sentence splits it in two, and the first half's heads then read
    as out of range: name the blank line instead when the word after it goes on counting from the block before."""
    previous_ids = [text.split("\t", 1)[0] for _, text in block if not text.startswith("#")]
    if not previous_ids:
        return
    last_word = previous_ids[-1].split(".")[0].split("-")[-1]  # "5", "5.1" (an empty node) or "4-5": word 5
    next_id = line.split("\t", 1)[0]
    next_word, empty_node, _ = next_id.split("-")[0].partition(".")  # "6", "6-7", or the empty node "5.1"
    if not (_is_number(last_word) and _is_number(next_word)):
        return
    if int(next_word) == int(last_word) + (0 if empty_node else 1):
        blank_number, blank_text = blank_line
        spaces = " (it holds only spaces)" if blank_text else ""
        raise TreeError(f"{path}:{blank_number}: a blank line inside a sentence{spaces}: word {next_id} on line "
                        f"{number} goes on from word {previous_ids[-1]} before it, but a blank line ends a sentence; "
                        f"remove the blank line.")


def _lines_of(path, handle):
    """The file's lines as bytes; a damaged ``.gz`` archive is an error naming the file (gzip's own names none)."""
    try:
        yield from handle
    except (gzip.BadGzipFile, EOFError, zlib.error) as error:
        raise TreeError(f"{path}: not a readable gzip archive ({error}); download it again, or give the plain "
                        f".conllu file") from None


def read_conllu(path, allow_multiple_roots: bool = False) -> list[WordTree]:
    """All trees of a CoNLL-U file (see ``iter_conllu``)."""
    return [sentence.tree for sentence in iter_conllu(path, allow_multiple_roots)]


def conllu_block(tree: WordTree, sent_id: str | None = None) -> str:
    """One tree as a CoNLL-U block (ending in a blank line) that ``read_conllu`` reads back as the same tree:
    ``# text`` and ``SpaceAfter=No`` keep the spans, multiword tokens get their range lines, and a tree of several
    sentences lists where they start (``# sentence_starts``). LEMMA, XPOS, FEATS and DEPS are not kept (``_``)."""
    text = tree.text if tree.text is not None else " ".join(tree.words)
    if "\n" in text or "\r" in text:
        raise TreeError(f"a CoNLL-U '# text' is one line; this tree's text has a line break: {text[:40]!r}.")
    for form in (*tree.words, *(token.form for token in tree.multiword_tokens)):
        if {"\t", "\n", "\r"} & set(form):
            raise TreeError(f"the word {form!r} holds a tab or line break, which a CoNLL-U column cannot hold; "
                            f"split the word there or remove the character.")
    lines = [f"# sent_id = {sent_id}"] if sent_id is not None else []
    lines.append(f"# text = {text}")
    if len(tree.sentence_starts) > 1:
        lines.append(f"# {SENTENCE_STARTS} = " + " ".join(str(start + 1) for start in tree.sentence_starts))
    spans = tree.spans or locate_words(text, tree.words)
    token_at = {token.first: token for token in tree.multiword_tokens}
    word = 0
    while word < len(tree.words):
        token = token_at.get(word)
        last = token.last if token else word
        next_start = spans[last + 1][0] if last + 1 < len(tree.words) else None
        misc = "SpaceAfter=No" if next_start == spans[last][1] else "_"
        if token:
            lines.append(f"{word + 1}-{last + 1}\t{token.form}\t_\t_\t_\t_\t_\t_\t_\t{misc}")
        for member in range(word, last + 1):
            upos = (tree.upos[member] if tree.upos else None) or "_"
            deprel = (tree.deprels[member] if tree.deprels else None) or "_"
            lines.append(f"{member + 1}\t{tree.words[member]}\t_\t{upos}\t_\t_\t{tree.heads[member]}\t{deprel}\t_\t"
                         f"{'_' if token else misc}")
        word = last + 1
    return "\n".join(lines) + "\n\n"


def _is_number(text: str) -> bool:
    """Whether a CoNLL-U id or head is a whole number in ASCII digits: ``str.isdigit`` also accepts superscripts
    ("¹") and other digits that ``int`` then refuses."""
    return text.isascii() and text.isdigit()


def _sentence_from_block(path, first_line, block, allow_multiple_roots=False) -> ConlluSentence:
    text, sent_id, empty_nodes, sentence_starts = None, None, 0, (0,)
    words, heads, upos, deprels, word_lines, multiword, surface = [], [], [], [], [], [], []
    pending_token = None
    for number, line in block:
        where = f"{path}:{number}"
        if line.startswith("#"):
            key, _, value = line[1:].partition("=")
            if key.strip() == "text":
                text = value.strip()
            elif key.strip() == "sent_id":
                sent_id = value.strip()
            elif key.strip() == SENTENCE_STARTS:
                sentence_starts = _sentence_starts(f"{path}:{number}", value)
            continue
        columns = line.split("\t")
        if len(columns) != 10:
            line_ends = " (the lines end in CR only: convert them to LF, e.g. with tr '\\r' '\\n')" if "\r" in line else ""
            raise TreeError(f"{where}: expected 10 tab-separated CoNLL-U columns, found {len(columns)}{line_ends}: "
                            f"{line[:80]!r}")
        word_id, form, _, tag, _, _, head, deprel, _, misc = columns
        if "." in word_id:
            major, _, minor = word_id.partition(".")
            if not (_is_number(major) and _is_number(minor) and int(major) == len(words) and int(minor) > 0):
                raise TreeError(f"{where}: empty node id {word_id!r} should be {len(words)}.N (the word before it, a "
                                f"dot, a number from 1).")
            empty_nodes += 1
            continue
        if "-" in word_id:
            first, _, last = word_id.partition("-")
            if not (_is_number(first) and _is_number(last) and int(first) == len(words) + 1 and int(last) > int(first)):
                raise TreeError(f"{where}: multiword token range {word_id!r} does not start at the next word.")
            if pending_token:
                raise TreeError(f"{where}: multiword token range {word_id!r} overlaps the range "
                                f"{pending_token[0] + 1}-{pending_token[1] + 1} before it; each word belongs to at "
                                f"most one multiword token: remove one of the two lines.")
            pending_token = (int(first) - 1, int(last) - 1, form, misc)
            surface.append((form, misc, len(words)))
            continue
        if not _is_number(word_id) or int(word_id) != len(words) + 1:
            raise TreeError(f"{where}: word id {word_id!r} should be {len(words) + 1} (ids must count up from 1).")
        if not _is_number(head):
            raise TreeError(f"{where}: HEAD {head!r} of word {word_id} ({form!r}) is not a non-negative integer.")
        if not form.strip():
            raise TreeError(f"{where}: FORM of word {word_id} is empty; write the word there (CoNLL-U has no empty "
                            f"words).")
        words.append(form)
        heads.append(int(head))
        upos.append(None if tag == "_" else tag)
        deprels.append(None if deprel == "_" else deprel)
        word_lines.append(number)
        if pending_token and pending_token[0] <= len(words) - 1 <= pending_token[1]:
            if len(words) - 1 == pending_token[1]:
                multiword.append(MultiwordToken(pending_token[0], pending_token[1], pending_token[2]))
                pending_token = None
        else:
            surface.append((form, misc, len(words) - 1))
    where = f"{path}:{first_line}"
    if pending_token:
        raise TreeError(f"{where}: multiword token {pending_token[2]!r} covers words beyond the sentence.")
    if not words:
        lines = [line for _, line in block]
        if any("\r" in line for line in lines):
            raise TreeError(f"{where}: no word lines, and the lines end in CR only (old Mac line ends); convert "
                            f"them to LF, e.g. with tr '\\r' '\\n'")
        raise TreeError(f"{where}: a block of comment lines with no word lines; remove it or join it to the "
                        f"sentence after it (a blank line ends a sentence).")
    for index, head in enumerate(heads):
        if head > len(words):
            raise TreeError(
                f"{path}:{word_lines[index]}: HEAD {head} of word {index + 1} ({words[index]!r}) is out of range: "
                f"the sentence has {len(words)} words."
            )
    roots = [index for index, head in enumerate(heads) if head == 0]
    if len(roots) > 1 and not allow_multiple_roots and len(sentence_starts) == 1:
        raise TreeError(
            f"{path}:{word_lines[roots[1]]} (sentence {sent_id or '?'}): {len(roots)} roots (words "
            f"{', '.join(str(root + 1) for root in roots)} have HEAD 0); UD allows one root per sentence. Fix the "
            f"file (the command line reads UD trees only), or keep it as a forest from Python with "
            f"allow_multiple_roots=True (read_conllu, load_parser('conllu:...'), parse_and_align's parser_options)."
        )
    if text is None and set(words) == {"_"}:
        raise TreeError(f"{where}: every FORM is '_' and there is no '# text': the treebank withholds its words (some "
                        f"UD treebanks ship without their text, with a script that fills it in); fill in the words "
                        f"first.")
    if text is None:
        text = "".join(form + ("" if "SpaceAfter=No" in misc else " ") for form, misc, _ in surface).rstrip()
    try:
        token_spans = locate_words(text, [form for form, _, _ in surface])
    except TreeError as error:
        raise TreeError(f"{where}: the tokens do not match '# text': {error}") from None
    if text[token_spans[-1][1]:].strip():
        raise TreeError(f"{where}: '# text' goes on after the last token: {text[token_spans[-1][1]:][:40]!r}; add "
                        f"the missing token lines or correct '# text'.")
    spans = [None] * len(words)
    for token_index, (_, _, first_word) in enumerate(surface):
        token = next((t for t in multiword if t.first == first_word), None)
        for word in range(first_word, (token.last if token else first_word) + 1):
            spans[word] = token_spans[token_index]
    try:
        tree = WordTree(
            words=words, heads=heads, upos=upos, deprels=deprels, spans=spans, text=text,
            sentence_starts=sentence_starts, multiword_tokens=multiword,
        )
    except TreeError as error:
        line = word_lines[error.word] if error.word is not None else first_line
        raise TreeError(f"{path}:{line} (sentence {sent_id or '?'}): {error}", word=error.word) from None
    return ConlluSentence(tree, sent_id, first_line, empty_nodes)


def _sentence_starts(where: str, value: str) -> tuple[int, ...]:
    """The 0-based first words of a ``# sentence_starts = 1 8`` comment (1-based word ids, as CoNLL-U counts)."""
    ids = value.split()
    if not ids or not all(_is_number(word_id) and int(word_id) > 0 for word_id in ids):
        raise TreeError(f"{where}: '# {SENTENCE_STARTS}' must list word ids (1, 2, ...); got {value.strip()!r}.")
    return tuple(int(word_id) - 1 for word_id in ids)


__all__ = ["ConlluSentence", "SENTENCE_STARTS", "conllu_block", "iter_conllu", "read_conllu"]
