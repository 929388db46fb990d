"""Parse the pinned Wikipedia revisions (from the cache, fetching what is missing)."""

import json
import warnings

from rag.documents import PARSER_VERSION
from rag.io import (
    FolderCache,
    documents_to_frame,
    finish_job,
    provenance,
    read_yaml,
    start_log,
    write_parquet,
)
from rag.provenance import documents_record
from rag.sources import locked_documents, wikipedia_client
from rag.wikipedia import parse_lock

log = start_log(snakemake.log[0])
entry = json.loads(snakemake.params.corpus)
cache = FolderCache(entry.get("cache", "cache/wikipedia"))
articles = list(parse_lock(read_yaml(snakemake.input.lock)))
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    documents = locked_documents(entry, articles, wikipedia_client(entry), cache)
for warning in caught:
    log.warning("%s", warning.message)
    print(f"WARNING: {warning.message}")
documents.sort(key=lambda document: document.doc_id)
write_parquet(
    documents_to_frame(documents),
    snakemake.output[0],
    provenance(
        stage="parse",
        parser_version=PARSER_VERSION,
        source="wikipedia",
        lock=[a.revision for a in articles],
        **documents_record({document.doc_id: document.version for document in documents}),
    ),
)
finish_job()
