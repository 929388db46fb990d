"""Encyclopedia articles: rendered MediaWiki HTML to paragraphs under headings.

Only running prose is kept. Tables, lists, captions, formulas and reference
material do not read as sentences: indexed, they would produce chunks that no
question is about, and the evidence spans of the labels are always prose.

Two HTML shapes reach this module. The action API (``action=parse``) wraps the
article in ``div.mw-parser-output`` and marks headings either as
``<h2><span class="mw-headline">`` (older skins) or as
``<div class="mw-heading"><h2 id=...>`` (MediaWiki 1.43 and later). The REST
API returns Parsoid HTML, a whole page whose body nests ``<section>`` elements
with the heading inside. Both are read by heading level alone, so sections and
wrapper divs need no special case.

The parser is the standard library's :class:`html.parser.HTMLParser`: the
markup MediaWiki emits is balanced, and the few places where HTML closes an
element implicitly (a block starting inside a paragraph) are handled here.
Every page goes through :func:`closable_markup` first, which keeps that parser
linear on hostile input (1 MB of ``<a <a <a ...`` took hours before).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass
from html.parser import HTMLParser

from rag.corpus.documents import SKIPPABLE, SKIPPED_SECTIONS, table_block
from rag.corpus.table_text import HtmlTable, render_table
from rag.documents.access_metadata import (
    DEFAULT_ACCESS,
    AccessMetadataError,
    DocumentDefaults,
    DocumentError,
    field_of,
    lookalike_message,
    read_access_metadata,
)
from rag.documents.blocks import Block, Document, content_version
from rag.documents.passages import normalize_passage

# Elements whose whole content is left out, whatever their attributes.
SKIPPED_TAGS: frozenset[str] = frozenset(
    {
        "table",  # data tables, infoboxes, navboxes, succession boxes
        "ul",
        "ol",
        "dl",  # lists, and the indented "dd" lines that carry display formulas
        "figure",
        "figcaption",
        "math",
        "style",
        "script",
        "noscript",
        "head",  # Parsoid pages carry a <title> and metadata there
        "h1",  # the title comes from the caller, not from the page
        "audio",
        "video",
        "svg",
        "template",
    }
)

# Classes marking material that is about the article rather than part of it.
SKIPPED_CLASSES: frozenset[str] = frozenset(
    {
        "hatnote",  # "For other uses, see ..."
        "reference",  # inline citation markers, sup.reference and Parsoid's sup.mw-ref
        "references",
        "reflist",
        "mw-references-wrap",
        "thumb",  # figure boxes of the legacy parser
        "tmulti",  # multiple-image boxes
        "gallery",
        "mwe-math-element",
        "mw-editsection",
        "noprint",  # "[citation needed]", portals, and other screen-only notes
        "mw-empty-elt",
        "infobox",
        "navbox",
        "sidebar",
        "metadata",  # maintenance banners ("This article needs ...")
        "ambox",
        "shortdescription",
        "toc",  # the legacy table of contents, which has its own h2
        "coordinates",
        "geo",
        "geo-default",
    }
)

SKIPPED_IDS: frozenset[str] = frozenset({"coordinates", "toc"})

SKIPPED_ROLES: frozenset[str] = frozenset({"note", "navigation"})

# Elements that have no end tag: they must never enter the stack of open elements.
VOID_TAGS: frozenset[str] = frozenset(
    {
        "area",
        "base",
        "br",
        "col",
        "embed",
        "hr",
        "img",
        "input",
        "link",
        "meta",
        "param",
        "source",
        "track",
        "wbr",
    }
)

# Starting one of these inside an open paragraph ends the paragraph (HTML's implicit </p>).
_CLOSES_PARAGRAPH: frozenset[str] = frozenset(
    {
        "address",
        "article",
        "aside",
        "blockquote",
        "details",
        "div",
        "dl",
        "fieldset",
        "figcaption",
        "figure",
        "footer",
        "form",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "header",
        "hr",
        "main",
        "menu",
        "nav",
        "ol",
        "p",
        "pre",
        "section",
        "table",
        "ul",
    }
)

_HEADING_LEVELS = {"h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}


def normalize_whitespace(text: str) -> str:
    """The text the Markdown reader would store (:func:`rag.documents.passages.normalize_passage`):
    invisible characters (soft hyphen, zero-width space, word joiner, BOM)
    removed, NFKC, and every Unicode space run (the no-break and thin spaces of
    unit conversions included) one plain space, so evidence spans match."""
    return normalize_passage(text)


# What the reader counts as skipped, by the element that starts the skipped part.
_SKIPPED_KIND = {"table": "tables", "ul": "lists", "ol": "lists", "dl": "lists", "pre": "code"}


def is_skipped_element(tag: str, attributes: dict[str, str]) -> bool:
    """Whether an element (and everything inside it) stays out of the text."""
    if tag in SKIPPED_TAGS:
        return True
    classes = set((attributes.get("class") or "").split())
    if classes & SKIPPED_CLASSES:
        return True
    if (attributes.get("id") or "") in SKIPPED_IDS:
        return True
    return (attributes.get("role") or "") in SKIPPED_ROLES


_NAME_END = r"(?![-_.a-zA-Z0-9])"
_SECTIONS = r"(?:temp|cdata|ignore|include|rcdata)" + _NAME_END
_CONDITIONS = r"(?:if|else|endif)" + _NAME_END
# What html.parser looks for after an opener (and from how far into it): an opener
# with no such closer after it is never closed. None: never closed (html.parser
# stops with an AssertionError on a marked section of an unknown name, "<![foo[").
_CLOSERS: tuple[tuple[re.Pattern[str], re.Pattern[str] | None, int], ...] = (
    (re.compile(r"<"), re.compile(r">"), 1),
    (re.compile(r"<!--"), re.compile(r"--\s*>"), 4),
    (re.compile(r"<!\[" + _SECTIONS, re.IGNORECASE), re.compile(r"]\s*]\s*>"), 3),
    (re.compile(r"<!\[" + _CONDITIONS, re.IGNORECASE), re.compile(r"]\s*>"), 3),
    (re.compile(rf"<!\[(?!{_SECTIONS}|{_CONDITIONS})", re.IGNORECASE), None, 0),
)


def _unclosable_openers(html: str) -> set[int]:
    """The positions of every ``<`` whose construct has no closer after it (:data:`_CLOSERS`).

    html.parser reads such a construct as text up to the next ``>``, so every
    ``<`` up to there is text too; the next construct starts after it.
    """
    positions: set[int] = set()
    for opener, closer, reach in _CLOSERS:
        last = -1
        for last_match in closer.finditer(html) if closer else ():
            last = last_match.start()
        start = 0 if closer is None else max(0, last - reach + 1)
        covered = -1
        for match in opener.finditer(html, start):
            if match.start() <= covered:
                continue
            end = html.find(">", match.start() + 1)
            covered = len(html) if end < 0 else end
            positions.update(index for index in range(match.start(), covered) if html[index] == "<")
    return positions


def closable_markup(html: str) -> str:
    """``html`` with the ``<`` of every construct that is never closed written as ``&lt;``.

    Why: at the end of its input html.parser retries an unfinished tag,
    comment or marked section at each following ``<`` and scans to the end
    of the text each time, so 1 MB of ``<a <a <a ...`` (or ``<!--x>``,
    ``<![CDATA[ >``, ``<a b``) took minutes to hours. An opener with no closer
    after it is read as text by html.parser anyway, so writing its ``<`` as a
    character reference keeps the text and reads it in one forward pass. A
    marked section of an unknown name (``<![foo[``), which html.parser stops
    on with an AssertionError, is text too.
    """
    positions = _unclosable_openers(html)
    if not positions:
        return html
    pieces, previous = [], 0
    for position in sorted(positions):
        pieces += [html[previous:position], "&lt;"]
        previous = position + 1
    pieces.append(html[previous:])
    return "".join(pieces)


@dataclass
class _OpenElement:
    tag: str
    skipped: bool


class _ArticleReader(HTMLParser):
    """Walks the HTML once, keeping a stack of open elements.

    Text is collected only while a paragraph or a heading is open and no
    enclosing element is skipped; a skipped element is recorded on the stack,
    so its end (explicit or implied by an enclosing end tag) resumes collection.
    """

    def __init__(self, keep_tables: bool = False) -> None:
        super().__init__(convert_charrefs=True)
        # A data table (not an infobox or navbox) is read into rows when tables are kept.
        self.keep_tables = keep_tables
        self.table: HtmlTable | None = None
        self.table_depth = 0  # open kept <table> elements: more than 1 inside a nested table
        self.blocks: list[Block] = []
        self.path: list[str] = []
        self.stack: list[_OpenElement] = []
        # Where each tag is open on the stack, innermost last: finding the open
        # <p> stays constant-time however deep unclosed elements pile up.
        self.positions: dict[str, list[int]] = {}
        self.skipped_depth = 0
        self.paragraph: list[str] | None = None
        self.heading: list[str] | None = None
        self.heading_level = 0
        self.skipped: Counter[str] = Counter()

    # -- the stack -------------------------------------------------------------

    def _open_index(self, tag: str) -> int | None:
        positions = self.positions.get(tag)
        return positions[-1] if positions else None

    def _push(self, element: _OpenElement) -> None:
        self.positions.setdefault(element.tag, []).append(len(self.stack))
        self.stack.append(element)

    def _close_down_to(self, index: int) -> None:
        while len(self.stack) > index:
            element = self.stack.pop()
            self.positions[element.tag].pop()
            if element.skipped:
                self.skipped_depth -= 1
            elif self.skipped_depth == 0:
                self._finish(element.tag)

    def _finish(self, tag: str) -> None:
        if self.table is not None and tag in ("table", "td", "th"):
            self._finish_table_element(tag)
        elif tag == "p" and self.paragraph is not None:
            text = normalize_whitespace("".join(self.paragraph))
            self.paragraph = None
            if text and self._in_skipped_section():
                self.skipped["references"] += 1
            elif text:
                self.blocks.append(Block(tuple(self.path), text))
        elif tag in _HEADING_LEVELS and self.heading is not None:
            text = normalize_whitespace("".join(self.heading))
            self.heading = None
            if text:
                depth = self.heading_level - 2
                # A level jump (h2 straight to h4) keeps the heading at its own depth
                # under whatever headings are open, without inventing empty ones.
                self.path = self.path[:depth] + [text]

    def _finish_table_element(self, tag: str) -> None:
        """The end of a cell, of a nested table, or of the table: then its two renderings."""
        if tag != "table":
            if self.table_depth == 1:
                self.table.end_cell()
            return
        self.table_depth -= 1
        if self.table_depth:
            return
        rows, self.table = self.table.finish(), None
        if not rows:
            return
        if self._in_skipped_section():
            self.skipped["references"] += 1
            return
        for rendering in render_table(rows):
            if rendering.text:
                self.blocks.append(table_block(tuple(self.path), rendering))

    def _start_table_element(self, tag: str, attributes: dict[str, str]) -> bool:
        """A kept table's own element (table, tr, th, td); False for any other element."""
        if tag == "table":
            if self.table is None:
                self.table, self.paragraph, self.heading = HtmlTable(), None, None
            self.table_depth += 1
            return True
        if self.table is None or tag not in ("tr", "th", "td"):
            return False
        if self.table_depth > 1:
            self.table.data(" ")  # a nested table's cells are words of the outer cell
        elif tag == "tr":
            self.table.row()
        else:
            self.table.start_cell(attributes.get("colspan"))
        return True

    def _in_skipped_section(self) -> bool:
        return any(part.lower() in SKIPPED_SECTIONS for part in self.path)

    # -- HTMLParser callbacks ----------------------------------------------------

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _CLOSES_PARAGRAPH:
            paragraph_index = self._open_index("p")
            if paragraph_index is not None:
                self._close_down_to(paragraph_index)
        if tag in VOID_TAGS:
            if tag == "br" and self.skipped_depth == 0:
                self.handle_data(" ")
            return
        attributes = {name: value or "" for name, value in attrs}
        skipped = is_skipped_element(tag, attributes)
        if tag == "table" and self.keep_tables and not is_skipped_element("", attributes):
            skipped = False  # a data table, kept: not an infobox, navbox or other skipped class
        if self.skipped_depth == 0 and tag in _SKIPPED_KIND and (skipped or tag == "pre"):
            # pre is never inside a paragraph, so its text is left out too.
            self.skipped[_SKIPPED_KIND[tag]] += 1
        self._push(_OpenElement(tag, skipped))
        if skipped:
            self.skipped_depth += 1
            return
        if self.skipped_depth or self._start_table_element(tag, attributes):
            return
        if tag == "p" and self.heading is None:
            self.paragraph = []
        elif tag in _HEADING_LEVELS:
            self.paragraph = None
            self.heading = []
            self.heading_level = _HEADING_LEVELS[tag]

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        # XHTML-style "<br/>" or "<span/>": an element that opens and closes at once.
        self.handle_starttag(tag, attrs)
        if tag not in VOID_TAGS:
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        index = self._open_index(tag)
        if index is not None:  # a stray end tag closes nothing
            self._close_down_to(index)

    def handle_data(self, data: str) -> None:
        if self.skipped_depth:
            return
        if self.table is not None:
            self.table.data(data)
        elif self.heading is not None:
            self.heading.append(data)
        elif self.paragraph is not None:
            self.paragraph.append(data)

    def finish(self) -> list[Block]:
        self.close()
        self._close_down_to(0)
        return self.blocks


def parse_article_html(html: str, name: str) -> list[Block]:
    """Paragraphs of a rendered article (:func:`parse_article_html_counted` without the counts)."""
    return parse_article_html_counted(html, name)[0]


def parse_article_html_counted(
    html: str, name: str, skip: Collection[str] = SKIPPABLE
) -> tuple[list[Block], dict[str, int]]:
    """Paragraphs of a rendered article, each with its heading path.

    The lead (before the first h2) has the empty path; an h3 is nested under
    the h2 above it, and so on. Sections whose heading path contains a
    reference-like heading ("References", "See also", ...) are left out, like
    in the Markdown reader, so both sources yield comparable documents.
    ``name`` identifies the article in errors. Data tables are left out (and
    counted) unless ``skip`` leaves out something else but not "tables": then
    each becomes two blocks (:func:`rag.corpus.table_text.render_table`).
    """
    if not isinstance(html, str):
        raise DocumentError(f"{name}: expected the article's HTML as text, got {type(html).__name__}")
    reader = _ArticleReader(keep_tables="tables" not in skip)
    reader.feed(closable_markup(html))
    blocks = reader.finish()
    if not blocks:
        raise DocumentError(f"{name}: no paragraphs to index in the article's HTML")
    return blocks, {kind: reader.skipped[kind] for kind in SKIPPABLE}


class _Titles(HTMLParser):
    """The text of a page's first ``<h1>`` and first ``<title>``, markup inside them dropped.

    A parser, not a pattern: a lazy ``<(title|h1)...>(.*?)</...>`` search
    rescans the rest of the page from every unclosed opening tag, which is
    quadratic on hostile input.
    """

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.texts: dict[str, list[str]] = {}
        self.open: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("h1", "title") and self.open is None and tag not in self.texts:
            self.open = tag
            self.texts[tag] = []

    def handle_endtag(self, tag: str) -> None:
        if tag == self.open:
            self.open = None

    def handle_data(self, data: str) -> None:
        if self.open is not None:
            self.texts[self.open].append(data)


def _page_title(html: str) -> str | None:
    """The first ``<h1>``'s text, else the first ``<title>``'s, else None."""
    reader = _Titles()
    reader.feed(closable_markup(html))
    reader.close()
    for tag in ("h1", "title"):
        text = normalize_passage("".join(reader.texts.get(tag, ())))
        if text:
            return text
    return None


# The <meta name="..."> elements that say who may read a page.
POLICY_META = ("access", "tenant", "acl")


# The attributes by which a <meta> element names what it states: only ``name``
# states an access field; the others (RDFa, microdata, pragma) naming one are errors.
META_NAMING = ("name", "property", "http-equiv", "itemprop")


class _PolicyMeta(HTMLParser):
    """Every ``<meta>`` naming ``access``, ``tenant`` or ``acl``, with its line, every such
    element whose ``name`` or ``content`` attribute is given twice, and the first element
    that names one in another spelling or by another attribute (a lookalike)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: dict[str, list[tuple[int, str | None]]] = {key: [] for key in POLICY_META}
        self.doubled: list[tuple[int, str, str]] = []  # (line, attribute, the name it names)
        self.lookalikes: list[tuple[int, str, str, str]] = []  # (line, attribute, value, field)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag != "meta":
            return
        line = self.getpos()[0]
        for attribute, value in attrs:
            if attribute not in META_NAMING or value is None:
                continue
            field = field_of(value)
            if field is not None and not (attribute == "name" and value in POLICY_META):
                self.lookalikes.append((line, attribute, value, field))
        names = [value or "" for attribute, value in attrs if attribute == "name"]
        named = [name for name in names if name in POLICY_META]
        if not named:
            return
        contents = [value for attribute, value in attrs if attribute == "content"]
        if len(names) > 1:
            self.doubled.append((line, "name", named[0]))
        elif len(contents) > 1:
            self.doubled.append((line, "content", named[0]))
        else:
            self.found[named[0]].append((line, contents[0] if contents else None))

    handle_startendtag = handle_starttag


@dataclass(frozen=True)
class PagePolicy:
    """Who may read a page: its access level, tenant ("" shared) and groups (() every group)."""

    access: str = DEFAULT_ACCESS
    tenant: str = ""
    acl: tuple[str, ...] = ()


def declared_html_policy(
    html: str,
    name: str,
    default_access: str = DEFAULT_ACCESS,
    default_tenant: str = "",
    default_acl: tuple[str, ...] = (),
) -> PagePolicy:
    """What a page declares in ``<meta name="access|tenant|acl" content="...">``, else the defaults.

    ``acl`` lists group names separated by commas. Fails closed like Markdown
    front matter, naming the file and line: a second element naming the same
    key (even an agreeing one, since a later edit could make them disagree),
    an element with two ``name`` or two ``content`` attributes (browsers keep
    the first, a lenient reader the last: a restricted page would turn
    public), and a value that is not a level, tenant or list of groups.
    """
    reader = _PolicyMeta()
    reader.feed(closable_markup(html))
    reader.close()
    if reader.lookalikes:
        line, attribute, value, field = reader.lookalikes[0]
        if attribute == "name":
            raise AccessMetadataError(lookalike_message(value, field, f"{name}, line {line}: <meta name>"))
        raise AccessMetadataError(
            f'{name}, line {line}: <meta {attribute}="{value[:40]}"> names the access field {field!r}, '
            f'which only <meta name="{field}" content="..."> states; write it so'
        )
    if reader.doubled:
        line, attribute, key = reader.doubled[0]
        raise DocumentError(
            f'{name}, line {line}: <meta name="{key}"> has two {attribute!r} attributes; give it one'
        )
    for key in POLICY_META:
        found = reader.found[key]
        if len(found) > 1:
            raise DocumentError(
                f'{name}, line {found[1][0]}: a second <meta name="{key}"> (the first is on line '
                f"{found[0][0]}); declare it once"
            )
    stated = {key: (found[0][0], (found[0][1] or "").strip()) for key, found in reader.found.items() if found}
    lines = {(key,): line for key, (line, _) in stated.items()}

    def label(key: str) -> str:
        groups = " (groups separated by commas)" if key == "acl" else ""
        return f'{name}, line {lines[(key,)]}: <meta name="{key}">{groups}'

    fields = read_access_metadata(
        {key: value for key, (_, value) in stated.items()},
        name,
        DocumentDefaults(default_access, default_tenant, tuple(default_acl)),
        lines=lines,
        label=label,
        acl_separator=",",
    )
    access, tenant, acl = fields.access, fields.tenant, fields.acl
    return PagePolicy(access, tenant, acl)


def declared_html_access(html: str, name: str, default_access: str = DEFAULT_ACCESS) -> str:
    """The access a page declares in ``<meta name="access" content="...">``, else ``default_access``
    (:func:`declared_html_policy`, which checks the page's tenant and groups too)."""
    return declared_html_policy(html, name, default_access).access


def document_from_html_file(
    html: str,
    doc_id: str,
    default_access: str = DEFAULT_ACCESS,
    name: str | None = None,
    default_tenant: str = "",
    default_acl: tuple[str, ...] = (),
    skip: Collection[str] = SKIPPABLE,
) -> tuple[Document, dict[str, int]]:
    """A local HTML file as a document: the article reader's paragraphs, its <h1> or <title>.

    Lists, code and reference sections are always left out (and counted);
    data tables too when ``skip`` has "tables", else each is two blocks. Without a
    heading or title element the file's name is the title; the version is a
    digest of the text. The access level is the page's
    ``<meta name="access">``, its tenant and groups ``<meta name="tenant">`` and
    ``<meta name="acl">`` (:func:`declared_html_policy`), else the corpus's defaults.
    """
    policy = declared_html_policy(html, name or doc_id, default_access, default_tenant, default_acl)
    blocks, skipped = parse_article_html_counted(html, doc_id, skip)
    title = _page_title(html) or doc_id
    document = Document(
        doc_id=doc_id,
        title=title,
        version=content_version(blocks),
        blocks=tuple(blocks),
        access=policy.access,
        tenant=policy.tenant,
        acl=policy.acl,
    )
    return document, skipped


def document_from_html(
    html: str,
    doc_id: str,
    title: str,
    revision: int | str,
    url: str | None = None,
    updated: str | None = None,
    access: str = DEFAULT_ACCESS,
    tenant: str = "",
    acl: tuple[str, ...] = (),
) -> Document:
    """A :class:`Document` whose version is the article's revision id.

    The revision id, not a digest of the text, is the version: it is what the
    lock file pins and what a reader can open on the wiki.
    """
    if not doc_id or not doc_id.strip():
        raise DocumentError(f"{title!r}: empty document id")
    if not title or not title.strip():
        raise DocumentError(f"{doc_id}: empty title")
    version = str(revision).strip()
    if not version:
        raise DocumentError(f"{doc_id}: empty revision id")
    blocks = tuple(parse_article_html(html, doc_id))
    return Document(
        doc_id=doc_id,
        title=title,
        version=version,
        blocks=blocks,
        url=url,
        updated=updated,
        access=access,
        tenant=tenant,
        acl=tuple(acl),
    )
