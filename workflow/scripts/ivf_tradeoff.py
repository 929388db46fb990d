"""Probe 1..L lists of an IVF index over a dense retriever's chunk vectors: exact search vs labels."""

import json

import numpy as np
import pandas as pd

from rag.evaluation.ivf_tuning import probe_sweep
from rag.evaluation.metrics import relevance_by_question
from rag.formats.files import read_yaml, write_sweep
from rag.labels import parse_questions
from rag.pipeline.jobs import finish_job, start_log
from rag.retrieval.retrievers import chunk_embeddings, load_retriever, query_embeddings

log = start_log(snakemake.log[0])
settings = json.loads(snakemake.params.settings)
entry = json.loads(snakemake.params.retriever)
chunk_ids = pd.read_parquet(snakemake.input.chunks, columns=["chunk_id"])["chunk_id"].tolist()
questions = parse_questions(read_yaml(snakemake.input.questions), snakemake.input.questions)
answerable = [q for q in questions if q.answerable]  # no labelled recall without evidence
relevance = relevance_by_question(answerable, pd.read_parquet(snakemake.input.qrels))

with np.load(snakemake.input.index) as arrays:
    base = load_retriever(entry, dict(arrays))
table = probe_sweep(
    chunk_embeddings(base),
    query_embeddings(base, [q.text for q in questions]),
    [q.question_id for q in questions],
    chunk_ids,
    relevance,
    settings["lists"],
    k=settings["k"],
    labelled_k=settings["labelled_k"],
    seed=settings["seed"],
)
write_sweep(table, settings, ["corpus", "chunker", "retriever"], snakemake.output[0], log)
finish_job()
