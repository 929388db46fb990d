"""Compare rag.bm25 and rag.tfidf with bm25s, rank_bm25 and scikit-learn on the same terms.

Every system indexes the same seeded synthetic collection: documents whose
terms follow a Zipf law over a fixed vocabulary, already tokenized, so only
indexing and scoring are measured. Queries take 2 to 5 distinct terms of a
random document (so every query matches something and repeated query terms
cannot make the BM25 variants disagree). Settings are like for like: k1 = 1.5,
b = 0.75, the Lucene idf, top 10, one thread everywhere (bm25s with
n_threads=1, BLAS limited to one thread). bm25s keeps its default float32
scores; ours are float64.

Measured per collection size:
- index time: median over interleaved repeats (rank_bm25 once: it is slow and
  builds Python dictionaries, so its timing is stable enough);
- peak memory while indexing (tracemalloc, in a separate run so tracing does
  not slow the timed runs) and the size of the index arrays where there are any;
- queries per second: a loop of single-query calls, and one call with the whole
  batch (rank_bm25 has no batch call and runs a subsample of the queries);
- agreement: nDCG@10 of our top 10 with the peer's own scores as graded gains,
  i.e. 1.0 means our ten chunks are worth exactly as much, by the peer's scores,
  as the peer's own ten (ties in the peer's scores do not count as disagreement).

Ratios compare us with each peer: index and query speedups are peer time over
our time (above 1: we are faster). Timings on a shared machine vary from run to
run; the ratios much less.

Usage:
    .venv/bin/python benchmarks/bm25_vs_peers.py                  # 10,000 and 100,000 documents
    .venv/bin/python benchmarks/bm25_vs_peers.py 20000 --output /tmp/bm25_vs_peers.csv
"""

from __future__ import annotations

import argparse
import sys
import time
import tracemalloc
from collections.abc import Callable, Sequence
from pathlib import Path

import bm25s
import numpy as np
import pandas as pd
import rank_bm25
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.metrics.pairwise import linear_kernel
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rag.bm25 import bm25_search, build_bm25_index  # noqa: E402
from rag.tfidf import build_tfidf_index, tfidf_search  # noqa: E402

K1, B, DEPTH = 1.5, 0.75, 10
GOALS = {("bm25s", "index_speedup"): 1.0, ("bm25s", "batch_speedup"): 1.2, ("bm25s", "single_speedup"): 1.2}
GOALS |= {("rank_bm25", "single_speedup"): 50.0, ("rank_bm25", "batch_speedup"): 50.0}
SKLEARN_BLOCK = 256


def parse_arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "sizes", type=int, nargs="*", default=[10_000, 100_000], help="documents per collection"
    )
    parser.add_argument("--output", type=Path, help="CSV file to write the table to")
    parser.add_argument("--queries", type=int, default=1_000)
    parser.add_argument("--slow-queries", type=int, default=100, help="query subsample for rank_bm25")
    parser.add_argument("--vocabulary", type=int, default=50_000)
    parser.add_argument("--mean-length", type=float, default=80.0, help="mean terms per document")
    parser.add_argument("--exponent", type=float, default=1.1, help="Zipf exponent of term frequencies")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args()


def zipfian_collection(
    size: int, vocabulary: int, mean_length: float, exponent: float, n_queries: int, seed: int
) -> tuple[list[list[str]], list[list[str]]]:
    """Documents with Zipf-distributed terms, and queries drawn from random documents."""
    rng = np.random.default_rng(seed)
    words = np.array([f"t{rank}" for rank in range(vocabulary)], dtype=object)
    probabilities = 1.0 / np.arange(1, vocabulary + 1) ** exponent
    probabilities /= probabilities.sum()
    lengths = rng.poisson(mean_length - 1, size) + 1
    terms = words[rng.choice(vocabulary, size=int(lengths.sum()), p=probabilities)]
    documents = [list(part) for part in np.split(terms, np.cumsum(lengths)[:-1])]
    queries = []
    for document in rng.integers(0, size, n_queries):
        picked = rng.choice(documents[document], size=rng.integers(2, 6))
        queries.append(list(dict.fromkeys(picked.tolist())))
    return documents, queries


def identity(terms: list[str]) -> list[str]:
    return terms


def interleaved_medians(runs: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    """Median seconds of each run, alternating between them so all see the same load."""
    timings: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeats):
        for name, run in runs.items():
            started = time.perf_counter()
            run()
            timings[name].append(time.perf_counter() - started)
    return {name: float(np.median(values)) for name, values in timings.items()}


