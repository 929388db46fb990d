"""The whole pipeline on large synthetic BEIR collections: time and peak memory per stage.

For each size (default 100,000 and 1,000,000 documents) it generates a seeded
synthetic collection (:mod:`rag.corpus.synthetic_corpus`: Zipfian terms, log-normal
lengths, topical qrels), writes a configuration with that one corpus, one
chunker (each document one chunk) and four retrievers (BM25, tf-idf, LSA with
128 dimensions and an inverted-file index over the LSA vectors), and builds
the document-level evaluation with Snakemake in a temporary copy of the
project. Every stage's wall time and peak resident memory come from the
``benchmark:`` file Snakemake writes for its job; generating the collection
is timed here. One row per (documents, stage) goes to the CSV; the figure
plots CPU time and peak memory against the collection size on log-log axes,
with the 24 GB line that every stage must stay under at 1M documents.

It is CPU-heavy: run it with ``nice -n 19`` on a shared machine.

Usage:
    nice -n 19 .venv/bin/python benchmarks/pipeline_scale.py \\
        --documents 100000 1000000 --work work/pipeline_scale \\
        --output results/benchmarks/pipeline_scale.csv --figure results/benchmarks/pipeline_scale.png
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))

from rag.corpus.synthetic_corpus import CorpusShape, write_collection  # noqa: E402
from rag.pipeline.reproduce import WORKFLOW_CODE, copy_inputs  # noqa: E402

MEMORY_LIMIT_MB = 24 * 1024
CHUNKER = "whole"
RETRIEVERS = ("bm25", "tfidf", "lsa128", "lsa128_ivf")
FIELDS = ["documents", "stage", "seconds", "cpu_seconds", "peak_memory_mb", "within_limit"]


def parse_arguments(arguments: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--documents", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--work", type=Path, required=True, help="folder for the collections and the runs")
    parser.add_argument("--output", type=Path, required=True, help="CSV to write (rows of other sizes kept)")
    parser.add_argument("--figure", type=Path, help="log-log figure of time and memory per stage")
    parser.add_argument("--plot-only", action="store_true", help="only redraw the figure from the CSV")
    parser.add_argument(
        "--collect-only",
        action="store_true",
        help="build nothing: record the stages that existing runs in --work have finished",
    )
    return parser.parse_args(arguments)


def generate(folder: Path, shape: CorpusShape) -> dict:
    """Generate the collection unless a complete one of the same shape is there; its cost either way.

    The cost of generating is kept beside the collection (generation.json),
    so a later run or --collect-only still reports it; {} when unknown.
    """
    stamp, cost = folder / "shape.json", folder / "generation.json"
    wanted = json.dumps(shape.__dict__, sort_keys=True)
    if stamp.is_file() and stamp.read_text() == wanted:
        return json.loads(cost.read_text()) if cost.is_file() else {}
    print(f"generating {folder}", flush=True)
    start, cpu = time.perf_counter(), time.process_time()
    write_collection(folder, shape)
    measured = {
        "seconds": time.perf_counter() - start,
        "cpu_seconds": time.process_time() - cpu,
        "peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    cost.write_text(json.dumps(measured))
    stamp.write_text(wanted)
    return measured


def retrievers(documents: int) -> dict:
    """The four retrievers; the IVF index has about sqrt(N) lists (a power of two) and probes 1/32 of them."""
    lists = max(16, 2 ** round(math.log2(math.sqrt(documents))))
    return {
        "bm25": {"kind": "bm25"},
        "tfidf": {"kind": "tfidf"},
        "lsa128": {"kind": "lsa", "dimensions": 128},
        "lsa128_ivf": {
            "kind": "ivf",
            "base": "lsa128",
            "lists": lists,
            "probes": max(1, lists // 32),
            "seed": 0,
        },
    }


def configuration(collection: Path, documents: int) -> dict:
    return {
        "corpora": {"synthetic": {"source": "beir", "folder": str(collection)}},
        "chunkers": {CHUNKER: {"kind": "sections", "header": False}},
        "retrievers": retrievers(documents),
        "evaluation": {"depth": 100, "ks": [1, 5, 10]},
    }


def build(run: Path, collection: Path, documents: int, cores: int) -> None:
    if run.exists():
        shutil.rmtree(run)
    copy_inputs(PROJECT, run, WORKFLOW_CODE)  # its own config.yaml follows
    (run / "config.yaml").write_text(
        yaml.safe_dump(configuration(collection.resolve(), documents), sort_keys=False)
    )
    command = [sys.executable, "-m", "snakemake", "--cores", str(cores), "results/document_metrics.csv"]
    environment = {**os.environ, "PYTHONPATH": str(run)}
    with (run / "snakemake.log").open("w") as log:
        completed = subprocess.run(command, cwd=run, env=environment, stdout=log, stderr=subprocess.STDOUT)
    if completed.returncode != 0:
        raise SystemExit(f"snakemake failed on {collection}; see {run / 'snakemake.log'}")


def stage_rows(run: Path) -> list[tuple[str, dict]]:
    """(stage, measurements) from the benchmark files of one run."""
    logs = run / "benchmarks" / "logs"
    files = [
        ("parse", logs / "parse" / "synthetic.tsv"),
        ("chunk", logs / "chunk" / "synthetic" / f"{CHUNKER}.tsv"),
    ]
    for retriever in RETRIEVERS:
        rule = "rank_ivf" if retriever.endswith("_ivf") else "rank"
        files.append((f"{rule} {retriever}", logs / rule / "synthetic" / CHUNKER / f"{retriever}.tsv"))
    files.append(("evaluate_documents", logs / "evaluate_documents.tsv"))
    rows = []
    for stage, path in files:
        if not path.is_file():  # a run stopped before this stage (see --collect-only)
            continue
        with path.open() as handle:
            record = next(csv.DictReader(handle, delimiter="\t"))
        rows.append(
            (
                stage,
                {
                    "seconds": float(record["s"]),
                    "cpu_seconds": float(record["cpu_time"]),
                    "peak": float(record["max_rss"]),
                },
            )
        )
    return rows


def write_rows(path: Path, new_rows: list[dict]) -> list[dict]:
    """Replace this run's sizes in the CSV, keep the other sizes' rows; sorted by size then stage order."""
    sizes = {row["documents"] for row in new_rows}
    kept = []
    if path.is_file():
        with path.open() as handle:
            kept = [row for row in csv.DictReader(handle) if int(row["documents"]) not in sizes]
    rows = [{**row, "documents": int(row["documents"])} for row in kept] + new_rows
    order = {stage: index for index, stage in enumerate(dict.fromkeys(row["stage"] for row in new_rows))}
    rows.sort(key=lambda row: (row["documents"], order.get(row["stage"], len(order))))
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=FIELDS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return rows


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (time_axis, memory_axis) = plt.subplots(1, 2, figsize=(11, 4.5))
    for stage in dict.fromkeys(row["stage"] for row in rows):
        points = sorted((int(row["documents"]), row) for row in rows if row["stage"] == stage)
        sizes = [size for size, _ in points]
        time_axis.plot(sizes, [float(row["cpu_seconds"]) for _, row in points], marker="o", label=stage)
        memory_axis.plot(sizes, [float(row["peak_memory_mb"]) for _, row in points], marker="o", label=stage)
    memory_axis.axhline(MEMORY_LIMIT_MB, color="red", linestyle="--", label="24 GB limit")
    # CPU time, not wall time: on a shared machine the wall time says more about
    # the other users than about the stage (both are in the CSV).
    for axis, label in ((time_axis, "CPU time (s)"), (memory_axis, "peak resident memory (MB)")):
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_xlabel("documents")
        axis.set_ylabel(label)
        axis.grid(True, which="both", alpha=0.3)
    time_axis.set_title("CPU time per stage")
    memory_axis.set_title("Peak memory per stage")
    memory_axis.legend(fontsize=7, loc="upper left")
    figure.suptitle("Synthetic BEIR collections (bm25, tf-idf, LSA 128, IVF over LSA)")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120, metadata={"Software": None})
    plt.close(figure)


def main(arguments: list[str] | None = None) -> None:
    options = parse_arguments(arguments)
    if options.plot_only:
        with options.output.open() as handle:
            plot(list(csv.DictReader(handle)), options.figure)
        return
    new_rows = []
    for documents in options.documents:
        shape = CorpusShape(documents=documents, queries=min(options.queries, documents), seed=options.seed)
        collection = options.work / f"collection_{documents}"
        run = options.work / f"run_{documents}"
        cost = collection / "generation.json"
        if options.collect_only:
            generated = json.loads(cost.read_text()) if cost.is_file() else {}
        else:
            generated = generate(collection, shape)
            print(f"{documents} documents: building in {run}", flush=True)
            build(run, collection, documents, options.cores)
        stages = ([("generate", generated)] if generated else []) + stage_rows(run)
        for stage, measured in stages:
            row = {
                "documents": documents,
                "stage": stage,
                "seconds": round(measured["seconds"], 1),
                "cpu_seconds": round(measured["cpu_seconds"], 1),
                "peak_memory_mb": round(measured["peak"], 0),
                "within_limit": measured["peak"] < MEMORY_LIMIT_MB,
            }
            new_rows.append(row)
            print(f"  {stage:24} {row['seconds']:9.1f} s {row['peak_memory_mb']:9.0f} MB", flush=True)
        rows = write_rows(options.output, new_rows)
        if options.figure:
            plot(rows, options.figure)


if __name__ == "__main__":
    main()
