"""Judge the language models' answers and write the tables: summary, closed book, verdicts."""

import pandas as pd

from rag.formats.files import write_csv
from rag.formats.tables import read_columns
from rag.measuring.citation_accuracy import read_claim_labels
from rag.measuring.judging import LABELLED_CORPUS, read_labels
from rag.measuring.llm_tables import (
    answer_labels,
    closed_book_comparisons,
    describe_llm_answers,
    gather_answer_files,
    judge_llm_answers,
    summarize_llm_answers,
    with_label_outcomes,
)
from rag.measuring.verdicts import verdicts_table
from rag.pipeline.jobs import finish_job, start_log

log = start_log(snakemake.log[0])
answers = gather_answer_files([(path, pd.read_parquet(path)) for path in snakemake.input.answers])
chunk_texts = {}
for path in snakemake.input.chunks:
    chunks = read_columns(path, ["chunk_id", "text"])
    chunk_texts |= dict(zip(chunks["chunk_id"], chunks["text"], strict=True))
judged = judge_llm_answers(answers, chunk_texts)
# Correct, partly and wrong by the hand labels, beside the deterministic judge's correct.
judges_labels = read_labels(snakemake.input.labels[0]) if snakemake.input.labels else None
claim_labels = (
    read_claim_labels(*snakemake.input.claim_labels).answers if snakemake.input.claim_labels else None
)
labels = answer_labels(judges_labels, claim_labels)
summary = with_label_outcomes(summarize_llm_answers(judged), judged, labels, LABELLED_CORPUS)
for line in describe_llm_answers(summary):
    log.info("%s", line)
heldout = pd.read_csv(snakemake.input.heldout[0]) if snakemake.input.heldout else None
write_csv(judged, snakemake.output.judged)
write_csv(summary, snakemake.output.summary)
write_csv(closed_book_comparisons(judged), snakemake.output.closed_book)
write_csv(verdicts_table(judged, heldout), snakemake.output.verdicts)
finish_job()
