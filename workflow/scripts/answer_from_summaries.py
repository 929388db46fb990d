"""Answer every question with each listed reader from one prompt holding the lead summary of every document.

One job serves all the readers (rule read_answers_from_summaries; the
extractive generator's rule answer_from_summaries lists one): the documents,
the summaries, their idf and the prompts are built once for all of them.
"""

import json
import sys

import pandas as pd

from rag.answering.answers import (
    answer_questions_by_readers,
    answers_frame,
    collection_idf,
    describe_answers,
    reader_outputs,
    settings_from_config,
)
from rag.answering.summaries import lead_summaries, summary_chunks
from rag.answering.tokens import CL100K_BASE, optional_token_counter
from rag.corpus.document_tables import documents_from_frame
from rag.escaping import visible
from rag.formats.files import read_yaml
from rag.formats.tables import provenance, write_parquet
from rag.jobs import finish_job, start_log
from rag.labels import parse_questions

# How the summary rows are named in the tables beside the (chunker, retriever) rows.
CHUNKER, RETRIEVER = "(lead summaries)", "(all in the prompt)"

log = start_log(snakemake.log[0])
corpus = snakemake.wildcards.corpus
generation, readers = json.loads(snakemake.params.generation), json.loads(snakemake.params.readers)
outputs = reader_outputs(readers, list(snakemake.output))
questions = parse_questions(read_yaml(snakemake.input.questions), snakemake.input.questions)
documents = documents_from_frame(pd.read_parquet(snakemake.input.parsed))
sources = summary_chunks(lead_summaries(documents))
if not any(chunk.text.strip() for chunk in sources):
    # Issue 16: a corpus whose documents have no lead (no text before their
    # first section heading) has no summaries to answer from; left out, not an error.
    warning = (
        f"corpus {corpus!r}: answers from lead summaries left out, they need lead sections "
        "(text before a document's first section heading), and no document has one"
    )
    log.warning("%s", warning)
    print(f"WARNING: {visible(str(warning), keep_newlines=False)}", file=sys.stderr)
    for reader, path in zip(readers, outputs, strict=True):
        frame = answers_frame([], corpus=corpus, chunker=CHUNKER, retriever=RETRIEVER, reader=reader["name"])
        stage = provenance(stage="answer_from_summaries", generation=generation, reader=reader)
        write_parquet(frame, path, stage)
    finish_job()
generation = {**generation, "k": max(len(sources), 1)}  # every summary goes into the one prompt
configured = [settings_from_config(generation, reader, snakemake.params.cache) for reader in readers]
# The summaries are the collection the reader reads, so their idf weighs the question.
idf = collection_idf([chunk.indexed_text for chunk in sources])
count_cl100k = optional_token_counter(CL100K_BASE)
answered = answer_questions_by_readers(
    questions,
    documents,
    lambda question: sources,
    sources,
    idf,
    [settings for settings, _ in configured],
    count_cl100k,
)
for reader, (_, embedder), records, path in zip(readers, configured, answered, outputs, strict=True):
    frame = answers_frame(records, corpus=corpus, chunker=CHUNKER, retriever=RETRIEVER, reader=reader["name"])
    if embedder is not None:
        embedder.save()
    log.info("%s", describe_answers(frame, f"{corpus}, {len(sources)} lead summaries, {reader['name']}"))
    stage = provenance(stage="answer_from_summaries", generation=generation, reader=reader)
    write_parquet(frame, path, stage)
finish_job()
