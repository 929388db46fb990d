"""The parse stage's table: documents as rows of blocks, written with their provenance."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from rag.corpus.documents import PARSER_VERSION, SECTION_SEPARATOR, Block, Document, section_name
from rag.formats.tables import provenance, write_parquet
from rag.provenance import documents_record

if TYPE_CHECKING:
    import pandas as pd


BLOCK_COLUMNS = [
    "doc_id",
    "title",
    "version",
    "url",
    "updated",
    "tags",
    "access",
    "section",
    "block_index",
    "text",
    "start",
    "end",
]


def documents_to_frame(documents: Sequence[Document]) -> pd.DataFrame:
    import pandas as pd

    rows = []
    for document in documents:
        for index, (block, (start, end)) in enumerate(
            zip(document.blocks, document.block_offsets(), strict=True)
        ):
            rows.append(
                {
                    "doc_id": document.doc_id,
                    "title": document.title,
                    "version": document.version,
                    "url": document.url,
                    "updated": document.updated,
                    "tags": list(document.tags),
                    "access": document.access,
                    "section": section_name(block.section),
                    "block_index": index,
                    "text": block.text,
                    "start": start,
                    "end": end,
                }
            )
    return pd.DataFrame(rows, columns=BLOCK_COLUMNS)


def documents_from_frame(frame: pd.DataFrame) -> list[Document]:
    documents = []
    for doc_id, rows in frame.groupby("doc_id", sort=False):
        rows = rows.sort_values("block_index")
        first = rows.iloc[0]
        blocks = tuple(
            Block(tuple(section.split(SECTION_SEPARATOR)) if section else (), text)
            for section, text in zip(rows["section"], rows["text"], strict=True)
        )
        documents.append(
            Document(
                doc_id=str(doc_id),
                title=first["title"],
                version=first["version"],
                blocks=blocks,
                url=first["url"],
                updated=first["updated"],
                tags=tuple(first["tags"]),
                access=first["access"],
            )
        )
    return documents


def write_parsed_documents(documents: Iterable[Document], path: str | os.PathLike, **record) -> None:
    """The parse stage's parquet, whatever the source: documents in id order, and a record of
    the parser version, ``record`` (the source's own facts) and every document's version."""
    ordered = sorted(documents, key=lambda document: document.doc_id)
    versions = {document.doc_id: document.version for document in ordered}
    made_by = provenance(stage="parse", parser_version=PARSER_VERSION, **record, **documents_record(versions))
    write_parquet(documents_to_frame(ordered), path, made_by)
