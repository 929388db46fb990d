"""Documents as ordered text blocks: the model every reader builds and every stage reads.

A document is kept as blocks (paragraphs) with the heading path above each one.
Its full text is the blocks joined by blank lines; every offset in the pipeline
(chunks, evidence spans) is a character position in that full text, so chunks
never have to be found again by searching.
"""

from __future__ import annotations

import bisect
import hashlib
from dataclasses import dataclass

from rag.documents.access_metadata import DEFAULT_ACCESS

SECTION_SEPARATOR = " › "


BLOCK_SEPARATOR = "\n\n"


@dataclass(frozen=True)
class Block:
    """One paragraph and the heading path it sits under (empty for the lead).

    ``page`` is the page the paragraph sits on, for a source that has pages
    (a PDF's "14"); "" for the others. ``table_rows`` are the (start, end) of
    each row in ``text`` when the block renders a table
    (:mod:`rag.corpus.table_text`), else (): a table block is a block a
    chunker keeps whole where it can, and cuts only between rows.
    """

    section: tuple[str, ...]
    text: str
    page: str = ""
    table_rows: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True)
class Document:
    doc_id: str
    title: str
    version: str
    blocks: tuple[Block, ...]
    url: str | None = None
    updated: str | None = None
    tags: tuple[str, ...] = ()
    # Restricted unless a reader says otherwise: a document built without an
    # access level never reaches a public ranking or prompt by accident.
    access: str = DEFAULT_ACCESS
    # Who may read it beside ``access``: ``tenant`` "" is shared by every tenant,
    # ``acl`` () lets every group of its tenant read it; otherwise the sorted,
    # distinct group names allowed (docs/corpus-format.md, "Tenants and groups").
    tenant: str = ""
    acl: tuple[str, ...] = ()

    @property
    def full_text(self) -> str:
        return BLOCK_SEPARATOR.join(block.text for block in self.blocks)

    def block_offsets(self) -> list[tuple[int, int]]:
        """Start and end of every block in :attr:`full_text`."""
        offsets, position = [], 0
        for block in self.blocks:
            offsets.append((position, position + len(block.text)))
            position += len(block.text) + len(BLOCK_SEPARATOR)
        return offsets


def section_name(path: tuple[str, ...]) -> str:
    return SECTION_SEPARATOR.join(path)


# How a chunk that spans blocks of several pages lists them ("3, 4").
PAGE_SEPARATOR = ", "


def pages_between(
    blocks: tuple[Block, ...], offsets: list[tuple[int, int]], start: int, end: int
) -> tuple[str, ...]:
    """The distinct pages, in document order, of the blocks that overlap ``[start, end)`` of the
    full text (``offsets`` are :meth:`Document.block_offsets`); () for a source without pages."""
    if start >= end:
        return ()
    index = max(bisect.bisect_right([first for first, _ in offsets], start) - 1, 0)
    pages: list[str] = []
    for block, (first, last) in zip(blocks[index:], offsets[index:], strict=True):
        if first >= end:
            break
        if last > start and block.page and block.page not in pages:
            pages.append(block.page)
    return tuple(pages)


def content_version(blocks: tuple[Block, ...] | list[Block]) -> str:
    """A version derived from the content, for sources that do not carry one."""
    digest = hashlib.sha256()
    for block in blocks:
        digest.update(section_name(block.section).encode() + b"\0" + block.text.encode() + b"\0")
    return digest.hexdigest()[:12]


def text_digest(document: Document) -> str:
    """SHA-256 of the parsed text, compared with pinned digests of fetched articles."""
    return hashlib.sha256(document.full_text.encode()).hexdigest()
