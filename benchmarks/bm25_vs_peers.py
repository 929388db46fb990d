"""Compare our BM25 and tf-idf (rag.retrieval) with bm25s, rank_bm25 and scikit-learn on the same terms.

Every system indexes the same token lists, so only indexing and scoring are
measured. Two kinds of collection:

- synthetic (collection ``zipf``): seeded documents whose terms follow a Zipf
  law over a fixed vocabulary. Queries take 2 to 5 distinct terms of a random
  document, so every query matches something.
- BEIR (``--beir FOLDER``, collection ``beir:NAME``): corpus.jsonl,
  queries.jsonl and qrels/<split>.tsv read with the project's reader. Each
  document's title and text (title on its own line in front, as the pipeline
  indexes a chunk with its header) and each judged query are analyzed once
  with rag.text.analyze (``--stem`` for Snowball stemming). The BM25 systems
  get each query's distinct terms (our BM25 sums over distinct terms; bm25s
  and rank_bm25 would count a repeated term twice), tf-idf systems the terms
  as analyzed. Every system's top 100 (documents scoring above 0, i.e.
  sharing a term with the query, as Lucene returns them) is scored against the
  qrels with rag.evaluation.metrics: nDCG@10 with the grades as linear gains and the ideal
  from the qrels, and recall@100 (judged relevant found / judged relevant), as
  BEIR and pytrec_eval compute them. The timed queries are the judged queries,
  cycled to --queries calls when there are fewer.

Settings are like for like: k1 = 1.5, b = 0.75, the Lucene idf (bm25s method
"lucene"; rank_bm25 only has its own Okapi idf), one thread everywhere (bm25s
with n_threads=1, BLAS limited to one thread). bm25s keeps its default float32
scores, ours are float64, so near-ties may order differently.

Each peer runs with the fastest backend that installs here: bm25s with its
numba backend (``backend="numba"``, compiled by an untimed warm-up) when numba
imports, as the pinned constraints install it, and its numpy backend
otherwise; ``--bm25s-backend`` picks one. The ``backend`` column of the table
says which each system used, and the script prints it.

Measured per collection:
- index time: median over interleaved repeats (rank_bm25 once: it is slow and
  builds Python dictionaries, so its timing is stable enough);
- peak memory while indexing (tracemalloc, in a separate run so tracing does
  not slow the timed runs) and the size of the index arrays where there are any;
- queries per second: a loop of single-query calls, and one call with the whole
  batch. The slow paths (rank_bm25, which has no batch call and scores every
  document in Python, and scikit-learn's single queries, each a dense product
  with every document) run only the first --slow-queries queries, and our side
  of those ratios is timed on the same subsample in the same interleaved run;
  ``single_queries`` and ``batch_queries`` say how many queries a rate is over;
- agreement: nDCG@10 of our top 10 with the peer's own scores as graded gains,
  i.e. 1.0 means our ten documents are worth exactly as much, by the peer's
  scores, as the peer's own ten (ties in the peer's scores do not count as
  disagreement); rank_bm25's on the slow subsample.

Ratios compare us with each peer: index and query speedups are peer time over
our time (above 1: we are faster). Timings on a shared machine vary from run to
run; the ratios much less. ``--append`` merges the rows into an existing
--output table, replacing those of the same collection and size, so sizes can
be measured by separate runs. benchmarks/plot_scaling.py draws the synthetic
rows as time against collection size.

Usage (the committed tables):
    .venv/bin/python benchmarks/bm25_vs_peers.py 10000 --queries 3000 --repeats 7 --slow-queries 20 \\
        --output results/benchmarks/bm25_vs_peers.csv
    .venv/bin/python benchmarks/bm25_vs_peers.py 100000 --queries 300 --slow-queries 20 \\
        --output results/benchmarks/bm25_vs_peers.csv --append
    .venv/bin/python benchmarks/bm25_vs_peers.py 1000000 --repeats 3 --queries 200 --slow-queries 20 \\
        --peers bm25s --output results/benchmarks/bm25_vs_peers.csv --append
    .venv/bin/python benchmarks/export_beir.py --output work/beir/solar_system && \\
        .venv/bin/python benchmarks/bm25_vs_peers.py --beir work/beir/solar_system \\
        --name solar_system/sections --output results/benchmarks/bm25_vs_peers_beir.csv
    .venv/bin/python benchmarks/export_beir.py --output work/beir/solar_system_paragraphs \\
        --unit paragraphs && .venv/bin/python benchmarks/bm25_vs_peers.py \\
        --beir work/beir/solar_system_paragraphs --name solar_system/paragraphs \\
        --output results/benchmarks/bm25_vs_peers_beir.csv --append
    .venv/bin/python benchmarks/bm25_vs_peers.py --compile-output results/benchmarks/bm25_compile.csv
    .venv/bin/python benchmarks/plot_scaling.py
"""

