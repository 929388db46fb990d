"""The Markdown reader of the bundled corpus: front matter, headings and paragraphs to a Document.

Documents themselves (blocks with their heading paths, the full text every
offset points into) are :mod:`rag.documents.blocks`; inline markup is rendered
by :mod:`rag.documents.rendering`, which evidence spans go through too.
"""

from __future__ import annotations

import datetime
import functools
import json
import re
import unicodedata
from collections import Counter
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

from rag.corpus.front_matter import OTHER_LINE_SEPARATORS, FrontMatterError, key_lines, load_front_matter
from rag.corpus.markdown_dialects import strip_dialects
from rag.corpus.table_text import TableText, is_delimiter_row, markdown_cells, render_table
from rag.documents.access_metadata import (
    DEFAULT_ACCESS,
    DocumentDefaults,
    DocumentError,
    check_access_level,
    check_acl,
    check_default_keys,
    check_lookalikes,
    check_tenant,
    read_access_metadata,
)
from rag.documents.blocks import (
    Block,
    Document,
    content_version,
)
from rag.documents.inline_markup import (
    normalise_label,
    remove_active_elements,
    remove_comments,
)
from rag.documents.rendering import _QUOTE_MARKERS, render_inline

# Bumped whenever parsing can give different text for the same file: chunk ids
# include it, so text from two parser versions never shares an id.
# Not bumped when other dialects' markup came to be dropped: the bundled corpus gives
# the same text as before, and a bump would change
# every chunk id, hence the tie order of rankings and the prompts of the sealed replies.
# A changed text still gets new ids through its content version, unless the front
# matter pins a 'version'.
PARSER_VERSION = "4"

# Sections that describe the document instead of stating its facts.
SKIPPED_SECTIONS: frozenset[str] = frozenset(
    {"references", "further reading", "see also", "notes", "external links", "bibliography", "sources"}
)


# What a reader may leave out of the indexed text. Which of them it does is a
# per-corpus setting (``skip``); every skipped line is counted per document, so
# nothing is lost without a trace in results/corpus_statistics.csv.
SKIPPABLE: tuple[str, ...] = ("tables", "lists", "references", "code")
# The defaults per source are their rows' (rag.corpus.source_kinds.SOURCES).


def table_block(section: tuple[str, ...], rendering: TableText, page: str = "") -> Block:
    """A block holding one of a table's renderings, with where its rows are."""
    return Block(section, rendering.text, page, rendering.rows)


# --------------------------------------------------------------------------
# Markdown
# --------------------------------------------------------------------------

# Only for the stray 'access' check before the first heading; the document's own
# headings (ATX and setext) are CommonMark's, found by markdown-it (:func:`_block_structure`).
_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:\s|$)|^ {0,3}(?:=+|-+)\s*$")
_LIST_ITEM = re.compile(r"^\s*(?:([-*+])|(\d+)[.)])\s+")
_TABLE_ROW = re.compile(r"^\s*\|")
_FENCE = re.compile(r"^\s*(```|~~~)")
_SPACES = re.compile(r"\s+")
# Characters around a front matter fence that do not make it another line: spaces,
# a stray byte-order mark, zero-width characters.
_INVISIBLE_EDGES = " \t\ufeff\u200b\u200c\u200d\u2060"
_STRAY_ACCESS = re.compile(r"^[\s\ufeff\u200b]*access\s*:", re.IGNORECASE)
# A first line that is a fence followed by a separator the line split does not see.
_OTHER_SEPARATOR_FENCE = re.compile(f"---[ \t]*[{OTHER_LINE_SEPARATORS}]")
# The front matter keys the pipeline reads, each checked strictly. Any other key
# (hide-toc, MyST's settings, a static site generator's) is kept as metadata of the
# parse and listed in one warning (:class:`ParsedFile`), never an error.
USED_FRONT_MATTER: tuple[str, ...] = (
    "id",
    "title",
    "version",
    "url",
    "updated",
    "tags",
    "access",
    "tenant",
    "acl",
)
# A MyST target, "(install-guide)=" on a line of its own: a label for links, not text.
_MYST_TARGET = re.compile(r"^ {0,3}\([^()\s]+\)=\s*$")
# The first line of a GitHub alert (> [!NOTE]), shown as a label, not as text.
_ALERT = re.compile(r"^\[!(?:NOTE|TIP|IMPORTANT|WARNING|CAUTION)\]\s*$", re.IGNORECASE)


