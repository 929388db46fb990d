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


# One symbol for "better than the baseline" and one for "worse", whatever the metric's direction:
# more recall is better, fewer prompt words are better (summary.csv keeps higher / lower).
BETTER, WORSE = "▲", "▼"


def verdict_marker(direction: str, higher_is_better: bool) -> str:
    """BETTER or WORSE for a significant ``higher`` / ``lower``, by the metric's direction; else ''."""
    if direction not in ("higher", "lower"):
        return ""
    return BETTER if (direction == "higher") == higher_is_better else WORSE


def _cell(row, metric: SummaryMetric) -> str:
    value = row[metric.name]
    if pd.isna(value):
        return ""
    marker = verdict_marker(row[f"{metric.name}_vs_baseline"], metric.higher_is_better)
    marker = f" {marker}" if marker else ""
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


def _weights_text(rows: pd.DataFrame) -> str:
    """One fold's choice in words: ``minilm alone``, ``plain RRF`` or ``bm25 0.3 + minilm 0.7``."""
    choice = str(rows["choice"].iloc[0])
    weights = [(str(c), float(w)) for c, w in zip(rows["component"], rows["weight"], strict=True)]
    if choice == "component alone":
        alone = [component for component, weight in weights if weight > 0]
        return f"{alone[0]} alone" if len(alone) == 1 else choice
    if choice == "plain rrf":
        return "plain RRF"
    return " + ".join(f"{component} {weight:g}" for component, weight in weights)


def learned_choices(learned: pd.DataFrame | None) -> dict[tuple[str, str, str], list[tuple[str, int]]]:
    """Per (corpus, chunker, retriever) of a learned fusion, each setting its folds chose, and how often.

    Read from learned_fusion.csv's cross-validation folds (``part = fold``),
    most frequent first, so a fusion whose rows equal a component's says why.
    """
    found: dict[tuple[str, str, str], list[tuple[str, int]]] = {}
    if learned is None or learned.empty or "choice" not in learned:
        return found
    folds = learned[learned["part"].astype(str) == "fold"]
    for (corpus, chunker, retriever), rows in folds.groupby(["corpus", "chunker", "retriever"], sort=True):
        counts: dict[str, int] = {}
        for _, fold in rows.groupby("fold", sort=True):
            text = _weights_text(fold)
            counts[text] = counts.get(text, 0) + 1
        found[(str(corpus), str(chunker), str(retriever))] = sorted(
            counts.items(), key=lambda item: (-item[1], item[0])
        )
    return found


def _equal_component(summary: pd.DataFrame, key: tuple[str, str, str], component: str) -> bool:
    """Whether a learned fusion's summary row equals ``component``'s on the same chunker in every column."""
    corpus, chunker, retriever = key
    of_chunker = summary[(summary["corpus"] == corpus) & (summary["chunker"] == chunker)].set_index(
        "retriever"
    )
    if retriever not in of_chunker.index or component not in of_chunker.index:
        return False
    columns = [item.name for item in summary_metrics() if item.name in summary.columns]
    return all(of_chunker.loc[retriever, column] == of_chunker.loc[component, column] for column in columns)


def learned_choice_lines(summary: pd.DataFrame, learned: pd.DataFrame | None) -> dict[str, list[str]]:
    """Per corpus, the README line saying which weights each learned fusion chose, fold by fold."""
    lines: dict[str, list[str]] = {}
    for key, settings in learned_choices(learned).items():
        folds = sum(count for _, count in settings)
        chose = "; ".join(f"{text} in {count} of {folds} folds" for text, count in settings)
        equal = ""
        if len(settings) == 1 and settings[0][0].endswith(" alone"):
            component = settings[0][0].removesuffix(" alone")
            if _equal_component(summary, key, component):
                equal = f", so its row equals `{component}`'s"
        lines.setdefault(key[0], []).append(f"`{key[1]}` / `{key[2]}`: {chose}{equal}")
    return {
        corpus: [
            "**Learned fusion's weights** (`learned_fusion.csv`, chosen per cross-validation fold): "
            + "; ".join(found)
            + "."
        ]
        for corpus, found in lines.items()
    }


def learned_labels(learned: pd.DataFrame | None) -> dict[tuple[str, str, str], str]:
    """The retriever cell of a learned fusion in the README's table: its name and the weights it chose."""
    labels = {}
    for key, settings in learned_choices(learned).items():
        folds = sum(count for _, count in settings)
        if len(settings) == 1:
            labels[key] = f"{key[2]} ({settings[0][0]}, every fold)"
        else:
            labels[key] = f"{key[2]} ({settings[0][0]} in {settings[0][1]} of {folds} folds)"
    return labels


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
    which_k: Mapping[str, Sequence[str]] | None = None,
    learned: pd.DataFrame | None = None,
) -> str:
    """results/README.md: per corpus, the best configuration of each metric and the whole summary.

    ``recommended`` maps a corpus to the Markdown lines of its recommendations
    (:func:`rag.evaluation.recommendation.recommendation_lines`), placed after
    the table of maxima; ``edges`` to its lines naming choices at the edge of
    their grid (:func:`grid_edge_lines`), placed after those; ``which_k`` to
    its "which k at the prompt budget" section
    (:func:`rag.evaluation.recommendation.k_choice_lines`), placed after those.
    ``learned`` (learned_fusion.csv) names the weights each learned fusion chose,
    beside its rows and in a line of their own (:func:`learned_choice_lines`).
    """
    metrics = [item for item in summary_metrics() if item.name in summary.columns]
    lines = [
        "# Results",
        "",
        "Written by the rule `results_readme` from `summary.csv`, `significance.csv`, `metrics_ci.csv` "
        "and `learned_fusion.csv`; do not edit.",
        "",
        f"Each cell is the mean over the labelled questions with its 95 % bootstrap interval "
        f"({resamples:,} resamples). {BETTER} / {WORSE}: better / worse than the baseline `{baseline}` "
        "on the same chunker, whatever the metric's direction (for words@5 fewer words are better, so "
        f"{BETTER} there means fewer), by a paired randomization test ({permutations:,} sign flips) "
        "Holm-corrected over the "
        "tested metrics of that one comparison (so adding another configuration never moves it), at 0.05. "
        "**Bold**: the best value of the corpus "
        "(for words@5, the fewest words).",
    ]
    choices, labels = learned_choice_lines(summary, learned), learned_labels(learned)
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
        if which_k and which_k.get(corpus):
            lines += ["", *which_k[corpus]]
        lines += ["", "### Every configuration", ""]
        if choices.get(corpus):
            lines += [*choices[corpus], ""]
        table_rows = [
            [
                row["chunker"],
                labels.get((corpus, row["chunker"], row["retriever"]), row["retriever"]),
                *(_cell(row, item) for item in metrics),
            ]
            for row in (r._asdict() for r in rows.itertuples(index=False))
        ]
        lines += _markdown_table(["chunker", "retriever", *(item.label for item in metrics)], table_rows)
    return "\n".join(lines) + "\n"
