"""Progress lines for long work: how far, how fast, and how long is left.

Encoding, indexing and ranking a corpus of thousands of texts takes minutes;
without a sign of life a user cannot tell a slow job from a stuck one. Jobs
report through :class:`Progress`, which logs a line every few seconds while
the work lasts, whatever the number of items (a thousand texts through MiniLM
on a busy machine take minutes), and a last line at the end when it logged
any: work that is over within the first interval stays silent.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

# Seconds between two progress lines.
PROGRESS_EVERY = 5.0

Item = TypeVar("Item")


def format_duration(seconds: float) -> str:
    """A duration a person reads at a glance: 42 s, 3 min 05 s, 1 h 02 min."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def progress_line(what: str, done: int, total: int, seconds: float) -> str:
    """``what: 1,200/5,183 (23 %), 41.0 per second, about 1 min 37 s left``."""
    share = 100 * done / total if total else 100.0
    rate = done / seconds if seconds > 0 else float("inf")
    left = (total - done) / rate if done and rate != float("inf") else 0.0
    remaining = "done" if done >= total else f"about {format_duration(left)} left"
    return f"{what}: {done:,}/{total:,} ({share:.0f} %), {rate:,.1f} per second, {remaining}"


class Progress:
    """Reports progress on ``total`` items through ``report`` (a logger's info, say).

    A line once ``every`` seconds have passed since the last (or the start),
    whatever the item count, and one when the work is done if any was
    reported before; :meth:`update` is called after each item or slice.
    """

    def __init__(
        self,
        what: str,
        total: int,
        report: Callable[[str], object],
        every: float = PROGRESS_EVERY,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.what, self.total, self.report, self.every, self.clock = what, total, report, every, clock
        self.start = clock()
        self.last = self.start
        self.reported = False

    def update(self, done: int) -> None:
        now = self.clock()
        finished = done >= self.total
        if (finished and self.reported) or (not finished and now - self.last >= self.every):
            self.last, self.reported = now, True
            self.report(progress_line(self.what, done, self.total, now - self.start))

    def callback(self) -> Callable[[int, int], None]:
        """``progress(done, total)`` for functions that report that way (the encoder's batches)."""
        return lambda done, _total: self.update(done)


def in_slices(items: Sequence[Item], size: int, progress: Progress) -> Iterator[Sequence[Item]]:
    """The items in consecutive slices of ``size``, reporting progress after each."""
    for start in range(0, len(items), size):
        yield items[start : start + size]
        progress.update(min(start + size, len(items)))
