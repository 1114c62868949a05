"""Figure pieces every view shares: escaping text for Plotly, the palette, colours per sense and per model, hover
text, per-layer panels, an attention map, a loss curve. Pure: data in, ``plotly.graph_objects.Figure`` out, no
Streamlit, so tests can check every figure without a browser.

Plotly reads a subset of HTML in every text it draws (titles, axis categories, legend names, hover text,
annotations): each function escapes the text it is given (:func:`plain`), so a visitor's ``<b>`` or ``<a href>``
shows as typed. Colours are fixed per sense label (sorted), so the same sense keeps its colour across panels
that show the same occurrences.
"""

from __future__ import annotations

import html
import re
import textwrap
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22",
           "#7f7f7f"]
UNLABELLED = "(no label)"
OTHER = "other"  # the senses too rare to keep apart, folded into one group (ctxmodels.analysis.sources.OTHER)
NEUTRAL = "#9e9e9e"  # what stands for no one sense: unlabelled points, "other", a point every sense shares
# More groups than PALETTE holds (SemCor's "play": 14 senses): Green-Armytage's 26 colours of maximal contrast,
# less its greys and its palest, so no two groups share a colour and none looks like NEUTRAL.
MANY_COLOURS = ["#3283FE", "#F6222E", "#1C8356", "#FEAF16", "#782AB6", "#85660D", "#FC1CBF", "#2ED9FF", "#90AD1C",
                "#AA0DFE", "#C4451C", "#325A9B", "#1CFFCE", "#B00068", "#16FF32", "#DEA0FD", "#FA0087", "#1CBE4F",
                "#F8A19F", "#C075A6", "#B10DA1", "#FBE426", "#FE00FA"]


def plain(text: object) -> str:
    """``text`` for a Plotly text field: ``<``, ``>`` and ``&`` escaped, so it is shown, not read as markup.
    (Quotes stay: Plotly decodes only a few named entities, and ``&quot;`` would show as typed.)"""
    return html.escape(str(text), quote=False)


def plain_all(texts: Sequence[object]) -> list[str]:
    return [plain(t) for t in texts]


def sense_colours(labels: Sequence[str | None]) -> dict[str, str]:
    """A colour per group (sorted, so the same groups get the same colours in every panel): up to 9 from
    :data:`PALETTE`, more from :data:`MANY_COLOURS`, each its own while there are colours enough (23); the
    unlabelled points and "other" (the rare senses folded together) in :data:`NEUTRAL` grey, as no one sense."""
    names = sorted({lab or UNLABELLED for lab in labels})
    groups = [n for n in names if n not in (UNLABELLED, OTHER)]
    colours = PALETTE[:9] if len(groups) <= 9 else MANY_COLOURS
    return {name: NEUTRAL if name in (UNLABELLED, OTHER) else colours[groups.index(name) % len(colours)]
            for name in names}


def highlight(sentence: str, span: tuple[int, int] | None, width: int = 70) -> str:
    """Hover text: the sentence with the target word in bold, wrapped for the tooltip."""
    if span is None:
        text = plain(sentence)
    else:
        a, b = span
        text = plain(sentence[:a]) + "<b>" + plain(sentence[a:b]) + "</b>" + plain(sentence[b:])
    # Wrap on spaces outside tags so long sentences don't make a tooltip wider than the plot.
    out, line = [], 0
    for word in text.split(" "):
        visible = len(word.replace("<b>", "").replace("</b>", ""))
        if line and line + visible > width:
            out.append("<br>")
            line = 0
        elif out:
            out.append(" ")
            line += 1
        out.append(word)
        line += visible
    return "".join(out)


def wrapped_title(title: str, width: int = 44) -> tuple[str, int]:
    """``title`` broken into lines of at most ``width`` characters (Plotly never wraps a title: a long one runs
    under the next panel), escaped, and the number of lines. 44 characters fit a half-width panel at the
    presentation mode's title size."""
    lines = textwrap.wrap(str(title), width=width, break_on_hyphens=False) or [""]
    return "<br>".join(plain(line) for line in lines), len(lines)


def model_colours(models: Sequence[str]) -> dict[str, str]:
    """One colour per model, by its place in ``models`` (the page's model list): the same model has the same colour
    in every figure of the page, whichever of them it appears in."""
    return {m: PALETTE[i % len(PALETTE)] for i, m in enumerate(dict.fromkeys(models))}


