"""Rank the chunks of one chunk set for every question with one retriever."""

import json
import time

from rag.io import (
    finish_job,
    read_columns,
    read_provenance,
    read_questions,
    save_arrays,
    start_log,
    write_ranking,
)
from rag.progress import Progress, in_slices, progress_line
from rag.provenance import retriever_record
from rag.retrieval.retrievers import build_retriever, search
from rag.retrieval.search import chunk_id_order

log = start_log(snakemake.log[0])
entry = json.loads(snakemake.params.retriever)
name = f"{snakemake.wildcards.retriever} on {snakemake.wildcards.corpus}/{snakemake.wildcards.chunker}"
chunks = read_columns(snakemake.input.chunks, ["chunk_id", "indexed_text"])
# An unlabelled corpus has no questions: its index is built and timed all the same.
questions = read_questions(snakemake.input.questions) if snakemake.input.get("questions") else []

started = time.perf_counter()
retriever = build_retriever(entry, chunks["indexed_text"], name)
log.info(
    "%s",
    progress_line(
        f"indexed chunks of {name}",
        len(chunks["chunk_id"]),
        len(chunks["chunk_id"]),
        time.perf_counter() - started,
    ),
)
chunk_ids = chunks["chunk_id"]
order = chunk_id_order(chunk_ids)
progress = Progress(f"ranked questions with {name}", len(questions), log.info)
rankings = [
    ranking
    for part in in_slices([q.text for q in questions], 500, progress)
    for ranking in search(retriever, part, snakemake.params.depth, order)
]
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
