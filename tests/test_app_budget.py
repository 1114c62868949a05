"""A visitor's budget (app/kit/budget.py) and the worker process that holds visitors' long projections to it
(app/kit/workers.py): over time, over memory, a visitor who left, fair turns, one run for a shared job."""

from __future__ import annotations

import os
import threading
import time

import pytest

from app.kit.budget import Budget, OverBudget, Stopwatch, budget
from app.kit.workers import GRACE_S, NICE, Left, Workers
from tests.budget_jobs import MB, fail, finished_at, hog, nap, niceness


class Visitors:
    """Who is still there, as the server's session check would say."""

    def __init__(self):
        self.gone: set[str] = set()
        self.lock = threading.Lock()

    def __call__(self, owner: str) -> bool:
        with self.lock:
            return owner not in self.gone


def pool(seconds: float = 20.0, memory_mb: int = 1024, alive=None) -> Workers:
    return Workers(Budget(seconds, memory_mb * MB), alive or Visitors())


def test_the_budget_scales_with_the_machine_and_the_operator_may_set_it(monkeypatch):
    monkeypatch.delenv("CTXMODELS_VISITOR_SECONDS", raising=False)
    monkeypatch.delenv("CTXMODELS_VISITOR_MB", raising=False)
    b = budget()
    assert b.seconds == 60
    assert 512 * MB <= b.memory <= 4096 * MB
    monkeypatch.setenv("CTXMODELS_VISITOR_SECONDS", "15")
    monkeypatch.setenv("CTXMODELS_VISITOR_MB", "300")
    assert budget() == Budget(15.0, 300 * MB)
    for junk in ("", "0", "-5", "nan", "inf", "lots"):
        monkeypatch.setenv("CTXMODELS_VISITOR_SECONDS", junk)
        assert budget().seconds == 60


def in_a_thread(test):
    """Run ``test`` in a thread of its own, as a page run is: a long job lowers its thread's priority for good."""
    def wrapped():
        failed = []
        thread = threading.Thread(target=lambda: _catch(test, failed))
        thread.start()
        thread.join()
        if failed:
            raise failed[0]
    wrapped.__name__ = test.__name__
    return wrapped


def _catch(test, failed: list) -> None:
    try:
        test()
    except BaseException as e:  # noqa: BLE001 - raised again in the test's own thread
        failed.append(e)


@in_a_thread
def test_a_stopwatch_stops_work_whose_pace_will_not_fit_and_says_how_much_would():
    now = [0.0]
    clock = Stopwatch("Embedding 5,000 sentences", seconds=60, clock=lambda: now[0])
    now[0] = 1.0
    clock.check(100, 5000)  # too little done to foretell the rest
    now[0] = 10.0
    clock.check(1000, 5000)  # 50 s foreseen: fits
    now[0] = 30.0
    with pytest.raises(OverBudget, match=r"about 2 minutes.*after 1,500 of 5,000.*at most about 3,000"):
        clock.check(1500, 5000)


@in_a_thread
def test_a_stopwatch_stops_work_that_ran_out_of_time():
    now = [0.0]
    clock = Stopwatch("Measuring", seconds=5, clock=lambda: now[0])
    now[0] = 6.0
    with pytest.raises(OverBudget, match="longer than the 5 seconds"):
        clock.check(0, 0)


def test_a_job_runs_in_a_worker_process_below_the_pages_priority():
    workers = pool()
    assert workers.submit("nice", "a", niceness).result(timeout=60) == os.nice(0) + NICE
    assert workers.submit("nap", "a", nap, 0, "done").result(timeout=60) == "done"
    assert workers.stats["finished"] == 2


def test_a_job_over_its_time_is_stopped_and_not_run_again_when_asked_again():
    workers = pool(seconds=3.0)
    assert workers.submit("start", "a", nap, 0, 1).result(timeout=120) == 1  # the worker is up (slow on a busy machine)
    start = time.monotonic()
    job = workers.submit("long", "a", nap, 30, what="The t-SNE of 5,000 occurrences")
    with pytest.raises(OverBudget, match="The t-SNE of 5,000 occurrences took longer than the 3 seconds"):
        job.result(timeout=60)
    assert time.monotonic() - start < 25  # stopped at the limit, not after 30 s
    assert workers.stats["over_time"] == 1
    assert workers.submit("long", "b", nap, 30) is job  # it would go over again: the page shows why, once
    assert workers.submit("short", "a", nap, 0, 7).result(timeout=60) == 7  # a fresh worker takes the next job


