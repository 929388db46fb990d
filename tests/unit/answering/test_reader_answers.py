"""The reader in the answer experiments: verdicts, the cross-validated threshold, bootstrap intervals."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from rag.answering.answers import (
    GenerationSettings,
    answer_and_judge,
    answer_question_by_readers,
    reader_answers_frame,
    reader_outputs,
)
from rag.answering.config_checks import canonical_reader
from rag.answering.verification import check_answer, check_responsive, describe_verdicts, verdicts
from rag.chunking import Chunk
from rag.evaluation.statistics import bootstrap_interval
from rag.kinds import ConfigError
from rag.labels import Question
from rag.measuring.offline_tables import summarize_answers
from rag.measuring.thresholds import (
    THRESHOLD_GRID,
    apply_thresholds,
    choose_threshold,
    cross_validated_thresholds,
    fold_of_questions,
    net_correct,
)

TITAN_TEXT = (
    "Pioneer 11 measured the surface temperature of Titan in 1979. "
    "Titan is the largest moon of Saturn and is wrapped in haze."
)
TITAN = Chunk("t1", "saturn", "Saturn", "Titan", 0, len(TITAN_TEXT), TITAN_TEXT)
TITAN_QUESTION = Question("titan", "What is the surface temperature of Titan?", "unanswerable", False, ())
IDF = {"surface": 1.0, "temperature": 1.5, "titan": 2.0, "largest": 1.0, "moon": 0.5}


def test_the_titan_answer_is_faithful_and_not_responsive():
    """The spec's pitfall: a quotation that repeats the question passes the citation check."""
    settings = GenerationSettings(k=1, threshold=0.5)
    record = answer_and_judge(TITAN_QUESTION, [TITAN], IDF, settings)
    assert record.answered and record.answer.startswith("Pioneer 11 measured")
    assert record.faithful is True and record.citation_passed is True
    assert record.responsive is False
    assert record.expected_type == "temperature"
    frame = reader_answers_frame([record], corpus="c", chunker="x", retriever="r", reader="extractive")
    assert frame.loc[0, "faithful"] and not frame.loc[0, "responsive"]


def test_the_reader_scores_the_titan_sentence_below_its_own_coverage():
    reader = GenerationSettings(k=1, threshold=-math.inf, reader="reader")
    spec = GenerationSettings(k=1, threshold=-math.inf)
    read = answer_and_judge(TITAN_QUESTION, [TITAN], IDF, reader)
    quoted = answer_and_judge(TITAN_QUESTION, [TITAN], IDF, spec)
    assert read.score < quoted.score  # the missing temperature costs the type penalty
    assert read.best_responsive is False


def test_readers_answered_together_match_each_answered_alone():
    """One read_answers job answers every reader of a ranking: one prompt, the same records."""
    readers = [
        GenerationSettings(k=1, threshold=-math.inf, reader="reader"),
        GenerationSettings(k=1, threshold=0.5),
        GenerationSettings(k=1, threshold=math.inf, reader="reader"),
    ]
    together = answer_question_by_readers(TITAN_QUESTION, [TITAN], IDF, readers, count_cl100k=len)
    alone = [
        answer_and_judge(TITAN_QUESTION, [TITAN], IDF, settings, count_cl100k=len) for settings in readers
    ]
    assert together == alone
    assert together[0].answered and not together[2].answered


def test_readers_answered_together_share_the_prompt_settings():
    readers = [GenerationSettings(k=1, reader="reader"), GenerationSettings(k=2, reader="reader")]
    with pytest.raises(ValueError, match="must share k, budget and token counter"):
        answer_question_by_readers(TITAN_QUESTION, [TITAN], IDF, readers)
    with pytest.raises(ValueError, match="at least one"):
        answer_question_by_readers(TITAN_QUESTION, [TITAN], IDF, [])


def test_each_reader_writes_the_answer_file_named_after_it():
    readers = [{"name": "reader", "kind": "reader"}, {"name": "reader_minilm", "kind": "reader"}]
    files = ["a/bm25.reader.parquet", "a/bm25.reader_minilm.parquet"]
    assert reader_outputs(readers, files) == files
    extractive = [{"name": "extractive", "kind": "extractive"}]
    assert reader_outputs(extractive, ["a/bm25.parquet"]) == ["a/bm25.parquet"]
    with pytest.raises(ValueError, match="must end in .reader.parquet"):
        reader_outputs(readers, files[::-1])
    with pytest.raises(ValueError, match="2 readers"):
        reader_outputs(readers, files[:1])


