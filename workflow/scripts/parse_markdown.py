"""Parse a folder of Markdown documents into the parsed-blocks parquet."""

import json
from pathlib import Path

from rag.documents import DEFAULT_ACCESS, PARSER_VERSION, DocumentError, parse_markdown
from rag.io import documents_to_frame, finish_job, provenance, read_markdown_file, start_log, write_parquet
from rag.provenance import documents_record

log = start_log(snakemake.log[0])
entry = json.loads(snakemake.params.corpus)
default_access = entry.get("default_access", DEFAULT_ACCESS)
documents, origin = [], {}
for path in map(Path, snakemake.input):
    document = parse_markdown(read_markdown_file(path), str(path), default_access)
    if document.doc_id in origin:
        raise DocumentError(
            f"{path}: document id {document.doc_id!r} is already used by {origin[document.doc_id]}"
        )
    origin[document.doc_id] = path
    documents.append(document)
    log.info(
        "%s: %s, version %s, %d paragraphs", path, document.doc_id, document.version, len(document.blocks)
    )

documents.sort(key=lambda document: document.doc_id)
write_parquet(
    documents_to_frame(documents),
    snakemake.output[0],
    provenance(
        stage="parse",
        parser_version=PARSER_VERSION,
        source="markdown",
        **documents_record({document.doc_id: document.version for document in documents}),
    ),
)
finish_job()
