"""Results that every visitor shares, computed once: a corpus's occurrences, their vectors in a model.

``st.cache_data`` copies its values on every hit (pickling a few thousand sentences and their vectors on each
rerun) and cannot show a progress bar while it computes; these values are large, read-only and slow to make, so
they live here instead: one copy per server, a lock per key so that twenty students asking for the same word at
once wait for one computation instead of starting twenty, and a byte budget with least-recently-used eviction.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

import numpy as np
import streamlit as st

BUDGET_MB = float(os.environ.get("CTXMODELS_APP_SHARED_MB", "768"))


def size_of(value: Any) -> int:
    """Rough bytes held by ``value``: its numpy arrays (the rest is small beside them)."""
    if isinstance(value, np.ndarray):
        return value.nbytes
    nbytes = getattr(value, "nbytes", None)  # a result that counts its own arrays
    if isinstance(nbytes, int):
        return nbytes
    vectors = getattr(value, "vectors", None)
    if isinstance(vectors, np.ndarray):
        return vectors.nbytes
    if isinstance(value, tuple):
        return sum(size_of(v) for v in value)
    return 64 * 1024  # occurrences and sentences: tens of kilobytes to a few megabytes


class SharedResults:
    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self._values: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._locks: dict[Hashable, threading.Lock] = {}
        self._lock = threading.Lock()

    def peek(self, key: Hashable) -> Any | None:
        with self._lock:
            item = self._values.get(key)
            if item is None:
                return None
            self._values.move_to_end(key)
            return item[0]

    def get(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        """The value for ``key``, computing it (once, whoever else asks meanwhile) when it is not here."""
        found = self.peek(key)
        if found is not None:
            return found
        with self._lock:
            key_lock = self._locks.setdefault(key, threading.Lock())
        try:
            with key_lock:
                found = self.peek(key)  # computed by another visitor while this one waited
                if found is not None:
                    return found
                value = compute()
                self._put(key, value)
                return value
        finally:
            with self._lock:
                self._locks.pop(key, None)

    def _put(self, key: Hashable, value: Any) -> None:
        n = size_of(value)
        with self._lock:
            if n > self.max_bytes:
                return
            self._values[key] = (value, n)
            total = sum(b for _, b in self._values.values())
            while total > self.max_bytes and len(self._values) > 1:
                _, (_, b) = self._values.popitem(last=False)
                total -= b

    def __len__(self) -> int:
        return len(self._values)


@st.cache_resource
def shared() -> SharedResults:
    return SharedResults(int(BUDGET_MB * 2**20))
