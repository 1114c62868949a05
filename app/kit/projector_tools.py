"""The Embedding Projector's tools on a scatter of occurrences, as widgets in the link: labels on a few points
(``labels=number|words``), one occurrence shown with only its nearest (``focus=7&focus_k=10``, the occurrence's
number from 1) and a custom axis from one word to another (``axis_from=money&axis_to=river``).

A clicked point's details offer "show only it and its nearest" (:func:`focus_on`): it takes effect on the next run,
before the picker is drawn (a widget's value cannot change once it is drawn)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import streamlit as st

from app.kit import clicked
from app.kit.inputs import md, quoted
from app.kit.registry import label
from app.kit.url_state import to_url, url_state

_PICK = "_focus_pick"
LABELS = {"off": "none", "number": "numbers", "words": "the words around"}


@dataclass(frozen=True)
class Tools:
    labels: str  # "off", "number" or "words"
    focus: int | None  # the occurrence shown with its nearest (from 0), or None
    focus_k: int
    axis: tuple[str, str] | None  # the axis' two words, or None


def tool_inputs(box, sentences: list[str], k_range: dict, max_chars: int, max_labels: int) -> Tools:
    """The tools' widgets inside ``box`` (the page's folded controls). ``sentences``: each occurrence's sentence, for
    the occurrence picker (it filters as one types)."""
    n = len(sentences)
    url_state("labels", "off", options=list(LABELS))
    url_state("focus", 0, kind=int, min_value=0, max_value=n)
    url_state("focus_k", 10, kind=int, **k_range)
    url_state("axis_from", "", max_chars=max_chars)
    url_state("axis_to", "", max_chars=max_chars)
    pick = st.session_state.pop(_PICK, None)
    if pick is not None:
        st.session_state["focus"] = pick
    if not 0 <= st.session_state["focus"] <= n:  # kept from a word with more occurrences
        st.session_state["focus"] = 0
    box.caption("**The Embedding Projector's tools**: label points, show one occurrence with its nearest, or "
                "place every occurrence on an axis from one word to another.")
    c1, c2, c3 = box.columns([2, 3, 1.4])  # "Nearest" keeps its 9.5rem (the controls' least) at 1280 px
    labels = c1.radio("Labels on points", list(LABELS), key="labels", persist_state="session", horizontal=True,
                      format_func=LABELS.get,
                      help=f"At most {max_labels} points are labelled: the occurrence shown with its nearest, else "
                           "the ringed ones, else an even spread of them. The hover shows every point's sentence.")
    focus = c2.selectbox("Show only one occurrence and its nearest", list(range(n + 1)), key="focus",
                         persist_state="session", filter_mode="contains",
                         format_func=lambda i: "(all occurrences)" if i == 0 else f"{i}. {sentences[i - 1][:90]}",
                         help="Type to search the sentences. The others are faded; the nearest are found in the "
                              "layer's own vectors (cosine, every dimension), not on the picture, so each panel "
                              "finds its own.")
    k = int(c3.number_input("Nearest", **k_range, step=1, key="focus_k", persist_state="session"))
    a1, a2 = box.columns(2)
    word_a = a1.text_input("Axis from the word", key="axis_from", persist_state="session", max_chars=max_chars,
                           placeholder="money",
                           help="With both words: every panel places each occurrence between them, across (0 at "
                                "the first word, 1 at the second), instead of the projection.").strip()
    word_b = a2.text_input("to the word", key="axis_to", persist_state="session", max_chars=max_chars,
                           placeholder="river").strip()
    to_url("labels", "focus", "focus_k", "axis_from", "axis_to")
    if bool(word_a) != bool(word_b):
        box.caption("Type both words to draw the axis.")
    axis = (word_a, word_b) if word_a and word_b else None
    return Tools(labels, focus - 1 if focus else None, k, axis)


def focus_on(index: int) -> None:
    """Show occurrence ``index`` (from 0) with only its nearest, from the next run on."""
    st.session_state[_PICK] = index + 1


def point_buttons(index: int, panel_key: str) -> None:
    """Under a clicked point's details: show only it and its nearest, or clear the click."""
    b1, b2 = st.columns(2)
    if b1.button("Show only it and its nearest", key=f"focus_on::{panel_key}", icon=":material/filter_center_focus:"):
        focus_on(index)
        st.rerun(scope="app")  # the picker is drawn at the top of the page
    # a callback: the run it starts draws the panel without the ring
    b2.button("Clear the clicked point", key=f"clear::{panel_key}", icon=":material/close:", on_click=clicked.clear)


def on_axis(place: Callable, model_id: str, ov, layers: tuple, mix, s):
    """``place(model_id, ov, layers, mix, s)``: a row's layers on the custom axis that ``s.axis`` names; None without
    an axis, or with a warning when a word has no vector there (the row then draws its projection)."""
    if s.axis is None:
        return None
    try:
        return place(model_id, ov, layers, mix, s)
    except ValueError as e:
        st.warning(f"No axis from {quoted(s.axis[0])} to {quoted(s.axis[1])} in {md(label(model_id))}: {md(str(e))}. "
                   "Showing the projection instead.")
        return None
