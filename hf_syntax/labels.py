"""Label vocabularies for the per-subword syntax features.

Every vocabulary reserves the same three ids so that collators and models can treat all feature columns alike:
``0`` = padding, ``1`` = special token ([CLS], </s>, language tags, ...), ``2`` = a label the vocabulary does not
know (a parser with a different tag set, a typo in a treebank). The real labels start at ``3``.
A vocabulary serialises to a plain ``{"name": ..., "labels": [...]}`` dict, so a model config can carry the exact
vocabulary it was trained with and a featurizer can check that it produces the same ids.
"""

from __future__ import annotations

from functools import lru_cache

PAD_ID = 0
SPECIAL_ID = 1
UNKNOWN_ID = 2
RESERVED_LABELS = ("<pad>", "<special>", "<unk>")

UPOS_TAGS = (
    "ADJ", "ADP", "ADV", "AUX", "CCONJ", "DET", "INTJ", "NOUN", "NUM",
    "PART", "PRON", "PROPN", "PUNCT", "SCONJ", "SYM", "VERB", "X",
)
"""The 17 universal part-of-speech tags of Universal Dependencies v2."""

DEPREL_TAGS = (
    "acl", "advcl", "advmod", "amod", "appos", "aux", "case", "cc", "ccomp", "clf", "compound", "conj", "cop",
    "csubj", "dep", "det", "discourse", "dislocated", "expl", "fixed", "flat", "goeswith", "iobj", "list", "mark",
    "nmod", "nsubj", "nummod", "obj", "obl", "orphan", "parataxis", "punct", "reparandum", "root", "vocative",
    "xcomp",
)
"""The 37 universal dependency relations of UD v2 (subtypes such as ``nsubj:pass`` map to their base)."""

CASE_TAGS = ("lower", "capitalized", "upper", "no_case")
"""Letter case of a word: all lower, first letter upper, all upper (2+ letters), or no cased letter at all."""

SUBWORD_TAGS = ("B", "I", "E", "O")
"""Position of a subword in its word: Begin / Inside / End of a split word, O = the whole word is one subword."""


class LabelVocab:
    """An ordered label set with the three reserved ids in front; unknown labels map to ``UNKNOWN_ID``."""

    def __init__(self, name: str, labels):
        if isinstance(labels, str):  # one string was split into its letters
            raise TypeError(f"LabelVocab {name!r}: labels={labels!r} is one string; give a list of label strings.")
        labels = list(labels)
        if not all(isinstance(label, str) for label in labels):
            raise TypeError(f"LabelVocab {name!r}: every label is a string; got {labels!r}.")
        if not labels:
            raise ValueError(f"LabelVocab {name!r} needs at least one label; got an empty list.")
        clashes = sorted(set(labels) & set(RESERVED_LABELS))
        if clashes:
            raise ValueError(f"LabelVocab {name!r}: labels {clashes} clash with the reserved names {RESERVED_LABELS}.")
        duplicates = sorted({label for label in labels if labels.count(label) > 1})
        if duplicates:
            raise ValueError(f"LabelVocab {name!r}: duplicate labels {duplicates}; every label must appear once.")
        self.name = name
        self.labels = tuple(labels)
        self._ids = {label: index + len(RESERVED_LABELS) for index, label in enumerate(self.labels)}

    def __len__(self) -> int:
        """Size of the embedding table this vocabulary needs (reserved ids included)."""
        return len(self.labels) + len(RESERVED_LABELS)

    def __eq__(self, other) -> bool:
        return isinstance(other, LabelVocab) and (self.name, self.labels) == (other.name, other.labels)

    def __hash__(self) -> int:
        return hash((self.name, self.labels))

    def __repr__(self) -> str:
        return f"LabelVocab({self.name!r}, {len(self.labels)} labels)"

    def id_of(self, label: str | None) -> int:
        """Id of ``label``; ``None`` or an unknown label gives ``UNKNOWN_ID``."""
        return self._ids.get(label, UNKNOWN_ID)

    def label_of(self, label_id: int) -> str:
        if not 0 <= label_id < len(self):
            raise ValueError(f"LabelVocab {self.name!r}: id {label_id} is outside 0..{len(self) - 1}.")
        if label_id < len(RESERVED_LABELS):
            return RESERVED_LABELS[label_id]
        return self.labels[label_id - len(RESERVED_LABELS)]

    def to_dict(self) -> dict:
        return {"name": self.name, "labels": list(self.labels)}

    @classmethod
    def from_dict(cls, data: dict) -> "LabelVocab":
        if not isinstance(data, dict) or "name" not in data or "labels" not in data:
            raise ValueError(
                f"LabelVocab.from_dict expects {{'name': str, 'labels': [str, ...]}} (as written by to_dict); "
                f"got {data!r}."
            )
        return cls(data["name"], data["labels"])


UPOS_VOCAB = LabelVocab("upos", UPOS_TAGS)
DEPREL_VOCAB = LabelVocab("deprel", DEPREL_TAGS)
CASE_VOCAB = LabelVocab("case", CASE_TAGS)
SUBWORD_TAG_VOCAB = LabelVocab("subword_tag", SUBWORD_TAGS)


def deprel_base(deprel: str | None) -> str | None:
    """``nsubj:pass`` -> ``nsubj``; spaCy's upper-case ``ROOT`` -> ``root``."""
    if deprel is None:
        return None
    return deprel.split(":", 1)[0].lower()


@lru_cache(maxsize=1 << 16)
def word_case(word: str) -> str:
    """Case class of a word (see ``CASE_TAGS``); scripts without case (CJK, digits) give ``no_case``.

    Cached: it runs once per word of every featurized sentence, and corpora repeat their words.
    """
    cased = [char for char in word if char.lower() != char.upper()]
    if not cased:
        return "no_case"
    if all(char.isupper() for char in cased):
        return "upper" if len(cased) > 1 else "capitalized"
    if cased[0].isupper():
        return "capitalized"
    return "lower"
