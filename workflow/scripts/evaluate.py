"""Evaluate every ranking of the grid and write the tables users read."""

import pandas as pd

from rag.evaluation.cohorts import document_cohorts
from rag.evaluation.metrics import evaluate_rankings, relevance_by_question
from rag.evaluation.significance import question_values
from rag.evaluation.statistics import aggregate_metrics, per_question_table
from rag.io import (
    finish_job,
    read_provenance,
    read_ranked_chunk_ids,
    read_yaml,
    start_log,
    write_csv,
    write_parquet,
)
from rag.labels import parse_questions
from rag.provenance import record_digest

log = start_log(snakemake.log[0])
ks = snakemake.params.ks
questions = {
    corpus: [q for q in parse_questions(read_yaml(path), path) if q.answerable]  # no metrics if unanswerable
    for corpus, path in zip(snakemake.params.corpora, snakemake.input.questions, strict=True)
}
relevance, words, documents, cohorts = {}, {}, {}, []
for (corpus, chunker), qrels_path, chunks in zip(
    snakemake.params.pairs, snakemake.input.qrels, snakemake.input.chunks, strict=True
):
    qrels = pd.read_parquet(qrels_path)
    relevance[corpus, chunker] = relevance_by_question(questions[corpus], qrels)
    table = pd.read_parquet(chunks, columns=["chunk_id", "n_words", "doc_id"])
    words[corpus, chunker] = dict(zip(table.chunk_id, table.n_words, strict=True))
    documents[corpus, chunker] = dict(zip(table.chunk_id, table.doc_id, strict=True))
    pairs = document_cohorts(questions[corpus], qrels, documents[corpus, chunker])
    cohorts.append(pairs.assign(corpus=corpus, chunker=chunker))

parts, provenance = [], []
for (corpus, chunker, retriever), path in zip(snakemake.params.grid, snakemake.input.rankings, strict=True):
    ranked = read_ranked_chunk_ids(path, [q.question_id for q in questions[corpus]])
    frame = evaluate_rankings(
        ranked, relevance[corpus, chunker], ks, words[corpus, chunker], documents[corpus, chunker]
    )
    frame.insert(1, "type", frame["question_id"].map({q.question_id: q.type for q in questions[corpus]}))
    parts.append(frame.assign(corpus=corpus, chunker=chunker, retriever=retriever))
    provenance.append((corpus, chunker, retriever, record_digest(read_provenance(path))))
    log.info("%s/%s/%s: %d questions", corpus, chunker, retriever, len(ranked))

keys = ["corpus", "chunker", "retriever"]
evaluation = pd.concat(parts, ignore_index=True)
# Each metrics row names the run that made its ranking (see results/provenance.csv).
metrics = aggregate_metrics(evaluation, keys).merge(
    pd.DataFrame(provenance, columns=[*keys, "provenance"]), on=keys, how="left"
)
write_csv(metrics, snakemake.output.metrics)
write_csv(aggregate_metrics(evaluation, [*keys, "type"]), snakemake.output.by_type)
# A question with evidence in several documents counts for each of them (rag.evaluation.cohorts).
by_document = evaluation.merge(pd.concat(cohorts, ignore_index=True), on=["corpus", "chunker", "question_id"])
write_csv(aggregate_metrics(by_document, [*keys, "document"]), snakemake.output.by_document)
write_csv(per_question_table(evaluation, keys), snakemake.output.per_question)
# Every metric of every question, for the confidence intervals and paired tests.
write_parquet(question_values(evaluation), snakemake.output.question_values)
finish_job()
