"""Figures of the measured results.

Each function takes tidy tables and returns a matplotlib Figure; saving is
:func:`rag.formats.files.write_figure`'s job, at the edge. The Agg backend and fixed
sizes keep the PNGs identical from run to run.
"""

from __future__ import annotations

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#7f7f7f", "#17becf"]
LINE_STYLES = ["-", "--", ":"]


def _style(axes, title: str, xlabel: str, ylabel: str) -> None:
    axes.set_title(title, fontsize=11)
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.grid(True, alpha=0.3)


def legible_ticks(ks, span_fraction: float = 0.04) -> list[int]:
    """The ks to label on a log axis so that no two labels overlap.

    A label is kept only when it lies at least ``span_fraction`` of the axis
    (in log units) right of the last kept one; the largest k is always kept,
    replacing its neighbour if they would collide. Any list of ks then reads
    cleanly: 1 to 10 with 15, 20 and 50 labels 1..6, 8, 10, 15, 20, 50.
    """
    ks = sorted({int(k) for k in ks})
    if len(ks) < 2:
        return ks
    gap = (np.log10(ks[-1]) - np.log10(ks[0])) * span_fraction
    kept = [ks[0]]
    for k in ks[1:]:
        if np.log10(k) - np.log10(kept[-1]) >= gap:
            kept.append(k)
    if kept[-1] != ks[-1]:
        if len(kept) > 1 and np.log10(ks[-1]) - np.log10(kept[-1]) < gap:
            kept.pop()
        kept.append(ks[-1])
    return kept


# At most this many curves share one panel: beyond it colours and bands stop being told apart.
MAX_SERIES = 8
# Eight colours a reader (colour-blind ones included) tells apart (Okabe and Ito's palette,
# black for the baseline first), and a marker per series so that print in grey still separates them.
SERIES_COLOURS = ["#000000", "#E69F00", "#56B4E9", "#009E73", "#D55E00", "#0072B2", "#CC79A7", "#999933"]
SERIES_MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]


def chosen_series(means: pd.Series, baselines=(), limit: int = MAX_SERIES) -> list[str]:
    """The names to draw: every baseline present, then the highest means up to ``limit`` in all.

    Equal means go in name order, so the choice does not depend on row order.
    """
    kept = [name for name in baselines if name in means.index][:limit]
    ranked = sorted(means.index, key=lambda name: (-round(float(means[name]), 6), name))
    kept += [name for name in ranked if name not in kept][: limit - len(kept)]
    return kept


