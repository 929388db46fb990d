"""The best answer setup per language model (results/README.md's section)."""

from __future__ import annotations

import pandas as pd

from rag.answering.best_setup import best_answer_setup_lines


def judged(outcomes: dict[tuple[str, str], list[str]], questions: str = "development") -> pd.DataFrame:
    rows = []
    for (chunker, retriever), values in outcomes.items():
        for number, outcome in enumerate(values):
            rows.append(
                {
                    "generator": "m",
                    "questions": questions,
                    "chunker": chunker,
                    "retriever": retriever,
                    "k": 5,
                    "question_id": f"q{number:02d}",
                    "answerable": True,
                    "reference_answer": "" if number == 0 else "x",
                    "outcome": outcome,
                }
            )
    return pd.DataFrame(rows)


def test_the_best_setup_is_named_and_tested_against_the_runner_up_and_the_closed_book():
    n = 30
    frame = judged(
        {
            ("none", "none"): ["wrong"] * n,
            ("s", "bm25"): ["correct"] * n,
            ("s", "fusion"): ["correct"] * (n - 2) + ["wrong"] * 2,
        }
    )
    lines = best_answer_setup_lines(frame)
    (bullet,) = [line for line in lines if line.startswith("- ")]
    # Question q00 has no reference answer: 29 counted, all correct with BM25.
    assert "`s` + `bm25`, k=5, 29 of 29 correct" in bullet
    assert "vs runner-up `s` + `fusion`, k=5: +0.07" in bullet and "not distinguishable from chance" in bullet
    assert "vs closed book: +1.00" in bullet and bullet.endswith("better")


def test_the_development_file_comes_first_and_an_empty_table_gives_nothing():
    frame = pd.concat(
        [
            judged({("none", "none"): ["wrong", "correct"]}, "heldout_a"),
            judged({("none", "none"): ["wrong", "correct"]}, "development"),
        ]
    )
    bullets = [line for line in best_answer_setup_lines(frame) if line.startswith("- ")]
    assert bullets[0].startswith("- `m`, development: closed book, 1 of 1 correct")
    assert best_answer_setup_lines(frame.iloc[0:0]) == []
