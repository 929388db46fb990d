"""Combining rankings: reciprocal rank fusion, and the raw score sum it replaces.

BM25 scores are unbounded and grow with the query, cosines stay in [-1, 1];
adding them lets the larger scale decide. Reciprocal rank fusion uses ranks
only: a chunk earns 1 / (c + rank) from every list that contains it. The raw
score sum is kept as the ablation that shows the scale problem.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from rag.kinds import RETRIEVER_KINDS, behaviour, parameter_problem
from rag.retrieval.search import Ranking, top_k_among

DEFAULT_CONSTANT = float(RETRIEVER_KINDS["rrf"].parameters["constant"].default)


def _fuse(
    positions: list[np.ndarray],
    contributions: list[np.ndarray],
    depth: int | None,
    tie_order: np.ndarray | None,
) -> Ranking:
    if not positions:
        return Ranking.empty()
    every_position = np.concatenate(positions)
    every_contribution = np.concatenate(contributions)
    if len(every_position) == 0:
        return Ranking.empty()
    # Sum each chunk's contributions in a canonical order (sorted by value), so
    # two chunks with the same multiset of contributions get bit-identical
    # totals and their tie is settled by tie_order, not by rounding.
    order = np.lexsort((every_contribution, every_position))
    sorted_positions = every_position[order]
    starts = np.flatnonzero(np.r_[True, sorted_positions[1:] != sorted_positions[:-1]])
    totals = np.add.reduceat(every_contribution[order], starts)
    fused_positions = sorted_positions[starts]
    if tie_order is not None and len(fused_positions) and fused_positions.max() >= len(tie_order):
        raise ValueError(f"chunk position {fused_positions.max()} has no entry in tie_order")
    return top_k_among(fused_positions, totals, len(totals) if depth is None else depth, tie_order)


def _check_unique(ranking: Ranking, index: int) -> None:
    if len(np.unique(ranking.positions)) != len(ranking.positions):
        raise ValueError(f"ranking {index} lists a chunk more than once")


def reciprocal_rank_fusion(
    rankings: Sequence[Ranking],
    constant: float = DEFAULT_CONSTANT,
    depth: int | None = None,
    tie_order: np.ndarray | None = None,
) -> Ranking:
    """Fuse rankings by the sum of 1 / (c + rank) over the lists containing each chunk.

    Ranks start at 1; lists may have different lengths, and a chunk missing
    from a list simply earns nothing from it. ``depth`` None keeps every fused
    chunk; ties are broken by ``tie_order`` (chunk position when None).
    """
    problem = parameter_problem("rrf", "constant", constant)
    if problem:
        raise ValueError(f"the fusion constant {problem}")
    positions, contributions = [], []
    for index, ranking in enumerate(rankings):
        _check_unique(ranking, index)
        ranks = np.arange(1, len(ranking) + 1, dtype=np.float64)
        positions.append(ranking.positions)
        contributions.append(1.0 / (constant + ranks))
    return _fuse(positions, contributions, depth, tie_order)


def score_sum_fusion(
    rankings: Sequence[Ranking], depth: int | None = None, tie_order: np.ndarray | None = None
) -> Ranking:
    """The ablation: add the raw scores of each chunk over the lists containing it (missing = 0)."""
    positions, contributions = [], []
    for index, ranking in enumerate(rankings):
        _check_unique(ranking, index)
        positions.append(ranking.positions)
        contributions.append(ranking.scores)
    return _fuse(positions, contributions, depth, tie_order)


def fuse(
    entry: Mapping, rankings: Sequence[Ranking], depth: int | None, tie_order: np.ndarray | None
) -> Ranking:
    """Fuse one question's rankings with the ``fuse`` behaviour the table of kinds names for the kind."""
    return behaviour(entry["kind"], "fuse")(entry, rankings, depth, tie_order)


# The fused kinds' behaviour, as the table of kinds (rag/kinds.py) names it.


def fuse_rrf(
    entry: Mapping, rankings: Sequence[Ranking], depth: int | None, tie_order: np.ndarray | None
) -> Ranking:
    """An rrf entry's fusion of one question's rankings."""
    return reciprocal_rank_fusion(rankings, entry["constant"], depth, tie_order)


def fuse_score_sum(
    entry: Mapping, rankings: Sequence[Ranking], depth: int | None, tie_order: np.ndarray | None
) -> Ranking:
    """A score_sum entry's fusion of one question's rankings."""
    return score_sum_fusion(rankings, depth, tie_order)


