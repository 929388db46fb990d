"""The embedding cache's files: vectors by text key, in write-once ``.npz`` shards."""

from __future__ import annotations

import hashlib
import os
import zipfile
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from rag.formats.tables import load_arrays, save_arrays

EMBEDDING_SHARD_SUFFIX = ".npz"


def read_embedding_shards(folder: str | os.PathLike) -> tuple[dict, list[str]]:
    """Every cached vector in ``folder`` by text key, and a note for each shard that could not be read.

    A cache may lose a file or hold a damaged one without harm: such a shard
    is skipped (and named, so the job's log shows it) and its texts are
    simply encoded again. A missing folder is an empty cache.
    """
    vectors: dict[str, np.ndarray] = {}
    problems: list[str] = []
    path = Path(folder)
    if not path.is_dir():
        return vectors, problems
    for shard in sorted(path.glob(f"*{EMBEDDING_SHARD_SUFFIX}")):
        try:
            vectors.update(read_embedding_file(shard))
        except (OSError, ValueError, KeyError, zipfile.BadZipFile) as error:
            problems.append(f"{shard}: skipped, unreadable ({type(error).__name__}: {error})")
    return vectors, problems


def read_embedding_file(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """The vectors of one shard-format file by text key; a damaged file raises."""
    arrays = load_arrays(path)
    keys, matrix = arrays["keys"], arrays["vectors"]
    if matrix.ndim != 2 or keys.shape != (len(matrix),):
        raise ValueError(f"{keys.shape} keys for vectors of shape {matrix.shape}")
    return dict(zip(keys.tolist(), matrix, strict=True))


def write_embedding_file(path: str | os.PathLike, vectors: Mapping) -> None:
    """Store vectors (text key -> vector) at ``path`` atomically, in key order (same vectors, same bytes)."""
    keys = sorted(vectors)
    rows = [np.asarray(vectors[key], dtype=np.float32) for key in keys]
    matrix = np.stack(rows) if rows else np.zeros((0, 0), dtype=np.float32)
    save_arrays(path, {"keys": np.array(keys, dtype=np.str_), "vectors": matrix})


def write_embedding_shard(folder: str | os.PathLike, vectors: Mapping) -> Path | None:
    """Store new vectors (text key -> vector) as one shard of ``folder``; None when there are none.

    Shards are never modified, only added, each written atomically, so jobs
    that run at the same time can share the folder: a reader sees whole
    shards only, and two jobs that encoded the same texts write the same
    shard name with the same content.
    """
    if not vectors:
        return None
    name = hashlib.sha256("\n".join(sorted(vectors)).encode()).hexdigest()[:24]
    path = Path(folder) / f"{name}{EMBEDDING_SHARD_SUFFIX}"
    write_embedding_file(path, vectors)
    return path
