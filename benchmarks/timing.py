"""Timing shared by the benchmarks that compare our code with a peer library in one run."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np


def interleaved_medians(runs: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    """Median seconds of each run, alternating between them on every repeat.

    Alternating spreads a shared machine's changing load over every run
    alike, so the ratios stay fair even when the absolute times do not.
    """
    timings: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeats):
        for name, run in runs.items():
            started = time.perf_counter()
            run()
            timings[name].append(time.perf_counter() - started)
    return {name: float(np.median(values)) for name, values in timings.items()}
