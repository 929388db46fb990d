"""The verdicts measured: how often a "faithful and responsive" answer is actually correct.

``rag ask`` and the answer tables call an answer faithful when its cited
source holds the answer's words and numbers, and responsive when it gives a
value of the type the question asks for. Neither checks that the value is
the one asked for: "Hellas Planitia, an impact basin roughly 2,300 km in
diameter" passes both for "What is the diameter of Mars?". This module counts,
for any generator's answers, how many that pass both verdicts are correct by
the reference answers (:mod:`rag.answering.correctness`), so the verdicts'
worth is a number in the tables rather than an assumption.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from rag.answering.correctness import CORRECT, NOT_JUDGED
from rag.evaluation.statistics import bootstrap_interval

# What the verdicts leave unchecked, in the words rag ask and the tables use.
NOT_CHECKED = (
    "Faithful checks only that the cited source holds the answer's words and numbers, and "
    "responsive only that a value of the expected type is present, not that it is the asked one."
)


def verdict_counts(answered, faithful, responsive, outcomes) -> dict[str, float]:
    """Answers passing both verdicts, how many of them are correct, and that share with its interval.

    All four are per-question sequences: whether answered, the two verdicts
    (None or NaN for abstentions) and the correctness outcome. Answers whose
    question has no reference answer (``not_judged``) are counted apart and
    left out of the share.
    """
    answered = np.asarray(answered, dtype=bool)
    passed = answered & _true(faithful) & _true(responsive)
    outcomes = np.asarray(outcomes, dtype=object)
    judged = passed & (outcomes != NOT_JUDGED)
    correct = (outcomes == CORRECT)[judged]
    low, high = bootstrap_interval(correct)
    return {
        "faithful_and_responsive": int(passed.sum()),
        "faithful_and_responsive_not_judged": int((passed & (outcomes == NOT_JUDGED)).sum()),
        "faithful_and_responsive_correct": int(correct.sum()),
        "verdicts_correct_share": float(correct.mean()) if correct.size else float("nan"),
        "verdicts_correct_share_low": low,
        "verdicts_correct_share_high": high,
    }


def _true(values) -> np.ndarray:
    """True where a verdict is True; None, NaN and pandas' NA count as not passed."""
    return np.array([False if pd.isna(value) else bool(value) for value in values], dtype=bool)


VERDICT_COLUMNS = [
    "generator",
    "questions",
    "setup",
    "answered",
    "faithful_and_responsive",
    "faithful_and_responsive_not_judged",
    "faithful_and_responsive_correct",
    "verdicts_correct_share",
    "verdicts_correct_share_low",
    "verdicts_correct_share_high",
    "not_checked",
]


def verdicts_table(llm_judged: pd.DataFrame, heldout: pd.DataFrame | None) -> pd.DataFrame:
    """results/verdicts.csv: per generator, question set and setup, how often passing both verdicts
    means correct.

    ``llm_judged`` are the language models' judged answers
    (:func:`rag.answering.llm_tables.judge_llm_answers`); ``heldout`` is
    results/answers_heldout.csv, whose ``all`` rows carry the same counts for
    the offline generators through ``rag ask``'s path (development and each
    held-out file). ``setup`` names the retrieval: chunker/retriever/k for
    the language models, rag ask's retriever for the others.
    """
    rows = []
    keys = ["generator", "questions", "chunker", "retriever", "k"]
    for values, setup in llm_judged.groupby(keys, sort=True):
        generator, questions, chunker, retriever, k = values
        answered = ~setup["abstained"].astype(bool)
        counts = verdict_counts(answered, setup["faithful"], setup["responsive"], setup["outcome"])
        rows.append(
            {
                "generator": generator,
                "questions": questions,
                "setup": f"{chunker}/{retriever}/k={k}",
                "answered": int(answered.sum()),
                **counts,
            }
        )
    if heldout is not None:
        for row in heldout[heldout["group"] == "all"].itertuples(index=False):
            rows.append(
                {
                    "generator": row.generator,
                    "questions": row.questions_file,
                    "setup": f"rag ask {row.retriever}",
                    "answered": int(row.answered),
                    **{column: getattr(row, column) for column in VERDICT_COLUMNS[4:-1]},
                }
            )
    table = pd.DataFrame(rows)
    table["not_checked"] = NOT_CHECKED
    return table[VERDICT_COLUMNS]
