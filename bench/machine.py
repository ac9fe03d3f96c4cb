"""The machine's CPU speed at the time of a benchmark, for reading its figures.

The machines here are virtual and their CPU speed varies over a day (the same plain Python loop has taken twice
as long in the morning as in the evening on one machine). Benchmarks print this line so that a figure can be
compared with one measured at another time.
"""

from __future__ import annotations

import time


def python_loop_seconds(steps: int = 10_000_000, repeats: int = 3) -> float:
    """Best of ``repeats`` runs of a plain Python loop of ``steps`` additions."""
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        total = 0
        for i in range(steps):
            total += i
        best = min(best, time.perf_counter() - started)
    return best


def calibration_line() -> str:
    return (f"machine speed: a 10-million-step Python loop takes {python_loop_seconds():.2f} s "
            "(lower is faster; compare runs at similar speeds)")
