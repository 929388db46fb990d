"""Gather the answers of every ranking and of the summaries into the tables users read."""

import pandas as pd

from rag.answers import summarize_answers
from rag.io import finish_job, start_log, write_csv

log = start_log(snakemake.log[0])
keys = ["corpus", "chunker", "retriever"]
ranked = pd.concat([pd.read_parquet(path) for path in snakemake.input.ranked], ignore_index=True)
ranked = ranked.sort_values([*keys, "question_id"], kind="stable")
summaries = pd.concat([pd.read_parquet(path) for path in snakemake.input.summaries], ignore_index=True)
summaries = summaries.sort_values([*keys, "question_id"], kind="stable")
# The summary prompts come after the rankings they are compared with.
answers = pd.concat([ranked, summaries], ignore_index=True)
summary = pd.concat([summarize_answers(ranked, keys), summarize_answers(summaries, keys)], ignore_index=True)
log.info(
    "%d answers from %d rankings and %d summary prompts",
    len(answers),
    len(snakemake.input.ranked),
    len(snakemake.input.summaries),
)
write_csv(answers, snakemake.output.answers)
write_csv(summary, snakemake.output.summary)
finish_job()
