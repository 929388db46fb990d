"""Rank the chunks of one chunk set for every question with one retriever."""

import json

from rag.formats.tables import read_columns, save_arrays
from rag.pipeline.jobs import RankingJob, start_log
from rag.provenance import retriever_record
from rag.question_tables import read_questions
from rag.retrieval.retrievers import build_with_progress, describe_rankings, search_with_progress
from rag.retrieval.search import chunk_id_order

log = start_log(snakemake.log[0])
entry = json.loads(snakemake.params.retriever)
name = f"{snakemake.wildcards.retriever} on {snakemake.wildcards.corpus}/{snakemake.wildcards.chunker}"
chunks = read_columns(snakemake.input.chunks, ["chunk_id", "indexed_text"])
chunk_ids = chunks["chunk_id"]
# An unlabelled corpus has no questions: its index is built and timed all the same.
questions = read_questions(snakemake.input.questions) if snakemake.input.get("questions") else []
question_ids = [q.question_id for q in questions]

retriever = build_with_progress(entry, chunks["indexed_text"], name, log.info)
order = chunk_id_order(chunk_ids)
rankings = search_with_progress(
    retriever, [q.text for q in questions], snakemake.params.depth, order, name, log.info
)
log.info("%s", describe_rankings(name, len(chunk_ids), question_ids, rankings))

save_arrays(snakemake.output.index, retriever.index.to_arrays())
job = RankingJob(snakemake.output.ranking, snakemake.input.chunks, snakemake.params.code, "rank")
job.finish(question_ids, rankings, chunk_ids, retriever_record(entry))
