"""One way to make a user's text safe for a terminal, a log or a CSV cell.

File names, ids, titles, server replies and warnings come from outside the
project. Printed raw, ESC and OSC sequences would drive the terminal (colours,
titles, hyperlinks, cursor moves), BEL rings, and a bidi override (U+202E)
reorders what is shown. Every place that shows such text calls :func:`visible`,
so the rule is written once.
"""

from __future__ import annotations

import functools
import unicodedata

_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Co", "Cs", "Cn"})


def visible(text: str, keep_newlines: bool = True) -> str:
    """``text`` with control and format characters shown as escapes (``\\x1b``, ``\\u202e``).

    Line breaks stay when ``keep_newlines`` (multi-line reports); a one-line
    error or a CSV cell passes ``keep_newlines=False`` so a name cannot forge a
    second line either.
    """
    if text.isascii() and text.isprintable():
        return text
    return "".join(
        character
        if (keep_newlines and character == "\n") or unicodedata.category(character) not in _HIDDEN_CATEGORIES
        else (f"\\x{ord(character):02x}" if ord(character) < 0x100 else f"\\u{ord(character):04x}")
        for character in text
    )


def visible_lines(text: str, indent: str = "  ") -> str:
    """A report of several lines, each shown as :func:`visible` shows one line.

    Line breaks stay line breaks (a report of five problems prints as five
    lines, not ``\\x0a``), and every line after the first is indented, so no
    line a name smuggles in can pass for a message of its own; other control
    characters are escaped as always.
    """
    first, *rest = text.split("\n")
    lines = [visible(first, keep_newlines=False)]
    for line in rest:
        shown = visible(line, keep_newlines=False)
        lines.append(shown if shown.startswith(indent) else indent + shown)
    return "\n".join(lines)


# --------------------------------------------------------------------------
# What renders as nothing, or as blank: by Unicode property, not by example
# --------------------------------------------------------------------------

# Default_Ignorable_Code_Point, from the Unicode Character Database's
# DerivedCoreProperties.txt (Unicode 15.1; unchanged in 16.0): code points a
# renderer shows as nothing when it has no glyph for them. Python's
# unicodedata has no such property, so its ranges are vendored here. The
# derivation (UAX #44): Other_Default_Ignorable_Code_Point + Cf +
# Variation_Selector, minus White_Space, U+FFF9..U+FFFB, U+13430..U+1343F and
# the prepended concatenation marks; the Cf members are also caught by their
# category, so this list matters for the letters and marks among them: the
# Hangul fillers (Lo), U+034F, U+17B4..U+17B5, the Mongolian variation
# selectors, the reserved U+2065, U+FFF0..U+FFF8 and the tag block.
DEFAULT_IGNORABLE_RANGES: tuple[tuple[int, int], ...] = (
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x061C, 0x061C),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)
# Categories that render as nothing of their own, or as blank: controls, format
# characters, private use, surrogates and unassigned code points (no glyph, or
# one of the font's choosing), combining marks (they sit on the character
# before them, or on nothing at a line's start) and separators (spaces of
# every width, line and paragraph separators).
BLANK_CATEGORIES = frozenset({"Cc", "Cf", "Co", "Cs", "Cn", "Mn", "Me", "Mc", "Zs", "Zl", "Zp"})
# Assigned letters and symbols whose glyph is blank by design (in the code charts,
# a dashed box with nothing inside): the Braille pattern blank, the Hangul fillers
# (also default-ignorable), the Khitan small script filler, the musical null notehead.
BLANK_GLYPHS = frozenset("\u2800\u115f\u1160\u3164\uffa0\U00016fe4\U0001d159")
# Noncharacters: U+FDD0..U+FDEF and the last two code points of every plane (Cn already).
_NONCHARACTERS = frozenset(
    [*range(0xFDD0, 0xFDF0), *(plane * 0x10000 + last for plane in range(17) for last in (0xFFFE, 0xFFFF))]
)


def _default_ignorable(code: int) -> bool:
    return any(low <= code <= high for low, high in DEFAULT_IGNORABLE_RANGES)


@functools.lru_cache(maxsize=65536)
def renders_blank(character: str) -> bool:
    """Whether ``character`` renders as nothing or as blank space: what a reader cannot see.

    Default-ignorable code points (:data:`DEFAULT_IGNORABLE_RANGES`), the
    categories of :data:`BLANK_CATEGORIES`, noncharacters and the blank glyphs
    of :data:`BLANK_GLYPHS`. Used wherever a line's look decides something
    (rag.answering.prompts: whether a chunk's line reads as a source header).
    """
    code = ord(character)
    return (
        character in BLANK_GLYPHS
        or unicodedata.category(character) in BLANK_CATEGORIES
        or _default_ignorable(code)
        or code in _NONCHARACTERS
    )


def seen_text(text: str) -> str:
    """``text`` as a reader sees it: NFKC, without the characters that render blank (twice, as NFKC
    of what is left can compose anew)."""
    for _ in range(2):
        text = "".join(
            character for character in unicodedata.normalize("NFKC", text) if not renders_blank(character)
        )
    return text
