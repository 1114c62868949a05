"""UMAP warm-up: importing umap and its first fit take half a minute; pay that once per server, in the background."""

from __future__ import annotations

import threading

import streamlit as st

from app.kit.memory import settle_after
from app.kit.settings import settings


@st.cache_resource
def umap_warm_up() -> threading.Thread | None:
    if not settings().warm_up:
        return None
    from ctxmodels.analysis.projections import start_umap_warm_up

    thread = start_umap_warm_up()
    settle_after(thread)  # what umap and numba leave behind lasts: out of the garbage collector's way
    from streamlit import runtime

    if runtime.exists():  # a real server: its worker process for large projections starts and warms up now too
        from app.kit.background import workers

        workers()
    return thread


@st.cache_resource
def serving_threads() -> int:
    """Torch threads per operation while serving (``CTXMODELS_TORCH_THREADS``, default 1), set once per server.

    Visitors' requests are many small model calls, several at once: with two threads per call on a busy 2-core
    machine the OpenMP threads spin waiting for a core (a fill-in keystroke measured 180-250 ms with two threads,
    130 ms with one), while the large jobs barely lose (1,000 sentences: BERT 0.33 -> 0.36 s, ELMo about the same)."""
    import os

    import torch

    try:
        n = max(1, int(os.environ.get("CTXMODELS_TORCH_THREADS", "1")))
    except ValueError:
        n = 1
    torch.set_num_threads(n)
    return n


@st.cache_resource
def lesson_warm_up() -> threading.Thread | None:
    """With ``--warm-lesson``: ``python -m app.warm``'s visits, once per server, in the background from the first
    visit on (a page run cannot warm the caches of pages it does not run; these visits run them, in this process,
    through the server's own address)."""
    if not settings().warm_lesson:
        return None
    address = st.get_option("server.address") or "127.0.0.1"
    host = "127.0.0.1" if address in ("0.0.0.0", "::", "") else address
    base = (st.get_option("server.baseUrlPath") or "").strip("/")
    url = f"http://{host}:{st.get_option('server.port')}" + (f"/{base}" if base else "")
    thread = threading.Thread(target=_warm_lesson, args=(url,), name="lesson-warm-up", daemon=True)
    thread.start()
    return thread


def _warm_lesson(url: str) -> None:
    """The visits, each line printed to the server's console (the operator's terminal) as it ends."""
    import time

    from app.warm import warm

    start = time.monotonic()
    try:
        done = warm(url, report=lambda v: print(f"lesson warm-up: {v.seconds:6.1f} s  /{v.page}?{v.query}"[:140],
                                                flush=True))
        print(f"lesson warm-up: {len(done)} views warmed in {time.monotonic() - start:.0f} s", flush=True)
    except Exception as e:  # noqa: BLE001 - a warm-up that cannot reach the server leaves the app as it was
        print(f"lesson warm-up stopped: {e}", flush=True)


def umap_ready() -> bool:
    thread = umap_warm_up()
    return thread is None or not thread.is_alive()


def usable_projection(method: str) -> str:
    """``method``, or "pca" while UMAP is still warming up: then the page says so and reruns itself once UMAP is
    ready (a small fragment polls every 2 s), so a visitor never waits on the compile."""
    if method != "umap" or umap_ready():
        return method
    st.info("UMAP is warming up (its first use compiles code, about half a minute once per server); showing PCA "
            "until it is ready. The page switches by itself.")

    @st.fragment(run_every=2)
    def _switch_when_ready() -> None:
        if umap_ready():
            st.rerun()

    _switch_when_ready()
    return "pca"