from __future__ import annotations

import argparse
import gc
import itertools
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import bm25s
import numpy as np
import pandas as pd
import rank_bm25
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.metrics.pairwise import linear_kernel
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rag.corpus.beir import DEFAULT_SPLIT  # noqa: E402
from rag.corpus.beir_files import beir_files, read_beir_collection  # noqa: E402
from rag.evaluation.document_relevance import BEIR_NDCG_K, BEIR_RECALL_K, document_relevance  # noqa: E402
from rag.evaluation.metrics import Relevance, ndcg_at, recall_at  # noqa: E402
from rag.retrieval import sparse_kernels  # noqa: E402
from rag.retrieval.bm25 import bm25_search, build_bm25_index  # noqa: E402
from rag.retrieval.search import COMPILED_MIN_CHUNKS  # noqa: E402
from rag.retrieval.tfidf import build_tfidf_index, tfidf_search  # noqa: E402
from rag.text import analyze  # noqa: E402
from rag.timing import interleaved_median_seconds  # noqa: E402

K1, B = 1.5, 0.75
AGREEMENT_DEPTH = 10  # depth of the timed searches of synthetic collections, too
SYSTEMS = ("ours", "ours_prefiltered", "bm25s", "rank_bm25", "ours_tfidf", "sklearn")
PEERS = ("bm25s", "rank_bm25", "sklearn")  # --peers picks among these
MODES = ("single", "batch")
# The prefiltered row is our BM25 with a caller that sees half the chunks (a seeded mask);
# its "speedups" are its time over our unfiltered time: at most 1.2 is the goal.
REFERENCES = {"bm25s": "ours", "rank_bm25": "ours", "sklearn": "ours_tfidf", "ours_prefiltered": "ours"}
DEPTHS = (10, 1000)  # timed depths of synthetic collections: a top 10 and the pipeline's evaluation depth
GOALS = {("bm25s", "index_speedup", 0): 3.0}
GOALS |= {("bm25s", f"{mode}_speedup", 10): 1.5 for mode in MODES}
GOALS |= {("bm25s", f"{mode}_speedup", 1000): 1.2 for mode in MODES}
GOALS |= {("rank_bm25", f"{mode}_speedup", 0): 50.0 for mode in MODES}
CEILINGS = {("ours_prefiltered", f"{mode}_speedup", 0): 1.2 for mode in MODES}
NDCG_TOLERANCE = 0.002  # goal: our nDCG@10 within this of bm25s's
SKLEARN_BLOCK = 256  # queries per dense (queries x documents) product...
SKLEARN_ENTRIES = 2**25  # ...and at most this many scores in one (256 MB)
COLUMNS = [
    "collection",
    "documents",
    "terms",
    "system",
    "depth",
    "index_s",
    "peak_mb",
    "index_mb",
    "single_qps",
    "single_queries",
    "batch_qps",
    "batch_queries",
    "ndcg10",
    "recall100",
    "ndcg10_agreement",
    "backend",
    "index_speedup",
    "single_speedup",
    "batch_speedup",
    "load",
]


