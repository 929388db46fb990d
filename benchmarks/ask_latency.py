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

``--synthetic N`` answers from N seeded Markdown documents instead (one
chunk each, Zipf-distributed words as in benchmarks/bm25_vs_peers.py; the
question is made of words of one of them), to see how the BM25 search scales;
``--project DIR`` times the ``rag`` of another checkout (an older commit, to
compare before and after a change). Each row names the documents and the
commit it timed.

Usage:
    .venv/bin/python benchmarks/ask_latency.py --output results/benchmarks/ask_latency.csv
    .venv/bin/python benchmarks/ask_latency.py --warm-runs 10 --question "Who discovered Uranus?"
    .venv/bin/python benchmarks/ask_latency.py --synthetic 100000 --setups bm25_lsa_ivf \
        --project ../old-checkout --output results/benchmarks/ask_latency_scale.csv --append
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

import numpy as np

PROJECT = Path(__file__).resolve().parents[1]


def timed(command: list[str], project: Path = PROJECT) -> tuple[float, float, str]:
    """Wall seconds, child CPU seconds and stdout of one run of ``command`` in ``project``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    result = subprocess.run(
        command,
        cwd=project,
        env={**os.environ, "PYTHONPATH": str(project)},
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


def synthetic_documents(folder: Path, count: int, seed: int) -> str:
    """Write ``count`` seeded one-chunk Markdown documents into ``folder``; a question from one of them."""
    rng = np.random.default_rng(seed)
    vocabulary = 50_000
    probabilities = 1.0 / np.arange(1, vocabulary + 1) ** 1.1
    probabilities /= probabilities.sum()
    lengths = rng.integers(20, 40, count)
    words = rng.choice(vocabulary, size=int(lengths.sum()), p=probabilities)
    documents = np.split(words, np.cumsum(lengths)[:-1])
    for number, terms in enumerate(documents):
        text = " ".join(f"t{term}" for term in terms.tolist())
        (folder / f"document{number:06d}.md").write_text(
            f"# Document {number}\n\n{text}.\n", encoding="utf-8"
        )
    picked = rng.choice(documents[int(rng.integers(count))], size=4, replace=False)
    return "What about " + " ".join(f"t{term}" for term in picked.tolist()) + "?"


def commit_of(project: Path) -> str:
    """The short commit of ``project``'s checkout ("unknown" outside git)."""
    result = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=project, capture_output=True, text=True, check=False
    )
    return result.stdout.strip() or "unknown"


def measure(setup: str, arguments: argparse.Namespace) -> dict:
    """One cold call and ``warm_runs`` warm ones of ``setup`` in a fresh cache folder."""
    project = arguments.project
    with tempfile.TemporaryDirectory() as cache:
        ask = [sys.executable, "-m", "rag", "ask", arguments.question, "--cache", cache, *SETUPS[setup]]
        if arguments.documents:
            ask += ["--documents", arguments.documents]
        if arguments.synthetic:  # documents without front matter are restricted unless said otherwise
            ask += ["--default-access", "public"]
        cold_wall, cold_cpu, output = timed(ask, project)
        print(f"{setup}: cold call {cold_wall:.2f} s wall, {cold_cpu:.2f} s CPU ({index_line(output)})")
        warm = []
        for _ in range(arguments.warm_runs):
            wall, cpu, output = timed(ask, project)
            if "cache hit" not in output:
                raise SystemExit(f"expected a cache hit, got: {index_line(output)}")
            warm.append((wall, cpu))
    row = {
        "documents": arguments.synthetic or ("bundled" if not arguments.documents else "folder"),
        "code": commit_of(project),
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
    parser.add_argument("--synthetic", type=int, help="answer from this many seeded synthetic documents")
    parser.add_argument("--seed", type=int, default=0, help="seed of --synthetic")
    parser.add_argument("--project", type=Path, default=PROJECT, help="checkout whose rag to time")
    parser.add_argument("--output", type=Path, help="write the rows to this CSV file")
    parser.add_argument("--append", action="store_true", help="add the rows to --output")
    arguments = parser.parse_args()
    arguments.project = arguments.project.resolve()
    with tempfile.TemporaryDirectory() as folder:
        if arguments.synthetic:
            arguments.documents = folder
            arguments.question = synthetic_documents(Path(folder), arguments.synthetic, arguments.seed)
            print(f"{arguments.synthetic:,} synthetic documents; the question: {arguments.question}")
        run(arguments)


def run(arguments: argparse.Namespace) -> None:
    floor = [timed([sys.executable, "-c", "import numpy, scipy.sparse"])[:2] for _ in range(3)]
    print(
        f"import numpy + scipy.sparse only: {statistics.median(wall for wall, _ in floor):.2f} s wall, "
        f"{statistics.median(cpu for _, cpu in floor):.2f} s CPU (the floor no cache removes)"
    )
    rows = [measure(setup, arguments) for setup in arguments.setups]
    print(f"load average: {' '.join(f'{value:.1f}' for value in os.getloadavg())} on {os.cpu_count()} CPUs")
    if arguments.output:
        appending = arguments.append and arguments.output.exists()
        with arguments.output.open("a" if appending else "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
            if not appending:
                writer.writeheader()
            writer.writerows(rows)


if __name__ == "__main__":
    main()