def layer_panels(
    rows: Sequence[dict], panels: Sequence[tuple[str, str, str, dict[str, float] | None]],
    colours: dict[str, str] | None = None, columns: int = 2,
) -> go.Figure:
    """Several per-layer measurements as one figure of small panels (one Plotly figure draws much faster in a
    browser than several): ``panels`` lists (metric, title, y-axis words, baseline {label: value} or None); a panel
    whose metric no row has is left out. ``rows`` carry model, layer (index), layer_name and the metrics. A model
    has one colour and one legend entry for all panels."""
    shown = [p for p in panels if any(finite(r.get(p[0])) for r in rows)]
    if not shown:
        raise ValueError("no measurement to draw")
    models = list(dict.fromkeys(r["model"] for r in rows))
    colours = colours or model_colours(models)
    n_rows = -(-len(shown) // columns)
    gap_x, gap_y = 0.09, (0.16 if n_rows > 1 else 0.0)
    width = (1 - gap_x * (columns - 1)) / columns
    height = (1 - gap_y * (n_rows - 1)) / n_rows
    # Plain dicts and one constructor call: make_subplots and add_trace validate every property one by one, which
    # took most of a page run's time here.
    traces, shapes, annotations, layout = [], [], [], {}
    for k, (metric, title, words, baseline) in enumerate(shown):
        row, col = k // columns, k % columns
        n = k + 1
        xname, yname = ("x", "y") if n == 1 else (f"x{n}", f"y{n}")
        x0 = col * (width + gap_x)
        y1 = 1 - row * (height + gap_y)
        layout[f"xaxis{n if n > 1 else ''}"] = dict(domain=[x0, x0 + width], anchor=yname, dtick=1,
                                                     title=dict(text="layer"))
        layout[f"yaxis{n if n > 1 else ''}"] = dict(domain=[y1 - height, y1], anchor=xname,
                                                     title=dict(text=plain(words)))
        annotations.append(dict(text=plain(title), x=x0 + width / 2, y=y1, xref="paper", yref="paper",
                                xanchor="center", yanchor="bottom", showarrow=False, font=dict(size=14)))
        for model in models:
            rs = sorted((r for r in rows if r["model"] == model and finite(r.get(metric))), key=lambda r: r["layer"])
            if not rs:
                continue
            traces.append(dict(
                type="scatter", x=[r["layer"] for r in rs], y=[float(r[metric]) for r in rs], mode="lines+markers",
                name=plain(model), legendgroup=plain(model), showlegend=k == 0, xaxis=xname, yaxis=yname,
                line=dict(color=colours.get(model, "#333")),
                text=[plain(r.get("layer_name", r["layer"])) for r in rs],
                hovertemplate="%{text}: %{y:.3f}<extra>" + plain(model) + "</extra>"))
        for label, value in (baseline or {}).items():
            shapes.append(dict(type="line", xref=f"{xname} domain", yref=yname, x0=0, x1=1, y0=value, y1=value,
                               line=dict(dash="dash", color="#888")))
            annotations.append(dict(text=plain(label), xref=f"{xname} domain", yref=yname, x=1, y=value,
                                    xanchor="right", yanchor="bottom", showarrow=False))
    layout.update(height=280 * n_rows + 40, margin=dict(l=10, r=10, t=50, b=10), shapes=shapes,
                  annotations=annotations, legend=dict(orientation="h", y=1.0 + 0.12 / n_rows, yanchor="bottom", x=0))
    return go.Figure(dict(data=traces, layout=layout))


def finite(x: object) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool) and bool(np.isfinite(x))


def short_layer_name(name: str) -> str:
    """A layer's name short enough for a narrow column: "embeddings" -> "emb.", "layer 6" -> "6", "layer 0 (char
    CNN)" -> "char CNN", "layer 2 (LSTM)" -> "LSTM 2"; other names as they are."""
    if name == "embeddings":
        return "emb."
    match = re.fullmatch(r"layer (\d+)(?: \((.+)\))?", name)
    if not match:
        return name
    number, kind = match.groups()
    if kind is None:
        return number
    return kind if number == "0" else f"{kind} {number}"


def percent(p: float) -> str:
    """A probability as a readable percentage: one decimal from 1%, two significant digits below, ``<0.001%``."""
    if p >= 0.01:
        return f"{p:.1%}"
    if p >= 1e-5:
        return f"{p * 100:.2g}%"
    return "<0.001%" if p > 0 else "0%"


def attention_heatmap(matrix: np.ndarray, tokens_from: Sequence[str], tokens_to: Sequence[str] | None = None,
                      title: str = "", zmax: float | None = None) -> go.Figure:
    """One attention map: rows attend (from), columns are attended to. ``zmax``: the top of the colour scale, for
    maps set side by side on one scale (None: this map's largest weight).

    Built in one constructor call with plain dicts (plotly validates it once; this runs on every layer or head
    change), and the weights go as float32 (Plotly's typed arrays: 4 bytes a cell, not 8)."""
    tokens_to = tokens_from if tokens_to is None else tokens_to
    # Duplicate token strings would merge heatmap categories; suffix positions to keep them apart.
    ys = [f"{plain(t)} ·{i}" for i, t in enumerate(tokens_from)]
    xs = [f"{plain(t)} ·{i}" for i, t in enumerate(tokens_to)]
    every = dict(dtick=1) if max(len(xs), len(ys)) <= 80 else {}  # every token labelled while the labels fit
    return go.Figure(dict(
        data=[dict(type="heatmap", z=np.asarray(matrix, dtype=np.float32), x=xs, y=ys, colorscale="Blues", zmin=0,
                   zmax=zmax, hovertemplate="%{y} → %{x}: %{z:.3f}<extra></extra>")],
        layout=dict(title=dict(text=plain(title)), height=max(300, 16 * len(ys) + 150),
                    margin=dict(l=10, r=10, t=40, b=10), xaxis=every, yaxis=dict(autorange="reversed", **every)),
    ))


def loss_chart(records: Sequence[dict], title: str = "training loss") -> go.Figure:
    """Training loss over steps from metrics.jsonl records (other records, e.g. evaluations, are skipped)."""
    train = [r for r in records if "loss" in r]
    fig = go.Figure(go.Scatter(x=[r["step"] for r in train], y=[r["loss"] for r in train], mode="lines",
                               name="train loss"))
    fig.update_layout(title=plain(title), xaxis_title="step", yaxis_title="loss", height=300,
                      margin=dict(l=10, r=10, t=40, b=10))
    return fig
