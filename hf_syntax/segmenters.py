"""Word segmenters: raw text -> the words a model trained on pre-split text reads, without a dependency parser.

A model that reads no parse at inference (DBSA, a self-parsing dep+rel) still needs raw Japanese split into words
the way its training corpus was, since a Metaspace tokenizer marks word starts at spaces. The parser's own tokenizer
can do that, but it ships inside the parser package; a segmenter spec names the segmenting library alone:

* ``sudachi:<A|B|C>`` -- SudachiPy with the core dictionary in that split mode. Mode C gives the words GiNZA's
  tokenizer gives (GiNZA segments with Sudachi, mode C): equal on all of the first 300 sentences of
  small_parallel_enja's dev set, joined without spaces. (The corpus itself was segmented with KyTea, which splits
  finer: a model trained on it reads Sudachi's words less well, with GiNZA as with this.)

Optional packages are imported when a segmenter is loaded, so this module loads without them.
"""

from __future__ import annotations

from .text_checks import TextTooLongError, check_valid_unicode

SEGMENTER_REQUIREMENTS = {"sudachi": ("sudachipy", "sudachidict_core")}
"""Backend -> the pip packages an exported folder's ``requirements.txt`` needs for it."""
SUDACHI_MODES = ("A", "B", "C")
SUDACHI_MAX_BYTES = 49149
"""SudachiPy (the tokenizer of GiNZA and of spaCy's Japanese pipelines) refuses a text of more UTF-8 bytes than this."""
_LOADED: dict = {}


class SudachiSegmenter:
    """SudachiPy's tokenizer alone (no tagging or parsing)."""

    def __init__(self, mode: str):
        if mode not in SUDACHI_MODES:
            raise ValueError(f"Sudachi split mode {mode!r} is not one of {SUDACHI_MODES}; e.g. 'sudachi:C'.")
        try:
            from sudachipy import Dictionary, SplitMode
        except ImportError as error:
            raise ImportError("the sudachi segmenter needs SudachiPy and its dictionary: "
                              "pip install sudachipy sudachidict_core") from error
        self.spec = f"sudachi:{mode}"
        self.tokenizer = Dictionary(dict="core").create(getattr(SplitMode, mode))

    def split_words(self, text: str) -> list[str]:
        """The words of ``text`` in order; whitespace is not a word."""
        check_valid_unicode(text)
        size = len(text.encode("utf-8"))
        if size > SUDACHI_MAX_BYTES:
            raise TextTooLongError(f"a text of {size} UTF-8 bytes (it begins {text[:20]!r}) is longer than SudachiPy "
                                   f"reads ({SUDACHI_MAX_BYTES}): split it into sentences (one per line or list item)")
        return [morpheme.surface() for morpheme in self.tokenizer.tokenize(text) if morpheme.surface().strip()]


def _backend_and_argument(spec: str) -> tuple[str, str]:
    backend, separator, argument = spec.partition(":") if isinstance(spec, str) else ("", "", "")
    if not separator or backend not in SEGMENTER_REQUIREMENTS:
        raise ValueError(f"segmenter spec {spec!r} is not '<backend>:<argument>' with a backend in "
                         f"{sorted(SEGMENTER_REQUIREMENTS)}, e.g. 'sudachi:C'.")
    return backend, argument


def get_segmenter(spec: str) -> SudachiSegmenter:
    """The segmenter of ``spec``, loaded once per process."""
    _, argument = _backend_and_argument(spec)
    if spec not in _LOADED:
        _LOADED[spec] = SudachiSegmenter(argument)
    return _LOADED[spec]


def segmenter_requirements(spec: str) -> list[str]:
    """The pip requirements of a segmenter spec."""
    return list(SEGMENTER_REQUIREMENTS[_backend_and_argument(spec)[0]])


__all__ = ["SEGMENTER_REQUIREMENTS", "SudachiSegmenter", "get_segmenter", "segmenter_requirements"]
