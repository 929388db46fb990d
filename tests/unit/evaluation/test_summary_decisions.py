"""Decisions in the summary (issue 44): which k at a prompt budget, what a learned fusion chose,
one marker for better and one for worse, and the held-out answers beside the development ones."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from rag.evaluation.recommendation import k_choice_lines, k_choices
from rag.evaluation.summary import (
    BETTER,
    WORSE,
    learned_choice_lines,
    learned_labels,
    results_readme,
    summary_table,
    verdict_marker,
)
from rag.measuring.answers_document import heldout_headline

RESULTS = Path(__file__).resolve().parents[3] / "results"
INTERVAL_COLUMNS = [
    "corpus",
    "chunker",
    "retriever",
    "metric",
    "k",
    "value",
    "ci_low",
    "ci_high",
    "questions",
]
SIGNIFICANCE_COLUMNS = [
    "corpus",
    "chunker",
    "retriever",
    "baseline",
    "metric",
    "k",
    "questions",
    "mean_difference",
    "difference_ci_low",
    "difference_ci_high",
    "p_randomization",
    "p_randomization_holm",
    "p_t",
    "p_t_holm",
    "significant",
]


# --------------------------------------------------------------------------
# One marker for better, one for worse
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("direction", "higher_is_better", "marker"),
    [
        ("higher", True, BETTER),
        ("lower", True, WORSE),
        ("higher", False, WORSE),
        ("lower", False, BETTER),
        ("", True, ""),
        ("baseline", False, ""),
    ],
)
def test_the_marker_follows_the_metrics_direction(direction, higher_is_better, marker):
    assert verdict_marker(direction, higher_is_better) == marker


def _grid() -> tuple[pd.DataFrame, pd.DataFrame]:
    """bm25 the baseline; 'short' has fewer words (better) and lower recall (worse), both significant."""
    rows = []
    for retriever, recall, words in (("bm25", 0.6, 300.0), ("short", 0.4, 150.0)):
        for k, value in ((1, recall), (5, recall + 0.1), (10, recall + 0.2)):
            rows.append(("c", "x", retriever, "recall", k, value, value - 0.05, value + 0.05, 20))
        rows.append(("c", "x", retriever, "mrr", pd.NA, recall, recall - 0.05, recall + 0.05, 20))
        rows.append(("c", "x", retriever, "ndcg", 10, recall, recall - 0.05, recall + 0.05, 20))
        rows.append(("c", "x", retriever, "prompt_words", 5, words, words - 10, words + 10, 20))
    intervals = pd.DataFrame(rows, columns=INTERVAL_COLUMNS).astype({"k": "Int64"})
    tests = [
        ("c", "x", "short", "bm25", "recall", 5, 20, -0.2, -0.3, -0.1, 0.001, 0.004, 0.001, 0.004, True),
        (
            "c",
            "x",
            "short",
            "bm25",
            "prompt_words",
            5,
            20,
            -150.0,
            -160.0,
            -140.0,
            0.001,
            0.004,
            0.001,
            0.004,
            True,
        ),
    ]
    significance = pd.DataFrame(tests, columns=SIGNIFICANCE_COLUMNS).astype({"k": "Int64"})
    return intervals, significance


def test_fewer_words_is_marked_better_and_lower_recall_worse():
    intervals, significance = _grid()
    table = summary_table(intervals, significance, "bm25")
    row = table.set_index("retriever").loc["short"]
    assert row["recall_at_5_vs_baseline"] == "lower" and row["prompt_words_at_5_vs_baseline"] == "lower"
    readme = results_readme(table, significance, "bm25", 100, 100)
    (line,) = [text for text in readme.splitlines() if text.startswith("| x | short |")]
    cells = [cell.strip() for cell in line.strip("|").split("|")]
    assert cells[3].endswith(WORSE) and cells[7].strip("*").endswith(BETTER), cells  # R@5, words@5
    assert f"{BETTER} / {WORSE}: better / worse" in readme


# --------------------------------------------------------------------------
# Which k at a prompt budget
# --------------------------------------------------------------------------


def _curve(chunker: str, retriever: str, words_per_chunk: float, halving: float) -> list[tuple]:
    """recall@k = 1 - halving**k with a fixed interval width, words@k = k * words_per_chunk."""
    rows = []
    for k in range(1, 11):
        recall = 1 - halving**k
        rows.append(
            ("c", chunker, retriever, "recall", k, recall, recall - 0.08, min(1.0, recall + 0.08), 30)
        )
        words = k * words_per_chunk
        rows.append(("c", chunker, retriever, "prompt_words", k, words, words - 5, words + 5, 30))
    return rows


def test_the_k_is_the_largest_that_fits_and_the_thrifty_k_the_smallest_inside_its_interval():
    intervals = pd.DataFrame(
        _curve("short", "bm25", 60, 0.5)
        + _curve("long", "bm25", 400, 0.3)
        + _curve("huge", "bm25", 900, 0.3),
        columns=INTERVAL_COLUMNS,
    ).astype({"k": "Int64"})
    choices = {choice.chunker: choice for choice in k_choices(intervals, "c", 500)}
    # Independently: 60 words a chunk fit 8 chunks in 500 words; 400 words fit one; 900 none.
    short = choices["short"]
    assert short.k == 8 and math.isclose(short.recall, 1 - 0.5**8) and math.isclose(short.words, 480)
    assert short.smallest_k == min(k for k in range(1, 9) if 1 - 0.5**k >= 1 - 0.5**8 - 0.08) == 4
    assert math.isclose(short.recall_per_thousand_words, (1 - 0.5**8) / 480 * 1000)
    assert choices["long"].k == 1 and choices["long"].smallest_k == 1
    assert choices["huge"].k is None and choices["huge"].smallest_k_evaluated == 1
    lines = k_choice_lines(list(choices.values()), 500)
    assert lines[0] == "### Which k at a prompt budget of 500 words"
    assert any(line.startswith("**Most recall at 500 words**: `short` + `bm25` at k = 8") for line in lines)
    assert "| huge | bm25 | none fits | k = 1 already takes 900 words |" in "\n".join(lines)
    assert f"| short | bm25 | 8 | {1 - 0.5**8:.3f} [{1 - 0.5**8 - 0.08:.3f}, 1.000] | 480 |" in "\n".join(
        lines
    )


def test_the_committed_intervals_give_the_k_an_independent_reading_gives():
    intervals = pd.read_csv(RESULTS / "metrics_ci.csv", dtype={"k": "Int64"})
    corpus = sorted(intervals["corpus"].unique())[0]
    budget = 500
    choices = k_choices(intervals, corpus, budget)
    assert choices
    wide = intervals[(intervals["corpus"] == corpus) & intervals["k"].notna()].pivot_table(
        index=["chunker", "retriever", "k"], columns="metric", values="value"
    )
    for choice in choices:
        curve = wide.loc[(choice.chunker, choice.retriever)]
        fitting = curve[curve["prompt_words"] <= budget]
        if choice.k is None:
            assert fitting.empty
            continue
        assert choice.k == int(fitting.index.max())
        assert math.isclose(choice.recall, curve.loc[choice.k, "recall"], abs_tol=1e-9)
        assert choice.recall >= curve.loc[choice.smallest_k, "recall"] >= choice.low
        assert all(curve.loc[k, "recall"] < choice.low for k in fitting.index if k < choice.smallest_k)


# --------------------------------------------------------------------------
# What a learned fusion chose
# --------------------------------------------------------------------------


def _learned(settings: list[tuple[str, float, float]], chunker: str = "x") -> pd.DataFrame:
    rows = []
    for fold, (choice, bm25, minilm) in enumerate(settings):
        for component, weight in (("bm25", bm25), ("minilm", minilm)):
            rows.append(("c", chunker, "learned", fold, "fold", choice, component, weight, False))
    columns = [
        "corpus",
        "chunker",
        "retriever",
        "fold",
        "part",
        "choice",
        "component",
        "weight",
        "at_grid_edge",
    ]
    return pd.DataFrame(rows, columns=columns)


def _summary(equal: bool) -> pd.DataFrame:
    rows = [("c", "x", "minilm", 0.7, 400.0), ("c", "x", "learned", 0.7 if equal else 0.75, 400.0)]
    return pd.DataFrame(rows, columns=["corpus", "chunker", "retriever", "recall_at_5", "prompt_words_at_5"])


def test_a_fusion_that_chose_one_component_in_every_fold_says_so_and_why_its_row_is_equal():
    learned = _learned([("component alone", 0.0, 1.0)] * 5)
    (line,) = learned_choice_lines(_summary(equal=True), learned)["c"]
    assert "`x` / `learned`: minilm alone in 5 of 5 folds, so its row equals `minilm`'s" in line
    (line,) = learned_choice_lines(_summary(equal=False), learned)["c"]
    assert "minilm alone in 5 of 5 folds." in line and "equals" not in line
    assert learned_labels(learned) == {("c", "x", "learned"): "learned (minilm alone, every fold)"}


def test_mixed_choices_are_counted_fold_by_fold():
    learned = _learned(
        [("tuned weights", 0.3, 0.7)] * 3 + [("component alone", 1.0, 0.0), ("plain rrf", 0.5, 0.5)]
    )
    (line,) = learned_choice_lines(_summary(equal=True), learned)["c"]
    assert (
        "bm25 0.3 + minilm 0.7 in 3 of 5 folds; bm25 alone in 1 of 5 folds; plain RRF in 1 of 5 folds" in line
    )
    assert "equals" not in line
    assert learned_labels(learned)[("c", "x", "learned")] == "learned (bm25 0.3 + minilm 0.7 in 3 of 5 folds)"


def test_the_committed_learned_fusion_rows_that_equal_a_component_name_it():
    learned = pd.read_csv(RESULTS / "learned_fusion.csv")
    summary = pd.read_csv(RESULTS / "summary.csv", keep_default_na=False, na_values=[""])
    lines = " ".join(line for found in learned_choice_lines(summary, learned).values() for line in found)
    metrics = ["recall_at_1", "recall_at_5", "recall_at_10", "mrr", "ndcg_at_10", "prompt_words_at_5"]
    for (corpus, chunker, retriever), rows in learned[learned["part"] == "fold"].groupby(
        ["corpus", "chunker", "retriever"]
    ):
        alone = rows[(rows["choice"] == "component alone") & (rows["weight"] > 0)]["component"]
        if len(alone) == rows["fold"].nunique() and alone.nunique() == 1:
            component = alone.iloc[0]
            of_chunker = summary[(summary.corpus == corpus) & (summary.chunker == chunker)].set_index(
                "retriever"
            )
            same = (of_chunker.loc[retriever, metrics] == of_chunker.loc[component, metrics]).all()
            said = f"`{chunker}` / `{retriever}`: {component} alone in {len(alone)} of {len(alone)} folds"
            assert said + (f", so its row equals `{component}`'s" if same else "") in lines


# --------------------------------------------------------------------------
# Held-out answers beside the development ones
# --------------------------------------------------------------------------


def test_the_held_out_rounds_stand_beside_the_development_questions_in_the_headline():
    heldout = pd.read_csv(RESULTS / "answers_heldout.csv")
    line = heldout_headline(heldout, "reader")
    single = heldout[(heldout["group"] == "single_document") & (heldout["generator"] == "reader")]
    assert set(single["questions_file"]) > {"development"}
    for row in single.itertuples(index=False):
        share = f"{row.correct} of {row.questions} ({row.correct / row.questions:.3f}"
        assert (
            f"{share}, {row.correct_share_low:.2f}-{row.correct_share_high:.2f}) on {row.questions_file}"
            in line
        )
        assert f"`{row.retriever}`" in line
    assert line.index("on development") < line.index("on heldout_questions")
    assert heldout_headline(heldout, "no_such_reader") == "" and heldout_headline(None, "reader") == ""


def test_the_prompt_budget_is_a_stated_setting_of_the_plan():
    import copy

    import yaml

    from rag.evaluation.recommendation import DEFAULT_PROMPT_BUDGET
    from rag.pipeline.config import ConfigError, build_plan
    from tests.workdir import FIXTURES, PROJECT

    schema = yaml.safe_load((PROJECT / "workflow/schemas/config.schema.yaml").read_text())
    tiny = yaml.safe_load((FIXTURES / "tiny" / "config.yaml").read_text())
    assert build_plan(copy.deepcopy(tiny), schema, FIXTURES / "tiny").prompt_budget == DEFAULT_PROMPT_BUDGET
    tiny["evaluation"]["prompt_budget"] = 800
    assert build_plan(copy.deepcopy(tiny), schema, FIXTURES / "tiny").prompt_budget == 800
    for bad in (0, "lots", 2.5):
        tiny["evaluation"]["prompt_budget"] = bad
        with pytest.raises(ConfigError, match=r"config\['evaluation'\]\['prompt_budget'\]"):
            build_plan(copy.deepcopy(tiny), schema, FIXTURES / "tiny")
