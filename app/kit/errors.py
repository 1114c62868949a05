"""Errors and warnings: nothing a user types may end in a traceback, and each visitor sees their own warnings."""

from __future__ import annotations

import logging
import traceback
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from app.kit.budget import OverBudget, SaidBefore
from app.kit.inputs import md, shorten
from ctxmodels.checkpoint import CheckpointError
from ctxmodels.thread_warnings import CHATTER, caught_warnings

log = logging.getLogger("ctxmodels.app")


@contextmanager
def guard(what: str = "That") -> Iterator[None]:
    """Run a block; a ValueError (bad input) or an OSError (a path, the disk) becomes an error box with its
    message, any other exception an error box that says it is a bug (with the exception), and warnings raised
    inside become warning boxes. Messages quote what a visitor typed, so they are shown as plain text
    (:func:`app.kit.inputs.md`), never as Markdown."""
    try:
        with caught_warnings() as caught:
            yield
        show_warnings(str(message) for message, category in caught if _shown(category))
    except SaidBefore:  # over the budget, and the page said so where it was first tried
        pass
    except OverBudget as e:  # the visitor's budget (app/kit/budget.py): what to choose instead, not an error
        st.warning(f"{md(what)}: {md(str(e))}")
    except (ValueError, KeyError, CheckpointError, FileNotFoundError, UnicodeError) as e:
        st.error(f"{md(what)}: {md(_message(e))}")
    except MemoryError:
        st.error(f"{md(what)}: not enough memory for this input; use fewer or shorter sentences.")
    except OSError as e:  # a path a visitor gave (too long, not a file, no permission) or the server's disk
        log.warning("%s: %s", what, e)
        st.error(f"{md(what)}: {md(_os_message(e))}")
    except Exception as e:  # noqa: BLE001 - the page must survive anything; the log keeps the traceback
        log.error("%s failed:\n%s", what, traceback.format_exc())
        st.error(f"{md(what)} failed unexpectedly ({type(e).__name__}: {md(_message(e))}). This is a bug in the "
                 "explorer; the server log has the details.")


def _os_message(e: OSError) -> str:
    """What the system said, with the path it is about shortened (a visitor's path can be any length)."""
    if e.strerror and e.filename is not None:
        return f"{e.strerror}: {shorten(e.filename, 120)!r}"
    return _message(e)


def _message(e: BaseException) -> str:
    text = str(e.args[0]) if isinstance(e, KeyError) and e.args else str(e)
    return text or type(e).__name__


def _shown(category: type[Warning]) -> bool:
    """Warnings meant for the user (the core's), not library deprecation chatter."""
    return issubclass(category, UserWarning) and not issubclass(category, CHATTER)


def show_warnings(messages: Iterator[str] | Sequence[str]) -> None:
    """Warnings from the core (they may quote a visitor's input), as plain text; each once per page run, however
    many parts of the page met it (a model's vectors are read by several)."""
    for msg in dict.fromkeys(messages):
        if _first_time(msg):
            st.warning(md(msg))


def _first_time(msg: str) -> bool:
    """Whether ``msg`` was not yet shown in this run. A fragment's own run redraws only its part, so there every
    message counts as new."""
    ctx = get_script_run_ctx()
    if ctx is None or ctx.fragment_ids_this_run:
        return True
    run = id(ctx.cursors)  # a new dict each run
    seen = st.session_state.get("_warned_this_run")
    if seen is None or seen[0] != run:
        seen = (run, set())
        st.session_state["_warned_this_run"] = seen
    if msg in seen[1]:
        return False
    seen[1].add(msg)
    return True


@contextmanager
def record_warnings() -> Iterator[list[str]]:
    """Collect the user-facing warnings of a block as strings (for results cached with ``st.cache_data``)."""
    out: list[str] = []
    with caught_warnings() as caught:
        yield out
    out.extend(dict.fromkeys(str(message) for message, category in caught if _shown(category)))
