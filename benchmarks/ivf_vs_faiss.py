"""Compare rag.retrieval.ivf with FAISS on the same synthetic vectors: recall and query time.

Both sides index the same seeded vectors with the same number of lists and
probe the same number of lists (FAISS's nprobe). FAISS is trained as ours is,
on every vector for the same number of k-means rounds (its defaults, 10 rounds
on a sample of 256 vectors per list, give it visibly lower recall; pass
--faiss-default-training to see them). Recall of both is measured
against the same exact top k (ours, which is also checked against FAISS's
IndexFlatIP). FAISS and the BLAS that NumPy calls are limited to the same
number of threads (one by default), so the comparison is like with like.

Timings are medians over interleaved repeats (ours, then FAISS, in turn), so
both sides see the same machine load; absolute seconds still vary between
runs on a shared machine, the ratios much less.

Usage (writes results/benchmarks/ivf_vs_faiss.csv unless --output says otherwise):
    .venv/bin/python benchmarks/ivf_vs_faiss.py
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import faiss
import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))

from rag.retrieval import ivf, synthetic  # noqa: E402
from rag.timing import interleaved_median_seconds  # noqa: E402

RECALL_TOLERANCE = 0.02
IVF_TIME_GOAL = 2.0
EXACT_TIME_GOAL = 1.5
GOAL_PROBES = 8


def parse_arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--output",
        type=Path,
        default=PROJECT / "results" / "benchmarks" / "ivf_vs_faiss.csv",
        help="CSV file to write (default: %(default)s)",
    )
    parser.add_argument("--count", type=int, default=synthetic.DEFAULT_COUNT)
    parser.add_argument("--dimensions", type=int, default=synthetic.DEFAULT_DIMENSIONS)
    parser.add_argument("--centres", type=int, default=synthetic.DEFAULT_CENTRES)
    parser.add_argument("--spread", type=float, default=synthetic.DEFAULT_SPREAD)
    parser.add_argument("--queries", type=int, default=1_000)
    parser.add_argument("--lists", type=int, default=256)
    parser.add_argument("--probes", type=str, default="1,2,4,8,16,32,64")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1, help="threads for FAISS and for NumPy's BLAS")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--faiss-default-training",
        action="store_true",
        help="train FAISS with its defaults (10 rounds on a sample of 256 vectors per list)",
    )
    return parser.parse_args()


def faiss_share_scanned(index: faiss.IndexIVFFlat, queries: np.ndarray, probes: int) -> float:
    sizes = np.array([index.invlists.list_size(i) for i in range(index.nlist)])
    _, probed = index.quantizer.search(queries, probes)
    return float(sizes[probed].sum(axis=1).mean() / index.ntotal)


def main() -> None:
    arguments = parse_arguments()
    probe_counts = [int(value) for value in arguments.probes.split(",")]
    k = arguments.k
    vectors = synthetic.clustered_unit_vectors(
        arguments.count, arguments.dimensions, arguments.centres, arguments.spread, arguments.seed
    )
    queries = synthetic.queries_near_clusters(
        arguments.queries, arguments.dimensions, arguments.centres, arguments.spread, arguments.seed
    )
    faiss.omp_set_num_threads(arguments.threads)
    with threadpool_limits(limits=arguments.threads):
        started = time.perf_counter()
        ours = ivf.build_ivf(vectors, arguments.lists, seed=arguments.seed)
        our_build_seconds = time.perf_counter() - started

        started = time.perf_counter()
        theirs = faiss.IndexIVFFlat(
            faiss.IndexFlatIP(arguments.dimensions),
            arguments.dimensions,
            arguments.lists,
            faiss.METRIC_INNER_PRODUCT,
        )
        if not arguments.faiss_default_training:
            # Train FAISS as we train: every vector, the same number of rounds.
            theirs.cp.niter = ivf.DEFAULT_MAX_ITERATIONS
            theirs.cp.max_points_per_centroid = -(-arguments.count // arguments.lists)
        theirs.train(vectors)
        theirs.add(vectors)
        faiss_build_seconds = time.perf_counter() - started
        flat = faiss.IndexFlatIP(arguments.dimensions)
        flat.add(vectors)

        exact = ivf.exact_search(vectors, queries, k)
        _, faiss_exact_positions = flat.search(queries, k)
        exact_agreement = ivf.recall_against_exact(faiss_exact_positions, exact.positions, k)
        exact_times = interleaved_median_seconds(
            {"ours": lambda: ivf.exact_search(vectors, queries, k), "faiss": lambda: flat.search(queries, k)},
            arguments.repeats,
        )
        rows = [
            {
                "method": "exact",
                "probes": arguments.lists,
                "our_recall": 1.0,
                "faiss_recall": exact_agreement,
                "recall_difference": exact_agreement - 1.0,
                "our_share_scanned": 1.0,
                "faiss_share_scanned": 1.0,
                "our_seconds": exact_times["ours"],
                "faiss_seconds": exact_times["faiss"],
                "time_ratio": exact_times["ours"] / exact_times["faiss"],
                "our_time_vs_exact": 1.0,
            }
        ]
        for probes in probe_counts:
            theirs.nprobe = probes
            ours_result = ours.search(queries, probes, k)
            _, faiss_positions = theirs.search(queries, k)
            times = interleaved_median_seconds(
                {
                    "ours": lambda p=probes: ours.search(queries, p, k),
                    "faiss": lambda: theirs.search(queries, k),
                },
                arguments.repeats,
            )
            our_recall = ivf.recall_against_exact(ours_result.positions, exact.positions, k)
            faiss_recall = ivf.recall_against_exact(faiss_positions, exact.positions, k)
            rows.append(
                {
                    "method": "ivf",
                    "probes": probes,
                    "our_recall": our_recall,
                    "faiss_recall": faiss_recall,
                    "recall_difference": our_recall - faiss_recall,
                    "our_share_scanned": ours_result.mean_share_scanned,
                    "faiss_share_scanned": faiss_share_scanned(theirs, queries, probes),
                    "our_seconds": times["ours"],
                    "faiss_seconds": times["faiss"],
                    "time_ratio": times["ours"] / times["faiss"],
                    "our_time_vs_exact": times["ours"] / exact_times["ours"],
                }
            )

    table = pd.DataFrame(rows)
    arguments.output.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(arguments.output, index=False, float_format="%.6f", lineterminator="\n")
    print(
        f"{arguments.count:,} vectors x {arguments.dimensions}, {arguments.queries:,} queries, "
        f"{arguments.lists} lists, k = {k}, spread {arguments.spread}, {arguments.threads} thread(s)"
    )
    print(f"build seconds: ours {our_build_seconds:.2f}, faiss {faiss_build_seconds:.2f}")
    print(f"FAISS IndexFlatIP top {k} agrees with our exact search on {exact_agreement:.4f} of results")
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(table.to_string(index=False, float_format=lambda value: f"{value:.4f}"))

    ivf_rows = table[table["method"] == "ivf"]
    worst_gap = float(ivf_rows["recall_difference"].abs().max())
    print(f"largest recall gap to FAISS: {worst_gap:.4f} (goal <= {RECALL_TOLERANCE})")
    at_goal = ivf_rows[ivf_rows["probes"] == GOAL_PROBES]
    if not at_goal.empty:
        ratio = float(at_goal["time_ratio"].iloc[0])
        print(f"IVF time ratio ours/faiss at p = {GOAL_PROBES}: {ratio:.2f} (goal <= {IVF_TIME_GOAL})")
    print(
        f"exact time ratio ours/faiss: {float(table['time_ratio'].iloc[0]):.2f} (goal <= {EXACT_TIME_GOAL})"
    )


if __name__ == "__main__":
    main()
