"""The answer-metric registry: each metric once, read by every answer table."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag.ask.measure import AskJudgement, ask_summary
from rag.measuring import answer_metrics
from rag.measuring.answer_metrics import AnswerMetric, metric, names
from rag.measuring.correctness import ABSTAINED, ANSWERED_UNANSWERABLE, CORRECT, REFUSED, WRONG
from rag.measuring.llm_tables import closed_book_comparisons, summarize_llm_answers
from rag.measuring.offline_tables import summarize_answers

KEYS = ["corpus", "chunker", "retriever", "reader"]


def offline_answers() -> pd.DataFrame:
    """Four offline answers of one reader: correct, wrong, abstained, and an unanswerable one answered."""
    rows = [
        ("q1", "single_document", True, True, True, True, True, "Titan is cold [1]."),
        ("q2", "single_document", True, True, False, False, True, "Rhea is small and far [2]."),
        ("q3", "multi_document", True, False, False, None, None, "The sources are insufficient."),
        ("q4", "unanswerable", False, True, False, True, False, "Mimas [1]."),
    ]
    frame = pd.DataFrame(
        rows,
        columns=[
            "question_id",
            "group",
            "answerable",
            "answered",
            "quotes_evidence",
            "faithful",
            "responsive",
            "answer",
        ],
    )
    for column in ("answerable", "answered", "quotes_evidence", "faithful", "responsive"):
        frame[column] = frame[column].astype("boolean")
    frame["citation_passed"] = frame["faithful"]
    frame["pieces_in_prompt"], frame["evidence_pieces"] = [1, 0, 1, 0], [1, 1, 2, 0]
    frame["prompt_tokens"], frame["prompt_tokens_cl100k"] = (
        [10, 12, 14, 16],
        pd.array([None] * 4, dtype="Int64"),
    )
    return frame.assign(corpus="c", chunker="x", retriever="r", reader="extractive")


def llm_answers() -> pd.DataFrame:
    """One generator's answers closed book and from one ranking, on the same five questions."""
    outcomes = {
        ("none", "none"): [WRONG, ABSTAINED, CORRECT, REFUSED, ANSWERED_UNANSWERABLE],
        ("x", "r"): [CORRECT, CORRECT, WRONG, REFUSED, REFUSED],
    }
    rows = []
    for (chunker, retriever), of_setup in outcomes.items():
        for number, outcome in enumerate(of_setup):
            abstained = outcome in (ABSTAINED, REFUSED)
            rows.append(
                {
                    "corpus": "c", "questions": "development", "generator": "g", "chunker": chunker,
                    "retriever": retriever, "k": 0 if chunker == "none" else 5, "question_id": f"q{number}",
                    "answerable": number < 3, "outcome": outcome, "abstained": abstained,
                    "answer": "I cannot answer." if abstained else "Titan is the largest moon of Saturn [1].",
                    "faithful": None if abstained else number % 2 == 0,
                    "responsive": None if abstained else True,
                    "correct_from_memory": outcome == CORRECT and chunker == "none",
                    "evidence_in_prompt": chunker != "none", "prompt_tokens": 20, "completion_tokens": 8,
                    "seconds": 0.1, "cached": True,
                }
            )  # fmt: skip
    return pd.DataFrame(rows)


def test_the_llm_shares_are_the_registrys_by_an_independent_count():
    summary = summarize_llm_answers(llm_answers()).set_index("chunker")
    # By hand, from the outcomes above: the ranking answers q0, q1 correctly and q2 wrongly.
    assert summary.loc["x", "correct_share"] == pytest.approx(2 / 3)
    assert summary.loc["x", "wrong_share"] == pytest.approx(1 / 3)
    assert summary.loc["none", "abstained_share"] == pytest.approx(1 / 3)
    assert summary.loc["none", "refused_share"] == pytest.approx(1 / 2)
    assert summary.loc["x", "faithful_share"] == pytest.approx(2 / 3)  # q0 and q2 of the three answered
    assert summary.loc["none", "correct_from_memory_share"] == 1.0
    low, high = summary.loc["x", "correct_share_low"], summary.loc["x", "correct_share_high"]
    assert low <= 2 / 3 <= high and not math.isnan(low)


def test_the_closed_book_tests_are_the_tested_metrics_in_registry_order():
    comparisons = closed_book_comparisons(llm_answers())
    assert list(comparisons["outcome"]) == [entry.name for entry in answer_metrics.tested_metrics()]
    correct = comparisons.set_index("outcome").loc["correct"]
    # The summary's denominator (issue 43: one per table): the three answerable questions q0-q2.
    assert correct["share"] == pytest.approx(2 / 3) and correct["closed_book_share"] == pytest.approx(1 / 3)
    assert correct["question_count"] == 3
    refused = comparisons.set_index("outcome").loc["refused"]
    assert refused["question_count"] == 2 and refused["share"] == pytest.approx(1.0)


