"""Sweep the coverage threshold over one ranking's answers: answered, correct, refused."""

import json

import pandas as pd

from rag.formats.files import atomic_path, write_csv, write_figure
from rag.measuring.offline_tables import abstention_tradeoff_table
from rag.pipeline.jobs import finish_job, start_log
from rag.plotting import abstention_tradeoff_figure

log = start_log(snakemake.log[0])
thresholds = json.loads(snakemake.params.thresholds)["thresholds"]
answers = pd.concat([pd.read_parquet(path) for path in snakemake.input], ignore_index=True)
table = abstention_tradeoff_table(answers, thresholds, ["corpus", "chunker", "retriever"])
log.info("%d thresholds over %d answers", len(thresholds), len(answers))
write_csv(table, snakemake.output.table)
figure = abstention_tradeoff_figure(table, snakemake.params.corpus, snakemake.params.threshold)
with atomic_path(snakemake.output.figure) as temporary:
    write_figure(figure, temporary)
finish_job()
