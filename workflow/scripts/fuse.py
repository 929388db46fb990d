"""Fuse the rankings of a fusion entry's components, question by question.

The same script fuses filtered rankings (rule fuse_filtered): fusing
prefiltered components keeps the result inside the filter. A filter that
allows every chunk gives the unfiltered fused ranking itself (which fuses the
components at their deeper component depth).
"""

import json

from rag.formats.tables import read_columns
from rag.pipeline.jobs import RankingJob, job_filter, start_log
from rag.provenance import composite_record, filter_record
from rag.retrieval.filters import METADATA_COLUMNS, allowed_by_config
from rag.retrieval.fusion import fuse
from rag.retrieval.ranking_files import (
    read_component_provenance,
    read_component_rankings,
    read_rankings_in_order,
)
from rag.retrieval.search import chunk_id_order

log = start_log(snakemake.log[0])
entry = json.loads(snakemake.params.retriever)
chunk_ids = read_columns(snakemake.input.chunks, ["chunk_id"])["chunk_id"]
tie_order = chunk_id_order(chunk_ids)
question_ids, components = read_component_rankings(snakemake.input.components, chunk_ids)
depth = snakemake.params.depth

filter_config = job_filter(getattr(snakemake.params, "filter", None))
allowed = None
if filter_config is not None:
    metadata = read_columns(snakemake.input.chunks, list(METADATA_COLUMNS))
    allowed = allowed_by_config(metadata, filter_config, snakemake.wildcards.filter_name)
if allowed is not None and allowed.all():
    fused = read_rankings_in_order(snakemake.input.unfiltered, chunk_ids, question_ids)
    log.info("the filter allows every chunk: the unfiltered fused ranking")
else:
    fused = [fuse(entry, [component[q] for component in components], depth, tie_order) for q in question_ids]
log.info("fused %s for %d questions", entry["components"], len(question_ids))
components_record = read_component_provenance(entry["components"], snakemake.input.components)
record = composite_record(entry, components=components_record)
parts = filter_record(filter_config)
job = RankingJob(snakemake.output.ranking, snakemake.input.chunks, snakemake.params.code, "fuse")
job.finish(question_ids, fused, chunk_ids, record, **parts)