def strip_markup(body: str) -> str:
    """The Markdown body without HTML comments and active elements (script, style, ...).

    Retrieved text ends up in prompts, so anything a browser would execute or
    hide is dropped whole at parsing, across lines and paragraphs; the prompt
    layer escapes whatever markup-like text is left, so parsing is a first
    line of defence, not the only one.
    """
    return remove_active_elements(remove_comments(body))


def _front_matter(text: str, name: str) -> tuple[dict, str, int]:
    """The front matter mapping, the body after it, and the body's first line number.

    Fails closed: a file whose first non-blank line is ``---`` declares front
    matter, and if that front matter is never closed or does not parse, the
    document is an error naming the file and line, never public text (the
    front matter would otherwise be indexed, ``access`` and all, as prose).
    """
    lines = text.split("\n")
    opening = next((index for index, line in enumerate(lines) if line.strip(_INVISIBLE_EDGES)), None)
    first = "" if opening is None else lines[opening].strip(_INVISIBLE_EDGES)
    if opening is not None and first != "---" and _OTHER_SEPARATOR_FENCE.match(first):
        raise DocumentError(
            f"{name}, line {opening + 1}: the front matter fence is followed by a line separator "
            "other than LF, CRLF or CR"
        )
    if opening is None or first != "---":
        for number, line in enumerate(lines, start=1):
            if _HEADING.match(line):
                break
            if _STRAY_ACCESS.match(line):
                raise DocumentError(
                    f"{name}, line {number}: an 'access' key outside front matter (is the opening "
                    "'---' line missing?)"
                )
        return {}, text, 1
    if opening != 0:
        raise DocumentError(
            f"{name}, line {opening + 1}: front matter must open on line 1 "
            "(remove the blank lines above '---')"
        )
    closing = next(
        (
            index
            for index in range(opening + 1, len(lines))
            if lines[index].strip(_INVISIBLE_EDGES) in ("---", "...")
        ),
        None,
    )
    if closing is None:
        raise DocumentError(
            f"{name}, line {opening + 1}: front matter opened by '---' is never closed by a '---' line"
        )
    block = "\n".join(lines[opening + 1 : closing])
    try:
        meta = load_front_matter(block, opening + 2)
    except FrontMatterError as error:
        raise DocumentError(f"{name}, {error}") from None
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        raise DocumentError(f"{name}, line {opening + 2}: front matter must be a mapping of keys to values")
    check_lookalikes(meta, name, key_lines(block, opening + 2))
    return meta, "\n".join(lines[closing + 1 :]), closing + 2


def _shown(value: object, characters: int = 60) -> str:
    """A front matter value as quoted in an error: its repr, cut so the message stays one short line."""
    text = repr(value)
    return text if len(text) <= characters else text[: characters - 3] + "..."


def _metadata_text(meta: dict, key: str, name: str) -> str | None:
    value = meta.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, str | int | float) or not str(value).strip():
        raise DocumentError(
            f"{name}: front matter {key!r} must be a non-empty text or number, got {_shown(value)}"
        )
    return str(value).strip()


def _metadata_date(meta: dict, name: str) -> str | None:
    value = meta.get("updated")
    if value is None:
        return None
    if isinstance(value, datetime.datetime):
        value = value.date()
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, str):
        try:
            return datetime.date.fromisoformat(value.strip()).isoformat()
        except ValueError:
            pass
    raise DocumentError(f"{name}: front matter 'updated' must be a date (YYYY-MM-DD), got {_shown(value)}")


def _metadata_tags(meta: dict, name: str) -> tuple[str, ...]:
    value = meta.get("tags")
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(tag, str) and tag.strip() for tag in value):
        raise DocumentError(f"{name}: front matter 'tags' must be a list of texts, got {_shown(value)}")
    return tuple(tag.strip() for tag in value)