def test_verdicts_in_plain_words():
    answer = "Pioneer 11 measured the surface temperature of Titan in 1979 [1]."
    check = check_answer(answer, {1: TITAN_TEXT})
    result = verdicts(check, answer, TITAN_QUESTION.text, {1: "Saturn › Titan"})
    assert result.faithful and not result.responsive
    lines = describe_verdicts(result)
    assert lines[0].startswith("Source check passed: the cited source contains the answer's words")
    assert lines[1].startswith("Type check FAILED: the question asks for a temperature")
    assert not any(line.startswith(("Faithful", "Responsive")) for line in lines)
    assert not any("supported" in line for line in lines)
    assert check_responsive("Its surface is about -179 °C [1].", TITAN_QUESTION.text)


def test_settings_refuse_an_unknown_reader_and_a_similarity_for_the_spec_generator():
    with pytest.raises(ValueError, match="unknown reader"):
        GenerationSettings(reader="oracle")
    with pytest.raises(ValueError, match="extractive"):
        GenerationSettings(similarity=lambda question, sentences: [0.0] * len(sentences))


def brute_force_threshold(scores, quotes, grid):
    best = max(
        grid,
        key=lambda t: (
            sum(s >= t and q for s, q in zip(scores, quotes, strict=True)) * 2 - sum(s >= t for s in scores),
            t,
        ),
    )
    return best


@pytest.mark.parametrize("seed", range(5))
def test_choose_threshold_maximises_correct_minus_wrong(seed):
    rng = np.random.default_rng(seed)
    scores = np.round(rng.uniform(-0.5, 2.0, 40), 4)
    quotes = rng.uniform(size=40) < scores / 2.0
    chosen = choose_threshold(scores, quotes)
    assert chosen == brute_force_threshold(scores.tolist(), quotes.tolist(), THRESHOLD_GRID)
    correct, wrong = net_correct(scores, quotes, chosen)
    for threshold in THRESHOLD_GRID:
        other_correct, other_wrong = net_correct(scores, quotes, threshold)
        assert other_correct - other_wrong <= correct - wrong


def test_folds_are_seeded_balanced_and_shared_by_every_retriever():
    ids = [f"q{index:02d}" for index in range(23)]
    folds = fold_of_questions(ids, 5, seed=0)
    assert folds == fold_of_questions(list(reversed(ids)), 5, seed=0)
    assert sorted(np.bincount(list(folds.values()))) == [4, 4, 5, 5, 5]
    assert folds != fold_of_questions(ids, 5, seed=1)
    with pytest.raises(ValueError, match="2 folds"):
        fold_of_questions(ids, 1, seed=0)


def answer_rows(scores, quotes, retriever="r"):
    return pd.DataFrame(
        {
            "corpus": "c",
            "chunker": "x",
            "retriever": retriever,
            "reader": "reader",
            "question_id": [f"q{index:02d}" for index in range(len(scores))],
            "score": scores,
            "best_quoted_piece": [0 if quote else None for quote in quotes],
        }
    )


def test_each_fold_gets_a_threshold_chosen_without_its_questions():
    rng = np.random.default_rng(3)
    scores = np.round(rng.uniform(0, 2, 30), 3)
    quotes = scores > 0.8
    frame = pd.concat([answer_rows(scores, quotes), answer_rows(scores, ~quotes, "s")], ignore_index=True)
    keys = ["corpus", "chunker", "retriever", "reader"]
    thresholds, table = cross_validated_thresholds(frame, keys, folds=3, seed=0)
    folds = frame["question_id"].map(fold_of_questions(frame["question_id"], 3, 0))
    for (retriever, fold), rows in frame.groupby([frame["retriever"], folds]):
        training = frame[(frame["retriever"] == retriever) & (folds != fold)]
        expected = choose_threshold(training["score"], training["best_quoted_piece"].notna())
        assert (thresholds[rows.index] == expected).all()
    overall = table[table["fold"] == "all"].set_index("retriever")["threshold"]
    assert overall["r"] == choose_threshold(scores, quotes)
    assert len(table) == 2 * (3 + 1)
    # Where every answer above 0.8 is wrong, nothing is worth answering: the top of the grid, flagged.
    inverted = table[table["retriever"] == "s"]
    assert (inverted["threshold"] == max(THRESHOLD_GRID)).all() and inverted["at_grid_edge"].all()
    inside = table[table["retriever"] == "r"]
    assert (
        not inside["at_grid_edge"].any() and inside["threshold"].between(-0.5, 2.0, inclusive="neither").all()
    )


