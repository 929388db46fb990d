"""Retrieval metrics: definitions, edge cases and the ideal-DCG pitfall."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag.evaluation.metrics import (
    WHOLE_LIST,
    chunk_gains,
    dcg_at,
    duplicate_source_rate_at,
    evaluate_rankings,
    first_relevant_rank,
    ideal_dcg_at,
    ndcg_at,
    prompt_words_at,
    question_metrics,
    recall_at,
    reciprocal_rank,
    relevance_by_question,
)
from rag.labels import Evidence, Question, Span

# Two pieces of evidence: the first can be found in either of two chunks
# (alternative spans, or one span inside two overlapping chunks).
RELEVANCE = {"p1": {"c1": 1.0, "c2": 1.0}, "p2": {"c7": 1.0}}


def test_recall_counts_pieces_not_chunks():
    assert recall_at(["c1", "c2", "x"], RELEVANCE, 3) == 0.5  # two chunks of one piece
    assert recall_at(["x", "c2", "c7"], RELEVANCE, 2) == 0.5  # any chunk of a piece finds it
    assert recall_at(["x", "c2", "c7"], RELEVANCE, 3) == 1.0


def test_a_piece_no_chunk_contains_is_always_missed():
    relevance = {"found": {"c1": 1.0}, "cut in two": {}}
    assert recall_at(["c1", "c2", "c3"], relevance, 3) == 0.5


def test_no_relevant_chunk_ranked():
    ranked = ["x", "y", "z"]
    assert recall_at(ranked, RELEVANCE, 3) == 0.0
    assert reciprocal_rank(ranked, RELEVANCE) == 0.0
    assert first_relevant_rank(ranked, RELEVANCE) is None
    assert dcg_at(ranked, RELEVANCE, 3) == 0.0
    assert ndcg_at(ranked, RELEVANCE, 3) == 0.0


def test_no_relevant_chunk_in_the_collection_gives_zero_not_nan():
    relevance = {"cut": {}}
    assert ideal_dcg_at(relevance, 5) == 0.0
    assert ndcg_at(["a", "b"], relevance, 5) == 0.0


def test_unanswerable_questions_must_be_left_out_by_the_caller():
    with pytest.raises(ValueError, match="unanswerable"):
        recall_at(["a"], {}, 1)
    with pytest.raises(ValueError, match="unanswerable"):
        ndcg_at(["a"], {}, 1)


def test_k_larger_than_the_ranking():
    ranked = ["x", "c7"]
    assert recall_at(ranked, RELEVANCE, 10) == 0.5
    assert dcg_at(ranked, RELEVANCE, 10) == pytest.approx(1 / math.log2(3))
    # The ideal still holds both relevant gains; a short list cannot reach it.
    assert ndcg_at(ranked, RELEVANCE, 10) == pytest.approx((1 / math.log2(3)) / (1 + 1 / math.log2(3) + 0.5))
    assert prompt_words_at(ranked, {"x": 40, "c7": 60}, 10) == 100


def test_reciprocal_and_first_relevant_rank():
    assert first_relevant_rank(["x", "y", "c2", "c1"], RELEVANCE) == 3
    assert reciprocal_rank(["x", "y", "c2", "c1"], RELEVANCE) == pytest.approx(1 / 3)


def test_gain_is_the_largest_over_the_pieces_a_chunk_contains():
    relevance = {"answer": {"c1": 2.0, "c2": 1.0}, "context": {"c2": 3.0}}
    assert chunk_gains(relevance) == {"c1": 2.0, "c2": 3.0}
    assert ideal_dcg_at(relevance, 2) == pytest.approx(3.0 + 2.0 / math.log2(3))


def test_ideal_dcg_comes_from_the_collection_not_the_retrieved_list():
    relevance = {"a": {"r1": 1.0}, "b": {"r2": 1.0}}
    retrieved = ["x", "y", "r1"]
    honest = ndcg_at(retrieved, relevance, 3)
    assert honest == pytest.approx(0.5 / (1 + 1 / math.log2(3)))
    assert round(honest, 4) == 0.3066
    # What the mistake would give: the retrieved list's own ideal, 0.5.
    assert dcg_at(retrieved, relevance, 3) / ideal_dcg_at({"a": {"r1": 1.0}}, 3) == pytest.approx(0.5)


def test_ndcg_is_one_exactly_for_the_ideal_order_and_below_otherwise():
    relevance = {"a": {"d1": 2.0}, "b": {"d2": 1.0}}
    assert ndcg_at(["d1", "d2", "d3"], relevance, 3) == 1.0
    assert ndcg_at(["d2", "d1", "d3"], relevance, 3) < 1.0


def test_invalid_input_is_rejected_with_the_offending_item():
    with pytest.raises(ValueError, match="k must"):
        recall_at(["a"], RELEVANCE, 0)
    with pytest.raises(ValueError, match="'c9'"):
        ndcg_at(["a"], {"p": {"c9": -1.0}}, 1)
    with pytest.raises(ValueError, match="'x'"):
        prompt_words_at(["x"], {}, 1)


def test_evaluate_rankings_returns_a_tidy_frame():
    rankings = {"q1": ["c1", "x", "c7"], "q2": ["y", "z"]}
    relevance = {"q1": RELEVANCE, "q2": {"p": {"z": 1.0}}}
    words = {"c1": 10, "x": 20, "c7": 30, "y": 5, "z": 7}
    frame = evaluate_rankings(rankings, relevance, ks=[1, 3], chunk_words=words)
    assert list(frame.columns) == ["question_id", "metric", "k", "value"]
    assert frame["k"].dtype == np.int64 and frame["value"].dtype == np.float64
    value = frame.set_index(["question_id", "metric", "k"])["value"]
    assert value[("q1", "recall", 1)] == 0.5
    assert value[("q1", "recall", 3)] == 1.0
    assert value[("q1", "prompt_words", 3)] == 60
    assert value[("q2", "mrr", WHOLE_LIST)] == 0.5
    assert value[("q2", "first_relevant_rank", WHOLE_LIST)] == 2
    means = frame.groupby(["metric", "k"])["value"].mean()
    assert means[("recall", 1)] == pytest.approx(0.25)
    assert means[("mrr", WHOLE_LIST)] == pytest.approx(0.75)


def test_first_relevant_rank_is_nan_when_nothing_relevant_is_ranked():
    frame = evaluate_rankings({"q": ["a"]}, {"q": {"p": {"b": 1.0}}}, ks=[1])
    row = frame[frame["metric"] == "first_relevant_rank"]
    assert math.isnan(row["value"].iloc[0])
    assert pd.isna(frame.groupby("metric")["value"].mean()["first_relevant_rank"])


def test_evaluate_rankings_requires_matching_questions():
    with pytest.raises(ValueError, match="'q2'.*no relevance"):
        evaluate_rankings({"q1": ["a"], "q2": ["a"]}, {"q1": {"p": {"a": 1.0}}}, ks=[1])
    with pytest.raises(ValueError, match="'q1'.*no ranking"):
        evaluate_rankings({}, {"q1": {"p": {"a": 1.0}}}, ks=[1])
    with pytest.raises(ValueError, match="'q1'.*unanswerable"):
        evaluate_rankings({"q1": ["a"]}, {"q1": {}}, ks=[1])
    with pytest.raises(ValueError, match="'q1'.*twice"):
        evaluate_rankings({"q1": ["a", "a"]}, {"q1": {"p": {"a": 1.0}}}, ks=[1])


def test_relevance_by_question_keeps_pieces_without_chunks():
    questions = [
        Question("q1", "Which?", evidence=(Evidence((Span("a"),)), Evidence((Span("b"),), gain=2.0))),
        Question("q2", "Who?", evidence=(Evidence((Span("c"),)),)),
    ]
    qrels = pd.DataFrame(
        {
            "question_id": ["q1", "q1", "q2", "q9"],
            "piece": [1, 1, 0, 0],
            "chunk_id": ["c3", "c4", "c1", "c1"],
            "gain": [2.0, 2.0, 1.0, 1.0],
        }
    )
    relevance = relevance_by_question(questions, qrels)
    assert relevance == {"q1": {"0": {}, "1": {"c3": 2.0, "c4": 2.0}}, "q2": {"0": {"c1": 1.0}}}
    # The piece that no chunk contains is a miss, not a missing piece.
    assert recall_at(["c3", "c4"], relevance["q1"], 2) == 0.5
    bad = qrels.assign(piece=[5, 1, 0, 0])
    with pytest.raises(ValueError, match="'q1'.*5"):
        relevance_by_question(questions, bad)
    with pytest.raises(ValueError, match="'gain'"):
        relevance_by_question(questions, qrels.drop(columns="gain"))


@settings(max_examples=200, deadline=None)
@given(
    ranked=st.lists(st.sampled_from([f"c{i}" for i in range(12)]), unique=True, max_size=12),
    relevance=st.dictionaries(
        st.sampled_from(["p1", "p2", "p3"]),
        st.dictionaries(
            st.sampled_from([f"c{i}" for i in range(12)]), st.sampled_from([0.0, 0.5, 1.0, 2.0]), max_size=3
        ),
        min_size=1,
    ),
    ks=st.lists(st.integers(1, 14), min_size=1, max_size=5),
)
def test_question_metrics_equal_the_single_metric_functions_exactly(ranked, relevance, ks):
    chunks = [f"c{i}" for i in range(12)]
    words = {chunk_id: 7 * index % 5 + 1 for index, chunk_id in enumerate(chunks)}
    documents = {chunk_id: f"d{index % 3}" for index, chunk_id in enumerate(chunks)}
    rows = {
        (metric, k): value for metric, k, value in question_metrics(ranked, relevance, ks, words, documents)
    }
    for k in ks:
        assert rows[("recall", k)] == recall_at(ranked, relevance, k)
        assert rows[("dcg", k)] == dcg_at(ranked, relevance, k)
        assert rows[("ndcg", k)] == ndcg_at(ranked, relevance, k)
        assert rows[("prompt_words", k)] == prompt_words_at(ranked, words, k)
        rate = duplicate_source_rate_at(ranked, documents, k)
        assert rows[("duplicate_source_rate", k)] == rate or (
            math.isnan(rate) and math.isnan(rows[("duplicate_source_rate", k)])
        )


def test_question_metrics_name_a_chunk_without_words_or_document():
    with pytest.raises(ValueError, match="no word count for chunk 'c7'"):
        question_metrics(["c1", "c7"], RELEVANCE, [1, 2], {"c1": 3}, None)
    with pytest.raises(ValueError, match="no document for chunk 'c2'"):
        question_metrics(["c2"], RELEVANCE, [1], None, {"c1": "d1"})
