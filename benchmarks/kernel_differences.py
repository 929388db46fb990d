"""How far MiniLM's vectors and run files move between OpenBLAS kernels, computed in float32 and in float64.

The MiniLM retriever is the one float-heavy computation whose noise reached a
tracked file: its run files (results/runs/<corpus>/<chunker>/minilm.run.gz,
and the fusions built on it) hold scores to 6 decimals. This script encodes
the chunk texts of the given chunk files and the questions once per OpenBLAS
kernel (OPENBLAS_CORETYPE, each in a subprocess, since OpenBLAS reads it at
load time) and per compute precision of rag.retrieval.dense.embedder
(load_encoder's ``dtype``: float32, the encoder before, and float64, the
encoder now), then ranks every chunk set as rank_embedder does and writes it
as TREC run lines (rag.evaluation.trec.run_lines). Each kernel is compared
with the first one given: the largest vector component difference, the
largest cosine difference, the run lines that differ and the (question,
rank) places whose chunk differs.

Usage (after a build, so that the chunk files exist):
    .venv/bin/python benchmarks/kernel_differences.py \\
        work/chunks/solar_system/sections.parquet work/chunks/solar_system/sentences100.parquet \\
        --questions resources/solar_system/questions.yaml --output results/benchmarks/kernel_differences.csv
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

# Zen is not listed: numpy's OpenBLAS runs Haswell's kernels for it
# (threadpoolctl reports "Haswell" under OPENBLAS_CORETYPE=Zen).
KERNELS = ("SkylakeX", "Haswell", "Sandybridge")
PRECISIONS = ("float32", "float64")
DEPTH = 100


def _texts(chunk_paths: list[str], questions_path: str) -> tuple[dict[str, list[str]], list[str]]:
    from rag.formats.files import read_yaml
    from rag.labels import parse_questions

    chunk_texts = {
        path: pd.read_parquet(path, columns=["indexed_text"])["indexed_text"].tolist() for path in chunk_paths
    }
    questions = [question.text for question in parse_questions(read_yaml(questions_path), questions_path)]
    return chunk_texts, questions


def encode_all(chunk_paths: list[str], questions_path: str, precision: str, output: str) -> None:
    """Child process: the distinct texts' vectors under this process's kernel, saved to ``output``."""
    from rag.retrieval.dense.embedder import encode, load_encoder

    chunk_texts, questions = _texts(chunk_paths, questions_path)
    distinct = sorted({text for texts in chunk_texts.values() for text in texts} | set(questions))
    encoder = load_encoder(dtype=np.dtype(precision).type)
    np.savez(output, texts=np.array(distinct, dtype=object), vectors=encode(encoder, distinct, workers=1))


def _runs(vectors: dict[str, np.ndarray], chunk_texts: dict[str, list[str]], questions: list[str]) -> dict:
    """Chunk file -> (rankings as (question, [(chunk position, score)]), run lines)."""
    from rag.evaluation.trec import run_lines
    from rag.retrieval.dense.sentence_embeddings import EmbeddingIndex, embedding_search

    query = np.stack([vectors[text] for text in questions])
    found = {}
    for path, texts in chunk_texts.items():
        index = EmbeddingIndex("all-MiniLM-L6-v2", 256, 32, np.stack([vectors[text] for text in texts]))
        # Ties by position: the chunk tables are in chunk-id order.
        rankings = embedding_search(index, query, DEPTH, np.arange(len(texts)))
        listed = {
            f"q{number:04d}": [
                (f"c{position:05d}", score) for position, score in zip(r.positions, r.scores, strict=True)
            ]
            for number, r in enumerate(rankings)
        }
        cosines = query.astype(np.float64) @ index.chunk_embeddings.astype(np.float64).T
        found[path] = (listed, run_lines(listed, "minilm"), cosines)
    return found


def compare(base: dict, other: dict) -> dict[str, tuple[float, int, int]]:
    """Per chunk file: the largest cosine difference, the run lines that differ, the places that differ."""
    result = {}
    for path, (listed, lines, cosines) in base.items():
        other_listed, other_lines, other_cosines = other[path]
        changed_lines = sum(a != b for a, b in zip(lines.splitlines(), other_lines.splitlines(), strict=True))
        places = sum(
            a[0] != b[0]
            for question in listed
            for a, b in zip(listed[question], other_listed[question], strict=True)
        )
        result[path] = (float(np.abs(cosines - other_cosines).max()), changed_lines, places)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("chunks", nargs="+", help="chunk files (work/chunks/<corpus>/<chunker>.parquet)")
    parser.add_argument("--questions", required=True)
    parser.add_argument("--kernels", nargs="+", default=list(KERNELS), help="the first is the reference")
    parser.add_argument("--output", required=True)
    parser.add_argument("--encode", choices=PRECISIONS, help=argparse.SUPPRESS)
    parser.add_argument("--to", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.encode:
        encode_all(arguments.chunks, arguments.questions, arguments.encode, arguments.to)
        return
    chunk_texts, questions = _texts(arguments.chunks, arguments.questions)
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for precision in PRECISIONS:
            runs, vectors = {}, {}
            for kernel in arguments.kernels:
                target = Path(scratch, f"{precision}-{kernel}.npz")
                environment = {**os.environ, "OPENBLAS_CORETYPE": kernel, "OPENBLAS_VERBOSE": "2"}
                command = [sys.executable, __file__, *arguments.chunks, "--questions", arguments.questions]
                command += ["--output", "-", "--encode", precision, "--to", str(target)]
                done = subprocess.run(command, env=environment, capture_output=True, text=True, check=True)
                print(f"{precision} {kernel}: {done.stdout.strip()}", file=sys.stderr)
                saved = np.load(target, allow_pickle=True)
                vectors[kernel] = dict(zip(saved["texts"].tolist(), saved["vectors"], strict=True))
                runs[kernel] = _runs(vectors[kernel], chunk_texts, questions)
            reference = arguments.kernels[0]
            for kernel in arguments.kernels[1:]:
                vector_difference = max(
                    float(np.abs(vectors[reference][text] - vectors[kernel][text]).max())
                    for text in vectors[reference]
                )
                for path, (cosine, lines, places) in compare(runs[reference], runs[kernel]).items():
                    rows.append(
                        {
                            "precision": precision,
                            "reference": reference,
                            "kernel": kernel,
                            "chunks": Path(path).stem,
                            "texts": len(vectors[reference]),
                            "max_vector_difference": vector_difference,
                            "max_cosine_difference": cosine,
                            "run_lines": len(runs[reference][path][1].splitlines()),
                            "run_lines_differing": lines,
                            "ranks_differing": places,
                        }
                    )
    table = pd.DataFrame(rows)
    table.to_csv(arguments.output, index=False, float_format="%.3g", lineterminator="\n")
    print(table.to_string(index=False))


if __name__ == "__main__":
    main()
