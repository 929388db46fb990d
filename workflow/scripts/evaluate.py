"""Evaluate every ranking of the grid and write the tables users read."""

from rag.evaluation.grid import EVALUATED_CHUNK_COLUMNS, chunk_set_labels, evaluate_run, evaluation_tables
from rag.evaluation.metrics import QRELS_COLUMNS
from rag.formats.files import write_csv
from rag.formats.tables import read_columns, read_provenance, write_parquet
from rag.jobs import finish_job, start_log
from rag.provenance import record_digest
from rag.question_tables import read_questions
from rag.retrieval.ranking_files import read_ranked_chunk_ids

log = start_log(snakemake.log[0])
inputs, params = snakemake.input, snakemake.params
questions = {
    corpus: [q for q in read_questions(path) if q.answerable]  # no metrics if unanswerable
    for corpus, path in zip(params.corpora, inputs.questions, strict=True)
}
labels = {
    (corpus, chunker): chunk_set_labels(
        questions[corpus],
        read_columns(qrels, QRELS_COLUMNS),
        read_columns(chunks, EVALUATED_CHUNK_COLUMNS),
    )
    for (corpus, chunker), qrels, chunks in zip(params.pairs, inputs.qrels, inputs.chunks, strict=True)
}
runs, made_by = {}, {}
for (corpus, chunker, retriever), path in zip(params.grid, inputs.rankings, strict=True):
    ranked = read_ranked_chunk_ids(path, [q.question_id for q in questions[corpus]])
    runs[corpus, chunker, retriever] = evaluate_run(
        ranked, questions[corpus], labels[corpus, chunker], params.ks
    )
    made_by[corpus, chunker, retriever] = record_digest(read_provenance(path))
    log.info("%s/%s/%s: %d questions", corpus, chunker, retriever, len(ranked))

tables = evaluation_tables(runs, made_by, labels)
write_csv(tables.metrics, snakemake.output.metrics)
write_csv(tables.by_type, snakemake.output.by_type)
write_csv(tables.by_document, snakemake.output.by_document)
write_csv(tables.per_question, snakemake.output.per_question)
# Every metric of every question, for the confidence intervals and paired tests.
write_parquet(tables.question_values, snakemake.output.question_values)
finish_job()
