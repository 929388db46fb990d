"""Recall by caller and by tenant beside the filter's correctness (unauthorized chunks, must be 0)."""

import json

import pandas as pd

from rag.evaluation.cohorts import CALLER_COLUMNS, caller_cohort_rows, question_tenants
from rag.evaluation.metrics import relevance_by_question
from rag.formats.files import read_yaml, write_csv
from rag.formats.tables import read_columns
from rag.labels import parse_questions
from rag.pipeline.jobs import finish_job, start_log
from rag.retrieval.filters import METADATA_COLUMNS, allowed_by_config
from rag.retrieval.ranking_files import read_ranked_chunk_ids

log = start_log(snakemake.log[0])
grid = json.loads(snakemake.params.grid)  # [corpus, chunker, retriever, caller, ranking path]
callers = json.loads(snakemake.params.callers)
inputs = json.loads(snakemake.params.inputs)  # corpus/chunker -> questions, qrels, chunks
k = snakemake.params.k
rows, unauthorized = [], 0
for corpus, chunker, retriever, caller, ranking in grid:
    paths = inputs[f"{corpus}/{chunker}"]
    asked = parse_questions(read_yaml(paths["questions"]), paths["questions"])
    relevance = relevance_by_question([q for q in asked if q.answerable], pd.read_parquet(paths["qrels"]))
    chunks = read_columns(paths["chunks"], ["chunk_id", *METADATA_COLUMNS])
    allowed = allowed_by_config(chunks, callers[caller], caller)
    readable = {chunk_id for chunk_id, kept in zip(chunks["chunk_id"], allowed, strict=True) if kept}
    documents = dict(zip(chunks["chunk_id"], chunks["doc_id"], strict=True))
    tenants = dict(zip(chunks["doc_id"], chunks["tenant"], strict=True))
    ranked = read_ranked_chunk_ids(ranking, [q.question_id for q in asked])  # every question, for the leaks
    names = {"corpus": corpus, "chunker": chunker, "retriever": retriever, "caller": caller}
    found = caller_cohort_rows(
        names, ranked, relevance, readable, question_tenants(relevance, documents, tenants), k
    )
    unauthorized += found[0]["unauthorized_chunks"]
    rows += found
if unauthorized:
    log.error("%d ranked chunks are outside their caller's view; every one is a leak", unauthorized)
log.info("%d rows; unauthorized chunks in all callers' rankings: %d", len(rows), unauthorized)
write_csv(pd.DataFrame(rows, columns=list(CALLER_COLUMNS)), snakemake.output[0])
finish_job()
