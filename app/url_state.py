"""The state of a view in the URL: the widgets that matter start from the query parameters and write back to
them, so a copied link reproduces the view."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import streamlit as st


def _parse(raw: str, kind: type) -> Any:
    if kind is bool:
        return raw.lower() in ("1", "true", "yes", "on")
    return kind(raw)


def url_state(key: str, default: Any, options: Sequence[Any] | None = None, kind: type | None = None,
              many: bool = False) -> None:
    """Put the URL's value of ``key`` (else ``default``) into ``st.session_state[key]`` on a session's first run,
    so the widget with that key starts from it. Values not among ``options`` fall back to the default."""
    if key in st.session_state:
        return
    st.session_state[key] = url_value(key, default, options, kind, many)


def url_value(key: str, default: Any, options: Sequence[Any] | None = None, kind: type | None = None,
              many: bool = False) -> Any:
    """The URL's value of ``key``, else the value this session last had, else ``default``.

    For a widget's ``value=`` argument: a widget that starts from its own ``value`` keeps it even if the browser
    re-creates it (as can happen when a rerun from every keystroke interrupts another), where one that starts
    from session state falls back to its built-in default.
    """
    kind = kind or (type(default) if default is not None and not many else str)
    # Not in the URL: the value this session last had (page switches drop the other page's widget state).
    value = st.session_state.get(f"_keep::{key}", default)
    try:
        if many:
            raw = [r for chunk in st.query_params.get_all(key) for r in chunk.split(",") if r]
            if raw:
                parsed = [_parse(r, kind) for r in raw]
                value = [v for v in parsed if options is None or v in options]
        elif key in st.query_params:
            parsed = _parse(st.query_params[key], kind)
            value = parsed if options is None or parsed in options else default
    except (ValueError, TypeError):
        value = default
    return value


def to_url(*keys: str) -> None:
    """Write the current values of ``keys`` into the URL (lists as repeated parameters)."""
    for key in keys:
        if key not in st.session_state:
            continue
        value = st.session_state[key]
        keep(key, value)
        if isinstance(value, (list, tuple)):
            st.query_params[key] = [str(v) for v in value]
        elif isinstance(value, bool):
            st.query_params[key] = "1" if value else "0"
        elif value is None:
            st.query_params.pop(key, None)
        else:
            st.query_params[key] = str(value)


def keep(key: str, value: Any) -> None:
    """Remember ``value`` as this session's last value of ``key`` (for a key the page writes to the URL itself)."""
    st.session_state[f"_keep::{key}"] = value
