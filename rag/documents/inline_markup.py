"""Markdown inline markup removed in linear time.

The Markdown reader used to remove tags, links, emphasis, comments and active
elements with regular expressions such as ``<[^>\\n]+>`` and
``!?\\[([^\\]]*)\\]\\([^)]*\\)``. Each is correct, but on a paragraph of
unclosed openers (a run of ``[``, ``*a ``, `` `x ``, ``<a ``, ``<!-``) the
engine retries from every opener and scans to the end each time: a 40 KB
paragraph took 16-30 s, so one hostile file could stall a run. (A CommonMark
library is no cure: markdown-it-py takes 8-90 s on 1 MB of the same runs.)

Each function here gives exactly what its regular expression gives (a test
compares them on random and adversarial inputs) but finds every closer with a
forward-only pointer or a binary search, so a 1 MB paragraph is read in well
under a second (``benchmarks/adversarial_parsing.py``).
"""

from __future__ import annotations

import re

# Elements whose content is code or hidden markup, not prose: removed with their
# content, so "<script>steal()</script>" leaves nothing behind, not "steal()".
ACTIVE_ELEMENTS = r"script|style|iframe|object|embed|template|noscript|svg|math"
_ACTIVE_OPENING = re.compile(rf"<({ACTIVE_ELEMENTS})\b", re.IGNORECASE)
# Delimiters of emphasis and code spans, longest first, as the regex tried them.
EMPHASIS_DELIMITERS = ("**", "__", "*", "_", "`")


class _NextOf:
    """The next match of ``pattern`` at or after ``start``, for rising starts.

    Starts only ever rise while a text is read, so the position found last is
    still the answer until the start passes it: the text is searched once per
    pointer, whatever the number of calls. ``pattern`` is compiled once by
    the caller (:func:`_any_of` for a set of characters).
    """

    def __init__(self, text: str, pattern: re.Pattern[str]) -> None:
        self.text = text
        self.pattern = pattern
        self.found = -1

    def at_or_after(self, start: int) -> int:
        """The position, or ``len(text)`` when there is none."""
        if self.found < start:
            match = self.pattern.search(self.text, start)
            self.found = match.start() if match else len(self.text)
        return self.found


def _any_of(characters: str) -> re.Pattern[str]:
    """A pattern matching any one of ``characters``: what most pointers look for."""
    return re.compile("[" + re.escape(characters) + "]")


def _closing(delimiter: str) -> re.Pattern[str]:
    """An emphasis or code closer: ``delimiter`` after a non-space character (``(?<=\\S)\\1``)."""
    return re.compile(r"(?<=\S)" + re.escape(delimiter))


def remove_comments(text: str) -> str:
    """``<!--.*?-->`` (across lines) removed; an unclosed comment is left for the paragraph reader."""
    pieces, position = [], 0
    while True:
        start = text.find("<!--", position)
        if start < 0:
            break
        end = text.find("-->", start + 4)
        if end < 0:  # no later opener can be closed either
            break
        pieces.append(text[position:start])
        position = end + 3
    pieces.append(text[position:])
    return "".join(pieces)


def remove_active_elements(text: str) -> str:
    """``<script ...>...</script>`` and the other active elements removed with their content.

    The same as ``<(tag)\\b[^>]*>.*?</\\1\\s*>`` (case-insensitive, across
    lines): the opening tag runs to the first ``>``, the element to the first
    closing tag of its name. A name that is never closed after some point is
    never closed after any later one, so it is not searched for again.
    """
    pieces, position, search_from = [], 0, 0
    tag_end = _NextOf(text, _any_of(">"))
    unclosed_after: dict[str, int] = {}
    while True:
        opening = _ACTIVE_OPENING.search(text, search_from)
        if opening is None:
            break
        name = opening.group(1).lower()
        close_of_tag = tag_end.at_or_after(opening.end())
        if close_of_tag >= len(text) or name in unclosed_after:
            search_from = opening.start() + 1
            if close_of_tag >= len(text):
                break  # no '>' remains: no later opening tag can end either
            continue
        closing = re.compile(rf"</{name}\s*>", re.IGNORECASE).search(text, close_of_tag + 1)
        if closing is None:
            unclosed_after[name] = opening.start()
            search_from = opening.start() + 1
            continue
        pieces.append(text[position : opening.start()])
        position = search_from = closing.end()
    pieces.append(text[position:])
    return "".join(pieces)


