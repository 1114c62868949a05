"""Collect the warnings one thread raises, without touching other threads.

``warnings.catch_warnings`` swaps process-wide state (``warnings.showwarning`` and the filters) for the length
of its block. In the app every visitor's script runs in its own thread of one server process, so two blocks
running at once could lose or swap each other's warnings. Instead one router, installed on first use, hands
each warning to the innermost :func:`caught_warnings` block of the thread that raised it, or, outside any
block, on to the previous ``showwarning`` (stderr, a log).
"""
from __future__ import annotations

import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

# Library upkeep notices (an API that will change), not news about the user's input.
CHATTER: tuple[type[Warning], ...] = (DeprecationWarning, PendingDeprecationWarning, FutureWarning)

_sink = threading.local()
_install_lock = threading.Lock()


def _install_router() -> None:
    with _install_lock:
        if getattr(warnings.showwarning, "_ctxmodels_router", False):
            return
        previous = warnings.showwarning

        def route(message, category, filename, lineno, file=None, line=None):
            caught = getattr(_sink, "caught", None)
            if caught is None:
                return previous(message, category, filename, lineno, file, line)
            caught.append((message, category))

        route._ctxmodels_router = True
        # A repeated warning is news to each new input (the default shows it once per code location).
        warnings.simplefilter("always", UserWarning)
        warnings.simplefilter("always", RuntimeWarning)
        warnings.showwarning = route


@contextmanager
def caught_warnings() -> Iterator[list[tuple[Warning | str, type[Warning]]]]:
    """(message, category) of the warnings this thread raises inside the block; the innermost block gets them."""
    _install_router()
    outer = getattr(_sink, "caught", None)
    _sink.caught = []
    try:
        yield _sink.caught
    finally:
        _sink.caught = outer
