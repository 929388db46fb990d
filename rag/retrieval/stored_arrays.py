"""Indexes as named plain arrays, the form ``numpy.savez`` stores without pickling.

Every index (BM25, tf-idf, LSA, IVF, embedder) saves itself as a dict of
arrays and is rebuilt from one. A loaded file may be damaged or come from
another kind, so the rebuild first checks that every array it reads is
there. Where an index's arrays are simply its dataclass fields under their
own names, the fields are the list of names: saving and checking read them
from the class, so the saved keys cannot drift from what loading expects.
The two sparse indexes store their term matrix in one layout
(:func:`term_matrix_arrays`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import scipy.sparse as sp


def field_names(record_type: type) -> tuple[str, ...]:
    """The dataclass's field names, in declaration order: the keys its saved arrays use."""
    return tuple(field.name for field in dataclasses.fields(record_type))


def field_arrays(record: object) -> dict[str, np.ndarray]:
    """Each field of a dataclass instance as an array under the field's name, in declaration order.

    Arrays are stored as they are (no copy); a plain value such as a count or
    a model name becomes a zero-dimensional array, which ``numpy.savez``
    keeps without pickling.
    """
    return {name: np.asarray(getattr(record, name)) for name in field_names(type(record))}


def term_matrix_arrays(
    vocabulary: np.ndarray, matrix: sp.csc_matrix, values_name: str
) -> dict[str, np.ndarray]:
    """A chunks x terms CSC matrix as its vocabulary and its three arrays, the values under ``values_name``.

    BM25 stores its counts and tf-idf its weights this way, so a loaded
    index rebuilds the matrix from the arrays without any pickled object.
    """
    return {
        "vocabulary": vocabulary,
        "indptr": matrix.indptr,
        "indices": matrix.indices,
        values_name: matrix.data,
    }


def missing_arrays(arrays: Mapping[str, np.ndarray], names: Sequence[str]) -> list[str]:
    """The ``names`` that ``arrays`` lacks, in the order given."""
    return [name for name in names if name not in arrays]


def require_arrays(arrays: Mapping[str, np.ndarray], names: Sequence[str], label: str) -> None:
    """Stop at the first of ``names`` that ``arrays`` lacks, naming it after ``label`` (e.g. "LSA")."""
    missing = missing_arrays(arrays, names)
    if missing:
        raise ValueError(f"{label} arrays lack {missing[0]!r}")
