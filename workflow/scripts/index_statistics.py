"""One row per fitted index: its size, and the time and memory of the job that built it."""

import os

import pandas as pd

from rag.evaluation.statistics import index_statistics
from rag.formats.files import write_csv
from rag.jobs import finish_job, start_log

log = start_log(snakemake.log[0])
rows = [
    index_statistics(os.path.getsize(index), pd.read_csv(benchmark, sep="\t"), *triple)
    for triple, index, benchmark in zip(
        snakemake.params.grid, snakemake.input.indexes, snakemake.input.benchmarks, strict=True
    )
]
columns = ["corpus", "chunker", "retriever", "index_bytes", "seconds", "max_rss_mb"]
write_csv(pd.DataFrame(rows, columns=columns), snakemake.output[0])
finish_job()
