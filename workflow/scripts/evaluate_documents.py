"""Evaluate the grid's rankings of document-level corpora, as BEIR reports them, question by question."""

import pandas as pd

from rag.evaluation.document_relevance import beir_summary, collapse_to_documents, document_relevance
from rag.evaluation.metrics import WHOLE_LIST, evaluate_rankings
from rag.evaluation.significance import question_values
from rag.evaluation.statistics import aggregate_metrics
from rag.formats.files import write_csv
from rag.formats.tables import write_parquet
from rag.pipeline.jobs import finish_job, start_log
from rag.question_tables import judgements_from_frame, read_questions
from rag.retrieval.ranking_files import read_ranked_chunk_ids

log = start_log(snakemake.log[0])
ks = snakemake.params.ks
questions, relevance = {}, {}
for corpus, questions_path, qrels_path in zip(
    snakemake.params.corpora, snakemake.input.questions, snakemake.input.qrels, strict=True
):
    # Unjudged queries are not evaluated; one judged only with score 0 scores 0 (trec_eval's way).
    questions[corpus] = [question for question in read_questions(questions_path) if question.answerable]
    judgements = judgements_from_frame(pd.read_parquet(qrels_path))
    relevance[corpus] = document_relevance(judgements, questions[corpus])

document_of = {}
for (corpus, chunker), path in zip(snakemake.params.pairs, snakemake.input.chunks, strict=True):
    table = pd.read_parquet(path, columns=["chunk_id", "doc_id"])
    document_of[corpus, chunker] = dict(zip(table.chunk_id, table.doc_id, strict=True))

parts = []
for (corpus, chunker, retriever), path in zip(snakemake.params.grid, snakemake.input.rankings, strict=True):
    chunks = read_ranked_chunk_ids(path, [question.question_id for question in questions[corpus]])
    ranked = {
        question.question_id: collapse_to_documents(
            chunks[question.question_id], document_of[corpus, chunker]
        )
        for question in questions[corpus]
    }
    frame = evaluate_rankings(ranked, relevance[corpus], ks)
    lengths = pd.DataFrame(
        {
            "question_id": list(ranked),
            "metric": "documents_ranked",
            "k": WHOLE_LIST,
            "value": [float(len(documents)) for documents in ranked.values()],
        }
    )
    frame = pd.concat([frame, lengths], ignore_index=True)
    parts.append(frame.assign(corpus=corpus, chunker=chunker, retriever=retriever))
    log.info("%s/%s/%s: %d questions", corpus, chunker, retriever, len(ranked))

keys = ["corpus", "chunker", "retriever"]
evaluation = pd.concat(parts, ignore_index=True)
write_csv(aggregate_metrics(evaluation, keys), snakemake.output.metrics)
write_csv(beir_summary(evaluation, keys), snakemake.output.beir)
# Every metric of every question, for intervals, paired tests and the summary as at chunk level.
write_parquet(question_values(evaluation), snakemake.output.question_values)
finish_job()
