"""Rank the chunks of one chunk set with a pretrained sentence embedder, through the embedding cache."""

import json
from pathlib import Path

import pandas as pd

from rag.io import finish_job, read_provenance, read_questions, save_arrays, start_log, write_ranking
from rag.provenance import retriever_record
from rag.retrieval.dense.embedding_cache import EmbeddingCache
from rag.retrieval.dense.sentence_embeddings import (
    cached_encoder,
    device_backend,
    embedding_search,
    encode_texts,
    encoder_settings,
    resolve_device,
)
from rag.retrieval.retrievers import chunk_text_column, embedder_retriever
from rag.retrieval.search import chunk_id_order

log = start_log(snakemake.log[0])
entry = json.loads(snakemake.params.retriever)
name = f"{snakemake.wildcards.retriever} on {snakemake.wildcards.corpus}/{snakemake.wildcards.chunker}"
column = chunk_text_column(entry)
chunks = pd.read_parquet(snakemake.input.chunks, columns=["chunk_id", column])
# An unlabelled corpus has no questions: its chunks are still encoded and indexed.
questions = read_questions(snakemake.input.questions) if snakemake.input.get("questions") else []

try:
    # Resolved on the node that runs the job, which may have a GPU the submitting one lacks.
    device = resolve_device(entry["device"])
except ValueError as error:
    log.error("%s", error)
    raise SystemExit(f"{name}: {error}") from None
settings = encoder_settings(entry["model"], entry["max_tokens"], device_backend(device))
cache = EmbeddingCache(Path(snakemake.params.cache, *settings.namespace()), log=log.info)
log.info("%s: encoding on %s", name, device)


def encode(texts):
    """The cache's misses, one block at a time (the model is loaded at the first miss only)."""
    if device == "cpu":
        cached_encoder(entry["model"])
    return encode_texts(
        entry["model"],
        texts,
        batch_size=entry["batch_size"],
        max_tokens=entry["max_tokens"],
        workers=snakemake.threads,
        device=device,
    )


chunk_vectors = cache.embed(f"chunk texts ({column})", chunks[column].tolist(), encode)
query_vectors = cache.embed("question texts", [q.text for q in questions], encode)

retriever = embedder_retriever(entry, chunk_vectors, name)
chunk_ids = chunks["chunk_id"].tolist()
rankings = embedding_search(retriever.index, query_vectors, snakemake.params.depth, chunk_id_order(chunk_ids))
log.info("%s: %d chunks, %d questions", name, len(chunks), len(questions))

save_arrays(snakemake.output.index, retriever.index.to_arrays())
write_ranking(
    snakemake.output.ranking,
    [q.question_id for q in questions],
    rankings,
    chunk_ids,
    chunk_set=read_provenance(snakemake.input.chunks),
    retriever=retriever_record(entry),
    code=snakemake.params.code,
    stage="rank_embedder",
    encoder=settings.fingerprint,
)
finish_job()
