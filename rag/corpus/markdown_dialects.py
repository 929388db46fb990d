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

# A code fence, as the Markdown reader finds one (any indentation: fences sit in admonitions).
FENCE = re.compile(r"^\s*(```|~~~)")
# An MkDocs admonition or collapsible block (!!! note "Title", ???+ tip), or a content tab
# (=== "Tab"): its body is the following lines indented four more spaces.
_CONTAINER = re.compile(r"^(?:!!!|\?\?\?\+?)[ \t]*[\w-]*(?:[ \t]+.*)?$|^===\+?[ \t]+\S.*$")
# A Docusaurus admonition fence: ":::note", ":::tip Title", ":::info[Title]", or the closing ":::".
_DIRECTIVE = re.compile(r"^\s*:{3,}[ \t]*(?:[A-Za-z][\w-]*)?(?:\[[^\]\n]*\]|[ \t].*)?$")
# A Hugo shortcode ({{< name args >}}, {{% name %}}, closing {{< /name >}}) or an mdBook
# directive ({{#include path}}, {{#rustdoc_include path:anchor}}, {{#title ...}}).
_SHORTCODE = re.compile(r"\{\{(?:<.*?>|%.*?%|#[A-Za-z_][^{}\n]*?)\}\}")
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
_HEADING_ATTRIBUTES = re.compile(r"^( {0,3}#{1,6}[ \t].*?)[ \t]+\{[ \t]*[#.][^{}\n]*\}[ \t]*$")
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


def _drop_shortcodes(lines: list[str]) -> list[str]:
    """Hugo shortcodes and mdBook directives removed, on one line or across a few."""
    result: list[str] = []
    index = 0
    while index < len(lines):
        line = _SHORTCODE.sub("", lines[index])
        opening = _SHORTCODE_OPENING.search(line)
        if opening is not None:
            # A shortcode whose arguments run onto the next lines: drop up to its closer.
            closer = "}}"
            joined, end = line, index
            while (
                end + 1 < len(lines)
                and end - index < _SHORTCODE_LINES
                and closer not in joined[opening.end() :]
            ):
                end += 1
                joined += "\n" + lines[end]
            if closer in joined[opening.end() :]:
                kept = _SHORTCODE.sub("", joined.replace("\n", " ", joined.count("\n")))
                result += [kept] + [""] * (end - index)
                index = end + 1
                continue
        result.append(line if line == lines[index] or line.strip() else "")
        index += 1
    return result


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
    prose = ["" if _DIRECTIVE.match(line) else _HEADING_ATTRIBUTES.sub(r"\1", line) for line in prose]
    result = list(lines)
    for number, line in zip(outside, prose, strict=True):
        result[number] = line
    return result
