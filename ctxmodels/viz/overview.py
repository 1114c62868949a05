"""The overview: one word in two sentences, the cosine of its two vectors layer by layer. Pure (no
Streamlit).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict

import numpy as np
import plotly.graph_objects as go

from ctxmodels.analysis import word_senses as ws
from ctxmodels.loading import LoadedModel
from ctxmodels.viz.models import Model, as_model, label_of
from ctxmodels.viz.style import model_colours, plain, plain_all


def same_word_lines(results: dict[str, dict], word: str, title: str = "") -> go.Figure:
    """One word in two sentences, per model (``results``: model name -> :class:`ctxmodels.analysis.word_senses.
    SameWord` as a dict): the cosine of its two vectors layer by layer (solid, the first layer at the left) and,
    dotted in the same colour, the mean cosine of any two words of the two sentences in that layer."""
    colours = model_colours(list(results))
    target = plain(word)
    data = []
    # a model of one layer (static vectors) last and as a ring, so that its point at 1 shows over the others' first
    for name, r in sorted(results.items(), key=lambda item: len(item[1]["layer_names"]) == 1):
        layers = plain_all(r["layer_names"])
        single = len(layers) == 1
        xs = list(range(len(layers)))
        for part, dash, what in (("cosine", "solid", f"“{target}” and “{target}”"),
                                 ("baseline", "dot", "any two words")):
            ys = [None if v is None or not np.isfinite(v) else float(v) for v in r[part]]
            data.append(dict(
                type="scatter", mode="lines+markers", x=xs, y=ys, name=plain(name) if part == "cosine" else
                f"{plain(name)}: any two words", legendgroup=plain(name), showlegend=part == "cosine",
                line=dict(color=colours[name], dash=dash, width=3 if part == "cosine" else 1.5),
                marker=dict(size=(18 if single else 9) if part == "cosine" else 5,
                            symbol="circle-open" if single and part == "cosine" else "circle",
                            line=dict(width=3 if single and part == "cosine" else 0)), customdata=layers,
                hovertemplate=f"{plain(name)}, %{{customdata}}: {what} %{{y:.2f}}<extra></extra>"))
    longest = max((len(r["layer_names"]) for r in results.values()), default=1)
    return go.Figure(dict(
        data=data,
        layout=dict(
            title=dict(text=plain(title)), height=420, margin=dict(l=10, r=10, t=40, b=10),
            xaxis=dict(title=dict(text="layer (0: the context-free input layer)"), tickvals=list(range(longest)),
                       fixedrange=True),
            yaxis=dict(title=dict(text="cosine"), range=[0, 1.05], fixedrange=True),
            legend=dict(orientation="h", y=-0.22, yanchor="top", x=0),
        ),
    ))


def same_word(models: Model | Sequence[Model], sentence_a: str, sentence_b: str, word: str) -> go.Figure:
    """The Overview's *one word in two sentences*: in each model, how alike the two vectors of ``word`` are, layer
    by layer, against how alike any two words of the two sentences are."""
    loaded = [as_model(m) for m in ([models] if isinstance(models, (LoadedModel, str)) else models)]
    results = {label_of(m): asdict(ws.same_word(m, sentence_a.strip(), sentence_b.strip(), word)) for m in loaded}
    return same_word_lines(results, word, title=f"“{word}” in sentence A and in sentence B")
