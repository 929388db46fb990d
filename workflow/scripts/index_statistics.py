"""One row per fitted index: its size; the time and memory of the job that built it go to the timings."""

import os

import pandas as pd

from rag.evaluation.statistics import index_statistics
from rag.formats.files import write_csv
from rag.pipeline.jobs import finish_job, start_log
from rag.timing import INDEX_TIMING_COLUMNS, split_timings

log = start_log(snakemake.log[0])
rows = [
    index_statistics(os.path.getsize(index), pd.read_csv(benchmark, sep="\t"), *triple)
    for triple, index, benchmark in zip(
        snakemake.params.grid, snakemake.input.indexes, snakemake.input.benchmarks, strict=True
    )
]
keys = ["corpus", "chunker", "retriever"]
table = pd.DataFrame(rows, columns=[*keys, "index_bytes", *INDEX_TIMING_COLUMNS])
sizes, timings = split_timings(table, keys, INDEX_TIMING_COLUMNS)
write_csv(sizes, snakemake.output.sizes)
write_csv(timings, snakemake.output.timings)
finish_job()
