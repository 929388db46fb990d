"""The weakest cohort (by question type and by evidence document) beside the mean."""

import json

import pandas as pd

from rag.evaluation.cohorts import weakest_cohorts
from rag.formats.files import atomic_path, write_csv, write_figure
from rag.pipeline.jobs import finish_job, start_log
from rag.plotting import no_data, weakest_cohort_bars

log = start_log(snakemake.log[0])
cohorts = json.loads(snakemake.params.cohorts)
figures = json.loads(snakemake.params.figures)
keys = ["corpus", "chunker", "retriever"]
table = weakest_cohorts(
    pd.read_csv(snakemake.input.metrics),
    {"type": pd.read_csv(snakemake.input.by_type), "document": pd.read_csv(snakemake.input.by_document)},
    keys,
    "recall",
    cohorts["k"],
    cohorts["min_questions"],
)
write_csv(table, snakemake.output.table)

shown = table[(table.corpus == figures["corpus"]) & (table.chunker == figures["chunker"])]
title = (
    f"Recall@{cohorts['k']}: mean and weakest cohort ({figures['corpus']}, {figures['chunker']})\n"
    f"cohorts of at least {cohorts['min_questions']} questions; a question counts for each evidence document"
)
figure = weakest_cohort_bars(shown, title, xlabel=f"recall@{cohorts['k']}") if len(shown) else no_data(title)
with atomic_path(snakemake.output.figure) as temporary:
    write_figure(figure, temporary)
log.info("%d retrievers in the figure", len(shown))
finish_job()
