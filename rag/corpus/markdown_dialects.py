"""The markup of other Markdown dialects, dropped before a body is read as CommonMark.

Documentation sites write Markdown with their generator's extensions: Hugo
shortcodes (``{{< figure >}}``, ``{{% note %}}``), MkDocs admonitions
(``!!! note "Title"`` with an indented body) and content tabs
(``=== "Tab"``), Docusaurus admonitions (``:::tip`` ... ``:::``) and MDX
``import`` / ``export`` statements, mdBook includes (``{{#include file}}``),
heading ids (``## Install {#install}``). A reader of the rendered page sees
none of that markup, so none of it may reach a chunk: each construct is
dropped and the text it holds is kept (an admonition's or a tab's body,
un-indented, a paired shortcode's content).

Every function works line by line, keeps the number of lines (a dropped line
becomes an empty one, so line numbers in errors still point into the file) and
leaves fenced code alone: an example of the markup inside a code block is code,
which the reader keeps or skips as code. Each pass is linear in the text.
"""

from __future__ import annotations

import re
import string

from rag.documents.inline_markup import _NextOf

# A code fence, as the Markdown reader finds one (any indentation: fences sit in admonitions).
FENCE = re.compile(r"^\s*(```|~~~)")
# An MkDocs admonition or collapsible block (!!! note "Title", ???+ tip), or a content tab
# (=== "Tab"): its body is the following lines indented four more spaces.
_CONTAINER = re.compile(r"^(?:!!!|\?\?\?\+?)[ \t]*[\w-]*(?:[ \t]+.*)?$|^===\+?[ \t]+\S.*$")
# A Docusaurus admonition fence: ":::note", ":::tip Title", ":::info[Title]", or the closing ":::".
_DIRECTIVE = re.compile(r"^\s*:{3,}[ \t]*(?:[A-Za-z][\w-]*)?(?:\[[^\]\n]*\]|[ \t].*)?$")
# A Hugo shortcode ({{< name args >}}, {{% name %}}, closing {{< /name >}}) or an mdBook
# directive ({{#include path}}, {{#rustdoc_include path:anchor}}, {{#title ...}}): what
# remove_shortcodes removes, in linear time (a test compares the two).
_SHORTCODE = re.compile(r"\{\{(?:<.*?>|%.*?%|#[A-Za-z_][^{}\n]*?)\}\}")
_CLOSERS = {"<": ">}}", "%": "%}}"}
_BRACE = re.compile(r"[{}]")
_NAME_START = frozenset(string.ascii_letters + "_")
_SHORTCODE_OPENING = re.compile(r"\{\{[<%#]")
# How many lines a shortcode may span before its opening is taken for text.
_SHORTCODE_LINES = 20
# An MDX statement: "import X from '...'", "import '...'", "export const ...", at a paragraph's start.
_ESM = re.compile(
    r"^(?:import\s+(?:[\w*{][^\n]*\bfrom\s*['\"]|['\"])|export\s+(?:default\b|const\b|let\b|var\b|function\b|\{))"
)
# An MDX comment on a line of its own: {/* ... */}.
_MDX_COMMENT = re.compile(r"^\s*\{/\*.*\*/\}\s*$")
# A heading's attribute list: "## Install {#install}" or "{ #id .class }" at the end of an ATX heading.
_ATX_HEADING = re.compile(r" {0,3}#{1,6}[ \t]")
_ATTRIBUTES = re.compile(r"\{[ \t]*[#.][^{}\n]*\}")
# Every marker this module removes, for tests that check none is left in a chunk.
DIALECT_MARKERS: tuple[str, ...] = ("{{<", "{{%", "{{#", "!!!", "???", ":::", '=== "', "import ", "export ")


def _indentation(line: str) -> int:
    return len(line.expandtabs(4)) - len(line.expandtabs(4).lstrip(" "))


def _dedented(line: str, columns: int) -> str:
    """``line`` with up to ``columns`` leading columns of indentation removed (a tab counts four)."""
    expanded = line.expandtabs(4) if line[:columns].count("\t") else line
    return expanded[min(columns, _indentation(expanded)) :]


def unwrap_containers(lines: list[str]) -> list[str]:
    """MkDocs admonitions and content tabs dropped, their indented bodies kept one level out.

    A marker line (``!!! note "Title"``, ``??? tip``, ``=== "Tab"``) opens a
    container whose body is every following line indented four columns more
    than the marker (blank lines included); the marker becomes an empty line.
    Nested containers are unwrapped level by level.
    """
    result: list[str] = []
    bodies: list[int] = []  # the indentation of each open container's body
    in_fence = False
    for line in lines:
        indent = _indentation(line)
        if line.strip():
            while bodies and indent < bodies[-1]:
                bodies.pop()
        shift = bodies[-1] if bodies else 0
        if FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence and _CONTAINER.match(line.strip()) and indent == shift:
            bodies.append(indent + 4)
            result.append("")
            continue
        result.append(_dedented(line, shift) if shift else line)
    return result


