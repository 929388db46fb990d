"""One way to make a user's text safe for a terminal, a log or a CSV cell.

File names, ids, titles, server replies and warnings come from outside the
project. Printed raw, ESC and OSC sequences would drive the terminal (colours,
titles, hyperlinks, cursor moves), BEL rings, and a bidi override (U+202E)
reorders what is shown. Every place that shows such text calls :func:`visible`,
so the rule is written once.
"""

from __future__ import annotations

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
