"""A visitor's budget: how long one of their computations may run and how much memory it may take, scaled to the
machine the server runs on, so that one visitor's heavy request (SemCor *be* with 5,000 occurrences, t-SNE in 3-D at
perplexity 100, every model) cannot hold the server for everybody else.

* **Time**: ``CTXMODELS_VISITOR_SECONDS`` (default 60) of wall time per computation. Work in the page's own run
  (embedding, measuring) checks its :class:`Stopwatch` at every progress step and stops as soon as it is over, or as
  soon as its pace says it will be; a projection in the worker process (``app/kit/workers.py``) is killed at the limit.
* **Memory**: ``CTXMODELS_VISITOR_MB``, by default an eighth of the machine's memory, between 512 MB and 4 GB: the
  most a projection's worker process may allocate (``RLIMIT_DATA``), enforced by the kernel.

What a visitor asked for is never silently cut: the page says what went over and what to choose instead.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass

MB = 2**20
SECONDS = 60.0
MEMORY_SHARE = 8  # a computation may take this fraction of the machine's memory ...
MEMORY_MB = (512, 4096)  # ... within these bounds
EARLY = 0.05  # share of the work done before its pace is trusted to foretell the whole
LONG_S = 2.0  # work in a page's run that takes longer than this is a long job: it yields the CPU to short ones
NICE = 10  # the priority of long jobs below the pages' (0)


class OverBudget(Exception):
    """A computation went (or would go) over the visitor's budget; the message says what to choose instead."""


class SaidBefore(OverBudget):
    """The same computation went over the budget earlier in this visit, and the page said so then."""


def machine_memory() -> int:
    """Bytes of memory the machine has (0 where the system does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


def _positive(name: str, default: float) -> float:
    try:
        value = float(os.environ.get(name, "") or default)
    except ValueError:
        return default
    return value if 0 < value < float("inf") else default


@dataclass(frozen=True)
class Budget:
    seconds: float  # wall time one computation may take
    memory: int  # bytes one computation's worker may allocate

    def describe(self) -> str:
        return f"{self.seconds:g} seconds and {self.memory / 2**30:.1f} GB of memory"


def budget() -> Budget:
    """The budget of one visitor's computation on this machine (the operator's settings, else scaled defaults)."""
    low, high = MEMORY_MB
    scaled = min(max(machine_memory() / MEMORY_SHARE / MB, low), high)
    return Budget(seconds=_positive("CTXMODELS_VISITOR_SECONDS", SECONDS),
                  memory=int(_positive("CTXMODELS_VISITOR_MB", scaled) * MB))


def seconds_text(seconds: float) -> str:
    if seconds < 10:
        return f"{seconds:.2g} second{'' if seconds == 1 else 's'}"
    if seconds < 90:
        return f"{seconds:.0f} seconds"
    return f"{seconds / 60:.0f} minutes"


def lower_priority() -> bool:
    """Lower the calling thread's CPU priority to ``NICE`` (Linux: a thread is a task of its own), so that the
    other visitors' short page runs go first. Streamlit runs each page run in a thread of its own, so this lasts
    until the run ends. There is no way back up without privileges; False where the system refuses it."""
    try:
        tid = threading.get_native_id()
        now = os.getpriority(os.PRIO_PROCESS, tid)
        if now < NICE:
            os.setpriority(os.PRIO_PROCESS, tid, NICE)
        return True
    except (OSError, AttributeError):
        return False


class Stopwatch:
    """The time budget of one computation in the page's run: :meth:`check` at each progress step raises
    :class:`OverBudget` once the time is spent, or as soon as the pace so far says the rest will not fit; past
    ``LONG_S`` it lowers the thread's priority, so that a long job does not slow the other visitors' short ones."""

    def __init__(self, what: str, seconds: float | None = None, clock=time.monotonic):
        self.what = what
        self.seconds = budget().seconds if seconds is None else seconds
        self._clock = clock
        self.start = clock()
        self._lowered = False

    @property
    def elapsed(self) -> float:
        return self._clock() - self.start

    def check(self, done: int, total: int) -> None:
        elapsed = self.elapsed
        if elapsed > LONG_S and not self._lowered:
            self._lowered = lower_priority()
        if total > 0 and done >= max(1, EARLY * total) and done < total:
            foreseen = elapsed * total / done
            if foreseen > self.seconds:
                fits = max(1, int(total * self.seconds / foreseen))
                raise OverBudget(
                    f"{self.what} would take about {seconds_text(foreseen)}, and this server gives one computation "
                    f"{seconds_text(self.seconds)}: it was stopped after {done:,} of {total:,}. Choose at most about "
                    f"{fits:,} (fewer occurrences, or fewer models at once).")
        if elapsed > self.seconds:
            raise OverBudget(f"{self.what} took longer than the {seconds_text(self.seconds)} this server gives one "
                             f"computation, and was stopped after {done:,} of {total:,}. Choose fewer occurrences, or "
                             "fewer models at once.")
