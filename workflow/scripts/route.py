"""Route every question to one document by its lead summary, then rank chunks of that document only."""

import json
import sys

import pandas as pd

from rag.answering.answers import evidence_documents, question_group
from rag.answering.routing import accuracy_row, route_and_rank, route_row
from rag.answering.summaries import lead_summaries
from rag.evaluation.metrics import evaluate_rankings, relevance_by_question
from rag.evaluation.statistics import aggregate_metrics
from rag.io import (
    documents_from_frame,
    finish_job,
    load_arrays,
    read_provenance,
    read_yaml,
    start_log,
    write_csv,
)
from rag.labels import locate_spans, parse_questions
from rag.provenance import record_digest
from rag.retrieval.retrievers import load_retriever
from rag.retrieval.search import chunk_id_order, ranked_ids

log = start_log(snakemake.log[0])
entry = json.loads(snakemake.params.retriever)
routing = json.loads(snakemake.params.routing)
names = {"chunker": routing["chunker"], "retriever": f"{routing['retriever']}_routed"}
inputs, ks = snakemake.input, snakemake.params.ks

ROUTE_COLUMNS = [
    "corpus",
    "question_id",
    "type",
    "group",
    "evidence_documents",
    "routed_document",
    "score",
    "runner_up",
    "runner_up_score",
    "routed_right",
    "routed_chunks",
]
routes_table, parts, accuracy, made_by = [], [], [], {}
for position, corpus in enumerate(snakemake.params.corpora):
    questions = parse_questions(read_yaml(inputs.questions[position]), inputs.questions[position])
    documents = documents_from_frame(pd.read_parquet(inputs.parsed[position]))
    summaries = lead_summaries(documents)
    # Like results/metrics.csv, each row names what made it: the chunk set and the routing settings.
    chunk_set = read_provenance(inputs.chunks[position])
    made_by[corpus] = record_digest({"chunks": chunk_set, "routing": routing, "retriever": entry})
    if not any(summary.text.strip() for summary in summaries):
        # Issue 16: routing by lead summaries needs leads; left out, not an error.
        warning = (
            f"corpus {corpus!r}: routing left out, it needs lead sections "
            "(text before a document's first section heading), and no document has one"
        )
        log.warning("%s", warning)
        print(f"WARNING: {warning}", file=sys.stderr)
        continue
    holding = evidence_documents(
        questions, locate_spans(questions, documents, str(inputs.questions[position]))
    )
    chunks = pd.read_parquet(inputs.chunks[position], columns=["chunk_id", "doc_id", "n_words"])
    chunk_ids = chunks["chunk_id"].tolist()
    retriever = load_retriever(entry, load_arrays(inputs.index[position]))
    routes, routed = route_and_rank(
        [q.text for q in questions],
        summaries,
        entry,
        retriever,
        chunks["doc_id"].tolist(),
        snakemake.params.depth,
        chunk_id_order(chunk_ids),
    )
    ranked = {q.question_id: ranked_ids(r, chunk_ids) for q, r in zip(questions, routed, strict=True)}
    for question, route, ranking in zip(questions, routes, routed, strict=True):
        evidence = holding[question.question_id]
        routes_table.append(
            {"corpus": corpus, "question_id": question.question_id, "type": question.type}
            | {"group": question_group(question, evidence), "evidence_documents": ";".join(evidence)}
            | route_row(route, evidence, ranking)
        )
    answerable = [q for q in questions if q.answerable]
    relevance = relevance_by_question(answerable, pd.read_parquet(inputs.qrels[position]))
    words = dict(zip(chunks["chunk_id"], chunks["n_words"], strict=True))
    answered = {q.question_id: ranked[q.question_id] for q in answerable}
    frame = evaluate_rankings(answered, relevance, ks, words)
    parts.append(frame.assign(corpus=corpus, **names))
    row = accuracy_row(routes, [holding[q.question_id] for q in questions], corpus=corpus, **names)
    accuracy.append(row)
    log.info("%s: routing accuracy %.3f over %d questions", corpus, row["value"], row["questions"])

keys = ["corpus", "chunker", "retriever"]
if parts:
    metrics = aggregate_metrics(pd.concat(parts, ignore_index=True), keys)
    metrics = pd.concat([metrics, pd.DataFrame(accuracy)], ignore_index=True)
else:
    metrics = pd.DataFrame(columns=[*keys, "metric", "k", "value", "questions"])
metrics["provenance"] = metrics["corpus"].map(made_by)
routes_frame = pd.DataFrame(routes_table, columns=ROUTE_COLUMNS).astype({"routed_right": "boolean"})
write_csv(routes_frame, snakemake.output.routing)
write_csv(metrics, snakemake.output.metrics)
finish_job()
