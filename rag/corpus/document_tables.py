"""The parse stage's table: documents as rows of blocks, written with their provenance."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from rag.corpus.documents import PARSER_VERSION
from rag.documents.blocks import SECTION_SEPARATOR, Block, Document, section_name
from rag.formats.tables import provenance, write_parquet
from rag.provenance import documents_record

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa


BLOCK_COLUMNS = [
    "doc_id",
    "title",
    "version",
    "url",
    "updated",
    "tags",
    "access",
    "tenant",
    "acl",
    "section",
    "block_index",
    "text",
    "start",
    "end",
    "page",
    "table_rows",
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
                    "tenant": document.tenant,
                    "acl": list(document.acl),
                    "section": section_name(block.section),
                    "block_index": index,
                    "text": block.text,
                    "start": start,
                    "end": end,
                    "page": block.page,
                    # A table block's rows, (start, end) pairs flattened: [s0, e0, s1, e1, ...].
                    "table_rows": [offset for row in block.table_rows for offset in row],
                }
            )
    return pd.DataFrame(rows, columns=BLOCK_COLUMNS)


def documents_to_table(documents: Sequence[Document]) -> pa.Table:
    """:func:`documents_to_frame` as a pyarrow table whose ``tags`` and ``acl`` are lists of
    strings and ``table_rows`` lists of integers even when every list is empty (pyarrow would
    infer lists of nulls)."""
    import pyarrow as pa

    table = pa.Table.from_pandas(documents_to_frame(documents), preserve_index=False)
    for column, item_type in (("tags", pa.string()), ("acl", pa.string()), ("table_rows", pa.int64())):
        position = table.schema.get_field_index(column)
        if table.schema.field(position).type != pa.list_(item_type):
            table = table.set_column(position, column, table[column].cast(pa.list_(item_type)))
    return table


def _pairs(flat) -> tuple[tuple[int, int], ...]:
    """A block's table rows from their flattened column ([s0, e0, s1, e1, ...])."""
    values = [int(value) for value in (() if flat is None else flat)]
    return tuple(zip(values[::2], values[1::2], strict=False))


def documents_from_frame(frame: pd.DataFrame) -> list[Document]:
    documents = []
    for doc_id, rows in frame.groupby("doc_id", sort=False):
        rows = rows.sort_values("block_index")
        first = rows.iloc[0]
        # Tables written before pages have no page column: no block has a page.
        pages = rows["page"] if "page" in rows else [""] * len(rows)
        # Tables written before table blocks have no table_rows column: no block is a table.
        table_rows = rows["table_rows"] if "table_rows" in rows else [()] * len(rows)
        blocks = tuple(
            Block(tuple(section.split(SECTION_SEPARATOR)) if section else (), text, str(page), _pairs(flat))
            for section, text, page, flat in zip(
                rows["section"], rows["text"], pages, table_rows, strict=True
            )
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
                # Tables written before tenants and groups have neither column: shared, every group.
                tenant=str(first["tenant"]) if "tenant" in rows else "",
                acl=tuple(first["acl"]) if "acl" in rows else (),
            )
        )
    return documents


def write_parsed_documents(documents: Iterable[Document], path: str | os.PathLike, **record) -> None:
    """The parse stage's parquet, whatever the source: documents in id order, and a record of
    the parser version, ``record`` (the source's own facts) and every document's version."""
    ordered = sorted(documents, key=lambda document: document.doc_id)
    versions = {document.doc_id: document.version for document in ordered}
    made_by = provenance(stage="parse", parser_version=PARSER_VERSION, **record, **documents_record(versions))
    write_parquet(documents_to_table(ordered), path, made_by)
