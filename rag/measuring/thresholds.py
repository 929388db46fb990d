"""Choosing the reader's abstention threshold by cross-validation, and applying it.

The readers (:mod:`rag.answering.reader`) answer when their best sentence's
score reaches a threshold. The threshold is chosen here, on other questions
than the ones it is applied to: per fold of a seeded split, the grid
threshold that maximises correct minus wrong answers on the other folds, and
a holdout share that chooses nothing. The answers are then recomputed at the
chosen thresholds from the ``best_*`` columns, without answering again.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

import pandas as pd

from rag.answering.extractive import ABSTENTION_TEXT, cite

# Thresholds tried: -0.5 to 2.0 in steps of 0.05 (rounded, so they print as written).
THRESHOLD_GRID: tuple[float, ...] = tuple(round(step * 0.05, 2) for step in range(-10, 41))


DEFAULT_FOLDS = 5


DEFAULT_FOLD_SEED = 0


def net_correct(scores, quotes, threshold: float) -> tuple[int, int]:
    """(correct, wrong) answers at ``threshold``: a question is answered when its best score
    reaches it (NaN never does), correct when the best sentence quotes evidence."""
    import numpy as np

    scores = np.asarray(scores, dtype=np.float64)
    quotes = np.asarray(quotes, dtype=bool)
    answered = scores >= threshold
    return int((answered & quotes).sum()), int((answered & ~quotes).sum())


def choose_threshold(scores, quotes, grid: Sequence[float] = THRESHOLD_GRID) -> float:
    """The grid threshold that maximises correct minus wrong answers; ties go to the higher
    threshold, which refuses more at the same net count."""
    best_threshold, best_net = None, None
    for threshold in sorted(grid):
        correct, wrong = net_correct(scores, quotes, threshold)
        if best_net is None or correct - wrong >= best_net:
            best_threshold, best_net = threshold, correct - wrong
    if best_threshold is None:
        raise ValueError("the threshold grid is empty")
    return float(best_threshold)


def at_grid_edge(threshold: float, grid: Sequence[float] = THRESHOLD_GRID) -> bool:
    """Whether a chosen threshold is the lowest or highest of its grid: a wider grid might move it.

    At the top the reader refuses everything (no threshold inside the grid
    was worth answering at); at the bottom it answers everything. Either way
    the choice says more about the grid than about the questions.
    """
    return threshold in (min(grid), max(grid))


def fold_of_questions(question_ids: Iterable[str], folds: int, seed: int) -> dict[str, int]:
    """A seeded assignment of questions to ``folds`` folds of (nearly) equal size.

    The same question falls into the same fold for every retriever, so the
    retrievers are compared on the same splits.
    """
    import numpy as np

    if isinstance(folds, bool) or not isinstance(folds, int) or folds < 2:
        raise ValueError(f"cross-validation needs at least 2 folds, got {folds!r}")
    ordered = sorted(set(question_ids))
    permutation = np.random.default_rng(seed).permutation(len(ordered))
    return {ordered[index]: position % folds for position, index in enumerate(permutation)}


HOLDOUT_FOLD = "holdout"


def held_out_answers(frame: pd.DataFrame, fractions: Mapping[str, float]) -> pd.Series:
    """Which answers belong to a corpus's ``holdout`` share (rag.evaluation.holdout), per row.

    The share is drawn from the answerable questions, as the learned fusion
    draws it, so the same questions are held out of every choice.
    """
    from rag.evaluation.holdout import holdout_questions

    held = pd.Series(False, index=frame.index, dtype=bool)
    for corpus, fraction in fractions.items():
        of_corpus = frame["corpus"] == corpus
        answerable = frame.loc[of_corpus & frame["answerable"].astype(bool), "question_id"]
        chosen = set(holdout_questions(answerable, fraction)) if fraction else set()
        held |= of_corpus & frame["question_id"].isin(chosen)
    return held


# The columns of the table of threshold choices after its key columns (:func:`_threshold_row`).
THRESHOLD_COLUMNS = ("fold", "questions", "threshold", "at_grid_edge", "correct", "wrong")


def threshold_table(choices: Sequence[pd.DataFrame], keys: Sequence[str]) -> pd.DataFrame:
    """The tables of threshold choices as one; with no cross-validated generator, the empty table."""
    if not choices:
        return pd.DataFrame(columns=[*keys, *THRESHOLD_COLUMNS])
    return pd.concat(choices, ignore_index=True)


def _threshold_row(key: dict, fold: str, scores, quotes, chosen: float, grid: Sequence[float]) -> dict:
    """One row of the table of choices: the threshold and what it gets on ``scores``."""
    correct, wrong = net_correct(scores, quotes, chosen)
    return {
        **key,
        "fold": fold,
        "questions": len(scores),
        "threshold": chosen,
        "at_grid_edge": at_grid_edge(chosen, grid),
        "correct": correct,
        "wrong": wrong,
    }


def cross_validated_thresholds(
    frame: pd.DataFrame,
    keys: Sequence[str],
    folds: int = DEFAULT_FOLDS,
    seed: int = DEFAULT_FOLD_SEED,
    grid: Sequence[float] = THRESHOLD_GRID,
    held_out: pd.Series | None = None,
) -> tuple[pd.Series, pd.DataFrame]:
    """Each answer's threshold chosen without its own question, and the table of choices.

    For every ``keys`` group (one reader over one ranking) and every fold,
    :func:`choose_threshold` picks the threshold on the other folds'
    questions and it is applied to this fold's: the counts it produces are
    what a threshold chosen in advance would get on new questions. The
    table has one row per fold and a row ``fold = "all"`` with the threshold
    chosen on every question, the one to use from then on; ``at_grid_edge``
    flags a choice at either end of the grid (:func:`at_grid_edge`).
    ``held_out`` (per row, :func:`held_out_answers`) marks a holdout share:
    those questions choose nothing, not even the ``all`` threshold; they get
    the ``all`` threshold and a row ``fold = "holdout"`` of their own, so
    their labels cannot move any choice.
    """
    held = pd.Series(False, index=frame.index) if held_out is None else held_out.reindex(frame.index)
    held = held.fillna(False).astype(bool)
    choosing = frame[~held]
    fold = choosing["question_id"].map(fold_of_questions(choosing["question_id"], folds, seed))
    thresholds = pd.Series(math.nan, index=frame.index, dtype="float64")
    rows = []
    for values, rows_of_key in frame.groupby(list(keys), sort=True):
        scores = rows_of_key["score"].to_numpy(dtype=float)
        quotes = rows_of_key["best_quoted_piece"].notna().to_numpy()
        out = held.loc[rows_of_key.index].to_numpy()
        key = dict(zip(keys, values, strict=True))
        for held_fold in range(folds):
            test = (fold.reindex(rows_of_key.index) == held_fold).to_numpy()
            chosen = choose_threshold(scores[~test & ~out], quotes[~test & ~out], grid)
            thresholds.loc[rows_of_key.index[test]] = chosen
            rows.append(_threshold_row(key, str(held_fold), scores[test], quotes[test], chosen, grid))
        chosen = choose_threshold(scores[~out], quotes[~out], grid)
        rows.append(_threshold_row(key, "all", scores[~out], quotes[~out], chosen, grid))
        if out.any():
            thresholds.loc[rows_of_key.index[out]] = chosen
            rows.append(_threshold_row(key, HOLDOUT_FOLD, scores[out], quotes[out], chosen, grid))
    return thresholds, pd.DataFrame(rows)


def apply_thresholds(frame: pd.DataFrame, thresholds: pd.Series) -> pd.DataFrame:
    """The answers as they are at per-row ``thresholds``: the best sentence answered or withheld.

    Every column that follows from answering (the answer text, citation,
    correctness and both verdicts) is recomputed from the ``best_*`` columns,
    so no question needs answering again.
    """
    result = frame.copy()
    threshold = thresholds.reindex(frame.index).astype("float64")
    answered = (frame["score"].astype("float64") >= threshold).fillna(False).astype(bool)
    result["threshold"] = threshold
    result["answered"] = pd.array(answered, dtype="boolean")
    result["abstained"] = pd.array(~answered, dtype="boolean")
    result["answer"] = [
        cite(sentence, int(source)) if given else ABSTENTION_TEXT
        for sentence, source, given in zip(
            frame["best_sentence"], frame["best_source"], answered, strict=True
        )
    ]
    result["cited_source"] = frame["best_source"].where(answered).astype("Int64")
    result["quotes_evidence"] = pd.array(answered & frame["best_quoted_piece"].notna(), dtype="boolean")
    for column, source in (
        ("citation_passed", "best_faithful"),
        ("faithful", "best_faithful"),
        ("responsive", "best_responsive"),
    ):
        result[column] = frame[source].where(answered).astype("boolean")
    result["support"] = frame["best_support"].where(answered).astype("float64")
    return result
