"""The server's long-lived objects, kept out of the garbage collector's way.

The served app holds a large, long-lived heap: torch, UMAP/numba, plotly and pandas, three models, and after a
probe run the SemCor corpus (about 400,000 Python objects). Python's cyclic garbage collector walks all of it on
every full collection, which a busy server triggers every few page runs: measured on the shipped models
(bench/bench_capacity.py), an attention head switch cost 0.3 CPU-seconds when a full collection fell on it instead
of 0.04, and after a probe run every interaction cost 0.4-0.8 CPU-seconds more; with the heap frozen, 0.04-0.2. Once a
big batch of lasting objects is in (a model loaded, the UMAP warm-up done, a probe run), ``settle()`` collects
once and freezes what survives (``gc.freeze``): later collections skip it. Objects are still freed by reference
counting as before; only cycles among frozen objects that become garbage later stay until the server stops.
"""

from __future__ import annotations

import gc
import threading

_lock = threading.Lock()


def settle() -> None:
    """Collect once, then move every surviving object to the permanent generation."""
    with _lock:
        gc.collect()
        gc.freeze()


def settle_after(thread: threading.Thread | None) -> None:
    """``settle()`` once ``thread`` (a background warm-up) has finished, without waiting for it here."""
    if thread is None:
        return

    def wait() -> None:
        thread.join()
        settle()

    threading.Thread(target=wait, name="settle-heap", daemon=True).start()
