"""Chunk recall and page-level recall of every ranking of the corpora whose source has pages."""

import pandas as pd

from rag.corpus.document_tables import documents_from_frame
from rag.evaluation.metrics import QRELS_COLUMNS, relevance_from_columns
from rag.evaluation.pages import chunk_pages, evidence_pages, page_recall_rows, page_recall_table
from rag.formats.files import write_csv
from rag.formats.tables import read_columns
from rag.pipeline.jobs import finish_job, start_log
from rag.question_tables import read_questions
from rag.retrieval.ranking_files import read_ranked_chunk_ids

log = start_log(snakemake.log[0])
inputs, params = snakemake.input, snakemake.params
questions, pieces = {}, {}
for corpus, path, parsed in zip(params.corpora, inputs.questions, inputs.parsed, strict=True):
    questions[corpus] = [question for question in read_questions(path) if question.answerable]
    pieces[corpus] = evidence_pages(questions[corpus], documents_from_frame(pd.read_parquet(parsed)))
relevance, pages = {}, {}
for (corpus, chunker), qrels, chunks in zip(params.pairs, inputs.qrels, inputs.chunks, strict=True):
    relevance[corpus, chunker] = relevance_from_columns(questions[corpus], read_columns(qrels, QRELS_COLUMNS))
    pages[corpus, chunker] = chunk_pages(read_columns(chunks, ["chunk_id", "doc_id", "page"]))
rows = []
for (corpus, chunker, retriever), path in zip(map(tuple, params.grid), inputs.rankings, strict=True):
    ids = [question.question_id for question in questions[corpus]]
    ranked = read_ranked_chunk_ids(path, ids)
    run = (corpus, chunker, retriever)
    rows += page_recall_rows(
        run, ranked, relevance[corpus, chunker], pieces[corpus], pages[corpus, chunker], params.ks
    )
log.info("%d rankings scored by chunk and by page", len(params.grid))
write_csv(page_recall_table(rows), snakemake.output[0])
finish_job()
