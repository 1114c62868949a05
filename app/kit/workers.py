"""Visitors' long computations (the UMAP or t-SNE of a large view) in a worker process, where they cannot stall the
server: the worker runs at a lower CPU priority than the page runs, on one thread, under the visitor's memory budget
(``RLIMIT_DATA``: the kernel refuses it more), and is killed when a job goes over its time, or when every visitor
who asked for the job has left. The server's pages keep answering meanwhile: the page shows PCA in its place.

Jobs queue fairly: the next job is the one of the visitor served least so far, so a visitor who asked for ten
projections does not make a second visitor wait for all ten. The same job asked for by two visitors (the same key)
runs once, for both.

No Streamlit here: who is still there is a function given to :class:`Workers` (``app/kit/background.py`` passes the
server's session check).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import sys
import threading
import time
import types
from collections import Counter, OrderedDict
from collections.abc import Callable, Hashable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from app.kit.budget import NICE, Budget, OverBudget, seconds_text

KEEP = 64  # finished jobs kept for later visitors (each holds a few coordinate arrays)
_POLL_S = 0.25
GRACE_S = 10.0  # a running job whose visitors have all gone is stopped after this long (they may reload)
STARTUP_S = 300  # a worker's start: python, numpy, and UMAP's warm-up (half a minute on a busy machine)


class Left(Exception):
    """Every visitor who asked for the job has left: it was stopped."""


@dataclass
class _Job:
    key: Hashable
    fn: Callable[..., Any]
    args: tuple
    kwargs: dict
    future: Future = field(default_factory=Future)
    owners: set[str] = field(default_factory=set)
    what: str = "This computation"
    instead: str = "Choose fewer occurrences, or PCA."  # what the visitor may ask for that fits the budget


def _serve(conn, memory: int, warm: Callable[[], Any] | None) -> None:
    """The worker process: lower priority, one thread, its imports and warm-up, then a memory limit of ``memory``
    bytes more than those took; then run each job sent and send back ``(True, result)`` or ``(False, exception)``."""
    import resource

    os.nice(NICE)
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)  # one core: the other visitors keep the rest
    if warm is not None:
        warm()
    limit = _data_bytes() + memory  # torch, scikit-learn and UMAP take about 600 MB before any job
    resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
    conn.send("ready")  # a job's time starts now, not while the worker starts and warms up
    while True:
        try:
            fn, args, kwargs = conn.recv()
        except EOFError:  # the server went away
            return
        try:
            conn.send((True, fn(*args, **kwargs)))
        except MemoryError:
            conn.send((False, MemoryError()))
        except Exception as e:  # noqa: BLE001 - sent back to the page that asked, which says what went wrong
            try:
                conn.send((False, e))
            except Exception:  # noqa: BLE001 - an exception that does not pickle: its text does
                conn.send((False, RuntimeError(f"{type(e).__name__}: {e}")))


_main_lock = threading.Lock()


@contextmanager
def _no_main_script() -> Iterator[None]:
    """Start a process without the server's ``__main__``: Streamlit runs each page run in a module it installs as
    ``sys.modules["__main__"]`` (the app's script), and a spawned child imports the parent's main module first, so it
    would run the whole app, bare, before its first job. For the moment of the start, ``__main__`` is an empty module;
    it is put back unless a page run installed its own meanwhile."""
    blank = types.ModuleType("__main__")
    with _main_lock:
        before = sys.modules.get("__main__")
        sys.modules["__main__"] = blank
        try:
            yield
        finally:
            if sys.modules.get("__main__") is blank:
                sys.modules["__main__"] = before


def _data_bytes() -> int:
    """The process's data size now (what ``RLIMIT_DATA`` counts: heap and private mappings)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmData:"):
                return int(line.split()[1]) * 1024
    return 0


class Workers:
    """One worker process per slot, each taking the fairest queued job in turn."""

    def __init__(self, budget: Budget, alive: Callable[[str], bool], slots: int = 1, keep: int = KEEP,
                 warm: Callable[[], Any] | None = None, prestart: bool = False):
        self.budget = budget
        self.alive = alive
        self.keep = keep
        self.warm = warm
        self._queue: list[_Job] = []
        self._jobs: OrderedDict[Hashable, _Job] = OrderedDict()
        self._served: Counter[str] = Counter()
        self._cv = threading.Condition()
        self._ctx = mp.get_context("spawn")  # the server has threads: a forked child could inherit a held lock
        self.stats = Counter()  # finished, failed, over_time, over_memory, left: what the bench and tests read
        for i in range(max(1, slots)):
            threading.Thread(target=self._slot, args=(prestart,), name=f"ctxmodels-worker-{i}", daemon=True).start()

    # -- the pages' side -------------------------------------------------------------------------------------

    def submit(self, key: Hashable, owner: str, fn: Callable[..., Any], *args: Any, what: str = "This computation",
               instead: str = "Choose fewer occurrences, or PCA.", **kwargs: Any) -> Future:
        """The job under ``key``, queued unless it is queued, running or done (a failed one runs again)."""
        with self._cv:
            job = self._jobs.get(key)
            if job is not None and not self._retry(job.future):
                job.owners.add(owner)
                self._jobs.move_to_end(key)
                return job.future
            job = _Job(key, fn, args, kwargs, owners={owner}, what=what, instead=instead)
            self._jobs[key] = job
            self._queue.append(job)
            self._forget_old()
            self._cv.notify()
            return job.future

    @staticmethod
    def _retry(future: Future) -> bool:
        """Whether a job asked for again runs again: after a failure, or when its visitors had left; not after it
        went over the budget (it would again)."""
        if not future.done():
            return False
        error = future.exception()
        return error is not None and not isinstance(error, OverBudget)

    def busy(self) -> bool:
        """Whether a job is queued or running."""
        with self._cv:
            return any(not j.future.done() for j in self._jobs.values())

    def get(self, key: Hashable) -> Future | None:
        with self._cv:
            job = self._jobs.get(key)
            return None if job is None else job.future

    def queued(self) -> int:
        with self._cv:
            return len(self._queue)

    def _forget_old(self) -> None:
        done = [k for k, j in self._jobs.items() if j.future.done()]
        for key in done[: max(0, len(self._jobs) - self.keep)]:
            del self._jobs[key]

    # -- the slots' side -------------------------------------------------------------------------------------

    def _take(self) -> _Job:
        """The queued job of the least-served visitor still here (jobs nobody waits for any more are dropped)."""
        with self._cv:
            while True:
                for job in [j for j in self._queue if not any(self.alive(o) for o in j.owners)]:
                    self._queue.remove(job)
                    self._finish(job, Left("stopped: you left the page before it started"), "left")
                if self._queue:
                    job = min(self._queue, key=lambda j: min(self._served[o] for o in j.owners))
                    self._queue.remove(job)
                    for owner in job.owners:
                        self._served[owner] += 1
                    return job
                self._cv.wait()

    def _finish(self, job: _Job, outcome: Any, stat: str) -> None:
        self.stats[stat] += 1
        if isinstance(outcome, BaseException):
            job.future.set_exception(outcome)
        else:
            job.future.set_result(outcome)

    def _start(self):
        parent, child = self._ctx.Pipe()
        proc = self._ctx.Process(target=_serve, args=(child, self.budget.memory, self.warm), daemon=True,
                                 name="ctxmodels-worker")
        with _no_main_script():
            proc.start()
        child.close()
        try:
            ready = parent.poll(STARTUP_S) and parent.recv() == "ready"
        except (OSError, EOFError):  # it died starting (the server stops, or it was killed)
            ready = False
        if not ready:
            proc.kill()
            proc.join()
            raise OSError(f"the worker process did not start within {STARTUP_S} s")
        return proc, parent

    def _slot(self, prestart: bool) -> None:
        worker = None  # (process, connection)
        if prestart:  # started and warmed with the server, not on a visitor's first large view
            try:
                worker = self._start()
            except OSError:
                worker = None
        while True:
            job = self._take()
            if not job.future.set_running_or_notify_cancel():
                continue
            try:
                if worker is None:
                    worker = self._start()
                worker[1].send((job.fn, job.args, job.kwargs))
                outcome, stat = self._wait(job, *worker)
            except (OSError, EOFError) as e:  # the worker could not start, or died between jobs
                outcome, stat = RuntimeError(f"the worker process stopped ({e}); try again"), "failed"
            if worker is not None and (stat not in ("finished", "failed") or not worker[0].is_alive()):
                worker[0].kill()  # a fresh worker for the next job: this one is busy, or its heap is in pieces
                worker[0].join()
                worker = None
            self._finish(job, outcome, stat)

    def _wait(self, job: _Job, proc, conn) -> tuple[Any, str]:
        deadline = time.monotonic() + self.budget.seconds
        gone_since = None  # when the last visitor who asked for the job was last seen
        while True:
            if conn.poll(_POLL_S):
                ok, value = conn.recv()
                if ok:
                    return value, "finished"
                if isinstance(value, MemoryError):
                    return self._over_memory(job), "over_memory"
                return value, "failed"
            if not proc.is_alive():  # killed by the kernel or from outside
                return self._over_memory(job), "over_memory"
            if time.monotonic() > deadline:
                return OverBudget(f"{job.what} took longer than the {seconds_text(self.budget.seconds)} this server "
                                  f"gives one computation, and was stopped. {job.instead}"), "over_time"
            with self._cv:
                here = any(self.alive(o) for o in job.owners)
            if here:
                gone_since = None
            elif gone_since is None:
                gone_since = time.monotonic()
            elif time.monotonic() - gone_since > GRACE_S:  # a reload, or a page polling anew, comes back sooner
                return Left("stopped: everybody who asked for it left the page"), "left"

    def _over_memory(self, job: _Job) -> OverBudget:
        return OverBudget(f"{job.what} needed more than the {self.budget.memory / 2**30:.1f} GB of memory this server "
                          f"gives one computation, and was stopped. {job.instead}")
