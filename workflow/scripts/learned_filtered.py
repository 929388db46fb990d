"""A learned fusion for a filter or caller, refitted on the view's components and labels.

Weights are chosen on the labels of the chunks the view allows only
(rag.evaluation.learned_views); a view of every chunk gives the unfiltered ranking.
"""

import json

from rag.evaluation.holdout import holdout_questions
from rag.evaluation.learned_fusion import LearnedFusionSettings, describe_choice
from rag.evaluation.learned_views import learned_fusion_in_view, read_labels
from rag.formats.tables import read_columns
from rag.pipeline.jobs import RankingJob, start_log
from rag.provenance import composite_record, filter_record
from rag.question_tables import read_questions
from rag.retrieval.filters import METADATA_COLUMNS, allowed_by_config, describe_filtered
from rag.retrieval.ranking_files import (
    read_component_provenance,
    read_component_rankings,
    read_rankings_in_order,
)

log = start_log(snakemake.log[0])
entry = json.loads(snakemake.params.retriever)
filter_config = json.loads(snakemake.params.filter)
name = snakemake.wildcards.filter_name
chunks = read_columns(snakemake.input.chunks, ["chunk_id", *METADATA_COLUMNS])
chunk_ids = chunks["chunk_id"]
allowed = allowed_by_config(chunks, filter_config, name)
question_ids, components = read_component_rankings(snakemake.input.components, chunk_ids)
if allowed.all():
    fused = read_rankings_in_order(snakemake.input.unfiltered, chunk_ids, question_ids)
    log.info("the filter allows every chunk: the unfiltered learned ranking, %d questions", len(question_ids))
else:
    settings = LearnedFusionSettings.from_entry(entry)
    questions = read_questions(snakemake.input.questions)
    labels = read_labels(snakemake.input.qrels, questions, snakemake.params.level, chunks)
    held = holdout_questions([q.question_id for q in questions if q.answerable], snakemake.params.holdout)
    view = (components, chunk_ids, questions, labels[0], allowed, snakemake.params.depth, held, labels[1])
    rankings, choices, warnings = learned_fusion_in_view(settings, *view)
    for warning in warnings:
        log.warning("%s", warning)
    for choice in choices:
        log.info("%s", describe_choice(choice, settings))
    fused = [rankings[question_id] for question_id in question_ids]
    log.info("%s", describe_filtered(snakemake.wildcards.retriever, name, allowed, fused))
components_record = read_component_provenance(entry["components"], snakemake.input.components)
record = composite_record(entry, components=components_record)
job = RankingJob(snakemake.output.ranking, snakemake.input.chunks, snakemake.params.code, "learned_filtered")
job.finish(question_ids, fused, chunk_ids, record, **filter_record(filter_config))