def recall_curves(
    intervals: pd.DataFrame,
    corpus: str,
    chunker: str,
    retrievers=None,
    best: int | None = None,
    baselines=(),
) -> Figure:
    """Recall@k against k with its bootstrap interval as a band, one line per retriever of one chunk set.

    ``intervals`` has the columns of results/metrics_ci.csv. ``retrievers``
    names the retrievers to draw, or ``best`` keeps the N with the highest
    mean recall over the ks; by default the ``baselines`` and the best others,
    at most :data:`MAX_SERIES` lines in all: twenty curves on a ten-colour
    cycle were unreadable (two orange lines, one grey area of bands). Each
    line has its own colour and marker, baselines first in black; bands are
    light with a dotted edge, so overlapping ones stay legible. The legend
    sits right of the axes.
    """
    rows = intervals[
        (intervals.corpus == corpus) & (intervals.chunker == chunker) & (intervals.metric == "recall")
    ]
    if retrievers:
        rows = rows[rows.retriever.isin(list(retrievers))]
    present = sorted(rows.retriever.unique())
    means = rows.groupby("retriever", sort=True)["value"].mean()
    if best:
        chosen = chosen_series(means, (), best)
    else:
        chosen = chosen_series(means, baselines, MAX_SERIES)
    names = [name for name in baselines if name in chosen] + sorted(set(chosen) - set(baselines))
    figure, axes = plt.subplots(figsize=(9, 4.8))
    for index, retriever in enumerate(names):
        group = rows[rows.retriever == retriever].sort_values("k")
        color = SERIES_COLOURS[index % len(SERIES_COLOURS)]
        marker = SERIES_MARKERS[index % len(SERIES_MARKERS)]
        style = LINE_STYLES[index // len(SERIES_COLOURS) % len(LINE_STYLES)]
        ks = group["k"].astype(float).to_numpy()
        axes.fill_between(ks, group["ci_low"], group["ci_high"], color=color, alpha=0.10, linewidth=0)
        for bound in ("ci_low", "ci_high"):
            axes.plot(ks, group[bound], color=color, linewidth=0.6, linestyle=":", alpha=0.6, label="_band")
        label = f"{retriever} (baseline)" if retriever in baselines else retriever
        axes.plot(
            ks,
            group["value"],
            marker=marker,
            markersize=4,
            color=color,
            linestyle=style,
            linewidth=1.6,
            label=label,
        )
    axes.set_xscale("log")
    axes.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ticks = legible_ticks(rows["k"].dropna().unique()) if len(rows) else []
    axes.set_xticks(ticks, [str(k) for k in ticks])
    axes.set_ylim(0, 1.02)
    shown = f"{len(names)} of {len(present)} retrievers" if len(names) < len(present) else "every retriever"
    _style(
        axes,
        f"Recall@k, 95 % intervals ({corpus}, {chunker}): {shown}",
        "k (chunks in the prompt)",
        "recall@k",
    )
    if names:
        axes.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    figure.tight_layout()
    return figure


def grid_overview(
    metrics: pd.DataFrame, corpus: str, metric: str = "ndcg", k: int = 10, words_k: int = 5
) -> Figure:
    """Every chunker x retriever of a corpus in one figure: ``metric@k`` as a heatmap and, beside it,
    the prompt cost (mean words of the top ``words_k`` chunks) of the same cells.

    Quality and cost side by side answer "which chunker and retriever" at a
    glance; a blank cell is a pair the grid does not run (a funnel on one
    chunker, say). The best quality and the fewest words are boxed.
    """
    rows = metrics[metrics.corpus == corpus]

    def grid(name: str, at: int) -> pd.DataFrame:
        chosen = rows[(rows.metric == name) & (rows.k == at)]
        return chosen.pivot_table(index="retriever", columns="chunker", values="value", aggfunc="first")

    quality, words = grid(metric, k), grid("prompt_words", words_k)
    retrievers = sorted(set(quality.index) | set(words.index))
    chunkers = sorted(set(quality.columns) | set(words.columns))
    quality = quality.reindex(index=retrievers, columns=chunkers)
    words = words.reindex(index=retrievers, columns=chunkers)
    height = 1.6 + 0.32 * max(len(retrievers), 1)
    figure, (left, right) = plt.subplots(1, 2, figsize=(15, height), sharey=True)
    panels = (
        (left, quality, "viridis", f"{metric}@{k} (higher is better)", ".3f", np.nanmax),
        (right, words, "magma_r", f"prompt words@{words_k} (fewer is cheaper)", ".0f", np.nanmin),
    )
    for axes, table, colours, title, digits, pick in panels:
        values = table.to_numpy(dtype=float)
        image = axes.imshow(np.ma.masked_invalid(values), cmap=colours, aspect="auto")
        figure.colorbar(image, ax=axes, fraction=0.04, pad=0.02)
        axes.set_xticks(range(len(chunkers)), chunkers, rotation=35, ha="right", fontsize=8)
        axes.set_yticks(range(len(retrievers)), retrievers, fontsize=8)
        axes.set_title(f"{title}, {corpus}", fontsize=11)
        finite = values[np.isfinite(values)]
        extreme = pick(finite) if len(finite) else None
        low, high = (finite.min(), finite.max()) if len(finite) else (0.0, 1.0)
        for (row, column), value in np.ndenumerate(values):
            if not np.isfinite(value):
                continue
            dark = (value - low) / (high - low or 1.0) < 0.5
            if colours.endswith("_r"):
                dark = not dark
            axes.text(
                column,
                row,
                format(value, digits),
                ha="center",
                va="center",
                fontsize=7,
                color="white" if dark else "black",
            )
            if extreme is not None and round(value, 6) == round(extreme, 6):
                axes.add_patch(
                    plt.Rectangle((column - 0.5, row - 0.5), 1, 1, fill=False, edgecolor="red", linewidth=2)
                )
    left.set_ylabel("retriever")
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


def abstention_tradeoff_figure(table: pd.DataFrame, corpus: str, threshold: float | None = None) -> Figure:
    """Shares answered, answered correctly and refused against the coverage threshold.

    Answered and correct are shares of the answerable questions, refused a
    share of the unanswerable ones, so the three curves show what raising
    the threshold buys (refusals) and what it costs (correct answers).
    """
    rows = table[table.corpus == corpus]
    pair = ", ".join(f"{rows[key].iloc[0]}" for key in ("chunker", "retriever")) if len(rows) else ""
    figure, axes = plt.subplots(figsize=(7, 5))
    curves = [
        ("answerable", "answered", PALETTE[0], "answered (share of answerable)"),
        ("answerable", "correct", PALETTE[2], "correct: quotes the evidence (share of answerable)"),
        ("unanswerable", "abstained", PALETTE[1], "refused (share of unanswerable)"),
    ]
    for group, column, color, label in curves:
        part = rows[rows.group == group].sort_values("threshold")
        if part.empty:
            continue
        total = int(part["questions"].iloc[0])
        axes.plot(
            part["threshold"],
            part[column] / total,
            marker="o",
            markersize=3,
            color=color,
            label=f"{label}, n = {total}",
        )
    if threshold is not None:
        axes.axvline(
            threshold,
            color="black",
            linewidth=0.8,
            linestyle="--",
            alpha=0.6,
            label=f"threshold {threshold:g}",
        )
    axes.set_ylim(0, 1.02)
    _style(axes, f"Abstention trade-off ({corpus}, {pair})", "coverage threshold", "share of questions")
    # Below the axes: the curves cross the whole plotting area.
    axes.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, frameon=False)
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
    ``weakest_<kind>`` and ``weakest_<kind>_value`` (see rag.evaluation.cohorts.weakest_cohorts).
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


