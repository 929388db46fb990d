"""Answer every question with each reader from one prompt of the lead summary of every readable document."""

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
from rag.answering.caller_sources import named_caller, readable_documents
from rag.answering.summaries import lead_summaries, summary_chunks
from rag.answering.tokens import CL100K_BASE, optional_token_counter
from rag.answering.trace import summary_answer_traces, trace_lines
from rag.corpus.document_tables import documents_from_frame
from rag.escaping import visible
from rag.formats.files import read_yaml, write_text
from rag.formats.tables import provenance, write_parquet
from rag.labels import parse_questions
from rag.pipeline.jobs import finish_job, start_log

log = start_log(snakemake.log[0])
corpus = snakemake.wildcards.corpus
generation, readers = json.loads(snakemake.params.generation), json.loads(snakemake.params.readers)
outputs = reader_outputs(readers, list(snakemake.output.answers))
trace_paths = reader_outputs(readers, list(snakemake.output.traces), ending="jsonl")
questions = parse_questions(read_yaml(snakemake.input.questions), snakemake.input.questions)
documents = documents_from_frame(pd.read_parquet(snakemake.input.parsed))
caller, _ = named_caller(snakemake.params.caller)  # only the documents the caller may read
sources = summary_chunks(lead_summaries(readable_documents(documents, caller)))
keys = {"corpus": corpus, "chunker": "(lead summaries)", "retriever": "(all in the prompt)"}
if any(chunk.text.strip() for chunk in sources):
    generation = {**generation, "k": len(sources)}  # every summary goes into the one prompt
    # The summaries are the collection the reader reads, so their idf weighs the question.
    idf = collection_idf([chunk.indexed_text for chunk in sources])
    count_cl100k = optional_token_counter(CL100K_BASE)
    inputs = (questions, documents, lambda question: sources, sources, idf)
    frames = reader_frames(*inputs, generation, readers, snakemake.params.cache, count_cl100k, **keys)
else:
    # Issue 16: without lead sections there are no summaries to answer from; left out, not an error.
    warning = (
        f"corpus {corpus!r}: answers from lead summaries left out, they need lead sections "
        "(text before a document's first section heading), and no document has one"
    )
    log.warning("%s", warning)
    print(f"WARNING: {visible(str(warning), keep_newlines=False)}", file=sys.stderr)
    frames = [(reader_answers_frame([], **keys, reader=reader["name"]), None) for reader in readers]
for reader, (frame, embedder), path, trace_path in zip(readers, frames, outputs, trace_paths, strict=True):
    if embedder is not None:
        embedder.save()
    log.info("%s", describe_answers(frame, f"{corpus}, {len(sources)} lead summaries, {reader['name']}"))
    stage = {"stage": "answer_from_summaries", "generation": generation, "reader": reader}
    write_parquet(frame, path, provenance(**stage))
    write_text(trace_path, trace_lines(summary_answer_traces(frame, questions, caller, sources)))
finish_job()
