"""The language models' answer tables, on answer files built by hand (the llm generator's contract)."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag.measuring.correctness import ANSWERED_UNANSWERABLE, NOT_JUDGED, REFUSED
from rag.measuring.llm_tables import (
    ANSWER_FILE_COLUMNS,
    answer_labels,
    citation_check_table,
    closed_book_comparisons,
    gather_answer_files,
    judge_llm_answers,
    summarize_llm_answers,
    with_label_outcomes,
)
from rag.measuring.verdicts import NOT_CHECKED, verdicts_table

CHUNKS = {
    "c1": "The Caloris Basin measures about 1,550 km across.",
    "c2": "Mercury has no moons.",
    "c3": "Nereid was spotted by G. P. Kuiper in 1949.",
    "c4": "Triton orbits backwards.",
    "c5": "Uranus rolls on its side.",
}
# question id -> (type, answerable, reference)
QUESTIONS = {
    "q1": ("fact", True, "1,550 km"),
    "q2": ("fact", True, "G. P. Kuiper"),
    "q3": ("fact", True, "224.7 Earth days"),
    "q4": ("paraphrase", True, "Titania"),
    "q5": ("comparison", True, None),
    "q6": ("unanswerable", False, None),
}
# question id -> (answer, abstained, cited, sources, faithful, responsive) for each setting
CLOSED = {
    "q1": ("about 2 years", False, "", "", None, True),
    "q2": ("Kuiper", False, "", "", None, True),
    "q3": ("", True, "", "", None, None),
    "q4": ("Titania", False, "", "", None, True),
    "q5": ("Something", False, "", "", None, True),
    "q6": ("-180 °C", False, "", "", None, True),
}
BM25 = {
    "q1": ("1550 km [1]", False, "1", "c1;c2", True, True),
    # Space-separated sources, as the llm generator writes them.
    "q2": ("Gerard Kuiper [2]", False, "2", "c3 c4", True, True),  # right, but cites the wrong source
    "q3": ("", True, "", "c2;c4", None, None),
    "q4": ("Titania [1]", False, "1", "c5", False, True),  # right, from memory: no source says it
    "q5": ("Something [1]", False, "1", "c2", True, True),
    "q6": ("", True, "", "c5", None, None),
}


def answer_file(chunker: str, retriever: str, answers: dict) -> pd.DataFrame:
    rows = []
    for question_id, (answer, abstained, cited, sources, faithful, responsive) in answers.items():
        question_type, answerable, reference = QUESTIONS[question_id]
        rows.append(
            {
                "corpus": "solar_system",
                "questions": "development",
                "generator": "smollm2",
                "chunker": chunker,
                "retriever": retriever,
                "k": 5,
                "question_id": question_id,
                "type": question_type,
                "answerable": answerable,
                "reference_answer": reference,
                "answer": answer,
                "abstained": abstained,
                "cited_sources": cited,
                "source_chunk_ids": sources,
                "evidence_in_prompt": bool(sources),
                "faithful": faithful,
                "responsive": responsive,
                "prompt_tokens": 100 if sources else 20,
                "completion_tokens": 10,
                "seconds": 0.5,
                "cached": True,
            }
        )
    return pd.DataFrame(rows, columns=ANSWER_FILE_COLUMNS)


@pytest.fixture(scope="module")
def judged():
    files = [("bm25.parquet", answer_file("sentences100", "bm25", BM25))]
    files.append(("none.parquet", answer_file("none", "none", CLOSED)))
    return judge_llm_answers(gather_answer_files(files), CHUNKS)


def test_each_answer_is_judged_and_located(judged):
    bm25 = judged[judged["retriever"] == "bm25"].set_index("question_id")
    assert list(bm25["outcome"]) == ["correct", "correct", "abstained", "correct", NOT_JUDGED, REFUSED]
    assert list(bm25["reference_in_sources"]) == [True, True, False, False, False, False]
    assert list(bm25["reference_in_cited"]) == [True, False, False, False, False, False]
    assert list(bm25["supported"]) == [True, False, False, False, False, False]
    assert list(bm25["grounded"]) == [True, True, False, False, False, False]
    assert list(bm25["correct_from_memory"]) == [False, False, False, True, False, False]
    closed = judged[judged["retriever"] == "none"].set_index("question_id")
    assert closed.loc["q1", "outcome"] == "wrong" and closed.loc["q6", "outcome"] == ANSWERED_UNANSWERABLE
    # Closed book has no sources: every correct answer is from memory.
    assert list(closed.loc[closed["correct"], "correct_from_memory"]) == [True, True]


def test_the_summary_counts_and_shares(judged):
    summary = summarize_llm_answers(judged).set_index("retriever")
    bm25, closed = summary.loc["bm25"], summary.loc["none"]
    assert (bm25.correct, bm25.wrong, bm25.abstained, bm25.not_judged) == (3, 0, 1, 1)
    assert (bm25.refused, bm25.unanswerable, bm25.correct_from_memory) == (1, 1, 1)
    assert bm25.correct_share == pytest.approx(3 / 4)  # over the 4 questions with a reference
    assert bm25.correct_share_low <= bm25.correct_share <= bm25.correct_share_high
    assert bm25.correct_from_memory_share == pytest.approx(1 / 3)
    assert bm25.faithful_share == pytest.approx(3 / 4)  # q1, q2, q5 of the 4 answered
    assert (closed.correct, closed.wrong, closed.answered_unanswerable) == (2, 1, 1)
    assert closed.refused_share == 0.0 and closed.correct_from_memory == 2
    assert bm25.mean_prompt_tokens == 100 and closed.mean_prompt_tokens == 20
    assert bm25.cached_answers == 6 and bm25.question_count == 6
    assert set(summary["questions"]) == {"development"}  # the question set's name, not a count


def test_retrieval_is_compared_with_the_closed_book_on_the_same_questions(judged):
    table = closed_book_comparisons(judged).set_index("outcome")
    assert set(table["retriever"]) == {"bm25"}  # the closed book is the baseline, not a row
    assert set(table["questions"]) == {"development"}
    # One denominator per outcome, the summary's: the 4 answerable questions with a
    # reference, and the 1 unanswerable one for refused.
    assert dict(zip(table.index, table["question_count"], strict=True)) == {
        "correct": 4,
        "wrong": 4,
        "abstained": 4,
        "refused": 1,
        "correct_from_memory": 4,
    }
    assert set(table.loc[["correct", "refused"], "denominator"]) == {
        "answerable questions with a reference answer",
        "unanswerable questions",
    }
    correct = table.loc["correct"]
    assert correct.share == pytest.approx(3 / 4) and correct.closed_book_share == pytest.approx(2 / 4)
    assert correct.difference == pytest.approx(1 / 4)
    assert 0 < correct.p_randomization <= 1 and correct.p_randomization <= correct.p_holm
    refused = table.loc["refused"]
    assert refused.difference == pytest.approx(1.0)
    assert table.loc["correct_from_memory"].difference == pytest.approx(-1 / 4)


def test_the_summary_and_the_closed_book_table_share_one_denominator(judged):
    summary = summarize_llm_answers(judged).set_index("retriever").loc["bm25"]
    table = closed_book_comparisons(judged).set_index("outcome")
    for measure in ("correct", "wrong", "abstained", "refused"):
        assert table.loc[measure, "share"] == pytest.approx(summary[f"{measure}_share"]), measure


def test_the_citation_checks_precision_and_recall(judged):
    bm25 = citation_check_table(judged).set_index("retriever").loc["bm25"]
    # Answered: q1 (supported), q2, q4, q5 (unsupported); flagged (not faithful): q4 only.
    assert (bm25.answered, bm25.unsupported, bm25.flagged, bm25.flagged_unsupported) == (4, 3, 1, 1)
    assert bm25.precision == 1.0 and bm25.recall == pytest.approx(1 / 3)
    assert bm25.recall_low <= bm25.recall <= bm25.recall_high
    # q2 is correct from its sources without citing the one that holds it: grounded, not supported.
    assert (bm25.ungrounded, bm25.flagged_ungrounded) == (2, 1)
    assert bm25.precision_ungrounded == 1.0 and bm25.recall_ungrounded == pytest.approx(1 / 2)
    assert bm25.citing == 4
    closed = citation_check_table(judged).set_index("retriever").loc["none"]
    assert closed.citing == 0 and closed.ungrounded == closed.answered  # no sources: nothing is grounded


def test_verdicts_are_measured_for_the_model_and_the_offline_generators(judged):
    heldout = pd.DataFrame(
        [
            {
                "questions_file": "heldout_questions_round4",
                "retriever": "bm25_lsa_ivf",
                "generator": "reader",
                "group": "all",
                "answered": 12,
                "faithful_and_responsive": 10,
                "faithful_and_responsive_not_judged": 0,
                "faithful_and_responsive_correct": 3,
                "verdicts_correct_share": 0.3,
                "verdicts_correct_share_low": 0.1,
                "verdicts_correct_share_high": 0.6,
            }
        ]
    )
    table = verdicts_table(judged, heldout).set_index("setup")
    bm25 = table.loc["sentences100/bm25/k=5"]
    # q1, q2 and q5 pass both verdicts; q5 has no reference; q1 and q2 are correct.
    assert (bm25.faithful_and_responsive, bm25.faithful_and_responsive_not_judged) == (3, 1)
    assert bm25.faithful_and_responsive_correct == 2 and bm25.verdicts_correct_share == 1.0
    closed = table.loc["none/none/k=5"]
    assert closed.faithful_and_responsive == 0 and math.isnan(closed.verdicts_correct_share)
    assert table.loc["rag ask bm25_lsa_ivf", "faithful_and_responsive_correct"] == 3
    assert set(table["not_checked"]) == {NOT_CHECKED}


def test_bad_answer_files_are_one_clear_error():
    broken = answer_file("sentences100", "bm25", BM25).drop(columns=["reference_answer"])
    with pytest.raises(ValueError, match="bm25.parquet: answer file lacks column 'reference_answer'"):
        gather_answer_files([("bm25.parquet", broken)])
    with pytest.raises(ValueError, match="question 'q1': source chunk 'c1' is not in the chunks"):
        judge_llm_answers(answer_file("sentences100", "bm25", BM25), {})


def test_the_summary_counts_correct_partly_and_wrong_by_the_labels_and_partly_is_never_correct():
    from rag.measuring.llm_tables import LABEL_OUTCOME_COLUMNS, with_label_outcomes

    setup = {
        "corpus": "c",
        "questions": "development",
        "generator": "g",
        "chunker": "s",
        "retriever": "bm25",
        "k": 5,
    }
    judged = pd.DataFrame(
        [
            {**setup, "question_id": "q1", "answer": "4 km high.", "outcome": "correct"},
            {**setup, "question_id": "q2", "answer": "4 km, and Olympus Mons.", "outcome": "correct"},
            {**setup, "question_id": "q3", "answer": "9 km.", "outcome": "wrong"},
            {**setup, "question_id": "q4", "answer": "A new answer.", "outcome": "correct"},
        ]
    )
    labels = pd.DataFrame(
        [
            {**setup, "question_id": "q1", "answer": "4 km high.", "correctness": "correct"},
            {**setup, "question_id": "q2", "answer": "4 km, and Olympus Mons.", "correctness": "partly"},
            {**setup, "question_id": "q3", "answer": "9 km.", "correctness": "wrong"},
            # Labelled when the answer was another: not this answer's label.
            {**setup, "question_id": "q4", "answer": "The old answer.", "correctness": "partly"},
        ]
    )
    summary = pd.DataFrame([{**setup, "correct": 3}])
    row = with_label_outcomes(summary, judged, labels, "c").iloc[0]
    assert [row[name] for name in LABEL_OUTCOME_COLUMNS] == [3, 1, 1, 1, 1, 0]
    # Another corpus's table, or no labels: zero counts, the summary otherwise unchanged.
    assert with_label_outcomes(summary, judged, labels, "other").iloc[0]["labelled"] == 0
    assert list(with_label_outcomes(summary, judged, None, "c").columns) == [
        *summary.columns,
        *LABEL_OUTCOME_COLUMNS,
    ]


def _label(answer: str, correctness: str, question: str = "q1") -> dict:
    return {
        "generator": "qwen",
        "questions": "development",
        "chunker": "sentences100",
        "retriever": "bm25",
        "question_id": question,
        "answer": answer,
        "correctness": correctness,
    }


def test_the_claim_reading_of_an_answer_wins_and_other_answers_stay():
    judges = pd.DataFrame([_label("Herschel [1]", "correct"), _label("Galle", "wrong", "q2")])
    claims = pd.DataFrame([_label(" Herschel [1] ", "partly"), _label("Herschel in 1781", "correct")])
    labels = answer_labels(judges, claims)
    assert sorted(zip(labels["answer"].str.strip(), labels["correctness"], strict=True)) == [
        ("Galle", "wrong"),
        ("Herschel [1]", "partly"),
        ("Herschel in 1781", "correct"),
    ]
    assert answer_labels(None, None) is None
    assert answer_labels(None, claims).equals(claims[labels.columns].reset_index(drop=True))


def test_a_claim_label_reaches_the_summary_only_for_the_same_answer_text():
    judged = pd.DataFrame(
        [
            {**_label("Herschel [1]", ""), "corpus": "c", "k": 5, "outcome": "correct"},
            {**_label("Galle", "", "q2"), "corpus": "c", "k": 5, "outcome": "wrong"},
        ]
    ).drop(columns="correctness")
    summary = pd.DataFrame([{"corpus": "c", **{key: judged.at[0, key] for key in _SETUP}, "k": 5}])
    labels = answer_labels(
        pd.DataFrame([_label("Herschel [1]", "correct")]),
        pd.DataFrame([_label("Herschel [1]", "partly"), _label("Galle, in 1846", "wrong", "q2")]),
    )
    row = with_label_outcomes(summary, judged, labels, "c").iloc[0]
    assert (row["labelled"], row["labelled_correct"], row["labelled_partly"], row["labelled_wrong"]) == (
        1,
        0,
        1,
        0,
    )
    assert row["correct_labelled_partly"] == 1


_SETUP = ("generator", "questions", "chunker", "retriever")
_TEXTS = st.sampled_from(["a", " a", "b", "a [1]"])
_VERDICTS = st.sampled_from(["correct", "partly", "wrong"])
_FRAMES = st.lists(st.tuples(_TEXTS, _VERDICTS, st.sampled_from(["q1", "q2"])), max_size=8).map(
    lambda rows: pd.DataFrame([_label(*row) for row in rows], columns=list(_label("", "")))
)


@settings(max_examples=100, deadline=None, derandomize=True, database=None)
@given(_FRAMES, _FRAMES)
def test_one_label_per_answer_and_the_later_file_decides(first, second):
    labels = answer_labels(first, second)
    keys = labels.assign(answer=labels["answer"].str.strip())
    assert not keys.duplicated(["question_id", "answer"]).any()
    for row in second.itertuples(index=False):
        later = second[
            (second["question_id"] == row.question_id) & (second["answer"].str.strip() == row.answer.strip())
        ].iloc[-1]
        kept = keys[(keys["question_id"] == row.question_id) & (keys["answer"] == row.answer.strip())]
        assert list(kept["correctness"]) == [later["correctness"]]


def test_every_committed_answer_is_read_from_the_response_cache():
    """A clean build reads every reply from resources/llm_cache/, so a committed row made while the
    model answered live (cached False, its own seconds) would differ from the rebuilt one."""
    from pathlib import Path

    results = Path(__file__).resolve().parents[3] / "results"
    answers = pd.read_csv(results / "llm_answers.csv", keep_default_na=False, na_values=[""])
    live = answers[~answers["cached"].astype(bool)]
    assert live.empty, live[["questions", "generator", "chunker", "retriever"]].drop_duplicates().to_string()
