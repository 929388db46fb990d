"""Fuse a learned entry's components with weights chosen by nested cross-validation; record each fold."""

import json

import pandas as pd

from rag import io
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
from rag.provenance import carried, record_digest

log = io.start_log(snakemake.log[0])
entry = json.loads(snakemake.params.retriever)
settings = LearnedFusionSettings.from_entry(entry)
chunk_ids = io.read_columns(snakemake.input.chunks, ["chunk_id"])["chunk_id"]
question_ids, components = io.read_component_rankings(snakemake.input.components, chunk_ids)
questions = io.read_questions(snakemake.input.questions)
document_of = None
if snakemake.params.level == "document":  # graded document qrels (BEIR) are the labels
    judgements = io.judgements_from_frame(pd.read_parquet(snakemake.input.qrels))
    relevance = document_relevance(judgements, questions)
    chunks = io.read_columns(snakemake.input.chunks, ["chunk_id", "doc_id"])
    document_of = dict(zip(chunks["chunk_id"], chunks["doc_id"], strict=True))
else:
    relevance = chunk_relevance(questions, io.read_columns(snakemake.input.qrels, QRELS_COLUMNS))
held = holdout_questions([q.question_id for q in questions if q.answerable], snakemake.params.holdout)
labels = {"holdout": held, "document_of": document_of}
rankings, choices, warnings = learned_fusion(
    settings, components, chunk_ids, questions, relevance, snakemake.params.depth, **labels
)
for warning in warnings:
    log.warning("%s", warning)
for choice in choices:
    log.info("%s", describe_choice(choice, settings))
io.write_csv(weights_table(choices, entry["components"], settings), snakemake.output.weights)
io.write_parquet(
    io.rankings_to_table(question_ids, [rankings[question_id] for question_id in question_ids], chunk_ids),
    snakemake.output.ranking,
    io.provenance(
        **carried(io.read_provenance(snakemake.input.chunks)),
        stage="fuse_learned",
        retriever=entry,
        retriever_digest=record_digest(entry),
        components=io.read_component_provenance(entry["components"], snakemake.input.components),
    ),
)
io.finish_job()