def remove_shortcodes(line: str) -> str:
    """Hugo shortcodes and mdBook directives removed from one line, in linear time.

    The same as :data:`_SHORTCODE` (``{{<`` to the first ``>}}``, ``{{%`` to the
    first ``%}}``, ``{{#name`` to the first ``}}`` with no brace between), but a
    closer that is not found after one opener is not searched for again after
    a later one, and the next brace is found by a forward-only pointer, so a
    line of unclosed openers takes one pass, not one per opener.
    """
    pieces, position, start = [], 0, 0
    unclosed: set[str] = set()
    brace = _NextOf(line, _BRACE)
    length = len(line)
    while True:
        start = line.find("{{", start)
        if start < 0:
            break
        opener = line[start + 2 : start + 3]
        if opener in _CLOSERS and opener not in unclosed:
            end = line.find(_CLOSERS[opener], start + 3)
            if end >= 0:
                pieces.append(line[position:start])
                position = start = end + len(_CLOSERS[opener])
                continue
            unclosed.add(opener)
        elif opener == "#" and start + 3 < length and line[start + 3] in _NAME_START:
            end = brace.at_or_after(start + 4)
            if line.startswith("}}", end):
                pieces.append(line[position:start])
                position = start = end + 2
                continue
        start += 1
    pieces.append(line[position:])
    return "".join(pieces)


def _drop_shortcodes(lines: list[str]) -> list[str]:
    """Hugo shortcodes and mdBook directives removed, on one line or across a few."""
    result: list[str] = []
    index = 0
    while index < len(lines):
        line = remove_shortcodes(lines[index])
        opening = _SHORTCODE_OPENING.search(line)
        if opening is not None:
            # A shortcode whose arguments run onto the next lines: dropped up to its closer.
            closer = _CLOSERS.get(opening.group(0)[-1], "}}")
            last = min(len(lines), index + 1 + _SHORTCODE_LINES)
            end = next((later for later in range(index + 1, last) if closer in lines[later]), None)
            if end is not None:
                kept = remove_shortcodes(" ".join([line, *lines[index + 1 : end + 1]]))
                result += [kept if kept.strip() else ""] + [""] * (end - index)
                index = end + 1
                continue
        result.append(line if line == lines[index] or line.strip() else "")
        index += 1
    return result


def _without_heading_attributes(line: str) -> str:
    """An ATX heading line without its attribute list (``## Install {#install}``); other lines as they are.

    Found from the last ``{`` of the line, so a line of many braces or spaces is read once.
    """
    heading = _ATX_HEADING.match(line)
    if heading is None or not line.rstrip().endswith("}"):
        return line
    brace = line.rfind("{")
    head = line[:brace].rstrip(" \t")
    if (
        line[brace - 1] not in " \t"
        or len(head) < heading.end()
        or not _ATTRIBUTES.fullmatch(line[brace:].rstrip())
    ):
        return line
    return head


def _drop_mdx(lines: list[str]) -> list[str]:
    """MDX import and export statements (a paragraph starting with one) and MDX comments dropped."""
    result: list[str] = []
    in_statement = False
    previous_blank = True
    for line in lines:
        if in_statement and not line.strip():
            in_statement = False
        elif previous_blank and _ESM.match(line):
            in_statement = True
        previous_blank = not line.strip()
        result.append("" if in_statement or _MDX_COMMENT.match(line) else line)
    return result


def strip_dialects(lines: list[str]) -> list[str]:
    """The body's lines without the markup of the dialects this module knows (see its docstring).

    Code fences are left as they are; everything else loses admonition and
    tab markers (bodies kept, un-indented), Docusaurus ``:::`` lines, Hugo
    shortcodes and mdBook directives, MDX statements and comments, and
    heading attribute lists. The result has as many lines as ``lines``.
    """
    lines = unwrap_containers(lines)
    outside: list[int] = []  # the lines outside code fences
    in_fence = False
    for number, line in enumerate(lines):
        if FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence:
            outside.append(number)
    prose = [lines[number] for number in outside]
    prose = _drop_mdx(_drop_shortcodes(prose))
    prose = ["" if _DIRECTIVE.match(line) else _without_heading_attributes(line) for line in prose]
    result = list(lines)
    for number, line in zip(outside, prose, strict=True):
        result[number] = line
    return result
