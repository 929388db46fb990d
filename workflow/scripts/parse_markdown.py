"""Parse a folder of Markdown, plain text or HTML documents into the parsed-blocks parquet.

What the reader skipped (tables, lists, references, code) is counted per
document and kept in the parquet's metadata for results/corpus_statistics.csv.
"""

import json
from pathlib import Path

from rag.corpus.document_tables import write_parsed_documents
from rag.corpus.documents import document_defaults
from rag.corpus.folders import read_files
from rag.documents.access_metadata import DocumentError
from rag.pipeline.jobs import finish_job, start_log

log = start_log(snakemake.log[0])
entry = json.loads(snakemake.params.corpus)
# Every source, not only Markdown: default_access, default_tenant, default_acl.
defaults = document_defaults(entry, f"config['corpora'][{snakemake.wildcards.corpus!r}]")
reading = read_files(list(map(Path, snakemake.input)), entry["source"], entry["skip"], defaults)
if reading.problems:  # the plan reads every file first, so only a file changed since gets here
    raise DocumentError(
        f"{len(reading.problems)} problem(s) in the documents:\n  " + "\n  ".join(reading.problems)
    )
documents, skipped = reading.documents, reading.skipped
for document in documents:
    counts = skipped[document.doc_id]
    left_out = ", ".join(f"{count} {kind}" for kind, count in counts.items() if count)
    log.info(
        "%s, version %s, %d paragraphs%s",
        document.doc_id,
        document.version,
        len(document.blocks),
        f"; skipped lines: {left_out}" if left_out else "",
    )
# The plan has printed them once already; the log keeps them with the parse.
for warning in reading.warnings(f"corpus {snakemake.wildcards.corpus!r}"):
    log.warning("%s", warning)
# Front matter keys no reader uses are kept with the parse, by document file.
other = {"other_front_matter": reading.other_metadata} if reading.other_metadata else {}

write_parsed_documents(
    documents,
    snakemake.output[0],
    source=entry["source"],
    skip=entry["skip"],
    skipped=dict(sorted(skipped.items())),
    **other,
)
finish_job()
