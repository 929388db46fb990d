"""When the compiled loop pays: BM25 queries by the numpy and compiled loops, and the cost of loading it.

``rag.retrieval.search.sparse_search`` has two loops that return the same
rankings. The compiled one (numba) is faster per query, but a process pays
once to import numba and load the cached machine code. For a batch of queries
in a fresh process (a pipeline's ranking job, one ``rag ask``), the compiled
loop pays only where the batch saves more than that.

This script times, on the synthetic Zipf collections of
benchmarks/bm25_vs_peers.py (same terms, same seed), the same queries one per
call by both loops, alternating them so both see the same load, at depth 10
and at depth 1,000, and asserts that they agree. It also times the load in
fresh interpreters with a filled numba cache (the first compiled call after
the numpy loop has run, so only what the compiled loop adds is counted).
One row per size and depth: the median milliseconds per query of each loop,
the load, and ``break_even_queries`` (the load over the saving per query),
and ``break_even_work`` (those queries times the chunks): the number of
chunk-queries from which a batch in a fresh process is faster compiled.
``rag.retrieval.search.COMPILED_MIN_WORK`` is chosen from that column, and
``auto_from_queries`` says from how many queries "auto" takes the compiled
loop in a fresh process (that work over the chunks). One thread, numba
required.

Usage:
    .venv/bin/python benchmarks/engine_crossover.py 10000 100000 1000000 \\
        --output results/benchmarks/engine_crossover.csv
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(variable, "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bm25_vs_peers import zipfian_collection  # noqa: E402
from prune_crossover import parse_arguments, write_table  # noqa: E402

from rag.retrieval import search  # noqa: E402
from rag.retrieval.bm25 import bm25_search, build_bm25_index  # noqa: E402

DEPTHS = (10, 1000)
LOAD_RUNS = 5

# The compiled loop's first call in a fresh interpreter, after the numpy loop has run: what it adds.
LOAD = """
import time
from rag.retrieval.bm25 import bm25_search, build_bm25_index
index = build_bm25_index([["a", "b", "c"], ["b", "c", "d"], ["c", "d", "e"]] * 400)
bm25_search(index, [["a", "e"]], 10, engine="numpy")
started = time.perf_counter()
bm25_search(index, [["a", "e"]], 10, engine="compiled")
print(time.perf_counter() - started)
"""


def load_seconds() -> float:
    """Median seconds the compiled loop's first call adds in a fresh interpreter (numba cache filled)."""
    runs = []
    with tempfile.TemporaryDirectory() as cache:
        environment = os.environ | {"NUMBA_CACHE_DIR": cache, "PYTHONPATH": str(Path(__file__).parents[1])}
        for attempt in range(LOAD_RUNS + 1):  # the first fills the cache
            output = subprocess.run(
                [sys.executable, "-c", LOAD], env=environment, capture_output=True, text=True, check=True
            ).stdout
            if attempt:
                runs.append(float(output))
    return statistics.median(runs)


def measure(size: int, load: float, arguments: argparse.Namespace) -> list[dict]:
    collection = zipfian_collection(size, arguments)
    index = build_bm25_index(collection.documents, k1=1.5, b=0.75)
    queries = collection.bm25_queries
    rows = []
    for depth in DEPTHS:
        loops = {
            engine: lambda depth=depth, engine=engine: [
                bm25_search(index, [query], depth, engine=engine) for query in queries
            ]
            for engine in ("numpy", "compiled")
        }
        first = {engine: run() for engine, run in loops.items()}  # untimed: loads the compiled loop
        for one, other in zip(first["numpy"], first["compiled"], strict=True):
            assert np.array_equal(one[0].positions, other[0].positions)
            assert np.array_equal(one[0].scores, other[0].scores)
        seconds = {engine: [] for engine in loops}
        for _ in range(arguments.repeats):
            for engine, run in loops.items():
                started = time.perf_counter()
                run()
                seconds[engine].append((time.perf_counter() - started) / len(queries))
        numpy_s, compiled_s = (statistics.median(seconds[engine]) for engine in ("numpy", "compiled"))
        saving = numpy_s - compiled_s
        break_even = math.ceil(load / saving) if saving > 0 else None
        rows.append(
            {
                "documents": size,
                "depth": depth,
                "queries": len(queries),
                "repeats": arguments.repeats,
                "numpy_ms": round(numpy_s * 1e3, 4),
                "compiled_ms": round(compiled_s * 1e3, 4),
                "load_s": round(load, 3),
                "break_even_queries": break_even,
                "break_even_work": None if break_even is None else break_even * size,
                "auto_from_queries": math.ceil(search.COMPILED_MIN_WORK / size),
                "load": round(os.getloadavg()[0], 2),
            }
        )
        print(rows[-1], flush=True)
    return rows


def main() -> None:
    arguments = parse_arguments(__doc__.split("\n\n")[0])
    load = load_seconds()
    print(
        f"loading the compiled loop in a fresh interpreter: {load:.3f} s (median of {LOAD_RUNS})", flush=True
    )
    table = pd.DataFrame([row for size in arguments.sizes for row in measure(size, load, arguments)])
    write_table(table.astype({"break_even_queries": "Int64", "break_even_work": "Int64"}), arguments.output)


if __name__ == "__main__":
    main()