def _metadata_policy(meta: dict, name: str, defaults: DocumentDefaults) -> tuple[str, str, tuple[str, ...]]:
    """Access level, tenant and groups the front matter states, else the corpus's defaults
    (:func:`rag.documents.access_metadata.read_access_metadata`, the schema every source shares)."""
    fields = read_access_metadata(meta, name, defaults, label=lambda key: f"{name}: front matter {key!r}")
    return fields.access, fields.tenant, fields.acl


def document_defaults(entry: Mapping, where: str) -> DocumentDefaults:
    """A corpus entry's ``default_access``, ``default_tenant`` and ``default_acl``, checked.

    Only ``default_access`` has a default (restricted); a tenant and groups are
    given to documents that state none only when the entry says so explicitly.
    """
    check_default_keys(entry, where)  # 'Default_Access', 'default_groups': never silently ignored
    access = check_access_level(entry.get("default_access", DEFAULT_ACCESS), f"{where}['default_access']")
    tenant = (
        check_tenant(entry["default_tenant"], f"{where}['default_tenant']")
        if "default_tenant" in entry
        else ""
    )
    acl = check_acl(entry["default_acl"], f"{where}['default_acl']") if "default_acl" in entry else ()
    return DocumentDefaults(access, tenant, acl)


def check_document_id(doc_id: str, name: str) -> str:
    """A document id without control or format characters; ``name`` identifies the file in the error.

    Ids reach terminals, logs and CSV tables (metrics_by_document.csv): an
    ESC or a bidi override in one would rewrite what a reader sees, so it is
    refused at parsing, shown escaped.
    """
    if any(unicodedata.category(character) in ("Cc", "Cf", "Zl", "Zp") for character in doc_id):
        raise DocumentError(f"{name}: document id {doc_id!r} holds control or invisible characters")
    return doc_id


def normalise_line_breaks(text: str) -> str:
    """The text without a leading byte-order mark, with every line break as ``\\n``.

    Front matter is found by its ``---`` lines; a BOM or ``\\r\\n`` endings must
    not hide it, or its ``access`` would silently fall back to the default.
    """
    return text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")


def check_skipped(skip: Collection[str], where: str) -> tuple[str, ...]:
    """The ``skip`` setting of a corpus in canonical order; an unknown kind is an error."""
    unknown = sorted(set(skip) - set(SKIPPABLE))
    if unknown:
        raise DocumentError(f"{where}: cannot skip {unknown[0]!r}; choose from {list(SKIPPABLE)}")
    return tuple(kind for kind in SKIPPABLE if kind in skip)


@dataclass(frozen=True)
class ParsedFile:
    """One file read: its document, what the reader skipped, and front matter it did not use.

    ``other_metadata`` holds the front matter keys outside :data:`USED_FRONT_MATTER`
    (``hide-toc``, MyST's keys), each value as JSON text: kept with the parse, and
    listed in a warning, so a header written for another tool is no error.
    """

    document: Document
    skipped: dict[str, int]
    other_metadata: dict[str, str] = field(default_factory=dict)
    # Where the title came from when the file has neither a 'title' nor a level-1 heading
    # ("its first heading (...)", "its file name"); None otherwise.
    title_from: str | None = None


def parse_markdown(
    text: str,
    name: str,
    default_access: str = DEFAULT_ACCESS,
    skip: Collection[str] = SKIPPABLE,
    default_tenant: str = "",
    default_acl: tuple[str, ...] = (),
) -> Document:
    """Parse one Markdown document: its title, sections and paragraphs.

    By default tables, lists, code fences and reference-like sections are left
    out: they do not read as prose and would pollute both chunks and evidence
    matching. ``skip`` names the ones to leave out (see :data:`SKIPPABLE`).
    HTML comments, scripts and other active elements are removed with their
    content and every other tag is stripped (:func:`strip_markup`).
    ``name`` (usually the file name) identifies the document in errors and is
    its id when the front matter has none. ``default_access``,
    ``default_tenant`` and ``default_acl`` are the corpus's settings for a
    document whose front matter states no ``access``, ``tenant`` or ``acl``;
    a stated one is checked (:data:`ACCESS_LEVELS`, :data:`PRINCIPAL_NAME`).
    """
    return parse_markdown_file(text, name, skip, default_access, default_tenant, default_acl).document


