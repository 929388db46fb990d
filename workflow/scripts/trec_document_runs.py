"""Each ranking of a document-level corpus as a run of documents (as BEIR scores it), and the qrels."""

import pandas as pd

from rag.evaluation.trec import document_list, gzip_bytes, qrels_lines, ranked_lists, run_lines
from rag.formats.files import atomic_path, write_text
from rag.formats.tables import read_columns
from rag.pipeline.jobs import finish_job, start_log
from rag.question_tables import judgements_from_frame, read_questions
from rag.retrieval.ranking_files import RANKING_COLUMNS

log = start_log(snakemake.log[0])
for questions_path, qrels_path, qrels_out in zip(
    snakemake.input.questions,
    snakemake.input.qrels,
    snakemake.output.qrels,
    strict=True,
):
    judged = {question.question_id for question in read_questions(questions_path) if question.answerable}
    judgements = judgements_from_frame(pd.read_parquet(qrels_path))
    # Gains as judged; a judgement of 0 is kept, as trec_eval reads it.
    rows = [(j.question_id, j.doc_id, j.gain) for j in judgements if j.question_id in judged]
    write_text(qrels_out, qrels_lines(rows))

document_of = {}
for (corpus, chunker), path in zip(snakemake.params.pairs, snakemake.input.chunks, strict=True):
    table = pd.read_parquet(path, columns=["chunk_id", "doc_id"])
    document_of[corpus, chunker] = dict(zip(table.chunk_id, table.doc_id, strict=True))

for (corpus, chunker, retriever), path, run_path in zip(
    snakemake.params.grid, snakemake.input.rankings, snakemake.output.runs, strict=True
):
    chunks = ranked_lists(read_columns(path, RANKING_COLUMNS))
    rankings = {
        question_id: document_list(ranked, document_of[corpus, chunker])
        for question_id, ranked in chunks.items()
    }
    with atomic_path(run_path) as temporary:
        temporary.write_bytes(gzip_bytes(run_lines(rankings, f"{corpus}.{chunker}.{retriever}")))
    log.info("%s/%s/%s: %d questions", corpus, chunker, retriever, len(rankings))
finish_job()
