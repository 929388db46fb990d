"""The one table of retrieval metrics: name, per-question function, aggregate and direction.

In the manner of ranx's metric table: every table that shows a metric
(metrics.csv and its companions, the confidence intervals, significance.csv,
summary.csv, results/README.md, the ablations and the learned-fusion
objectives) reads this registry, so a metric added here appears everywhere,
and a metric missing here appears nowhere rather than in some tables only.

One name per metric. The reciprocal rank of one question and its mean over
questions are both ``mrr``: the per-question rows, metrics.csv,
significance.csv and summary.csv all say ``mrr``. per_question.csv keeps its
published column name ``reciprocal_rank`` (:data:`PER_QUESTION_COLUMN`),
since there each row is one question.

The built-in metrics are computed in one pass per question by
:func:`rag.evaluation.metrics.question_metrics` (every lookup once); a metric
added here with a ``function`` and a name that pass does not produce is
computed from its function, question by question.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rag.evaluation.metrics import Relevance, ndcg_at, recall_at, reciprocal_rank

# A metric of one question: (ranked chunk ids, relevance, k) -> value; whole-list metrics ignore k.
QuestionFunction = Callable[[Sequence[str], Relevance, int], float]


@dataclass(frozen=True)
class Metric:
    """One metric of the registry.

    ``at_k``: computed at every k of evaluation.ks (else once for the whole
    list, written with an empty k). ``aggregate``: how per-question values
    become the table's value (a pandas aggregation name; NaN questions are
    skipped). ``tested``: paired test against the baseline in
    significance.csv. ``summary_ks``: the k of each summary.csv column group
    (None for a whole-list metric). ``function``: the metric of one question,
    also what learned fusion can optimise (None when it needs more than the
    ranking and the labels, as prompt words do).
    """

    name: str
    label: str
    at_k: bool
    higher_is_better: bool = True
    aggregate: str = "mean"
    tested: bool = True
    summary_ks: tuple[int | None, ...] = ()
    function: QuestionFunction | None = None


def _reciprocal_rank(ranked: Sequence[str], relevance: Relevance, k: int) -> float:
    return reciprocal_rank(ranked, relevance)


REGISTRY: tuple[Metric, ...] = (
    Metric("recall", "R", at_k=True, summary_ks=(1, 5, 10), function=recall_at),
    Metric("mrr", "MRR", at_k=False, summary_ks=(None,), function=_reciprocal_rank),
    Metric("ndcg", "nDCG", at_k=True, summary_ks=(10,), function=ndcg_at),
    # The cost side: fewer words in the prompt is better.
    Metric("prompt_words", "words", at_k=True, higher_is_better=False, summary_ks=(5,)),
    # Computed without labels; shown in metrics.csv and the diversity ablation, not tested.
    Metric("duplicate_source_rate", "dup", at_k=True, higher_is_better=False, tested=False),
)

# per_question.csv's published column for the per-question value of ``mrr``.
PER_QUESTION_COLUMN = {"mrr": "reciprocal_rank"}


def metrics() -> tuple[Metric, ...]:
    """The registry as it stands (read at call time, so a test can extend it)."""
    return REGISTRY


def metric(name: str) -> Metric:
    """The registry entry called ``name``; one clear line when there is none."""
    for entry in metrics():
        if entry.name == name:
            return entry
    raise ValueError(f"unknown metric {name!r}; expected one of {', '.join(names())}")


def names() -> list[str]:
    """Every metric's name, in registry order."""
    return [entry.name for entry in metrics()]


def tested_names() -> list[str]:
    """The metrics with a paired test against the baseline."""
    return [entry.name for entry in metrics() if entry.tested]


def objectives() -> list[str]:
    """The metrics learned fusion can optimise: those with a per-question function."""
    return [entry.name for entry in metrics() if entry.function is not None]


def objective(name: str) -> QuestionFunction:
    """The per-question function learned fusion scores a weight vector by."""
    entry = metric(name)
    if entry.function is None:
        raise ValueError(f"metric {name!r} cannot be an objective; expected one of {', '.join(objectives())}")
    return entry.function


def summary_columns() -> list[tuple[str, str, int | None, str, bool]]:
    """(column name, metric, k, label, higher is better) of each summary.csv column group."""
    columns = []
    for entry in metrics():
        for k in entry.summary_ks:
            name = entry.name if k is None else f"{entry.name}_at_{k}"
            label = entry.label if k is None else f"{entry.label}@{k}"
            columns.append((name, entry.name, k, label, entry.higher_is_better))
    return columns


def funnel_columns(ks: Sequence[int]) -> list[tuple[str, int | None]]:
    """(metric, k) of the funnel ablation's columns: recall at each k, the MRR, nDCG and the
    duplicate-source rate at the largest k."""
    deepest = max(ks)
    return [("recall", k) for k in sorted(ks)] + [
        ("mrr", None),
        ("ndcg", deepest),
        ("duplicate_source_rate", deepest),
    ]