def parse_markdown_counted(
    text: str, name: str, skip: Collection[str] = SKIPPABLE, default_access: str = DEFAULT_ACCESS
) -> tuple[Document, dict[str, int]]:
    """:func:`parse_markdown`, with the number of lines skipped of each kind."""
    parsed = parse_markdown_file(text, name, skip, default_access)
    return parsed.document, parsed.skipped


@functools.cache
def _commonmark_blocks():
    """markdown-it's CommonMark block parser; inline parsing is off (its runs of unclosed
    openers are slow, and :func:`render_inline` reads the inline markup in linear time)."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").disable(["inline", "text_join"])


@dataclass(frozen=True)
class _Structure:
    """Where a Markdown body's headings and its lines without text are, by line index."""

    headings: dict[int, tuple[int, str, int]]  # first line: (level, text, line after the heading)
    unrendered: frozenset[int]  # thematic breaks and link reference definitions
    labels: frozenset[str] = frozenset()  # the defined link labels (normalise_label)
    html_titles: tuple[tuple[int, str], ...] = ()  # (first line, text) of each <h1> of an HTML block


# The blocks that hold text (at any depth, inside lists and quotes too): a non-blank line
# none of them holds is a link reference definition or a bare list or quote marker.
_LEAF_BLOCKS = frozenset({"paragraph_open", "heading_open", "fence", "code_block", "html_block", "hr"})
# An <h1> element of an HTML block, as a README writes its title (<h1 align="center">Got</h1>).
_HTML_TITLE = re.compile(r"<h1\b[^>]*>(.*?)</h1\s*>", re.IGNORECASE | re.DOTALL)


def _block_structure(lines: list[str]) -> _Structure:
    """The headings of a Markdown body, as CommonMark reads them, and the lines it renders as nothing.

    Every heading form counts: ATX (``## Orbit``, up to three spaces in,
    closing ``#`` removed) and setext (a paragraph underlined with ``===`` for
    level 1 or ``---`` for level 2). Only top-level headings give the document
    its sections; one inside a list or quote stays text. Lines that no
    block of text holds are link reference definitions (``[npm]: https://...``,
    at any depth) or bare list and quote markers,
    whose labels are kept to resolve shortcut links (``[npm]``); an ``<h1>`` in
    an HTML block is kept as a candidate title.
    """
    env: dict = {}
    tokens = _commonmark_blocks().parse("\n".join(lines), env)
    headings: dict[int, tuple[int, str, int]] = {}
    covered = bytearray(len(lines))
    rules: set[int] = set()
    html_titles: list[tuple[int, str]] = []
    for position, token in enumerate(tokens):
        if token.map is None:
            continue
        first, after = token.map
        if token.type in _LEAF_BLOCKS:
            covered[first:after] = b"\x01" * (after - first)
        if token.level != 0:
            continue
        if token.type == "heading_open":
            headings[first] = (int(token.tag[1:]), tokens[position + 1].content, after)
        elif token.type == "hr":
            rules.update(range(first, after))
        elif token.type == "html_block":
            html_titles += [(first, match.group(1)) for match in _HTML_TITLE.finditer(token.content)]
    definitions = {index for index, line in enumerate(lines) if not covered[index] and line.strip()}
    labels = frozenset(normalise_label(label) for label in env.get("references", {}))
    return _Structure(headings, frozenset(rules | definitions), labels, tuple(html_titles))


def _other_metadata(meta: dict) -> dict[str, str]:
    """The front matter keys the pipeline does not read, each value as JSON text."""
    return {
        str(key): json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)
        for key, value in sorted(meta.items(), key=lambda item: str(item[0]))
        if key not in USED_FRONT_MATTER
    }


@dataclass
class _BodyReader:
    """The paragraphs of a Markdown body, read line by line (:func:`_read_body`).

    Holds what a line's meaning depends on: the heading path, whether the
    section is skipped, whether a fence is open, and the open paragraph with
    whether it is a kept list item or a quote.
    """

    skip: tuple[str, ...]
    labels: frozenset[str] = frozenset()
    title_line: int | None = None  # a heading that titles the document as a level-1 heading would
    path: list[str] = field(default_factory=list)
    skipping: bool = False
    fence_line: int | None = None  # the line index of the open code fence
    in_item: bool = False  # whether the open paragraph is a kept list item
    in_quote: bool = False  # whether the open paragraph is a quote
    paragraph: list[str] = field(default_factory=list)
    table: list[list[str]] = field(default_factory=list)  # the rows of the open table
    blocks: list[Block] = field(default_factory=list)
    skipped: Counter = field(default_factory=Counter)
    headings: list[tuple[int, int, str]] = field(default_factory=list)  # (line, level, text), not empty

    def flush(self) -> None:
        """The open table, then the open paragraph, as blocks."""
        self.flush_table()
        self.flush_paragraph()

    def flush_paragraph(self) -> None:
        if self.paragraph and not self.skipping:
            joined = render_inline(" ".join(self.paragraph), self.labels)
            if joined:
                self.blocks.append(Block(tuple(self.path), joined))
        self.paragraph.clear()
        self.in_item = self.in_quote = False

    def code(self, line: str) -> None:
        """A line inside a code fence: skipped with its section, skipped as code, or kept."""
        if self.skipping:
            self.skipped["references"] += bool(line.strip())
        elif "code" in self.skip:
            self.skipped["code"] += bool(line.strip())
        else:
            self.paragraph.append(line.strip())

    def heading(self, line: int, level: int, text: str) -> None:
        """A heading: level 1 starts the document over, deeper levels set the section path."""
        self.flush()
        if text:
            self.headings.append((line, level, text))
        if level == 1 or line == self.title_line:
            self.path, self.skipping = [], False
            return
        self.path = self.path[: level - 2] + [text]
        self.skipping = "references" in self.skip and any(
            part.lower() in SKIPPED_SECTIONS for part in self.path
        )

    def unquoted(self, line: str) -> str | None:
        """A line without its quote markers; None when nothing of it is left to read."""
        quoted = _QUOTE_MARKERS.match(line)
        if not quoted:
            return line
        if self.paragraph and not self.in_quote:
            self.flush()  # a quote starts a block of its own
        line = line[quoted.end() :]
        if not line.strip() or _ALERT.match(line.strip()):
            self.flush()
            return None
        self.in_quote = True
        return line

    def table_row(self, line: str) -> None:
        """A table row: skipped, or one more row of the open table (a delimiter row is nothing).

        The table is rendered when it ends (:meth:`flush`), as every source's tables are
        (:func:`rag.corpus.table_text.render_table`): its first row is the header.
        """
        self.flush_paragraph()
        if "tables" in self.skip:
            self.skipped["tables"] += 1
        elif not is_delimiter_row(line):
            self.table.append([render_inline(cell, self.labels) for cell in markdown_cells(line)])

    def flush_table(self) -> None:
        """The open table as two blocks, its text rendering and its "header: value" rows."""
        rows, self.table = self.table, []
        if rows and not self.skipping:
            for rendering in render_table(rows):
                if rendering.text:
                    self.blocks.append(table_block(tuple(self.path), rendering))

    def list_item(self, line: str, item: re.Match[str]) -> None:
        """A list item's first line, or wrapped prose that only looks like one ("4. " mid-paragraph)."""
        bullet, number = item.group(1), item.group(2)
        if self.paragraph and not self.in_item and number is not None and int(number) != 1:
            self.paragraph.append(line.strip())  # wrapped prose, not a list
            return
        self.flush()
        if "lists" in self.skip:
            self.skipped["lists"] += 1
            return
        self.paragraph.append(line[item.end() :].strip() if bullet else line.strip())
        self.in_item = True

    def text(self, line: str) -> None:
        """A line outside fences and headings: quote, blank, table row, list item or prose."""
        line = self.unquoted(line)
        if line is None:
            return
        if self.table and not _TABLE_ROW.match(line):
            self.flush_table()  # a table ends at the first line that is not one of its rows
        if not line.strip():
            self.flush()
        elif self.skipping:
            self.skipped["references"] += 1
        elif _TABLE_ROW.match(line):
            self.table_row(line)
        elif item := _LIST_ITEM.match(line):
            self.list_item(line, item)
        else:
            self.paragraph.append(line.strip())


