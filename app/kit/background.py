"""Slow computations off the script thread: a UMAP of thousands of points takes many seconds, and a page that waits
for it is a frozen page. The page submits the job, draws a quick stand-in (PCA) at once, and swaps the result in
when the job is done (:func:`rerun_when_done`).

Two queues for the whole server, one job at a time each: :func:`workers`, a worker process for visitors' projections
(on their budget, stopped when they leave: ``app/kit/workers.py``), and :func:`jobs`, threads for work that needs the
server's loaded models (a model's reference-word index). The same job asked for by two visitors (the same key) runs
once.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import streamlit as st

KEEP = 64  # finished jobs kept for the next visitor (each holds a few coordinate arrays)


class Jobs:
    """Futures by key: :meth:`submit` starts a job unless one with that key is running or done."""

    def __init__(self, workers: int = 1, keep: int = KEEP):
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ctxmodels-background")
        self._jobs: OrderedDict[Hashable, Future] = OrderedDict()
        self._lock = threading.Lock()
        self.keep = keep
        self.progress: dict[Hashable, tuple[int, int]] = {}  # (done, total) that a running job last reported

    def reporter(self, key: Hashable) -> Callable[[int, int], None]:
        """A ``progress(done, total)`` callback for the job under ``key``, read back from :attr:`progress`."""
        return lambda done, total: self.progress.__setitem__(key, (done, total))

    def submit(self, key: Hashable, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Future:
        with self._lock:
            job = self._jobs.get(key)
            if job is not None and not (job.done() and job.exception() is not None):  # a failed job may retry
                self._jobs.move_to_end(key)
                return job
            job = self._pool.submit(fn, *args, **kwargs)
            self._jobs[key] = job
            self._forget_old()
            return job

    def get(self, key: Hashable) -> Future | None:
        with self._lock:
            return self._jobs.get(key)

    def _forget_old(self) -> None:
        # Only finished jobs are forgotten: a visitor may be waiting for a running one.
        for key in [k for k, j in self._jobs.items() if j.done()][: max(0, len(self._jobs) - self.keep)]:
            del self._jobs[key]
            self.progress.pop(key, None)

    def __len__(self) -> int:
        return len(self._jobs)


@st.cache_resource
def jobs() -> Jobs:
    return Jobs()


def rerun_when_done(pending: list[Future], every: float = 1.0) -> None:
    """Rerun the page once every job in ``pending`` has finished (checked every ``every`` seconds, in a fragment,
    so the rest of the page stays usable meanwhile)."""
    if not pending:
        return

    @st.fragment(run_every=every)
    def _watch() -> None:
        if all(job.done() for job in pending):
            st.rerun()

    _watch()


def visitor() -> str:
    """The Streamlit session this page run belongs to: the owner of the worker jobs it asks for."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx(suppress_warning=True)
    return ctx.session_id if ctx is not None else "no session"


def still_here(session_id: str) -> bool:
    """Whether that visitor still has the page open (True where no server runs, as under AppTest: nobody leaves)."""
    from streamlit import runtime

    if not runtime.exists():
        return True
    return runtime.get_instance().is_active_session(session_id)


@st.cache_resource
def workers():
    """The server's worker process for visitors' long projections (``app/kit/workers.py``), on the visitors'
    budget (``app/kit/budget.py``), with UMAP warmed up in it first when the server warms UMAP."""
    from functools import partial

    from streamlit import runtime

    from app.kit.budget import budget
    from app.kit.settings import settings
    from app.kit.workers import Workers

    # Under a real server the worker starts (and warms up) with it; under AppTest only when a test needs it.
    return Workers(budget(), still_here, warm=partial(prepare_worker, settings().warm_up),
                   prestart=runtime.exists())


def prepare_worker(umap: bool) -> None:
    """In a new worker process, before its first job: import what projections need (torch among it: seconds), and
    warm UMAP up when the server does, so that a job's time is the projection's own."""
    from ctxmodels.analysis import projections, word_senses  # noqa: F401

    if umap:
        projections.warm_up_umap()


@st.cache_resource
def training_runner():
    """The server's one training job (app/kit/training.py): the Models page trains, the fine-tuning page fine-tunes,
    and both see the same job, so there is never more than one."""
    from app.kit.training import JobRunner

    return JobRunner()
