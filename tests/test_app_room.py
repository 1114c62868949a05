"""The app served to a room: training is the operator's choice and a job belongs to its session; one session's
heavy computations are bounded (app/kit/limits.py); the long-lived heap stays out of the garbage collector's way
(app/kit/memory.py). AppTest sessions on the tiny models of tests/app_fixtures.py."""

from __future__ import annotations

import gc
import signal
import subprocess
import sys
import threading
import time

import pytest

from app.kit import limits, memory, training
from app.kit.settings import settings
from tests.app_fixtures import page, texts

pytest.importorskip("streamlit.testing.v1")
from streamlit.testing.v1 import AppTest  # noqa: E402

# stands in for the trainer: runs until cancelled, and hears SIGINT however the suite was started (as ctxmodels.cli)
SLEEPER = [sys.executable, "-c", "import signal, time; signal.signal(signal.SIGINT, signal.default_int_handler); "
           "time.sleep(120)"]
pytestmark = pytest.mark.usefixtures("app_env")


def start_buttons(at: AppTest) -> list:
    return [b for b in at.get("form_submit_button") if b.label == "Start training"]


def cancel_buttons(at: AppTest) -> list:
    return [b for b in at.button if b.label.startswith("Cancel")]


# -- operator settings -------------------------------------------------------------------------------------------


def test_training_and_the_heavy_bound_are_operator_settings(monkeypatch):
    s = settings([])
    assert not s.allow_training and not s.allow_uploads and s.heavy_per_session == 1
    assert settings(["--allow-training"]).allow_training
    assert not settings(["--allow-uploads"]).allow_training  # uploads imply nothing by themselves
    monkeypatch.setenv("CTXMODELS_ALLOW_TRAINING", "1")
    assert settings([]).allow_training
    monkeypatch.setenv("CTXMODELS_HEAVY_PER_SESSION", "3")
    assert settings([]).heavy_per_session == 3
    assert settings(["--heavy-per-session", "2"]).heavy_per_session == 2
    for junk in ("0", "-4", "many", "nan", ""):
        monkeypatch.setenv("CTXMODELS_HEAVY_PER_SESSION", junk)
        assert settings([]).heavy_per_session == 1, junk
    monkeypatch.setenv("CTXMODELS_HEAVY_PER_SESSION", "10000")
    assert settings([]).heavy_per_session == 16
    for junk in ("nan", "inf", "-1", "0", "lots"):
        monkeypatch.setenv("CTXMODELS_UPLOAD_MB", junk)
        assert settings([]).upload_mb == 5.0, junk


def test_training_is_off_by_default_and_the_page_says_how_to_turn_it_on():
    at = page("models")
    assert not at.exception and not at.error
    off = [i for i in texts(at.info) if "Training from the app is off" in i]
    assert off and "CTXMODELS_ALLOW_TRAINING=1" in off[0] and "--allow-training" in off[0]
    assert not start_buttons(at) and not cancel_buttons(at)


# -- a job belongs to the session that started it ----------------------------------------------------------------


def test_job_runner_lets_only_the_owner_cancel(tmp_path):
    runner = training.JobRunner()
    log = tmp_path / "log.txt"
    log.write_text("", encoding="utf-8")
    job = training.Job("static", tmp_path, 10, subprocess.Popen(SLEEPER), log, owner="alice")
    runner.job = job
    try:
        assert job.owned_by("alice") and not job.owned_by("bob") and not job.owned_by("")
        with pytest.raises(ValueError, match="another visitor"):
            runner.cancel("bob")
        with pytest.raises(ValueError, match="another visitor"):
            runner.cancel("")
        assert job.running and not job.cancelled
        runner.cancel("alice")
        job.proc.wait(timeout=30)
        assert job.status == "cancelled"
    finally:
        if job.proc.poll() is None:
            job.proc.kill()


def test_two_sessions_see_one_job_and_only_its_owner_can_cancel_it(monkeypatch):
    monkeypatch.setenv("CTXMODELS_ALLOW_TRAINING", "1")
    monkeypatch.setattr(training, "train_command", lambda *a, **k: SLEEPER)
    started: list[training.Job] = []
    start = training.JobRunner.start

    def spy(self, *args, **kwargs):
        job = start(self, *args, **kwargs)
        started.append(job)
        return job

    monkeypatch.setattr(training.JobRunner, "start", spy)
    alice, bob = page("models"), page("models")
    try:
        start_buttons(alice)[0].click()
        alice.run()
        assert not alice.exception and not alice.error, texts(alice.error)
        assert len(started) == 1 and started[0].running
        assert any("(yours): running" in m for m in texts(alice.markdown))
        assert cancel_buttons(alice)

        bob.run()  # another visitor: sees the job and its progress, cannot cancel it or start another
        assert not bob.exception and not bob.error, texts(bob.error)
        assert any("(started by another visitor): running" in m for m in texts(bob.markdown))
        assert any("another visitor started is running" in c for c in texts(bob.caption))
        assert bob.get("progress")
        assert not cancel_buttons(bob)
        assert start_buttons(bob)[0].disabled
        assert started[0].running and not started[0].cancelled

        cancel_buttons(alice)[0].click()
        alice.run()
        assert not alice.exception and not alice.error, texts(alice.error)
        assert started[0].cancelled
        started[0].proc.wait(timeout=30)
        assert started[0].status == "cancelled"
    finally:
        for job in started:
            if job.proc.poll() is None:
                job.proc.kill()
                job.proc.wait(timeout=30)