def _title_heading(structure: _Structure, stated: str | None) -> int | None:
    """The line of the heading that stands for a missing level-1 heading, or None.

    A chapter that starts at ``## Functions`` and has only deeper headings
    below is titled by that heading, which then heads no section of its own
    (its blocks are not "Functions › Functions › ..."). Only when the document
    states no title, has no level-1 heading (an HTML ``<h1>`` counts), and
    its first heading is the only one of the highest level it uses.
    """
    if stated or structure.html_titles:
        return None
    headings = sorted((line, level) for line, (level, text, _) in structure.headings.items() if text.strip())
    if not headings:
        return None
    line, level = headings[0]
    levels = [other for _, other in headings]
    if min(levels) < level or levels.count(level) > 1:
        return None
    return line


def _read_body(
    lines: list[str], structure: _Structure, skip: tuple[str, ...], title_line: int | None = None
) -> _BodyReader:
    """Every line of the body read by a :class:`_BodyReader`, with ``structure``'s headings."""
    reader = _BodyReader(skip, structure.labels, title_line)
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        if _FENCE.match(line):
            reader.flush()
            reader.fence_line = index - 1 if reader.fence_line is None else None
        elif reader.fence_line is not None:
            reader.code(line)
        elif heading := structure.headings.get(index - 1):
            reader.heading(index - 1, heading[0], render_inline(heading[1], structure.labels))
            index = heading[2]
        elif index - 1 in structure.unrendered or _MYST_TARGET.match(line):
            reader.flush()
        else:
            reader.text(line)
    reader.flush()
    return reader


def _file_stem(name: str) -> str:
    """The file's name without folder or ``.md`` ending: the default document id."""
    return re.sub(r"\.md$", "", re.split(r"[\\/]", name)[-1])


def _title(
    stated: str | None, reader: _BodyReader, structure: _Structure, name: str
) -> tuple[str, str | None]:
    """The document's title, and where it came from when not from the front matter or a level-1 heading.

    The front matter's ``title``, else the first level-1 heading (an ``<h1>``
    of an HTML block counts as one), else the first heading of any level, else
    the file name; the second value names the fallback (for one warning).
    """
    if stated:
        return stated, None
    html = [(line, 1, render_inline(text, structure.labels)) for line, text in structure.html_titles]
    first = sorted([*reader.headings, *html], key=lambda heading: heading[0])
    title = next((text for _, level, text in first if level == 1 and text), None)
    if title:
        return title, None
    if first:
        return first[0][2], f"its first heading ({first[0][2]!r}, level {first[0][1]})"
    return _file_stem(name), "its file name"


