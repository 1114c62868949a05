"""The app's server-wide helpers: results computed once for every visitor, and jobs run off the script thread."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from app.kit.background import Jobs
from app.kit.shared import SharedResults


def test_a_result_is_computed_once_however_many_visitors_ask_at_once():
    store = SharedResults(max_bytes=2**20)
    calls = []
    started = threading.Event()

    def compute():
        calls.append(1)
        started.set()
        time.sleep(0.3)  # long enough that every other visitor arrives while it runs
        return np.ones(10)

    results = []
    threads = [threading.Thread(target=lambda: results.append(store.get("bank", compute))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1
    assert len(results) == 8 and all(r is results[0] for r in results)


def test_a_failed_computation_is_not_kept_and_can_be_retried():
    store = SharedResults(max_bytes=2**20)

    def fail():
        raise ValueError("bad input")

    with pytest.raises(ValueError, match="bad input"):
        store.get("k", fail)
    assert store.peek("k") is None
    assert store.get("k", lambda: np.zeros(3)).shape == (3,)


def test_the_byte_budget_evicts_the_least_recently_used():
    store = SharedResults(max_bytes=3 * 800)
    for name in "abc":
        store.get(name, lambda: np.zeros(100))  # 800 bytes each
    store.peek("a")  # a was used last: b is now the oldest
    store.get("d", lambda: np.zeros(100))
    assert store.peek("b") is None
    assert all(store.peek(n) is not None for n in "acd")
    store.get("huge", lambda: np.zeros(10_000))  # larger than the whole budget: returned, not kept
    assert store.peek("huge") is None


def test_jobs_run_once_per_key_and_report_when_done():
    jobs = Jobs(workers=1)
    gate = threading.Event()
    runs = []

    def work(x):
        runs.append(x)
        gate.wait(5)
        return x * 2

    first = jobs.submit("k", work, 21)
    again = jobs.submit("k", work, 21)
    assert again is first and not first.done()
    gate.set()
    assert first.result(timeout=5) == 42
    assert runs == [21]


def test_a_failed_job_is_tried_again_and_old_finished_jobs_are_forgotten():
    jobs = Jobs(workers=1, keep=2)

    def boom():
        raise ValueError("no")

    failed = jobs.submit("k", boom)
    with pytest.raises(ValueError):
        failed.result(timeout=5)
    retried = jobs.submit("k", lambda: 1)
    assert retried is not failed and retried.result(timeout=5) == 1
    for i in range(5):
        jobs.submit(i, lambda i=i: i).result(timeout=5)
    assert len(jobs) <= 3  # the budget of two, plus the job just submitted
