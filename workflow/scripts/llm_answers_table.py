"""Gather every language model's answers into one table, one row per question and setting."""

import pandas as pd

from rag.formats.files import write_csv
from rag.pipeline.jobs import finish_job, start_log

log = start_log(snakemake.log[0])
keys = ["corpus", "questions", "generator", "chunker", "retriever", "question_id"]
frame = pd.concat([pd.read_parquet(path) for path in snakemake.input], ignore_index=True)
frame = frame.sort_values(keys, kind="stable", ignore_index=True)
log.info("%d answers from %d settings", len(frame), len(snakemake.input))
write_csv(frame, snakemake.output[0])
finish_job()
