"""One row per chunk set: how many chunks and how long."""

import pandas as pd

from rag.evaluation.statistics import chunk_statistics
from rag.formats.files import write_csv
from rag.pipeline.jobs import finish_job, start_log

log = start_log(snakemake.log[0])
rows = [
    chunk_statistics(pd.read_parquet(path), corpus, chunker)
    for (corpus, chunker), path in zip(snakemake.params.pairs, snakemake.input, strict=True)
]
write_csv(pd.DataFrame(rows), snakemake.output[0])
finish_job()
