"""Encode each distinct text once: sentence embeddings looked up by the text they encode.

Encoding is the one expensive step of a pretrained dense retriever, and the
grid asks for the same texts again and again: a re-run after an unrelated
change, two chunkers that cut some sections identically, a chunker without a
header next to an entry that embeds the plain text of one with a header, the
same questions for every chunk set. Keying a vector by a digest of its text
(within a namespace of everything else that shapes the vector: the model, the
token limit and a fingerprint of the encoder) makes every such repeat a cache
hit, whatever chunker, retriever or run asks for it.

Large collections are encoded in blocks (:func:`embed_streaming`): each block
reaches the cache as soon as it is done, so an interrupted job loses at most
one block and its re-run encodes only what is still missing. The functions
here are pure (keys, the split into hits and misses, the progress lines);
:class:`EmbeddingCache` is the thin I/O edge that a job uses, over the
shard files that :mod:`rag.retrieval.dense.embedding_shards` reads and writes.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class EncoderSettings:
    """Everything besides the text that decides an embedding.

    ``fingerprint`` stands for the encoder's code and the model package's
    version: a change to either may change the vectors, so it must start a
    fresh namespace rather than serve stale ones. The batch size is absent on
    purpose: the encoder computes every text alone, so a vector depends on its
    text and these settings only, not on the texts encoded with it or how
    many at a time (:func:`rag.retrieval.dense.embedder.encode`).
    """

    model: str
    max_tokens: int
    fingerprint: str

    def namespace(self) -> tuple[str, str]:
        """Two names (model, settings) that keep vectors of different encoders apart."""
        safe_model = re.sub(r"[^A-Za-z0-9._-]", "_", self.model)
        return safe_model, f"max{self.max_tokens}-{self.fingerprint[:16]}"


def encoder_fingerprint(code_digest: str, package_version: str) -> str:
    """One digest of the encoder's source and the weights package's version."""
    return hashlib.sha256(f"{code_digest}\0{package_version}".encode()).hexdigest()


def text_key(text: str) -> str:
    """The cache key of one text: the SHA-256 of its UTF-8 bytes, in hex."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CacheOutcome:
    """What one lookup did: texts asked for, distinct texts among them, and how those were served."""

    texts: int
    distinct: int
    hits: int
    encoded: int


def embed_with_cache(
    texts: Sequence[str],
    cached: Mapping[str, np.ndarray],
    encode: Callable[[list[str]], np.ndarray],
) -> tuple[np.ndarray, dict[str, np.ndarray], CacheOutcome]:
    """Embeddings of ``texts`` in order, encoding only the distinct texts not in ``cached``.

    ``cached`` maps :func:`text_key` to a vector; ``encode`` turns a list of
    texts into one row per text. Returns the matrix (float32, one row per
    text), the newly encoded vectors by key (to be stored for the next run)
    and the counts. ``encode`` is not called at all when every text is a hit,
    so a caller can load the model lazily inside it.
    """
    if isinstance(texts, str):
        raise ValueError("texts must be a sequence of strings, not a single string")
    keys = [text_key(text) for text in texts]
    first_text: dict[str, str] = {}
    for key, text in zip(keys, texts, strict=True):
        first_text.setdefault(key, text)
    missing = [key for key in first_text if key not in cached]
    fresh: dict[str, np.ndarray] = {}
    if missing:
        rows = np.asarray(encode([first_text[key] for key in missing]), dtype=np.float32)
        if rows.ndim != 2 or len(rows) != len(missing):
            raise ValueError(f"the encoder returned shape {rows.shape} for {len(missing)} texts")
        fresh = dict(zip(missing, rows, strict=True))
    outcome = CacheOutcome(
        texts=len(keys), distinct=len(first_text), hits=len(first_text) - len(missing), encoded=len(missing)
    )
    if not keys:
        return np.zeros((0, 0), dtype=np.float32), fresh, outcome
    vectors = [fresh[key] if key in fresh else cached[key] for key in keys]
    dimensions = {len(vector) for vector in vectors}
    if len(dimensions) != 1:
        raise ValueError(f"cached and new embeddings differ in dimension: {sorted(dimensions)}")
    return np.stack(vectors).astype(np.float32, copy=False), fresh, outcome


def describe_outcome(what: str, outcome: CacheOutcome) -> str:
    """One log line: how many texts, how many distinct, how many cache hits and how many encoded."""
    return (
        f"{what}: {outcome.texts} texts ({outcome.distinct} distinct): "
        f"{outcome.hits} cache hits, {outcome.encoded} encoded"
    )


def progress_message(done: int, total: int, seconds: float) -> str:
    """The encoding progress line of a rule's log, with its rate in texts per second."""
    rate = done / seconds if seconds > 0 else float("inf")
    return f"encoded {done}/{total} texts in {seconds:.1f} s ({rate:.1f} texts per second)"


