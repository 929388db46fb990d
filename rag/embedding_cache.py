"""Encode each distinct text once: sentence embeddings looked up by the text they encode.

Encoding is the one expensive step of a pretrained dense retriever, and the
grid asks for the same texts again and again: a re-run after an unrelated
change, two chunkers that cut some sections identically, a chunker without a
header next to an entry that embeds the plain text of one with a header, the
same questions for every chunk set. Keying a vector by a digest of its text
(within a namespace of everything else that shapes the vector: the model, the
token limit and a fingerprint of the encoder) makes every such repeat a cache
hit, whatever chunker, retriever or run asks for it.

This module is the pure half: keys, the split into hits and misses, and the
progress line. Reading and writing the cached vectors is :mod:`rag.io`'s job.
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
    purpose: it changes only the order of float32 sums (by about 1e-6), not the
    embedding.
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
