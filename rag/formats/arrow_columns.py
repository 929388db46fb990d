"""Arrow columns built from numpy arrays and encoded strings, without pyarrow's list conversion.

The first time pyarrow converts Python values (``pa.array`` of a list, or
of a numpy array) it imports pandas to recognise pandas' own missing-value
markers, and importing pandas costs about 0.3 s of CPU. A ranking, fusion
or funnel job does less work than that, and a clean build runs a hundred of
them. These functions hand pyarrow finished buffers instead, so such a job
never loads pandas. They hold plain values only: no missing values.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pyarrow as pa

# A string column's offsets are 32-bit: its text must stay below 2 GiB.
_STRING_BYTES_LIMIT = 2**31 - 1

_ARROW_TYPES = {np.dtype(np.int64): "int64", np.dtype(np.float64): "float64", np.dtype(np.int32): "int32"}


def numeric_column(values: np.ndarray | Sequence, dtype: type | np.dtype) -> pa.Array:
    """An Arrow array over ``values`` as ``dtype`` (int32, int64 or float64), sharing a contiguous copy."""
    import pyarrow as pa

    data = np.ascontiguousarray(values, dtype=dtype)
    if data.ndim != 1:
        raise ValueError(f"a column needs one dimension, got shape {data.shape}")
    arrow_type = getattr(pa, _ARROW_TYPES[data.dtype])()
    return pa.Array.from_buffers(arrow_type, len(data), [None, pa.py_buffer(data)])


def string_column(values: Sequence[str]) -> pa.Array:
    """An Arrow string array of ``values``: their UTF-8 bytes end to end, and where each ends."""
    import pyarrow as pa

    encoded = [value.encode("utf-8") for value in values]
    ends = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded)).cumsum()
    if len(ends) and ends[-1] > _STRING_BYTES_LIMIT:
        raise ValueError(f"a string column holds at most 2 GiB of text, got {int(ends[-1])} bytes")
    offsets = np.zeros(len(encoded) + 1, dtype=np.int32)
    offsets[1:] = ends
    return pa.Array.from_buffers(
        pa.string(), len(encoded), [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))]
    )
