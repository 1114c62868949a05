"""UMAP warm-up: importing umap and its first fit take half a minute; pay that once per server, in the background."""

from __future__ import annotations

import threading

import streamlit as st

from app.memory import settle_after
from app.settings import settings


@st.cache_resource
def umap_warm_up() -> threading.Thread | None:
    if not settings().warm_up:
        return None
    from ctxmodels.analysis.projections import start_umap_warm_up

    thread = start_umap_warm_up()
    settle_after(thread)  # what umap and numba leave behind lasts: out of the garbage collector's way
    return thread


def umap_ready() -> bool:
    thread = umap_warm_up()
    return thread is None or not thread.is_alive()
