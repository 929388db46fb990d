"""Cohorts: a question's evidence documents and the weakest cohort beside the mean."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from rag.evaluation.cohorts import document_cohorts, question_documents, weakest_cohorts
from rag.labels import Evidence, Question, Span


def question(question_id: str, *pieces: tuple[str | None, ...]) -> Question:
    evidence = tuple(
        Evidence(tuple(Span(f"text {i}", document) for i, document in enumerate(piece))) for piece in pieces
    )
    return Question(question_id, "?", "fact", True, evidence)


def test_a_comparison_question_belongs_to_both_of_its_documents():
    assert question_documents(question("q", ("mars",), ("venus",))) == ("mars", "venus")
    assert question_documents(question("q", ("mars", "mars"))) == ("mars",)


def test_a_span_without_a_document_takes_the_documents_of_its_relevant_chunks():
    assert question_documents(question("q", (None,)), ["pluto", "pluto"]) == ("pluto",)


def test_document_cohorts_lists_one_row_per_question_and_document():
    questions = [question("q1", ("mars",), ("venus",)), question("q2", (None,))]
    qrels = pd.DataFrame({"question_id": ["q2", "q2"], "chunk_id": ["c7", "c9"]})
    pairs = document_cohorts(questions, qrels, {"c7": "ceres", "c9": "ceres"})
    assert sorted(map(tuple, pairs.to_numpy().tolist())) == [("q1", "mars"), ("q1", "venus"), ("q2", "ceres")]


def table(rows, cohort=None):
    columns = [
        "corpus",
        "chunker",
        "retriever",
        *([cohort] if cohort else []),
        "metric",
        "k",
        "value",
        "questions",
    ]
    return pd.DataFrame(rows, columns=columns)


def test_the_weakest_cohort_ignores_small_cohorts_and_breaks_ties_by_name():
    overall = table([("c", "s", "r", "recall", 5, 0.8, 10), ("c", "s", "r", "recall", 1, 0.5, 10)])
    by_type = table(
        [
            ("c", "s", "r", "fact", "recall", 5, 0.9, 5),
            ("c", "s", "r", "paraphrase", "recall", 5, 0.4, 3),
            ("c", "s", "r", "long_span", "recall", 5, 0.4, 3),
            ("c", "s", "r", "tiny", "recall", 5, 0.0, 1),  # below min_questions
            ("c", "s", "r", "other_k", "recall", 1, 0.0, 9),  # another k
        ],
        "type",
    )
    by_document = table([("c", "s", "r", "mars", "recall", 5, 0.7, 4)], "document")
    result = weakest_cohorts(
        overall,
        {"type": by_type, "document": by_document},
        ["corpus", "chunker", "retriever"],
        "recall",
        5,
        2,
    )
    row = result.iloc[0]
    assert row["mean"] == 0.8
    assert row["weakest_type"] == "long_span" and row["weakest_type_value"] == 0.4
    assert row["weakest_type_questions"] == 3
    assert row["type_gap"] == pytest.approx(0.4)
    assert row["weakest_document"] == "mars" and row["document_gap"] == pytest.approx(0.1)


def test_no_cohort_large_enough_gives_an_empty_weakest():
    overall = table([("c", "s", "r", "recall", 5, 0.8, 2)])
    by_type = table([("c", "s", "r", "fact", "recall", 5, 0.5, 1)], "type")
    row = weakest_cohorts(
        overall, {"type": by_type}, ["corpus", "chunker", "retriever"], "recall", 5, 3
    ).iloc[0]
    assert row["weakest_type"] == "" and math.isnan(row["weakest_type_value"])


# --------------------------------------------------------------------------
# By caller and by tenant (issue 41)
# --------------------------------------------------------------------------


def test_caller_cohorts_count_leaks_and_average_recall_over_the_questions_in_scope():
    import math

    from rag.evaluation.cohorts import caller_cohort_rows, question_tenants

    relevance = {
        "q1": {"0": {"a1": 1.0}},  # acme's document
        "q2": {"0": {"s1": 1.0}},  # shared
        "q3": {"0": {"g1": 1.0}},  # globex's: out of this caller's scope
        "q4": {"0": {"a1": 1.0}, "1": {"s1": 1.0}},  # both
    }
    documents = {"a1": "acme_doc", "s1": "shared_doc", "g1": "globex_doc", "a2": "acme_doc"}
    tenants = question_tenants(
        relevance, documents, {"acme_doc": "acme", "shared_doc": "", "globex_doc": "globex"}
    )
    assert tenants == {"q1": ("acme",), "q2": ("(shared)",), "q3": ("globex",), "q4": ("(shared)", "acme")}
    readable = {"a1", "a2", "s1"}
    rankings = {"q1": ["a2", "a1"], "q2": ["a1", "a2"], "q3": ["a1"], "q4": ["s1", "a1"]}
    rows = caller_cohort_rows({"caller": "acme"}, rankings, relevance, readable, tenants, k=1)
    by_tenant = {row["tenant"]: row for row in rows}
    assert [row["tenant"] for row in rows] == ["all", "(shared)", "acme"]
    # recall@1 by hand: q1 0, q2 0, q4 one of two pieces; q3 is out of scope.
    assert by_tenant["all"]["questions"] == 3 and math.isclose(by_tenant["all"]["recall"], 0.5 / 3)
    assert by_tenant["acme"]["questions"] == 2 and math.isclose(by_tenant["acme"]["recall"], 0.25)
    assert all(row["unauthorized_chunks"] == 0 for row in rows)
    leaky = caller_cohort_rows(
        {"caller": "acme"}, {**rankings, "q3": ["g1", "a1"]}, relevance, readable, tenants, 1
    )
    assert leaky[0]["unauthorized_chunks"] == 1
