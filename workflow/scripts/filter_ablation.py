"""Prefilter against post-filter for every (corpus, retriever, filter) of the ablation.

Only numbers reach the log: the post-filter side reads global rankings that
do contain forbidden chunks, and none of them may be written anywhere.
"""

import json

import pandas as pd

from rag.filters import ChunkMetadata, allowed_chunks, compare_filtering, parse_filter
from rag.io import finish_job, read_ranked_chunk_ids, read_yaml, start_log, write_csv
from rag.labels import parse_questions
from rag.metrics import relevance_by_question

log = start_log(snakemake.log[0])
filters = json.loads(snakemake.params.filters)
chunker, k = snakemake.params.chunker, snakemake.params.k
corpora = snakemake.params.corpora
inputs = {
    corpus: (questions, qrels, chunks)
    for corpus, questions, qrels, chunks in zip(
        corpora, snakemake.input.questions, snakemake.input.qrels, snakemake.input.chunks, strict=True
    )
}

rows = []
for (corpus, retriever, filter_name), global_path, filtered_path in zip(
    snakemake.params.grid, snakemake.input.rankings, snakemake.input.filtered, strict=True
):
    questions_path, qrels_path, chunks_path = inputs[corpus]
    questions = parse_questions(read_yaml(questions_path), questions_path)
    answerable = [q for q in questions if q.answerable]
    relevance = relevance_by_question(answerable, pd.read_parquet(qrels_path))
    chunks = pd.read_parquet(chunks_path, columns=["chunk_id", "doc_id", "access", "tags", "updated"])
    metadata = ChunkMetadata.from_columns(
        chunks["doc_id"], chunks["access"], chunks["tags"], chunks["updated"]
    )
    allowed = allowed_chunks(parse_filter(filters[filter_name], f"filter {filter_name!r}"), metadata)
    allowed_ids = set(chunks["chunk_id"][allowed])

    every = [q.question_id for q in questions]
    comparison = compare_filtering(
        read_ranked_chunk_ids(global_path, every),
        read_ranked_chunk_ids(filtered_path, every),
        allowed_ids,
        relevance,
        k,
    )
    rows.append(
        {
            "corpus": corpus,
            "chunker": chunker,
            "retriever": retriever,
            "filter": filter_name,
            "k": k,
            "chunks": len(chunks),
            "allowed_chunks": int(allowed.sum()),
            **comparison,
        }
    )
    log.info(
        "%s/%s/%s: %d of %d chunks allowed; pre vs post-filter: short lists %d vs %d, recall %.3f vs %.3f",
        corpus,
        retriever,
        filter_name,
        int(allowed.sum()),
        len(chunks),
        comparison["prefilter_short"],
        comparison["postfilter_short"],
        comparison["prefilter_recall"],
        comparison["postfilter_recall"],
    )
    if comparison["prefilter_leaks"]:
        raise RuntimeError(
            f"{corpus}/{retriever}/{filter_name}: the prefiltered ranking holds disallowed chunks"
        )

write_csv(pd.DataFrame(rows), snakemake.output[0])
finish_job()
