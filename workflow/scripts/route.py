"""Route every question to one document by its lead summary, then rank chunks of that document only."""

import json
import sys

import numpy as np
import pandas as pd

from rag.answers import evidence_documents, question_group
from rag.io import documents_from_frame, finish_job, read_provenance, read_yaml, start_log, write_csv
from rag.labels import locate_spans, parse_questions
from rag.metrics import evaluate_rankings, relevance_by_question
from rag.provenance import record_digest
from rag.retrievers import load_retriever, search
from rag.routing import route_questions, routed_right, within_document
from rag.search import chunk_id_order, ranked_ids
from rag.statistics import aggregate_metrics
from rag.summaries import lead_summaries

log = start_log(snakemake.log[0])
entry = json.loads(snakemake.params.retriever)
routing = json.loads(snakemake.params.routing)
chunker, retriever_name = routing["chunker"], routing["retriever"]
routed_name = f"{retriever_name}_routed"
ks, depth = snakemake.params.ks, snakemake.params.depth
inputs = snakemake.input

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
routes_table, parts, accuracy = [], [], []
for position, corpus in enumerate(snakemake.params.corpora):
    questions = parse_questions(read_yaml(inputs.questions[position]), inputs.questions[position])
    documents = documents_from_frame(pd.read_parquet(inputs.parsed[position]))
    summaries = lead_summaries(documents)
    if not any(summary.text.strip() for summary in summaries):
        # Issue 16: routing by lead summaries needs leads; left out, not an error.
        warning = (
            f"corpus {corpus!r}: routing left out, it needs lead sections "
            "(text before a document's first section heading), and no document has one"
        )
        log.warning("%s", warning)
        print(f"WARNING: {warning}", file=sys.stderr)
        continue
    holding = evidence_documents(questions, locate_spans(questions, documents))
    routes = route_questions([q.text for q in questions], summaries, entry)

    chunks = pd.read_parquet(inputs.chunks[position], columns=["chunk_id", "doc_id", "n_words"])
    chunk_ids = chunks["chunk_id"].tolist()
    with np.load(inputs.index[position], allow_pickle=False) as arrays:
        retriever = load_retriever(entry, dict(arrays))
    # Rank the whole collection, then keep the routed document's chunks: the
    # collection's statistics stay, only the other documents go.
    full = search(retriever, [q.text for q in questions], len(chunk_ids), chunk_id_order(chunk_ids))
    chunk_documents = chunks["doc_id"].tolist()
    ranked = {}
    for question, route, ranking in zip(questions, routes, full, strict=True):
        routed = within_document(ranking, chunk_documents, route.document, depth)
        ranked[question.question_id] = ranked_ids(routed, chunk_ids)
        verdict = routed_right(route, holding[question.question_id])
        routes_table.append(
            {
                "corpus": corpus,
                "question_id": question.question_id,
                "type": question.type,
                "group": question_group(question, holding[question.question_id]),
                "evidence_documents": ";".join(holding[question.question_id]),
                "routed_document": route.document,
                "score": route.score,
                "runner_up": route.runner_up,
                "runner_up_score": route.runner_up_score,
                "routed_right": verdict,
                "routed_chunks": len(routed),
            }
        )

    answerable = [q for q in questions if q.answerable]
    relevance = relevance_by_question(answerable, pd.read_parquet(inputs.qrels[position]))
    words = dict(zip(chunks["chunk_id"], chunks["n_words"], strict=True))
    frame = evaluate_rankings(
        {q.question_id: ranked[q.question_id] for q in answerable}, relevance, ks, words
    )
    parts.append(frame.assign(corpus=corpus, chunker=chunker, retriever=routed_name))
    verdicts = [
        row["routed_right"]
        for row in routes_table
        if row["corpus"] == corpus and row["routed_right"] is not None
    ]
    accuracy.append(
        {
            "corpus": corpus,
            "chunker": chunker,
            "retriever": routed_name,
            "metric": "routing_accuracy",
            "k": pd.NA,
            "value": sum(verdicts) / len(verdicts) if verdicts else float("nan"),
            "questions": len(verdicts),
        }
    )
    log.info(
        "%s: %d of %d answerable questions routed to an evidence document",
        corpus,
        sum(verdicts),
        len(verdicts),
    )

keys = ["corpus", "chunker", "retriever"]
if parts:
    metrics = aggregate_metrics(pd.concat(parts, ignore_index=True), keys)
    metrics = pd.concat([metrics, pd.DataFrame(accuracy)], ignore_index=True)
else:
    metrics = pd.DataFrame(columns=[*keys, "metric", "k", "value", "questions"])
# Like results/metrics.csv, each row names what made it: here the chunk set and
# the routing settings.
made_by = {
    corpus: record_digest(
        {"chunks": read_provenance(inputs.chunks[position]), "routing": routing, "retriever": entry}
    )
    for position, corpus in enumerate(snakemake.params.corpora)
}
metrics["provenance"] = metrics["corpus"].map(made_by)
routes_frame = pd.DataFrame(routes_table, columns=ROUTE_COLUMNS).astype({"routed_right": "boolean"})
write_csv(routes_frame, snakemake.output.routing)
write_csv(metrics, snakemake.output.metrics)
finish_job()
