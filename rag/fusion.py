"""Combining rankings: reciprocal rank fusion, and the raw score sum it replaces.

BM25 scores are unbounded and grow with the query, cosines stay in [-1, 1];
adding them lets the larger scale decide. Reciprocal rank fusion uses ranks
only: a chunk earns 1 / (c + rank) from every list that contains it. The raw
score sum is kept as the ablation that shows the scale problem.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from rag.kinds import RETRIEVER_KINDS, parameter_problem
from rag.search import Ranking, top_k_among

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
    """Fuse one question's rankings as a fused kind's entry says (see :data:`FUSERS`)."""
    if entry["kind"] not in FUSERS:
        raise ValueError(f"kind {entry['kind']!r} is not a fusion; fused kinds: {sorted(FUSERS)}")
    return FUSERS[entry["kind"]](entry, rankings, depth, tie_order)


# One fuser per fused kind of the table of kinds (rag/kinds.py); a test checks they match.
FUSERS = {
    "rrf": lambda entry, rankings, depth, tie_order: reciprocal_rank_fusion(
        rankings, entry["constant"], depth, tie_order
    ),
    "score_sum": lambda entry, rankings, depth, tie_order: score_sum_fusion(rankings, depth, tie_order),
}
