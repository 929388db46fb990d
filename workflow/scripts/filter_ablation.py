"""Prefilter against post-filter for every (corpus, retriever, filter) of the ablation.

Only numbers reach the log: the post-filter side reads global rankings that
do contain forbidden chunks, and none of them may be written anywhere.
"""

import json

import pandas as pd

from rag.evaluation.ablations import filter_ablation_row
from rag.evaluation.metrics import relevance_by_question
from rag.formats.files import read_yaml, write_csv
from rag.formats.tables import read_columns
from rag.labels import parse_questions
from rag.pipeline.jobs import finish_job, start_log
from rag.retrieval.filters import METADATA_COLUMNS, allowed_by_config
from rag.retrieval.ranking_files import read_ranked_chunk_ids

log = start_log(snakemake.log[0])
filters = json.loads(snakemake.params.filters)
chunker, k = snakemake.params.chunker, snakemake.params.k
inputs = dict(
    zip(
        snakemake.params.corpora,
        zip(snakemake.input.questions, snakemake.input.qrels, snakemake.input.chunks, strict=True),
        strict=True,
    )
)

rows = []
for (corpus, retriever, filter_name), global_path, filtered_path in zip(
    snakemake.params.grid, snakemake.input.rankings, snakemake.input.filtered, strict=True
):
    questions_path, qrels_path, chunks_path = inputs[corpus]
    questions = parse_questions(read_yaml(questions_path), questions_path)
    relevance = relevance_by_question([q for q in questions if q.answerable], pd.read_parquet(qrels_path))
    chunks = read_columns(chunks_path, ["chunk_id", *METADATA_COLUMNS])
    allowed = allowed_by_config(chunks, filters[filter_name], filter_name)
    every = [q.question_id for q in questions]
    names = {"corpus": corpus, "chunker": chunker, "retriever": retriever, "filter": filter_name, "k": k}
    row = filter_ablation_row(
        names,
        allowed,
        chunks["chunk_id"],
        read_ranked_chunk_ids(global_path, every),
        read_ranked_chunk_ids(filtered_path, every),
        relevance,
        k,
    )
    rows.append(row)
    log.info(
        "%s/%s/%s: %d of %d chunks allowed; pre vs post-filter: short lists %d vs %d, recall %.3f vs %.3f",
        *(corpus, retriever, filter_name, row["allowed_chunks"], row["chunks"]),
        *(row["prefilter_short"], row["postfilter_short"], row["prefilter_recall"], row["postfilter_recall"]),
    )

write_csv(pd.DataFrame(rows), snakemake.output[0])
finish_job()
