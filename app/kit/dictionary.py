"""SemCor's sense averages of a lemma in a model, shared by every page and visitor (``app/kit/shared.py``): Word senses
reads one occurrence or colours every point by them, the Overview and the lesson name the sense of the word in each
of two sentences."""

from __future__ import annotations

from typing import NamedTuple

import streamlit as st

from app.kit.inputs import md
from app.kit.registry import get_model, label
from app.kit.shared import shared
from ctxmodels.analysis import dictionary_senses as ds
from ctxmodels.analysis import vectors


def sense_averages(model_id: str, lemma: str) -> ds.SenseAverages:
    """The lemma's SemCor sense averages in the model: once per server (a few seconds: every tagged occurrence of
    the lemma, at most a thousand, is embedded)."""
    with st.spinner(f"{label(model_id)}: embedding SemCor's occurrences of “{lemma}” (once per server) …"):
        return shared().get(("sense-averages", model_id, lemma), lambda: ds.sense_averages(get_model(model_id), lemma))


def trust(av: ds.SenseAverages, layer: int) -> str:
    """How far to trust ``layer``'s readings, in Markdown: "97% of SemCor's *bank* right in layer 6, against 65% by
    spelling alone"."""
    where = md(av.layer_names[layer]) if len(av.layer_names) > 1 else "its vectors"
    return (f"{100 * av.accuracy[layer]:.0f}% of SemCor's *{md(av.lemma)}* right in {where}, against "
            f"{100 * av.by_spelling:.0f}% by spelling alone")


class BothReadings(NamedTuple):
    averages: ds.SenseAverages
    layer: int  # the layer that reads SemCor best
    senses: list[int | None]  # the sense read in each sentence (an index into averages.senses; None: a tie)


def read_in_both(model_id: str, lemma: str, text_a: str, text_b: str, word: str) -> BothReadings:
    """The dictionary sense ``model_id`` reads for the first ``word`` of each sentence, in its best layer on SemCor."""
    av = sense_averages(model_id, lemma)
    found = vectors.word_vectors(get_model(model_id), [text_a, text_b], word)
    first = {}
    for o, v in zip(found.occurrences, found.vectors):
        first.setdefault(o.sentence_index, v)
    best = av.best_layer()
    return BothReadings(av, best, [ds.guess(av, first[i]).sense(best) for i in (0, 1)])


def both_line(model_id: str, r: BothReadings) -> str:
    """One Markdown line: the sense read in A and in B, how far to trust the layer, and a warning when it does no
    better than the spelling."""
    said = [f"*{md(ds.sense_name(r.averages.senses[s]))}*" if s is not None else "no sense nearer than another"
            for s in r.senses]
    same = " (the same sense)" if r.senses[0] == r.senses[1] and r.senses[0] is not None else ""
    spelling = ("" if r.averages.beats_spelling(r.layer) else
                ": no better than the spelling alone, so it reads the word, not the sentences")
    return f"**{md(label(model_id))}** ({trust(r.averages, r.layer)}): A {said[0]}; B {said[1]}{same}{spelling}"
