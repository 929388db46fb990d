"""Per-configuration parts of the whole-grid tables, computed once and merged at the end.

metrics.csv, metrics_ci.csv, significance.csv and the TREC runs each hold a
row (or a file) for every ranking of the grid, so their rules take every
ranking as input, and adding one retriever re-runs them. One job per ranking
would compute only the new rankings' rows, but each Snakemake job costs an
interpreter and its imports (about a second on a loaded two-core machine),
and the default grid has some 160 rankings: the clean build would spend more
in start-up than in work (benchmarks/ablation_speed.py measures both).

So each whole-grid job keeps a store of parts, one per ranking, named by a
digest of everything the part is computed from: the bytes of its input
files (or the values it reads), the rule's code digest and its parameters.
A job loads the parts whose digests it finds, computes the missing ones in
one batch, stores them, and merges. A part is a pure function of its key,
so a stored part is exactly what computing it again would give; a changed
input, parameter or module gives a new key, and the old part is never read.

The store lies outside the DAG, like the embedding cache (docs/pipeline.md):
deleting it costs only time. Parts are written atomically (rag.formats.files.atomic_path),
so a killed job leaves no half-written part behind.
"""

from __future__ import annotations

import hashlib
import io
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

# Bytes of a file read per update of its digest.
_READ_BLOCK = 1 << 20


def file_digest(path: str | os.PathLike) -> str:
    """The SHA-256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(_READ_BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()


def part_key(*parts: object) -> str:
    """One digest of a part's parts (strings, bytes or anything with a stable ``repr``).

    Each part is length-prefixed, so ("ab", "c") and ("a", "bc") differ.
    """
    digest = hashlib.sha256()
    for part in parts:
        data = part if isinstance(part, bytes) else repr(part).encode()
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()


def frame_digest(frame) -> str:
    """A digest of a table's values, column names, dtypes and row order (for parts computed from rows).

    Numbers are hashed as their bytes and text as its joined characters:
    pandas' own row hashing took a tenth of a second per run on arrow
    strings, longer than the merge it serves.
    """
    import numpy as np

    digest = hashlib.sha256()
    for column in frame.columns:
        values = frame[column].to_numpy()
        digest.update(part_key(str(column), str(frame[column].dtype), len(values)).encode())
        if values.dtype.kind in "biuf":
            digest.update(np.ascontiguousarray(values).tobytes())
        else:
            digest.update("\x1f".join(map(str, values)).encode())
    return digest.hexdigest()


@dataclass(frozen=True)
class PartStore:
    """A folder of parts by kind and key: ``folder/kind/ke/key.suffix``."""

    folder: Path

    def path(self, kind: str, key: str, suffix: str) -> Path:
        return Path(self.folder) / kind / key[:2] / f"{key}{suffix}"

    def load_bytes(self, kind: str, key: str, suffix: str = ".bin") -> bytes | None:
        """A stored part's bytes, or None when it was never stored."""
        try:
            return self.path(kind, key, suffix).read_bytes()
        except FileNotFoundError:
            return None

    def save_bytes(self, kind: str, key: str, data: bytes, suffix: str = ".bin") -> None:
        from rag.formats.files import atomic_path

        with atomic_path(self.path(kind, key, suffix)) as temporary:
            temporary.write_bytes(data)

    def load_frame(self, kind: str, key: str):
        """A stored table part, or None."""
        import pandas as pd

        data = self.load_bytes(kind, key, ".parquet")
        return None if data is None else pd.read_parquet(io.BytesIO(data))

    def save_frame(self, kind: str, key: str, frame) -> None:
        buffer = io.BytesIO()
        frame.to_parquet(buffer, index=False)
        self.save_bytes(kind, key, buffer.getvalue(), ".parquet")


def split_found(store: PartStore, kind: str, keys: dict, suffix: str | None = None) -> tuple[dict, list]:
    """The stored table parts among ``keys`` (name -> key) and the names still to compute.

    With ``suffix`` the parts are read as bytes instead of tables.
    """
    found, missing = {}, []
    for name, key in keys.items():
        part = store.load_frame(kind, key) if suffix is None else store.load_bytes(kind, key, suffix)
        if part is None:
            missing.append(name)
        else:
            found[name] = part
    return found, missing


def describe(kind: str, total: int, missing: Iterable) -> str:
    """The log line of a merge: how many parts were reused and how many computed."""
    computed = len(list(missing))
    return f"{kind}: {total - computed} parts reused, {computed} computed"


def reuse_or_compute(store: PartStore, kind: str, keys: dict, compute, suffix: str | None = None):
    """Every part of ``keys`` (name -> key), in the order of ``keys``: the stored ones loaded, the rest
    computed by one call of ``compute(missing_names) -> {name: part}`` and stored.

    One call for all missing parts keeps a clean build one vectorised batch,
    as fast as the whole-grid computation was; adding a retriever computes
    only its own. Returns the parts and the names that were computed.
    """
    found, missing = split_found(store, kind, keys, suffix)
    if missing:
        computed = compute(missing)
        for name in missing:
            part = computed[name]
            if suffix is None:
                store.save_frame(kind, keys[name], part)
            else:
                store.save_bytes(kind, keys[name], part, suffix)
            found[name] = part
    return {name: found[name] for name in keys}, missing