def remove_tags(text: str) -> str:
    """``<[^>\\n]+>`` removed: a ``<`` with at least one character before the next ``>`` on its line."""
    pieces, position, start = [], 0, 0
    stop = _NextOf(text, _any_of(">\n"))
    length = len(text)
    while True:
        start = text.find("<", start)
        if start < 0:
            break
        end = stop.at_or_after(start + 1)
        if end < length and text[end] == ">" and end > start + 1:
            pieces.append(text[position:start])
            position = start = end + 1
        elif end < length and text[end] == ">":
            start += 1  # "<>": the next '<' may still open a tag
        else:
            start = end + 1  # every '<' before this line break or the end fails alike
    pieces.append(text[position:])
    return "".join(pieces)


def unwrap_links(text: str) -> str:
    """``!?\\[([^\\]]*)\\]\\([^)]*\\)`` replaced by the link text: ``[Ceres](ceres.md)`` becomes ``Ceres``."""
    pieces, position, start = [], 0, 0
    close_bracket = _NextOf(text, _any_of("]"))
    close_parenthesis = _NextOf(text, _any_of(")"))
    length = len(text)
    while True:
        start = text.find("[", start)
        if start < 0:
            break
        bracket = close_bracket.at_or_after(start + 1)
        if bracket + 1 < length and text[bracket + 1] == "(":
            parenthesis = close_parenthesis.at_or_after(bracket + 2)
            if parenthesis < length:
                begin = start - 1 if start > position and text[start - 1] == "!" else start
                pieces += [text[position:begin], text[start + 1 : bracket]]
                position = start = parenthesis + 1
                continue
        if bracket >= length:
            break  # no ']' remains: no later '[' can close
        if bracket + 1 < length and text[bracket + 1] == "(":
            break  # no ')' remains: no later link can close
        start = bracket + 1  # every '[' before this ']' meets the same ']' and fails alike
    pieces.append(text[position:])
    return "".join(pieces)


def unwrap_emphasis(text: str) -> str:
    """``(\\*\\*|__|\\*|_|`)(?=\\S)(.+?)(?<=\\S)\\1`` replaced by its content, on one line.

    At each delimiter the longest delimiter is tried first, and the content
    ends at the first closing delimiter that follows a non-space character
    and lies on the same line, as the lazy ``.+?`` found it.
    """
    closers = {delimiter: _NextOf(text, _closing(delimiter)) for delimiter in EMPHASIS_DELIMITERS}
    line_end = _NextOf(text, _any_of("\n"))
    # A delimiter with no closer after some point has none after any later one.
    alive = [delimiter for delimiter in EMPHASIS_DELIMITERS if delimiter in text]
    opener = re.compile(r"[*_`]")
    pieces, position, index, length = [], 0, 0, len(text)
    while alive:
        match = opener.search(text, index)
        if match is None:
            break
        index = match.start()
        for delimiter in alive:
            width = len(delimiter)
            content = index + width
            if not text.startswith(delimiter, index) or content >= length or text[content].isspace():
                continue
            if text[content] == "\n":
                continue
            end = closers[delimiter].at_or_after(content + 1)
            if end >= length:
                alive = [other for other in alive if other != delimiter]
                break  # tried again at the same index without it
            if end <= line_end.at_or_after(content):
                pieces += [text[position:index], text[content:end]]
                position = index = end + width
                break
        else:
            index += 1
    pieces.append(text[position:])
    return "".join(pieces)


