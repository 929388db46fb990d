"""A compact table of the funnel entries: first stage, reranker, N, cap and their metrics."""

import json

import pandas as pd

from rag.evaluation.metric_registry import funnel_columns
from rag.formats.files import write_csv
from rag.pipeline.jobs import finish_job, start_log
from rag.retrieval.funnel import funnel_summary

log = start_log(snakemake.log[0])
funnels = json.loads(snakemake.params.funnels)
table = funnel_summary(pd.read_csv(snakemake.input.metrics), funnels, funnel_columns(snakemake.params.ks))
log.info("%d funnel rows", len(table))
write_csv(table, snakemake.output[0])
finish_job()
