"""Rank the chunks of one chunk set with a pretrained sentence embedder, through the embedding cache."""

import json

from rag.formats.tables import read_columns, save_arrays
from rag.pipeline.jobs import RankingJob, start_log
from rag.provenance import retriever_record
from rag.question_tables import read_questions
from rag.retrieval.dense.sentence_embeddings import (
    embed_chunks_and_questions,
    embedding_search,
    resolve_device,
)
from rag.retrieval.retrievers import chunk_text_column, embedder_retriever
from rag.retrieval.search import chunk_id_order

log = start_log(snakemake.log[0])
entry = json.loads(snakemake.params.retriever)
name = f"{snakemake.wildcards.retriever} on {snakemake.wildcards.corpus}/{snakemake.wildcards.chunker}"
column = chunk_text_column(entry)
chunks = read_columns(snakemake.input.chunks, ["chunk_id", column])
chunk_ids = chunks["chunk_id"]
# An unlabelled corpus has no questions: its chunks are still encoded and indexed.
questions = read_questions(snakemake.input.questions) if snakemake.input.get("questions") else []

try:
    # Resolved on the node that runs the job, which may have a GPU the submitting one lacks.
    device = resolve_device(entry["device"])
except ValueError as error:
    log.error("%s", error)
    raise SystemExit(f"{name}: {error}") from None
question_texts = [q.text for q in questions]
chunk_vectors, query_vectors, fingerprint = embed_chunks_and_questions(
    entry, device, chunks[column], question_texts, snakemake.params.cache, log.info, name, snakemake.threads
)

retriever = embedder_retriever(entry, chunk_vectors, name)
rankings = embedding_search(retriever.index, query_vectors, snakemake.params.depth, chunk_id_order(chunk_ids))
log.info("%s: %d chunks, %d questions", name, len(chunk_ids), len(questions))

save_arrays(snakemake.output.index, retriever.index.to_arrays())
question_ids = [q.question_id for q in questions]
record = retriever_record(entry)
job = RankingJob(snakemake.output.ranking, snakemake.input.chunks, snakemake.params.code, "rank_embedder")
job.finish(question_ids, rankings, chunk_ids, record, encoder=fingerprint)
