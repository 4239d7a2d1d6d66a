"""What the package takes as text it can read: a blank text (nothing to parse or translate), the hidden characters a
tokenizer cannot spell, and text that is not valid Unicode. Parsers, the featurizer, the pipelines and the recipes
all judge text by these, so they agree on what is empty or unreadable.

Hub-portable (no imports from the package): an exported folder carries it beside the featurizer and parsers.
"""

from __future__ import annotations

import unicodedata


class InvalidTextError(ValueError):
    """A text that is not valid Unicode: no tokenizer or parser can encode it."""


DEFAULT_IGNORABLE = ((0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5),
                     (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164),
                     (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3),
                     (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF))
"""Unicode's Default_Ignorable_Code_Point ranges (DerivedCoreProperties.txt): drawn as nothing. Besides format
characters they hold variation selectors (U+FE00..FE0F, U+E0100..E01EF), the combining grapheme joiner and the
Hangul fillers (U+115F, U+1160, U+3164, U+FFA0), which are not category Cf."""

BLANK_SYMBOLS = frozenset("\u2800")
"""Characters drawn as an empty space that are not whitespace: the braille pattern blank (category So), used to
pass a blank line off as text."""

BLANK_TEXT = ("nothing but whitespace, zero-width, control or other invisible characters such as variation selectors "
              "and the braille blank U+2800")
"""What a blank text (``is_blank``) holds, as the errors refusing one say it."""


def is_hidden(character: str) -> bool:
    """An invisible character that is not whitespace: a format character (zero-width space and joiners, BOM, word
    joiner, soft hyphen: Unicode category Cf), a control character (NUL, BEL, ESC: Cc) or another default-ignorable
    one (a variation selector such as the U+FE0F of "❤️", a Hangul filler: ``DEFAULT_IGNORABLE``). ``str.strip``
    keeps them, and a tokenizer turns each into ``<unk>``."""
    if " " <= character <= "~" or character.isspace():  # printable ASCII first: most characters, read per line
        return False
    code = ord(character)
    return (unicodedata.category(character) in ("Cf", "Cc")
            or any(low <= code <= high for low, high in DEFAULT_IGNORABLE))


def is_invisible(character: str) -> bool:
    """Whitespace, a blank symbol (``BLANK_SYMBOLS``) or a hidden character (``is_hidden``)."""
    return character.isspace() or character in BLANK_SYMBOLS or is_hidden(character)


def is_blank(text: str) -> bool:
    """Whether a text has nothing to parse or translate (only invisible characters): a model would translate a line
    of them into an invented sentence."""
    return all(is_invisible(character) for character in text)


def strip_invisible(text: str) -> str:
    """``text`` without invisible characters at either end: a BOM or zero-width space there means nothing, but
    glued to the first or last word it became ``<unk>`` and changed the translation. Those inside the text stay."""
    start, end = 0, len(text)
    while start < end and is_invisible(text[start]):
        start += 1
    while end > start and is_invisible(text[end - 1]):
        end -= 1
    return text[start:end]


def check_valid_unicode(text: str, where: str = "the text") -> None:
    """Refuse a lone surrogate (U+D800..U+DFFF) with its position: a JSON request can carry one (``"\\ud800"``)
    and so can bytes decoded with ``errors="surrogateescape"``; the tokenizers and parsers fail on it with errors
    that do not say which text or character was at fault."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise InvalidTextError(
            f"{where} contains a lone surrogate ({text[error.start]!r} at character {error.start}), which is not "
            f"valid Unicode text: decode the input as UTF-8 (errors='replace' turns bad bytes into U+FFFD) and "
            f"send that."
        ) from None


class TextTooLongError(ValueError):
    """A text longer than the parser takes in one piece (spaCy's ``nlp.max_length`` characters, SudachiPy's byte
    limit); the message names the text, the limit and the fix."""