# --------------------------------------------------------------------------
# Encoding at scale: blocks that reach the cache as they are done
# --------------------------------------------------------------------------

# Texts encoded between two writes to the cache: at MiniLM's CPU rate (about
# 50 to 100 texts per second on two cores) a block is half a minute of work,
# which is all an interruption can lose.
DEFAULT_BLOCK_TEXTS = 2_048


def format_duration(seconds: float) -> str:
    """A short human duration: 42 s, 3 min 20 s, 2 h 05 min."""
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes, rest = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes} min {rest:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def time_left_message(done: int, total: int, seconds: float) -> str:
    """The progress line of a long encoding: :func:`progress_message` and the time left at that rate."""
    line = progress_message(done, total, seconds)
    if 0 < done < total and seconds > 0:
        line += f", about {format_duration((total - done) * seconds / done)} left"
    return line


def embed_streaming(
    texts: Sequence[str],
    cached: Mapping[str, np.ndarray],
    encode: Callable[[list[str]], np.ndarray],
    store: Callable[[dict[str, np.ndarray]], object],
    block_texts: int = DEFAULT_BLOCK_TEXTS,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[np.ndarray, dict[str, np.ndarray], CacheOutcome]:
    """:func:`embed_with_cache`, encoding the misses ``block_texts`` at a time and storing each block.

    ``store`` receives each block's new vectors (text key -> vector) as soon
    as the block is encoded, so a job that is killed, preempted or fails
    half-way keeps what it had finished: run again, it finds those texts in
    the cache and encodes only the rest. ``progress(done, total)`` counts the
    encoded texts after every block. Blocks follow the order in which the
    texts first occur, so which texts a block holds does not depend on the
    cache's content beyond which texts are missing.
    """
    if isinstance(block_texts, bool) or not isinstance(block_texts, int) or block_texts < 1:
        raise ValueError(f"block_texts must be a positive integer, got {block_texts!r}")
    keys = [text_key(text) for text in texts] if not isinstance(texts, str) else None
    if keys is None:
        raise ValueError("texts must be a sequence of strings, not a single string")
    first_text: dict[str, str] = {}
    for key, text in zip(keys, texts, strict=True):
        first_text.setdefault(key, text)
    missing = [key for key in first_text if key not in cached]
    fresh: dict[str, np.ndarray] = {}
    for start in range(0, len(missing), block_texts):
        block = missing[start : start + block_texts]
        # One call per block; embed_with_cache validates the encoder's answer.
        _, block_vectors, _ = embed_with_cache([first_text[key] for key in block], {}, encode)
        store(block_vectors)
        fresh.update(block_vectors)
        if progress is not None:
            progress(len(fresh), len(missing))
    matrix, _, outcome = embed_with_cache(texts, {**cached, **fresh}, _refuse_encoding)
    return matrix, fresh, CacheOutcome(outcome.texts, outcome.distinct, outcome.hits - len(fresh), len(fresh))


def _refuse_encoding(texts: list[str]) -> np.ndarray:
    raise AssertionError(f"{len(texts)} texts left unencoded")  # unreachable: every miss was encoded


class EmbeddingCache:
    """The cached vectors of one encoder namespace folder, read once, added to block by block.

    The I/O edge of the cache for a job that embeds several lists of texts
    (chunks, then questions): shards are read once, every block of new
    vectors is written as its own shard at once (see
    :func:`rag.retrieval.dense.embedding_shards.write_embedding_shard`), and each step is reported through
    ``log`` (a function taking one line).
    """

    def __init__(self, folder, log: Callable[[str], None]) -> None:
        from rag.retrieval.dense.embedding_shards import read_embedding_shards

        self.folder = folder
        self.log = log
        self.vectors, problems = read_embedding_shards(folder)
        for problem in problems:
            log(problem)
        log(f"{len(self.vectors)} cached embeddings in {folder}")

    def _store(self, vectors: dict[str, np.ndarray]) -> None:
        from rag.retrieval.dense.embedding_shards import write_embedding_shard

        shard = write_embedding_shard(self.folder, vectors)
        self.vectors.update(vectors)
        if shard is not None:
            self.log(f"stored {len(vectors)} new embeddings in {shard}")

    def embed(
        self,
        what: str,
        texts: Sequence[str],
        encode: Callable[[list[str]], np.ndarray],
        block_texts: int = DEFAULT_BLOCK_TEXTS,
        clock: Callable[[], float] | None = None,
    ) -> np.ndarray:
        """The vectors of ``texts`` in order; misses are encoded in blocks stored as each one ends."""
        import time

        clock = clock or time.perf_counter
        start = clock()

        def progress(done: int, total: int) -> None:
            self.log(f"{what}: {time_left_message(done, total, clock() - start)}")

        matrix, _, outcome = embed_streaming(
            texts, self.vectors, encode, self._store, block_texts=block_texts, progress=progress
        )
        self.log(describe_outcome(what, outcome))
        return matrix