def parse_arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "sizes", type=int, nargs="*", help="documents per synthetic collection (default 10000 100000)"
    )
    parser.add_argument("--output", type=Path, help="CSV file to write the table to")
    parser.add_argument(
        "--append",
        action="store_true",
        help="merge into an existing --output, replacing rows of the same collection and size",
    )
    parser.add_argument("--queries", type=int, default=1_000, help="timed query calls")
    parser.add_argument(
        "--slow-queries", type=int, default=100, help="query subsample for rank_bm25 and sklearn single"
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--depths", type=int, nargs="+", default=list(DEPTHS), help="timed depths (synthetic collections)"
    )
    parser.add_argument(
        "--peers", nargs="+", choices=PEERS, default=list(PEERS), help="peers to measure (default all)"
    )
    parser.add_argument(
        "--compile-output", type=Path, help="CSV file for the compiled loop's first-call times, then stop"
    )
    parser.add_argument(
        "--bm25s-backend",
        choices=("auto", "numba", "numpy"),
        default="auto",
        help="bm25s's backend; auto: numba when it imports, numpy otherwise",
    )
    synthetic = parser.add_argument_group("synthetic collections")
    synthetic.add_argument("--vocabulary", type=int, default=50_000)
    synthetic.add_argument("--mean-length", type=float, default=80.0, help="mean terms per document")
    synthetic.add_argument("--exponent", type=float, default=1.1, help="Zipf exponent of term frequencies")
    synthetic.add_argument("--seed", type=int, default=0)
    beir = parser.add_argument_group("BEIR collection")
    beir.add_argument("--beir", type=Path, metavar="FOLDER", help="measure this BEIR collection instead")
    beir.add_argument("--split", default=DEFAULT_SPLIT, help="qrels/<split>.tsv to evaluate")
    beir.add_argument("--name", help="collection label after 'beir:' (default: the folder's name)")
    beir.add_argument("--stem", action="store_true", help="Snowball-stem documents and queries")
    beir.add_argument("--depth", type=int, default=BEIR_RECALL_K, help="retrieval depth, at least 100")
    arguments = parser.parse_args()
    if arguments.beir is not None and arguments.sizes:
        parser.error("give either synthetic sizes or --beir, not both")
    if arguments.beir is not None and arguments.depth < BEIR_RECALL_K:
        parser.error(f"--depth must be at least {BEIR_RECALL_K} to compute recall@{BEIR_RECALL_K}")
    if arguments.append and arguments.output is None:
        parser.error("--append needs --output")
    if arguments.beir is None and not arguments.sizes:
        arguments.sizes = [10_000, 100_000]
    if arguments.bm25s_backend == "auto":
        arguments.bm25s_backend = "numba" if numba_imports() else "numpy"
    elif arguments.bm25s_backend == "numba" and not numba_imports():
        parser.error("--bm25s-backend numba needs numba: pip install -c constraints.txt numba")
    return arguments


def numba_imports() -> bool:
    """Whether bm25s can use its numba backend here."""
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return True


def backends(bm25s_backend: str, documents: int) -> dict[str, str]:
    """What computes each system's scores: the ``backend`` column of the table.

    Ours: the compiled loop where numba is installed and the collection has at
    least ``COMPILED_MIN_CHUNKS`` documents (rag.retrieval.search: once a process
    has loaded the loop, as the warm-up does), numpy otherwise.
    """
    compiled = sparse_kernels.AVAILABLE and documents >= COMPILED_MIN_CHUNKS
    ours = "numba" if compiled else "numpy"
    return {
        "ours": ours,
        "ours_prefiltered": ours,
        "bm25s": bm25s_backend,
        "rank_bm25": "python",
        "ours_tfidf": ours,
        "sklearn": "scipy",
    }


FIRST_CALL = """
import time
started = time.perf_counter()
from rag.retrieval.bm25 import bm25_search, build_bm25_index
from rag.retrieval.tfidf import build_tfidf_index, tfidf_search
from rag.retrieval import sparse_kernels
imported = time.perf_counter()
documents = [["a", "b", "c"], ["b", "c", "d"], ["c", "d", "e"]] * 400
bm25_search(build_bm25_index(documents), [["a", "e"]], 10, engine="compiled")
called = time.perf_counter()
tfidf_search(build_tfidf_index(documents), [["a", "e"]], 1000, engine="compiled")
print(imported - started, called - imported, time.perf_counter() - called)
"""


def first_call_seconds() -> list[dict]:
    """Import and first-call seconds of the compiled loop in fresh interpreters.

    "cold": an empty numba cache folder, so the first call compiles; "warm":
    the same folder again, so it loads the cached machine code. The second
    call (tf-idf) shows what remains once the first has compiled or loaded.
    """
    rows = []
    with tempfile.TemporaryDirectory() as cache:
        environment = os.environ | {"NUMBA_CACHE_DIR": cache, "PYTHONPATH": str(Path(__file__).parents[1])}
        for cache_state in ("cold", "warm"):
            load = os.getloadavg()[0]
            output = subprocess.run(
                [sys.executable, "-c", FIRST_CALL],
                env=environment,
                capture_output=True,
                text=True,
                check=True,
            ).stdout.split()
            imported, first, second = map(float, output)
            rows.append(
                {
                    "cache": cache_state,
                    "import_s": imported,
                    "first_call_s": first,
                    "second_call_s": second,
                    "load": load,
                }
            )
            print(f"  compiled loop, {cache_state} cache: {rows[-1]}", flush=True)
    return rows


