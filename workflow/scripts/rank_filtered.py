"""Rank one chunk set for every question within a filter's allowed chunks (a prefilter).

The retriever is loaded from the index its ranking rule saved, so the filter
changes which chunks are searched, never the index statistics. The log
records counts only: no chunk id or text, allowed or not, is written there.
"""

import json

import numpy as np

from rag.io import (
    finish_job,
    read_columns,
    read_provenance,
    read_yaml,
    start_log,
    write_ranking,
)
from rag.labels import parse_questions
from rag.provenance import filter_record, retriever_record
from rag.retrieval.filters import ChunkMetadata, allowed_chunks, parse_filter
from rag.retrieval.retrievers import load_retriever, search
from rag.retrieval.search import chunk_id_order

log = start_log(snakemake.log[0])
entry = json.loads(snakemake.params.retriever)
filter_config = json.loads(snakemake.params.filter)
name = f"{snakemake.wildcards.retriever} on {snakemake.wildcards.corpus}/{snakemake.wildcards.chunker}"
chunks = read_columns(snakemake.input.chunks, ["chunk_id", "doc_id", "access", "tags", "updated"])
metadata = ChunkMetadata.from_columns(chunks["doc_id"], chunks["access"], chunks["tags"], chunks["updated"])
where = f"filter {snakemake.wildcards.filter_name!r}"
allowed = allowed_chunks(parse_filter(filter_config, where), metadata)
questions = parse_questions(read_yaml(snakemake.input.questions), snakemake.input.questions)

with np.load(snakemake.input.index) as arrays:
    retriever = load_retriever(entry, arrays)
chunk_ids = chunks["chunk_id"]
rankings = search(
    retriever, [q.text for q in questions], snakemake.params.depth, chunk_id_order(chunk_ids), allowed=allowed
)
log.info(
    "%s, %s: %d of %d chunks allowed; %d questions, %d with an empty ranking",
    name,
    where,
    int(allowed.sum()),
    len(allowed),
    len(questions),
    sum(len(ranking) == 0 for ranking in rankings),
)
write_ranking(
    snakemake.output.ranking,
    [q.question_id for q in questions],
    rankings,
    chunk_ids,
    chunk_set=read_provenance(snakemake.input.chunks),
    retriever=retriever_record(entry),
    code=snakemake.params.code,
    stage="rank_filtered",
    **filter_record(filter_config),
)
finish_job()
