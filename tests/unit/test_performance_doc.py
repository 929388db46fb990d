"""docs/performance.md quotes the BM25 comparison from its generated tables, and names the backends."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

PROJECT = Path(__file__).resolve().parents[2]
TABLE = PROJECT / "results" / "benchmarks" / "bm25_vs_peers.csv"
COMPILE = PROJECT / "results" / "benchmarks" / "bm25_compile.csv"
DOC = PROJECT / "docs" / "performance.md"


def _systems(rows: pd.DataFrame) -> dict[str, pd.Series]:
    return {row.system: row for row in (rows.iloc[i] for i in range(len(rows)))}


def bm25_row(documents: int, depth: int, by: dict[str, pd.Series]) -> str:
    """The page's row for one size and depth: ours against bm25s, the prefilter, memory, load."""
    ours, peer, half = by["ours"], by["bm25s"], by["ours_prefiltered"]
    return (
        f"| {documents:,} | {depth:,} | {ours.single_qps:,.0f} / {peer.single_qps:,.0f} | "
        f"{peer.single_speedup:.2f} | {ours.batch_qps:,.0f} / {peer.batch_qps:,.0f} | "
        f"{peer.batch_speedup:.2f} | {half.single_speedup:.2f} / {half.batch_speedup:.2f} | "
        f"{peer.index_speedup:.1f} | {ours.peak_mb:,.0f} / {peer.peak_mb:,.0f} MB | {ours.load:.1f} |"
    )


def test_every_size_and_depth_of_the_table_is_a_row_of_the_page_with_its_figures():
    table = pd.read_csv(TABLE)
    page = DOC.read_text(encoding="utf-8")
    for (documents, depth), rows in table.groupby(["documents", "depth"]):
        by = _systems(rows)
        assert bm25_row(documents, depth, by) in page
        if "sklearn" in by:
            sklearn = by["sklearn"]
            tfidf_row = (
                f"| {documents:,} | {depth:,} | {sklearn.index_speedup:.1f}× | "
                f"{sklearn.single_speedup:.0f}× | {sklearn.batch_speedup:.1f}× |"
            )
            assert tfidf_row in page
    # No size on the page that the table lacks.
    sizes = {f"| {documents:,} |" for documents in table["documents"].unique()}
    section = page.split("## Retrieval against peer libraries", 1)[1].split("The same comparison runs", 1)[0]
    quoted = {line[: line.index("|", 2) + 1] for line in section.splitlines() if line.startswith("| 1")}
    assert quoted <= sizes, quoted - sizes


def test_the_page_quotes_the_compile_times():
    page = " ".join(DOC.read_text(encoding="utf-8").split())
    for row in pd.read_csv(COMPILE).itertuples(index=False):
        assert (
            f"| {row.cache} | {row.import_s:.2f} s | {row.first_call_s:.2f} s | {row.second_call_s:.3f} s | "
            f"{row.load:.1f} |"
        ) in page


def test_the_table_and_the_page_name_the_backends():
    table = pd.read_csv(TABLE)
    backends = set(table.loc[table["system"] == "bm25s", "backend"])
    assert len(backends) == 1 and backends <= {"numba", "numpy"}
    (backend,) = backends
    assert f"bm25s with {backend}" in " ".join(DOC.read_text(encoding="utf-8").split())
    ours = set(table.loc[table["system"] == "ours", "backend"])
    assert ours <= {"numba", "numpy"}
