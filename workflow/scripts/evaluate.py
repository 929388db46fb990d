"""Evaluate every ranking of the grid and write the tables users read.

Each ranking's per-question values are a part (rag.evaluation.table_parts): only
rankings whose files, labels, code or ks changed are scored again.
"""

from pathlib import Path

from rag.evaluation.grid import (
    EVALUATED_CHUNK_COLUMNS,
    chunk_set_labels,
    evaluate_runs_from_parts,
    evaluation_tables,
)
from rag.evaluation.metrics import QRELS_COLUMNS
from rag.evaluation.table_parts import PartStore, file_digest
from rag.formats.files import write_csv
from rag.formats.tables import read_columns, read_provenance, write_parquet
from rag.pipeline.jobs import finish_job, start_log
from rag.provenance import record_digest
from rag.question_tables import read_questions

log = start_log(snakemake.log[0])
inputs, params = snakemake.input, snakemake.params
questions = {
    corpus: [q for q in read_questions(path) if q.answerable]  # no metrics if unanswerable
    for corpus, path in zip(params.corpora, inputs.questions, strict=True)
}
question_digests = {
    corpus: file_digest(path) for corpus, path in zip(params.corpora, inputs.questions, strict=True)
}
labels, label_digests = {}, {}
for (corpus, chunker), qrels, chunks in zip(params.pairs, inputs.qrels, inputs.chunks, strict=True):
    labels[corpus, chunker] = chunk_set_labels(
        questions[corpus],
        read_columns(qrels, QRELS_COLUMNS),
        read_columns(chunks, EVALUATED_CHUNK_COLUMNS),
    )
    label_digests[corpus, chunker] = (question_digests[corpus], file_digest(qrels), file_digest(chunks))
rankings = dict(zip(map(tuple, params.grid), inputs.rankings, strict=True))
store = PartStore(Path(params.parts))
runs, line = evaluate_runs_from_parts(
    rankings, questions, labels, label_digests, params.ks, store, params.code, log.info
)
log.info("%s", line)
made_by = {run: record_digest(read_provenance(path)) for run, path in rankings.items()}
tables = evaluation_tables(runs, made_by, labels)
write_csv(tables.metrics, snakemake.output.metrics)
write_csv(tables.by_type, snakemake.output.by_type)
write_csv(tables.by_document, snakemake.output.by_document)
write_csv(tables.per_question, snakemake.output.per_question)
# Every metric of every question, for the confidence intervals and paired tests.
write_parquet(tables.question_values, snakemake.output.question_values)
finish_job()
