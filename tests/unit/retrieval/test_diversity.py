"""Per-source diversity: the per-document cap and the duplicate-source rate."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag.evaluation.ablations import diversity_ablation
from rag.evaluation.metrics import duplicate_source_rate_at, evaluate_rankings, question_metrics
from rag.retrieval.diversity import cap_ids, cap_ranking, select_per_document
from rag.retrieval.search import Ranking

documents_lists = st.lists(st.sampled_from("abcde"), max_size=30)
caps = st.one_of(st.none(), st.integers(min_value=1, max_value=4))


@settings(max_examples=200, deadline=None)
@given(documents_lists, caps, st.one_of(st.none(), st.integers(min_value=0, max_value=30)))
def test_the_cap_keeps_order_bounds_each_document_and_skips_only_what_it_must(documents, cap, limit):
    kept = select_per_document(documents, cap, limit)
    assert kept == sorted(kept)
    if limit is not None:
        assert len(kept) <= limit
    counts: dict[str, int] = {}
    for index in kept:
        counts[documents[index]] = counts.get(documents[index], 0) + 1
    assert cap is None or all(count <= cap for count in counts.values())
    # Every skipped item before the last kept one was skipped because its document was full.
    last = kept[-1] if kept else -1
    seen: dict[str, int] = {}
    for index, document in enumerate(documents[: last + 1]):
        if index in kept:
            seen[document] = seen.get(document, 0) + 1
        else:
            assert cap is not None and seen.get(document, 0) >= cap
    if limit is None or len(kept) < limit:  # nothing after the last kept item could have been kept
        for document in documents[last + 1 :]:
            assert cap is not None and seen.get(document, 0) >= cap


def test_cap_ranking_uses_the_document_of_each_position():
    ranking = Ranking(np.array([4, 0, 2, 3, 1]), np.array([5.0, 4, 3, 2, 1]))
    documents = ["x", "y", "x", "x", "y"]  # by position
    capped = cap_ranking(ranking, documents, 1, depth=None)
    assert capped.positions.tolist() == [4, 0]  # position 4 is in y, 0 in x; 2, 3 (x) and 1 (y) repeat
    assert capped.scores.tolist() == [5.0, 4.0]


@pytest.mark.parametrize("cap", [0, -2, 1.5, True])
def test_a_cap_must_be_a_positive_integer(cap):
    with pytest.raises(ValueError, match="max_per_document"):
        select_per_document(["a"], cap)


def test_duplicate_source_rate_counts_repeats_of_an_already_seen_document():
    document_of = {"a1": "a", "a2": "a", "b1": "b", "a3": "a", "c1": "c"}
    ranked = ["a1", "a2", "b1", "a3", "c1"]
    assert duplicate_source_rate_at(ranked, document_of, 1) == 0.0
    assert duplicate_source_rate_at(ranked, document_of, 2) == 0.5
    assert duplicate_source_rate_at(ranked, document_of, 3) == pytest.approx(1 / 3)
    assert duplicate_source_rate_at(ranked, document_of, 5) == pytest.approx(2 / 5)
    assert duplicate_source_rate_at(ranked[:2], document_of, 10) == 0.5  # share of what is there
    assert math.isnan(duplicate_source_rate_at([], document_of, 3))
    with pytest.raises(ValueError, match="no document for chunk 'zz'"):
        duplicate_source_rate_at(["zz"], document_of, 1)


@settings(max_examples=100, deadline=None)
@given(documents_lists, st.integers(min_value=1, max_value=4), st.integers(min_value=1, max_value=12))
def test_with_a_cap_of_c_at_most_1_minus_1_over_c_of_the_list_repeats_a_source(documents, cap, k):
    ranked = [f"{document}{index}" for index, document in enumerate(documents)]
    document_of = dict(zip(ranked, documents, strict=True))
    capped = cap_ids(ranked, document_of, cap)
    rate = duplicate_source_rate_at(capped, document_of, k)
    if capped:
        assert rate <= 1 - 1 / cap + 1e-12
    if cap == 1 and capped:
        assert rate == 0.0


def test_question_metrics_report_the_rate_at_every_k():
    rows = question_metrics(
        ["a1", "a2", "b1"], {"0": {"b1": 1.0}}, [1, 2, 3], chunk_documents={"a1": "a", "a2": "a", "b1": "b"}
    )
    rates = {k: value for metric, k, value in rows if metric == "duplicate_source_rate"}
    assert rates == {1: 0.0, 2: 0.5, 3: pytest.approx(1 / 3)}


def test_the_uncapped_row_of_the_ablation_is_the_plain_evaluation():
    document_of = {f"{d}{i}": d for d in "abc" for i in range(4)}
    rankings = {"q1": ["a0", "a1", "a2", "b0", "c0", "a3"], "q2": ["b1", "b2", "c1", "a0", "b3"]}
    relevance = {"q1": {"0": {"b0": 1.0}, "1": {"c0": 1.0}}, "q2": {"0": {"a0": 1.0}}}
    table = diversity_ablation(rankings, relevance, document_of, [None, 1], [3])
    plain = evaluate_rankings(rankings, relevance, [3]).groupby(["metric", "k"])["value"].mean()
    uncapped = table[table["max_per_document"].isna()].iloc[0]
    assert uncapped["recall"] == pytest.approx(plain["recall", 3])
    assert uncapped["mrr"] == pytest.approx(plain["mrr", 0])
    capped = table[table["max_per_document"] == 1].iloc[0]
    # capped q1: a0 b0 c0 -> both pieces; q2: b1 c1 a0 -> found. Recall 1, no repeats.
    assert capped["recall"] == 1.0 and capped["duplicate_source_rate"] == 0.0
    assert uncapped["recall"] == pytest.approx((0 + 0) / 2)  # q1 top 3 all 'a'; q2 top 3 lacks a0
