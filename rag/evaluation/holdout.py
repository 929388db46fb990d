"""The held-out share of the labelled questions: questions no choice is ever made on.

Cross-validation keeps each question's own labels out of the choice that
ranks it, but every choice is still made on the same collection, with its
author's habits. A ``holdout`` fraction set aside once gives a user a check
on unseen questions of their own corpus: learned weights, reader thresholds
and abstention are chosen without them, and their scores are reported apart,
so one sees whether a choice carried.

Which questions are held out depends on their ids alone (a digest of each
id, in order), never on their labels or on the order of the file, so
rewriting a held-out question's labels cannot move it in or out of the
holdout, and adding a question moves no other one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

# The largest share that may be held out: the rest must still support a choice.
MAX_HOLDOUT = 0.5


def _digest(question_id: str) -> str:
    return hashlib.sha256(question_id.encode("utf-8")).hexdigest()


def holdout_questions(question_ids: Iterable[str], fraction: float) -> list[str]:
    """The ``round(fraction * n)`` questions with the lowest id digests, sorted by id."""
    if not 0 <= fraction <= MAX_HOLDOUT:
        raise ValueError(f"holdout must lie between 0 and {MAX_HOLDOUT}, got {fraction!r}")
    ordered = sorted(set(question_ids), key=lambda question_id: (_digest(question_id), question_id))
    return sorted(ordered[: round(fraction * len(ordered))])


# A held-out share's rows are reported as a corpus of their own, named so.
HOLDOUT_SUFFIX = ":holdout"


def with_holdout_rows(question_values, fractions: dict[str, float]):
    """Per-question values plus a copy of each corpus's held-out questions under ``<corpus>:holdout``.

    ``question_values`` is the long table of rag.evaluation.significance
    (corpus, chunker, retriever, question_id, metric, k, value) and
    ``fractions`` each corpus's ``holdout``. The copies go through the same
    intervals, tests and summary as every corpus, so a user reads the
    held-out questions' figures beside the whole corpus's: a choice that
    carried scores alike on both.
    """
    import pandas as pd

    parts = [question_values]
    for corpus, fraction in sorted(fractions.items()):
        if not fraction:
            continue
        of_corpus = question_values[question_values["corpus"] == corpus]
        held = set(holdout_questions(of_corpus["question_id"].unique(), fraction))
        rows = of_corpus[of_corpus["question_id"].isin(held)]
        parts.append(rows.assign(corpus=corpus + HOLDOUT_SUFFIX))
    return pd.concat(parts, ignore_index=True)
