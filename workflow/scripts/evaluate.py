"""Evaluate every ranking of the grid and write the tables users read."""

from rag import io
from rag.evaluation.grid import EVALUATED_CHUNK_COLUMNS, chunk_set_labels, evaluate_run, evaluation_tables
from rag.evaluation.metrics import QRELS_COLUMNS
from rag.provenance import record_digest

log = io.start_log(snakemake.log[0])
inputs, params = snakemake.input, snakemake.params
questions = {
    corpus: [q for q in io.read_questions(path) if q.answerable]  # no metrics if unanswerable
    for corpus, path in zip(params.corpora, inputs.questions, strict=True)
}
labels = {
    (corpus, chunker): chunk_set_labels(
        questions[corpus],
        io.read_columns(qrels, QRELS_COLUMNS),
        io.read_columns(chunks, EVALUATED_CHUNK_COLUMNS),
    )
    for (corpus, chunker), qrels, chunks in zip(params.pairs, inputs.qrels, inputs.chunks, strict=True)
}
runs, made_by = {}, {}
for (corpus, chunker, retriever), path in zip(params.grid, inputs.rankings, strict=True):
    ranked = io.read_ranked_chunk_ids(path, [q.question_id for q in questions[corpus]])
    runs[corpus, chunker, retriever] = evaluate_run(
        ranked, questions[corpus], labels[corpus, chunker], params.ks
    )
    made_by[corpus, chunker, retriever] = record_digest(io.read_provenance(path))
    log.info("%s/%s/%s: %d questions", corpus, chunker, retriever, len(ranked))

tables = evaluation_tables(runs, made_by, labels)
io.write_csv(tables.metrics, snakemake.output.metrics)
io.write_csv(tables.by_type, snakemake.output.by_type)
io.write_csv(tables.by_document, snakemake.output.by_document)
io.write_csv(tables.per_question, snakemake.output.per_question)
# Every metric of every question, for the confidence intervals and paired tests.
io.write_parquet(tables.question_values, snakemake.output.question_values)
io.finish_job()
