"""Jobs for the worker-process tests (tests/test_app_budget.py): a spawned worker imports them by name, so they live
in a module that imports next to nothing, and the time a job takes is its own."""

from __future__ import annotations

import os
import time

MB = 2**20


def nap(seconds: float, value=None):
    time.sleep(seconds)
    return value


def finished_at(seconds: float) -> float:
    time.sleep(seconds)
    return time.time()


def niceness() -> int:
    return os.nice(0)


def hog(megabytes: int) -> int:
    import numpy as np

    return int(np.ones(megabytes * MB, dtype=np.uint8).sum())


def fail() -> None:
    raise ValueError("no such word")
