"""Each chunk-level ranking as a gzip TREC run, and each chunk set's labels as qrels."""

import pandas as pd

from rag.evaluation.metrics import relevance_by_question
from rag.evaluation.trec import (
    chunk_judgements,
    gzip_bytes,
    piece_judgements,
    qrels_lines,
    ranked_lists,
    run_lines,
)
from rag.formats.files import atomic_path, read_yaml, write_text
from rag.formats.tables import read_columns
from rag.jobs import finish_job, start_log
from rag.labels import parse_questions
from rag.retrieval.ranking_files import RANKING_COLUMNS

log = start_log(snakemake.log[0])
questions = {
    corpus: [q for q in parse_questions(read_yaml(path), path) if q.answerable]
    for corpus, path in zip(snakemake.params.corpora, snakemake.input.questions, strict=True)
}
for (corpus, _chunker), qrels_path, qrels_out, pieces_out in zip(
    snakemake.params.pairs,
    snakemake.input.qrels,
    snakemake.output.qrels,
    snakemake.output.piece_qrels,
    strict=True,
):
    relevance = relevance_by_question(questions[corpus], pd.read_parquet(qrels_path))
    write_text(qrels_out, qrels_lines(chunk_judgements(relevance)))
    write_text(pieces_out, qrels_lines(piece_judgements(relevance)))

for (corpus, chunker, retriever), path, run_path in zip(
    snakemake.params.grid, snakemake.input.rankings, snakemake.output.runs, strict=True
):
    rankings = ranked_lists(read_columns(path, RANKING_COLUMNS))
    with atomic_path(run_path) as temporary:
        temporary.write_bytes(gzip_bytes(run_lines(rankings, f"{corpus}.{chunker}.{retriever}")))
    log.info("%s/%s/%s: %d questions", corpus, chunker, retriever, len(rankings))
finish_job()
