"""Which setup gives each language model its best answers: the section of results/README.md.

From results/llm_answers_judged.csv: per generator and question file, the
share of correct answers of every setup (closed book, each retriever) over the
answerable questions with a reference answer (the answer tables' one
denominator, :data:`rag.measuring.llm_tables.WITH_REFERENCE`), with its
bootstrap interval; the best setup is tested against the runner-up and
against the closed book with the paired randomization test on the same
questions (:func:`rag.evaluation.significance.compare_paired`, the test of
every other comparison in the tables). The section is one family: every
comparison it prints is Holm-corrected together with the others
(:func:`rag.evaluation.significance.holm`), as the header says, and a
verdict follows the corrected p. A difference the corrected test cannot tell
from chance is said to be so.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from rag.answering.llm_answers import CLOSED_BOOK
from rag.evaluation.statistics import bootstrap_interval
from rag.measuring.correctness import CORRECT
from rag.measuring.llm_tables import with_reference

ALPHA = 0.05
BETTER = "better"
NOT_SEPARATED = "not distinguishable from chance"


def _setup_name(chunker: str, retriever: str, k: int) -> str:
    return "closed book" if retriever == CLOSED_BOOK else f"`{chunker}` + `{retriever}`, k={k}"


@dataclass(frozen=True)
class SetupComparison:
    """The best setup of one generator and question file against another setup of the same."""

    generator: str
    questions: str
    best: tuple
    other: tuple
    against: str  # "runner-up" or "closed book"
    difference: float
    difference_low: float
    difference_high: float
    p_randomization: float
    p_holm: float = float("nan")

    @property
    def verdict(self) -> str:
        return BETTER if self.p_holm < ALPHA else NOT_SEPARATED

    def text(self) -> str:
        name = f"runner-up {_setup_name(*self.other)}" if self.against == "runner-up" else "closed book"
        return (
            f"vs {name}: {self.difference:+.2f} "
            f"({self.difference_low:+.2f} to {self.difference_high:+.2f}), "
            f"p = {self.p_randomization:.4f}, corrected {self.p_holm:.4f}, {self.verdict}"
        )


@dataclass(frozen=True)
class BestSetup:
    generator: str
    questions: str
    setup: tuple
    correct: int
    counted: int
    share: float
    low: float
    high: float
    comparisons: tuple[SetupComparison, ...]


def _compare(mine: pd.Series, versus: pd.Series, **fields) -> SetupComparison:
    from rag.evaluation.significance import compare_paired

    (comparison,) = compare_paired(mine.to_numpy()[:, None], versus.to_numpy()[:, None])
    return SetupComparison(
        difference=comparison.mean_difference,
        difference_low=comparison.difference_low,
        difference_high=comparison.difference_high,
        p_randomization=comparison.p_randomization,
        **fields,
    )


def best_setups(judged: pd.DataFrame) -> list[BestSetup]:
    """Per generator and question file (development first), the best setup and its comparisons,
    every comparison's p Holm-corrected over all of them (one family)."""
    from rag.evaluation.significance import holm

    if judged is None or judged.empty:
        return []
    counted = judged[with_reference(judged)].copy()
    counted["is_correct"] = (counted["outcome"] == CORRECT).astype(float)
    order = sorted(counted["questions"].unique(), key=lambda name: (name != "development", name))
    found = []
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
            keys = {"generator": str(generator), "questions": str(questions), "best": best}
            comparisons = []
            if len(ranked) > 1:
                comparisons.append(
                    _compare(vectors[best], vectors[ranked[1]], other=ranked[1], against="runner-up", **keys)
                )
            closed = [setup for setup in ranked[1:] if setup[1] == CLOSED_BOOK]
            if closed and closed[0] != ranked[1]:
                comparisons.append(
                    _compare(
                        vectors[best], vectors[closed[0]], other=closed[0], against="closed book", **keys
                    )
                )
            low, high = bootstrap_interval(vectors[best].to_numpy())
            found.append(
                BestSetup(
                    str(generator),
                    str(questions),
                    best,
                    int(vectors[best].sum()),
                    len(vectors[best]),
                    float(vectors[best].mean()),
                    low,
                    high,
                    tuple(comparisons),
                )
            )
    every = [comparison for setup in found for comparison in setup.comparisons]
    corrected = dict(zip(map(id, every), holm([c.p_randomization for c in every]), strict=True))
    return [
        BestSetup(
            **{
                **setup.__dict__,
                "comparisons": tuple(
                    SetupComparison(**{**c.__dict__, "p_holm": corrected[id(c)]}) for c in setup.comparisons
                ),
            }
        )
        for setup in found
    ]


def best_answer_setup_lines(judged: pd.DataFrame) -> list[str]:
    """The Markdown section: one bullet per generator and question file, development first."""
    setups = best_setups(judged)
    if not setups:
        return []
    tested = sum(len(setup.comparisons) for setup in setups)
    lines = [
        "## Best answer setup per language model",
        "",
        "From `llm_answers_judged.csv`: correct answers over the answerable questions with a",
        "reference answer (the answer tables' one denominator), 95 % bootstrap intervals; the best",
        "setup against the runner-up and the closed book, paired randomization test on the same",
        "questions (difference of the correct share, its interval, p), as in the retrieval section.",
        f"The {tested} comparisons below are one family: each p is Holm-corrected over all {tested},",
        f"and a verdict says {BETTER} only when the corrected p is below {ALPHA}. Judged by the",
        "deterministic judge, whose agreement with hand labels is in `judge_calibration.csv`; its",
        '"correct" can hold answers the hand labels call partly correct, which',
        "`llm_answers_summary.csv` counts apart (`labelled_partly`, `correct_labelled_partly`).",
        "",
    ]
    for setup in setups:
        text = (
            f"- `{setup.generator}`, {setup.questions}: {_setup_name(*setup.setup)}, "
            f"{setup.correct} of {setup.counted} correct "
            f"({setup.share:.2f}, {setup.low:.2f}-{setup.high:.2f})"
        )
        tests = [comparison.text() for comparison in setup.comparisons]
        lines.append(text + ("; " + "; ".join(tests) if tests else ""))
    return lines
