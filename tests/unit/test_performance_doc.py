"""docs/performance.md quotes the BM25 comparison from its generated table, and names bm25s's backend."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

PROJECT = Path(__file__).resolve().parents[2]
TABLE = PROJECT / "results" / "benchmarks" / "bm25_vs_peers.csv"
DOC = PROJECT / "docs" / "performance.md"


def _systems(rows: pd.DataFrame) -> dict[str, pd.Series]:
    return {row.system: row for row in (rows.iloc[i] for i in range(len(rows)))}


def test_every_size_of_the_table_is_a_row_of_the_page_with_its_figures():
    table = pd.read_csv(TABLE)
    page = DOC.read_text(encoding="utf-8")
    for documents, rows in table.groupby("documents"):
        by = _systems(rows)
        ours, peer, okapi, sklearn = by["ours"], by["bm25s"], by["rank_bm25"], by["sklearn"]
        bm25_row = (
            f"| {documents:,} | {ours.index_s:.2f} s / {peer.index_s:.2f} s | {peer.index_speedup:.1f} | "
            f"{ours.single_qps:,.0f} / {peer.single_qps:,.0f} | {peer.single_speedup:.2f} | "
            f"{ours.batch_qps:,.0f} / {peer.batch_qps:,.0f} | {peer.batch_speedup:.2f} | "
            f"{okapi.single_speedup:.0f} / {okapi.batch_speedup:.0f} | "
            f"{ours.index_mb:.1f} / {peer.index_mb:.1f} MB |"
        )
        assert bm25_row in page
        tfidf_row = (
            f"| {documents:,} | {sklearn.index_speedup:.1f}× | {sklearn.single_speedup:.0f}× | "
            f"{sklearn.batch_speedup:.1f}× |"
        )
        assert tfidf_row in page
    # No size on the page that the table lacks.
    sizes = {f"| {documents:,} |" for documents in table["documents"].unique()}
    section = page.split("## Retrieval against peer libraries", 1)[1].split("The same comparison runs", 1)[0]
    quoted = {line[: line.index("|", 2) + 1] for line in section.splitlines() if line.startswith("| 1")}
    assert quoted <= sizes, quoted - sizes


def test_the_table_and_the_page_name_bm25s_s_backend():
    table = pd.read_csv(TABLE)
    backends = set(table.loc[table["system"] == "bm25s", "backend"])
    assert len(backends) == 1 and backends <= {"numba", "numpy"}
    (backend,) = backends
    assert f"bm25s with {backend}" in " ".join(DOC.read_text(encoding="utf-8").split())
