"""The point a visitor clicked on a scatter, in the link: ``point=7:bert-eltec:2`` (the occurrence's number, from 1,
then the panel it was clicked in: the model and the layer), so a copied link opens with that point's details shown
under the same panel, and the point ringed on it.

The click is read before the panel is drawn (:func:`clicked_in`): a chart whose figure changes is a new element to
Streamlit, so the figure that rings the clicked point comes back without the click's selection. The point therefore
stays until another click or :func:`clear`, not until the selection empties."""

from __future__ import annotations

import streamlit as st

from app.kit.url_state import url_state, write

PARAM = "point"


def clicked_in(chart_key: str) -> object | None:
    """The selection event a chart drawn with ``chart_key`` sent with this run, when it is a new one (None before
    the chart was drawn, and for the same selection seen again: a figure that did not change keeps its selection,
    which must not bring back a point the visitor cleared)."""
    event = st.session_state.get(chart_key)
    try:
        points = repr(event["selection"]["points"]) if event is not None else ""
    except (KeyError, TypeError):
        points = ""
    seen = f"_seen::{chart_key}"
    new = bool(points) and points != st.session_state.get(seen)
    st.session_state[seen] = points
    return event if new else None


def linked_point(clicked: int | None, n: int, panel: str) -> int | None:
    """The occurrence (from 0) whose details to show under ``panel`` ("bert-eltec:2"): ``clicked``, the one a click
    on it picks (then written into the link), else the link's while it names this panel. ``n``: the number of
    occurrences (a link's number beyond it is ignored)."""
    url_state(PARAM, "", max_chars=200)
    if clicked is not None:
        _set(f"{clicked + 1}:{panel}")
        return clicked
    number, _, where = str(st.session_state.get(PARAM) or "").partition(":")
    if where == panel and number.isdigit() and 1 <= int(number) <= n:
        return int(number) - 1
    return None


def clear() -> None:
    """Forget the clicked point (its details and ring go, and it leaves the link)."""
    _set(None)


def _set(value: str | None) -> None:
    st.session_state[PARAM] = value or ""
    write(PARAM, value)
