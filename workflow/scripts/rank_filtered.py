"""Rank one chunk set for every question within a filter's allowed chunks (a prefilter).

The retriever is loaded from the index its ranking rule saved, so the filter
changes which chunks are searched, never the index statistics (an ivf entry
also loads its base's index, which embeds the questions). A filter that allows
every chunk (a caller who may read the whole chunk set) gives the unfiltered
ranking itself. The log records counts only: no chunk id or text, allowed or
not, is written there.
"""

import json
import sys

from rag.formats.tables import load_arrays, read_columns
from rag.pipeline.jobs import RankingJob, start_log
from rag.provenance import filter_record, retriever_record
from rag.question_tables import read_questions
from rag.retrieval.filters import METADATA_COLUMNS, allowed_by_config, describe_filtered, filter_warnings
from rag.retrieval.ranking_files import read_rankings_in_order
from rag.retrieval.retrievers import search_saved
from rag.retrieval.search import chunk_id_order

log = start_log(snakemake.log[0])
entry = json.loads(snakemake.params.retriever)
filter_config = json.loads(snakemake.params.filter)
filter_name = snakemake.wildcards.filter_name
name = f"{snakemake.wildcards.retriever} on {snakemake.wildcards.corpus}/{snakemake.wildcards.chunker}"
chunks = read_columns(snakemake.input.chunks, ["chunk_id", *METADATA_COLUMNS])
chunk_ids = chunks["chunk_id"]
allowed = allowed_by_config(chunks, filter_config, filter_name)
for line in filter_warnings(chunks, filter_config, filter_name):
    log.warning("%s", line)
    print(f"WARNING: {line}", file=sys.stderr)
questions = read_questions(snakemake.input.questions)
question_ids = [q.question_id for q in questions]
if allowed.all():
    rankings = read_rankings_in_order(snakemake.input.unfiltered, chunk_ids, question_ids)
    log.info("%s: the filter allows every chunk, so this is the unfiltered ranking", name)
else:
    base_index = snakemake.input.get("base_index")
    base = (json.loads(snakemake.params.base), load_arrays(base_index)) if base_index else None
    texts, order = [q.text for q in questions], chunk_id_order(chunk_ids)
    arrays = load_arrays(snakemake.input.index)
    rankings = search_saved(entry, arrays, texts, snakemake.params.depth, order, allowed, base)
log.info("%s", describe_filtered(name, filter_name, allowed, rankings))
job = RankingJob(snakemake.output.ranking, snakemake.input.chunks, snakemake.params.code, "rank_filtered")
job.finish(question_ids, rankings, chunk_ids, retriever_record(entry), **filter_record(filter_config))
