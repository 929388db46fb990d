"""results/answers.md: the best setup, every row and the held-out table come from the tables."""

from __future__ import annotations

import pandas as pd

from rag.measuring.answers_document import answer_rows, answers_document

SETUP = {"corpus": "c", "chunker": "k"}


def summary_rows(retriever: str, reader: str, correct: int, wrong: int, refused: int) -> list[dict]:
    base = {**SETUP, "retriever": retriever, "reader": reader}
    return [
        {
            **base,
            "group": "single_document",
            "questions": 10,
            "correct": correct,
            "wrong": wrong,
            "abstained": 10 - correct - wrong,
            "correct_share_low": correct / 20,
            "correct_share_high": min(1.0, correct / 8),
            "refused_unanswerable": 0,
        },
        {
            **base,
            "group": "unanswerable",
            "questions": 3,
            "correct": 0,
            "wrong": 3 - refused,
            "abstained": refused,
            "correct_share_low": 0.0,
            "correct_share_high": 0.0,
            "refused_unanswerable": refused,
        },
    ]


SUMMARY = pd.DataFrame(
    summary_rows("bm25", "extractive", 5, 4, 1)
    + summary_rows("bm25", "reader", 7, 2, 3)
    + summary_rows("dense", "reader", 7, 1, 2)
)
THRESHOLDS = pd.DataFrame(
    [
        {**SETUP, "retriever": "dense", "reader": "reader", "fold": "all", "threshold": 0.75},
        {**SETUP, "retriever": "bm25", "reader": "reader", "fold": "all", "threshold": 0.9},
        {**SETUP, "retriever": "bm25", "reader": "reader", "fold": "0", "threshold": 2.0},
    ]
)


def test_rows_are_ordered_by_correct_then_fewest_wrong():
    rows = answer_rows(SUMMARY)
    assert list(zip(rows.retriever, rows.reader, strict=True)) == [
        ("dense", "reader"),
        ("bm25", "reader"),
        ("bm25", "extractive"),
    ]
    assert list(rows.refused_unanswerable) == [2, 3, 1]


def test_the_document_names_the_best_setup_its_threshold_and_every_row():
    document = answers_document(SUMMARY, THRESHOLDS)
    assert "Best: k + dense + reader, which quotes the evidence for 7 of 10" in document
    assert (
        "answers 1 wrongly and abstains on 2. Its threshold, chosen on every question, is 0.75." in document
    )
    assert "| k | bm25 | extractive | 5 of 10 (0.500, 0.25-0.62) | 4 | 1 | 1 of 3 |" in document
    assert "The headline counts the single-document questions only: 10 of the 13 questions" in document
    # Only fold "all" counts: the fold-0 threshold of 2.0 is not reported.
    assert "- `reader`: 0.75 to 0.90 over 2 rankings (`fold = all` in `reader_thresholds.csv`).\n" in document
    # A threshold chosen at the top of its grid (2.00: never answering) is flagged.
    at_top = THRESHOLDS.assign(threshold=[0.75, 2.0, 2.0])
    assert "**At the edge of the threshold grid: 2.00** on 1 rankings" in answers_document(SUMMARY, at_top)
    assert "held-out" not in document
    # Why its best can differ from results/README.md's recommendation: it ranks only the answer pairs.
    assert "This ranks the 2 (chunker, retriever) pairs the answer experiments run (`answers`" in document
    assert "[README.md](README.md) recommends from the whole retrieval grid" in document


def test_the_heldout_table_pairs_single_document_and_unanswerable_rows():
    keys = {"questions_file": "heldout", "retriever": "bm25_lsa_ivf", "generator": "reader", "threshold": 0.8}
    heldout = pd.DataFrame(
        [
            {
                **keys,
                "group": "single_document",
                "questions": 17,
                "correct": 15,
                "wrong": 0,
                "abstained": 2,
                "correct_share_low": 0.7,
                "correct_share_high": 1.0,
            },
            {
                **keys,
                "group": "unanswerable",
                "questions": 3,
                "correct": 0,
                "wrong": 2,
                "abstained": 1,
                "correct_share_low": 0.0,
                "correct_share_high": 0.0,
            },
        ]
    )
    document = answers_document(SUMMARY, THRESHOLDS, heldout)
    assert (
        "| heldout | bm25_lsa_ivf | reader | 0.8 | 15 of 17 (0.882, 0.70-1.00) | 0 | 2 | 1 of 3 |" in document
    )