def test_a_job_over_its_memory_is_stopped_and_the_worker_goes_on():
    workers = pool(memory_mb=700)
    with pytest.raises(OverBudget, match="more than the 0.7 GB of memory"):
        workers.submit("big", "a", hog, 2048).result(timeout=60)
    assert workers.stats["over_memory"] == 1
    assert workers.submit("small", "a", hog, 16).result(timeout=60) == 16 * MB


def test_a_failing_job_says_why_and_may_run_again():
    workers = pool()
    with pytest.raises(ValueError, match="no such word"):
        workers.submit("bad", "a", fail).result(timeout=60)
    again = workers.submit("bad", "a", fail)
    with pytest.raises(ValueError):
        again.result(timeout=60)
    assert workers.stats["failed"] == 2


def test_a_visitor_who_leaves_stops_their_job_and_drops_what_they_queued():
    visitors = Visitors()
    workers = pool(alive=visitors)
    assert workers.submit("start", "a", nap, 0, 1).result(timeout=120) == 1  # the worker is up (slow on a busy machine)
    running = workers.submit("mine", "a", nap, 30)
    queued = workers.submit("mine too", "a", nap, 30)
    time.sleep(1.0)
    start = time.monotonic()
    with visitors.lock:
        visitors.gone.add("a")
    with pytest.raises(Left):
        running.result(timeout=60)
    with pytest.raises(Left):
        queued.result(timeout=60)
    assert time.monotonic() - start < 10 + GRACE_S
    assert workers.stats["left"] == 2 and workers.stats["finished"] == 1
    assert not workers.busy()


def test_a_job_two_visitors_share_runs_once_and_goes_on_while_one_of_them_is_there():
    visitors = Visitors()
    workers = pool(alive=visitors)
    first = workers.submit("bank", "a", nap, 2, "map")
    assert workers.submit("bank", "b", nap, 2, "map") is first
    with visitors.lock:
        visitors.gone.add("a")
    assert first.result(timeout=60) == "map"
    assert workers.stats["finished"] == 1


def test_turns_are_fair_a_second_visitor_waits_for_one_job_not_for_all_of_the_firsts():
    workers = pool()
    firsts = [workers.submit(f"a{i}", "a", finished_at, 0.5) for i in range(4)]
    time.sleep(0.2)  # the first visitor's first job has been taken
    second = workers.submit("b0", "b", finished_at, 0.5).result(timeout=120)
    ends = sorted(job.result(timeout=120) for job in firsts)
    assert sum(end < second for end in ends) == 1, (ends, second)


def test_a_long_job_in_a_page_run_lowers_its_threads_priority_and_only_its_own():
    seen: dict[str, int] = {}

    def long_job():
        now = [0.0]
        clock = Stopwatch("Embedding", seconds=60, clock=lambda: now[0])
        clock.check(1, 100)
        seen["short"] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        now[0] = 3.0
        clock.check(50, 100)
        seen["long"] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    thread = threading.Thread(target=long_job)
    thread.start()
    thread.join()
    base = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    assert seen == {"short": base, "long": max(base, NICE)}
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == base  # this thread kept its own


def test_a_worker_does_not_run_the_servers_main_script(tmp_path, monkeypatch):
    """Under Streamlit, ``sys.modules["__main__"]`` is the app's script; a spawned worker must not run it."""
    import sys
    import types

    marker = tmp_path / "ran"
    script = tmp_path / "home.py"
    script.write_text(f"open({str(marker)!r}, 'w').close()\n", encoding="utf-8")
    fake = types.ModuleType("__main__")
    fake.__file__ = str(script)
    monkeypatch.setitem(sys.modules, "__main__", fake)
    assert pool().submit("nap", "a", nap, 0, "done").result(timeout=120) == "done"
    assert not marker.exists()
    assert sys.modules["__main__"] is fake  # put back
