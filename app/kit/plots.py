"""Showing a figure with its exports: PNG/SVG from the camera button, the figure as HTML and its data as CSV."""

from __future__ import annotations

from typing import Any

import streamlit as st

from app.kit.glossary import figure_words


def image_format() -> str:
    return st.session_state.get("image_format", "png")


def plot(fig, name: str, key: str, data=None, selectable: bool = False):
    """Show a Plotly figure with its exports: the modebar camera saves PNG or SVG (the format chosen in the
    sidebar), the buttons below give the figure as HTML and the data behind it as CSV.

    ``data``: a DataFrame, or a function returning one (built only when downloaded).
    Returns the selection event when ``selectable`` (click a point: the page reruns with it)."""
    config = {"displaylogo": False,
              "toImageButtonOptions": {"format": image_format(), "filename": _safe_name(name), "scale": 2}}
    kwargs: dict[str, Any] = {"config": config, "key": key, "width": "stretch"}
    if selectable:
        kwargs.update(on_select="rerun", selection_mode="points")
    if st.session_state.get("present"):  # Plotly sizes text in px: enlarge it for the projector too
        fig.update_layout(font=dict(size=17), title_font=dict(size=20))
    event = st.plotly_chart(fig, **kwargs)
    words = figure_words(fig)
    if words:  # a figure's title cannot carry hover help: the glossary's words it uses are named under it
        st.caption(words, unsafe_allow_html=True)
    export_buttons(fig, name, key, data)
    return event


def export_buttons(fig, name: str, key: str, data=None) -> None:
    cols = st.columns(2 if data is not None else 1)
    cols[0].download_button("Figure (HTML)", data=lambda: fig.to_html(include_plotlyjs=True, full_html=True),
                            file_name=f"{_safe_name(name)}.html", mime="text/html", key=f"{key}::html",
                            on_click="ignore", icon=":material/download:", type="tertiary")
    if data is not None:
        cols[1].download_button("Data (CSV)", data=lambda: _frame(data).to_csv(index=False).encode("utf-8"),
                                file_name=f"{_safe_name(name)}.csv", mime="text/csv", key=f"{key}::csv",
                                on_click="ignore", icon=":material/download:", type="tertiary")


def _frame(data):
    """The figure's data: a DataFrame, or a function that makes one (only when the visitor asks for the CSV)."""
    return data() if callable(data) else data


def _safe_name(name: str) -> str:
    keep = "".join(c if c.isalnum() or c in "-_." else "-" for c in name.strip())
    return keep.strip("-")[:80] or "figure"