# -- the per-session bound on heavy computations ------------------------------------------------------------------


def test_acquire_waits_then_gives_up_or_follows_the_visitor_away():
    slots = threading.BoundedSemaphore(1)
    limits.acquire(slots, wait=0.0)  # free: taken at once
    t = time.monotonic()
    with pytest.raises(limits.Busy):
        limits.acquire(slots, wait=0.5)
    assert 0.4 < time.monotonic() - t < 5

    class MovedOn(BaseException):
        pass

    def moved_on():
        raise MovedOn

    t = time.monotonic()
    with pytest.raises(MovedOn):  # a superseded run stops waiting at once instead of queueing its work
        limits.acquire(slots, wait=60, still_wanted=moved_on)
    assert time.monotonic() - t < 5
    threading.Timer(0.3, slots.release).start()
    limits.acquire(slots, wait=10)  # freed while waiting: taken
    slots.release()


def heavy_script() -> None:
    import streamlit as st

    from app.kit import limits

    with limits.heavy("Projecting", wait=float(st.query_params.get("wait", "1"))):
        with limits.heavy("Nested"):  # a nested heavy block in the same run takes no second slot
            st.write(f"computed {st.session_state.get('runs', 0)}")
    st.session_state["runs"] = st.session_state.get("runs", 0) + 1


def test_heavy_block_waits_for_the_sessions_previous_computation_then_says_so():
    at = AppTest.from_function(heavy_script, default_timeout=60)
    at.query_params["wait"] = "0.6"
    at.run()
    assert not at.exception and any("computed 0" in m for m in texts(at.markdown))
    slots = at.session_state["_limits::slots"]
    assert slots.acquire(blocking=False)  # the session's only slot, as a previous run still computing holds it
    try:
        at.run()
        assert not at.exception
        assert not any("computed" in m for m in texts(at.markdown))
        assert any("previous computation is still running" in w for w in texts(at.warning))
        threading.Timer(0.5, slots.release).start()  # the previous computation ends while this run waits
        at.query_params["wait"] = "20"
        at.run()
        assert not at.exception and not at.warning
        assert any("computed" in m for m in texts(at.markdown))
    finally:
        try:
            slots.release()
        except ValueError:
            pass  # already released
    at.run()  # the slot came back after each run
    assert any("computed" in m for m in texts(at.markdown)) and not at.warning


def test_each_session_has_its_own_slots_and_the_operator_can_allow_more(monkeypatch):
    first, second = AppTest.from_function(heavy_script), AppTest.from_function(heavy_script)
    first.run()
    second.run()
    a, b = first.session_state["_limits::slots"], second.session_state["_limits::slots"]
    assert a is not b
    assert a.acquire(blocking=False) and not a.acquire(blocking=False)  # default: one at a time
    a.release()
    monkeypatch.setenv("CTXMODELS_HEAVY_PER_SESSION", "2")
    third = AppTest.from_function(heavy_script)
    third.run()
    c = third.session_state["_limits::slots"]
    assert c.acquire(blocking=False) and c.acquire(blocking=False) and not c.acquire(blocking=False)


def test_pages_still_run_under_the_bound():
    for name, query in (("word_senses", {"projection": "pca"}), ("attention", {}), ("fill_in", {})):
        at = page(name, **query)
        assert not at.exception and not at.error, (name, texts(at.exception), texts(at.error))
        assert at.get("plotly_chart"), name
        slots = at.session_state["_limits::slots"]
        assert slots.acquire(blocking=False), f"{name} kept its slot after the run"
        slots.release()


# -- the heap, out of the garbage collector's way ------------------------------------------------------------------


def test_settle_freezes_what_lasts_after_a_warm_up():
    try:
        gc.unfreeze()
        memory.settle()
        assert gc.get_freeze_count() > 0
        gc.unfreeze()
        done = threading.Event()
        warm_up = threading.Thread(target=done.wait, args=(10,))
        warm_up.start()
        memory.settle_after(warm_up)  # returns at once; freezes when the warm-up ends
        assert gc.get_freeze_count() == 0
        done.set()
        deadline = time.monotonic() + 30
        while gc.get_freeze_count() == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert gc.get_freeze_count() > 0
        memory.settle_after(None)  # no warm-up (CTXMODELS_APP_WARMUP=0): nothing to wait for
    finally:
        gc.unfreeze()


def test_a_job_started_with_sigint_ignored_still_hears_cancel():
    """A server started in the background (`streamlit run ... &`) passes SIGINT ignored to its jobs; ctxmodels' own
    command line takes it back, so Cancel (SIGINT) still stops a training run."""
    code = ("import signal, time; signal.signal(signal.SIGINT, signal.SIG_IGN); from ctxmodels.cli import "
            "_interruptible; _interruptible(); print('ready', flush=True); time.sleep(120)")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) != 0  # KeyboardInterrupt, not the two minutes' sleep
    finally:
        proc.kill()
