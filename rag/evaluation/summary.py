"""The tables a reader compares configurations with: one row per run, and results/README.md.

metrics.csv is long (a row per metric and k) and grows with every edit of the
grid; readers want one line per (corpus, chunker, retriever) with the few
numbers they decide by, how sure each is, and whether it beats the baseline
beyond chance. Both the wide CSV and the Markdown page are written from the
interval and significance tables, so no number is ever copied by hand.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from rag.evaluation import metric_registry

RUN_KEYS = ["corpus", "chunker", "retriever"]


@dataclass(frozen=True)
class SummaryMetric:
    """One column group of the summary: a metric at one k (None for whole-list metrics)."""

    name: str
    metric: str
    k: int | None
    label: str
    higher_is_better: bool = True


def summary_metrics() -> tuple[SummaryMetric, ...]:
    """The summary's column groups, from :mod:`rag.evaluation.metric_registry` (read at call time)."""
    return tuple(
        SummaryMetric(name, metric, k, label, higher_is_better)
        for name, metric, k, label, higher_is_better in metric_registry.summary_columns()
    )


def _key(k) -> int:
    return 0 if pd.isna(k) else int(k)


def available_metrics(intervals: pd.DataFrame) -> list[SummaryMetric]:
    """The summary metrics the evaluation computed (a k outside evaluation.ks has no column)."""
    present = {(metric, _key(k)) for metric, k in zip(intervals["metric"], intervals["k"], strict=True)}
    return [item for item in summary_metrics() if (item.metric, item.k or 0) in present]


