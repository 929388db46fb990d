"""The best answer setup per language model (results/README.md's section)."""

from __future__ import annotations

import pandas as pd

from rag.measuring.best_setup import best_answer_setup_lines


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


def test_every_printed_comparison_is_holm_corrected_over_all_of_them_and_the_verdict_follows_it():
    from rag.evaluation.significance import holm
    from rag.measuring.best_setup import BETTER, best_setups

    # Eight generators whose sources win on 8 more of 20 questions than the closed book:
    # p about 0.008 alone, above 0.05 once corrected over the 16 comparisons printed.
    frames = []
    for number in range(8):
        frame = judged(
            {
                ("none", "none"): ["wrong"] * 20,
                ("s", "bm25"): ["correct"] * 8 + ["wrong"] * 12,
                ("s", "fusion"): ["correct"] * 7 + ["wrong"] * 13,
            }
        )
        frames.append(frame.assign(generator=f"m{number}", reference_answer="x"))
    setups = best_setups(pd.concat(frames, ignore_index=True))
    every = [comparison for setup in setups for comparison in setup.comparisons]
    assert len(every) == 16
    assert [c.p_holm for c in every] == holm([c.p_randomization for c in every])
    closed = [c for c in every if c.against == "closed book"]
    assert all(c.p_randomization < 0.05 <= c.p_holm for c in closed)
    assert all(c.verdict != BETTER for c in every)
    lines = best_answer_setup_lines(pd.concat(frames, ignore_index=True))
    assert "The 16 comparisons below are one family" in " ".join(lines)
    printed = [line for line in lines if line.startswith("- `")]
    assert len(printed) == 8
    assert all("corrected" in line and BETTER not in line.split("corrected")[-1] for line in printed)


def test_the_section_agrees_with_the_closed_book_table_on_every_shared_comparison():
    """The same test on the same questions as llm_closed_book.csv: the same difference, interval
    and p; the section's family holds more comparisons, so it calls better only what the table does."""
    from pathlib import Path

    import pytest

    from rag.measuring.best_setup import ALPHA, BETTER, best_setups

    results = Path(__file__).resolve().parents[3] / "results"
    judged_table = pd.read_csv(results / "llm_answers_judged.csv", keep_default_na=False, na_values=[""])
    table = pd.read_csv(results / "llm_closed_book.csv")
    table = table[table["outcome"] == "correct"].set_index(
        ["generator", "questions", "chunker", "retriever", "k"]
    )
    shared = 0
    for setup in best_setups(judged_table):
        for comparison in setup.comparisons:
            if comparison.other[1] != "none" or setup.setup[1] == "none":
                continue
            row = table.loc[(setup.generator, setup.questions, *setup.setup)]
            shared += 1
            assert comparison.difference == pytest.approx(row.difference, abs=1e-6)
            assert comparison.difference_low == pytest.approx(row.difference_low, abs=1e-6)
            assert comparison.difference_high == pytest.approx(row.difference_high, abs=1e-6)
            assert comparison.p_randomization == pytest.approx(row.p_randomization, abs=1e-6)
            assert comparison.p_holm >= row.p_holm - 1e-6
            if comparison.verdict == BETTER:
                assert row.p_holm < ALPHA
    assert shared >= 8
