"""The BM25 tables of docs/performance.md, from the benchmark's own tables (issue 49's "Must show").

Reads results/benchmarks/bm25_vs_peers.csv, bm25_compile.csv,
prune_crossover.csv, engine_crossover.csv and ranking_jobs.csv and writes,
between the markers in docs/performance.md, the first-call compile times, the
comparison with bm25s per size and depth (with memory and load), which of the
issue's goals each row meets, our tf-idf against scikit-learn, MaxScore
against the exhaustive loop, the numpy loop against the compiled one with the
cost of loading it, and the pipeline's own ranking jobs before and after.
Nothing in that part of the page is typed by hand: rerun the script after the
benchmark.

Usage (from the repository root):
    .venv/bin/python docs/performance_table.py
    .venv/bin/python docs/performance_table.py --check   # fail if the page differs
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
DOCUMENT = ROOT / "docs" / "performance.md"
TABLE = ROOT / "results" / "benchmarks" / "bm25_vs_peers.csv"
COMPILE = ROOT / "results" / "benchmarks" / "bm25_compile.csv"
CROSSOVER = ROOT / "results" / "benchmarks" / "prune_crossover.csv"
ENGINES = ROOT / "results" / "benchmarks" / "engine_crossover.csv"
RANKING_JOBS = ROOT / "results" / "benchmarks" / "ranking_jobs.csv"
BEGIN, END = "<!-- bm25 tables: begin -->", "<!-- bm25 tables: end -->"

# Issue 49's goals against bm25s: queries (by depth), the prefilter's cost, indexing.
QUERY_GOALS = {10: 1.5, 1000: 1.2}
PREFILTER_GOAL = 1.2
INDEX_GOAL = 3.0


def _systems(rows: pd.DataFrame) -> dict[str, pd.Series]:
    return {row.system: row for _, row in rows.iterrows()}


def compile_table(compile_times: pd.DataFrame) -> list[str]:
    lines = ["| cache | import | first call (BM25) | second call (tf-idf) | load |", "|---|---|---|---|---|"]
    for row in compile_times.itertuples(index=False):
        lines.append(
            f"| {row.cache} | {row.import_s:.2f} s | {row.first_call_s:.2f} s | {row.second_call_s:.3f} s | "
            f"{row.load:.1f} |"
        )
    return lines


def bm25_row(documents: int, depth: int, by: dict[str, pd.Series]) -> str:
    """One size and depth: ours against bm25s, the prefilter, indexing, memory, load."""
    ours, peer, half = by["ours"], by["bm25s"], by["ours_prefiltered"]
    return (
        f"| {documents:,} | {depth:,} | {ours.single_qps:,.0f} / {peer.single_qps:,.0f} | "
        f"{peer.single_speedup:.2f} | {ours.batch_qps:,.0f} / {peer.batch_qps:,.0f} | "
        f"{peer.batch_speedup:.2f} | {half.single_speedup:.2f} / {half.batch_speedup:.2f} | "
        f"{peer.index_speedup:.1f} | {ours.peak_mb:,.0f} / {peer.peak_mb:,.0f} MB | {ours.load:.1f} |"
    )


def _verdict(met: bool) -> str:
    return "met" if met else "missed"


def goal_line(documents: int, depth: int, by: dict[str, pd.Series]) -> str:
    peer, half = by["bm25s"], by["ours_prefiltered"]
    goal = QUERY_GOALS.get(depth)
    parts = [f"- {documents:,} documents, depth {depth:,}: {peer.single_speedup:.2f}× one at a time, "]
    parts.append(f"{peer.batch_speedup:.2f}× batched")
    if goal is not None:
        met = peer.single_speedup >= goal and peer.batch_speedup >= goal
        parts.append(f" (goal {goal}×: {_verdict(met)})")
    worst = max(half.single_speedup, half.batch_speedup)
    parts.append(
        f"; prefiltered {half.single_speedup:.2f} / {half.batch_speedup:.2f} of the unfiltered time "
        f"(goal at most {PREFILTER_GOAL}: {_verdict(worst <= PREFILTER_GOAL)}); "
        f"indexing {peer.index_speedup:.1f}× (goal {INDEX_GOAL}×: "
        f"{_verdict(peer.index_speedup >= INDEX_GOAL)})."
    )
    return "".join(parts)


def tfidf_row(documents: int, depth: int, sklearn: pd.Series) -> str:
    return (
        f"| {documents:,} | {depth:,} | {sklearn.index_speedup:.1f}× | "
        f"{sklearn.single_speedup:.0f}× | {sklearn.batch_speedup:.1f}× |"
    )


def crossover_table(crossover: pd.DataFrame) -> list[str]:
    lines = [
        "MaxScore against the exhaustive loop, our BM25 one query per call",
        "(`results/benchmarks/prune_crossover.csv`, `benchmarks/prune_crossover.py`; above 1,",
        "pruning is faster; the loop's default is its switches' choice for that size and depth):",
        "",
        "| documents | depth | exhaustive ms/query | pruned ms/query | exhaustive / pruned | default "
        "| load |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in crossover.itertuples(index=False):
        lines.append(
            f"| {row.documents:,} | {row.depth:,} | {row.exhaustive_ms:.3f} | {row.pruned_ms:.3f} | "
            f"{row.exhaustive_over_pruned:.2f} | {row.default} | {row.load:.1f} |"
        )
    return lines


def engine_table(engines: pd.DataFrame) -> list[str]:
    lines = [
        "The numpy loop against the compiled one, our BM25 one query per call, and what loading the",
        "compiled one costs a fresh process (`results/benchmarks/engine_crossover.csv`,",
        "`benchmarks/engine_crossover.py`; break-even: the queries whose saving pays for the load;",
        "auto from: the queries from which a fresh process takes the compiled loop):",
        "",
        "| documents | depth | numpy ms/query | compiled ms/query | load | break-even queries "
        "| auto from | load average |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in engines.itertuples(index=False):
        break_even = "never" if pd.isna(row.break_even_queries) else f"{int(row.break_even_queries):,}"
        lines.append(
            f"| {row.documents:,} | {row.depth:,} | {row.numpy_ms:.3f} | {row.compiled_ms:.3f} | "
            f"{row.load_s:.2f} s | {break_even} | {row.auto_from_queries:,} | {row.load:.1f} |"
        )
    return lines


def ranking_jobs_table(jobs: pd.DataFrame) -> list[str]:
    """Per setup and commit, the ranking jobs every commit ran: how many, their summed median seconds."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from ranking_jobs import job_totals

    lines = [
        "The pipeline's own BM25 and tf-idf ranking jobs, from their Snakemake timing files",
        "(`results/benchmarks/ranking_jobs.csv`, `benchmarks/ranking_jobs.py`; the medians of",
        f"{int(jobs['repeats'].min())} runs per job, summed over the jobs every commit ran):",
        "",
        "| setup | commit | jobs | wall seconds | CPU seconds |",
        "|---|---|---|---|---|",
    ]
    for row in job_totals(jobs).itertuples(index=False):
        lines.append(f"| {row.setup} | {row.code} | {row.jobs} | {row.seconds:.2f} | {row.cpu_seconds:.2f} |")
    return lines