def test_the_committed_document_is_the_one_the_tables_give():
    from pathlib import Path

    results = Path(__file__).parents[3] / "results"
    names = ["llm_answers_summary", "llm_closed_book", "citation_check", "verdicts", "reader_rules"]
    names += ["citation_accuracy", "judge_calibration"]
    optional = tuple(
        pd.read_csv(results / f"{name}.csv") if (results / f"{name}.csv").exists() else None for name in names
    )
    document = answers_document(
        pd.read_csv(results / "answers_summary.csv"),
        pd.read_csv(results / "reader_thresholds.csv", dtype={"fold": str}),
        pd.read_csv(results / "answers_heldout.csv"),
        optional,
    )
    assert (results / "answers.md").read_text() == document


def test_the_judges_section_shows_the_held_out_rows_all_answers_first():
    from rag.measuring.answers_document import llm_sections

    def row(judge, labels, group, threshold, kappa):
        return {
            "judge": judge,
            "task": "correct",
            "labels": labels,
            "answers_of": group,
            "threshold": threshold,
            "labelled": 10,
            "labelled_yes": 4,
            "judge_yes": 5,
            "no_verdict": 1,
            "agreement": 0.7,
            "agreement_low": 0.4,
            "agreement_high": 0.9,
            "kappa": kappa,
            "kappa_low": kappa - 0.3,
            "kappa_high": kappa + 0.2,
        }

    calibration = pd.DataFrame(
        [
            row("qwen_judge", "heldout", "qwen", 0.4, 0.1),
            row("qwen_judge", "heldout", "all", 0.4, 0.25),
            row("qwen_judge", "development", "all", 0.4, 0.99),
            row("deterministic", "heldout", "all", float("nan"), 0.5),
        ]
    )
    document = "\n".join(llm_sections(None, None, None, None, None, None, calibration))
    assert "## How far can a judge be trusted?" in document
    assert (
        "| qwen_judge | correct | all | 10 | 4 | 5 | 1 | 0.40 | 0.70 (0.40 to 0.90) | 0.25 (-0.05 to 0.45) |"
        in document
    )
    assert "| deterministic | correct | all | 10 | 4 | 5 | 1 | verdict |" in document
    # The development rows chose the threshold: they are not the report.
    assert "0.99" not in document
    assert document.index("| qwen_judge | correct | all |") < document.index(
        "| qwen_judge | correct | qwen |"
    )
    assert llm_sections(None, None, None, None, None, None, calibration.iloc[:0]) == []


def test_the_language_model_sections_quote_their_tables():
    from rag.measuring.llm_tables import (
        closed_book_comparisons,
        gather_answer_files,
        judge_llm_answers,
        summarize_llm_answers,
    )
    from rag.measuring.verdicts import NOT_CHECKED, verdicts_table
    from tests.unit.measuring.test_llm_tables import BM25, CHUNKS, CLOSED, answer_file

    files = [("b", answer_file("sentences100", "bm25", BM25)), ("n", answer_file("none", "none", CLOSED))]
    judged = judge_llm_answers(gather_answer_files(files), CHUNKS)
    rules = pd.DataFrame(
        [
            {"rule_off": "none off", "questions_file": "development", "correct": 9, "wrong": 2, "helps": 0},
            {"rule_off": "synonyms", "questions_file": "development", "correct": 7, "wrong": 3, "helps": 3},
        ]
    )
    check = pd.DataFrame(
        [
            {
                "split": split,
                "rule": "anchored",
                "questions": "all",
                "generator": "all",
                "retriever": "all",
                "answers": 10,
                "citing": 8,
                "unsupported": 4,
                "flagged": 5,
                "flagged_unsupported": 3,
                "precision_low": 0.2,
                "precision_high": 0.9,
                "recall_low": 0.3,
                "recall_high": 0.95,
            }
            for split in ("development", "heldout")
        ]
    )
    tables = (
        summarize_llm_answers(judged),
        closed_book_comparisons(judged),
        check,
        verdicts_table(judged, None),
        rules,
    )
    document = answers_document(SUMMARY, THRESHOLDS, None, tables)
    summary = tables[0].set_index("retriever").loc["bm25"]
    correct = f"3 of 4 ({3 / 4:.3f}, {summary.correct_share_low:.2f}-{summary.correct_share_high:.2f})"
    assert f"| development | smollm2 | sentences100 | bm25 | 5 | {correct} |" in document
    assert "| development | smollm2 | none | none | 5 | 2 of 4 (0.500," in document
    # The held-out row (the measurement) comes before the development one (the design set).
    heldout = (
        "| heldout | anchored | all | all | all | 10 | 8 | 4 | 5 | 3 of 5 (0.600, 0.20-0.90) | 3 of 4 (0.750,"
    )
    assert heldout in document
    assert document.index(heldout) < document.index("| development | anchored | all |")
    assert NOT_CHECKED in document
    assert "| synonyms | 7 correct, 3 wrong (helps +3) |" in document
