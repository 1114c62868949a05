"""Caching for the pages' compute modules, which do not import Streamlit themselves: :func:`memo` is
``st.cache_data`` (once per server, keyed by the values of the arguments: model names, texts, a page's state;
every visitor gets a copy), and :func:`shared` the store for large read-only results (``app/kit/shared.py``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import streamlit as st

from app.kit.shared import shared

__all__ = ["memo", "shared"]

F = TypeVar("F", bound=Callable[..., Any])


def memo(max_entries: int | None, spinner: str | bool = False, ttl: float | None = None) -> Callable[[F], F]:
    """Cache a function's results per server by its arguments' values (``st.cache_data``), at most ``max_entries``;
    ``spinner``: the text shown while it computes (False: none)."""
    return st.cache_data(max_entries=max_entries, show_spinner=spinner, ttl=ttl)
