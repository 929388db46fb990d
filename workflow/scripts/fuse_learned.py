"""Fuse a learned entry's components with cross-validated weights; record each fold's weights."""

import json

from rag.evaluation.learned_fusion import describe_choice, learned_fusion, weights_table
from rag.evaluation.metrics import QRELS_COLUMNS
from rag.io import (
    RANKING_COLUMNS,
    finish_job,
    provenance,
    rankings_from_columns,
    rankings_to_table,
    read_columns,
    read_provenance,
    read_questions,
    start_log,
    write_csv,
    write_parquet,
)
from rag.provenance import carried, record_digest

log = start_log(snakemake.log[0])
entry = json.loads(snakemake.params.retriever)
chunk_ids = read_columns(snakemake.input.chunks, ["chunk_id"])["chunk_id"]
tables = [read_columns(path, RANKING_COLUMNS) for path in snakemake.input.components]
question_ids = sorted(set().union(*(table["question_id"] for table in tables)))
components = [rankings_from_columns(table, chunk_ids, question_ids) for table in tables]
questions = read_questions(snakemake.input.questions)
qrels = read_columns(snakemake.input.qrels, QRELS_COLUMNS)
rankings, choices = learned_fusion(entry, components, chunk_ids, questions, qrels, snakemake.params.depth)
for choice in choices:
    log.info("%s", describe_choice(choice, entry))
write_csv(weights_table(choices, entry["components"]), snakemake.output.weights)
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
