"""Presentation mode (``?present=1``): larger text and no sidebar, for a projector."""

from __future__ import annotations

import streamlit as st

from app.url_state import url_state

PRESENTATION_CSS = """
<style>
html { font-size: 125%; }  /* Streamlit sizes its text in rem: everything grows together */
section[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"] { display: none !important; }
</style>
"""


def presenting() -> bool:
    """Presentation mode: on from ``?present=1`` for the whole session (page switches clear the URL)."""
    url_state("present", False, kind=bool)
    return bool(st.session_state["present"])


def start_presenting() -> None:
    st.session_state["present"] = bool(st.session_state.get("present_toggle"))
