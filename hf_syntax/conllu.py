"""Reading CoNLL-U files (plain or ``.gz``) into ``WordTree``s: the gold trees of Universal Dependencies treebanks.

Every format or tree error names the file and the line of the word at fault. The ``conllu:<file>`` parser backend
(``parsers.ConlluParser``) serves these trees by sentence text; evaluation reads them directly.
"""

from __future__ import annotations

import gzip
import os

from .trees import MultiwordToken, TreeError, WordTree, locate_words


class ConlluSentence:
    """One sentence of a CoNLL-U file: its tree plus where it came from (for error messages and statistics)."""

    __slots__ = ("tree", "sent_id", "line", "empty_nodes")

    def __init__(self, tree: WordTree, sent_id: str | None, line: int, empty_nodes: int):
        self.tree, self.sent_id, self.line, self.empty_nodes = tree, sent_id, line, empty_nodes


def _open_bytes(path):
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"CoNLL-U file {path!r} does not exist.")
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
    graphs only) are skipped and counted. Every format or tree error names the file and line. UD allows one root
    per sentence, so a second one is an error (a file that is not valid UD); ``allow_multiple_roots=True`` reads
    such sentences as forests instead.
    """
    with _open_bytes(path) as handle:
        block, first_line = [], None
        for number, raw in enumerate(handle, start=1):
            line = _decoded(path, number, raw).rstrip("\n").rstrip("\r")
            if line.strip():
                if first_line is None:
                    first_line = number
                block.append((number, line))
            elif block:
                yield _sentence_from_block(path, first_line, block, allow_multiple_roots)
                block, first_line = [], None
        if block:
            yield _sentence_from_block(path, first_line, block, allow_multiple_roots)


def read_conllu(path, allow_multiple_roots: bool = False) -> list[WordTree]:
    """All trees of a CoNLL-U file (see ``iter_conllu``)."""
    return [sentence.tree for sentence in iter_conllu(path, allow_multiple_roots)]


def _sentence_from_block(path, first_line, block, allow_multiple_roots=False) -> ConlluSentence:
    text, sent_id, empty_nodes = None, None, 0
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
            continue
        columns = line.split("\t")
        if len(columns) != 10:
            raise TreeError(f"{where}: expected 10 tab-separated CoNLL-U columns, found {len(columns)}: {line!r}")
        word_id, form, _, tag, _, _, head, deprel, _, misc = columns
        if "." in word_id:
            empty_nodes += 1
            continue
        if "-" in word_id:
            first, _, last = word_id.partition("-")
            if not (first.isdigit() and last.isdigit() and int(first) == len(words) + 1 and int(last) > int(first)):
                raise TreeError(f"{where}: multiword token range {word_id!r} does not start at the next word.")
            pending_token = (int(first) - 1, int(last) - 1, form, misc)
            surface.append((form, misc, len(words)))
            continue
        if not word_id.isdigit() or int(word_id) != len(words) + 1:
            raise TreeError(f"{where}: word id {word_id!r} should be {len(words) + 1} (ids must count up from 1).")
        if not head.isdigit():
            raise TreeError(f"{where}: HEAD {head!r} of word {word_id} ({form!r}) is not a non-negative integer.")
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
        raise TreeError(f"{where}: sentence has no words.")
    for index, head in enumerate(heads):
        if head > len(words):
            raise TreeError(
                f"{path}:{word_lines[index]}: HEAD {head} of word {index + 1} ({words[index]!r}) is out of range: "
                f"the sentence has {len(words)} words."
            )
    roots = [index for index, head in enumerate(heads) if head == 0]
    if len(roots) > 1 and not allow_multiple_roots:
        raise TreeError(
            f"{path}:{word_lines[roots[1]]} (sentence {sent_id or '?'}): {len(roots)} roots (words "
            f"{', '.join(str(root + 1) for root in roots)} have HEAD 0); UD allows one root per sentence. Fix the "
            f"file, or read it with allow_multiple_roots=True (parser option for conllu:) to keep it as a forest."
        )
    if text is None:
        text = "".join(form + ("" if "SpaceAfter=No" in misc else " ") for form, misc, _ in surface).rstrip()
    try:
        token_spans = locate_words(text, [form for form, _, _ in surface])
    except TreeError as error:
        raise TreeError(f"{where}: the tokens do not match '# text': {error}") from None
    spans = [None] * len(words)
    for token_index, (_, _, first_word) in enumerate(surface):
        token = next((t for t in multiword if t.first == first_word), None)
        for word in range(first_word, (token.last if token else first_word) + 1):
            spans[word] = token_spans[token_index]
    try:
        tree = WordTree(
            words=words, heads=heads, upos=upos, deprels=deprels, spans=spans, text=text,
            multiword_tokens=multiword,
        )
    except TreeError as error:
        line = word_lines[error.word] if error.word is not None else first_line
        raise TreeError(f"{path}:{line} (sentence {sent_id or '?'}): {error}", word=error.word) from None
    return ConlluSentence(tree, sent_id, first_line, empty_nodes)


__all__ = ["ConlluSentence", "iter_conllu", "read_conllu"]
