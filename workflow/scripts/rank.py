"""Rank the chunks of one chunk set for every question with one retriever."""

import json

from rag.io import (
    finish_job,
    read_columns,
    read_provenance,
    read_questions,
    save_arrays,
    start_log,
    write_ranking,
)
from rag.provenance import retriever_record
from rag.retrievers import build_retriever, search
from rag.search import chunk_id_order

log = start_log(snakemake.log[0])
entry = json.loads(snakemake.params.retriever)
name = f"{snakemake.wildcards.retriever} on {snakemake.wildcards.corpus}/{snakemake.wildcards.chunker}"
chunks = read_columns(snakemake.input.chunks, ["chunk_id", "indexed_text"])
questions = read_questions(snakemake.input.questions)

retriever = build_retriever(entry, chunks["indexed_text"], name)
chunk_ids = chunks["chunk_id"]
rankings = search(retriever, [q.text for q in questions], snakemake.params.depth, chunk_id_order(chunk_ids))
empty = [q.question_id for q, ranking in zip(questions, rankings, strict=True) if len(ranking) == 0]
log.info(
    "%s: %d chunks, %d questions, %d with an empty ranking %s",
    name,
    len(chunk_ids),
    len(questions),
    len(empty),
    empty,
)

save_arrays(snakemake.output.index, retriever.index.to_arrays())
write_ranking(
    snakemake.output.ranking,
    [q.question_id for q in questions],
    rankings,
    chunk_ids,
    chunk_set=read_provenance(snakemake.input.chunks),
    retriever=retriever_record(entry),
    code=snakemake.params.code,
    stage="rank",
)
finish_job()