def timed(run: Callable[[], object]) -> tuple[float, object]:
    started = time.perf_counter()
    result = run()
    return time.perf_counter() - started, result


def peak_megabytes(run: Callable[[], object]) -> float:
    tracemalloc.start()
    try:
        run()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def agreement(ours: Sequence[np.ndarray], peer_scores: Sequence[np.ndarray]) -> float:
    """Mean nDCG@10 of our top positions, gains = the peer's scores (see the module docstring)."""
    discounts = 1.0 / np.log2(np.arange(2, DEPTH + 2))
    values = []
    for positions, gains in zip(ours, peer_scores, strict=True):
        gains = np.maximum(np.asarray(gains, dtype=np.float64), 0.0)
        ideal = float(np.sort(gains)[::-1][:DEPTH] @ discounts[: min(DEPTH, len(gains))])
        if ideal > 0:
            values.append(float(gains[positions[:DEPTH]] @ discounts[: len(positions[:DEPTH])]) / ideal)
    return float(np.mean(values))


def sklearn_search(vectorizer: TfidfVectorizer, matrix, queries: list[list[str]]) -> list[np.ndarray]:
    """Top 10 by cosine, in blocks so the dense (queries x documents) product stays small."""
    weighted = vectorizer.transform(queries)
    tops = []
    for start in range(0, weighted.shape[0], SKLEARN_BLOCK):
        scores = linear_kernel(weighted[start : start + SKLEARN_BLOCK], matrix)
        best = np.argpartition(-scores, DEPTH - 1, axis=1)[:, :DEPTH]
        order = np.argsort(-np.take_along_axis(scores, best, axis=1), axis=1)
        tops.extend(np.take_along_axis(best, order, axis=1))
    return tops


def rank_bm25_top(index: rank_bm25.BM25Okapi, query: list[str]) -> np.ndarray:
    scores = index.get_scores(query)
    best = np.argpartition(-scores, DEPTH - 1)[:DEPTH]
    return best[np.argsort(-scores[best])]


def array_megabytes(arrays: Sequence[np.ndarray]) -> float:
    return sum(np.asarray(array).nbytes for array in arrays) / 2**20


