"""Offline answers judged by the language models' judge, on the models' questions only."""

from __future__ import annotations

import pandas as pd

from rag.measuring.correctness import content_in_text
from rag.measuring.same_measure import offline_judged


def _judged() -> pd.DataFrame:
    rows = [
        ("q1", True, "87.97 Earth days"),
        ("q2", True, "95 confirmed moons"),
        ("q3", True, ""),  # no reference answer: outside the denominator
        ("q4", False, ""),  # unanswerable
    ]
    return pd.DataFrame(
        [
            {
                "corpus": "c",
                "questions": questions,
                "generator": "m",
                "question_id": question,
                "answerable": answerable,
                "reference_answer": reference,
            }
            for questions in ("development", "heldout_questions")
            for question, answerable, reference in rows
        ]
    )


def test_offline_answers_are_judged_against_the_models_references_on_their_questions():
    answers = pd.DataFrame(
        [
            ("q1", "A year on Mercury lasts 87.97 Earth days [1].", False),
            ("q2", "Jupiter has 274 known moons [2].", False),
            ("q3", "Anything.", False),
            ("q4", "", True),
            ("q9", "87.97 Earth days", False),
        ],
        columns=["question_id", "answer", "abstained"],
    ).assign(corpus="c", chunker="sections", retriever="bm25", reader="reader", answerable=True)
    judged = offline_judged(answers, _judged())
    assert list(judged["question_id"]) == ["q1", "q2"]
    # Independently: the reference's content in the answer text.
    references = {"q1": "87.97 Earth days", "q2": "95 confirmed moons"}
    expected = [
        content_in_text(text, references[q])
        for q, text in zip(answers["question_id"][:2], answers["answer"][:2], strict=True)
    ]
    assert list(judged["correct"]) == expected == [True, False]
    assert set(judged["generator"]) == {"reader"}


def test_nothing_to_judge_is_an_empty_frame_with_the_columns():
    empty = offline_judged(pd.DataFrame(), _judged())
    assert empty.empty and "correct" in empty.columns
