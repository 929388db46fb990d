"""Content digests of a corpus's files: revocation by content, not by modification time.

Snakemake reruns a job when an input is newer than its output. A document
replaced by one with an older modification time (``cp -p``, ``rsync -t``, a
checkout of an older commit, an archive unpacked) is not newer, so the
document would keep its old parse, ACL and all. Every job that reads
documents therefore takes :func:`content_digest` of its input files as a
parameter: a changed parameter reruns a job whatever the times say, so a
document whose bytes changed is read again, and one whose bytes did not is
not (touching a file costs nothing).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from pathlib import Path

_BLOCK = 1 << 20


def digest_bytes(data: bytes) -> str:
    """SHA-256 of some bytes (a file's content held in memory)."""
    return hashlib.sha256(data).hexdigest()


def file_digest(path: str | os.PathLike) -> str:
    """SHA-256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(_BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()


def content_manifest(paths: Iterable[str | os.PathLike]) -> dict[str, str]:
    """Each file's SHA-256 by its path as given, in path order."""
    return {str(path): file_digest(path) for path in sorted(paths, key=str)}


def content_digest(paths: Iterable[str | os.PathLike]) -> str:
    """One SHA-256 over every file's path and content digest: changes iff a file is added,
    removed, renamed or its bytes change (never for a modification time alone)."""
    digest = hashlib.sha256()
    for path, sha in content_manifest(paths).items():
        digest.update(Path(path).as_posix().encode("utf-8", "surrogateescape") + b"\0" + sha.encode() + b"\n")
    return digest.hexdigest()


def changed_files(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """The paths whose content differs between two manifests (added, removed or edited), sorted."""
    return sorted(path for path in set(before) | set(after) if before.get(path) != after.get(path))
