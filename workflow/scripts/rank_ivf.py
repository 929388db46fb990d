"""Rank the chunks with an IVF index over a dense base retriever's saved embeddings."""

import json

from rag.formats.tables import load_arrays, read_columns, save_arrays
from rag.pipeline.jobs import RankingJob, start_log
from rag.provenance import ivf_record
from rag.question_tables import read_questions
from rag.retrieval.retrievers import build_ivf_retriever, chunk_embeddings, load_retriever, search
from rag.retrieval.search import chunk_id_order

log = start_log(snakemake.log[0])
entry = json.loads(snakemake.params.retriever)
base_entry = json.loads(snakemake.params.base)
name = f"{snakemake.wildcards.retriever} on {snakemake.wildcards.corpus}/{snakemake.wildcards.chunker}"
chunk_ids = read_columns(snakemake.input.chunks, ["chunk_id"])["chunk_id"]
questions = read_questions(snakemake.input.questions)

base = load_retriever(base_entry, load_arrays(snakemake.input.base_index))
embedded = len(chunk_embeddings(base))
if embedded != len(chunk_ids):
    raise ValueError(
        f"{snakemake.input.base_index}: {embedded} embeddings for {len(chunk_ids)} chunks in "
        f"{snakemake.input.chunks}; rebuild the base index"
    )
retriever = build_ivf_retriever(entry, base, name)
lists = retriever.index.lists
rankings = search(retriever, [q.text for q in questions], snakemake.params.depth, chunk_id_order(chunk_ids))
log.info(
    "%s: %d chunks in %d lists (sizes %d to %d), %d probes, %d questions",
    name,
    lists.size,
    lists.list_count,
    lists.list_sizes.min(),
    lists.list_sizes.max(),
    entry["probes"],
    len(questions),
)

save_arrays(snakemake.output.index, retriever.index.to_arrays())
record = ivf_record(entry, base_entry)
job = RankingJob(snakemake.output.ranking, snakemake.input.chunks, snakemake.params.code, "rank_ivf")
job.finish([q.question_id for q in questions], rankings, chunk_ids, record)
