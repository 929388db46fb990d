"""Parse a folder of Markdown, plain text or HTML documents into the parsed-blocks parquet.

What the reader skipped (tables, lists, references, code) is counted per
document and kept in the parquet's metadata for results/corpus_statistics.csv.
"""

import json
from pathlib import Path

from rag.corpus.document_tables import write_parsed_documents
from rag.corpus.documents import DEFAULT_ACCESS, DocumentError
from rag.corpus.folders import read_document
from rag.corpus.markdown_files import read_markdown_file
from rag.jobs import finish_job, start_log

log = start_log(snakemake.log[0])
entry = json.loads(snakemake.params.corpus)
default_access = entry.get("default_access", DEFAULT_ACCESS)
documents, origin, skipped = [], {}, {}
for path in map(Path, snakemake.input):
    document, counts = read_document(
        read_markdown_file(path), str(path), entry["source"], entry["skip"], default_access
    )
    if document.doc_id in origin:
        raise DocumentError(
            f"{path}: document id {document.doc_id!r} is already used by {origin[document.doc_id]}"
        )
    origin[document.doc_id] = path
    documents.append(document)
    skipped[document.doc_id] = counts
    left_out = ", ".join(f"{count} {kind}" for kind, count in counts.items() if count)
    log.info(
        "%s: %s, version %s, %d paragraphs%s",
        path,
        document.doc_id,
        document.version,
        len(document.blocks),
        f"; skipped lines: {left_out}" if left_out else "",
    )

write_parsed_documents(
    documents,
    snakemake.output[0],
    source=entry["source"],
    skip=entry["skip"],
    skipped=dict(sorted(skipped.items())),
)
finish_job()
