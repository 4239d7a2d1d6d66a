"""How the translation pipeline reads source texts before the model sees them: input checks, the words of raw text
for a model trained on pre-split words, and the parse of a whole batch in one parser call.

``SourceReader.read_batch(texts)`` gives one ``SourceReading`` per text. A feature model's texts are parsed together
(spaCy's ``nlp.pipe`` over the batch): parsing sentence by sentence cost the Endpoint handler most of its time at
batch 32, and each sentence's tree, so its features, is the same either way (``tests/test_pipelines.py`` holds it).

Hub-portable like the pipeline (relative imports only): an exported folder carries it next to ``pipelines.py``.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass

from .featurizer import SyntaxFeaturizer
from .parsers import get_parser
from .segmenters import get_segmenter
from .text_checks import BLANK_TEXT, check_valid_unicode, is_blank, is_hidden, strip_invisible
from .trees import WordTree

logger = logging.getLogger(__name__)


class EmptyInputError(ValueError):
    """A pipeline got an empty text: a model would produce a meaningless output for it."""


def check_texts(inputs, what: str = "text") -> None:
    """Reject empty strings and text that is not valid Unicode (alone, in a list, or in a ``{"text", "text_pair"}``
    dict, whose ``text_pair`` may be None for one text, as the tokenizer takes it) naming the position."""
    items = inputs if isinstance(inputs, (list, tuple)) else [inputs]
    if isinstance(inputs, (list, tuple)) and not inputs:
        raise EmptyInputError(f"the pipeline got an empty list; pass a {what} or a list of {what}s.")
    for index, item in enumerate(items):
        if isinstance(item, dict) and (set(item) - {"text", "text_pair"} or "text" not in item):
            # the keys first: {"text": ..., "foo": 1} was refused as "the foo is of type int"
            raise ValueError(f"a text pair is a dict with keys 'text' and 'text_pair'; got keys {sorted(item)}.")
        fields = [(name, value) for name, value in item.items() if not (name == "text_pair" and value is None)] \
            if isinstance(item, dict) else [(what, item)]
        for name, value in fields:
            where = f"input {index} ({name})" if isinstance(inputs, (list, tuple)) else f"the {name}"
            if not isinstance(value, str):
                raise TypeError(f"{where} is of type {type(value).__name__}; the pipeline translates/classifies strings.")
            if is_blank(value):
                raise EmptyInputError(
                    f"{where} is an empty string ({BLANK_TEXT}); remove empty lines before calling the pipeline "
                    f"(there is nothing to parse or translate)."
                )
            check_valid_unicode(value, where)


def check_sources(inputs) -> None:
    """What a translation pipeline takes, as transformers' text pipelines do: a text or a list (or tuple) of texts,
    each non-empty valid Unicode. Anything else (a dict, None, a number, a list holding one) is refused in one line
    that says what to pass, instead of failing inside the tokenizer or the parser."""
    items = inputs if isinstance(inputs, (list, tuple)) else [inputs]
    for index, item in enumerate(items):
        if not isinstance(item, str):
            where = f"input {index}" if isinstance(inputs, (list, tuple)) else "the input"
            text_field = " (pass its text itself)" if isinstance(item, dict) and "text" in item else ""
            raise TypeError(f"{where} is of type {type(item).__name__}{text_field}; the translation pipeline takes a text or "
                            f"a list of texts, e.g. pipe('a sentence') or pipe(['one', 'two']).")
    check_texts(inputs)


def featurizer_max_length(tokenizer, config) -> int:
    """Longest source the model accepts: the tokenizer's limit, capped by the model's position table."""
    limits = [getattr(config, "max_position_embeddings", None), getattr(tokenizer, "model_max_length", None)]
    return min(limit for limit in limits if isinstance(limit, int) and 0 < limit < 10**6)


UNSPACED_SCRIPTS = (
    (0x0E00, 0x0EFF),  # Thai, Lao
    (0x1000, 0x109F),  # Myanmar
    (0x1780, 0x17FF),  # Khmer
    (0x3000, 0x30FF),  # CJK symbols and punctuation (「」。、), hiragana, katakana
    (0x31F0, 0x31FF),  # katakana phonetic extensions
    (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0x20000, 0x3FFFF),  # CJK ideographs
    (0xFF00, 0xFFEF),  # halfwidth and fullwidth forms (？！ＡＢＣ, ｶﾀｶﾅ)
)
"""Code point blocks of the scripts written without spaces between words, and of their punctuation."""


def _unspaced(character: str) -> bool:
    point = ord(character)
    return any(low <= point <= high for low, high in UNSPACED_SCRIPTS)


def is_split_into_words(text: str) -> bool:
    """Whether the whitespace in ``text`` splits it into words, as a pre-split corpus line is. A raw sentence of a
    script written without spaces has them only around words of another script ("私はNew Yorkに行った。"): it is
    split into words only if some space stands between two characters of such a script ("私 は New York に")."""
    chunks = text.split()
    if len(chunks) < 2:
        return False
    if not any(map(_unspaced, text)):
        return True
    return any(_unspaced(left[-1]) and _unspaced(right[0]) for left, right in zip(chunks, chunks[1:]))


@dataclass(frozen=True)
class SourceReading:
    """One source text as a translation model reads it, with the one parse its features and tree views come from."""

    text: str
    """What the tokenizer sees (a raw text split for a model trained on pre-split words becomes its words joined
    by spaces)."""
    pretokenized: bool
    """Whether ``text`` is space-separated words parsed as given."""
    tree: WordTree | None
    """The parse of ``text``, or None for a model that reads no tree; its own ``text`` is what the tokenizer sees
    (``text``, with pre-split words joined by single spaces)."""


class SourceReader:
    """Reads source texts as a translation model with ``config`` was trained on them; ``featurizer`` (None for a
    model that reads no tree) parses them with the model's parser."""

    def __init__(self, config, featurizer: SyntaxFeaturizer | None, tokenizer=None):
        self.config, self.featurizer, self.tokenizer = config, featurizer, tokenizer
        self._said_unsegmented = False
        self._unknown_to_tokenizer: dict[str, bool] = {}

    def read(self, text: str, pretokenized: bool | None = None) -> SourceReading:
        """One text as the model reads it (see ``read_batch``); an error names "the text"."""
        check_sources(text)
        return self._read([text], pretokenized)[0]

    def read_batch(self, texts, pretokenized: bool | None = None) -> list[SourceReading]:
        """Each text of a list as the model reads it, all parsed in one parser call; an error names the input's
        position. ``pretokenized=None`` means what the model was trained on.

        Raw text for a model trained on pre-split words is split into the parser's words (its tokenizer alone) and
        read as those words separated by spaces, as in training: otherwise BPE loses every word-initial subword.
        A feature model's tree is then the one parse of what the model reads; ``encode`` and the tree views reuse it.
        """
        if not isinstance(texts, (list, tuple)):
            raise TypeError(f"read_batch takes a list of texts; got {type(texts).__name__} (use read for one text).")
        check_sources(texts)
        return self._read(texts, pretokenized)

    def _read(self, texts, pretokenized: bool | None) -> list[SourceReading]:
        """The readings of checked texts (their ``visible`` part): each segmented on its own, then all parsed
        together."""
        sources = []
        for text in map(self.visible, texts):
            as_given = self._default_pretokenized(text) if pretokenized is None else pretokenized
            if not as_given and getattr(self.config, "source_pretokenized", False) and self.segmenter is not None:
                text, as_given = " ".join(self.segmenter.split_words(text)), True
            sources.append((text, as_given))
        trees = [None] * len(sources)
        if self.featurizer is not None:
            trees = self.featurizer.source_trees([text.split() if as_given else text for text, as_given in sources])
        return [SourceReading(text, as_given, tree) for (text, as_given), tree in zip(sources, trees)]

    def visible(self, text: str) -> str:
        """``text`` without invisible characters at its ends, nor the hidden ones inside it (format characters such
        as a zero-width space, control characters such as NUL: ``text_checks.is_hidden``) that the tokenizer has no
        token for: each would be an ``<unk>`` between two subwords and change the translation. One the tokenizer
        knows (a joiner that a script needs) stays."""
        text = strip_invisible(text)
        return "".join(character for character in text if not (is_hidden(character) and self._unknown(character)))

    def _unknown(self, character: str) -> bool:
        """Whether the tokenizer reads ``character`` as its unknown token (never, for one without such a token)."""
        if character not in self._unknown_to_tokenizer:
            unknown_id = getattr(self.tokenizer, "unk_token_id", None)
            self._unknown_to_tokenizer[character] = unknown_id is not None and unknown_id in self.tokenizer(
                character, add_special_tokens=False)["input_ids"]
        return self._unknown_to_tokenizer[character]

    def _default_pretokenized(self, text: str) -> bool:
        """What the model was trained on (``config.source_pretokenized``), except for text without any whitespace
        or with spaces only beside Latin words in Japanese (``is_split_into_words``).

        Such a text would be one single "word" to a model trained on pre-split words (every depth 0); it is a raw
        sentence (a widget's or an endpoint's input), so the parser segments it.
        """
        if not getattr(self.config, "source_pretokenized", False):
            return False
        if is_split_into_words(text):
            return True
        if not self._said_unsegmented:
            if self.segmenter is not None:
                what_happens = (f"{self.segmenter.spec} segments such input. To keep it as given, pass "
                                "pretokenized=True (on the command line: --pretokenized).")
            else:
                what_happens = ("its config names nothing to segment it (source_segmenter, or the source_parser of a "
                                "model that is not self-parsing), so it is read as given; pass the words "
                                "separated by spaces, or set model.config.source_segmenter (e.g. 'sudachi:C').")
            logger.warning("this model was trained on text split into words (config.source_pretokenized) but got "
                           "input with no whitespace, or in a script written without spaces with spaces only around words "
                           "of another script (e.g. %r); %s", text[:40], what_happens)
            self._said_unsegmented = True
        return False

    @functools.cached_property
    def segmenter(self):
        """What splits raw text into the words a model trained on pre-split text expects (loaded at first use):
        the config's ``source_segmenter``, else its parser's tokenizer (the featurizer shares the loaded parser);
        a self-parsing model uses no parser (``config.segmenter_spec``)."""
        config = self.config
        if getattr(config, "source_segmenter", None):
            return get_segmenter(config.source_segmenter)
        spec = getattr(config, "segmenter_spec", getattr(config, "source_parser", None))
        return get_parser(spec) if spec else None


__all__ = ["EmptyInputError", "SourceReader", "SourceReading", "check_sources", "check_texts", "featurizer_max_length"]
