"""Choosing the number of probes on a labelled collection, not on exact search alone.

An IVF index is usually tuned by its recall against exact search: the share
of the exact top k that the probed lists still contain. That number says
nothing about relevance. On a real collection the neighbours an index misses
are often chunks that were not relevant anyway, so recall against exact search
can climb steeply with the number of probes while the labelled recall barely
moves. :func:`probe_sweep` measures both for every number of probes, on the
same index and the same questions, so the two curves can be read side by side.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from rag.evaluation.metrics import Relevance, recall_at
from rag.retrieval.ivf import build_ivf, rank_probed_lists, recall_against_exact
from rag.retrieval.search import Ranking, chunk_id_order, exact_search


def _padded_positions(rankings: Sequence[Ranking], width: int) -> np.ndarray:
    """Rankings as a queries x width matrix of positions, -1 where a ranking is shorter."""
    matrix = np.full((len(rankings), width), -1, dtype=np.int64)
    for row, ranking in enumerate(rankings):
        top = ranking.positions[:width]
        matrix[row, : len(top)] = top
    return matrix


def probe_sweep(
    chunk_vectors: np.ndarray,
    query_vectors: np.ndarray,
    question_ids: Sequence[str],
    chunk_ids: Sequence[str],
    relevance: Mapping[str, Relevance],
    list_count: int,
    k: int = 10,
    labelled_k: int = 5,
    seed: int = 0,
) -> pd.DataFrame:
    """For p = 1..``list_count`` probes: share scanned, recall against exact search, labelled recall.

    One row per p. ``recall_against_exact`` is the mean share of the exact top
    ``k`` found, over the questions whose query vector is not zero (a question
    with no known term has no neighbours to find); ``mean_share_scanned`` is
    averaged over the same questions. ``labelled_recall`` is recall at
    ``labelled_k`` over the questions in ``relevance`` (the answerable ones),
    scored like the evaluation grid: a question with an empty ranking counts
    as a miss. Both searches rank with the pipeline's conventions (float64
    scores, ties by chunk id), so with every list probed the approximate
    ranking is the exact one.
    """
    vectors = np.asarray(chunk_vectors, dtype=np.float64)
    queries = np.asarray(query_vectors, dtype=np.float64)
    if queries.ndim != 2 or len(queries) != len(question_ids):
        raise ValueError(f"{len(question_ids)} question ids but query vectors of shape {queries.shape}")
    if vectors.ndim != 2 or len(vectors) != len(chunk_ids):
        raise ValueError(f"{len(chunk_ids)} chunk ids but chunk vectors of shape {vectors.shape}")
    if k > len(vectors):
        raise ValueError(f"k = {k} exceeds the {len(vectors)} chunks: the exact top k would be short")
    unknown = sorted(set(relevance) - set(question_ids))
    if unknown:
        raise ValueError(f"question {unknown[0]!r} has relevance labels but no query vector")

    tie_order = chunk_id_order(chunk_ids)
    depth = max(k, labelled_k)
    searched = np.flatnonzero(queries.any(axis=1))
    if len(searched) == 0:
        raise ValueError("every query vector is zero: no question shares a term with the chunks")
    exact = _padded_positions(exact_search(vectors, queries[searched], k, tie_order), k)
    row_of = {question_id: row for row, question_id in enumerate(question_ids)}
    labelled = sorted(relevance)

    index = build_ivf(vectors, list_count, seed=seed)
    rows = []
    for probes in range(1, list_count + 1):
        rankings = rank_probed_lists(index, vectors, queries, probes, depth, tie_order)
        found = _padded_positions([rankings[row] for row in searched], k)
        scanned = index.list_sizes[index.probed_lists(queries[searched], probes)].sum(axis=1) / index.size
        labelled_recall = [
            recall_at([chunk_ids[p] for p in rankings[row_of[q]].positions], relevance[q], labelled_k)
            for q in labelled
        ]
        rows.append(
            {
                "lists": list_count,
                "probes": probes,
                "mean_share_scanned": float(scanned.mean()),
                "k": k,
                "recall_against_exact": recall_against_exact(found, exact, k),
                "questions_searched": len(searched),
                "labelled_k": labelled_k,
                "labelled_recall": float(np.mean(labelled_recall)) if labelled else float("nan"),
                "questions_labelled": len(labelled),
            }
        )
    return pd.DataFrame(rows)
