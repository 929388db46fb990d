"""Rerank a first stage's candidates and select each question's final list.

Serves the rules funnel (unfiltered) and funnel_filtered: there the first
stage is already prefiltered, and its candidates are checked against the
filter once more before the reranker sees any of them.
"""

import json
from pathlib import Path

import numpy as np

from rag.filters import ChunkMetadata, allowed_chunks, parse_filter, restrict_ranking
from rag.funnel import funnel_ranking, fused_reranker, retriever_reranker
from rag.io import (
    finish_job,
    read_columns,
    read_provenance,
    read_questions,
    read_rankings,
    start_log,
    write_ranking,
)
from rag.provenance import composite_record, filter_record, retriever_record
from rag.retrievers import load_retriever
from rag.search import chunk_id_order

log = start_log(snakemake.log[0])
entry = json.loads(snakemake.params.retriever)
rerank_entries = json.loads(snakemake.params.rerank)
filter_config = getattr(snakemake.params, "filter", None)
filter_config = json.loads(filter_config) if filter_config else None

chunks = read_columns(snakemake.input.chunks, ["chunk_id", "doc_id", "access", "tags", "updated"])
chunk_ids = chunks["chunk_id"]
tie_order = chunk_id_order(chunk_ids)
questions = read_questions(snakemake.input.questions)
first = read_rankings(snakemake.input.first, chunk_ids, [q.question_id for q in questions])


def load(name):
    path = next(path for path in snakemake.input.rerank if Path(path).stem == name)
    with np.load(path) as arrays:
        return load_retriever(rerank_entries[name], arrays)


reranker, rerank_record = None, None
if entry["rerank"] is not None:
    rerank_entry = rerank_entries[entry["rerank"]]
    if rerank_entry["kind"] == "rrf":
        parts = rerank_entry["components"]
        reranker = fused_reranker(
            [retriever_reranker(load(part), len(chunk_ids), tie_order) for part in parts],
            rerank_entry["constant"],
            tie_order,
        )
        rerank_record = composite_record(
            rerank_entry, components={part: retriever_record(rerank_entries[part]) for part in parts}
        )
    else:
        reranker = retriever_reranker(load(entry["rerank"]), len(chunk_ids), tie_order)
        rerank_record = retriever_record(rerank_entry)

allowed = None
if filter_config is not None:
    metadata = ChunkMetadata.from_columns(
        chunks["doc_id"], chunks["access"], chunks["tags"], chunks["updated"]
    )
    allowed = allowed_chunks(
        parse_filter(filter_config, f"filter {snakemake.wildcards.filter_name!r}"), metadata
    )

documents = chunks["doc_id"]
rankings, removed = [], 0
for question in questions:
    candidates = first[question.question_id]
    if allowed is not None:
        kept = restrict_ranking(candidates, allowed)
        removed += len(candidates) - len(kept)
        candidates = kept
    rankings.append(
        funnel_ranking(
            candidates,
            question.text,
            reranker,
            entry["candidates"],
            snakemake.params.depth,
            tie_order,
            documents,
            entry["diversity"],
        )
    )
log.info(
    "funnel %s: first %s, rerank %s, %d candidates, cap %s; %d questions, mean list length %.1f",
    snakemake.wildcards.retriever,
    entry["first"],
    entry["rerank"],
    entry["candidates"],
    entry["diversity"],
    len(questions),
    float(np.mean([len(ranking) for ranking in rankings])) if rankings else 0.0,
)
if allowed is not None:
    log.info("disallowed first-stage candidates removed before reranking: %d (expected 0)", removed)
write_ranking(
    snakemake.output.ranking,
    [q.question_id for q in questions],
    rankings,
    chunk_ids,
    chunk_set=read_provenance(snakemake.input.chunks),
    retriever=composite_record(entry, first=read_provenance(snakemake.input.first), rerank=rerank_record),
    code=snakemake.params.code,
    stage="funnel",
    **filter_record(filter_config),
)
finish_job()
