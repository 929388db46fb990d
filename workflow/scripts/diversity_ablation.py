"""The per-document cap: the same rankings evaluated without and with each cap."""

import json

import pandas as pd

from rag.evaluation.ablations import diversity_ablation
from rag.evaluation.metrics import relevance_by_question
from rag.formats.files import read_yaml, write_csv
from rag.labels import parse_questions
from rag.pipeline.jobs import finish_job, start_log
from rag.retrieval.ranking_files import read_ranked_chunk_ids

log = start_log(snakemake.log[0])
ablation = json.loads(snakemake.params.ablation)
chunker, retrievers = ablation["chunker"], sorted(ablation["retrievers"])
caps = [None, *sorted(ablation["max_per_document"])]
ks = sorted(ablation["ks"])
rankings = iter(snakemake.input.rankings)

parts = []
for corpus, questions_path, qrels_path, chunks_path in zip(
    snakemake.params.corpora,
    snakemake.input.questions,
    snakemake.input.qrels,
    snakemake.input.chunks,
    strict=True,
):
    answerable = [q for q in parse_questions(read_yaml(questions_path), questions_path) if q.answerable]
    relevance = relevance_by_question(answerable, pd.read_parquet(qrels_path))
    chunks = pd.read_parquet(chunks_path, columns=["chunk_id", "doc_id"])
    document_of = dict(zip(chunks["chunk_id"], chunks["doc_id"], strict=True))
    for retriever in retrievers:
        ranked = read_ranked_chunk_ids(next(rankings), list(relevance))
        table = diversity_ablation(ranked, relevance, document_of, caps, ks)
        table.insert(0, "retriever", retriever)
        table.insert(0, "chunker", chunker)
        table.insert(0, "corpus", corpus)
        parts.append(table)
        log.info("%s/%s/%s: caps %s at k = %s", corpus, chunker, retriever, caps, ks)

write_csv(pd.concat(parts, ignore_index=True), snakemake.output[0])
finish_job()