GROUNDING_MODEL_LABELS = {
    "memory": "memory (the prompt alone)",
    "sources": "conditioned on all k chunks",
    "rag_sequence": "RAG-Sequence",
    "rag_token": "RAG-Token",
}


def _ratio_label(log10_ratio: float) -> str:
    """A ratio as ×0.52 when it is readable that way, as ×10^-4.2 when it is not; n/a when missing."""
    if not np.isfinite(log10_ratio):
        return "n/a"
    if abs(log10_ratio) < 3:
        return f"×{10.0**log10_ratio:.3g}"
    return rf"$\times 10^{{{log10_ratio:.1f}}}$"


def _generators(table: pd.DataFrame) -> list[str]:
    # Tables written before the generator column held the trigram model only.
    return list(dict.fromkeys(table["generator"])) if "generator" in table else ["trigram"]


def _answer_panel(axes: plt.Axes, answers: pd.DataFrame, generator: str) -> None:
    """log10 P(true) and P(wrong) per case and model, for one generator; a missing score is not drawn."""
    from matplotlib.lines import Line2D

    cases = list(dict.fromkeys(answers["case"]))
    models = list(dict.fromkeys(answers["model"]))
    width = 0.8 / len(models)
    handles = []
    for index, model in enumerate(models):
        color = PALETTE[index % len(PALETTE)]
        rows = answers[answers.model == model]

        def values(answer: str, rows: pd.DataFrame = rows) -> np.ndarray:
            picked = rows[rows["answer_kind"].eq(answer)].set_index("case").reindex(cases)
            return picked["log10_likelihood"].to_numpy(dtype=float)

        true, wrong = values("true"), values("wrong")
        x = np.arange(len(cases)) + (index - (len(models) - 1) / 2) * width
        axes.vlines(x, np.minimum(true, wrong), np.maximum(true, wrong), color=color, linewidth=2, alpha=0.45)
        axes.scatter(x, true, marker="o", s=36, color=color, zorder=3)
        axes.scatter(x, wrong, marker="x", s=36, color=color, zorder=3)
        handles.append(
            Line2D([], [], color=color, linewidth=2, label=GROUNDING_MODEL_LABELS.get(model, model))
        )
    handles += [
        Line2D([], [], marker="o", color="black", linestyle="", label="true answer"),
        Line2D([], [], marker="x", color="black", linestyle="", label="wrong answer (another body's)"),
    ]
    axes.set_xticks(np.arange(len(cases)), cases, fontsize=8)
    _style(
        axes, f"{generator}: true above wrong means it prefers the truth", "case", "log10 P(answer | prompt)"
    )
    axes.legend(handles=handles, fontsize=7, loc="lower left")


