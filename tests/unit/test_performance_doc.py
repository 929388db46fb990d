"""docs/performance.md quotes the BM25 comparison from its generated tables, and names the backends."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pandas as pd

PROJECT = Path(__file__).resolve().parents[2]
TABLE = PROJECT / "results" / "benchmarks" / "bm25_vs_peers.csv"
COMPILE = PROJECT / "results" / "benchmarks" / "bm25_compile.csv"
CROSSOVER = PROJECT / "results" / "benchmarks" / "prune_crossover.csv"
ENGINES = PROJECT / "results" / "benchmarks" / "engine_crossover.csv"
RANKING_JOBS = PROJECT / "results" / "benchmarks" / "ranking_jobs.csv"
DOC = PROJECT / "docs" / "performance.md"


def _generator():
    spec = importlib.util.spec_from_file_location(
        "performance_table", PROJECT / "docs" / "performance_table.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_page_is_generated_from_the_tables():
    page = DOC.read_text(encoding="utf-8")
    tables = (pd.read_csv(path) for path in (TABLE, COMPILE, CROSSOVER, ENGINES, RANKING_JOBS))
    assert _generator().rendered(page, *tables) == page


def test_the_crossover_table_names_what_the_loop_does_by_default():
    """Each size and depth of the pruning benchmark says which way the loop's switches take it now."""
    from rag.retrieval import sparse_kernels as kernels

    crossover = pd.read_csv(CROSSOVER)
    assert len(crossover) >= 4
    for row in crossover.itertuples(index=False):
        assert row.default == ("pruned" if kernels.prunes(row.documents, row.depth) else "exhaustive"), row


def test_the_engine_table_follows_the_search_rule():
    """Where a fresh process takes the compiled loop is the table's: its threshold lies between the
    measured break-even points of the sizes where the loop matters, and each row says where "auto"
    switches under the rule as it is now."""
    import math

    from rag.retrieval import search

    engines = pd.read_csv(ENGINES)
    assert set(engines["depth"]) == {10, 1000} and engines["documents"].nunique() >= 3
    for row in engines.itertuples(index=False):
        assert row.auto_from_queries == math.ceil(search.COMPILED_MIN_WORK / row.documents), row
        assert search.compiled_pays(row.documents, row.auto_from_queries, loaded=False)
        assert not search.compiled_pays(row.documents, row.auto_from_queries - 1, loaded=False)
    large = engines[engines["documents"] >= 100_000]["break_even_work"].dropna()
    assert len(large) >= 2
    assert large.min() <= search.COMPILED_MIN_WORK <= large.max()


def test_every_size_and_depth_of_the_table_is_a_row_of_the_page_with_its_speedups():
    """Independently of the generator: each row's ratios, recomputed from its rates, are on the page."""
    table = pd.read_csv(TABLE)
    page = DOC.read_text(encoding="utf-8")
    for (documents, depth), rows in table.groupby(["documents", "depth"]):
        by = {row.system: row for _, row in rows.iterrows()}
        ours, peer = by["ours"], by["bm25s"]
        single = ours.single_qps / peer.single_qps
        batch = ours.batch_qps / peer.batch_qps
        line = next(line for line in page.splitlines() if line.startswith(f"| {documents:,} | {depth:,} | "))
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        assert abs(float(cells[3]) - single) <= 0.006 and abs(float(cells[5]) - batch) <= 0.006, line
        assert cells[2] == f"{ours.single_qps:,.0f} / {peer.single_qps:,.0f}"


def test_the_goals_follow_from_the_ratios():
    generator = _generator()
    row = {
        "ours": pd.Series({"single_qps": 1.0, "batch_qps": 1.0}),
        "bm25s": pd.Series({"single_speedup": 1.6, "batch_speedup": 1.49, "index_speedup": 3.0}),
        "ours_prefiltered": pd.Series({"single_speedup": 1.2, "batch_speedup": 0.9}),
    }
    line = generator.goal_line(100_000, 10, row)
    assert "(goal 1.5×: missed)" in line and "(goal at most 1.2: met)" in line and "(goal 3.0×: met)" in line
    row["bm25s"]["batch_speedup"] = 1.5
    row["ours_prefiltered"]["batch_speedup"] = 1.21
    line = generator.goal_line(100_000, 10, row)
    assert "(goal 1.5×: met)" in line and "(goal at most 1.2: missed)" in line


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
