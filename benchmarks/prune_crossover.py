"""Where MaxScore pays: our BM25 queries pruned and exhaustive, by collection size and depth.

The compiled loop (rag.retrieval.sparse_kernels) prunes with MaxScore only in
collections of at least ``PRUNE_MIN_CHUNKS`` chunks, for depths up to
``PRUNE_MAX_DEPTH`` or up to ``PRUNE_DEPTH_SHARE`` of the collection. This
script times the same queries both ways on the synthetic Zipf collections of
benchmarks/bm25_vs_peers.py (same terms, same seed), alternating the two so
that both see the same load ("pruned": MaxScore allowed on every query;
a query whose floor leaves too much to walk still goes exhaustive, as by
default), and writes one row per size and depth: the
median seconds per query of each, and ``exhaustive_over_pruned`` (above 1:
pruning is faster). Both ways return the same rankings (asserted here, and on
2,000 random cases in tests/unit/retrieval/test_sparse_loop.py). One query per
call, one thread, numba required.

Usage:
    .venv/bin/python benchmarks/prune_crossover.py 10000 30000 50000 100000 1000000 \\
        --output results/benchmarks/prune_crossover.csv
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(variable, "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bm25_vs_peers import zipfian_collection  # noqa: E402

from rag.retrieval import sparse_kernels  # noqa: E402
from rag.retrieval.bm25 import bm25_search, build_bm25_index  # noqa: E402

DEPTHS = (10, 1000)
# The switches that force one way or the other (the defaults decide in between).
EXHAUSTIVE = {"PRUNE_MIN_CHUNKS": 10**12, "PRUNE_MAX_DEPTH": 0, "PRUNE_DEPTH_SHARE": 0.0}
PRUNED = {"PRUNE_MIN_CHUNKS": 0, "PRUNE_MAX_DEPTH": 10**9, "PRUNE_DEPTH_SHARE": 1.0}


def parse_arguments(description: str = __doc__.split("\n\n")[0]) -> argparse.Namespace:
    """The command line of this benchmark and of benchmarks/engine_crossover.py: sizes, the Zipf
    collection's settings, queries, repeats and the output table."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("sizes", nargs="+", type=int, help="collection sizes (documents)")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5, help="timed passes over the queries, per way")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--vocabulary", type=int, default=50_000)
    parser.add_argument("--exponent", type=float, default=1.1)
    parser.add_argument("--mean-length", type=float, default=80.0)
    parser.add_argument("--output", type=Path)
    arguments = parser.parse_args()
    if not sparse_kernels.AVAILABLE:
        parser.error("needs numba: pip install -c constraints.txt numba")
    return arguments


def write_table(table: pd.DataFrame, output: Path | None) -> None:
    """Print ``table`` and, with ``output``, write it there as CSV."""
    print(table.to_string(index=False))
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        table.to_csv(output, index=False)
        print(f"wrote {output} ({len(table)} rows)")


def switched(settings: dict, run):
    """``run`` with the kernel's pruning switches set to ``settings`` (restored after)."""

    def call():
        saved = {name: getattr(sparse_kernels, name) for name in settings}
        for name, value in settings.items():
            setattr(sparse_kernels, name, value)
        try:
            return run()
        finally:
            for name, value in saved.items():
                setattr(sparse_kernels, name, value)

    return call


def measure(size: int, arguments: argparse.Namespace) -> list[dict]:
    collection = zipfian_collection(size, arguments)
    index = build_bm25_index(collection.documents, k1=1.5, b=0.75)
    queries = collection.bm25_queries
    rows = []
    for depth in DEPTHS:
        ways = {
            name: switched(settings, lambda depth=depth: [bm25_search(index, [q], depth) for q in queries])
            for name, settings in (("exhaustive", EXHAUSTIVE), ("pruned", PRUNED))
        }
        first = {name: run() for name, run in ways.items()}  # untimed: compiles or loads the loop
        for one, other in zip(first["exhaustive"], first["pruned"], strict=True):
            ranking, pruned = one[0], other[0]
            assert np.array_equal(ranking.positions, pruned.positions)
            assert np.array_equal(ranking.scores, pruned.scores)
        seconds = {name: [] for name in ways}
        for _ in range(arguments.repeats):
            for name, run in ways.items():
                started = time.perf_counter()
                run()
                seconds[name].append((time.perf_counter() - started) / len(queries))
        exhaustive, pruned = (statistics.median(seconds[name]) for name in ("exhaustive", "pruned"))
        ratios = [e / p for e, p in zip(seconds["exhaustive"], seconds["pruned"], strict=True)]
        rows.append(
            {
                "documents": size,
                "depth": depth,
                "queries": len(queries),
                "repeats": arguments.repeats,
                "exhaustive_ms": round(exhaustive * 1e3, 4),
                "pruned_ms": round(pruned * 1e3, 4),
                "exhaustive_over_pruned": round(statistics.median(ratios), 3),
                "default": "pruned" if sparse_kernels.prunes(size, depth) else "exhaustive",
                "load": round(os.getloadavg()[0], 2),
            }
        )
        print(rows[-1], flush=True)
    return rows


def main() -> None:
    arguments = parse_arguments()
    table = pd.DataFrame([row for size in arguments.sizes for row in measure(size, arguments)])
    write_table(table, arguments.output)


if __name__ == "__main__":
    main()
