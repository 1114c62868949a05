"""SemCor's sense averages of a lemma in a model, shared by every page and visitor (``app/shared.py``): Word senses
reads one occurrence or colours every point by them, the Overview names the sense of the word in each sentence."""

from __future__ import annotations

from functools import partial

import streamlit as st

from app.inputs import md
from app.registry import label
from app.shared import shared
from ctxmodels.analysis import dictionary_senses as ds


def sense_averages(model_id: str, model, lemma: str) -> ds.SenseAverages:
    """The lemma's SemCor sense averages in ``model``: once per server (a few seconds: every tagged occurrence of
    the lemma, at most a thousand, is embedded)."""
    with st.spinner(f"{label(model_id)}: embedding SemCor's occurrences of “{lemma}” (once per server) …"):
        return shared().get(("sense-averages", model_id, id(model), lemma), partial(ds.sense_averages, model, lemma))


def trust(av: ds.SenseAverages, layer: int) -> str:
    """How far to trust ``layer``'s readings, in Markdown: "97% of SemCor's *bank* right in layer 6, against 65% by
    spelling alone"."""
    where = md(av.layer_names[layer]) if len(av.layer_names) > 1 else "its vectors"
    return (f"{100 * av.accuracy[layer]:.0f}% of SemCor's *{md(av.lemma)}* right in {where}, against "
            f"{100 * av.by_spelling:.0f}% by spelling alone")
