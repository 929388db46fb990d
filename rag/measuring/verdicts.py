"""The verdicts measured: how often a "faithful and responsive" answer is actually correct.

``rag ask`` and the answer tables call an answer faithful when its cited
source holds the answer's words and numbers, and responsive when it gives a
value of the type the question asks for. Neither checks that the value is
the one asked for: "Hellas Planitia, an impact basin roughly 2,300 km in
diameter" passes both for "What is the diameter of Mars?". This module counts,
for any generator's answers, how many that pass both verdicts are correct by
the reference answers (:mod:`rag.measuring.correctness`), so the verdicts'
worth is a number in the tables rather than an assumption.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from rag.evaluation.statistics import bootstrap_interval
from rag.measuring.correctness import CORRECT, NOT_JUDGED

# What the verdicts leave unchecked, in the words rag ask and the tables use.
NOT_CHECKED = (
    "The source check (faithful) measures only that the cited source contains the answer's words "
    "and numbers, and the type check (responsive) only that the answer holds a value of the asked "
    "type, not that it is the asked one: passing both is not being right."
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
    (:func:`rag.measuring.llm_tables.judge_llm_answers`); ``heldout`` is
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


def rag_ask_setup(retriever: str) -> str:
    """The ``setup`` of verdicts.csv's rows measured through ``rag ask`` with ``retriever``."""
    return f"rag ask {retriever}"


# What rag ask prints on documents other than the bundled corpus, instead of a rate.
NO_RATE_FOR_OWN_DOCUMENTS = (
    "no rate is measured for these documents: the rates in results/verdicts.csv are measured on the "
    "bundled corpus's held-out questions, and do not carry to other documents. To measure one, write "
    "a labelled question file for these documents (docs/formats.md, questions) and run it through the "
    "pipeline as a corpus with its questions (docs/answers.md); results/verdicts.csv then holds its rate."
)


def measured_rate_lines(
    table: pd.DataFrame | None, generator: str, setup: str, bundled: bool = True
) -> list[str]:
    """How often answers of ``generator`` and ``setup`` that passed both checks were right, per held-out file.

    ``table`` is results/verdicts.csv (None when it is not there). Only the
    held-out question files count: the development questions are where the
    thresholds and prompts were chosen, so a rate on them is in-sample. One
    line per held-out file, "right 5 of 6 (83 %, 95 % interval 60-100 %)",
    read as it is; a file without such answers says so. On documents other
    than the bundled corpus (``bundled`` False) no rate is measured, and the
    one line says so and how to measure one (:data:`NO_RATE_FOR_OWN_DOCUMENTS`).
    """
    if not bundled:
        return [NO_RATE_FOR_OWN_DOCUMENTS]
    if table is None:
        return ["not measured: results/verdicts.csv is not there (the pipeline writes it)"]
    rows = table[(table["generator"] == generator) & (table["setup"] == setup)]
    shown = setup.removeprefix("rag ask ")
    if rows.empty:
        return [f"not measured for {generator} with {shown} (results/verdicts.csv)"]
    heldout = rows[rows["questions"].astype(str) != "development"]
    if heldout.empty:
        return [
            f"not measured for {generator} with {shown} on held-out questions (results/verdicts.csv "
            "holds only the development questions, on which the thresholds were chosen)"
        ]
    lines = []
    for row in sorted(heldout.itertuples(index=False), key=lambda row: str(row.questions)):
        judged = int(row.faithful_and_responsive) - int(row.faithful_and_responsive_not_judged)
        correct = int(row.faithful_and_responsive_correct)
        if judged <= 0 or pd.isna(row.verdicts_correct_share):
            lines.append(f"{row.questions}: no answer passed both checks")
            continue
        lines.append(
            f"{row.questions}: right {correct} of {judged} ({_percent(row.verdicts_correct_share)}, 95 % "
            f"interval {_percent(row.verdicts_correct_share_low, False)}-"
            f"{_percent(row.verdicts_correct_share_high)})"
        )
    return lines


def _percent(value: float, sign: bool = True) -> str:
    return f"{100 * float(value):.0f}" + (" %" if sign else "")


def read_verdicts(path) -> pd.DataFrame | None:
    """results/verdicts.csv, or None when it is missing or not the table (rag ask then says so)."""
    try:
        table = pd.read_csv(path)
    except (OSError, ValueError):
        return None
    return table if set(VERDICT_COLUMNS[:-1]) <= set(table.columns) else None
