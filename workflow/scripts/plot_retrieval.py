"""The retrieval figures: recall curves, recall per prompt word, rank scatter, the grid's overview."""

import json

import pandas as pd

from rag.formats.files import atomic_path, write_figure
from rag.pipeline.jobs import finish_job, start_log
from rag.plotting import grid_overview, rank_scatter, recall_against_prompt_words, recall_curves

log = start_log(snakemake.log[0])
figures = json.loads(snakemake.params.figures)
metrics = pd.read_csv(snakemake.input.metrics)
intervals = pd.read_csv(snakemake.input.intervals, dtype={"k": "Int64"})
per_question = pd.read_csv(snakemake.input.per_question)
corpus, chunker = figures["corpus"], figures["chunker"]
first, second = figures["compare"]

# The baseline and the best others (at most eight curves) by default; figures.curves
# names the retrievers instead, figures.best keeps the N with the highest mean recall.
drawings = {
    snakemake.output.recall: recall_curves(
        intervals, corpus, chunker, figures.get("curves"), figures.get("best"), [snakemake.params.baseline]
    ),
    snakemake.output.overview: grid_overview(metrics, corpus),
    snakemake.output.prompt_words: recall_against_prompt_words(metrics, corpus, figures["retriever"]),
    snakemake.output.scatter: rank_scatter(
        per_question[(per_question.corpus == corpus) & (per_question.chunker == chunker)],
        first,
        second,
        snakemake.params.depth,
        f"Where {first} and {second} disagree ({corpus}, {chunker})",
    ),
}
for path, figure in drawings.items():
    with atomic_path(path) as temporary:
        write_figure(figure, temporary)
finish_job()
