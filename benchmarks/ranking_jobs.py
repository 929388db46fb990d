"""The pipeline's own BM25 and tf-idf ranking jobs at two or more commits, from their Snakemake timing files.

For each commit, in a detached git worktree of this repository and with this
interpreter's packages:

- the bundled grid (its ``config.yaml``);
- a SciFact-sized BEIR collection (5,183 synthetic documents of Zipf-drawn
  words, about 200 words each, 300 judged queries drawn from them; ranked to
  depth 1,000, as BEIR is evaluated), with a config written beside it.

``snakemake --cores 1 --until rank`` first builds what the ranking jobs read;
then ``--forcerun rank`` runs every ranking job again ``--repeats`` times, one
job at a time, and each run's ``benchmarks/logs/rank/<corpus>/<chunker>/<retriever>.tsv``
(Snakemake's ``benchmark:`` file: wall seconds ``s`` and ``cpu_time``) is read.
The table keeps the retrievers of kind bm25 and tfidf: one row per commit,
corpus, chunker and retriever, with the median seconds over the repeats. The
commits are run in turn for each repeat, so they see the same load.

Usage:
    .venv/bin/python benchmarks/ranking_jobs.py 7b85aa1^ HEAD --output results/benchmarks/ranking_jobs.csv
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

PROJECT = Path(__file__).resolve().parents[1]
KINDS = ("bm25", "tfidf")
SCIFACT_DOCUMENTS, SCIFACT_QUERIES, SCIFACT_LENGTH = 5_183, 300, 200


def parse_arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("commits", nargs="+", help="commits to time (any git revision)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", type=Path)
    return parser.parse_args()


def write_beir(folder: Path, seed: int) -> None:
    """A seeded BEIR collection the size of SciFact: corpus.jsonl, queries.jsonl, qrels/test.tsv."""
    rng = np.random.default_rng(seed)
    vocabulary = 30_000
    probabilities = 1.0 / np.arange(1, vocabulary + 1) ** 1.1
    probabilities /= probabilities.sum()
    lengths = rng.poisson(SCIFACT_LENGTH - 1, SCIFACT_DOCUMENTS) + 1
    words = rng.choice(vocabulary, size=int(lengths.sum()), p=probabilities)
    documents = np.split(words, np.cumsum(lengths)[:-1])
    (folder / "qrels").mkdir(parents=True)
    with (folder / "corpus.jsonl").open("w", encoding="utf-8") as corpus:
        for number, terms in enumerate(documents):
            text = " ".join(f"w{term}" for term in terms.tolist())
            corpus.write(
                json.dumps({"_id": f"d{number}", "title": f"Document {number}", "text": text}) + "\n"
            )
    judged = rng.choice(SCIFACT_DOCUMENTS, size=SCIFACT_QUERIES, replace=False)
    with (folder / "queries.jsonl").open("w", encoding="utf-8") as queries:
        for number, document in enumerate(judged.tolist()):
            picked = rng.choice(documents[document], size=int(rng.integers(4, 12)))
            text = " ".join(f"w{term}" for term in picked.tolist())
            queries.write(json.dumps({"_id": f"q{number}", "text": text}) + "\n")
    lines = ["query-id\tcorpus-id\tscore"]
    lines += [f"q{number}\td{document}\t1" for number, document in enumerate(judged.tolist())]
    (folder / "qrels" / "test.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")


def beir_config(folder: Path) -> dict:
    return {
        "results": "results_scifact_like",
        "corpora": {"scifact_like": {"source": "beir", "folder": str(folder), "split": "test"}},
        "chunkers": {"whole": {"kind": "sections", "header": True}},
        "retrievers": {
            "bm25": {"kind": "bm25"},
            "bm25_stem": {"kind": "bm25", "k1": 0.9, "b": 0.4, "stem": True},
            "tfidf": {"kind": "tfidf"},
        },
        "evaluation": {"depth": 1000, "ks": [1, 5, 10]},
    }


def snakemake(checkout: Path, *arguments: str) -> None:
    command = [sys.executable, "-m", "snakemake", "--cores", "1", "--until", "rank", *arguments]
    result = subprocess.run(command, cwd=checkout, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        tail = "\n".join(result.stderr.splitlines()[-15:])
        raise SystemExit(f"{checkout.name}: {' '.join(command[2:])} failed:\n{tail}")


def ranking_retrievers(config: dict) -> set[str]:
    return {name for name, entry in config["retrievers"].items() if entry.get("kind") in KINDS}


def timings(checkout: Path, corpora: set[str], retrievers: set[str]) -> list[dict]:
    rows = []
    for path in sorted((checkout / "benchmarks" / "logs" / "rank").glob("*/*/*.tsv")):
        corpus, chunker, retriever = path.parent.parent.name, path.parent.name, path.stem
        if corpus in corpora and retriever in retrievers:
            timing = pd.read_csv(path, sep="\t").iloc[-1]
            rows.append(
                {
                    "corpus": corpus,
                    "chunker": chunker,
                    "retriever": retriever,
                    "seconds": float(timing["s"]),
                    "cpu_seconds": float(timing["cpu_time"]),
                }
            )
    return rows


def job_totals(table: pd.DataFrame) -> pd.DataFrame:
    """Per setup and commit: the jobs every commit ran, and their summed median seconds."""
    keys = ["setup", "corpus", "chunker", "retriever"]
    codes = table["code"].nunique()
    shared = table.groupby(keys)["code"].transform("nunique") == codes
    totals = (
        table[shared]
        .groupby(["setup", "code"], sort=False)
        .agg(jobs=("seconds", "size"), seconds=("seconds", "sum"), cpu_seconds=("cpu_seconds", "sum"))
        .reset_index()
    )
    return totals.round({"seconds": 2, "cpu_seconds": 2})


def main() -> None:
    arguments = parse_arguments()
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        write_beir(scratch / "beir", arguments.seed)
        beir = beir_config(scratch / "beir")
        (scratch / "beir.yaml").write_text(yaml.safe_dump(beir), encoding="utf-8")
        bundled = yaml.safe_load((PROJECT / "config.yaml").read_text(encoding="utf-8"))
        setups = {
            "bundled": ([], set(bundled["corpora"]), ranking_retrievers(bundled)),
            "scifact_like": (
                ["--configfile", str(scratch / "beir.yaml")],
                {"scifact_like"},
                ranking_retrievers(beir),
            ),
        }
        checkouts = {}
        for commit in arguments.commits:
            name = subprocess.run(
                ["git", "rev-parse", "--short", commit],
                cwd=PROJECT,
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
            checkout = scratch / name
            subprocess.run(
                ["git", "worktree", "add", "--detach", str(checkout), commit],
                cwd=PROJECT, capture_output=True, check=True,
            )  # fmt: skip
            checkouts[name] = checkout
        try:
            for name, checkout in checkouts.items():
                for extra, _, _ in setups.values():
                    snakemake(checkout, *extra)
                print(f"{name}: inputs built", flush=True)
            runs = []
            for repeat in range(arguments.repeats):
                for name, checkout in checkouts.items():
                    for setup, (extra, corpora, retrievers) in setups.items():
                        snakemake(checkout, *extra, "--forcerun", "rank")
                        for row in timings(checkout, corpora, retrievers):
                            runs.append({"code": name, "setup": setup, "repeat": repeat, **row})
                    print(f"{name}: repeat {repeat + 1} of {arguments.repeats}", flush=True)
        finally:
            for checkout in checkouts.values():
                subprocess.run(
                    ["git", "worktree", "remove", "--force", str(checkout)], cwd=PROJECT, check=False
                )
            shutil.rmtree(scratch / "beir", ignore_errors=True)
    keys = ["code", "setup", "corpus", "chunker", "retriever"]
    table = (
        pd.DataFrame(runs)
        .groupby(keys, sort=False)
        .agg(
            repeats=("seconds", "size"),
            seconds=("seconds", statistics.median),
            cpu_seconds=("cpu_seconds", statistics.median),
        )
        .reset_index()
    )
    table["load"] = round(os.getloadavg()[0], 2)
    print(table.to_string(index=False))
    print(job_totals(table).to_string(index=False))
    if arguments.output is not None:
        arguments.output.parent.mkdir(parents=True, exist_ok=True)
        table.to_csv(arguments.output, index=False)
        print(f"wrote {arguments.output} ({len(table)} rows)")


if __name__ == "__main__":
    main()
