"""Bundles: folders of named arrays and JSON values, complete once their manifest is written.

``rag ask`` keeps its index cache as bundles; they are pruned by use.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import time
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from rag.formats.files import PARTIAL_GRACE_SECONDS, write_text
from rag.formats.tables import load_arrays, save_arrays


def source_digest(modules: Sequence[object]) -> str:
    """SHA-256 over the source files of ``modules``: changes whenever their code does.

    A cache keyed only by inputs and options would keep serving indexes built
    by an older chunker or analyzer after the code changed.
    """
    digest = hashlib.sha256()
    for module in modules:
        source = Path(module.__file__)
        digest.update(module.__name__.encode() + b"\0" + source.read_bytes() + b"\0")
    return digest.hexdigest()


BUNDLE_MANIFEST = "manifest.json"


class BundleError(ValueError):
    """A bundle folder that exists but cannot be read back."""


def write_bundle(
    folder: str | os.PathLike,
    arrays: Mapping[str, Mapping],
    values: Mapping[str, object],
    manifest: Mapping[str, object],
) -> None:
    """Write named array groups (``<name>.npz``) and JSON values (``<name>.json``) into ``folder``.

    Every file is written atomically and the manifest, which lists the other
    files, comes last: a folder with a manifest is complete, and a reader that
    finds none treats the bundle as absent. Two writers of the same bundle
    replace each other's files with identical content.
    """
    folder = Path(folder)
    for name, group in arrays.items():
        save_arrays(folder / f"{name}.npz", group)
    for name, value in values.items():
        write_text(folder / f"{name}.json", json.dumps(value, ensure_ascii=False))
    content = {**manifest, "arrays": sorted(arrays), "values": sorted(values)}
    write_text(folder / BUNDLE_MANIFEST, json.dumps(content, sort_keys=True, indent=1))


def touch_bundle(folder: str | os.PathLike) -> None:
    """Mark a bundle as just used, so :func:`prune_bundles` keeps the recently used ones."""
    with contextlib.suppress(OSError):
        os.utime(folder)  # the folder, not its files: a hit leaves the files as they were


def prune_bundles(
    cache: str | os.PathLike,
    keep: int,
    max_age_seconds: float,
    spare: str | os.PathLike | None = None,
    others: Iterable[str] = (),
) -> list[Path]:
    """Remove the bundles of ``cache`` beyond the ``keep`` most recently used, and any unused for
    ``max_age_seconds``; ``spare`` (the entry just used) always stays, and so do the folders named in
    ``others`` (caches of another kind kept beside the bundles). Returns the removed folders.

    A cache keyed by content digests only grows: every edit of a document adds
    an entry and none is ever read again. Use is the manifest's modification
    time of the entry's folder (set when written, touched on a hit); folders without a manifest are
    half-written entries and go once they are older than the partial-file grace.
    """
    root = Path(cache)
    if not root.is_dir():
        return []
    now = time.time()
    spared = Path(spare).resolve() if spare is not None else None
    entries: list[tuple[float, Path]] = []
    removed: list[Path] = []
    for folder in root.iterdir():
        if not folder.is_dir() or folder.is_symlink() or folder.resolve() == spared or folder.name in others:
            continue
        try:
            (folder / BUNDLE_MANIFEST).stat()
            used = folder.stat().st_mtime
        except FileNotFoundError:
            try:
                if now - folder.stat().st_mtime >= PARTIAL_GRACE_SECONDS:
                    shutil.rmtree(folder, ignore_errors=True)
                    removed.append(folder)
            except OSError:
                pass
            continue
        except OSError:
            continue
        entries.append((used, folder))
    entries.sort(key=lambda entry: (-entry[0], entry[1].name))
    budget = max(0, keep - (1 if spared is not None else 0))
    for position, (used, folder) in enumerate(entries):
        if position >= budget or now - used > max_age_seconds:
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


@dataclass(frozen=True)
class Bundle:
    manifest: dict
    arrays: dict[str, dict]
    values: dict[str, object]


def read_bundle(folder: str | os.PathLike) -> Bundle | None:
    """The bundle :func:`write_bundle` wrote into ``folder``, or None when it has no manifest.

    A manifest whose files are missing or damaged raises :class:`BundleError`.
    """
    folder = Path(folder)
    manifest_path = folder / BUNDLE_MANIFEST
    if not manifest_path.exists():
        return None
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        arrays = {name: load_arrays(folder / f"{name}.npz") for name in manifest["arrays"]}
        values = {
            name: json.loads((folder / f"{name}.json").read_text(encoding="utf-8"))
            for name in manifest["values"]
        }
    except (OSError, ValueError, KeyError, TypeError, zipfile.BadZipFile) as error:
        raise BundleError(f"{folder}: damaged bundle ({type(error).__name__}: {error})") from None
    return Bundle(manifest, arrays, values)