def test_every_metric_has_one_name_and_a_direction():
    assert len(names()) == len(set(names()))
    assert metric("wrong").higher_is_better is False and metric("correct").higher_is_better is True
    with pytest.raises(ValueError, match="unknown answer metric 'nope'"):
        metric("nope")


def _words(verdicts: pd.DataFrame) -> pd.Series:
    """A metric written once: the words of each answer given."""
    counts = verdicts["answer"].map(lambda text: float(len(str(text).split())))
    return counts.where(verdicts["answered"].astype(bool))


def test_a_metric_added_in_one_place_appears_in_every_answer_table(monkeypatch):
    added = AnswerMetric("words", "words", _words, higher_is_better=False, tested=True, column="mean_words")
    monkeypatch.setattr(answer_metrics, "REGISTRY", [*answer_metrics.REGISTRY, added])

    offline = summarize_answers(offline_answers(), KEYS).set_index("group")
    assert offline.loc["all", "mean_words"] == pytest.approx((4 + 6 + 2) / 3)  # the three answers given
    assert {"mean_words_low", "mean_words_high"} <= set(offline.columns)

    llm = summarize_llm_answers(llm_answers()).set_index("chunker")
    assert llm.loc["x", "mean_words"] == pytest.approx(8.0)  # every answer given has eight words

    comparisons = closed_book_comparisons(llm_answers()).set_index("outcome")
    assert comparisons.loc["words", "share"] == pytest.approx(3 * 8 / 5)  # abstentions count 0

    judgements = [
        AskJudgement("q1", "single_document", True, True, True, True, "Titan [1].", CORRECT),
        AskJudgement("q2", "unanswerable", False, False, None, None, "No.", REFUSED),
    ]
    heldout = pd.DataFrame(ask_summary(judgements, corpus="c")).set_index("group")
    assert heldout.loc["all", "mean_words"] == 2.0


def test_without_the_added_metric_the_tables_keep_their_published_columns():
    offline = summarize_answers(offline_answers(), KEYS)
    assert "responsive_rate" in offline.columns and "refused_share" not in offline.columns
    assert list(offline.columns).index("citation_passed") > list(offline.columns).index(
        "abstained_share_high"
    )


def test_answer_words_count_the_words_of_each_answer_given_without_its_citations():
    verdicts = pd.DataFrame(
        {
            "answered": [True, True, False],
            "answer": ["Titan is cold [1].", "Rhea [2, 3] and Dione [4].", "The sources are insufficient."],
        }
    )
    values = metric("answer_words").value(verdicts)
    assert values.iloc[:2].tolist() == [3.0, 3.0] and math.isnan(values.iloc[2])
    offline = summarize_answers(offline_answers(), KEYS).set_index("group")
    # Independently: the three answers given, by hand, "[n]" dropped: 3, 5 and 1 words.
    assert offline.loc["all", "answer_words"] == pytest.approx((3 + 5 + 1) / 3)
    assert offline.loc["all", "answer_words_low"] <= offline.loc["all", "answer_words"]
    assert summarize_llm_answers(llm_answers()).set_index("chunker").loc["x", "answer_words"] == 7.0


FUZZ = settings(max_examples=100, deadline=None, derandomize=True, database=None)
FLAG = st.sampled_from([True, False, None])


@FUZZ
@given(rows=st.lists(st.tuples(st.booleans(), st.booleans(), st.booleans(), FLAG, FLAG, FLAG), max_size=25))
def test_every_share_is_a_mean_over_the_answers_it_applies_to(rows):
    """Seeded: any verdicts give means over the answers a metric applies to, shares and their
    intervals in [0, 1], and NaN exactly when it applies to none."""
    verdicts = pd.DataFrame(
        rows, columns=["answerable", "answered", "judged", "correct", "faithful", "responsive"]
    ).assign(from_memory=None, answer="Titan [1].")
    for entry in answer_metrics.REGISTRY:
        values = entry.value(verdicts)
        assert len(values) == len(verdicts)
        row = answer_metrics.aggregate_with_interval(entry, verdicts)
        point, low, high = (row[f"{entry.share_column}{suffix}"] for suffix in ("", "_low", "_high"))
        applies = values.dropna()
        if applies.empty:
            assert math.isnan(point) and math.isnan(low)
            continue
        assert point == pytest.approx(float(applies.mean()))
        if entry.name != "answer_words":
            assert 0.0 <= point <= 1.0 and 0.0 <= low <= high <= 1.0