def grounding_figure(answers: pd.DataFrame, swap: pd.DataFrame, setting: dict) -> Figure:
    """Left: log10 probability of the true and the wrong answer per case and model, one panel per generator.

    Right: the correct comparison sentence and its swapped twin under
    RAG-Sequence and RAG-Token for each generator, annotated with the ratios
    between them.
    """
    generators = _generators(answers)
    if "generator" not in answers:
        answers = answers.assign(generator="trigram")
    if "generator" not in swap:
        swap = swap.assign(generator="trigram")
    figure, panels = plt.subplots(
        1,
        len(generators) + 1,
        figsize=(7.5 * len(generators) + 5.5, 5.5),
        gridspec_kw={"width_ratios": [2.4] * len(generators) + [1.2]},
    )
    for axes, generator in zip(panels[:-1], generators, strict=True):
        _answer_panel(axes, answers[answers["generator"] == generator], generator)

    right = panels[-1]
    bars = list(dict.fromkeys(zip(swap["generator"], swap["model"], strict=True)))
    candidates = list(dict.fromkeys(swap["candidate"]))
    bar_width = 0.8 / len(candidates)
    table = swap.set_index(["generator", "candidate", "model"])
    for index, candidate in enumerate(candidates):
        heights = [table.loc[(generator, candidate, model), "log10_likelihood"] for generator, model in bars]
        sentence = table.loc[(bars[0][0], candidate, bars[0][1]), "sentence"]
        x = np.arange(len(bars)) + (index - (len(candidates) - 1) / 2) * bar_width
        right.bar(x, heights, bar_width, color=PALETTE[index], label=f"{candidate}: {sentence}")
    lowest = float(np.nanmin(swap["log10_likelihood"].to_numpy(dtype=float)))
    for position, (generator, model) in enumerate(bars):
        if "swapped" in candidates and "correct" in candidates:
            ratio = table.loc[(generator, "swapped", model), "log10_ratio_to_correct"]
            right.annotate(
                _ratio_label(ratio),
                (position, 0.0),
                xytext=(0, 4),
                textcoords="offset points",
                ha="center",
                va="bottom",
                fontsize=7,
            )
    gains = []
    for generator in dict.fromkeys(generator for generator, _ in bars):
        if (generator, "correct", "rag_token") in table.index:
            gain = table.loc[(generator, "correct", "rag_token"), "log10_ratio_to_rag_sequence"]
            gains.append(f"{generator} {_ratio_label(gain)}")
    if gains:
        right.text(
            0.5,
            0.04,
            "correct sentence, RAG-Token / RAG-Sequence:\n" + ", ".join(gains),
            transform=right.transAxes,
            ha="center",
            fontsize=7,
        )
    labels = [
        f"{generator}\n{GROUNDING_MODEL_LABELS.get(model, model)}"
        if len(generators) > 1
        else GROUNDING_MODEL_LABELS.get(model, model)
        for generator, model in bars
    ]
    right.set_xticks(np.arange(len(bars)), labels, fontsize=7)
    right.set_ylim(lowest * 1.25, abs(lowest) * 0.3)
    _style(
        right,
        f"Swapped values ({swap['question_id'].iloc[0]}); above: swapped / correct",
        "formulation",
        "log10 P(sentence)",
    )
    right.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.18))
    figure.suptitle(
        f"Grounding on {setting['corpus']}: top {setting['k']} chunks of {setting['retriever']} on "
        f"{setting['chunker']}, prior temperature {setting['temperature']}",
        fontsize=11,
    )
    figure.tight_layout()
    return figure


