"""Label vocabularies for the per-subword syntax features.

Every vocabulary reserves the same three ids so that collators and models can treat all feature columns alike:
``0`` = padding, ``1`` = special token ([CLS], </s>, language tags, ...), ``2`` = a label the vocabulary does not
know (a parser with a different tag set, a typo in a treebank). The real labels start at ``3``.
A vocabulary serialises to a plain ``{"name": ..., "labels": [...]}`` dict (plus ``"aliases"`` where it reads other
spellings of its labels), so a model config can carry the exact vocabulary it was trained with and a featurizer can
check that it produces the same ids.
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

DEPREL_ALIASES = {
    # UD v1 names that UD v2 renamed or merged (older treebanks and parsers trained on them)
    "dobj": "obj", "nsubjpass": "nsubj", "csubjpass": "csubj", "auxpass": "aux", "neg": "advmod", "mwe": "fixed",
    "name": "flat", "remnant": "orphan",
    # ClearNLP labels of spaCy's English pipelines whose UD relation has the same head (the word stays attached
    # where the parser put it). prep, pobj, pcomp, agent, attr, acomp and dative are left unknown: UD hangs those
    # words (or their heads) elsewhere, e.g. spaCy's "dative" marks both "him" and the "to" of "to him".
    "relcl": "acl", "poss": "nmod", "prt": "compound", "intj": "discourse", "predet": "det", "preconj": "cc",
    "quantmod": "advmod", "npadvmod": "obl", "oprd": "xcomp", "nn": "compound",
}
"""Other parsers' relation names read as a UD v2 relation. spaCy's English pipelines label in ClearNLP's scheme: of the
3921 words of the first 300 lines of Multi30K's English val set, 32% had a relation the UD set does not name without
these aliases and 26% with them, nearly all prep and pobj (measured with en_core_web_sm)."""

CASE_TAGS = ("lower", "capitalized", "upper", "no_case")
"""Letter case of a word: all lower, first letter upper, all upper (2+ letters), or no cased letter at all."""

SUBWORD_TAGS = ("B", "I", "E", "O")
"""Position of a subword in its word: Begin / Inside / End of a split word, O = the whole word is one subword."""


class LabelVocab:
    """An ordered label set with the three reserved ids in front; unknown labels map to ``UNKNOWN_ID``.

    ``aliases`` maps other spellings (another scheme's names) to labels of the set; they share that label's id.
    """

    def __init__(self, name: str, labels, aliases: dict | None = None):
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
        if aliases is not None and not (isinstance(aliases, dict)
                                        and all(isinstance(key, str) for key in aliases)):
            raise TypeError(f"LabelVocab {name!r}: aliases={aliases!r}; give a dict from other names to labels.")
        aliases = dict(aliases or {})
        stray = sorted(f"{alias}->{label}" for alias, label in aliases.items()
                       if label not in labels or alias in labels)
        if stray:
            raise ValueError(f"LabelVocab {name!r}: aliases {stray} must map a name outside the labels to one of them.")
        self.name = name
        self.labels = tuple(labels)
        self.aliases = aliases
        self._ids = {label: index + len(RESERVED_LABELS) for index, label in enumerate(self.labels)}
        self._ids.update({alias: self._ids[label] for alias, label in aliases.items()})

    def __len__(self) -> int:
        """Size of the embedding table this vocabulary needs (reserved ids included)."""
        return len(self.labels) + len(RESERVED_LABELS)

    def __eq__(self, other) -> bool:
        return isinstance(other, LabelVocab) and self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash((self.name, self.labels, tuple(sorted(self.aliases.items()))))

    def __repr__(self) -> str:
        return f"LabelVocab({self.name!r}, {len(self.labels)} labels)"

    def id_of(self, label: str | None) -> int:
        """Id of ``label`` (or of the label it is an alias of); ``None`` or an unknown label gives ``UNKNOWN_ID``."""
        return self._ids.get(label, UNKNOWN_ID)

    def label_of(self, label_id: int) -> str:
        if not 0 <= label_id < len(self):
            raise ValueError(f"LabelVocab {self.name!r}: id {label_id} is outside 0..{len(self) - 1}.")
        if label_id < len(RESERVED_LABELS):
            return RESERVED_LABELS[label_id]
        return self.labels[label_id - len(RESERVED_LABELS)]

    def to_dict(self) -> dict:
        """The aliases are part of what the ids mean: a model trained before they existed compares unequal."""
        return {"name": self.name, "labels": list(self.labels), **({"aliases": self.aliases} if self.aliases else {})}

    @classmethod
    def from_dict(cls, data: dict) -> "LabelVocab":
        if not isinstance(data, dict) or "name" not in data or "labels" not in data:
            raise ValueError(
                f"LabelVocab.from_dict expects {{'name': str, 'labels': [str, ...]}} (as written by to_dict); "
                f"got {data!r}."
            )
        return cls(data["name"], data["labels"], data.get("aliases"))


UPOS_VOCAB = LabelVocab("upos", UPOS_TAGS)
DEPREL_VOCAB = LabelVocab("deprel", DEPREL_TAGS, DEPREL_ALIASES)
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
