"""Fuse the rankings of a fusion entry's components, question by question.

The same script fuses filtered rankings (rule fuse_filtered): fusing
prefiltered components keeps the result inside the filter.
"""

import json

from rag.formats.tables import read_columns
from rag.jobs import finish_job, job_filter, start_log, write_job_ranking
from rag.provenance import composite_record, filter_record
from rag.retrieval.fusion import fuse
from rag.retrieval.ranking_files import read_component_provenance, read_component_rankings
from rag.retrieval.search import chunk_id_order

log = start_log(snakemake.log[0])
entry = json.loads(snakemake.params.retriever)
chunk_ids = read_columns(snakemake.input.chunks, ["chunk_id"])["chunk_id"]
tie_order = chunk_id_order(chunk_ids)
question_ids, components = read_component_rankings(snakemake.input.components, chunk_ids)
depth = snakemake.params.depth

fused = [fuse(entry, [component[q] for component in components], depth, tie_order) for q in question_ids]
log.info("fused %s for %d questions", entry["components"], len(question_ids))
components_record = read_component_provenance(entry["components"], snakemake.input.components)
record = composite_record(entry, components=components_record)
parts = filter_record(job_filter(getattr(snakemake.params, "filter", None)))
write_job_ranking(
    snakemake.output.ranking,
    question_ids,
    fused,
    chunk_ids,
    chunks=snakemake.input.chunks,
    code=snakemake.params.code,
    retriever=record,
    stage="fuse",
    **parts,
)
finish_job()