# --------------------------------------------------------------------------
# Collections
# --------------------------------------------------------------------------


@dataclass
class Judged:
    """What a BEIR collection adds: ids and judgements to score rankings against."""

    doc_ids: list[str]
    relevance: list[Relevance]  # one per query of the collection, in order


@dataclass
class Collection:
    label: str
    documents: list[list[str]]
    bm25_queries: list[list[str]]  # distinct terms
    tfidf_queries: list[list[str]]  # terms as analyzed
    depth: int
    judged: Judged | None = None


def zipfian_collection(size: int, arguments: argparse.Namespace) -> Collection:
    """Documents with Zipf-distributed terms, and queries drawn from random documents."""
    vocabulary = arguments.vocabulary
    rng = np.random.default_rng(arguments.seed)
    words = np.array([f"t{rank}" for rank in range(vocabulary)], dtype=object)
    probabilities = 1.0 / np.arange(1, vocabulary + 1) ** arguments.exponent
    probabilities /= probabilities.sum()
    lengths = rng.poisson(arguments.mean_length - 1, size) + 1
    terms = words[rng.choice(vocabulary, size=int(lengths.sum()), p=probabilities)]
    documents = [list(part) for part in np.split(terms, np.cumsum(lengths)[:-1])]
    del terms
    queries = []
    for document in rng.integers(0, size, arguments.queries):
        picked = rng.choice(documents[document], size=rng.integers(2, 6))
        queries.append(list(dict.fromkeys(picked.tolist())))
    return Collection("zipf", documents, queries, queries, AGREEMENT_DEPTH)


def beir_collection(arguments: argparse.Namespace) -> Collection:
    """The judged queries of a BEIR split and the whole corpus, analyzed once."""
    files = beir_files(arguments.beir, arguments.split)
    started = time.perf_counter()
    documents, questions, judgements = read_beir_collection(files["corpus"], files["queries"], files["qrels"])
    judged = [question for question in questions if question.answerable]
    relevance = document_relevance(judgements, judged)
    # As rag.chunking.Chunk.indexed_text: the header (a BEIR document's title) on a line before the text.
    texts = (f"{doc.title}\n{doc.full_text}" if doc.title else doc.full_text for doc in documents)
    terms = [analyze(text, stem=arguments.stem) for text in texts]
    queries = [analyze(question.text, stem=arguments.stem) for question in judged]
    label = f"beir:{arguments.name or arguments.beir.name}"
    label += ("" if arguments.split == DEFAULT_SPLIT else f"[{arguments.split}]") + (
        "+stem" if arguments.stem else ""
    )
    repeated = sum(len(set(query)) < len(query) for query in queries)
    print(
        f"read and analyzed {arguments.beir} in {time.perf_counter() - started:.2f} s: "
        f"{len(documents):,} documents, {len(judged):,} judged queries "
        f"({repeated} with a repeated term, {sum(not query for query in queries)} without terms)",
        flush=True,
    )
    return Collection(
        label,
        terms,
        [list(dict.fromkeys(query)) for query in queries],
        queries,
        arguments.depth,
        Judged([doc.doc_id for doc in documents], [relevance[question.question_id] for question in judged]),
    )


def cycled(queries: list[list[str]], calls: int) -> list[list[str]]:
    """The queries, repeated in order until there are at least ``calls`` of them."""
    return list(itertools.islice(itertools.cycle(queries), max(calls, len(queries))))


# --------------------------------------------------------------------------
# Measuring
# --------------------------------------------------------------------------


def identity(terms: list[str]) -> list[str]:
    return terms


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


def agreement(ours: Sequence[np.ndarray], peer_scores: Iterable[np.ndarray]) -> float:
    """Mean nDCG@10 of our top positions, gains = the peer's scores (see the module docstring).

    ``peer_scores`` may be a generator: one query's scores are alive at a time.
    """
    discounts = 1.0 / np.log2(np.arange(2, AGREEMENT_DEPTH + 2))
    values = []
    for positions, gains in zip(ours, peer_scores, strict=True):
        gains = np.maximum(np.asarray(gains, dtype=np.float64), 0.0)
        top = positions[:AGREEMENT_DEPTH]
        ideal = float(np.sort(gains)[::-1][:AGREEMENT_DEPTH] @ discounts[: min(AGREEMENT_DEPTH, len(gains))])
        if ideal > 0:
            values.append(float(gains[top] @ discounts[: len(top)]) / ideal)
    return float(np.mean(values)) if values else float("nan")


