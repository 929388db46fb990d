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

import math
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


def recommendation_lines(found: list[Recommendation], answers_link: str | None = "answers.md") -> list[str]:
    """The Markdown section of results/README.md that states the recommendations.

    ``answers_link`` is where answers.md lies relative to the README (in the
    default folder when an ablation's folder shares the answer tables), or
    None when the grid has no answer experiments, so no link points nowhere.
    """
    answers = (
        f" [answers.md]({answers_link}) ranks only the pairs the answer experiments run, by quoted "
        "evidence, so its best answer setup can differ from these retrieval choices."
        if answers_link
        else ""
    )
    lines = [
        "### Recommendation per metric",
        "",
        "The best configuration, tested (paired randomization test, Holm-corrected within the "
        "comparisons of one metric) against the runner-up and against the best of every other "
        "chunker; the cost-aware choice is the fewest words@5 inside the best's 95 % interval." + answers,
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


# --------------------------------------------------------------------------
# Which k: recall per prompt word at a stated prompt budget (issue 44)
# --------------------------------------------------------------------------

# The prompt budget of results/README.md's "which k" table when evaluation.prompt_budget is not set:
# words of retrieved text in the prompt.
DEFAULT_PROMPT_BUDGET = 500


@dataclass(frozen=True)
class KChoice:
    """The k one (chunker, retriever) should use at a prompt budget, and what it buys.

    ``k`` is the largest evaluated k whose mean prompt words fit the budget
    (recall never falls as k grows, so it is the most recall the budget
    affords), None when even the smallest k does not fit; ``smallest_k`` the
    smallest fitting k whose recall lies inside ``k``'s 95 % interval, the
    thrifty choice the questions cannot tell apart from it.
    """

    chunker: str
    retriever: str
    k: int | None
    recall: float = math.nan
    low: float = math.nan
    high: float = math.nan
    words: float = math.nan
    smallest_k: int | None = None
    smallest_words: float = math.nan
    smallest_k_evaluated: int | None = None
    smallest_k_words: float = math.nan

    @property
    def recall_per_thousand_words(self) -> float:
        """The specification's recall per prompt token, counted in words as words@k is."""
        return self.recall / self.words * 1000 if self.k is not None and self.words > 0 else math.nan


def _by_k(rows: pd.DataFrame, metric: str) -> dict[int, tuple[float, float, float]]:
    chosen = rows[(rows["metric"] == metric) & rows["k"].notna()]
    return {
        int(k): (float(value), float(low), float(high))
        for k, value, low, high in zip(
            chosen["k"], chosen["value"], chosen["ci_low"], chosen["ci_high"], strict=True
        )
    }


def k_choices(intervals: pd.DataFrame, corpus: str, budget: float) -> list[KChoice]:
    """Per (chunker, retriever) of ``corpus``, the k to use at ``budget`` prompt words (metrics_ci rows)."""
    rows = intervals[intervals["corpus"] == corpus]
    choices = []
    for (chunker, retriever), group in rows.groupby(["chunker", "retriever"], sort=True):
        recall, words = _by_k(group, "recall"), _by_k(group, "prompt_words")
        ks = sorted(recall.keys() & words.keys())
        if not ks:
            continue
        fitting = [k for k in ks if words[k][0] <= budget]
        if not fitting:
            choices.append(
                KChoice(
                    str(chunker),
                    str(retriever),
                    None,
                    smallest_k_evaluated=ks[0],
                    smallest_k_words=words[ks[0]][0],
                )
            )
            continue
        k = fitting[-1]
        value, low, high = recall[k]
        smallest = next(candidate for candidate in fitting if recall[candidate][0] >= low)
        choices.append(
            KChoice(
                str(chunker),
                str(retriever),
                k,
                value,
                low,
                high,
                words[k][0],
                smallest,
                words[smallest][0],
            )
        )
    return choices


def k_choice_lines(choices: list[KChoice], budget: float) -> list[str]:
    """The "which k" section of results/README.md: the best at the budget, then every (chunker, retriever)."""
    if not choices:
        return []
    lines = [
        f"### Which k at a prompt budget of {budget:,.0f} words",
        "",
        "The specification's advice: choose by recall per prompt token at the prompt size you can "
        "afford (counted here in words, as words@k is; set `evaluation.prompt_budget`). For each "
        "chunker and retriever, k is the largest evaluated k whose mean prompt words fit the budget "
        "(recall never falls as k grows, so it buys the most recall the budget affords), with its 95 % "
        "interval; the thrifty k is the smallest whose recall lies inside that interval, which these "
        "questions cannot tell apart from it.",
        "",
    ]
    fitting = [choice for choice in choices if choice.k is not None]
    if fitting:
        best = sorted(
            fitting, key=lambda c: (-c.recall, -c.recall_per_thousand_words, c.chunker, c.retriever)
        )[0]
        tied = [c for c in fitting if c is not best and c.recall >= best.low]
        lines.append(
            f"**Most recall at {budget:,.0f} words**: `{best.chunker}` + `{best.retriever}` at k = {best.k}, "
            f"R@{best.k} {best.recall:.3f} [{best.low:.3f}, {best.high:.3f}] for {best.words:.0f} words "
            f"({best.recall_per_thousand_words:.2f} recall per 1,000 words); {len(tied)} other "
            f"configuration{'s' if len(tied) != 1 else ''} reach a mean inside its interval."
        )
        lines.append("")
    rows = []
    for choice in choices:
        if choice.k is None:
            rows.append(
                [
                    choice.chunker,
                    choice.retriever,
                    "none fits",
                    f"k = {choice.smallest_k_evaluated} already takes {choice.smallest_k_words:.0f} words",
                    "",
                    "",
                    "",
                ]
            )
            continue
        rows.append(
            [
                choice.chunker,
                choice.retriever,
                str(choice.k),
                f"{choice.recall:.3f} [{choice.low:.3f}, {choice.high:.3f}]",
                f"{choice.words:.0f}",
                f"{choice.recall_per_thousand_words:.2f}",
                f"{choice.smallest_k} ({choice.smallest_words:.0f} words)",
            ]
        )
    header = ["chunker", "retriever", "k", "R@k [95 % CI]", "words@k", "R per 1,000 words", "thrifty k"]
    lines += ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines
