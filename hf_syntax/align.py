"""Align a word-level tree to subwords by character offsets and derive the per-subword feature columns.

Works for any tokenizer that reports character offsets (HF fast tokenizers: byte-level or Metaspace BPE, BERT
WordPiece, SentencePiece/Unigram). The rules, each counted in ``AlignmentStats`` so nothing shifts silently:

* A subword belongs to the word its characters overlap. A subword overlapping two or more words (it *straddles*
  a word boundary, e.g. a BPE merge across unsegmented Japanese) goes to the word it overlaps most (the first on a
  tie) -> ``straddling_subwords``.
* A subword that overlaps no word joins the next word, or the last word at the end of the text. Counted as
  ``whitespace_subwords`` when it covers only whitespace (a lone SentencePiece "▁" before a word) and as
  ``uncovered_subwords`` otherwise (a zero-width or control character the parser dropped). In a text without any
  word (blank input) such a subword is treated like a special token.
* A word that ends up with no subword (swallowed by a straddling subword, or cut off by truncation) has no position
  in the sequence: a head pointing to it is unsupervised (-100) -> ``words_without_subwords`` /
  ``truncated_words`` and ``unsupervised_heads``.
* A word cut inside by truncation keeps the subwords before the cut but not its final one: its last kept subword
  gets no head (-100, its next subword is gone) and is not tagged as the word's end, and a head pointing to the word
  with ``head_rule="last"`` is unsupervised -> ``partially_truncated_words``.
* Special tokens ([CLS], [SEP], <s>, </s>, language tags) have no word: head -100, depth -1, label id ``SPECIAL_ID``.
* Multiword tokens (gold UD: French "du" = "de le") are aligned as their one surface token; the featurizer collapses
  them first (``WordTree.collapse_multiword_tokens`` documents which member's head the token takes).

Subword heads follow DBSA (Deguchi et al. 2019, as in the authors' code): a non-final subword points to the next subword of its word, a final subword
to the first subword of the head word (``head_rule="last"``: its last subword), a root's final subword to itself.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from .columns import DEFAULT_FEATURES, IGNORE_INDEX, NO_WORD, OPTIONAL_FEATURES, SUBWORD_HEAD_RULES
from .labels import (
    CASE_VOCAB, DEPREL_VOCAB, SPECIAL_ID, SUBWORD_TAG_VOCAB, UNKNOWN_ID, UPOS_VOCAB, deprel_base, word_case,
)
from .trees import WordTree


class AlignmentError(ValueError):
    """Raised in strict mode when an alignment rule had to be applied, or when offsets are unusable."""


@dataclass
class AlignmentStats:
    """How often each alignment rule applied (per sequence, or summed over a corpus with ``update``)."""

    sequences: int = 0
    words: int = 0
    subwords: int = 0
    straddling_subwords: int = 0
    whitespace_subwords: int = 0
    uncovered_subwords: int = 0
    words_without_subwords: int = 0
    truncated_words: int = 0
    partially_truncated_words: int = 0
    unsupervised_heads: int = 0

    def update(self, other: "AlignmentStats") -> None:
        """Add the counts of ``other`` to these (aggregating over sequences or a corpus)."""
        for name, value in other.__dict__.items():
            setattr(self, name, getattr(self, name) + value)

    def as_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @property
    def is_clean(self) -> bool:
        """True when no rule beyond plain overlap was needed (truncation aside)."""
        return not (self.straddling_subwords or self.uncovered_subwords or self.words_without_subwords)


def word_ids_from_offsets(spans, offsets, is_content, text: str = "",
                          stats: AlignmentStats | None = None) -> list[int]:
    """The word index of every subword (``NO_WORD`` for special tokens), by the rules in the module docstring.

    ``spans``: (start, end) of each word in ``text``, in text order; ``offsets``: (start, end) of each subword in
    the same text; ``is_content``: False for special tokens.
    """
    stats = stats if stats is not None else AlignmentStats()
    if len(offsets) != len(is_content):
        raise AlignmentError(f"{len(offsets)} offsets but {len(is_content)} content flags; they must match.")
    word_ids, next_word, word_count = [], 0, len(spans)
    for (start, end), content in zip(offsets, is_content):
        if not content:
            word_ids.append(NO_WORD)
            continue
        stats.subwords += 1
        while next_word < word_count and spans[next_word][1] <= start:
            next_word += 1
        best, best_overlap, overlapping = NO_WORD, 0, 0
        for candidate in range(next_word, word_count):
            word_start, word_end = spans[candidate]
            if word_start >= end:
                break
            overlap = (end if end < word_end else word_end) - (start if start > word_start else word_start)
            if overlap > 0:
                overlapping += 1
                if overlap > best_overlap:
                    best, best_overlap = candidate, overlap
        if overlapping > 1:
            stats.straddling_subwords += 1
        if best == NO_WORD:
            if text[start:end].strip():
                stats.uncovered_subwords += 1
            else:
                stats.whitespace_subwords += 1
            if word_count:
                best = min(next_word, word_count - 1)
        word_ids.append(best)
    return word_ids


def subword_columns(tree: WordTree, word_ids, features, head_rule: str = "first",
                    stats: AlignmentStats | None = None, content_end: int | None = None) -> dict:
    """Per-subword columns for ``tree``: ``dep_heads``, ``dep_depths``, ``pos_ids``, ``case_ids``, ``subword_tags``
    and (optional, not a model input yet) ``deprel_ids`` -- the relation of the subword's word to its head.

    ``word_ids`` index into ``tree`` (``NO_WORD`` = special token), positions are those of the whole sequence.
    ``content_end`` is the character where the first subword the tokenizer cut off starts (None: it cut none):
    words from there on are counted as truncated rather than as swallowed, and a word with subwords that goes on
    past it as partially truncated.
    """
    if head_rule not in SUBWORD_HEAD_RULES:
        raise ValueError(f"head_rule must be one of {SUBWORD_HEAD_RULES}; got {head_rule!r}.")
    stats = stats if stats is not None else AlignmentStats()
    stats.sequences += 1
    stats.words += len(tree)
    positions = [[] for _ in tree.words]
    for position, word in enumerate(word_ids):
        if word != NO_WORD:
            positions[word].append(position)
    cut, cut_words = content_end is not None and tree.spans is not None, set()
    for word, found in enumerate(positions):
        if found and cut and tree.spans[word][1] > content_end:
            cut_words.add(word)
            stats.partially_truncated_words += 1
        elif not found:
            if cut and tree.spans[word][0] >= content_end:
                stats.truncated_words += 1
            else:
                stats.words_without_subwords += 1
    aligned = _AlignedTree(tree, word_ids, positions, cut_words, head_rule, stats)
    return {name: COLUMN_PRODUCERS[name](aligned) for name in (*DEFAULT_FEATURES, *OPTIONAL_FEATURES)
            if name in features}


@dataclass
class _AlignedTree:
    """A tree with its subwords: ``word_ids`` per subword, ``positions`` (the subwords) per word, ``cut_words``
    (the words truncation cut inside, whose final subword is not in the sequence)."""

    tree: WordTree
    word_ids: list
    positions: list
    cut_words: set
    head_rule: str
    stats: AlignmentStats

    def per_subword(self, per_word) -> list[int]:
        """A word-level value for every subword of its word, ``SPECIAL_ID`` for special tokens."""
        return [SPECIAL_ID if word == NO_WORD else per_word[word] for word in self.word_ids]


def _subword_heads(aligned: _AlignedTree) -> list[int]:
    tree, positions = aligned.tree, aligned.positions
    heads = [IGNORE_INDEX] * len(aligned.word_ids)
    for word, found in enumerate(positions):
        for inner, position in zip(found, found[1:]):
            heads[inner] = position
        if not found or word in aligned.cut_words:
            continue
        final = found[-1]
        head_word = tree.heads[word] - 1
        if head_word < 0:
            heads[final] = final
        elif not positions[head_word] or (aligned.head_rule == "last" and head_word in aligned.cut_words):
            aligned.stats.unsupervised_heads += 1  # the head word's subword the rule points to is not in the sequence
        else:
            heads[final] = positions[head_word][0 if aligned.head_rule == "first" else -1]
    return heads


def _subword_depths(aligned: _AlignedTree) -> list[int]:
    return [-1 if word == NO_WORD else aligned.tree.depths[word] for word in aligned.word_ids]


def _subword_pos(aligned: _AlignedTree) -> list[int]:
    tree = aligned.tree
    return aligned.per_subword([UPOS_VOCAB.id_of(upos) for upos in tree.upos or (None,) * len(tree)])


def _subword_case(aligned: _AlignedTree) -> list[int]:
    return aligned.per_subword([CASE_VOCAB.id_of(word_case(word)) for word in aligned.tree.words])


def _subword_deprels(aligned: _AlignedTree) -> list[int]:
    tree = aligned.tree
    return aligned.per_subword([DEPREL_VOCAB.id_of(deprel_base(deprel))
                                for deprel in tree.deprels or (None,) * len(tree)])


def _subword_tags(aligned: _AlignedTree) -> list[int]:
    tag_ids = {tag: SUBWORD_TAG_VOCAB.id_of(tag) for tag in SUBWORD_TAG_VOCAB.labels}
    tags = [SPECIAL_ID if word == NO_WORD else UNKNOWN_ID for word in aligned.word_ids]
    for word, found in enumerate(aligned.positions):
        whole = word not in aligned.cut_words
        if len(found) == 1 and whole:
            tags[found[0]] = tag_ids["O"]
        elif found:
            tags[found[0]] = tag_ids["B"]
            for position in found[1:]:
                tags[position] = tag_ids["I"]
            if whole:
                tags[found[-1]] = tag_ids["E"]
    return tags


COLUMN_PRODUCERS = {
    "dep_heads": _subword_heads,
    "dep_depths": _subword_depths,
    "pos_ids": _subword_pos,
    "case_ids": _subword_case,
    "subword_tags": _subword_tags,
    "deprel_ids": _subword_deprels,
}
"""Parsed column of the column table (``columns.COLUMNS``, ``parsed=...``) -> the function computing it from an
aligned tree; ``tests/test_features_align.py`` holds the two to the same names."""


def word_heads_from_subword_heads(dep_heads, word_ids, word_count: int | None = None) -> list[int | None]:
    """Invert the DBSA rule: CoNLL-U heads (1-based, 0 = root) per word, ``None`` where the head is unknown.

    A word's head is read from its final subword (its other subwords only point along the word); works for both
    head rules. ``word_count`` defaults to 1 + the largest word id; words without subwords get ``None``.
    """
    # tensors and arrays as lists: a tensor's elements were dict keys by identity, and every head came out None
    dep_heads = dep_heads.tolist() if hasattr(dep_heads, "tolist") else list(dep_heads)
    word_ids = word_ids.tolist() if hasattr(word_ids, "tolist") else list(word_ids)
    if len(dep_heads) != len(word_ids):
        raise ValueError(f"{len(dep_heads)} heads but {len(word_ids)} word ids; they must be the same sequence.")
    for position, head in enumerate(dep_heads):
        if head is not None and head != IGNORE_INDEX and not 0 <= head < len(dep_heads):
            raise ValueError(f"head {head} at subword {position} is outside 0 .. {len(dep_heads) - 1}: heads are "
                             f"positions in this same sequence ({IGNORE_INDEX} where unknown).")
    if word_count is None:
        word_count = max((word for word in word_ids if word != NO_WORD), default=-1) + 1
    final_position = {}
    for position, word in enumerate(word_ids):
        if word != NO_WORD:
            final_position[word] = position
    heads = []
    for word in range(word_count):
        position = final_position.get(word)
        head = None if position is None else dep_heads[position]
        if head is None or head == IGNORE_INDEX:
            heads.append(None)
        elif head == position:
            heads.append(0)
        else:
            head_word = word_ids[head]
            heads.append(None if head_word == NO_WORD else head_word + 1)
    return heads
