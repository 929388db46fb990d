"""Draw time against collection size from the bm25_vs_peers table, log-log.

Three panels over the synthetic (``zipf``) rows of benchmarks/bm25_vs_peers.py:
index build seconds, seconds per query in a loop of single-query calls, and
seconds per query in one batched call (rank_bm25 has no batch call, so it is
left out there). One line per system, a marker at each measured size. The PNG
carries no timestamp, so the same table always gives the same file.

Usage (the committed figure, after the bm25_vs_peers.py runs in its docstring):
    .venv/bin/python benchmarks/plot_scaling.py
    .venv/bin/python benchmarks/plot_scaling.py --input /tmp/b.csv --output /tmp/scaling.png
"""

from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

PROJECT = Path(__file__).resolve().parents[1]
STYLES = {  # system: (label, colour, line style)
    "ours": ("ours (rag.retrieval.bm25)", "tab:blue", "-"),
    "bm25s": ("bm25s", "tab:orange", "--"),
    "rank_bm25": ("rank_bm25", "tab:red", ":"),
    "ours_tfidf": ("ours (rag.retrieval.tfidf)", "tab:green", "-"),
    "sklearn": ("scikit-learn tf-idf", "tab:purple", "--"),
}
PANELS = (  # column, y label, panel title, what is seconds (index time or 1 / rate)
    ("index_s", "seconds", "index build", False),
    ("single_qps", "seconds per query", "queries one call each", True),
    ("batch_qps", "seconds per query", "queries in one batched call", True),
)


def parse_arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--input", type=Path, default=PROJECT / "results/benchmarks/bm25_vs_peers.csv")
    parser.add_argument("--output", type=Path, default=PROJECT / "results/benchmarks/scaling.png")
    return parser.parse_args()


def plot(table: pd.DataFrame):
    if "collection" in table.columns:
        table = table[table["collection"] == "zipf"]
    if "depth" in table.columns:  # the top-10 rows; the table also times depth 1,000
        table = table[table["depth"] == table["depth"].min()]
    if table.empty:
        raise SystemExit("no synthetic (zipf) rows to plot")
    figure, axes = plt.subplots(1, len(PANELS), figsize=(5 * len(PANELS), 4.4), constrained_layout=True)
    for axis, (column, ylabel, title, per_query) in zip(axes, PANELS, strict=True):
        for system, (label, colour, style) in STYLES.items():
            if system == "rank_bm25" and column == "batch_qps":
                continue  # no batch call: the table repeats its single-query rate
            rows = table[table["system"] == system].sort_values("documents")
            if rows.empty:
                continue
            values = 1.0 / rows[column] if per_query else rows[column]
            axis.plot(rows["documents"], values, style, color=colour, marker="o", label=label)
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_xlabel("documents in the collection")
        axis.set_ylabel(ylabel)
        axis.set_title(title, fontsize=11)
        axis.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=9)
    figure.suptitle(
        "BM25 and tf-idf against peers on synthetic Zipfian collections (single-threaded)", fontsize=12
    )
    return figure


def main() -> None:
    arguments = parse_arguments()
    figure = plot(pd.read_csv(arguments.input))
    arguments.output.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(arguments.output, dpi=120, metadata={"Software": None})
    print(f"wrote {arguments.output}")


if __name__ == "__main__":
    main()
