"""Ablations: the same retrieval measured with and without one of its safeguards.

These compare a retrieval primitive against the variant it replaces and
score both with the metrics, so they live here rather than beside the
primitives: filters and diversity stay free of evaluation code.

- Prefilter against post-filter (:func:`compare_filtering`,
  :func:`filter_ablation_row`): shortfall, exposure of forbidden chunks and
  recall lost by filtering after retrieval instead of inside it.
- Per-document caps (:func:`diversity_ablation`): recall, nDCG and the
  duplicate-source rate with and without a cap.

The IVF probe sweep, the third ablation of a primitive, is
:func:`rag.evaluation.ivf_tuning.probe_sweep`.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from rag.evaluation.metrics import Relevance, evaluate_rankings, recall_at
from rag.retrieval.diversity import cap_ids
from rag.retrieval.filters import postfilter


def restrict_relevance(relevance: Relevance, allowed_ids: set[str] | frozenset[str]) -> dict:
    """The labels with every disallowed chunk removed (a piece may be left with none)."""
    return {
        piece: {chunk_id: gain for chunk_id, gain in chunks.items() if chunk_id in allowed_ids}
        for piece, chunks in relevance.items()
    }


def evidence_allowed(relevance: Relevance, allowed_ids: set[str] | frozenset[str]) -> bool:
    """Whether every piece of a question's evidence lies in at least one allowed chunk.

    Only such questions can be fully answered under the filter, so only they
    enter the recall comparison.
    """
    return bool(relevance) and all(not allowed_ids.isdisjoint(chunks) for chunks in relevance.values())


def compare_filtering(
    global_rankings: Mapping[str, Sequence[str]],
    prefiltered: Mapping[str, Sequence[str]],
    allowed_ids: Iterable[str],
    relevance: Mapping[str, Relevance],
    k: int,
) -> dict[str, float | int]:
    """Prefilter against post-filter at depth k, over the same questions.

    ``global_rankings`` and ``prefiltered`` map every question to its chunk
    ids, best first (the global list unfiltered, the other searched within
    the allowed chunks); ``relevance`` holds the labels of the answerable
    ones. Shortfall (a list with fewer than k chunks) is counted over every
    question, since it needs no labels; recall at k over the questions whose
    evidence is allowed (:func:`evidence_allowed`), judged on allowed chunks
    only. ``exposed`` is the mean number of forbidden chunks in the global
    top k: text that a post-filter has already scored and handed on to
    whatever runs before the filter. ``prefilter_leaks`` must be 0.
    """
    if sorted(global_rankings) != sorted(prefiltered):
        raise ValueError("the global and the prefiltered rankings must cover the same questions")
    unranked = sorted(set(relevance) - set(global_rankings))
    if unranked:
        raise ValueError(f"question {unranked[0]!r} has labels but no ranking")
    allowed = frozenset(allowed_ids)
    questions = sorted(global_rankings)
    pre = {q: list(prefiltered[q][:k]) for q in questions}
    post = {q: postfilter(global_rankings[q], allowed, k) for q in questions}
    in_scope = [q for q in sorted(relevance) if evidence_allowed(relevance[q], allowed)]
    restricted = {q: restrict_relevance(relevance[q], allowed) for q in in_scope}

    def mean(values: list[float]) -> float:
        return float(np.mean(values)) if values else float("nan")

    pre_recall = mean([recall_at(pre[q], restricted[q], k) for q in in_scope])
    post_recall = mean([recall_at(post[q], restricted[q], k) for q in in_scope])
    return {
        "questions": len(questions),
        "prefilter_short": sum(len(pre[q]) < k for q in questions),
        "postfilter_short": sum(len(post[q]) < k for q in questions),
        "prefilter_shortfall_rate": mean([float(len(pre[q]) < k) for q in questions]),
        "postfilter_shortfall_rate": mean([float(len(post[q]) < k) for q in questions]),
        "prefilter_mean_results": mean([float(len(pre[q])) for q in questions]),
        "postfilter_mean_results": mean([float(len(post[q])) for q in questions]),
        "exposed": mean([float(sum(c not in allowed for c in global_rankings[q][:k])) for q in questions]),
        "prefilter_leaks": sum(c not in allowed for q in questions for c in pre[q]),
        "in_scope_questions": len(in_scope),
        "prefilter_recall": pre_recall,
        "postfilter_recall": post_recall,
        "recall_lost": pre_recall - post_recall,
    }


class FilterLeak(RuntimeError):
    """A prefiltered ranking holds a chunk its filter forbids: the contract is broken."""


def filter_ablation_row(
    names: Mapping[str, object],
    allowed: np.ndarray,
    chunk_ids: Sequence[str],
    global_rankings: Mapping[str, Sequence[str]],
    prefiltered: Mapping[str, Sequence[str]],
    relevance: Mapping[str, Relevance],
    k: int,
) -> dict:
    """One row of the filter ablation: ``names`` (corpus, chunker, retriever, filter, k), counts and
    :func:`compare_filtering`'s figures.

    Raises :class:`FilterLeak` when the prefiltered ranking holds a forbidden
    chunk, so a broken prefilter fails the run instead of being reported.
    """
    allowed_ids = {chunk_id for chunk_id, keep in zip(chunk_ids, allowed, strict=True) if keep}
    comparison = compare_filtering(global_rankings, prefiltered, allowed_ids, relevance, k)
    if comparison["prefilter_leaks"]:
        where = "/".join(str(names[key]) for key in ("corpus", "retriever", "filter"))
        raise FilterLeak(f"{where}: the prefiltered ranking holds disallowed chunks")
    return {**names, "chunks": len(chunk_ids), "allowed_chunks": int(allowed.sum()), **comparison}


def diversity_ablation(
    rankings: Mapping[str, Sequence[str]],
    relevance: Mapping[str, Relevance],
    document_of: Mapping[str, Hashable],
    caps: Sequence[int | None],
    ks: Sequence[int],
) -> pd.DataFrame:
    """Metrics of the same rankings without and with each per-document cap.

    One row per (cap, k): the means over questions of recall, nDCG and the
    duplicate-source rate at k, and the MRR of the capped list (the same on
    every row of a cap). ``caps`` may contain None for the uncapped list.
    """
    rows = []
    for cap in caps:
        capped = {question: cap_ids(list(ranked), document_of, cap) for question, ranked in rankings.items()}
        frame = evaluate_rankings(capped, relevance, ks, chunk_documents=document_of)
        means = frame.groupby(["metric", "k"])["value"].mean()
        for k in ks:
            rows.append(
                {
                    "max_per_document": cap,
                    "k": int(k),
                    "recall": means["recall", k],
                    "ndcg": means["ndcg", k],
                    "duplicate_source_rate": means["duplicate_source_rate", k],
                    "mrr": means["mrr", 0],
                    "questions": len(relevance),
                }
            )
    table = pd.DataFrame(rows)
    table["max_per_document"] = table["max_per_document"].astype("Int64")
    return table