def test_apply_thresholds_answers_from_the_best_columns():
    frame = pd.DataFrame(
        {
            "score": [0.9, 0.2, math.nan],
            "best_sentence": ["A fact.", "Another fact.", None],
            "best_source": pd.array([1, 2, None], dtype="Int64"),
            "best_quoted_piece": pd.array([0, None, None], dtype="Int64"),
            "best_faithful": pd.array([True, True, None], dtype="boolean"),
            "best_responsive": pd.array([True, False, None], dtype="boolean"),
            "best_support": [1.0, 0.8, math.nan],
        }
    )
    result = apply_thresholds(frame, pd.Series([0.5, 0.1, 0.0]))
    assert result["answered"].tolist() == [True, True, False]
    assert result["answer"].tolist()[:2] == ["A fact [1].", "Another fact [2]."]
    assert result["quotes_evidence"].tolist() == [True, False, False]
    assert result["responsive"].tolist()[:2] == [True, False] and pd.isna(result["responsive"][2])
    assert result["answer"][2] == "The sources are insufficient to answer the question."


def test_bootstrap_interval_is_seeded_and_brackets_the_share():
    outcomes = [True] * 30 + [False] * 10
    low, high = bootstrap_interval(outcomes)
    assert (low, high) == bootstrap_interval(outcomes)
    assert low < 0.75 < high and 0.55 < low and high < 0.9
    assert bootstrap_interval([True] * 8) == (1.0, 1.0)
    assert all(math.isnan(value) for value in bootstrap_interval([]))
    # Against an independent normal approximation: the widths agree roughly.
    normal = 1.96 * math.sqrt(0.75 * 0.25 / 40)
    assert high - low == pytest.approx(2 * normal, rel=0.25)


def test_summary_counts_wrong_answers_and_the_responsive_rate():
    frame = pd.DataFrame(
        {
            "corpus": "c",
            "chunker": "x",
            "retriever": "r",
            "reader": "reader",
            "question_id": ["a", "b", "c", "d"],
            "answerable": pd.array([True, True, True, False], dtype="boolean"),
            "group": ["single_document"] * 3 + ["unanswerable"],
            "answered": pd.array([True, True, False, True], dtype="boolean"),
            "quotes_evidence": pd.array([True, False, False, False], dtype="boolean"),
            "pieces_in_prompt": [1, 1, 0, 0],
            "evidence_pieces": [1, 1, 1, 0],
            "citation_passed": pd.array([True, True, None, True], dtype="boolean"),
            "responsive": pd.array([True, False, None, True], dtype="boolean"),
            "answer": ["Titan [1].", "Rhea [1].", "The sources are insufficient.", "Mimas [2]."],
            "prompt_tokens": [10, 10, 10, 10],
            "prompt_tokens_cl100k": pd.array([None] * 4, dtype="Int64"),
        }
    )
    summary = summarize_answers(frame, ["corpus", "chunker", "retriever", "reader"]).set_index("group")
    assert summary.loc["all", "wrong"] == 2 and summary.loc["all", "correct"] == 1
    assert summary.loc["unanswerable", "answered_unanswerable"] == 1
    assert summary.loc["all", "responsive_rate"] == pytest.approx(2 / 3)
    assert summary.loc["single_document", "responsive_rate"] == pytest.approx(1 / 2)
    for column in ("correct_share", "wrong_share", "abstained_share", "responsive_rate"):
        assert (
            summary.loc["all", f"{column}_low"]
            <= summary.loc["all", column]
            <= summary.loc["all", f"{column}_high"]
        )


def test_reader_config_defaults_and_mistakes():
    reader = canonical_reader({"similarity": "none"})
    assert reader == {"similarity": "none", "folds": 5, "seed": 0, "names": ["reader"]}
    with pytest.raises(ConfigError, match=r"\['similarity'\]"):
        canonical_reader({"similarity": "bert"})
    with pytest.raises(ConfigError, match=r"\['folds'\]"):
        canonical_reader({"folds": 1})
