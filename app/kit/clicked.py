"""The point a visitor clicked on a scatter, in the link: ``point=7:bert-eltec:2`` (the occurrence's number, from 1,
then the panel it was clicked in: the model and the layer), so a copied link opens with that point's details shown
under the same panel."""

from __future__ import annotations

import streamlit as st

from app.kit.url_state import url_state, write

PARAM = "point"


def linked_point(clicked: int | None, n: int, panel: str) -> int | None:
    """The occurrence (from 0) whose details to show under ``panel`` ("bert-eltec:2"): ``clicked``, the one a click
    on it picks (then written into the link), else the link's while it names this panel, until the visitor
    clears the click. ``n``: the number of occurrences (a link's number beyond it is ignored)."""
    url_state(PARAM, "", max_chars=200)
    had_click = f"_clicked::{panel}"
    if clicked is not None:
        st.session_state[had_click] = True
        _set(f"{clicked + 1}:{panel}")
        return clicked
    number, _, where = str(st.session_state.get(PARAM) or "").partition(":")
    if st.session_state.pop(had_click, False):  # this panel's click was cleared: so is its point in the link
        if where == panel:
            _set(None)
        return None
    if where == panel and number.isdigit() and 1 <= int(number) <= n:
        return int(number) - 1
    return None


def _set(value: str | None) -> None:
    st.session_state[PARAM] = value or ""
    write(PARAM, value)
