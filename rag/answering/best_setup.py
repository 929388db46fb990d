"""Which setup gives each language model its best answers: the section of results/README.md.

From results/llm_answers_judged.csv: per generator and question file, the
share of correct answers of every setup (closed book, each retriever) over the
answerable questions with a reference answer (the answer tables' one
denominator, :data:`rag.answering.llm_tables.WITH_REFERENCE`), with its
bootstrap interval; the best setup is tested against the runner-up and
against the closed book with the paired randomization test on the same
questions. A difference the test cannot tell from chance is said to be so.
"""

from __future__ import annotations

import pandas as pd

from rag.answering.correctness import CORRECT
from rag.answering.llm_answers import CLOSED_BOOK
from rag.answering.llm_tables import with_reference
from rag.evaluation.statistics import bootstrap_interval

ALPHA = 0.05


def _setup_name(chunker: str, retriever: str, k: int) -> str:
    return "closed book" if retriever == CLOSED_BOOK else f"`{chunker}` + `{retriever}`, k={k}"


def _versus(best: pd.Series, other: pd.Series, name: str) -> str:
    from rag.evaluation.significance import compare_paired

    (comparison,) = compare_paired(best.to_numpy()[:, None], other.to_numpy()[:, None])
    verdict = "better" if comparison.p_randomization < ALPHA else "not distinguishable from chance"
    return (
        f"vs {name}: {comparison.mean_difference:+.2f} "
        f"({comparison.difference_low:+.2f} to {comparison.difference_high:+.2f}), "
        f"p = {comparison.p_randomization:.4f}, {verdict}"
    )


def best_answer_setup_lines(judged: pd.DataFrame) -> list[str]:
    """The Markdown section: one bullet per generator and question file, development first."""
    if judged is None or judged.empty:
        return []
    lines = [
        "## Best answer setup per language model",
        "",
        "From `llm_answers_judged.csv`: correct answers over the answerable questions with a",
        "reference answer (the answer tables' one denominator), 95 % bootstrap intervals; the best",
        "setup against the runner-up and the closed book, paired randomization test on the same",
        "questions (difference of the correct share, its interval, p). Judged by the deterministic",
        "judge, whose agreement with hand labels is in `judge_calibration.csv`.",
        "",
    ]
    counted = judged[with_reference(judged)].copy()
    counted["is_correct"] = (counted["outcome"] == CORRECT).astype(float)
    order = sorted(counted["questions"].unique(), key=lambda name: (name != "development", name))
    for generator, of_generator in counted.groupby("generator", sort=True):
        for questions in order:
            of_file = of_generator[of_generator["questions"] == questions]
            if of_file.empty:
                continue
            vectors = {
                setup: rows.set_index("question_id").sort_index()["is_correct"]
                for setup, rows in of_file.groupby(["chunker", "retriever", "k"], sort=True)
            }
            ranked = sorted(
                vectors, key=lambda setup: (-vectors[setup].mean(), setup[1] == CLOSED_BOOK, setup)
            )
            best = ranked[0]
            low, high = bootstrap_interval(vectors[best].to_numpy())
            text = (
                f"- `{generator}`, {questions}: {_setup_name(*best)}, "
                f"{int(vectors[best].sum())} of {len(vectors[best])} correct "
                f"({vectors[best].mean():.2f}, {low:.2f}-{high:.2f})"
            )
            tests = []
            if len(ranked) > 1:
                tests.append(
                    _versus(vectors[best], vectors[ranked[1]], f"runner-up {_setup_name(*ranked[1])}")
                )
            closed = [setup for setup in ranked[1:] if setup[1] == CLOSED_BOOK]
            if closed and closed[0] != ranked[1]:
                tests.append(_versus(vectors[best], vectors[closed[0]], "closed book"))
            lines.append(text + ("; " + "; ".join(tests) if tests else ""))
    return lines
