"""Answer every question with one reader from one prompt that holds the lead summary of every document."""

import json

import pandas as pd

from rag.answers import answer_questions, answers_frame, collection_idf, settings_from_config
from rag.io import documents_from_frame, finish_job, provenance, read_yaml, start_log, write_parquet
from rag.labels import parse_questions
from rag.summaries import lead_summaries, summary_chunks
from rag.tokens import CL100K_BASE, optional_token_counter

# How the summary rows are named in the tables beside the (chunker, retriever) rows.
CHUNKER, RETRIEVER = "(lead summaries)", "(all in the prompt)"

log = start_log(snakemake.log[0])
corpus = snakemake.wildcards.corpus
generation, reader = json.loads(snakemake.params.generation), json.loads(snakemake.params.reader)
questions = parse_questions(read_yaml(snakemake.input.questions), snakemake.input.questions)
documents = documents_from_frame(pd.read_parquet(snakemake.input.parsed))
sources = summary_chunks(lead_summaries(documents))
settings, embedder = settings_from_config({**generation, "k": max(len(sources), 1)}, reader, snakemake.params.cache)
# The summaries are the collection the reader reads, so their idf weighs the question.
idf = collection_idf([chunk.indexed_text for chunk in sources])
records = answer_questions(
    questions, documents, lambda question: sources, sources, idf, settings, optional_token_counter(CL100K_BASE)
)
frame = answers_frame(records, corpus=corpus, chunker=CHUNKER, retriever=RETRIEVER, reader=reader["name"])
if embedder is not None:
    embedder.save()
log.info(
    "%s, %s: %d summaries, %d questions, best sentence quotes the evidence for %d, all evidence in them for %d",
    corpus,
    reader["name"],
    len(sources),
    len(frame),
    int(frame["best_quoted_piece"].notna().sum()),
    int((frame["answerable"] & (frame["pieces_in_prompt"] == frame["evidence_pieces"])).sum()),
)
write_parquet(frame, snakemake.output[0], provenance(stage="answer_from_summaries", generation=generation, reader=reader))
finish_job()