def summary_table(intervals: pd.DataFrame, significance: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """One row per (corpus, chunker, retriever): each summary metric with its interval,
    whether it differs from the baseline after correction, and whether it is the corpus's best.

    ``{name}_vs_baseline`` is ``higher`` or ``lower`` where the corrected
    randomization test finds a difference, empty where it does not, and
    ``baseline`` on the baseline's own rows. ``{name}_best`` marks the best
    value of the corpus (highest, or lowest for prompt words); equal values
    after rounding are all marked.
    """
    metrics = available_metrics(intervals)
    runs = intervals[RUN_KEYS].drop_duplicates().sort_values(RUN_KEYS, ignore_index=True)
    table = runs.copy()
    tests = significance.assign(k=significance["k"].map(_key)).set_index([*RUN_KEYS, "metric", "k"])
    for item in metrics:
        rows = intervals[(intervals["metric"] == item.metric) & (intervals["k"].map(_key) == (item.k or 0))]
        rows = rows.set_index(RUN_KEYS)[["value", "ci_low", "ci_high"]]
        rows.columns = [item.name, f"{item.name}_ci_low", f"{item.name}_ci_high"]
        table = table.merge(rows, left_on=RUN_KEYS, right_index=True, how="left")
        markers = []
        for corpus, chunker, retriever in table[RUN_KEYS].itertuples(index=False):
            if retriever == baseline:
                markers.append("baseline")
                continue
            key = (corpus, chunker, retriever, item.metric, item.k or 0)
            if key not in tests.index or not bool(tests.loc[key, "significant"]):
                markers.append("")
            else:
                markers.append("higher" if tests.loc[key, "mean_difference"] > 0 else "lower")
        table[f"{item.name}_vs_baseline"] = markers
        best = table.groupby("corpus")[item.name].transform("max" if item.higher_is_better else "min")
        table[f"{item.name}_best"] = table[item.name] == best
    return table


def _format(value: float, metric: SummaryMetric) -> str:
    return f"{value:.0f}" if metric.metric == "prompt_words" else f"{value:.3f}"


def _cell(row, metric: SummaryMetric) -> str:
    value = row[metric.name]
    if pd.isna(value):
        return ""
    marker = {"higher": " ▲", "lower": " ▼"}.get(row[f"{metric.name}_vs_baseline"], "")
    text = (
        f"{_format(value, metric)} [{_format(row[f'{metric.name}_ci_low'], metric)}, "
        f"{_format(row[f'{metric.name}_ci_high'], metric)}]{marker}"
    )
    return f"**{text}**" if row[f"{metric.name}_best"] else text


def _markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def _reader_edges(thresholds: pd.DataFrame | None) -> dict[str, list[str]]:
    """Per corpus, each reader threshold chosen (``fold = all``) at the edge of its grid."""
    edges: dict[str, list[str]] = {}
    if thresholds is None or "at_grid_edge" not in thresholds:
        return edges
    chosen = thresholds[(thresholds["fold"].astype(str) == "all") & thresholds["at_grid_edge"].astype(bool)]
    for row in chosen.itertuples(index=False):
        edges.setdefault(row.corpus, []).append(
            f"`{row.chunker}` / `{row.retriever}`, reader `{row.reader}`: threshold {row.threshold:.2f}"
        )
    return edges


def _learned_edges(learned: pd.DataFrame | None) -> dict[str, list[str]]:
    """Per corpus, each learned fusion whose weights came out on the border of the grid in some fold."""
    edges: dict[str, list[str]] = {}
    if learned is None or "at_grid_edge" not in learned:
        return edges
    for (corpus, chunker, retriever), rows in learned.groupby(["corpus", "chunker", "retriever"], sort=True):
        folds = rows.drop_duplicates(["part", "fold"])
        at_edge = int(folds["at_grid_edge"].astype(bool).sum())
        if at_edge:
            edges.setdefault(corpus, []).append(
                f"`{chunker}` / `{retriever}`: fusion weights in {at_edge} of {len(folds)} folds"
            )
    return edges


def grid_edge_lines(
    thresholds: pd.DataFrame | None = None, learned: pd.DataFrame | None = None
) -> dict[str, list[str]]:
    """Per corpus, the README lines naming every cross-validated choice at the edge of its grid.

    Why: a threshold or weight at the top or bottom of its grid says more
    about the grid than about the questions (at a reader threshold of 2.00
    the reader never answers), so a user must see it beside the figures it
    produced, not only in ``reader_thresholds.csv`` or ``learned_fusion.csv``.
    """
    lines: dict[str, list[str]] = {}
    for source, found in (
        ("reader_thresholds.csv", _reader_edges(thresholds)),
        ("learned_fusion.csv", _learned_edges(learned)),
    ):
        for corpus, choices in found.items():
            lines.setdefault(corpus, []).append(
                f"**At the edge of its grid** (`at_grid_edge` in `{source}`; a wider grid might move it): "
                + "; ".join(choices)
                + "."
            )
    return lines


def results_readme(
    summary: pd.DataFrame,
    significance: pd.DataFrame,
    baseline: str,
    resamples: int,
    permutations: int,
    recommended: Mapping[str, Sequence[str]] | None = None,
    edges: Mapping[str, Sequence[str]] | None = None,
) -> str:
    """results/README.md: per corpus, the best configuration of each metric and the whole summary.

    ``recommended`` maps a corpus to the Markdown lines of its recommendations
    (:func:`rag.evaluation.recommendation.recommendation_lines`), placed after
    the table of maxima; ``edges`` to its lines naming choices at the edge of
    their grid (:func:`grid_edge_lines`), placed after those.
    """
    metrics = [item for item in summary_metrics() if item.name in summary.columns]
    lines = [
        "# Results",
        "",
        "Written by the rule `results_readme` from `summary.csv` and `significance.csv`; do not edit.",
        "",
        f"Each cell is the mean over the labelled questions with its 95 % bootstrap interval "
        f"({resamples:,} resamples). ▲ / ▼: higher / lower than the baseline `{baseline}` on the same "
        f"chunker, by a paired randomization test ({permutations:,} sign flips) Holm-corrected over the "
        "tested metrics of that one comparison (so adding another configuration never moves it), at 0.05. "
        "**Bold**: the best value of the corpus "
        "(for words@5, the fewest words).",
    ]
    for corpus, rows in summary.groupby("corpus", sort=True):
        tests = significance[significance["corpus"] == corpus]
        lines += ["", f"## {corpus}", ""]
        if len(tests):
            lines.append(
                f"{int(tests['significant'].sum())} of {len(tests)} comparisons with `{baseline}` "
                "are significant after correction."
            )
            lines.append("")
        lines.append("### Best configuration per metric")
        lines.append("")
        best_rows = []
        for item in metrics:
            for row in rows[rows[f"{item.name}_best"]].itertuples(index=False):
                row = row._asdict()
                best_rows.append([item.label, row["chunker"], row["retriever"], _cell(row, item).strip("*")])
        lines += _markdown_table(["metric", "chunker", "retriever", "value [95 % CI]"], best_rows)
        if recommended and recommended.get(corpus):
            lines += ["", *recommended[corpus]]
        if edges and edges.get(corpus):
            lines += ["", *edges[corpus]]
        lines += ["", "### Every configuration", ""]
        table_rows = [
            [row["chunker"], row["retriever"], *(_cell(row, item) for item in metrics)]
            for row in (r._asdict() for r in rows.itertuples(index=False))
        ]
        lines += _markdown_table(["chunker", "retriever", *(item.label for item in metrics)], table_rows)
    return "\n".join(lines) + "\n"
