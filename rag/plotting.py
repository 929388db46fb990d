"""Figures of the measured results.

Each function takes tidy tables and returns a matplotlib Figure; saving is the
caller's job. The Agg backend and fixed sizes keep the PNGs identical from run
to run.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#7f7f7f", "#17becf"]
PNG_METADATA = {"Software": None}


def save(figure: Figure, path) -> None:
    figure.savefig(path, format="png", dpi=120, metadata=PNG_METADATA)
    plt.close(figure)


def _style(axes, title: str, xlabel: str, ylabel: str) -> None:
    axes.set_title(title, fontsize=11)
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.grid(True, alpha=0.3)


def recall_curves(metrics: pd.DataFrame, corpus: str, chunker: str) -> Figure:
    """Recall@k against k, one line per retriever, on one chunk set."""
    rows = metrics[(metrics.corpus == corpus) & (metrics.chunker == chunker) & (metrics.metric == "recall")]
    figure, axes = plt.subplots(figsize=(7, 4.5))
    for color, (retriever, group) in zip(PALETTE * 3, rows.groupby("retriever", sort=True), strict=False):
        group = group.sort_values("k")
        axes.plot(group["k"], group["value"], marker="o", markersize=3, color=color, label=retriever)
    axes.set_xscale("log")
    ks = sorted(rows["k"].unique())
    axes.set_xticks(ks, [str(int(k)) for k in ks])
    axes.set_ylim(0, 1.02)
    _style(axes, f"Recall@k by retriever ({corpus}, {chunker})", "k (chunks in the prompt)", "recall@k")
    axes.legend(fontsize=8, loc="lower right")
    figure.tight_layout()
    return figure


def recall_against_prompt_words(
    metrics: pd.DataFrame, corpus: str, retriever: str, max_k: int = 10
) -> Figure:
    """Recall@k against the words those k chunks cost, one line per chunker."""
    rows = metrics[(metrics.corpus == corpus) & (metrics.retriever == retriever) & (metrics.k <= max_k)]
    figure, axes = plt.subplots(figsize=(7, 4.5))
    for color, (chunker, group) in zip(PALETTE * 3, rows.groupby("chunker", sort=True), strict=False):
        recall = group[group.metric == "recall"].set_index("k")["value"]
        words = group[group.metric == "prompt_words"].set_index("k")["value"]
        ks = sorted(set(recall.index) & set(words.index))
        axes.plot(words[ks], recall[ks], marker="o", markersize=3, color=color, label=chunker)
    axes.set_xscale("log")
    axes.set_ylim(0, 1.02)
    _style(
        axes,
        f"Recall@k against prompt words, k = 1…{max_k} ({corpus}, {retriever})",
        "words of the top k chunks (mean over questions)",
        "recall@k",
    )
    axes.legend(fontsize=8, loc="lower right")
    figure.tight_layout()
    return figure


def rank_scatter(per_question: pd.DataFrame, first: str, second: str, depth: int, title: str) -> Figure:
    """First relevant rank under two retrievers; points off the diagonal show who wins."""
    pivot = per_question.pivot_table(
        index="question_id", columns="retriever", values="first_relevant_rank", aggfunc="first", dropna=False
    )
    missing = depth * 2.0
    x = pivot[first].fillna(missing).to_numpy(dtype=float)
    y = pivot[second].fillna(missing).to_numpy(dtype=float)
    # Questions often share a point (both at rank 1): draw each point once,
    # its area proportional to the number of questions there.
    points, counts = np.unique(np.column_stack([x, y]), axis=0, return_counts=True)
    figure, axes = plt.subplots(figsize=(5.5, 5.5))
    groups = [
        (points[:, 0] < points[:, 1], PALETTE[0], f"{first} ranks it higher"),
        (points[:, 1] < points[:, 0], PALETTE[1], f"{second} ranks it higher"),
        (points[:, 0] == points[:, 1], PALETTE[7], "same rank"),
    ]
    for mask, color, label in groups:
        total = int(counts[mask].sum())
        axes.scatter(
            points[mask, 0],
            points[mask, 1],
            s=18 * counts[mask],
            color=color,
            alpha=0.7,
            label=f"{label} ({total})",
        )
    axes.plot([1, missing], [1, missing], color="black", linewidth=0.8, alpha=0.5)
    axes.set_xscale("log")
    axes.set_yscale("log")
    ticks = [1, 3, 10, 30, 100, missing]
    labels = [str(t) for t in ticks[:-1]] + [f">{depth}"]
    axes.set_xticks(ticks, labels)
    axes.set_yticks(ticks, labels)
    axes.set_xlim(0.8, missing * 1.3)
    axes.set_ylim(0.8, missing * 1.3)
    _style(
        axes,
        title,
        f"rank of the first relevant chunk, {first}",
        f"rank of the first relevant chunk, {second}",
    )
    legend = axes.legend(fontsize=8, loc="upper left")
    for handle in legend.legend_handles:
        handle.set_sizes([30])
    figure.tight_layout()
    return figure


def weakest_cohort_bars(
    weakest: pd.DataFrame,
    title: str,
    xlabel: str = "recall@k",
    cohorts: tuple[str, ...] = ("type", "document"),
) -> Figure:
    """Per retriever: the mean beside its weakest cohort of each kind, named on the bar.

    ``weakest`` is one row per retriever with ``mean`` and, per cohort kind,
    ``weakest_<kind>`` and ``weakest_<kind>_value`` (see rag.cohorts.weakest_cohorts).
    """
    rows = weakest.sort_values("retriever", ascending=False).reset_index(drop=True)
    series = [("mean", "mean over questions", PALETTE[0], None)] + [
        (f"weakest_{kind}_value", f"weakest {kind} cohort", PALETTE[1 + i], f"weakest_{kind}")
        for i, kind in enumerate(cohorts)
    ]
    height = 0.8 / len(series)
    figure, axes = plt.subplots(figsize=(8, 1.0 + 0.55 * len(rows) * len(series) / 2))
    positions = np.arange(len(rows))
    for offset, (column, label, color, name_column) in enumerate(series):
        y = positions + (len(series) - 1 - offset - (len(series) - 1) / 2) * height
        values = rows[column].to_numpy(dtype=float)
        axes.barh(y, np.nan_to_num(values), height=height * 0.95, color=color, label=label)
        if name_column is not None:
            for y_value, value, name in zip(y, values, rows[name_column], strict=True):
                if value == value:
                    axes.text(value + 0.01, y_value, str(name), va="center", fontsize=6.5)
    axes.set_yticks(positions, rows["retriever"].tolist(), fontsize=8)
    axes.set_xlim(0, 1.18)
    _style(axes, title, xlabel, "")
    axes.legend(fontsize=8, loc="lower right")
    figure.tight_layout()
    return figure


def no_data(title: str) -> Figure:
    figure, axes = plt.subplots(figsize=(5, 3))
    axes.text(0.5, 0.5, "no data for this configuration", ha="center", va="center")
    axes.set_axis_off()
    axes.set_title(title)
    return figure