def ivf_tradeoff(collection: pd.DataFrame, synthetic: pd.DataFrame) -> Figure:
    """What an IVF index costs in recall: recall against the share of vectors scanned.

    Recall against exact search for the collection's chunk vectors and for
    the synthetic vectors, with the collection's labelled recall beside it,
    because that is the number the index should be tuned on. Everything drawn
    is deterministic; the query times are :func:`ivf_query_time`'s figure.
    """
    collection = collection.sort_values("probes")
    synthetic = synthetic.sort_values("probes")
    first = collection.iloc[0]
    vectors = (
        f"{first['retriever']} vectors ({first['corpus']}, {first['chunker']}), {int(first['lists'])} lists"
    )
    synthetic_vectors = _synthetic_vectors(synthetic)
    figure, axes = plt.subplots(1, 1, figsize=(7, 4.8))

    curves = (
        (
            collection,
            "recall_against_exact",
            "o",
            "-",
            0,
            1.0,
            f"{vectors}: recall@{int(first['k'])} against exact",
        ),
        (
            collection,
            "labelled_recall",
            "o",
            "--",
            0,
            0.6,
            f"{first['retriever']}: labelled recall@{int(first['labelled_k'])}",
        ),
        (
            synthetic,
            "recall_against_exact",
            "s",
            "-",
            1,
            1.0,
            f"{synthetic_vectors}: recall@{int(synthetic['k'].iloc[0])} against exact",
        ),
    )
    for table, column, marker, linestyle, color, alpha, label in curves:
        axes.plot(
            table["mean_share_scanned"],
            table[column],
            marker=marker,
            markersize=3,
            linestyle=linestyle,
            color=PALETTE[color],
            alpha=alpha,
            label=label,
        )
    for table, color in (
        (collection[collection["probes"].isin([1, 2, 4, 8])], PALETTE[0]),
        (synthetic, PALETTE[1]),
    ):
        for share, recall, probes in zip(
            table["mean_share_scanned"], table["recall_against_exact"], table["probes"], strict=True
        ):
            axes.annotate(
                f"p={int(probes)}",
                (share, recall),
                textcoords="offset points",
                xytext=(4, -9),
                fontsize=7,
                color=color,
            )
    axes.set_xscale("log")
    axes.set_ylim(0, 1.02)
    _style(axes, "Recall against the share of vectors scanned", "mean share of the vectors scanned", "recall")
    axes.legend(fontsize=7, loc="lower right")

    figure.tight_layout()
    return figure


def _synthetic_vectors(synthetic: pd.DataFrame) -> str:
    return (
        f"synthetic {int(synthetic['vectors'].iloc[0]):,} x {int(synthetic['dimensions'].iloc[0])}, "
        f"{int(synthetic['lists'].iloc[0])} lists"
    )


def ivf_query_time(synthetic: pd.DataFrame) -> Figure:
    """What an IVF index saves in time: synthetic query time relative to exact search, against probes.

    Beside it the share scanned, which is what the time would be if scanning
    were the only cost. The times measure the machine, so this figure goes to
    the timings folder (rag.timing.TIMINGS_FOLDER), not beside the results.
    """
    synthetic = synthetic.sort_values("probes")
    synthetic_vectors = _synthetic_vectors(synthetic)
    figure, axes = plt.subplots(1, 1, figsize=(7, 4.8))
    axes.plot(
        synthetic["probes"],
        synthetic["time_relative_to_exact"],
        marker="s",
        markersize=3,
        color=PALETTE[1],
        label="IVF query time / exact query time",
    )
    axes.plot(
        synthetic["probes"],
        synthetic["mean_share_scanned"],
        linestyle=":",
        color=PALETTE[7],
        label="share of the vectors scanned",
    )
    axes.axhline(1.0, color="black", linewidth=0.8, alpha=0.5, label="exact search")
    axes.set_xscale("log", base=2)
    axes.set_yscale("log")
    probes = [int(p) for p in synthetic["probes"]]
    axes.set_xticks(probes, [str(p) for p in probes])
    _style(
        axes,
        f"Query time against probes ({synthetic_vectors}; times vary by run)",
        "lists probed per query (p)",
        "relative to exact search",
    )
    axes.title.set_fontsize(9)
    axes.legend(fontsize=8, loc="lower right")
    figure.tight_layout()
    return figure
