"""The one word-level dependency tree type every parser backend produces and the aligner consumes.

Heads follow CoNLL-U: 1-based word indices, ``0`` = root. A parser that splits one input into several sentences
gives a forest (one root per sentence); that is kept as it is, never merged or rejected.
Character spans tie each word to the text the tokenizer sees, which is how words are aligned to subwords.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .labels import UPOS_TAGS


class TreeError(ValueError):
    """A malformed tree: wrong lengths, a head out of range, a cycle, no root, bad spans.

    ``word`` is the 0-based index of the word the error is about, when there is one, so a file reader can point at
    that word's line.
    """

    def __init__(self, message: str, word: int | None = None):
        super().__init__(message)
        self.word = word


@dataclass(frozen=True)
class MultiwordToken:
    """One surface token that is several syntactic words (UD: French "du" = "de le"); words are 0-based, inclusive."""

    first: int
    last: int
    form: str


@dataclass(frozen=True)
class WordTree:
    """Words with heads (1-based, 0 = root), optional UPOS/deprel, character spans into ``text``, sentence starts.

    ``spans[i] = (start, end)`` means ``text[start:end]`` is the surface of word ``i``; the words of one multiword
    token share the span of that token. ``sentence_starts`` lists the index of the first word of every sentence.
    """

    words: tuple[str, ...]
    heads: tuple[int, ...]
    upos: tuple[str | None, ...] | None = None
    deprels: tuple[str | None, ...] | None = None
    spans: tuple[tuple[int, int], ...] | None = None
    text: str | None = None
    sentence_starts: tuple[int, ...] = (0,)
    multiword_tokens: tuple[MultiwordToken, ...] = ()
    _depths: tuple[int, ...] = field(default=(), init=False, repr=False, compare=False)

    def __post_init__(self):
        for name in ("words", "heads", "upos", "deprels", "spans", "sentence_starts", "multiword_tokens"):
            value = getattr(self, name)
            if (value is None and name in ("words", "heads")) or isinstance(value, str) or (
                    value is not None and not hasattr(value, "__iter__")):  # was a TypeError deep inside
                raise TreeError(f"WordTree {name}={value!r}: give a list with one entry per word.")
            if value is not None and not isinstance(value, tuple):
                object.__setattr__(self, name, tuple(value))
        if self.spans is not None:
            if not all(hasattr(span, "__len__") and len(span) == 2 for span in self.spans):
                raise TreeError(f"WordTree spans={self.spans!r}: give one (start, end) pair per word.")
            object.__setattr__(self, "spans", tuple((int(start), int(end)) for start, end in self.spans))
        if not self.words:
            object.__setattr__(self, "sentence_starts", ())
        self._validate_shape()
        object.__setattr__(self, "_depths", self._compute_depths())

    # ----------------------------------------------------------------------------------------------- validation
    def _validate_shape(self):
        count = len(self.words)
        for name in ("heads", "upos", "deprels", "spans"):
            value = getattr(self, name)
            if value is not None and len(value) != count:
                raise TreeError(f"WordTree has {count} words but {len(value)} {name}; give one per word.")
        for index, word in enumerate(self.words):
            if not isinstance(word, str) or not word or word.isspace():
                raise TreeError(f"WordTree word {index + 1} is {word!r}; words must be non-empty, non-blank strings.")
        for index, tag in enumerate(self.upos or ()):
            if tag is not None and tag not in UPOS_TAGS:  # read as the unknown tag: POS features learned nothing
                raise TreeError(
                    f"WordTree word {index + 1} ({self.words[index]!r}) has UPOS {tag!r}, which is not one of the 17 "
                    f"Universal POS tags ({' '.join(UPOS_TAGS)}); give UD tags or None (a tagset's own tags, such as "
                    f"PTB's NN, belong in CoNLL-U's XPOS column 5).", word=index,
                )
        for index, head in enumerate(self.heads):
            if not isinstance(head, (int, np.integer)) or not 0 <= head <= count:
                raise TreeError(
                    f"WordTree word {index + 1} ({self.words[index]!r}) has head {head!r}; heads must be integers in "
                    f"0..{count} (1-based word index, 0 = root).", word=index,
                )
            if head == index + 1:
                raise TreeError(f"WordTree word {index + 1} ({self.words[index]!r}) is its own head.", word=index)
        if count and 0 not in self.heads:
            # Every word then has a head, so following heads from word 1 must come back round: name that cycle
            # (and its first word, whose line a CoNLL-U reader reports), not just the missing root.
            path, node = [], 0
            while node not in path:
                path.append(node)
                node = self.heads[node] - 1
            members = path[path.index(node):]
            cycle = " -> ".join(str(word + 1) for word in members + [node])
            raise TreeError(f"WordTree has no root (no word has head 0): words {cycle} form a cycle; one word of a "
                            f"sentence needs head 0.", word=min(members))
        starts = self.sentence_starts
        if count and (not starts or starts[0] != 0 or list(starts) != sorted(set(starts)) or starts[-1] >= count):
            raise TreeError(
                f"WordTree sentence_starts {starts} must start at 0, increase strictly and stay below {count}."
            )
        sentence_of = self._sentence_index_of_words()
        for index, head in enumerate(self.heads):
            if head and sentence_of[head - 1] != sentence_of[index]:
                raise TreeError(
                    f"WordTree word {index + 1} ({self.words[index]!r}) has its head {head} in another sentence.",
                    word=index,
                )
        self._validate_spans()
        for token in self.multiword_tokens:
            if not 0 <= token.first < token.last < count:
                raise TreeError(f"WordTree multiword token {token} must cover 2+ words inside 0..{count - 1}.")

    def _validate_spans(self):
        if self.spans is None:
            return
        limit = len(self.text) if self.text is not None else None
        previous = (0, 0)
        for index, (start, end) in enumerate(self.spans):
            if not 0 <= start < end or (limit is not None and end > limit):
                raise TreeError(
                    f"WordTree word {index + 1} ({self.words[index]!r}) has span {(start, end)}; spans must be "
                    f"non-empty and inside the text (length {limit})."
                )
            if (start, end) != previous and start < previous[1]:
                raise TreeError(
                    f"WordTree word {index + 1} ({self.words[index]!r}) span {(start, end)} overlaps the previous "
                    f"word's span {previous}; words must be in text order."
                )
            previous = (start, end)

    def _sentence_index_of_words(self) -> list[int]:
        sentence_of, sentence = [], -1
        starts = set(self.sentence_starts)
        for index in range(len(self.words)):
            if index in starts:
                sentence += 1
            sentence_of.append(sentence)
        return sentence_of

    def _compute_depths(self) -> tuple[int, ...]:
        depths = [-1] * len(self.words)
        for start in range(len(self.words)):
            path, node = [], start
            while depths[node] < 0:
                if node in path:
                    members = path[path.index(node):]
                    cycle = " -> ".join(str(word + 1) for word in members + [node])
                    raise TreeError(f"WordTree has a cycle that never reaches the root: words {cycle}.",
                                    word=min(members))
                path.append(node)
                head = self.heads[node]
                if head == 0:
                    depths[node] = 0
                    path.pop()
                    break
                node = head - 1
            for word in reversed(path):
                depths[word] = depths[self.heads[word] - 1] + 1
        return tuple(depths)

    # -------------------------------------------------------------------------------------------- derived values
    def __len__(self) -> int:
        return len(self.words)

    @property
    def depths(self) -> tuple[int, ...]:
        """Depth of every word in its tree; roots have depth 0."""
        return self._depths

    def sentences(self) -> list[range]:
        """Word index ranges of the sentences (several when the parser split the input)."""
        bounds = list(self.sentence_starts) + [len(self.words)]
        return [range(start, end) for start, end in zip(bounds, bounds[1:])]

    @property
    def roots(self) -> list[int]:
        """0-based indices of the root words (one per tree of the forest)."""
        return [index for index, head in enumerate(self.heads) if head == 0]

    # ------------------------------------------------------------------------------------------- transformations
    def _outside_subtrees(self, index: int, members) -> bool:
        """Whether word ``index`` (0-based; -1 is the root) is the root or no word of ``members`` is it or above it."""
        while index >= 0:
            if index in members:
                return False
            index = self.heads[index] - 1
        return True

    def collapse_multiword_tokens(self) -> "WordTree":
        """The surface-token view: each multiword token becomes one word.

        Rule: the token takes the head, UPOS and deprel of its first member word whose head is the root or lies
        outside the subtrees of all its members; heads that pointed to any member point to the token. A member's
        head can lead back into the token: with x -> z, y -> root and z -> y, anchoring "xy" on x would close the
        cycle xy -> z -> xy, so y anchors it. (The member highest in the tree always qualifies; where no cycle
        threatens, this is the first member pointing outside the token.) This is the view the aligner uses, as a
        tokenizer only sees surface forms.
        """
        if not self.multiword_tokens:
            return self
        new_index, members_of = {}, {}
        token_at = {token.first: token for token in self.multiword_tokens}
        position, word = 0, 0
        while word < len(self.words):
            token = token_at.get(word)
            last = token.last if token else word
            for member in range(word, last + 1):
                new_index[member] = position
            members_of[position] = (token, range(word, last + 1))
            position += 1
            word = last + 1
        words, heads, upos, deprels, spans, starts = [], [], [], [], [], set()
        old_starts = set(self.sentence_starts)
        for position, (token, members) in members_of.items():
            anchor = next(member for member in members if self._outside_subtrees(self.heads[member] - 1, members))
            words.append(token.form if token else self.words[anchor])
            head = self.heads[anchor]
            heads.append(0 if head == 0 else new_index[head - 1] + 1)
            upos.append(self.upos[anchor] if self.upos else None)
            deprels.append(self.deprels[anchor] if self.deprels else None)
            if self.spans:
                spans.append(self.spans[members[0]])
            if any(m in old_starts for m in members):
                starts.add(position)
        return WordTree(
            words=words,
            heads=heads,
            upos=upos if self.upos else None,
            deprels=deprels if self.deprels else None,
            spans=spans if self.spans else None,
            text=self.text,
            sentence_starts=sorted(starts),
        )

    @classmethod
    def from_words(cls, words, heads, upos=None, deprels=None, sentence_starts=(0,)) -> "WordTree":
        """A tree over pre-tokenized words; ``text`` is the words joined by single spaces (spans point into it)."""
        spans, position = [], 0
        for word in words:
            spans.append((position, position + len(word)))
            position += len(word) + 1
        return cls(
            words=words, heads=heads, upos=upos, deprels=deprels, spans=spans, text=" ".join(words),
            sentence_starts=sentence_starts,
        )


def locate_words(text: str, words) -> list[tuple[int, int]]:
    """Character spans of ``words`` found one after another in ``text`` (only whitespace may lie between them).

    Raises ``TreeError`` naming the word that does not match (a caller adds where the text came from).
    """
    spans, position = [], 0
    for index, word in enumerate(words):
        while position < len(text) and text[position].isspace() and not text.startswith(word, position):
            position += 1
        if not text.startswith(word, position):
            raise TreeError(
                f"word {index + 1} {word!r} does not match the text at character {position}: "
                f"{text[position:position + 20]!r}. The words must appear in the text in order."
            )
        spans.append((position, position + len(word)))
        position += len(word)
    return spans
