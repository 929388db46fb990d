"""Rank a held-out question set with one of the grid's retrievers, from the indexes the grid saved.

Searched within the view of the caller the language models answer for (a prefilter).
"""

import json
from pathlib import Path

from rag.formats.files import read_yaml
from rag.formats.tables import load_arrays, read_columns
from rag.labels import parse_questions
from rag.pipeline.jobs import RankingJob, start_log
from rag.retrieval.filters import METADATA_COLUMNS, allowed_by_config
from rag.retrieval.question_sets import rank_question_set, ranking_provenance
from rag.retrieval.search import chunk_id_order

log = start_log(snakemake.log[0])
entries = json.loads(snakemake.params.retrievers)
name = snakemake.wildcards.retriever
questions = parse_questions(read_yaml(snakemake.input.questions), snakemake.input.questions)
chunks = read_columns(snakemake.input.chunks, ["chunk_id", *METADATA_COLUMNS])
chunk_ids = chunks["chunk_id"]
caller = json.loads(snakemake.params.caller)
allowed = allowed_by_config(chunks, caller["view"], caller["name"])
indexes = {Path(path).stem: path for path in snakemake.input.indexes}
rankings = rank_question_set(
    name,
    entries,
    [question.text for question in questions],
    snakemake.params.depth,
    chunk_id_order(chunk_ids),
    lambda base: load_arrays(indexes[base]),
    allowed,
)
log.info(
    "%s: %d questions of %s ranked from %s, as caller %r (%d of %d chunks readable)",
    name,
    len(questions),
    snakemake.wildcards.questions,
    sorted(indexes),
    caller["name"],
    int(allowed.sum()),
    len(allowed),
)
question_ids = [question.question_id for question in questions]
job = RankingJob(snakemake.output.ranking, snakemake.input.chunks, snakemake.params.code, "rank_question_set")
job.finish(question_ids, rankings, chunk_ids, ranking_provenance(name, entries))
