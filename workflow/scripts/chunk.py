"""Cut the parsed documents of one corpus with one chunker."""

import json

import pandas as pd

from rag.chunk_tables import chunks_to_frame
from rag.chunking import chunk_corpus, spec_from_config
from rag.corpus.document_tables import documents_from_frame
from rag.formats.tables import provenance, read_provenance, write_parquet
from rag.pipeline.jobs import finish_job, start_log
from rag.provenance import carried

log = start_log(snakemake.log[0])
spec = spec_from_config(json.loads(snakemake.params.chunker))
documents = documents_from_frame(pd.read_parquet(snakemake.input[0]))
chunks = chunk_corpus(documents, spec)
frame = chunks_to_frame(chunks, documents)
log.info(
    "%d documents -> %d chunks (%s), mean %.1f words",
    len(documents),
    len(frame),
    spec,
    frame["n_words"].mean(),
)
write_parquet(
    frame,
    snakemake.output[0],
    provenance(
        **carried(read_provenance(snakemake.input[0])),
        stage="chunk",
        chunker=json.loads(snakemake.params.chunker),
        chunker_digest=spec.digest(),
    ),
)
finish_job()
