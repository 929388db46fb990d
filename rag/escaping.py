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
