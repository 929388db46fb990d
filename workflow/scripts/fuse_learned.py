"""Fuse a learned entry's components with weights chosen by nested cross-validation; record each fold."""

import json

import pandas as pd

from rag.evaluation.document_relevance import document_relevance
from rag.evaluation.holdout import holdout_questions
from rag.evaluation.learned_fusion import (
    LearnedFusionSettings,
    chunk_relevance,
    describe_choice,
    learned_fusion,
    weights_table,
)
from rag.evaluation.metrics import QRELS_COLUMNS
from rag.formats.files import write_csv
from rag.formats.tables import provenance, read_columns, read_provenance, write_parquet
from rag.pipeline.jobs import finish_job, start_log
from rag.provenance import carried, record_digest
from rag.question_tables import judgements_from_frame, read_questions
from rag.retrieval.ranking_files import rankings_to_table, read_component_provenance, read_component_rankings

log = start_log(snakemake.log[0])
entry = json.loads(snakemake.params.retriever)
settings = LearnedFusionSettings.from_entry(entry)
chunk_ids = read_columns(snakemake.input.chunks, ["chunk_id"])["chunk_id"]
question_ids, components = read_component_rankings(snakemake.input.components, chunk_ids)
questions = read_questions(snakemake.input.questions)
document_of = None
if snakemake.params.level == "document":  # graded document qrels (BEIR) are the labels
    relevance = document_relevance(judgements_from_frame(pd.read_parquet(snakemake.input.qrels)), questions)
    chunks = read_columns(snakemake.input.chunks, ["chunk_id", "doc_id"])
    document_of = dict(zip(chunks["chunk_id"], chunks["doc_id"], strict=True))
else:
    relevance = chunk_relevance(questions, read_columns(snakemake.input.qrels, QRELS_COLUMNS))
held = holdout_questions([q.question_id for q in questions if q.answerable], snakemake.params.holdout)
labels = {"holdout": held, "document_of": document_of}
rankings, choices, warnings = learned_fusion(
    settings, components, chunk_ids, questions, relevance, snakemake.params.depth, **labels
)
for warning in warnings:
    log.warning("%s", warning)
for choice in choices:
    log.info("%s", describe_choice(choice, settings))
write_csv(weights_table(choices, entry["components"], settings), snakemake.output.weights)
write_parquet(
    rankings_to_table(question_ids, [rankings[question_id] for question_id in question_ids], chunk_ids),
    snakemake.output.ranking,
    provenance(
        **carried(read_provenance(snakemake.input.chunks)),
        stage="fuse_learned",
        retriever=entry,
        retriever_digest=record_digest(entry),
        components=read_component_provenance(entry["components"], snakemake.input.components),
    ),
)
finish_job()
