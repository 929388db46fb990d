"""A learned fusion's ranking for a filter or caller: the unfiltered one when the view allows every chunk.

A learned fusion's weights were chosen on the unfiltered component rankings;
fusing prefiltered components with them is not yet done, so a view that
leaves chunks out stops the job (fail closed) instead of ranking them.
"""

import json
import sys

from rag.formats.tables import read_columns
from rag.jobs import finish_job, start_log, write_job_ranking
from rag.provenance import filter_record, retriever_record
from rag.retrieval.filters import METADATA_COLUMNS, allowed_by_config
from rag.retrieval.ranking_files import read_component_rankings

log = start_log(snakemake.log[0])
entry = json.loads(snakemake.params.retriever)
filter_config = json.loads(snakemake.params.filter)
name = snakemake.wildcards.filter_name
chunks = read_columns(snakemake.input.chunks, ["chunk_id", *METADATA_COLUMNS])
allowed = allowed_by_config(chunks, filter_config, name)
if not allowed.all():
    message = (
        f"retriever {snakemake.wildcards.retriever!r} (learned fusion): its rankings cannot yet be "
        f"searched within filter or caller {name!r}, which leaves {int((~allowed).sum())} of "
        f"{len(allowed)} chunks out; answer from another retriever for this caller"
    )
    log.error("%s", message)
    print(f"Error: {message}", file=sys.stderr)
    sys.exit(1)
question_ids, (rankings,) = read_component_rankings([snakemake.input.unfiltered], chunks["chunk_id"])
log.info("the filter allows every chunk: the unfiltered learned ranking, %d questions", len(question_ids))
write_job_ranking(
    snakemake.output.ranking,
    question_ids,
    [rankings[question_id] for question_id in question_ids],
    chunks["chunk_id"],
    chunks=snakemake.input.chunks,
    code=snakemake.params.code,
    retriever=retriever_record(entry),
    stage="learned_filtered",
    **filter_record(filter_config),
)
finish_job()
