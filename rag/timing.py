"""Fair timings on a shared machine: runs timed in turn, medians of the rounds.

The IVF trade-off table (``rag.retrieval.ivf.probe_tradeoff``) and the
benchmarks that compare our code with a peer library in one run all time
several candidates against each other; they share this one loop so that each
of them measures the same way.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import TypeVar

import numpy as np

RunName = TypeVar("RunName", bound=Hashable)


def interleaved_median_seconds(
    runs: Mapping[RunName, Callable[[], object]], repeats: int
) -> dict[RunName, float]:
    """Median seconds of each run over ``repeats`` rounds, every round timing every run once, in turn.

    Alternating spreads a shared machine's changing load over every run
    alike: a burst of load from other processes slows one round of every run
    rather than all repeats of one of them, so the ratios between the runs
    stay fair even when the absolute times do not. Warming up is the
    caller's choice; nothing here runs untimed.
    """
    timings: dict[RunName, list[float]] = {name: [] for name in runs}
    for _ in range(repeats):
        for name, run in runs.items():
            started = time.perf_counter()
            run()
            timings[name].append(time.perf_counter() - started)
    return {name: float(np.median(values)) for name, values in timings.items()}


# --------------------------------------------------------------------------
# Timings kept apart from the tables that are compared
# --------------------------------------------------------------------------

# The folder, inside a results folder, of the files that time the machine:
# git ignores it (.gitignore) and the reproduction check compares only the
# results folder's own *.csv files, so two builds of one commit leave the same
# bytes in everything else (docs/formats.md, "Timings").
TIMINGS_FOLDER = "timings"

# Wall time and peak memory of each index job, from its benchmark file.
INDEX_TIMING_COLUMNS = ("seconds", "max_rss_mb")
# The synthetic IVF benchmark's medians of interleaved runs (rag.retrieval.ivf.probe_tradeoff).
IVF_TIMING_COLUMNS = ("ivf_seconds", "exact_seconds", "time_relative_to_exact", "build_seconds")


def split_timings(table, keys: Sequence[str], timing_columns: Sequence[str]):
    """``table`` (a DataFrame) without its timing columns, and its ``keys`` with only those.

    The first is what the results folder keeps; the second goes to
    :data:`TIMINGS_FOLDER`, and joins back on ``keys``. A missing column is an
    error naming it, so a renamed timing column cannot slip into a compared table.
    """
    missing = [column for column in (*keys, *timing_columns) if column not in table.columns]
    if missing:
        raise ValueError(f"the table has no column {missing[0]!r}; it has {list(table.columns)}")
    if table.duplicated(list(keys)).any():
        raise ValueError(f"the columns {list(keys)} do not identify each row")
    return table.drop(columns=list(timing_columns)), table[[*keys, *timing_columns]].copy()
