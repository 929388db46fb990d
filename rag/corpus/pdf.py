"""The PDF source: a ``.pdf`` file's text in reading order, by page, with headings and tables.

The file is laid out by pdfminer.six (text boxes in reading order, so two
columns are read one after the other) and its tables found by pdfplumber, in a
child process with limits on memory and time (:mod:`rag.corpus.pdf_extract`):
an encrypted, damaged or hostile file (scripts, decompression bombs, deep
nesting, too many pages) is refused in one line naming it, never a hang or a
traceback. What the layout becomes is decided here, on plain data:

- headings come from the outline (bookmarks) where the file has one, else from
  font size and weight (a short box set larger than the body, or bold);
- page chrome is removed: a box in the top or bottom tenth of a page whose text
  (digits aside) repeats on at least half of the pages, and a bare page number;
- a word hyphenated at a line end is joined ("retriev-" + "al" = "retrieval");
- every block keeps its page as the first step of its heading path ("p. 14"),
  so a chunk's section, a prompt's citation and ``rag ask`` name the page:
  ``report › p. 14 › 3.2 Results``;
- a table becomes two blocks, as every source's tables do (:mod:`rag.corpus.table_text`):
  its text rendering (cells joined by " | ", rows by " / ") and its rows as
  "header: value" pairs, unless ``skip`` has tables;
- who may read it: ``access``, ``tenant`` and ``acl`` entries of the document
  information dictionary or the XMP packet (``<rag:access>`` and so on),
  checked as every source's are; a value that is not valid refuses the file.

A page without a text layer (a scan) is reported in one warning line naming
the file and its pages; a file with no text at all is refused.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Collection, Mapping
from pathlib import Path

from rag.corpus.documents import SKIPPABLE, SKIPPED_SECTIONS, ParsedFile, check_document_id, table_block
from rag.corpus.table_text import render_table
from rag.documents.access_metadata import DocumentDefaults, DocumentError, read_access_metadata
from rag.documents.blocks import Block, Document, content_version
from rag.documents.passages import normalize_passage

log = logging.getLogger(__name__)

# The limits of the child process that reads one file.
MEMORY_BYTES = 2 * 1024**3
CPU_SECONDS = 120
WALL_SECONDS = 240
# A box in this share of the page's height at its top or bottom may be chrome.
MARGIN = 0.1
# A box is a heading by its font when set this much larger than the body text.
HEADING_SCALE = 1.2
HEADING_WORDS = 15
PAGE_PREFIX = "p. "

_PAGE_NUMBER = re.compile(r"^(?:page\s*)?[-–—]?\s*\d{1,4}\s*[-–—]?(?:\s*(?:of|/)\s*\d{1,4})?$", re.IGNORECASE)
_DIGITS = re.compile(r"\d+")
_HYPHENATED = re.compile(r"(?<=[a-zà-ÿ])-$")
# A simple XMP element (prefix:name, text only): its name is checked like any metadata key.
_XMP_ELEMENT = re.compile(r"<(?:[\w.-]{1,64}:)?([\w.-]{1,64})>\s*([^<]{0,2000}?)\s*</(?:[\w.-]{1,64}:)?\1>")
_PDF_DATE = re.compile(r"^D:(\d{4})(\d{2})?(\d{2})?")


def _limits() -> None:  # pragma: no cover - runs in the child before it starts
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_SECONDS, CPU_SECONDS))


def extract_layout(data: bytes, name: str) -> dict:
    """The layout of a PDF's bytes, read in a child process with limits; a refusal names the file."""
    if not isinstance(data, bytes):
        raise DocumentError(f"{name}: a PDF is read as bytes, not text")
    if b"%PDF-" not in data[:1024]:
        raise DocumentError(f"{name}: not a PDF (no %PDF- header)")
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
    try:
        done = subprocess.run(
            [sys.executable, "-m", "rag.corpus.pdf_extract"],
            input=data,
            capture_output=True,
            timeout=WALL_SECONDS,
            preexec_fn=_limits,
            env=env,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise DocumentError(f"{name}: refused, reading it took longer than {WALL_SECONDS} s") from None
    if done.returncode != 0:
        why = (
            f"more than {CPU_SECONDS} s of CPU"
            if done.returncode in (-24, -9)
            else f"the reader stopped (exit {done.returncode}; out of its {MEMORY_BYTES // 1024**3} GB?)"
        )
        raise DocumentError(f"{name}: refused, damaged or hostile PDF: {why}")
    try:
        layout = json.loads(done.stdout)
    except ValueError:
        raise DocumentError(f"{name}: refused, the reader's output was not readable") from None
    if "error" in layout:
        raise DocumentError(f"{name}: {layout['error']}")
    return layout


def _chrome_key(text: str) -> str:
    return _DIGITS.sub("#", " ".join(text.lower().split()))


def _box_text(box: Mapping) -> str:
    """A box's lines as one passage, a word hyphenated at a line end joined."""
    text = ""
    for line in box["lines"]:
        part = line["text"].strip()
        if _HYPHENATED.search(text) and part[:1].islower():
            text = text[:-1] + part
        else:
            text = f"{text} {part}" if text else part
    return normalize_passage(text)


def chrome(pages: list[Mapping]) -> set[tuple[int, int]]:
    """(page index, box index) of the running headers, footers and page numbers."""
    in_margin: dict[tuple[int, int], str] = {}
    for page_index, page in enumerate(pages):
        height = page["height"] or 1
        for box_index, box in enumerate(page["boxes"]):
            if box["bottom"] <= height * MARGIN or box["top"] >= height * (1 - MARGIN):
                in_margin[(page_index, box_index)] = _box_text(box)
    pages_of = Counter()
    for key in {(page, _chrome_key(text)) for (page, _), text in in_margin.items()}:
        pages_of[key[1]] += 1
    enough = max(2, (len(pages) + 1) // 2)
    return {
        place
        for place, text in in_margin.items()
        if _PAGE_NUMBER.match(text) or (len(pages) > 1 and pages_of[_chrome_key(text)] >= enough)
    }


def _body_size(pages: list[Mapping]) -> float:
    sizes = Counter()
    for page in pages:
        for box in page["boxes"]:
            for line in box["lines"]:
                sizes[line["size"]] += len(line["text"])
    return sizes.most_common(1)[0][0] if sizes else 0.0


def _font_heading(box: Mapping, text: str, body: float) -> float | None:
    """The size of a box that is a heading by its font, else None."""
    lines = box["lines"]
    if len(lines) > 2 or not text or len(text.split()) > HEADING_WORDS or text.endswith((".", ",", ";")):
        return None
    size = max(line["size"] for line in lines)
    if size >= body * HEADING_SCALE or (all(line["bold"] for line in lines) and size >= body):
        return size
    return None


def _outline_titles(outline: list) -> dict[tuple[int, str], int]:
    return {(page, _chrome_key(title)): int(level) for level, title, page in outline if title.strip()}


def _metadata(layout: Mapping, name: str, defaults: DocumentDefaults) -> tuple[str, str, tuple[str, ...]]:
    """Access level, tenant and groups from the document information or XMP, else the defaults.

    Read by the schema every source shares (:func:`rag.documents.access_metadata.read_access_metadata`):
    only the exact keys ``access``, ``tenant`` and ``acl`` count, and a key of the document
    information or a simple XMP element that looks like one (``/Access``, ``acls``) is an error
    naming the file, never "open". The document information wins over XMP where both state a key.
    """
    stated: dict[str, str] = {}
    for key, value in _XMP_ELEMENT.findall(layout.get("xmp", "")):
        stated.setdefault(key, value.strip())
    for key, value in layout.get("info", {}).items():
        if isinstance(value, str):
            stated[str(key)] = value.strip()
    fields = read_access_metadata(
        stated, name, defaults, label=lambda key: f"{name}: document information {key!r}", acl_separator=","
    )
    return fields.access, fields.tenant, fields.acl


def _updated(info: Mapping) -> str | None:
    match = _PDF_DATE.match(info.get("ModDate", "") or info.get("CreationDate", ""))
    if not match:
        return None
    year, month, day = match.group(1), match.group(2) or "01", match.group(3) or "01"
    return f"{year}-{month}-{day}"


def document_from_layout(
    layout: Mapping, name: str, skip: Collection[str] = (), defaults: DocumentDefaults | None = None
) -> ParsedFile:
    """A PDF's layout (:func:`rag.corpus.pdf_extract.extract`) as a document (see the module)."""
    defaults = defaults or DocumentDefaults()
    doc_id = check_document_id(Path(name).stem, name)
    pages = layout["pages"]
    blank = [page["number"] for page in pages if not page["chars"]]
    if blank and len(blank) == len(pages):
        raise DocumentError(f"{name}: no text layer on any page (a scan?); OCR it first")
    if blank:
        log.warning("%s: no text layer on page(s) %s (a scan?); those pages are not indexed", name, blank)
    access, tenant, acl = _metadata(layout, name, defaults)
    left_out = chrome(pages)
    body = _body_size(pages)
    outline = _outline_titles(layout.get("outline", []))
    font_sizes = sorted(
        {
            size
            for page_index, page in enumerate(pages)
            for box_index, box in enumerate(page["boxes"])
            if (page_index, box_index) not in left_out
            and (size := _font_heading(box, _box_text(box), body)) is not None
        },
        reverse=True,
    )
    skipped = dict.fromkeys(SKIPPABLE, 0)
    headings: list[tuple[int, str]] = []
    blocks: list[Block] = []
    for page_index, layout_page in enumerate(pages):
        boxes, tables = layout_page["boxes"], layout_page["tables"]
        # In reading order from the top; boxes level with each other from the left, then by text:
        # pdfminer's own order of such boxes (a line's subscripts) varies from run to run.
        items = [
            ((box["top"], "box", box["lines"][0]["x0"], _box_text(box)), box_index, box)
            for box_index, box in enumerate(boxes)
        ]
        items += [((table["top"], "table", 0.0, ""), number, table) for number, table in enumerate(tables)]
        page = str(layout_page["number"])
        for (_, item_type, _, _), index, item in sorted(items, key=lambda entry: (entry[0], entry[1])):
            place = (PAGE_PREFIX + page,)
            in_skipped = any(title.lower() in SKIPPED_SECTIONS for _, title in headings)
            if item_type == "table":
                if "tables" in skip:
                    skipped["tables"] += len(item["rows"])
                    continue
                for rendering in render_table(item["rows"]):
                    if rendering.text:
                        blocks.append(
                            table_block(place + tuple(title for _, title in headings), rendering, page)
                        )
                continue
            if (page_index, index) in left_out:
                continue
            text = _box_text(item)
            if not text:
                continue
            level = outline.get((layout_page["number"], _chrome_key(text)))
            if level is None and not outline:
                size = _font_heading(item, text, body)
                level = None if size is None else min(font_sizes.index(size) + 1, 3)
            if level is not None:
                headings = [(lvl, title) for lvl, title in headings if lvl < level] + [(level, text)]
                continue
            if in_skipped and "references" in skip:
                skipped["references"] += len(item["lines"])
                continue
            blocks.append(Block(place + tuple(title for _, title in headings), text, page))
    if not blocks:
        raise DocumentError(f"{name}: no paragraphs to index")
    info = layout.get("info", {})
    title = normalize_passage(info.get("Title", "")) or Path(name).name
    document = Document(
        doc_id=doc_id,
        title=title,
        version=content_version(blocks),
        blocks=tuple(blocks),
        updated=_updated(info),
        access=access,
        tenant=tenant,
        acl=acl,
    )
    return ParsedFile(document, skipped)


# Layouts read in this process, by the file's sha256: ``rag ask`` parses a folder
# more than once (with two default access levels), and a layout takes seconds.
# A refused file is never kept; the oldest layout goes first.
_LAYOUTS: dict[str, dict] = {}
LAYOUTS_KEPT = 64


def remembered_layout(data: object, name: str) -> dict:
    """:func:`extract_layout`, read once per process for the same bytes."""
    if not isinstance(data, bytes):
        return extract_layout(data, name)
    key = hashlib.sha256(data).hexdigest()
    if key not in _LAYOUTS:
        layout = extract_layout(data, name)
        while len(_LAYOUTS) >= LAYOUTS_KEPT:
            _LAYOUTS.pop(next(iter(_LAYOUTS)))
        _LAYOUTS[key] = layout
    return _LAYOUTS[key]


def read_pdf(data: object, name: str, skip: Collection[str], defaults: DocumentDefaults) -> ParsedFile:
    """One ``.pdf`` file of a folder: laid out with limits, then :func:`document_from_layout`."""
    return document_from_layout(remembered_layout(data, name), name, skip, defaults)
