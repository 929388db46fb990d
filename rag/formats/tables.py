"""Parquet tables that carry their provenance, and numpy arrays in ``.npz`` files.

pandas and pyarrow are imported inside the functions that need them: loading
them takes about half a second, which the `rag ask` command cannot afford on
every question, and it only reads and writes numpy arrays and JSON.
"""

from __future__ import annotations

import contextlib
import json
import os
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rag import __version__
from rag.formats.files import atomic_path

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa


# pandas and pyarrow are imported inside the functions that need them: loading
# them takes about half a second, which the `rag ask` command cannot afford on
# every question, and it only reads and writes numpy arrays and JSON.

PROVENANCE_KEY = b"rag.provenance"


def provenance(**parts: object) -> dict:
    """What made an artifact: the given parts plus the package version."""
    return {"rag_version": __version__, **parts}


def write_parquet(
    table: pd.DataFrame | pa.Table, path: str | os.PathLike, provenance: Mapping | None = None
) -> None:
    """Write a table with its provenance in the file's schema metadata.

    ``table`` is a pandas frame or a pyarrow table; the many short ranking
    jobs build pyarrow tables directly, because importing pandas would cost
    them more than their own work.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not isinstance(table, pa.Table):
        table = pa.Table.from_pandas(table, preserve_index=False)
    if provenance is not None:
        metadata = dict(table.schema.metadata or {})
        metadata[PROVENANCE_KEY] = json.dumps(provenance, sort_keys=True).encode()
        table = table.replace_schema_metadata(metadata)
    with atomic_path(path) as temporary:
        pq.write_table(table, temporary)


class DamagedFileError(ValueError):
    """An intermediate file that exists but cannot be read back; the message names it."""


@contextlib.contextmanager
def reading_table(path: str | os.PathLike) -> Iterator[None]:
    """Name the file in any failure to read it (pyarrow says "magic bytes not found" and no more).

    A missing file stays a FileNotFoundError; a damaged one (a truncated parquet
    or npz left by a crash outside :func:`atomic_path`) becomes one line that
    names it and says how to recover.
    """
    try:
        yield
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: no such file") from None
    except KeyError:
        raise
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as error:
        reason = " ".join(str(error).split())[:200] or type(error).__name__
        raise DamagedFileError(
            f"{path}: damaged or truncated file ({type(error).__name__}: {reason}); delete it and rerun"
        ) from None


def read_columns(path: str | os.PathLike, columns: Sequence[str]) -> dict[str, list]:
    """Some columns of a parquet table as Python lists, without pandas.

    ``ParquetFile`` rather than ``read_table``: the latter loads pyarrow's
    dataset layer, and with it pandas.
    """
    import pyarrow.parquet as pq

    with reading_table(path), pq.ParquetFile(path) as parquet:
        return parquet.read(columns=list(columns)).to_pydict()


def read_provenance(path: str | os.PathLike) -> dict:
    import pyarrow.parquet as pq

    with reading_table(path):
        metadata = pq.read_schema(path).metadata or {}
    raw = metadata.get(PROVENANCE_KEY)
    return json.loads(raw) if raw else {}


def save_arrays(path: str | os.PathLike, arrays: Mapping) -> None:
    import numpy as np

    with atomic_path(path) as temporary:
        with open(temporary, "wb") as handle:
            np.savez(handle, **arrays)


def load_arrays(path: str | os.PathLike) -> dict:
    """The arrays of an ``.npz`` written by :func:`save_arrays`; pickled objects are refused."""
    import numpy as np

    with reading_table(path), np.load(path, allow_pickle=False) as archive:
        return {name: archive[name] for name in archive.files}


def load_indexes(paths: Sequence[str | os.PathLike]) -> dict[str, dict]:
    """Saved retriever indexes by retriever name: the workflow names each file after its retriever."""
    return {Path(path).stem: load_arrays(path) for path in paths}
