"""Fuse a learned entry's components with cross-validated weights; record each fold's weights."""

import json

import pandas as pd

from rag.evaluation.learned_fusion import cross_validated_fusion
from rag.evaluation.metrics import relevance_by_question
from rag.io import (
    RANKING_COLUMNS,
    finish_job,
    provenance,
    rankings_from_columns,
    rankings_to_table,
    read_columns,
    read_provenance,
    read_yaml,
    start_log,
    write_csv,
    write_parquet,
)
from rag.labels import parse_questions
from rag.provenance import carried, record_digest
from rag.retrieval.search import chunk_id_order

log = start_log(snakemake.log[0])
entry = json.loads(snakemake.params.retriever)
chunk_ids = read_columns(snakemake.input.chunks, ["chunk_id"])["chunk_id"]
tie_order = chunk_id_order(chunk_ids)
tables = [read_columns(path, RANKING_COLUMNS) for path in snakemake.input.components]
question_ids = sorted(set().union(*(table["question_id"] for table in tables)))
components = [rankings_from_columns(table, chunk_ids, question_ids) for table in tables]
by_question = {
    question_id: [component[question_id] for component in components] for question_id in question_ids
}
path = snakemake.input.questions
labelled = [
    q for q in parse_questions(read_yaml(path), path) if q.answerable and q.question_id in by_question
]
relevance = relevance_by_question(labelled, pd.read_parquet(snakemake.input.qrels))

rankings, choices = cross_validated_fusion(
    by_question,
    relevance,
    chunk_ids,
    fusion=entry["fusion"],
    folds=entry["folds"],
    seed=entry["seed"],
    steps=entry["steps"],
    objective=entry["objective"],
    k=entry["objective_k"],
    constant=entry["constant"],
    depth=snakemake.params.depth,
    tie_order=tie_order,
)
rows = []
for choice in choices:
    log.info(
        "fold %d: weights %s (training %s@%d = %.4f)",
        choice.fold,
        choice.weights,
        entry["objective"],
        entry["objective_k"],
        choice.training_objective,
    )
    for component, weight in zip(entry["components"], choice.weights, strict=True):
        rows.append(
            {
                "fold": choice.fold,
                "component": component,
                "weight": weight,
                "training_questions": choice.training_questions,
                "held_out_questions": choice.held_out_questions,
                "training_objective": choice.training_objective,
            }
        )
write_csv(pd.DataFrame(rows), snakemake.output.weights)
write_parquet(
    rankings_to_table(question_ids, [rankings[question_id] for question_id in question_ids], chunk_ids),
    snakemake.output.ranking,
    provenance(
        **carried(read_provenance(snakemake.input.chunks)),
        stage="fuse_learned",
        retriever=entry,
        retriever_digest=record_digest(entry),
        components={
            name: read_provenance(component)
            for name, component in zip(entry["components"], snakemake.input.components, strict=True)
        },
    ),
)
finish_job()