def section(
    table: pd.DataFrame,
    compile_times: pd.DataFrame,
    crossover: pd.DataFrame | None = None,
    engines: pd.DataFrame | None = None,
    ranking_jobs: pd.DataFrame | None = None,
) -> str:
    backend = "/".join(sorted(set(table.loc[table["system"] == "bm25s", "backend"])))
    groups = [
        (int(documents), int(depth), _systems(rows))
        for (documents, depth), rows in table.groupby(["documents", "depth"])
    ]
    lines = [
        "First calls in fresh interpreters, from an empty cache and from the filled one",
        "(`results/benchmarks/bm25_compile.csv`, `--compile-output`):",
        "",
        *compile_table(compile_times),
        "",
        f"Against bm25s with {backend}, from `results/benchmarks/bm25_vs_peers.csv` (queries/s;",
        "× bm25s is bm25s's time over ours; the prefiltered column is our time with half the",
        "collection allowed over our unfiltered time; peak memory while indexing; the load",
        "average when the size started):",
        "",
        "| documents | depth | queries/s one at a time: ours / bm25s | × bm25s | batched: ours / bm25s | "
        "× bm25s | prefiltered time / unfiltered (one, batch) | index × bm25s | "
        "peak memory indexing: ours / bm25s | load |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *(bm25_row(documents, depth, by) for documents, depth, by in groups),
        "",
        "By the goals of issue 49:",
        "",
        *(goal_line(documents, depth, by) for documents, depth, by in groups),
    ]
    tfidf = [(documents, depth, by["sklearn"]) for documents, depth, by in groups if "sklearn" in by]
    if tfidf:
        lines += [
            "",
            "Our tf-idf against scikit-learn (its time over ours):",
            "",
            "| documents | depth | index | one query at a time | batched |",
            "|---|---|---|---|---|",
            *(tfidf_row(documents, depth, sklearn) for documents, depth, sklearn in tfidf),
        ]
    if crossover is not None:
        lines += ["", *crossover_table(crossover)]
    if engines is not None:
        lines += ["", *engine_table(engines)]
    if ranking_jobs is not None:
        lines += ["", *ranking_jobs_table(ranking_jobs)]
    return "\n".join(lines)


def rendered(
    page: str,
    table: pd.DataFrame,
    compile_times: pd.DataFrame,
    crossover: pd.DataFrame | None = None,
    engines: pd.DataFrame | None = None,
    ranking_jobs: pd.DataFrame | None = None,
) -> str:
    """The page with the part between the markers generated again."""
    if page.count(BEGIN) != 1 or page.count(END) != 1:
        raise ValueError(f"{DOCUMENT.name} needs one {BEGIN!r} and one {END!r} marker")
    head, rest = page.split(BEGIN)
    _, tail = rest.split(END)
    return f"{head}{BEGIN}\n{section(table, compile_times, crossover, engines, ranking_jobs)}\n{END}{tail}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--check", action="store_true", help="fail if the page differs from the tables")
    arguments = parser.parse_args(argv)
    page = DOCUMENT.read_text(encoding="utf-8")
    tables = (pd.read_csv(path) for path in (TABLE, COMPILE, CROSSOVER, ENGINES, RANKING_JOBS))
    new = rendered(page, *tables)
    if arguments.check:
        if new != page:
            print(f"{DOCUMENT.relative_to(ROOT)} differs from the benchmark tables: rerun this script")
            return 1
        return 0
    DOCUMENT.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
