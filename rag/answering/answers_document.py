"""results/answers.md: what the readers got right, written from the answer tables, never by hand.

The answer tables are wide (one row per corpus, chunker, retriever, reader
and question group, with three shares and their intervals each), and the
questions a reader of the project asks of them are few: which setup quotes
the evidence most often, how often it is wrong instead of silent, whether
it refuses what cannot be answered, which threshold the cross-validation
chose, and whether the held-out questions agree. This module answers those
from ``answers_summary.csv``, ``reader_thresholds.csv`` and
``answers_heldout.csv``, so the numbers in the document are always the
tables' numbers.
"""

from __future__ import annotations

import pandas as pd

from rag.answering.answers import MULTI_DOCUMENT, SINGLE_DOCUMENT, UNANSWERABLE, at_grid_edge

_SETUP = ["corpus", "chunker", "retriever", "reader"]


def _share(count: int, total: int, low: float, high: float) -> str:
    return f"{count} of {total} ({count / total:.3f}, {low:.2f}-{high:.2f})" if total else "-"


def answer_rows(summary: pd.DataFrame) -> pd.DataFrame:
    """One row per setup: single-document correct, wrong and abstained, and unanswerable refused.

    Ordered best first: most correct, then fewest wrong, then by name, so the
    first row of each corpus is its best setup.
    """
    single = summary[summary["group"] == SINGLE_DOCUMENT].set_index(_SETUP)
    refused = summary[summary["group"] == UNANSWERABLE].set_index(_SETUP)
    rows = single[["questions", "correct", "wrong", "abstained", "correct_share_low", "correct_share_high"]]
    rows = rows.join(
        refused[["questions", "refused_unanswerable"]].rename(columns={"questions": "unanswerable"}),
        how="left",
    ).reset_index()
    return rows.sort_values(
        ["corpus", "correct", "wrong", "chunker", "retriever", "reader"],
        ascending=[True, False, True, True, True, True],
        kind="mergesort",
    ).reset_index(drop=True)


def _questions_in_all(summary: pd.DataFrame, setup: pd.Series) -> int:
    """Every question the setup answered: single-document, multi-document and unanswerable ones."""
    of_setup = summary[(summary[_SETUP] == setup[_SETUP]).all(axis=1)]
    groups = of_setup[of_setup["group"].isin([SINGLE_DOCUMENT, MULTI_DOCUMENT, UNANSWERABLE])]
    return int(groups["questions"].sum())


def _answer_table(rows: pd.DataFrame) -> list[str]:
    lines = [
        "| chunker | retriever | reader | single-document correct | wrong | abstained "
        "| unanswerable refused |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows.itertuples(index=False):
        refused = (
            f"{int(row.refused_unanswerable)} of {int(row.unanswerable)}"
            if pd.notna(row.unanswerable)
            else "-"
        )
        correct = _share(int(row.correct), int(row.questions), row.correct_share_low, row.correct_share_high)
        lines.append(
            f"| {row.chunker} | {row.retriever} | {row.reader} | {correct} | {int(row.wrong)} "
            f"| {int(row.abstained)} | {refused} |"
        )
    return lines


def _threshold_lines(thresholds: pd.DataFrame, corpus: str) -> list[str]:
    chosen = thresholds[(thresholds["corpus"] == corpus) & (thresholds["fold"] == "all")]
    lines = []
    for reader, of_reader in chosen.groupby("reader", sort=True):
        values = of_reader["threshold"]
        edge = [f"{value:.2f}" for value in sorted(set(values)) if at_grid_edge(value)]
        flag = (
            f" **At the edge of the threshold grid: {', '.join(edge)}** on "
            f"{sum(at_grid_edge(value) for value in values)} rankings; a choice there (never or always "
            "answering) did not carry from the grid, and a wider grid might move it."
            if edge
            else ""
        )
        lines.append(
            f"- `{reader}`: {values.min():.2f} to {values.max():.2f} over {len(values)} rankings "
            f"(`fold = all` in `reader_thresholds.csv`).{flag}"
        )
    return lines


def _heldout_table(heldout: pd.DataFrame) -> list[str]:
    keys = ["questions_file", "retriever", "generator", "threshold"]
    single = heldout[heldout["group"] == SINGLE_DOCUMENT].set_index(keys)
    unanswerable = heldout[heldout["group"] == UNANSWERABLE].set_index(keys)
    lines = [
        "| questions | retriever | generator | threshold | single-document correct | wrong | abstained "
        "| unanswerable refused |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for key, row in single.iterrows():
        refused = "-"
        if key in unanswerable.index:
            other = unanswerable.loc[key]
            refused = f"{int(other['abstained'])} of {int(other['questions'])}"
        correct = _share(
            int(row["correct"]), int(row["questions"]), row["correct_share_low"], row["correct_share_high"]
        )
        file, retriever, generator, threshold = key
        lines.append(
            f"| {file} | {retriever} | {generator} | {threshold:g} | {correct} | {int(row['wrong'])} "
            f"| {int(row['abstained'])} | {refused} |"
        )
    return lines


def answers_document(
    summary: pd.DataFrame, thresholds: pd.DataFrame, heldout: pd.DataFrame | None = None
) -> str:
    """The Markdown of results/answers.md."""
    lines = [
        "# Answers",
        "",
        "Written by the rule `answers_document` from `answers_summary.csv`, `reader_thresholds.csv`",
        "and `answers_heldout.csv`; do not edit. How the readers and the verdicts work:",
        "[docs/answers.md](../docs/answers.md).",
        "",
        "A question is answered correctly when the quoted sentence quotes its labelled evidence,",
        "wrongly when it quotes anything else, and abstained on when the best sentence scores below",
        "the threshold. The readers' thresholds are cross-validated (each question is answered at a",
        "threshold chosen without it); the extractive generator's is the configured one. Shares come",
        "with 95 % bootstrap intervals.",
    ]
    rows = answer_rows(summary)
    for corpus, of_corpus in rows.groupby("corpus", sort=True):
        best = of_corpus.iloc[0]
        chosen = thresholds[(thresholds[_SETUP] == best[_SETUP]).all(axis=1) & (thresholds["fold"] == "all")][
            "threshold"
        ]
        at = f" Its threshold, chosen on every question, is {chosen.iloc[0]:.2f}." if len(chosen) else ""
        lines += [
            "",
            f"## {corpus}",
            "",
            f"Best: {best.chunker} + {best.retriever} + {best.reader}, which quotes the evidence for "
            f"{int(best.correct)} of {int(best.questions)} single-document questions "
            f"({best.correct / best.questions:.3f}), answers {int(best.wrong)} wrongly and abstains on "
            f"{int(best.abstained)}.{at} The headline counts the single-document questions only: "
            f"{int(best.questions)} of the {_questions_in_all(summary, best)} questions; the others are "
            "answered from several documents or not at all (`answers_summary.csv` has every group).",
            "",
            *_answer_table(of_corpus),
            "",
            "Thresholds chosen on every question:",
            "",
            *_threshold_lines(thresholds, corpus),
        ]
    if heldout is not None and len(heldout):
        lines += [
            "",
            "## `rag ask` on the development and the held-out questions",
            "",
            "Through `rag ask`'s own path (its chunker, retrievers, reading pool and default",
            "thresholds). The held-out questions were written after the reader was frozen and were",
            "never used to tune it.",
            "",
            *_heldout_table(heldout),
        ]
    return "\n".join(lines) + "\n"
