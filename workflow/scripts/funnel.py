"""Rerank a first stage's candidates and select each question's final list.

Serves the rules funnel and funnel_filtered: there the first stage is
prefiltered, its candidates are checked once more before reranking
(rag.retrieval.funnel), and a filter of every chunk gives the unfiltered list.
"""

import json

from rag.formats.tables import load_indexes, read_columns, read_provenance
from rag.pipeline.jobs import RankingJob, job_filter, start_log
from rag.provenance import composite_record, filter_record
from rag.question_tables import read_questions
from rag.retrieval.filters import METADATA_COLUMNS, allowed_by_config
from rag.retrieval.funnel import configured_reranker, describe_funnel, funnel_rankings
from rag.retrieval.ranking_files import read_rankings, read_rankings_in_order
from rag.retrieval.search import chunk_id_order

log = start_log(snakemake.log[0])
entry = json.loads(snakemake.params.retriever)
filter_config = job_filter(getattr(snakemake.params, "filter", None))
chunks = read_columns(snakemake.input.chunks, ["chunk_id", *METADATA_COLUMNS])
chunk_ids, tie_order = chunks["chunk_id"], chunk_id_order(chunks["chunk_id"])
questions = read_questions(snakemake.input.questions)
question_ids = [q.question_id for q in questions]
first = read_rankings(snakemake.input.first, chunk_ids, question_ids)
indexes = load_indexes(snakemake.input.rerank)
rerank_entries = json.loads(snakemake.params.rerank)


def chunk_texts(column):
    return read_columns(snakemake.input.chunks, [column])[column]


reranker, rerank_record = configured_reranker(
    entry, rerank_entries, indexes, len(chunk_ids), tie_order, chunk_texts
)
allowed = None if filter_config is None else allowed_by_config(chunks, filter_config, "filter")
texts = [(q.question_id, q.text) for q in questions]
depth, documents = snakemake.params.depth, chunks["doc_id"]
if allowed is not None and allowed.all():  # a view of every chunk: the unfiltered funnel's ranking
    rankings, removed = read_rankings_in_order(snakemake.input.unfiltered, chunk_ids, question_ids), 0
else:
    rankings, removed = funnel_rankings(first, texts, reranker, entry, depth, tie_order, documents, allowed)
log.info("%s", describe_funnel(snakemake.wildcards.retriever, entry, rankings))
if allowed is not None:
    log.info("disallowed first-stage candidates removed before reranking: %d (expected 0)", removed)
record = composite_record(entry, first=read_provenance(snakemake.input.first), rerank=rerank_record)
job = RankingJob(snakemake.output.ranking, snakemake.input.chunks, snakemake.params.code, "funnel")
job.finish(question_ids, rankings, chunk_ids, record, **filter_record(filter_config))