def measure_size(size: int, arguments: argparse.Namespace) -> list[dict]:
    documents, queries = zipfian_collection(
        size,
        arguments.vocabulary,
        arguments.mean_length,
        arguments.exponent,
        arguments.queries,
        arguments.seed,
    )
    slow_queries = queries[: arguments.slow_queries]
    tokens = sum(len(document) for document in documents)
    print(f"\n{size:,} documents, {tokens:,} terms, {len(queries):,} queries", flush=True)

    def build_ours() -> object:
        return build_bm25_index(documents, k1=K1, b=B)

    def build_bm25s() -> bm25s.BM25:
        retriever = bm25s.BM25(method="lucene", k1=K1, b=B)
        retriever.index(documents, show_progress=False)
        return retriever

    def build_ours_tfidf() -> object:
        return build_tfidf_index(documents)

    def build_sklearn() -> tuple[TfidfVectorizer, object]:
        vectorizer = TfidfVectorizer(analyzer=identity, sublinear_tf=True)
        return vectorizer, vectorizer.fit_transform(documents)

    builders = {
        "ours": build_ours,
        "bm25s": build_bm25s,
        "ours_tfidf": build_ours_tfidf,
        "sklearn": build_sklearn,
    }
    index_seconds = interleaved_medians(builders, arguments.repeats)
    index_seconds["rank_bm25"], okapi = timed(lambda: rank_bm25.BM25Okapi(documents, k1=K1, b=B))
    ours, retriever, ours_tfidf = build_ours(), build_bm25s(), build_ours_tfidf()
    vectorizer, matrix = build_sklearn()
    print("  indexed", {name: round(seconds, 2) for name, seconds in index_seconds.items()}, flush=True)

    peaks = {name: peak_megabytes(build) for name, build in builders.items()}
    peaks["rank_bm25"] = peak_megabytes(lambda: rank_bm25.BM25Okapi(documents, k1=K1, b=B))
    index_sizes = {
        "ours": array_megabytes(list(ours.to_arrays().values())),
        "bm25s": array_megabytes([retriever.scores[key] for key in ("data", "indices", "indptr")]),
        "rank_bm25": float("nan"),  # Python dictionaries, one per document
        "ours_tfidf": array_megabytes(list(ours_tfidf.to_arrays().values())),
        "sklearn": array_megabytes([matrix.data, matrix.indices, matrix.indptr, vectorizer.idf_]),
    }

    query_runs = {
        ("ours", "single"): lambda: [bm25_search(ours, [query], DEPTH) for query in queries],
        ("ours", "batch"): lambda: bm25_search(ours, queries, DEPTH),
        ("bm25s", "single"): lambda: [
            retriever.retrieve([query], k=DEPTH, show_progress=False, n_threads=1) for query in queries
        ],
        ("bm25s", "batch"): lambda: retriever.retrieve(queries, k=DEPTH, show_progress=False, n_threads=1),
        ("ours_tfidf", "single"): lambda: [tfidf_search(ours_tfidf, [query], DEPTH) for query in queries],
        ("ours_tfidf", "batch"): lambda: tfidf_search(ours_tfidf, queries, DEPTH),
        ("sklearn", "single"): lambda: [sklearn_search(vectorizer, matrix, [query]) for query in queries],
        ("sklearn", "batch"): lambda: sklearn_search(vectorizer, matrix, queries),
    }
    query_seconds = interleaved_medians(query_runs, arguments.repeats)
    # rank_bm25 scores every document in Python per query term: a subsample,
    # and the same subsample for our side of that ratio.
    slow_runs = {
        ("rank_bm25", "single"): lambda: [rank_bm25_top(okapi, query) for query in slow_queries],
        ("ours_slow", "single"): lambda: [bm25_search(ours, [query], DEPTH) for query in slow_queries],
        ("ours_slow", "batch"): lambda: bm25_search(ours, slow_queries, DEPTH),
    }
    slow_seconds = interleaved_medians(slow_runs, 1)
    query_per_second = {key: len(queries) / seconds for key, seconds in query_seconds.items()}
    query_per_second |= {key: len(slow_queries) / seconds for key, seconds in slow_seconds.items()}
    query_per_second[("rank_bm25", "batch")] = query_per_second[("rank_bm25", "single")]
    print("  queried", {f"{a} {b}": round(v) for (a, b), v in query_per_second.items()}, flush=True)

    our_tops = [ranking.positions for ranking in bm25_search(ours, queries, DEPTH)]
    our_tfidf_tops = [ranking.positions for ranking in tfidf_search(ours_tfidf, queries, DEPTH)]
    agreements = {
        "ours": 1.0,
        "bm25s": agreement(our_tops, [retriever.get_scores(query) for query in queries]),
        "rank_bm25": agreement(
            our_tops[: len(slow_queries)], [okapi.get_scores(query) for query in slow_queries]
        ),
        "ours_tfidf": 1.0,
        "sklearn": agreement(our_tfidf_tops, list(linear_kernel(vectorizer.transform(queries), matrix))),
    }

    rows = []
    references = {"bm25s": "ours", "rank_bm25": "ours", "sklearn": "ours_tfidf"}
    for system in ("ours", "bm25s", "rank_bm25", "ours_tfidf", "sklearn"):
        reference = references.get(system)
        row = {
            "documents": size,
            "system": system,
            "index_s": index_seconds[system],
            "peak_mb": peaks[system],
            "index_mb": index_sizes[system],
            "single_qps": query_per_second[(system, "single")],
            "batch_qps": query_per_second[(system, "batch")],
            "ndcg10_agreement": agreements[system],
            "index_speedup": np.nan,
            "single_speedup": np.nan,
            "batch_speedup": np.nan,
        }
        if reference is not None:
            ours_key = "ours_slow" if system == "rank_bm25" else reference
            row["index_speedup"] = index_seconds[system] / index_seconds[reference]
            row["single_speedup"] = query_per_second[(ours_key, "single")] / row["single_qps"]
            row["batch_speedup"] = query_per_second[(ours_key, "batch")] / row["batch_qps"]
        rows.append(row)
    return rows


def main() -> None:
    arguments = parse_arguments()
    rows = []
    with threadpool_limits(limits=1):
        for size in arguments.sizes:
            rows.extend(measure_size(size, arguments))
    table = pd.DataFrame(rows)
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print()
        print(table.to_string(index=False, float_format=lambda value: f"{value:,.3g}"))
    print("\nGoals (speedup = peer time / our time):")
    for row in rows:
        for (system, column), goal in GOALS.items():
            if row["system"] == system:
                reached = row[column] >= goal
                print(
                    f"  {row['documents']:>9,} docs  {column:<15} vs {system:<9} "
                    f"{row[column]:7.2f}x  goal {goal:g}x  {'met' if reached else 'MISSED'}"
                )
    if arguments.output is not None:
        arguments.output.parent.mkdir(parents=True, exist_ok=True)
        table.to_csv(arguments.output, index=False)
        print(f"\nwrote {arguments.output}")


if __name__ == "__main__":
    main()