# ---------------------------------------------------------------------------
# Fusion with weights: one weight per component list. The learned kind
# (rag.evaluation.learned_fusion) picks the weights on labelled questions.
# ---------------------------------------------------------------------------

WEIGHTED_FUSIONS = ("rrf", "minmax", "zscore")


def _check_weights(rankings: Sequence[Ranking], weights: Sequence[float]) -> None:
    if len(weights) != len(rankings):
        raise ValueError(f"{len(weights)} weights for {len(rankings)} rankings")
    for weight in weights:
        if not np.isfinite(weight) or weight < 0:
            raise ValueError(f"fusion weights must be finite numbers >= 0, got {weight!r}")


def weighted_reciprocal_rank_fusion(
    rankings: Sequence[Ranking],
    weights: Sequence[float],
    constant: float = DEFAULT_CONSTANT,
    depth: int | None = None,
    tie_order: np.ndarray | None = None,
) -> Ranking:
    """Reciprocal rank fusion where list i contributes weight_i / (c + rank)."""
    _check_weights(rankings, weights)
    if not np.isfinite(constant) or constant < 0:
        raise ValueError(f"the fusion constant must be a finite number >= 0, got {constant!r}")
    positions, contributions = [], []
    for index, (ranking, weight) in enumerate(zip(rankings, weights, strict=True)):
        _check_unique(ranking, index)
        ranks = np.arange(1, len(ranking) + 1, dtype=np.float64)
        positions.append(ranking.positions)
        contributions.append(weight / (constant + ranks))
    return _fuse(positions, contributions, depth, tie_order)


def normalized_scores(scores: np.ndarray, normalization: str) -> np.ndarray:
    """A list's scores above its lowest one, in units of its range (minmax) or standard deviation (zscore).

    Measuring from the lowest listed score gives a chunk missing from the list
    (ranked below its depth) the same share as the list's last chunk: nothing.
    A list whose scores are all equal (or a single chunk) says nothing about
    order and contributes zeros.
    """
    scores = np.asarray(scores, dtype=np.float64)
    if len(scores) == 0:
        return scores
    if not np.isfinite(scores).all():
        raise ValueError("scores to normalize must be finite")
    above = scores - scores.min()
    if normalization == "minmax":
        spread = float(scores.max() - scores.min())
    elif normalization == "zscore":
        # fsum: correctly rounded, so the spread does not depend on a SIMD summation order.
        mean = math.fsum(scores) / len(scores)
        spread = math.sqrt(math.fsum((scores - mean) ** 2) / len(scores))
    else:
        raise ValueError(f"unknown normalization {normalization!r}; expected minmax or zscore")
    if spread == 0.0:
        return np.zeros_like(scores)
    return above / spread


def normalized_score_fusion(
    rankings: Sequence[Ranking],
    weights: Sequence[float],
    normalization: str,
    depth: int | None = None,
    tie_order: np.ndarray | None = None,
) -> Ranking:
    """The weighted sum of each list's normalized scores (see :func:`normalized_scores`).

    Normalizing first is what makes a weight mean the same thing for BM25's
    unbounded scores and a cosine's [-1, 1]: the raw score sum lets the
    larger scale decide.
    """
    _check_weights(rankings, weights)
    positions, contributions = [], []
    for index, (ranking, weight) in enumerate(zip(rankings, weights, strict=True)):
        _check_unique(ranking, index)
        positions.append(ranking.positions)
        contributions.append(weight * normalized_scores(ranking.scores, normalization))
    return _fuse(positions, contributions, depth, tie_order)


def weighted_fusion(
    rankings: Sequence[Ranking],
    weights: Sequence[float],
    fusion: str,
    constant: float = DEFAULT_CONSTANT,
    depth: int | None = None,
    tie_order: np.ndarray | None = None,
) -> Ranking:
    """One of WEIGHTED_FUSIONS by name: weighted RRF, or min-max or z-score score fusion."""
    if fusion == "rrf":
        return weighted_reciprocal_rank_fusion(rankings, weights, constant, depth, tie_order)
    if fusion in ("minmax", "zscore"):
        return normalized_score_fusion(rankings, weights, fusion, depth, tie_order)
    raise ValueError(f"unknown fusion {fusion!r}; expected one of {WEIGHTED_FUSIONS}")
