"""One row per (corpus, chunker, retriever) with intervals, significance markers and the best flagged."""

import pandas as pd

from rag.evaluation.summary import summary_table
from rag.formats.files import write_csv
from rag.pipeline.jobs import finish_job, start_log

log = start_log(snakemake.log[0])
intervals = pd.read_csv(snakemake.input.intervals, dtype={"k": "Int64"})
significance = pd.read_csv(snakemake.input.significance, dtype={"k": "Int64"})
table = summary_table(intervals, significance, snakemake.params.baseline)
log.info("%d configurations", len(table))
write_csv(table, snakemake.output[0])
finish_job()
