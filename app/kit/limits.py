"""What one visitor (one Streamlit session) may hold on the server: who the session is, and a bound on its
concurrent heavy computations.

Streamlit starts a new script run for every widget change and, with fast reruns (its default), does not wait
for the previous run: the old run is only stopped at its next Streamlit call, so a projection or a model run
already under way goes on computing. Dragging a slider, typing fast or clicking twice could therefore queue any
number of computations for one visitor. ``heavy()`` bounds that: at most ``settings().heavy_per_session``
(default 1) heavy blocks of one session run at once; a further one waits for a free slot (giving up at once when
the visitor has already moved on, i.e. its run was superseded), and after ``WAIT_S`` seconds says that the
previous computation is still running and stops the page run instead of piling work up.

Each browser tab is its own Streamlit session, with its own slots.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Hashable, Iterator
from contextlib import contextmanager

import streamlit as st

from app.kit.budget import OverBudget, SaidBefore
from app.kit.settings import settings

WAIT_S = 20.0  # how long a heavy block waits for the session's previous one before giving up with a message
_POLL_S = 0.2
_TOKEN = "_limits::session"
_OVER = "_limits::over_budget"
_SLOTS = "_limits::slots"
_create = threading.Lock()  # session state is shared by the overlapping runs of one session
_held = threading.local()  # heavy blocks this thread is inside (a nested block does not take a second slot)


def session_id() -> str:
    """A random id for this session, the same in all its runs (owner of what the session starts)."""
    with _create:
        token = st.session_state.get(_TOKEN)
        if token is None:
            token = st.session_state[_TOKEN] = secrets.token_hex(8)
    return token


def _slots() -> threading.BoundedSemaphore:
    with _create:
        slots = st.session_state.get(_SLOTS)
        if slots is None:
            slots = st.session_state[_SLOTS] = threading.BoundedSemaphore(max(1, settings().heavy_per_session))
    return slots


class Busy(Exception):
    """Raised by :func:`acquire` when the session's slots stay taken for ``wait`` seconds."""


def acquire(slots: threading.BoundedSemaphore, wait: float, still_wanted=lambda: None) -> None:
    """Take a slot, polling ``still_wanted`` (which raises when the caller has moved on) while waiting."""
    if slots.acquire(blocking=False):
        return
    deadline = time.monotonic() + wait
    while not slots.acquire(timeout=_POLL_S):
        still_wanted()
        if time.monotonic() >= deadline:
            raise Busy


def _still_wanted() -> None:
    # Reading session state is one of Streamlit's yield points: it raises Streamlit's StopException (which no
    # ``except Exception`` catches) when this run has been superseded by a newer one of the same session.
    st.session_state.get(_TOKEN)


@contextmanager
def heavy(what: str = "This computation", wait: float | None = None) -> Iterator[None]:
    """Run the block as one of this session's bounded heavy computations (see the module's docstring)."""
    depth = getattr(_held, "depth", 0)
    if depth:  # already inside one of this session's heavy blocks, in this thread
        yield
        return
    slots = _slots()
    if not slots.acquire(blocking=False):
        note = st.empty()
        note.caption("Waiting for your previous computation (an earlier click, or typing) to finish …")
        try:
            acquire(slots, WAIT_S if wait is None else wait, _still_wanted)
        except Busy:
            note.empty()
            st.warning(f"{what}: your previous computation is still running on the server; try again in a "
                       "moment.")
            st.stop()
        try:
            note.empty()  # a Streamlit call: it may stop this run, so the slot is already ours to give back
        except BaseException:
            slots.release()
            raise
    _held.depth = 1
    try:
        yield
    finally:
        _held.depth = 0
        slots.release()


@contextmanager
def within_budget(key: Hashable) -> Iterator[None]:
    """A computation that went over this visitor's budget (``app/kit/budget.py``) is not tried again in this session
    under the same key: a later try raises :class:`SaidBefore` at once, which the page's error guard shows no second
    time."""
    with _create:
        over = st.session_state.setdefault(_OVER, {})
    if key in over:
        raise SaidBefore(over[key])
    try:
        yield
    except SaidBefore:
        raise
    except OverBudget as e:
        over[key] = str(e)
        raise