def parse_markdown_file(
    text: str,
    name: str,
    skip: Collection[str] = SKIPPABLE,
    default_access: str = DEFAULT_ACCESS,
    default_tenant: str = "",
    default_acl: tuple[str, ...] = (),
) -> ParsedFile:
    """:func:`parse_markdown`, with the lines skipped of each kind and the front matter it did not use.

    The headings are CommonMark's (:func:`_block_structure`): ATX and setext,
    level 1 the title (unless the front matter has one; without either, the
    first heading or the file name, noted in ``ParsedFile.title_from``), deeper
    levels the section path. Thematic breaks, link reference definitions and MyST targets
    (``(label)=``) are not text; other dialects' markup is dropped first
    (:func:`rag.corpus.markdown_dialects.strip_dialects`).
    Quote markers (``> ``) are removed, and a quote is a paragraph of its own.
    Kept list items become paragraphs of their own, without their bullet (an
    ordered item keeps its number, which is part of its text). As in
    CommonMark, a line starting "4. " inside a paragraph continues that
    paragraph: only an ordered list starting at 1 may interrupt one, so
    wrapped prose is never mistaken for a list.
    """
    skip = check_skipped(skip, name)
    meta, body, first_line = _front_matter(normalise_line_breaks(text), name)
    defaults = DocumentDefaults(
        check_access_level(default_access, "default access level"), default_tenant, default_acl
    )
    stated = _stated_fields(meta, name, defaults)
    reader, structure = _read_markdown_body(body, name, first_line, skip, stated.title)
    title, title_from = _title(stated.title, reader, structure, name)
    if not reader.blocks:
        raise DocumentError(f"{name}: no paragraphs to index")
    document = _markdown_document(stated, title, reader.blocks, name)
    skipped = {kind: reader.skipped[kind] for kind in SKIPPABLE}
    return ParsedFile(document, skipped, _other_metadata(meta), title_from)


@dataclass(frozen=True)
class _StatedFields:
    """What a Markdown file's front matter states about its document (None: not stated), with
    the access level, tenant and groups it states or the corpus's defaults."""

    title: str | None
    doc_id: str | None
    version: str | None
    url: str | None
    updated: str | None
    tags: tuple[str, ...]
    access: str
    tenant: str
    acl: tuple[str, ...]


def _stated_fields(meta: dict, name: str, defaults: DocumentDefaults) -> _StatedFields:
    """The front matter keys the pipeline reads, each checked (an error names the file and key)."""
    title = _metadata_text(meta, "title", name)
    doc_id = _metadata_text(meta, "id", name)
    version = _metadata_text(meta, "version", name)
    url = _metadata_text(meta, "url", name)
    updated = _metadata_date(meta, name)
    tags = _metadata_tags(meta, name)
    access, tenant, acl = _metadata_policy(meta, name, defaults)
    return _StatedFields(title, doc_id, version, url, updated, tags, access, tenant, acl)


def _read_markdown_body(
    body: str, name: str, first_line: int, skip: tuple[str, ...], stated_title: str | None
) -> tuple[_BodyReader, _Structure]:
    """The body's paragraphs and tables read under its CommonMark headings; a code fence left
    open is an error naming the file and the fence's line."""
    lines = strip_dialects(strip_markup(body).split("\n"))
    structure = _block_structure(lines)
    reader = _read_body(lines, structure, skip, _title_heading(structure, stated_title))
    if reader.fence_line is not None:
        raise DocumentError(f"{name}, line {first_line + reader.fence_line}: a code fence is never closed")
    return reader, structure


def _markdown_document(stated: _StatedFields, title: str, blocks: list[Block], name: str) -> Document:
    """The document of a Markdown file: its id, else the file's name; its version, else a digest."""
    return Document(
        doc_id=check_document_id(stated.doc_id or _file_stem(name), name),
        title=title,
        version=stated.version if stated.version is not None else content_version(blocks),
        blocks=tuple(blocks),
        url=stated.url,
        updated=stated.updated,
        tags=stated.tags,
        access=stated.access,
        tenant=stated.tenant,
        acl=stated.acl,
    )


def foreign_key_warning(
    other_keys: Iterable[tuple[str, Iterable[str]]], where: str, shown: int = 3
) -> str | None:
    """One warning listing the front matter keys the pipeline does not use, and which files use them.

    ``other_keys`` are (file name, its unused keys) pairs; None when no file has any.
    """
    files_by_key: dict[str, list[str]] = {}
    for file, keys in other_keys:
        for key in keys:
            files_by_key.setdefault(key, []).append(file)
    if not files_by_key:
        return None
    listed = []
    for key, files in sorted(files_by_key.items()):
        names = ", ".join(files[:shown]) + (f" and {len(files) - shown} more" if len(files) > shown else "")
        listed.append(f"{key!r} ({len(files)} file{'s' * (len(files) != 1)}: {names})")
    return f"{where}: front matter keys the pipeline does not use, kept as metadata: {'; '.join(listed)}"
