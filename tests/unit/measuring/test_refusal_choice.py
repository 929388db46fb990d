"""The refusal prompts, chosen on the development questions (results/README.md's section)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from hypothesis import given, seed, settings
from hypothesis import strategies as st

from rag.formats.files import read_yaml
from rag.measuring.refusal_choice import (
    MAX_ANSWERABLE_REFUSED,
    chosen_prompt,
    refusal_choice_lines,
    refusal_counts,
)

PROJECT = Path(__file__).resolve().parents[3]


def judged(generator: str, questions: str, answerable: list[str], unanswerable: list[str]) -> pd.DataFrame:
    """Answers from sources (and one closed-book row that must not count)."""
    rows = [{"answerable": True, "outcome": outcome, "retriever": "bm25"} for outcome in answerable] + [
        {"answerable": False, "outcome": outcome, "retriever": "bm25"} for outcome in unanswerable
    ]
    rows.append({"answerable": False, "outcome": "refused", "retriever": "none"})
    frame = pd.DataFrame(rows)
    frame["generator"], frame["questions"] = generator, questions
    frame["question_id"] = [f"q{number}" for number in range(len(frame))]
    return frame


def test_counts_leave_out_the_closed_book_and_the_other_generators():
    frame = pd.concat(
        [
            judged(
                "strict",
                "development",
                ["abstained", "correct", "wrong"],
                ["refused", "answered_unanswerable"],
            ),
            judged("plain", "development", ["correct"] * 3, ["refused"] * 2),
        ]
    )
    (row,) = refusal_counts(frame, ["strict"])
    assert (row.unanswerable, row.refused, row.answerable, row.abstained) == (2, 1, 3, 1)


def test_a_prompt_within_the_bound_wins_over_one_that_refuses_more_of_everything():
    frame = pd.concat(
        [
            judged("eager", "development", ["abstained"] * 10 + ["correct"] * 90, ["refused"] * 4),
            judged(
                "careful", "development", ["abstained"] * 2 + ["correct"] * 98, ["refused"] * 2 + ["x"] * 2
            ),
        ]
    )
    assert chosen_prompt(refusal_counts(frame, ["eager", "careful"])) == "careful"
    lines = refusal_choice_lines(frame, ["eager", "careful"])
    assert "Chosen: `careful`." in lines
    assert any(line.startswith("- `eager`, development: unanswerable refused 4 of 4") for line in lines)


def test_held_out_answers_never_move_the_choice():
    development = pd.concat(
        [
            judged("a", "development", ["correct"] * 20, ["refused"] + ["x"] * 3),
            judged("b", "development", ["correct"] * 20, ["x"] * 4),
        ]
    )
    held_out = pd.concat(
        [
            judged("a", "heldout", ["abstained"] * 20, ["x"] * 4),
            judged("b", "heldout", ["correct"] * 20, ["refused"] * 4),
        ]
    )
    counts = refusal_counts(pd.concat([development, held_out]), ["a", "b"])
    assert chosen_prompt(counts) == "a"
    assert [row.questions for row in counts] == ["development", "heldout", "development", "heldout"]


outcome_lists = st.tuples(
    st.integers(0, 30), st.integers(0, 30), st.integers(0, 6), st.integers(0, 6)
).filter(lambda numbers: numbers[0] + numbers[1] > 0)


@seed(50)
@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), outcome_lists, min_size=1))
def test_the_choice_follows_the_stated_rule(prompts):
    """Whatever the counts: a prompt within the bound if any is, and none within it refuses more
    unanswerable questions; otherwise none refuses fewer answerable ones."""
    frame = pd.concat(
        [
            judged(
                name,
                "development",
                ["abstained"] * abstained + ["correct"] * kept,
                ["refused"] * refused + ["answered_unanswerable"] * answered,
            )
            for name, (abstained, kept, refused, answered) in prompts.items()
        ]
    )
    counts = {row.generator: row for row in refusal_counts(frame, list(prompts))}
    chosen = counts[chosen_prompt(list(counts.values()))]
    within = [row for row in counts.values() if row.abstained_share <= MAX_ANSWERABLE_REFUSED]

    def refused(row):
        return row.refused / row.unanswerable if row.unanswerable else 0.0

    if within:
        assert chosen in within
        assert all(refused(row) <= refused(chosen) for row in within)
    else:
        assert all(row.abstained_share >= chosen.abstained_share for row in counts.values())


def test_the_committed_section_is_the_one_the_judged_table_gives():
    """results/README.md holds the section refusal_choice_lines writes from the committed table,
    for the outcome entries config.yaml lists."""
    config = read_yaml(PROJECT / "config.yaml")
    listed = config["answers"]["generators"]
    outcome = [name for name in listed if config["generators"][name].get("refusal") == "outcome"]
    judged_table = pd.read_csv(
        PROJECT / "results" / "llm_answers_judged.csv", keep_default_na=False, na_values=[""]
    )
    lines = refusal_choice_lines(judged_table, outcome)
    readme = (PROJECT / "results" / "README.md").read_text(encoding="utf-8")
    assert ("\n".join(lines) in readme) if lines else ("## Refusal prompts" not in readme)