def unwrap_reference_links(text: str) -> str:
    """``!?(?<![\\w\\]])\\[([^\\]]*)\\]\\[[^\\]]*\\]`` replaced by the link text: ``[npm][npm-docs]``
    and ``[`fs.open()`][]`` (a full and a collapsed reference link) become ``npm`` and `` `fs.open()` ``.

    Whether the label is defined does not matter: the text is what a reader sees
    either way, and a span copied from the source renders the same without the
    document's definitions. A ``[`` right after a letter, digit, ``_`` or ``]``
    opens no link, so code such as ``matrix[i][j]`` stays as it is.
    """
    pieces, position, start = [], 0, 0
    close_bracket = _NextOf(text, _any_of("]"))
    close_label = _NextOf(text, _any_of("]"))
    length = len(text)
    while True:
        start = text.find("[", start)
        if start < 0:
            break
        if start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_]"):
            start += 1  # an index such as a[0][1], not a link; a later '[' may still open one
            continue
        bracket = close_bracket.at_or_after(start + 1)
        if bracket >= length:
            break  # no ']' remains: no later '[' can close
        if bracket + 1 < length and text[bracket + 1] == "[":
            label = close_label.at_or_after(bracket + 2)
            if label >= length:
                break  # no ']' after this one: no later link can close its label either
            begin = start - 1 if start > position and text[start - 1] == "!" else start
            pieces += [text[position:begin], text[start + 1 : bracket]]
            position = start = label + 1
            continue
        start = bracket + 1  # every '[' before this ']' meets the same ']' and fails alike
    pieces.append(text[position:])
    return "".join(pieces)


# A MyST role: ``{name}`` directly before a code span, as in {mod}`pip._internal`.
_ROLE = re.compile(r"\{[A-Za-z][\w:.+-]*\}`([^`\n]*)`")
# The explicit target of a role, "text <target>", of which a reader sees the text.
_ROLE_TARGET = re.compile(r"\s*<[^<>]*>$")


def _role_text(match: re.Match[str]) -> str:
    content = match.group(1).strip()
    shown = _ROLE_TARGET.sub("", content)
    if not shown:  # {doc}`<install>`: only a target, which is what is shown
        shown = content.strip("<>")
    if shown.startswith("~"):  # {py:func}`~pkg.module.name` shows "name"
        shown = shown[1:].rsplit(".", 1)[-1]
    return shown


def remove_roles(text: str) -> str:
    """MyST roles replaced by what they show: ``{mod}`pip.req``` becomes ``pip.req``.

    ``{ref}`the guide <install>``` shows "the guide", ``{doc}`<install>``` its
    target and ``{py:func}`~a.b.run``` "run". Linear: the content of a role
    ends at the next backtick or line break, which no other role can reach past.
    """
    return _ROLE.sub(_role_text, text)


# A shortcut reference link, [text] with no (url), [label] or ':' after it; "!" makes it an image.
_SHORTCUT = re.compile(r"(!?)\[([^\[\]\n]+)\](?![\[(:])")


def unwrap_shortcut_references(text: str, labels: frozenset[str]) -> str:
    """``[text]`` replaced by its text when ``text`` is a defined link label (``[text]: url``).

    ``labels`` are the document's definitions, normalised as CommonMark matches
    them (:func:`normalise_label`); a bracket whose text is not defined stays,
    since a reader sees it as written. Linear: a match stops at the next bracket.
    """
    if not labels:
        return text

    def shown(match: re.Match[str]) -> str:
        return match.group(2) if normalise_label(match.group(2)) in labels else match.group(0)

    return _SHORTCUT.sub(shown, text)


def normalise_label(label: str) -> str:
    """A link label as CommonMark compares them: trimmed, runs of whitespace as one space, case folded."""
    return " ".join(label.split()).casefold()
