"""The chunk stage's table: one row per chunk, with its document's version, dates, tags and access rules."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rag.chunking import Chunk
from rag.documents.blocks import PAGE_SEPARATOR, Document, pages_between

if TYPE_CHECKING:
    import pandas as pd


CHUNK_COLUMNS = [
    "chunk_id",
    "doc_id",
    "version",
    "title",
    "section",
    "page",
    "start",
    "end",
    "text",
    "header",
    "indexed_text",
    "n_words",
    "updated",
    "tags",
    "access",
    "tenant",
    "acl",
]


def chunks_to_frame(chunks: Sequence[Chunk], documents: Sequence[Document]) -> pd.DataFrame:
    import pandas as pd

    by_id = {document.doc_id: document for document in documents}
    offsets = {document.doc_id: document.block_offsets() for document in documents}
    rows = []
    for chunk in chunks:
        document = by_id[chunk.doc_id]
        pages = pages_between(document.blocks, offsets[chunk.doc_id], chunk.start, chunk.end)
        rows.append(
            {
                "chunk_id": chunk.chunk_id,
                "doc_id": chunk.doc_id,
                "version": document.version,
                "title": chunk.title,
                "section": chunk.section,
                # The pages of the chunk's blocks ("14", or "3, 4"); "" for a source without pages.
                "page": PAGE_SEPARATOR.join(pages),
                "start": chunk.start,
                "end": chunk.end,
                "text": chunk.text,
                "header": chunk.header,
                "indexed_text": chunk.indexed_text,
                "n_words": len(chunk.text.split()),
                "updated": document.updated,
                "tags": list(document.tags),
                "access": document.access,
                "tenant": document.tenant,
                "acl": list(document.acl),
            }
        )
    return pd.DataFrame(rows, columns=CHUNK_COLUMNS)


def chunks_from_frame(frame: pd.DataFrame) -> list[Chunk]:
    return [
        Chunk(
            chunk_id=row.chunk_id,
            doc_id=row.doc_id,
            title=row.title,
            section=row.section,
            start=int(row.start),
            end=int(row.end),
            text=row.text,
            header=row.header,
        )
        for row in frame.itertuples(index=False)
    ]
