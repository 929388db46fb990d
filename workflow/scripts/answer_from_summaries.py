"""Answer every question with each listed reader, all in one job (the extractive generator has its own),
from one prompt that holds the lead summary of every document."""

import json
import sys

import pandas as pd

from rag.answering.answers import (
    collection_idf,
    describe_answers,
    reader_answers_frame,
    reader_frames,
    reader_outputs,
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
KEYS = {"chunker": "(lead summaries)", "retriever": "(all in the prompt)"}

log = start_log(snakemake.log[0])
corpus = snakemake.wildcards.corpus
generation, readers = json.loads(snakemake.params.generation), json.loads(snakemake.params.readers)
outputs = reader_outputs(readers, list(snakemake.output))
questions = parse_questions(read_yaml(snakemake.input.questions), snakemake.input.questions)
documents = documents_from_frame(pd.read_parquet(snakemake.input.parsed))
sources = summary_chunks(lead_summaries(documents))
keys = {"corpus": corpus, **KEYS}
if any(chunk.text.strip() for chunk in sources):
    generation = {**generation, "k": len(sources)}  # every summary goes into the one prompt
    # The summaries are the collection the reader reads, so their idf weighs the question.
    idf = collection_idf([chunk.indexed_text for chunk in sources])
    count_cl100k = optional_token_counter(CL100K_BASE)
    inputs = (questions, documents, lambda question: sources, sources, idf)
    frames = reader_frames(*inputs, generation, readers, snakemake.params.cache, count_cl100k, **keys)
else:
    # Issue 16: a corpus whose documents have no lead (no text before their
    # first section heading) has no summaries to answer from; left out, not an error.
    warning = (
        f"corpus {corpus!r}: answers from lead summaries left out, they need lead sections "
        "(text before a document's first section heading), and no document has one"
    )
    log.warning("%s", warning)
    print(f"WARNING: {visible(str(warning), keep_newlines=False)}", file=sys.stderr)
    frames = [(reader_answers_frame([], **keys, reader=reader["name"]), None) for reader in readers]
for reader, (frame, embedder), path in zip(readers, frames, outputs, strict=True):
    if embedder is not None:
        embedder.save()
    log.info("%s", describe_answers(frame, f"{corpus}, {len(sources)} lead summaries, {reader['name']}"))
    stage = provenance(stage="answer_from_summaries", generation=generation, reader=reader)
    write_parquet(frame, path, stage)
finish_job()
