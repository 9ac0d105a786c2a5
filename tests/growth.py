"""How a cost grows with the work, for tests that claim a bound on it without a wall-clock limit: the CPU time of
this thread (not the wall time, which other processes stretch) for one size and for ten times that size, each the
least of a few tries, compared within one run."""

from __future__ import annotations

import time
from collections.abc import Callable

TRIES = 3


def _cpu_seconds(work: Callable[[], object]) -> float:
    least = float("inf")
    for _ in range(TRIES):
        started = time.thread_time()
        work()
        least = min(least, time.thread_time() - started)
    return least


def growth(work: Callable[[int], object], size: int, factor: int = 10) -> float:
    """How many times more CPU ``work(size * factor)`` takes than ``work(size)``: about ``factor`` when the cost
    is linear, ``factor ** 2`` when quadratic."""
    small = _cpu_seconds(lambda: work(size))
    large = _cpu_seconds(lambda: work(size * factor))
    return large / max(small, 1e-6)
