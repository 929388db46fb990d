"""Fuse the rankings of a fusion entry's components, question by question."""

import json

import pandas as pd

from rag.fusion import reciprocal_rank_fusion, score_sum_fusion
from rag.io import provenance, rankings_from_frame, rankings_to_frame, start_log, write_parquet
from rag.search import chunk_id_order

log = start_log(snakemake.log[0])
entry = json.loads(snakemake.params.retriever)
chunk_ids = pd.read_parquet(snakemake.input.chunks, columns=["chunk_id"])["chunk_id"].tolist()
tie_order = chunk_id_order(chunk_ids)
frames = [pd.read_parquet(path) for path in snakemake.input.components]
question_ids = sorted(set().union(*(set(frame["question_id"]) for frame in frames)))
components = [rankings_from_frame(frame, chunk_ids, question_ids) for frame in frames]
depth = snakemake.params.depth

fused = []
for question_id in question_ids:
    lists = [component[question_id] for component in components]
    if entry["kind"] == "rrf":
        fused.append(reciprocal_rank_fusion(lists, entry["constant"], depth, tie_order))
    else:
        fused.append(score_sum_fusion(lists, depth, tie_order))
log.info("fused %s for %d questions", entry["components"], len(question_ids))
write_parquet(
    rankings_to_frame(question_ids, fused, chunk_ids),
    snakemake.output.ranking,
    provenance(stage="fuse", retriever=entry),
)
