"""Fair timings on a shared machine: runs timed in turn, medians of the rounds.

The IVF trade-off table (``rag.retrieval.ivf.probe_tradeoff``) and the
benchmarks that compare our code with a peer library in one run all time
several candidates against each other; they share this one loop so that each
of them measures the same way.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Mapping
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
