"""How long `rag ask` takes with a cold cache and with a warm one, for each way it can answer.

Three setups, each in its own cache folder:

- ``bm25_lsa_ivf``: the spec's BM25 + LSA through IVF, the path ``rag ask``
  takes when the dense extra is not installed;
- ``bm25_minilm``: BM25 fused with MiniLM, the default with the dense extra
  (the question is embedded on every call);
- ``bm25_minilm_similarity``: the same with ``--similarity``, which embeds
  every sentence of the reader's pool that the cache does not hold yet.

Each call is a fresh process (``python -m rag ask ...``), timed from the
outside: wall-clock seconds, and CPU seconds (user + system) of the child,
which a loaded machine inflates much less than wall time. The first call
starts from an empty cache folder and builds the index; the later calls load
it. A process that only imports numpy and scipy.sparse, which every call needs,
is timed the same way as the floor that no cache can remove.

Usage:
    .venv/bin/python benchmarks/ask_latency.py --output results/benchmarks/ask_latency.csv
    .venv/bin/python benchmarks/ask_latency.py --warm-runs 10 --question "Who discovered Uranus?"
"""

from __future__ import annotations

import argparse
import csv
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]


def timed(command: list[str]) -> tuple[float, float, str]:
    """Wall seconds, child CPU seconds and stdout of one run of ``command``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    result = subprocess.run(
        command,
        cwd=PROJECT,
        env={**os.environ, "PYTHONPATH": str(PROJECT)},
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({result.returncode}): {result.stderr.strip()}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, result.stdout


def index_line(output: str) -> str:
    return next(line for line in output.splitlines() if line.startswith("index:"))


SETUPS = {
    "bm25_lsa_ivf": ["--retriever", "bm25_lsa_ivf"],
    "bm25_minilm": ["--retriever", "bm25_minilm"],
    "bm25_minilm_similarity": ["--retriever", "bm25_minilm", "--similarity"],
}


def measure(setup: str, arguments: argparse.Namespace) -> dict:
    """One cold call and ``warm_runs`` warm ones of ``setup`` in a fresh cache folder."""
    with tempfile.TemporaryDirectory() as cache:
        ask = [sys.executable, "-m", "rag", "ask", arguments.question, "--cache", cache, *SETUPS[setup]]
        if arguments.documents:
            ask += ["--documents", arguments.documents]
        cold_wall, cold_cpu, output = timed(ask)
        print(f"{setup}: cold call {cold_wall:.2f} s wall, {cold_cpu:.2f} s CPU ({index_line(output)})")
        warm = []
        for _ in range(arguments.warm_runs):
            wall, cpu, output = timed(ask)
            if "cache hit" not in output:
                raise SystemExit(f"expected a cache hit, got: {index_line(output)}")
            warm.append((wall, cpu))
    row = {
        "setup": setup,
        "cold_wall_seconds": round(cold_wall, 2),
        "cold_cpu_seconds": round(cold_cpu, 2),
        "warm_runs": len(warm),
        "warm_wall_seconds": round(statistics.median(wall for wall, _ in warm), 2),
        "warm_cpu_seconds": round(statistics.median(cpu for _, cpu in warm), 2),
        "warm_wall_seconds_max": round(max(wall for wall, _ in warm), 2),
        "load_average": round(os.getloadavg()[0], 2),
    }
    print(
        f"{setup}: warm calls (median of {len(warm)}): {row['warm_wall_seconds']} s wall, "
        f"{row['warm_cpu_seconds']} s CPU, slowest {row['warm_wall_seconds_max']} s wall"
    )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--question", default="How long is a year on Venus?")
    parser.add_argument("--documents", help="folder of *.md documents (default: the bundled corpus)")
    parser.add_argument("--warm-runs", type=int, default=5)
    parser.add_argument("--setups", nargs="+", choices=list(SETUPS), default=list(SETUPS))
    parser.add_argument("--output", type=Path, help="write the rows to this CSV file")
    arguments = parser.parse_args()

    floor = [timed([sys.executable, "-c", "import numpy, scipy.sparse"])[:2] for _ in range(3)]
    print(
        f"import numpy + scipy.sparse only: {statistics.median(wall for wall, _ in floor):.2f} s wall, "
        f"{statistics.median(cpu for _, cpu in floor):.2f} s CPU (the floor no cache removes)"
    )
    rows = [measure(setup, arguments) for setup in arguments.setups]
    print(f"load average: {' '.join(f'{value:.1f}' for value in os.getloadavg())} on {os.cpu_count()} CPUs")
    if arguments.output:
        with arguments.output.open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)


if __name__ == "__main__":
    main()
