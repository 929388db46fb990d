"""Rank the chunks of one chunk set with a pretrained sentence embedder, through the embedding cache."""

import importlib.metadata
import json
import time
from pathlib import Path

import pandas as pd

from rag import embedder
from rag.embedding_cache import (
    EncoderSettings,
    describe_outcome,
    embed_with_cache,
    encoder_fingerprint,
    progress_message,
)
from rag.io import (
    finish_job,
    read_embedding_shards,
    read_provenance,
    read_questions,
    save_arrays,
    source_digest,
    start_log,
    write_embedding_shard,
    write_ranking,
)
from rag.progress import Progress
from rag.provenance import retriever_record
from rag.retrievers import chunk_text_column, embedder_retriever
from rag.search import chunk_id_order
from rag.sentence_embeddings import cached_encoder, embedding_search, encode_texts

log = start_log(snakemake.log[0])
entry = json.loads(snakemake.params.retriever)
name = f"{snakemake.wildcards.retriever} on {snakemake.wildcards.corpus}/{snakemake.wildcards.chunker}"
column = chunk_text_column(entry)
chunks = pd.read_parquet(snakemake.input.chunks, columns=["chunk_id", column])
questions = read_questions(snakemake.input.questions) if snakemake.input.get("questions") else []

settings = EncoderSettings(
    model=entry["model"],
    max_tokens=entry["max_tokens"],
    fingerprint=encoder_fingerprint(
        source_digest([embedder]),
        importlib.metadata.version(embedder.MODEL_PACKAGES[entry["model"]]),
    ),
)
folder = Path(snakemake.params.cache, *settings.namespace())
cached, problems = read_embedding_shards(folder)
for problem in problems:
    log.warning("%s", problem)
log.info("%s: %d cached embeddings in %s", name, len(cached), folder)


def encode(texts):
    """Encode the cache's misses, logging progress and the rate in texts per second."""
    cached_encoder(entry["model"])  # loading the weights is not part of the rate
    start = time.perf_counter()
    # Progress with the rate and the time left, for more than a few thousand texts (rag.progress).
    report = Progress(f"encoded texts with {entry['model']}", len(texts), log.info)

    def progress(done, total):
        report.update(done)
        if done == total:
            log.info("%s", progress_message(done, total, time.perf_counter() - start))

    return encode_texts(
        entry["model"],
        texts,
        batch_size=entry["batch_size"],
        max_tokens=entry["max_tokens"],
        progress=progress,
        workers=snakemake.threads,
    )


chunk_vectors, new_chunks, chunk_outcome = embed_with_cache(chunks[column].tolist(), cached, encode)
log.info("%s", describe_outcome(f"chunk texts ({column})", chunk_outcome))
query_vectors, new_queries, query_outcome = embed_with_cache(
    [q.text for q in questions], {**cached, **new_chunks}, encode
)
log.info("%s", describe_outcome("question texts", query_outcome))
shard = write_embedding_shard(folder, {**new_chunks, **new_queries})
if shard is not None:
    log.info("stored %d new embeddings in %s", len(new_chunks) + len(new_queries), shard)

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
