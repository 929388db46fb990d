"""How long `rag ask` takes with a cold cache and with a warm one.

Each call is a fresh process (``python -m rag ask ...``), timed from the
outside: wall-clock seconds, and CPU seconds (user + system) of the child,
which a loaded machine inflates much less than wall time. The first call
starts from an empty cache folder and builds the index; the later calls load
it. A process that only imports numpy and scipy.sparse, which every call needs,
is timed the same way as the floor that no cache can remove.

Usage:
    .venv/bin/python benchmarks/ask_latency.py
    .venv/bin/python benchmarks/ask_latency.py --warm-runs 10 --question "Who discovered Uranus?"
"""

from __future__ import annotations

import argparse
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--question", default="How long is a year on Venus?")
    parser.add_argument("--documents", help="folder of *.md documents (default: the bundled corpus)")
    parser.add_argument("--warm-runs", type=int, default=5)
    arguments = parser.parse_args()

    with tempfile.TemporaryDirectory() as cache:
        ask = [sys.executable, "-m", "rag", "ask", arguments.question, "--cache", cache]
        if arguments.documents:
            ask += ["--documents", arguments.documents]
        floor = [timed([sys.executable, "-c", "import numpy, scipy.sparse"])[:2] for _ in range(3)]
        cold_wall, cold_cpu, output = timed(ask)
        print(f"cold call: {cold_wall:.2f} s wall, {cold_cpu:.2f} s CPU  ({index_line(output)})")
        warm = []
        for _ in range(arguments.warm_runs):
            wall, cpu, output = timed(ask)
            if "cache hit" not in output:
                raise SystemExit(f"expected a cache hit, got: {index_line(output)}")
            warm.append((wall, cpu))
        warm_wall = statistics.median(wall for wall, _ in warm)
        warm_cpu = statistics.median(cpu for _, cpu in warm)
        floor_wall = statistics.median(wall for wall, _ in floor)
        floor_cpu = statistics.median(cpu for _, cpu in floor)
        print(f"warm calls (median of {len(warm)}): {warm_wall:.2f} s wall, {warm_cpu:.2f} s CPU")
        print(f"import numpy + scipy.sparse only: {floor_wall:.2f} s wall, {floor_cpu:.2f} s CPU")
        print(f"warm / cold: {warm_wall / cold_wall:.2f} wall, {warm_cpu / cold_cpu:.2f} CPU")
        print(f"warm / import floor: {warm_wall / floor_wall:.2f} wall, {warm_cpu / floor_cpu:.2f} CPU")
        print(
            f"load average: {' '.join(f'{value:.1f}' for value in os.getloadavg())} on {os.cpu_count()} CPUs"
        )


if __name__ == "__main__":
    main()