def sklearn_score_blocks(
    vectorizer: TfidfVectorizer, matrix, queries: list[list[str]]
) -> Iterator[np.ndarray]:
    """Dense cosine scores of blocks of queries, small enough to stay within SKLEARN_ENTRIES."""
    block = max(1, min(SKLEARN_BLOCK, SKLEARN_ENTRIES // matrix.shape[0]))
    weighted = vectorizer.transform(queries)
    for start in range(0, weighted.shape[0], block):
        yield linear_kernel(weighted[start : start + block], matrix)


def sklearn_search(vectorizer: TfidfVectorizer, matrix, queries: list[list[str]], depth: int) -> list:
    """Top ``depth`` by cosine, one dense (block x documents) product at a time."""
    tops = []
    for scores in sklearn_score_blocks(vectorizer, matrix, queries):
        best = np.argpartition(-scores, depth - 1, axis=1)[:, :depth]
        order = np.argsort(-np.take_along_axis(scores, best, axis=1), axis=1)
        tops.extend(np.take_along_axis(best, order, axis=1))
    return tops


def rank_bm25_top(index: rank_bm25.BM25Okapi, query: list[str], depth: int) -> np.ndarray:
    scores = index.get_scores(query)
    best = np.argpartition(-scores, depth - 1)[:depth]
    return best[np.argsort(-scores[best])]


def bm25s_scores(retriever: bm25s.BM25, query: list[str]) -> np.ndarray:
    if not query:  # bm25s.get_scores cannot take an empty query
        return np.zeros(retriever.scores["num_docs"], dtype=np.float32)
    return retriever.get_scores(query)


def array_megabytes(arrays: Sequence[np.ndarray]) -> float:
    return sum(np.asarray(array).nbytes for array in arrays) / 2**20


def matching_top(scores: np.ndarray, depth: int) -> np.ndarray:
    """The ``depth`` best positions scoring above 0, best first, ties by position."""
    best = np.argsort(-scores, kind="stable")[:depth]
    return best[scores[best] > 0]


def quality(rankings: Iterable[np.ndarray], judged: Judged) -> tuple[float, float]:
    """Mean nDCG@10 and recall@100 of position rankings, every judged query counted."""
    ndcg, recall = [], []
    for positions, relevance in zip(rankings, judged.relevance, strict=True):
        ranked = [judged.doc_ids[position] for position in positions]
        ndcg.append(ndcg_at(ranked, relevance, BEIR_NDCG_K))
        recall.append(recall_at(ranked, relevance, BEIR_RECALL_K))
    return float(np.mean(ndcg)), float(np.mean(recall))


def measure(collection: Collection, arguments: argparse.Namespace) -> list[dict]:
    documents = collection.documents
    depths = arguments.depths if collection.judged is None else [collection.depth]
    peers = set(arguments.peers)
    systems = [system for system in SYSTEMS if system not in PEERS or system in peers]
    bm25_queries = cycled(collection.bm25_queries, arguments.queries)
    tfidf_queries = cycled(collection.tfidf_queries, arguments.queries)
    slow = slice(0, min(arguments.slow_queries, len(bm25_queries)))
    slow_count = slow.stop
    terms = sum(len(document) for document in documents)
    load = os.getloadavg()[0]
    print(
        f"\n{collection.label}: {len(documents):,} documents, {terms:,} terms, "
        f"{len(bm25_queries):,} timed queries ({slow_count} for the slow paths), depths {depths}, "
        f"load average {load:.1f}",
        flush=True,
    )

    def build_ours() -> object:
        return build_bm25_index(documents, k1=K1, b=B)

    def build_bm25s() -> bm25s.BM25:
        retriever = bm25s.BM25(method="lucene", k1=K1, b=B, backend=arguments.bm25s_backend)
        retriever.index(documents, show_progress=False)
        return retriever

    def build_rank_bm25() -> rank_bm25.BM25Okapi:
        return rank_bm25.BM25Okapi(documents, k1=K1, b=B)

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
    builders = {name: build for name, build in builders.items() if name in systems}
    system_backends = backends(arguments.bm25s_backend, len(documents))
    print("  backends", {system: system_backends[system] for system in systems}, flush=True)
    # Peaks first, while no index is alive: each traced build is dropped at once.
    # The first bm25s build also compiles its numba code, which no timed run then pays for.
    traced = builders | ({"rank_bm25": build_rank_bm25} if "rank_bm25" in systems else {})
    peaks = {name: peak_megabytes(build) for name, build in traced.items()}
    peaks["ours_prefiltered"] = peaks["ours"]
    gc.collect()
    index_seconds = interleaved_median_seconds(builders, arguments.repeats)
    index_seconds["ours_prefiltered"] = index_seconds["ours"]
    okapi = None
    if "rank_bm25" in systems:
        index_seconds["rank_bm25"], okapi = timed(build_rank_bm25)
    ours, ours_tfidf = build_ours(), build_ours_tfidf()
    retriever = build_bm25s() if "bm25s" in systems else None
    vectorizer, matrix = build_sklearn() if "sklearn" in systems else (None, None)
    print("  indexed", {name: round(seconds, 3) for name, seconds in index_seconds.items()}, flush=True)
    index_sizes = {
        "ours": array_megabytes(list(ours.to_arrays().values())),
        "ours_prefiltered": array_megabytes(list(ours.to_arrays().values())),
        "bm25s": array_megabytes([retriever.scores[key] for key in ("data", "indices", "indptr")])
        if retriever is not None
        else float("nan"),
        "rank_bm25": float("nan"),  # Python dictionaries, one per document
        "ours_tfidf": array_megabytes(list(ours_tfidf.to_arrays().values())),
        "sklearn": array_megabytes([matrix.data, matrix.indices, matrix.indptr, vectorizer.idf_])
        if matrix is not None
        else float("nan"),
    }
    # The prefilter: a seeded half of the documents, as a caller's metadata filter would give.
    half = np.random.default_rng(arguments.seed).random(len(documents)) < 0.5

    def query_runs(depth: int) -> dict:
        k = min(depth, len(documents))  # bm25s refuses a k above the collection size
        runs = {
            ("ours", "single", depth): lambda: [bm25_search(ours, [query], depth) for query in bm25_queries],
            ("ours", "batch", depth): lambda: bm25_search(ours, bm25_queries, depth),
            ("ours_prefiltered", "single", depth): lambda: [
                bm25_search(ours, [query], depth, allowed=half) for query in bm25_queries
            ],
            ("ours_prefiltered", "batch", depth): lambda: bm25_search(
                ours, bm25_queries, depth, allowed=half
            ),
            ("bm25s", "single", depth): lambda: [
                retriever.retrieve([query], k=k, show_progress=False, n_threads=1) for query in bm25_queries
            ],
            ("bm25s", "batch", depth): lambda: retriever.retrieve(
                bm25_queries, k=k, show_progress=False, n_threads=1
            ),
            ("ours_tfidf", "single", depth): lambda: [
                tfidf_search(ours_tfidf, [query], depth) for query in tfidf_queries
            ],
            ("ours_tfidf", "batch", depth): lambda: tfidf_search(ours_tfidf, tfidf_queries, depth),
            ("sklearn", "batch", depth): lambda: sklearn_search(vectorizer, matrix, tfidf_queries, k),
        }
        return {key: run for key, run in runs.items() if key[0] in systems}

    def slow_runs(depth: int) -> dict:
        k = min(depth, len(documents))
        slow_bm25, slow_tfidf = bm25_queries[slow], tfidf_queries[slow]
        runs = {
            ("rank_bm25", "single", depth): lambda: [rank_bm25_top(okapi, query, k) for query in slow_bm25],
            ("ours_slow", "single", depth): lambda: [
                bm25_search(ours, [query], depth) for query in slow_bm25
            ],
            ("ours_slow", "batch", depth): lambda: bm25_search(ours, slow_bm25, depth),
            ("sklearn", "single", depth): lambda: [
                sklearn_search(vectorizer, matrix, [query], k) for query in slow_tfidf
            ],
            ("ours_tfidf_slow", "single", depth): lambda: [
                tfidf_search(ours_tfidf, [query], depth) for query in slow_tfidf
            ],
        }
        keep = {"rank_bm25": "ours_slow", "sklearn": "ours_tfidf_slow"}
        wanted = {system for system in keep if system in systems} | {keep[s] for s in keep if s in systems}
        return {key: run for key, run in runs.items() if key[0] in wanted}

    # Untimed warm-up: bm25s's numba backend and our compiled loop compile (or load) at the first call.
    # Ours loads it explicitly: from then on "auto" takes it from COMPILED_MIN_CHUNKS chunks on, as in
    # any process that has loaded it (a fresh process would still use numpy for a small batch:
    # benchmarks/engine_crossover.py measures where loading it pays).
    engine = "compiled" if backends(bm25s_backend="", documents=len(documents))["ours"] == "numba" else "auto"
    for depth in depths:
        bm25_search(ours, bm25_queries[:2], depth, engine=engine)
        bm25_search(ours, bm25_queries[:2], depth, allowed=half, engine=engine)
        tfidf_search(ours_tfidf, tfidf_queries[:2], depth, engine=engine)
        if retriever is not None:
            k = min(depth, len(documents))
            retriever.retrieve(bm25_queries[:2], k=k, show_progress=False, n_threads=1)
            retriever.retrieve(bm25_queries[:1], k=k, show_progress=False, n_threads=1)
    # One interleaved run over every depth, so that all rates of a size see the same load.
    all_runs = {key: run for depth in depths for key, run in query_runs(depth).items()}
    query_seconds = interleaved_median_seconds(all_runs, arguments.repeats)
    all_slow = {key: run for depth in depths for key, run in slow_runs(depth).items()}
    slow_seconds = interleaved_median_seconds(all_slow, arguments.repeats)
    rates = {key: len(bm25_queries) / seconds for key, seconds in query_seconds.items()}
    rates |= {key: slow_count / seconds for key, seconds in slow_seconds.items()}
    for depth in depths:
        if ("rank_bm25", "single", depth) in rates:
            rates[("rank_bm25", "batch", depth)] = rates[("rank_bm25", "single", depth)]  # no batch call
    on_subsample = {key[:2] for key in slow_seconds} | {("rank_bm25", "batch")}
    counts = {key: slow_count if key[:2] in on_subsample else len(bm25_queries) for key in rates}
    print("  queried", {" ".join(map(str, key)): round(value) for key, value in rates.items()}, flush=True)

    # Agreement and quality on the collection's own queries (not cycled), at the collection's depth.
    depth = collection.depth
    k = min(depth, len(documents))
    bm25_own, tfidf_own = collection.bm25_queries, collection.tfidf_queries
    our_rankings = [ranking.positions for ranking in bm25_search(ours, bm25_own, depth)]
    our_tfidf_rankings = [ranking.positions for ranking in tfidf_search(ours_tfidf, tfidf_own, depth)]
    prefiltered = [ranking.positions for ranking in bm25_search(ours, bm25_own, depth, allowed=half)]
    exhaustive = bm25_search(ours, bm25_own, depth, allowed=half, engine="numpy")
    same = all(np.array_equal(a, b.positions) for a, b in zip(prefiltered, exhaustive, strict=True))
    agreements = {
        "ours": 1.0,
        "ours_prefiltered": 1.0 if same else float("nan"),
        "bm25s": agreement(our_rankings, (bm25s_scores(retriever, query) for query in bm25_own))
        if retriever is not None
        else float("nan"),
        "rank_bm25": agreement(
            our_rankings[:slow_count], (okapi.get_scores(query) for query in bm25_own[:slow_count])
        )
        if okapi is not None
        else float("nan"),
        "ours_tfidf": 1.0,
        "sklearn": agreement(
            our_tfidf_rankings,
            (row for block in sklearn_score_blocks(vectorizer, matrix, tfidf_own) for row in block),
        )
        if matrix is not None
        else float("nan"),
    }
    qualities = {system: (np.nan, np.nan) for system in SYSTEMS}
    if collection.judged is not None:
        found = retriever.retrieve(bm25_own, k=k, show_progress=False, n_threads=1)
        rankings = {
            "ours": our_rankings,
            "bm25s": [
                positions[scores > 0] for positions, scores in zip(found.documents, found.scores, strict=True)
            ],
            "rank_bm25": [matching_top(okapi.get_scores(query), depth) for query in bm25_own],
            "ours_tfidf": our_tfidf_rankings,
            "sklearn": [
                matching_top(row, depth)
                for block in sklearn_score_blocks(vectorizer, matrix, tfidf_own)
                for row in block
            ],
        }
        qualities = {system: quality(ranked, collection.judged) for system, ranked in rankings.items()}

    rows = []
    for depth in depths:
        for system in systems:
            reference = REFERENCES.get(system)
            row = {
                "collection": collection.label,
                "documents": len(documents),
                "terms": terms,
                "system": system,
                "depth": depth,
                "index_s": index_seconds[system],
                "peak_mb": peaks[system],
                "index_mb": index_sizes[system],
                "single_qps": rates[(system, "single", depth)],
                "single_queries": counts[(system, "single", depth)],
                "batch_qps": rates[(system, "batch", depth)],
                "batch_queries": counts[(system, "batch", depth)],
                "ndcg10": qualities.get(system, (np.nan, np.nan))[0],
                "recall100": qualities.get(system, (np.nan, np.nan))[1],
                "ndcg10_agreement": agreements[system],
                "backend": system_backends[system],
                "index_speedup": np.nan,
                "single_speedup": np.nan,
                "batch_speedup": np.nan,
                "load": load,
            }
            if reference is not None:
                # A rate timed on the subsample is compared with ours on the subsample.
                ours_of = {
                    mode: f"{reference}_slow" if (system, mode) in on_subsample else reference
                    for mode in MODES
                }
                row["index_speedup"] = index_seconds[system] / index_seconds[reference]
                row["single_speedup"] = rates[(ours_of["single"], "single", depth)] / row["single_qps"]
                row["batch_speedup"] = rates[(ours_of["batch"], "batch", depth)] / row["batch_qps"]
            rows.append(row)
    return rows


# --------------------------------------------------------------------------
# Reporting
# --------------------------------------------------------------------------


def print_goals(table: pd.DataFrame) -> None:
    print("\nGoals (speedup = peer time / our time; for ours_prefiltered: its time / our unfiltered time):")
    for row in table.itertuples(index=False):
        where = f"  {row.collection:<28} {row.documents:>9,} docs  depth {row.depth:>5}  "
        for bounds, met in (
            (GOALS, lambda value, goal: value >= goal),
            (CEILINGS, lambda value, goal: value <= goal),
        ):
            for (system, column, depth), goal in bounds.items():
                if row.system == system and depth in (0, row.depth):
                    value = getattr(row, column)
                    print(
                        f"{where}{column:<15} vs {system:<16} {value:7.2f}x  "
                        f"{'goal' if bounds is GOALS else 'at most'} {goal:g}x  "
                        f"{'met' if met(value, goal) else 'MISSED'}"
                    )
        if row.system == "bm25s" and not np.isnan(row.ndcg10):
            ours = table[(table["collection"] == row.collection) & (table["system"] == "ours")]
            difference = float(ours["ndcg10"].iloc[0]) - row.ndcg10
            print(
                f"{where}nDCG@10 ours - bm25s {difference:+.4f}  goal within {NDCG_TOLERANCE:g}  "
                f"{'met' if abs(difference) <= NDCG_TOLERANCE else 'MISSED'}"
            )


def merged(path: Path, table: pd.DataFrame) -> pd.DataFrame:
    """The rows of ``path`` other than those of the new collections and sizes, plus the new ones."""
    old = pd.read_csv(path)
    if list(old.columns) != list(table.columns):
        raise SystemExit(f"{path}: columns differ from this script's; rerun without --append")
    new = set(zip(table["collection"], table["documents"], strict=True))
    kept = old[[key not in new for key in zip(old["collection"], old["documents"], strict=True)]]
    result = pd.concat([kept, table], ignore_index=True)
    order = result["system"].map({system: number for number, system in enumerate(SYSTEMS)})
    result = result.assign(_order=order).sort_values(
        ["collection", "documents", "depth", "_order"], kind="stable"
    )
    return result.drop(columns="_order").reset_index(drop=True)


def main() -> None:
    arguments = parse_arguments()
    if arguments.compile_output is not None:
        compile_table = pd.DataFrame(first_call_seconds())
        arguments.compile_output.parent.mkdir(parents=True, exist_ok=True)
        compile_table.to_csv(arguments.compile_output, index=False)
        print(f"wrote {arguments.compile_output}")
        return
    rows = []
    with threadpool_limits(limits=1):
        if arguments.beir is not None:
            rows.extend(measure(beir_collection(arguments), arguments))
        for size in arguments.sizes:
            collection = zipfian_collection(size, arguments)
            rows.extend(measure(collection, arguments))
            del collection
            gc.collect()
    table = pd.DataFrame(rows, columns=COLUMNS)
    shown = table.drop(columns=["ndcg10", "recall100"] if table["ndcg10"].isna().all() else [])
    with pd.option_context("display.width", 250, "display.max_columns", 30):
        print()
        print(shown.to_string(index=False, float_format=lambda value: f"{value:,.3g}"))
    print_goals(table)
    if arguments.output is not None:
        if arguments.append and arguments.output.exists():
            table = merged(arguments.output, table)
        arguments.output.parent.mkdir(parents=True, exist_ok=True)
        table.to_csv(arguments.output, index=False)
        print(f"\nwrote {arguments.output} ({len(table)} rows)")


if __name__ == "__main__":
    main()
