"""Rerank a first stage's candidates and select each question's final list.

Serves the rules funnel (unfiltered) and funnel_filtered: there the first
stage is already prefiltered, and its candidates are checked against the
filter once more before the reranker sees any of them (rag.retrieval.funnel).
"""

import json

import numpy as np

from rag.io import (
    finish_job,
    load_indexes,
    read_columns,
    read_provenance,
    read_questions,
    read_rankings,
    start_log,
    write_ranking,
)
from rag.provenance import composite_record, filter_record
from rag.retrieval.filters import METADATA_COLUMNS, allowed_by_config
from rag.retrieval.funnel import configured_reranker, funnel_rankings
from rag.retrieval.search import chunk_id_order

log = start_log(snakemake.log[0])
entry = json.loads(snakemake.params.retriever)
filter_config = getattr(snakemake.params, "filter", None)
filter_config = json.loads(filter_config) if filter_config else None

chunks = read_columns(snakemake.input.chunks, ["chunk_id", *METADATA_COLUMNS])
chunk_ids = chunks["chunk_id"]
tie_order = chunk_id_order(chunk_ids)
questions = read_questions(snakemake.input.questions)
first = read_rankings(snakemake.input.first, chunk_ids, [q.question_id for q in questions])
indexes = load_indexes(snakemake.input.rerank)
reranker, rerank_record = configured_reranker(
    entry, json.loads(snakemake.params.rerank), indexes, len(chunk_ids), tie_order
)
allowed = None
if filter_config is not None:
    allowed = allowed_by_config(chunks, filter_config, snakemake.wildcards.filter_name)
rankings, removed = funnel_rankings(
    first,
    [(q.question_id, q.text) for q in questions],
    reranker,
    entry,
    snakemake.params.depth,
    tie_order,
    chunks["doc_id"],
    allowed,
)
log.info(
    "funnel %s: first %s, rerank %s, %d candidates, cap %s; %d questions, mean list length %.1f",
    snakemake.wildcards.retriever,
    *(entry[key] for key in ("first", "rerank", "candidates", "diversity")),
    *(len(questions), float(np.mean([len(ranking) for ranking in rankings])) if rankings else 0.0),
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
