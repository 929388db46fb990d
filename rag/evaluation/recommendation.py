"""A recommendation, not just a maximum: the best configuration of each metric, how sure, and at what cost.

The largest mean of a column is a maximum, not a choice: the runner-up may
be as good within the noise of the questions, the best of another chunker
may be too, and a configuration nearly as good may put half the words into
the prompt. For each quality metric of the summary this module names

- the best configuration (largest mean; ties broken by chunker, then retriever);
- paired randomization tests of the best against the runner-up and against
  the best of every other chunker, on the same questions, raw and
  Holm-corrected within those comparisons of one metric;
- the cost-aware choice: the fewest prompt words at 5 among the
  configurations whose mean lies inside the best one's 95 % interval;
- a warning when the questions are too few to separate the leaders.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from rag.evaluation.significance import ALPHA, compare_paired, holm
from rag.evaluation.summary import SummaryMetric, summary_metrics

COST_COLUMN = "prompt_words_at_5"


@dataclass(frozen=True)
class Contender:
    """A configuration tested against the best: its mean, and the paired test's raw and corrected p."""

    role: str
    chunker: str
    retriever: str
    value: float
    p: float
    p_holm: float


@dataclass(frozen=True)
class Recommendation:
    """The best configuration of one metric of one corpus, its tests, the cost-aware choice and a warning."""

    metric: SummaryMetric
    chunker: str
    retriever: str
    value: float
    low: float
    high: float
    contenders: tuple[Contender, ...]
    cheapest: tuple[str, str, float] | None
    warning: str | None


def smallest_p(questions: int) -> float:
    """The smallest two-sided p a sign-flip test can reach on ``questions`` paired values: 2 / 2**n."""
    return 2.0 / 2.0**questions


def _question_vector(values: pd.DataFrame, chunker: str, retriever: str) -> np.ndarray:
    rows = values[(values["chunker"] == chunker) & (values["retriever"] == retriever)]
    return rows.sort_values("question_id")["value"].to_numpy(np.float64)


def recommend(rows: pd.DataFrame, values: pd.DataFrame, metric: SummaryMetric) -> Recommendation | None:
    """The recommendation of ``metric`` for one corpus.

    ``rows`` are the corpus's summary rows; ``values`` its per-question values
    of this metric and k (chunker, retriever, question_id, value).
    """
    ranked = rows.dropna(subset=[metric.name]).sort_values(
        [metric.name, "chunker", "retriever"], ascending=[not metric.higher_is_better, True, True]
    )
    if ranked.empty:
        return None
    best = ranked.iloc[0]
    others = [("runner-up", ranked.iloc[1])] if len(ranked) > 1 else []
    for chunker, group in ranked.groupby("chunker", sort=True):
        if chunker != best["chunker"]:
            others.append((f"best of {chunker}", group.iloc[0]))
    reference = _question_vector(values, best["chunker"], best["retriever"])
    p_values = []
    for _, row in others:
        other = _question_vector(values, row["chunker"], row["retriever"])
        (result,) = compare_paired(reference[:, None], other[:, None])
        p_values.append(result.p_randomization)
    corrected = holm(p_values)
    contenders = tuple(
        Contender(role, row["chunker"], row["retriever"], float(row[metric.name]), p, p_holm)
        for (role, row), p, p_holm in zip(others, p_values, corrected, strict=True)
    )
    return Recommendation(
        metric=metric,
        chunker=best["chunker"],
        retriever=best["retriever"],
        value=float(best[metric.name]),
        low=float(best[f"{metric.name}_ci_low"]),
        high=float(best[f"{metric.name}_ci_high"]),
        contenders=contenders,
        cheapest=_cheapest(ranked, best, metric),
        warning=_warning(len(reference), contenders),
    )


def _cheapest(ranked: pd.DataFrame, best: pd.Series, metric: SummaryMetric) -> tuple[str, str, float] | None:
    """Fewest prompt words at 5 among the configurations inside the best one's interval."""
    if COST_COLUMN not in ranked.columns:
        return None
    low, high = best[f"{metric.name}_ci_low"], best[f"{metric.name}_ci_high"]
    inside = ranked[(ranked[metric.name] >= low) & (ranked[metric.name] <= high)].dropna(subset=[COST_COLUMN])
    if inside.empty:
        return None
    choice = inside.sort_values([COST_COLUMN, "chunker", "retriever"]).iloc[0]
    return str(choice["chunker"]), str(choice["retriever"]), float(choice[COST_COLUMN])


def _warning(questions: int, contenders: tuple[Contender, ...]) -> str | None:
    if smallest_p(questions) >= ALPHA:
        return (
            f"only {questions} questions: no paired test can reach p < {ALPHA} "
            f"(the smallest possible is {smallest_p(questions):.3f}), so the leaders cannot be separated"
        )
    if contenders and contenders[0].role == "runner-up" and contenders[0].p_holm >= ALPHA:
        return (
            f"the {questions} questions do not separate the best from the runner-up "
            f"(corrected p = {contenders[0].p_holm:.4f}); treat them as tied"
        )
    return None


def recommendations(
    summary: pd.DataFrame, question_values: pd.DataFrame, corpus: str
) -> list[Recommendation]:
    """Every quality metric's recommendation for ``corpus`` (prompt words are the cost, not a goal)."""
    rows = summary[summary["corpus"] == corpus]
    found = []
    for metric in summary_metrics():
        if not metric.higher_is_better or metric.name not in summary.columns:
            continue
        chosen = question_values[
            (question_values["corpus"] == corpus)
            & (question_values["metric"] == metric.metric)
            & (question_values["k"] == (metric.k or 0))
        ]
        recommendation = recommend(rows, chosen, metric)
        if recommendation is not None:
            found.append(recommendation)
    return found


def recommendation_lines(found: list[Recommendation]) -> list[str]:
    """The Markdown section of results/README.md that states the recommendations."""
    lines = [
        "### Recommendation per metric",
        "",
        "The best configuration, tested (paired randomization test, Holm-corrected within the "
        "comparisons of one metric) against the runner-up and against the best of every other "
        "chunker; the cost-aware choice is the fewest words@5 inside the best's 95 % interval. "
        "[answers.md](answers.md) ranks only the pairs the answer experiments run, by quoted "
        "evidence, so its best answer setup can differ from these retrieval choices.",
        "",
    ]
    for item in found:
        lines.append(
            f"- **{item.metric.label}**: `{item.chunker}` + `{item.retriever}`, "
            f"{item.value:.3f} [{item.low:.3f}, {item.high:.3f}]."
        )
        for contender in item.contenders:
            verdict = "better" if contender.p_holm < ALPHA else "not separated"
            lines.append(
                f"  - vs {contender.role} `{contender.chunker}` + `{contender.retriever}` "
                f"({contender.value:.3f}): p = {contender.p:.4f}, "
                f"corrected {contender.p_holm:.4f}, {verdict}."
            )
        if item.cheapest is not None:
            chunker, retriever, words = item.cheapest
            lines.append(f"  - cost-aware choice: `{chunker}` + `{retriever}`, {words:.0f} words@5.")
        if item.warning:
            lines.append(f"  - ⚠ warning: {item.warning}.")
    return lines
