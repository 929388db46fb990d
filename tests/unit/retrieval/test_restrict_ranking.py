"""rag.retrieval.filters.restrict_ranking: the second guard behind a prefiltered first stage."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag.retrieval.filters import restrict_ranking
from rag.retrieval.search import Ranking


def test_disallowed_chunks_are_dropped_and_the_order_and_scores_kept():
    ranking = Ranking(positions=np.array([4, 0, 3, 1, 2]), scores=np.array([5.0, 4.0, 3.0, 2.0, 1.0]))
    allowed = np.array([True, False, True, False, True])
    restricted = restrict_ranking(ranking, allowed)
    assert restricted.positions.tolist() == [4, 0, 2]
    assert restricted.scores.tolist() == [5.0, 4.0, 1.0]


def test_everything_allowed_or_nothing_allowed():
    ranking = Ranking(positions=np.array([2, 0, 1]), scores=np.array([0.9, 0.5, 0.1]))
    kept = restrict_ranking(ranking, np.ones(3, dtype=bool))
    assert kept.positions.tolist() == [2, 0, 1] and kept.scores.tolist() == [0.9, 0.5, 0.1]
    dropped = restrict_ranking(ranking, np.zeros(3, dtype=bool))
    assert dropped.positions.tolist() == [] and dropped.scores.tolist() == []


def test_a_mask_that_is_not_boolean_is_refused():
    ranking = Ranking(positions=np.array([1, 0]), scores=np.array([2.0, 1.0]))
    with pytest.raises(ValueError, match="boolean mask"):
        restrict_ranking(ranking, np.array([1, 0]))


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 30).flatmap(
        lambda size: st.tuples(
            st.permutations(range(size)), st.lists(st.booleans(), min_size=size, max_size=size)
        )
    )
)
def test_restriction_is_the_ranking_read_through_the_mask(case):
    order, mask = case
    positions = np.array(order)
    scores = np.linspace(1.0, 0.0, len(order))
    restricted = restrict_ranking(Ranking(positions, scores), np.array(mask))
    expected = [
        (position, score) for position, score in zip(order, scores.tolist(), strict=True) if mask[position]
    ]
    assert list(zip(restricted.positions.tolist(), restricted.scores.tolist(), strict=True)) == expected
