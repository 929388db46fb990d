"""Fuse the rankings of a fusion entry's components, question by question.

The same script fuses filtered rankings (rule fuse_filtered): fusing
prefiltered components keeps the result inside the filter.
"""

import json

from rag.io import (
    RANKING_COLUMNS,
    finish_job,
    rankings_from_columns,
    read_columns,
    read_provenance,
    start_log,
    write_job_ranking,
)
from rag.provenance import composite_record, filter_record
from rag.retrieval.fusion import fuse
from rag.retrieval.search import chunk_id_order

log = start_log(snakemake.log[0])
entry = json.loads(snakemake.params.retriever)
filter_config = getattr(snakemake.params, "filter", None)
chunk_ids = read_columns(snakemake.input.chunks, ["chunk_id"])["chunk_id"]
tie_order = chunk_id_order(chunk_ids)
tables = [read_columns(path, RANKING_COLUMNS) for path in snakemake.input.components]
question_ids = sorted(set().union(*(table["question_id"] for table in tables)))
components = [rankings_from_columns(table, chunk_ids, question_ids) for table in tables]
depth = snakemake.params.depth

fused = [fuse(entry, [component[q] for component in components], depth, tie_order) for q in question_ids]
log.info("fused %s for %d questions", entry["components"], len(question_ids))
components_record = {
    name: read_provenance(path)
    for name, path in zip(entry["components"], snakemake.input.components, strict=True)
}
record = composite_record(entry, components=components_record)
parts = filter_record(json.loads(filter_config) if filter_config else None)
write_job_ranking(snakemake, question_ids, fused, chunk_ids, record, "fuse", **parts)
finish_job()
