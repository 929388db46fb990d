"""One row per ranking: what made it, from the parquet metadata."""

import pandas as pd

from rag.formats.files import write_csv
from rag.formats.tables import read_provenance
from rag.pipeline.jobs import finish_job, start_log
from rag.provenance import provenance_row

log = start_log(snakemake.log[0])
rows = []
for (corpus, chunker, retriever), path in zip(snakemake.params.grid, snakemake.input.rankings, strict=True):
    rows.append(
        {
            "corpus": corpus,
            "chunker": chunker,
            "retriever": retriever,
            "filter": "",
            **provenance_row(read_provenance(path)),
        }
    )
for (corpus, retriever, filter_name), path in zip(
    snakemake.params.filtered, snakemake.input.filtered, strict=True
):
    row = provenance_row(read_provenance(path))
    rows.append(
        {
            "corpus": corpus,
            "chunker": snakemake.params.chunker,
            "retriever": retriever,
            "filter": filter_name,
            **row,
        }
    )
log.info("%d rankings", len(rows))
table = pd.DataFrame(rows).sort_values(["corpus", "chunker", "retriever", "filter"], kind="mergesort")
write_csv(table, snakemake.output[0])
finish_job()
