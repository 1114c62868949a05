"""Pure figure functions for the explorer: data in, ``plotly.graph_objects.Figure`` out.

No Streamlit here, so tests can check every figure without a browser. Colours are fixed per sense label
(sorted), so the same sense keeps its colour across panels that show the same occurrences.

Plotly reads a subset of HTML in every text it draws (titles, axis categories, legend names, hover text,
annotations): each function escapes the text it is given (:func:`plain`), so a visitor's ``<b>`` or ``<a href>``
shows as typed.
"""

from __future__ import annotations

import html
import re
import textwrap
import warnings
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22",
           "#7f7f7f"]
UNLABELLED = "(no label)"


def plain(text: object) -> str:
    """``text`` for a Plotly text field: ``<``, ``>`` and ``&`` escaped, so it is shown, not read as markup.
    (Quotes stay: Plotly decodes only a few named entities, and ``&quot;`` would show as typed.)"""
    return html.escape(str(text), quote=False)


def _plain_all(texts: Sequence[object]) -> list[str]:
    return [plain(t) for t in texts]


def sense_colours(labels: Sequence[str | None]) -> dict[str, str]:
    names = sorted({lab or UNLABELLED for lab in labels})
    return {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(names)}


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


WEBGL_FROM = 400  # points from which a scatter is drawn with WebGL
LEGEND_BESIDE_CHARS = 24  # legend entries longer than this go below a scatter, not beside it


def sense_scatter(
    coords: np.ndarray,
    labels: Sequence[str | None],
    hover: Sequence[str],
    title: str = "",
    colours: dict[str, str] | None = None,
    marker_size: int | None = None,
    stacks: Sequence[Sequence[int]] = (),
    legend_title: str = "sense",
    ranges: tuple[list[float], ...] | None = None,
    marked: Sequence[int] = (),
    marked_name: str = "",
) -> go.Figure:
    """Scatter of projected occurrences (2-D or 3-D), one trace per sense so the legend toggles senses.

    ``marked``: occurrences ringed in black on top of their dots (those a search found), one more legend entry
    named ``marked_name``.

    ``customdata`` holds each point's occurrence index, so a click can be mapped back to the occurrence. From
    :data:`WEBGL_FROM` points on, 2-D traces are drawn with WebGL (``scattergl``): SVG slows panning and hovering
    down to a crawl at a few thousand points, and the markers shrink so that the crowd stays readable.
    ``ranges`` (x, y and for 3-D z, as :func:`shared_ranges` gives them) fixes the axes, so that panels fitted
    jointly share them.
    """
    coords = np.asarray(coords, dtype=float)
    if coords.ndim != 2 or coords.shape[1] not in (2, 3):
        raise ValueError(f"coords must be [n, 2] or [n, 3], got {coords.shape}")
    if not (len(labels) == len(hover) == len(coords)):
        raise ValueError("coords, labels and hover must have the same length")
    colours = colours or sense_colours(labels)
    names = np.array([lab or UNLABELLED for lab in labels], dtype=object)
    text = np.array(hover, dtype=object)
    three_d = coords.shape[1] == 3
    stacks = sorted((list(st) for st in stacks if len(st) > 1), key=len, reverse=True)  # largest ring first
    kind = "scatter3d" if three_d else "scattergl" if len(coords) >= WEBGL_FROM else "scatter"
    if marker_size is None:
        marker_size = 9 if len(coords) < WEBGL_FROM else 6 if len(coords) < 2000 else 4
    centres, spreads, dot_sizes = [], [], None
    if stacks and not three_d:  # points with the same vector are drawn exactly on top of each other
        coords = coords.copy()
        for st in stacks:
            coords[st] = np.nanmean(coords[st], axis=0)
        centres = [coords[st[0]].copy() for st in stacks]
        panel = ranges or shared_ranges([coords], margin_px=RING_MARGIN_PX) or ([0, 1], [0, 1])
        dot_sizes = np.full(len(coords), float(marker_size))
        spreads = [_spread_senses(coords, st, names, panel, dot_sizes) for st in stacks]
        ranges = panel  # fixed: autoscaling would zoom in on a sunflower that is all there is (a static model)
    outline = dict(width=0.5, color="white") if len(coords) < WEBGL_FROM else dict(width=0)
    traces = []
    spread = any(spreads)
    for name in sorted(set(names)):
        idx = np.flatnonzero(names == name)
        trace = dict(
            type=kind, name=plain(name), mode="markers", customdata=idx,
            text=text[idx], x=coords[idx, 0], y=coords[idx, 1],
            hovertemplate="%{text}<extra>" + plain(name) + "</extra>",
            # opacity: Plotly draws markers with sizes per point ("bubbles") at 0.7 unless told
            marker=dict(size=dot_sizes[idx] if spread else marker_size, color=colours.get(name, "#333"),
                        line=outline, opacity=1),
        )
        if three_d:
            trace["z"] = coords[idx, 2]
        traces.append(trace)
    if stacks and not three_d:
        traces.append(_stack_trace(np.array(centres), stacks, spreads, names, panel))
    elif stacks:  # in 3-D the occurrences stay stacked (no sunflower): the ring still counts them
        traces.append(_stack_trace(np.array([coords[st[0]] for st in stacks]), stacks, [0.0] * len(stacks), names,
                                   None))
    if len(marked):
        idx = np.asarray(marked, dtype=int)
        ring = dict(type=kind, name=plain(marked_name), mode="markers", customdata=idx, text=text[idx],
                    x=coords[idx, 0], y=coords[idx, 1],
                    hovertemplate="%{text}<extra>" + plain(marked_name) + "</extra>",
                    marker=dict(symbol="circle-open", size=marker_size + 6, color="#111", line=dict(width=2)))
        if three_d:
            ring["z"] = coords[idx, 2]
        traces.append(ring)
    axis = dict(showticklabels=False, title=None, zeroline=False)
    fixed = [dict(axis, range=r, autorange=False) for r in ranges] if ranges is not None else [axis] * 3
    xaxis, yaxis = (axis, axis) if three_d else fixed[:2]
    # One constructor call with plain dicts: plotly validates it once (adding traces one by one and updating
    # the layout afterwards is 3-4x slower, and this runs on every redraw).
    title_text, title_lines = wrapped_title(title)
    # constant: the legend's dots keep their size when a sunflower's dots are smaller
    legend, below = dict(title=dict(text=plain(legend_title)), itemsizing="constant"), 0
    entries = [plain(t["name"]) for t in traces]
    if max((len(e) for e in entries), default=0) > LEGEND_BESIDE_CHARS:
        # Long names (SemCor's senses are WordNet glosses) beside the plot squeezed it to a sliver of a
        # half-width panel: below it, one entry a line, they take height instead.
        legend.update(orientation="h", x=0, xanchor="left", y=0, yanchor="top", entrywidth=1, entrywidthmode="fraction")
        below = 22 * (len(entries) + 1)
    layout = dict(title=dict(text=title_text), legend=legend,
                  margin=dict(l=10, r=10, t=40 + 22 * (title_lines - 1), b=10 + below),
                  height=420 + 22 * (title_lines - 1) + below, clickmode="event+select", xaxis=xaxis, yaxis=yaxis)
    if three_d and ranges is not None:
        # WebGL draws a scene's box and grid from its data's extent: a panel whose points are all one point (a
        # context-free layer) got none. Two invisible points at the corners give every panel the shared box.
        corners = np.array(ranges, dtype=float).T
        traces.insert(0, dict(type="scatter3d", mode="markers", x=corners[:, 0], y=corners[:, 1], z=corners[:, 2],
                              marker=dict(size=1, opacity=0), hoverinfo="skip", showlegend=False, name="box"))
    if three_d:  # a cube, so that no direction of the projection looks longer than it is; drag turns it
        untitled = [dict(a, title=dict(text="")) for a in fixed]  # a 3-D axis without a title is named x, y, z
        layout["scene"] = dict(zip(("xaxis", "yaxis", "zaxis"), untitled), aspectmode="cube", dragmode="turntable")
        layout["margin"] = dict(layout["margin"], t=layout["margin"]["t"] + 10)
    return go.Figure(dict(data=traces, layout=layout))


SPREAD_MAX_PX = 16  # the largest sunflower's radius
RING_MAX_PX = 42  # the largest ring's diameter
RING_MARGIN_PX = RING_MAX_PX / 2 + 2  # the room a panel keeps at its edges for a ring


def _spread_senses(coords: np.ndarray, stack: list[int], names: np.ndarray,
                   ranges: tuple[Sequence[float], Sequence[float]], dot_sizes: np.ndarray) -> float:
    """Where a shared point's occurrences have more than one sense, draw them as a small sunflower of smaller dots
    inside its ring, grouped by sense (in place, in ``coords`` and ``dot_sizes``), so every sense shows rather
    than the colour drawn last; each stays hoverable and clickable. Returns the sunflower's radius in px (0: one
    sense, left stacked). The offsets are a few pixels of the panel estimated by :data:`PANEL_PLOT_PX`, never a
    distance in the model's space."""
    if len(set(names[stack].tolist())) < 2:
        return 0.0
    order = sorted(stack, key=lambda i: (names[i], i))
    dot = max(4.0, 0.6 * float(dot_sizes[order[0]]))
    dot_sizes[order] = dot
    # px between neighbouring dots: they touch, so the colours read as groups; a big stack packs them closer so
    # that its ring stays small (SemCor's 200 occurrences of run in a static model)
    k = np.arange(len(order))
    step = min(0.6 * dot, SPREAD_MAX_PX / np.sqrt(len(order)))
    radius, angle = step * np.sqrt(k + 0.5), k * np.pi * (3 - np.sqrt(5))  # Vogel's spiral: the golden angle
    per_px = np.array([ranges[0][1] - ranges[0][0], ranges[1][1] - ranges[1][0]], dtype=float) / PANEL_PLOT_PX
    coords[order, 0] += radius * np.cos(angle) * per_px[0]
    coords[order, 1] += radius * np.sin(angle) * per_px[1]
    return float(radius[-1]) + dot / 2


def _stack_trace(centres: np.ndarray, stacks: list[list[int]], spreads: Sequence[float], names: np.ndarray,
                 ranges: tuple[Sequence[float], ...] | None) -> dict:
    """A ring with a count over each point that several occurrences share (largest first), listing their senses:
    otherwise the colour drawn last would hide that, say, a static vector is the same for every sense. A ring
    encloses the sunflower that :func:`_spread_senses` drew its occurrences as."""
    sizes, counts, hovers = [], [], []
    for st, spread in zip(stacks, spreads):
        senses: dict[str, int] = {}
        for i in st:
            senses[names[i]] = senses.get(names[i], 0) + 1
        listed = "<br>".join(f"{plain(name)}: {n}" for name, n in sorted(senses.items(), key=lambda x: -x[1]))
        sizes.append(min(RING_MAX_PX, max(14 + 4 * np.log2(len(st)), 2 * spread + 6)))
        counts.append(f"×{len(st)}")
        hovers.append(f"<b>{len(st)} occurrences share this point</b> (the same vector)<br>{listed}")
    # customdata: a click on the ring picks the stack's first occurrence, as a click on a point would.
    trace = dict(type="scatter", name="shared points", mode="markers+text", x=centres[:, 0], y=centres[:, 1],
                 text=counts, customdata=[st[0] for st in stacks], hovertext=hovers,
                 hovertemplate="%{hovertext}<extra></extra>",
                 marker=dict(size=sizes, symbol="circle-open", color="#222", line=dict(width=2)), showlegend=True)
    if centres.shape[1] == 3:  # a turning cloud has no fixed place to keep a label off: each goes above its ring
        return dict(trace, type="scatter3d", z=centres[:, 2], textposition="top center",
                    marker=dict(trace["marker"], line=dict(width=2, color="#222")))
    return dict(trace, textposition=label_places(ranges, centres, sizes, counts))


#: the plot area of a half-width Word senses panel at a laptop's width, in px (where labels would collide)
PANEL_PLOT_PX = (330, 370)
_PLACES = ("top center", "middle right", "bottom center", "middle left")


def label_places(ranges: tuple[Sequence[float], Sequence[float]], rings: np.ndarray, sizes: Sequence[float],
                 texts: Sequence[str], plot_px: tuple[int, int] = PANEL_PLOT_PX) -> list[str]:
    """A Plotly ``textposition`` for each ring's label (rings in order of preference) that keeps it off the other
    rings and the labels placed before it, where one of four places around its ring does; else the place that
    overlaps least. Plotly never moves a label itself: rings a few pixels apart wrote their counts over each
    other's rings. ``ranges``: the x and y axis ranges; sizes are ring diameters in px. The pixel scale is
    estimated for a panel of ``plot_px``."""
    lo = np.array([ranges[0][0], ranges[1][0]], dtype=float)
    span = np.array([ranges[0][1], ranges[1][1]], dtype=float) - lo
    span = np.where(span > 0, span, 1.0)
    centre = (np.asarray(rings, dtype=float).reshape(-1, 2) - lo) / span * np.array(plot_px)
    centre[:, 1] = plot_px[1] - centre[:, 1]  # screen y runs down
    radii = np.asarray(sizes, dtype=float) / 2 + 1

    def box(k: int, place: str) -> tuple[float, float, float, float]:
        w, h, (cx, cy), r = 7.0 * len(texts[k]) + 2, 13.0, centre[k], radii[k]
        if place == "top center":
            return cx - w / 2, cy - r - h, cx + w / 2, cy - r
        if place == "bottom center":
            return cx - w / 2, cy + r, cx + w / 2, cy + r + h
        if place == "middle right":
            return cx + r, cy - h / 2, cx + r + w, cy + h / 2
        return cx - r - w, cy - h / 2, cx - r, cy + h / 2

    def overlap(a: tuple[float, ...], b: tuple[float, ...]) -> float:
        return max(0.0, min(a[2], b[2]) - max(a[0], b[0])) * max(0.0, min(a[3], b[3]) - max(a[1], b[1]))

    ring_boxes = [(cx - r, cy - r, cx + r, cy + r) for (cx, cy), r in zip(centre, radii)]
    placed: list[tuple[float, float, float, float]] = []
    places = []
    for k in range(len(centre)):
        others = ring_boxes[:k] + ring_boxes[k + 1:] + placed
        cost = {p: sum(overlap(box(k, p), o) for o in others) for p in _PLACES}
        best = min(_PLACES, key=lambda p: (cost[p], _PLACES.index(p)))
        places.append(best)
        placed.append(box(k, best))
    return places


def add_layer_path(fig: go.Figure, path: np.ndarray, layer_names: Sequence[str], colour: str = "#444") -> go.Figure:
    """Draw one occurrence's path through the layers (points fitted in the same projection)."""
    path = np.asarray(path, dtype=float)
    fig.add_trace(go.Scatter(
        x=path[:, 0], y=path[:, 1], mode="lines+markers+text", name="path through layers",
        text=[str(i) for i in range(len(path))], textposition="top center", hovertext=_plain_all(layer_names),
        hoverinfo="text", line=dict(color=colour, width=2, dash="dot"), marker=dict(size=6, symbol="diamond"),
    ))
    return fig


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
    shown = [p for p in panels if any(_finite(r.get(p[0])) for r in rows)]
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
            rs = sorted((r for r in rows if r["model"] == model and _finite(r.get(metric))), key=lambda r: r["layer"])
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


def _finite(x: object) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool) and bool(np.isfinite(x))


def mix_weights_bars(
    layer_names: Sequence[str], weights: Sequence[float], gamma: float, layer_accuracy: Sequence[float] | None = None,
    title: str = "",
) -> go.Figure:
    """Scalar-mix weights s_j as bars, each layer's own probe accuracy as a line on a second axis."""
    names = _plain_all(layer_names)
    fig = go.Figure(go.Bar(x=names, y=list(weights), name="s_j (mix weight)", marker_color=PALETTE[0],
                           text=[f"{w:.2f}" for w in weights], textposition="outside"))
    if layer_accuracy is not None:
        fig.add_trace(go.Scatter(x=names, y=list(layer_accuracy), name="probe accuracy of the layer alone",
                                 mode="lines+markers", yaxis="y2", line=dict(color=PALETTE[1])))
    fig.update_layout(
        title=f"{plain(title)} (γ = {gamma:.2f})" if title else f"γ = {gamma:.2f}",
        yaxis=dict(title="s_j", range=[0, 1]),
        yaxis2=dict(title="accuracy", overlaying="y", side="right", range=[0, 1]),
        margin=dict(l=10, r=10, t=40, b=10), height=320, legend=dict(orientation="h", y=-0.2),
    )
    return fig


def attention_heatmap(matrix: np.ndarray, tokens_from: Sequence[str], tokens_to: Sequence[str] | None = None,
                      title: str = "") -> go.Figure:
    """One attention map: rows attend (from), columns are attended to.

    Built in one constructor call with plain dicts (plotly validates it once; this runs on every layer or head
    change), and the weights go as float32 (Plotly's typed arrays: 4 bytes a cell, not 8)."""
    tokens_to = tokens_from if tokens_to is None else tokens_to
    # Duplicate token strings would merge heatmap categories; suffix positions to keep them apart.
    ys = [f"{plain(t)} ·{i}" for i, t in enumerate(tokens_from)]
    xs = [f"{plain(t)} ·{i}" for i, t in enumerate(tokens_to)]
    every = dict(dtick=1) if max(len(xs), len(ys)) <= 80 else {}  # every token labelled while the labels fit
    return go.Figure(dict(
        data=[dict(type="heatmap", z=np.asarray(matrix, dtype=np.float32), x=xs, y=ys, colorscale="Blues", zmin=0,
                   hovertemplate="%{y} → %{x}: %{z:.3f}<extra></extra>")],
        layout=dict(title=dict(text=plain(title)), height=max(300, 16 * len(ys) + 150),
                    margin=dict(l=10, r=10, t=40, b=10), xaxis=every, yaxis=dict(autorange="reversed", **every)),
    ))


def context_shift_heatmap(shifts: dict, title: str = "", z_max: float | None = None) -> go.Figure:
    """Which words shape one occurrence (``shifts``: :class:`ctxmodels.analysis.word_senses.ContextShifts` as a
    dict): layers down (the first at the top), the sentence's words across in their order, each cell the cosine
    distance the occurrence's vector moves in that layer when that word is hidden. The occurrence's own column is
    empty and its label bold. The scale starts at 0 and runs to the largest shift, or ``z_max`` (shared with other
    models' maps)."""
    words, index = shifts["words"], int(shifts["index"])
    z = np.asarray(shifts["shifts"], dtype=float)
    finite = z[np.isfinite(z)]
    top = max(float(finite.max()) if finite.size else 0.0, z_max or 0.0) or 1e-3  # an all-zero map stays pale
    xs = list(range(len(words)))
    names = [f"<b>{plain(w)}</b>" if i == index else plain(w) for i, w in enumerate(words)]
    layers = _plain_all(shifts["layer_names"])
    target, hidden_as = plain(words[index]), plain(shifts["hidden_as"])
    how = "left out" if hidden_as == "left out" else f"read as {hidden_as}"
    hover = [[f"{layers[lay]}: with “{plain(w)}” {how}, “{target}” moves by" for w in words]
             for lay in range(len(layers))]
    return go.Figure(dict(
        data=[dict(type="heatmap", z=np.where(np.isfinite(z), z, None).tolist(), x=xs, y=layers,
                   colorscale="Blues", zmin=0, zmax=top, customdata=hover, hoverongaps=False,
                   hovertemplate="%{customdata} %{z:.3f}<extra></extra>",
                   colorbar=dict(title=dict(text="cosine<br>distance"), thickness=12))],
        layout=dict(
            title=dict(text=plain(title)), height=150 + 34 * len(layers) + 6 * min(max(map(len, words)), 20),
            margin=dict(l=10, r=10, t=40, b=10),
            # no grid: its lines would cross the occurrence's empty column
            xaxis=dict(tickvals=xs, ticktext=names, tickangle=-45 if len(words) > 8 else 0, fixedrange=True,
                       automargin=True, showgrid=False, zeroline=False),
            yaxis=dict(autorange="reversed", type="category", fixedrange=True, automargin=True, showgrid=False),
        ),
    ))


def query_key_view(tokens: Sequence[str], row: int, query: np.ndarray, keys: np.ndarray, products: np.ndarray,
                   weights: np.ndarray, title: str = "") -> go.Figure:
    """How one head weighs the tokens for the token at ``row`` (BertViz's neuron view), in three panels that share
    one row per token: the query (top row) and every token's key, dimension by dimension; the query times each key,
    divided by √d (a row sums to that token's score); and the weights, the softmax of the scores.

    query: [d]; keys, products: [T, d]; weights: [T]. Red is positive, blue negative; each heatmap is centred on 0
    with its own symmetric range. The rows are categories named by their labels (unique: "token ·position"), so the
    hover reads them from the axis and the cells need no text of their own (it runs on every head change)."""
    keys, products = np.asarray(keys, dtype=np.float32), np.asarray(products, dtype=np.float32)
    weights = np.asarray(weights, dtype=float)
    T, d = keys.shape
    names = _plain_all(tokens)
    me = names[row]
    # the query's row first, then a key per token (the query's own token in bold)
    labels = [f"<b>query</b> · {me}"] + [f"<b>{n} ·{j}</b>" if j == row else f"{n} ·{j}" for j, n in enumerate(names)]
    vectors = np.vstack([np.asarray(query, dtype=np.float32)[None, :], keys])
    scores = products.sum(axis=1)

    def limit(a: np.ndarray) -> float:
        return float(np.abs(a).max()) or 1.0

    heat = dict(type="heatmap", x=np.arange(d, dtype=np.int32), y=labels, colorscale="RdBu", reversescale=True,
                zmid=0, showscale=False, hoverongaps=False)
    dims = dict(title=dict(text="dimension"), tickvals=list(range(0, d, max(1, d // 8))), fixedrange=True)
    panel = dict(xref="paper", yref="paper", y=1.0, yanchor="bottom", showarrow=False, font=dict(size=12))
    return go.Figure(dict(
        data=[
            dict(heat, z=vectors, zmin=-limit(vectors), zmax=limit(vectors),
                 hovertemplate="%{y}, dimension %{x}: %{z:.2f}<extra></extra>"),
            dict(heat, z=np.vstack([np.full((1, d), np.nan, dtype=np.float32), products]), zmin=-limit(products),
                 zmax=limit(products), xaxis="x2",
                 hovertemplate=f"{me} → %{{y}}, dimension %{{x}}: q×k/√d %{{z:+.3f}}<extra></extra>"),
            dict(type="bar", x=weights, y=labels[1:], orientation="h", xaxis="x3", marker=dict(color=PALETTE[0]),
                 text=[f"{percent(w)} ({s:+.1f})" for w, s in zip(weights, scores)], textposition="outside",
                 cliponaxis=False, hovertemplate=f"{me} → %{{y}}: weight %{{x:.2%}}<extra></extra>"),
        ],
        layout=dict(
            title=dict(text=plain(title)), height=150 + 17 * (T + 1), margin=dict(l=10, r=70, t=70, b=10),
            xaxis=dict(domain=[0.0, 0.36], **dims), xaxis2=dict(domain=[0.39, 0.75], **dims),
            # each bar is labelled, so the axis needs no ticks (its range leaves room for the labels)
            xaxis3=dict(domain=[0.79, 1.0], range=[0, float(weights.max()) * 1.6 + 0.01], showticklabels=False,
                        showgrid=False, fixedrange=True),
            yaxis=dict(type="category", categoryorder="array", categoryarray=labels, autorange="reversed",
                       automargin=True, fixedrange=True, dtick=1),
            annotations=[dict(panel, x=0.18, text="query and keys"), dict(panel, x=0.57, text="query × key / √d"),
                         dict(panel, x=0.895, text="weight (score)")],
            showlegend=False,
        ),
    ))


POS_NAMES = {"NOUN": "noun", "VERB": "verb", "ADJ": "adjective", "ADV": "adverb", "PROPN": "proper noun"}


def neighbour_pos_bars(kinds: Sequence[dict], nearest: dict[str, str], k: int, title: str = "") -> go.Figure:
    """What one occurrence's nearest reference words are, layer by layer (``kinds``: the rows of
    :func:`ctxmodels.analysis.token_search.neighbour_kinds`): a stacked bar per layer (the first at the top) of the
    ``k`` nearest by part of speech; the part that is the searched word itself hatched. ``nearest``: per layer
    name, the nearest words as text, for the hover."""
    layers = list(dict.fromkeys(r["layer"] for r in kinds))
    names = _plain_all(layers)
    data = []
    for i, pos in enumerate(POS_NAMES):
        colour = PALETTE[i]
        for part, pattern in (("other", ""), ("same", "/")):
            counts = {r["layer"]: int(r[part]) for r in kinds if r["pos"] == pos}
            if not any(counts.values()):
                continue
            what = "the word itself" if part == "same" else "other words"
            hover = [f"{name}: {counts.get(layer, 0)} of {k} are {what}, as a {POS_NAMES[pos]}<br>nearest: "
                     f"{plain(nearest.get(layer, ''))}" for layer, name in zip(layers, names)]
            data.append(dict(type="bar", orientation="h", x=[counts.get(layer, 0) for layer in layers], y=names,
                             name=POS_NAMES[pos], legendgroup=pos, showlegend=part == "other" or not any(
                                 r["other"] for r in kinds if r["pos"] == pos),
                             marker=dict(color=colour, pattern=dict(shape=pattern, fgcolor="white", size=6)),
                             customdata=hover, hovertemplate="%{customdata}<extra></extra>"))
    return go.Figure(dict(
        data=data,
        layout=dict(
            title=dict(text=plain(title)), barmode="stack", height=140 + 34 * len(layers),
            margin=dict(l=10, r=10, t=40, b=10),
            xaxis=dict(title=dict(text=f"the {k} nearest words (hatched: the word itself)"), range=[0, k],
                       fixedrange=True),
            yaxis=dict(autorange="reversed", automargin=True, fixedrange=True),
            legend=dict(orientation="h", y=1.0, yanchor="bottom", x=1.0, xanchor="right"), showlegend=True,
        ),
    ))


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


def dictionary_sense_map(guesses: dict[str, dict]) -> go.Figure:
    """Which dictionary sense one occurrence is nearest in each model and layer (``guesses``: model name -> a dict
    with ``senses``, the sense names, most frequent first; ``layer_names``; ``cosines`` [layers, senses], the
    occurrence's cosine to each sense's average; ``accuracy`` [layers], the share of the references each layer
    reads right; ``nearest`` [layers], the nearest sense's index or None for a tie; ``tagged``, the annotators'
    sense or None).

    The senses are rows (long glosses read best as row labels), shared by the models side by side, each model a
    panel of its layers, each layer under how often it is right. A cell's shade is how far its sense is behind
    the layer's nearest (the nearest darkest); its text is the cosine; the nearest is outlined; the annotators'
    sense is named in bold with a tick. The cells' text gives the values, so there is no colour bar."""
    senses = list(dict.fromkeys(s for g in guesses.values() for s in g["senses"]))
    tagged = {g["senses"][g["tagged"]] for g in guesses.values() if g.get("tagged") is not None}
    rows = [f"<b>✓ {plain(s)}</b>" if s in tagged else plain(s) for s in senses]
    widths = [len(g["layer_names"]) for g in guesses.values()]
    gap = 0.03
    unit = (1.0 - gap * (len(widths) - 1)) / max(sum(widths), 1)
    data, layout, x0 = [], {}, 0.0
    lows = []
    for n, (name, g) in enumerate(guesses.items(), start=1):
        where = [senses.index(s) for s in g["senses"]]
        cos = np.full((len(g["layer_names"]), len(senses)), np.nan)
        cos[:, where] = np.asarray(g["cosines"], dtype=float)
        with np.errstate(invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a layer without a vector: an all-NaN row
            behind = cos - np.nanmax(cos, axis=1, keepdims=True)
        lows.append(float(np.nanmin(behind)) if np.isfinite(behind).any() else 0.0)
        layers = [f"{plain(short_layer_name(layer))}<br>{100 * acc:.0f}%"
                  for layer, acc in zip(g["layer_names"], g["accuracy"])]
        suffix = str(n) if n > 1 else ""
        hover = [[f"{plain(name)}, {plain(g['layer_names'][j])}: cosine {cos[j, i]:.3f} to the average of "
                  f"“{plain(senses[i])}”" for j in range(len(layers))] for i in range(len(senses))]
        data.append(dict(type="heatmap", z=np.where(np.isfinite(behind.T), behind.T, None).tolist(), x=layers,
                         y=rows, text=[[f"{c:.3f}" if np.isfinite(c) else "" for c in row] for row in cos.T],
                         texttemplate="%{text}", textfont=dict(size=10), coloraxis="coloraxis",
                         customdata=hover, hoverongaps=False,
                         hovertemplate="%{customdata}<extra></extra>", xaxis=f"x{suffix}", yaxis="y"))
        nearest = [(j, g["senses"][s]) for j, s in enumerate(g["nearest"]) if s is not None]
        data.append(dict(type="scatter", mode="markers", x=[layers[j] for j, _ in nearest],
                         y=[rows[senses.index(s)] for _, s in nearest], hoverinfo="skip", showlegend=False,
                         marker=dict(symbol="square-open", size=28, color="#d62728", line=dict(width=2)),
                         xaxis=f"x{suffix}", yaxis="y"))
        width = unit * len(layers)
        layout[f"xaxis{suffix}"] = dict(domain=[x0, x0 + width], anchor="y", type="category", side="top",
                                        fixedrange=True, showgrid=False, zeroline=False, tickangle=0,
                                        title=dict(text=f"<b>{plain(name)}</b>", standoff=4))
        x0 += width + gap
    low = min(min(lows, default=0.0), -1e-3)  # a scale of some width even if every layer ties (all cells 0)
    return go.Figure(dict(data=data, layout=dict(
        **layout, height=110 + 40 * len(senses), margin=dict(l=10, r=10, t=10, b=10),
        yaxis=dict(type="category", autorange="reversed", automargin=True, fixedrange=True, showgrid=False,
                   zeroline=False),
        coloraxis=dict(colorscale="Blues", cmin=low, cmax=0, showscale=False),
    )))


def same_word_lines(results: dict[str, dict], word: str, title: str = "") -> go.Figure:
    """One word in two sentences, per model (``results``: model name -> :class:`ctxmodels.analysis.word_senses.
    SameWord` as a dict): the cosine of its two vectors layer by layer (solid, the first layer at the left) and,
    dotted in the same colour, the mean cosine of any two words of the two sentences in that layer."""
    colours = model_colours(list(results))
    target = plain(word)
    data = []
    # a model of one layer (static vectors) last and as a ring, so that its point at 1 shows over the others' first
    for name, r in sorted(results.items(), key=lambda item: len(item[1]["layer_names"]) == 1):
        layers = _plain_all(r["layer_names"])
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


def attention_grid(maps: np.ndarray, max_tokens: int = 64) -> go.Figure:
    """Layer x head overview of small maps ([layers, heads, T, T]) as one tiled heatmap.

    Each map is scaled to its own maximum (so a diffuse head is as readable as a sharp one); long inputs are cut
    to ``max_tokens`` positions. One trace for the whole grid keeps it light even for 12 x 12 heads.
    """
    maps = np.asarray(maps, dtype=np.float32)
    L, H = maps.shape[:2]
    maps = maps[:, :, :max_tokens, :max_tokens]
    T = maps.shape[2]
    gap = max(1, T // 8)
    size = T + gap
    peak = maps.max(axis=(2, 3), keepdims=True)
    scaled = np.divide(maps, peak, out=np.zeros_like(maps), where=peak > 0)
    tiled = np.full((L * size - gap, H * size - gap), np.nan, dtype=np.float32)  # float32: half the bytes
    for i in range(L):
        for j in range(H):
            tiled[i * size: i * size + T, j * size: j * size + T] = scaled[i, j]
    centres = [k * size + (T - 1) / 2 for k in range(max(L, H))]
    fig = go.Figure(dict(
        data=[dict(type="heatmap", z=tiled, colorscale="Blues", showscale=False, zmin=0, zmax=1,
                   hoverinfo="skip")],
        layout=dict(
            height=int(60 + L * min(220, 1100 / H)), margin=dict(l=40, r=10, t=30, b=10),
            xaxis=dict(tickvals=centres[:H], ticktext=[f"H{j + 1}" for j in range(H)], side="top", showgrid=False,
                       zeroline=False, constrain="domain"),
            yaxis=dict(tickvals=centres[:L], ticktext=[f"L{i + 1}" for i in range(L)], autorange="reversed",
                       showgrid=False, zeroline=False, scaleanchor="x", constrain="domain"),
        ),
    ))
    return fig


HEAD_MEASURES = {"to_prev": "previous token", "to_next": "next token", "to_self": "itself", "to_cls": "[CLS]",
                 "to_sep": "[SEP]", "entropy": "spread (entropy)"}


#: the width a page's content has at a laptop's 1280 px with the sidebar open (Plotly sizes heights in px)
NOMINAL_CONTENT_PX = 800


def head_summary_grid(summary, measures: Sequence[str] = tuple(HEAD_MEASURES)) -> go.Figure:
    """Every head at a glance as a few small layer x head heatmaps, one per measure of ``summary`` (the table of
    :func:`ctxmodels.analysis.attention.head_summaries`): where a model's previous-token, [SEP] or broad heads
    are. Shares in 0..1; entropy on its own scale. A few hundred numbers, however many heads.

    The grids sit in rows of three with square cells, and the figure is as tall as such rows are at
    :data:`NOMINAL_CONTENT_PX`: six grids in one row left a strip a few pixels high with blank space around it."""
    L, H = int(summary["layer"].max()), int(summary["head"].max())
    per_row = min(3, len(measures))
    rows = -(-len(measures) // per_row)
    gap, title_px, between_px = 0.04, 34, 76  # between rows: the x tick labels above, the next titles below
    width = (1 - gap * (per_row - 1)) / per_row
    row_px = min(320.0, max(60.0, (NOMINAL_CONTENT_PX - 50) * width * L / H))
    plot_px = rows * row_px + (rows - 1) * between_px
    traces, layout, annotations = [], {}, []
    layers = list(range(1, L + 1, max(1, L // 6)))
    for k, measure in enumerate(measures):
        z = np.full((L, H), np.nan)
        z[summary["layer"].to_numpy() - 1, summary["head"].to_numpy() - 1] = summary[measure].to_numpy(float)
        n, row, col = k + 1, k // per_row, k % per_row
        xname, yname = ("x", "y") if n == 1 else (f"x{n}", f"y{n}")
        x0 = col * (width + gap)
        top = min(1.0, round(1 - row * (row_px + between_px) / plot_px, 6))
        # On a wider page the squares leave the grid narrower than its slot: keep it by its layer labels.
        heads = list(range(1, H + 1, max(1, H // 4)))
        layout[f"xaxis{n if n > 1 else ''}"] = dict(domain=[x0, x0 + width], anchor=yname, showgrid=False,
                                                     tickvals=heads, ticktext=[f"H{h}" for h in heads],
                                                     zeroline=False, constrain="domain", constraintoward="left")
        bottom = max(0.0, round(top - row_px / plot_px, 6))  # the last row ends at 0, not at -5e-17
        layout[f"yaxis{n if n > 1 else ''}"] = dict(domain=[bottom, top], anchor=xname,
                                                     autorange="reversed", showgrid=False, zeroline=False,
                                                     showticklabels=col == 0, scaleanchor=xname, constrain="domain",
                                                     tickvals=layers, ticktext=[f"L{i}" for i in layers])
        if col:  # labels only on the first grid of a row; without this the theme still draws the bare tick marks
            layout[f"yaxis{n if n > 1 else ''}"]["ticks"] = ""
        annotations.append(dict(text=HEAD_MEASURES.get(measure, measure), x=x0, y=top, xref="paper",
                                yref="paper", xanchor="left", yanchor="bottom", showarrow=False))
        share = measure != "entropy"
        traces.append(dict(type="heatmap", z=z, x=list(range(1, H + 1)), y=list(range(1, L + 1)), xaxis=xname,
                           yaxis=yname, colorscale="Blues" if share else "Greens", showscale=False,
                           zmin=0 if share else None, zmax=1 if share else None,
                           hovertemplate=f"layer %{{y}}, head %{{x}}: {measure} %{{z:.2f}}<extra></extra>"))
    layout.update(height=int(plot_px + title_px + 25), margin=dict(l=40, r=10, t=title_px, b=25),
                  annotations=annotations)
    return go.Figure(dict(data=traces, layout=layout))


def attention_lines(matrix: np.ndarray, tokens: Sequence[str], threshold: float = 0.05, title: str = "",
                    bins: int = 5) -> go.Figure:
    """Lines from each token (left) to the tokens it attends to (right); stronger weights draw darker and wider.

    Lines are grouped into ``bins`` weight bands, one trace each (segments separated by gaps), so a long
    sentence gives a handful of traces rather than one per pair.
    """
    m = np.asarray(matrix, dtype=float)
    n = len(tokens)
    y = np.arange(n)[::-1].astype(float)
    rows, cols = np.nonzero(m >= threshold)
    weights = m[rows, cols]
    edges = np.linspace(threshold, max(threshold, float(weights.max(initial=threshold))), bins + 1)
    band = np.clip(np.searchsorted(edges, weights, side="right") - 1, 0, bins - 1)
    traces = []
    for b in range(bins):
        sel = band == b
        if not sel.any():
            continue
        k = int(sel.sum())
        xs = np.tile(np.array([0.0, 1.0, np.nan], dtype=np.float32), k)  # float32: half the bytes of float64
        ys = np.column_stack([y[rows[sel]], y[cols[sel]], np.full(k, np.nan)]).ravel().astype(np.float32)
        w = float(weights[sel].mean())
        traces.append(dict(type="scatter", x=xs, y=ys, mode="lines", hoverinfo="skip", showlegend=False,
                           line=dict(color=f"rgba(31,119,180,{min(1.0, 0.15 + w):.2f})", width=1 + 4 * w)))
    for x, anchor in ((0, "left"), (1, "right")):  # labels outside the lines: left column left, right column right
        traces.append(dict(type="scatter", x=[x] * n, y=y, mode="text", text=_plain_all(tokens),
                           textposition=f"middle {anchor}", hoverinfo="skip", showlegend=False))
    layout = dict(title=dict(text=plain(title)), height=max(300, 18 * n + 80), margin=dict(l=10, r=10, t=40, b=10),
                  xaxis=dict(visible=False, range=[-0.6, 1.6]), yaxis=dict(visible=False))
    return go.Figure(dict(data=traces, layout=layout))


def percent(p: float) -> str:
    """A probability as a readable percentage: one decimal from 1%, two significant digits below, ``<0.001%``."""
    if p >= 0.01:
        return f"{p:.1%}"
    if p >= 1e-5:
        return f"{p * 100:.2g}%"
    return "<0.001%" if p > 0 else "0%"


def fill_bars(predictions: Sequence[dict], title: str = "", truth: str | None = None,
              x_max: float | None = None) -> go.Figure:
    """Top-k predictions of one mask as horizontal bars, best on top; the true word (if any) highlighted.

    The x axis runs from 0 to a little above the largest probability shown, or ``x_max`` where that is larger (the
    largest of several models drawn side by side): not a fixed 0-1, where a 3% guess would be a sliver. Every guess
    keeps its label (one tick per bar, the left margin grows to the longest word) and its probability is written at
    its bar's end at the figure's font size, never shrunk or clipped: the right margin leaves room for it and rows
    are tall enough, also when presentation mode enlarges the fonts (app/kit/plots.py). Of the plotting template only
    its colour cycle travels with the figure (Streamlit styles the chart in the browser; the rest is colour scales
    and per-trace defaults for other kinds of chart): a seventh of the bytes for every keystroke."""
    toks = [p["token"] for p in predictions][::-1]
    probs = [float(p["prob"]) for p in predictions][::-1]
    colours = [PALETTE[1] if truth is not None and t == truth else PALETTE[0] for t in toks]
    top = max(probs + [x_max or 0.0], default=0.0)
    top = top if top > 0 else 1.0
    # ticks with as many decimals as the scale needs: 0-40% by 10%, 0-0.2% by 0.05%
    decimals = max(0, 1 - int(np.floor(np.log10(top * 100))))
    default = pio.templates[pio.templates.default] if pio.templates.default else None
    colorway = list(default.layout.colorway or []) if default is not None else []
    # One constructor with plain dicts: Plotly validates the figure once (a quarter of the time of building it
    # with update_layout; this runs on every keystroke).
    return go.Figure(
        data=[dict(type="bar", x=probs, y=_plain_all(toks), orientation="h", marker=dict(color=colours),
                   text=[percent(p) for p in probs], textposition="outside", cliponaxis=False, constraintext="none",
                   hovertemplate="%{y}: %{text}<extra></extra>")],
        layout=dict(
            template=dict(layout=dict(colorway=colorway)) if colorway else {},
            title=dict(text=plain(title)), height=80 + 34 * len(toks), margin=dict(l=10, r=70, t=40, b=10),
            xaxis=dict(title=dict(text="probability"), range=[0, top * 1.12], tickformat=f".{decimals}~%",
                       fixedrange=True, rangemode="tozero"),
            yaxis=dict(type="category", dtick=1, automargin=True, fixedrange=True),
        ),
    )


def layer_guess_grid(result: dict, title: str = "") -> go.Figure:
    """What the masked-LM head reads from every layer at one blank (``result``: :class:`ctxmodels.analysis.blanks.
    LayerGuesses` as a dict): a row per layer (the first at the top), its best guesses left to right, each cell
    the guess and its probability, shaded by it; the model's own answer (the last layer's first guess) is
    outlined wherever it appears, and its rank in each layer is written at the row's end."""
    layers = _plain_all(short_layer_name(n) for n in result["layer_names"])
    n = max((len(row) for row in result["top"]), default=0)
    columns = [f"guess {j + 1}" for j in range(n)]
    probs = [[row[j]["prob"] if j < len(row) else None for j in range(n)] for row in result["top"]]
    text = [[f"{plain(row[j]['token'])}<br>{percent(row[j]['prob'])}" if j < len(row) else "" for j in range(n)]
            for row in result["top"]]
    answer = result["answer"]
    hits = [(columns[j], layers[i]) for i, row in enumerate(result["top"]) for j, g in enumerate(row)
            if g["token"] == answer]
    top = max((p for row in probs for p in row if p is not None), default=0.0) or 1.0
    ranks = [dict(x=1.0, y=name, xref="paper", yref="y", xanchor="left", showarrow=False, text=f"#{rank:,}",
                  font=dict(size=11)) for name, rank in zip(layers, result["answer_ranks"])]
    return go.Figure(dict(
        data=[dict(type="heatmap", z=probs, x=columns, y=layers, text=text, texttemplate="%{text}",
                   textfont=dict(size=10), colorscale="Blues", zmin=0, zmax=top, showscale=False, hoverongaps=False,
                   hovertemplate="%{y}, guess %{x} %{text}<extra></extra>"),
              dict(type="scatter", mode="markers", x=[c for c, _ in hits], y=[r for _, r in hits], hoverinfo="skip",
                   showlegend=False, marker=dict(symbol="square-open", size=34, color=PALETTE[1], line=dict(width=2)))],
        layout=dict(
            title=dict(text=f"{plain(title)}<br><sup>best first; at the right, the rank of “{plain(answer)}”</sup>"),
            height=90 + 40 * len(layers), margin=dict(l=10, r=60, t=56, b=10),
            # the guesses run best first from the left: the columns need no labels
            xaxis=dict(type="category", showticklabels=False, ticks="", fixedrange=True, showgrid=False,
                       zeroline=False),
            yaxis=dict(type="category", autorange="reversed", automargin=True, fixedrange=True, showgrid=False,
                       zeroline=False),
            annotations=ranks,
        ),
    ))


def shared_bar_scale(bar_sets: Sequence[Sequence[Sequence[dict]]]) -> list[float]:
    """For each blank (or hidden piece), the largest probability any model gives it (``bar_sets``: per model, per
    blank, the guesses with their "prob"): as ``x_max`` of :func:`fill_bars`, the models' bars side by side share
    one scale, so a 2% guess is not drawn as long as another model's 8% one."""
    blanks = max((len(bars) for bars in bar_sets), default=0)
    return [max((float(p["prob"]) for bars in bar_sets if i < len(bars) for p in bars[i]), default=0.0)
            for i in range(blanks)]


SUPERSCRIPTS = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def times(ratio: float) -> str:
    """A ratio of probabilities as a reader says it: ×2.5 (more likely), ÷3.1 (less likely), ×1."""
    if not np.isfinite(ratio) or ratio <= 0:
        return "÷∞" if ratio == 0 else "×∞"
    if abs(np.log2(ratio)) < 0.01:
        return "×1"
    factor = ratio if ratio > 1 else 1 / ratio
    whole = abs(factor - round(factor)) < 1e-9  # the axis' ticks: ÷2, ÷4
    shown = f"{factor:,.0f}" if whole or factor >= 9.95 else f"{factor:.1f}"
    if factor >= 1e5:  # ×270,000,000 is read digit by digit; ×2.7·10⁸ at a glance
        mantissa, exponent = f"{factor:.1e}".split("e")
        shown = f"{mantissa}·10{str(int(exponent)).translate(SUPERSCRIPTS)}"
    return ("×" if ratio > 1 else "÷") + shown


EFFECT_MAX_LOG2 = 10  # bars are cut at ×1024 / ÷1024 (their labels keep the true factor)


def effect_log2(p: float, prob: float) -> float:
    """log2 of how many times more likely an answer is with a word hidden (``p``) than with all in view (``prob``),
    cut at ±:data:`EFFECT_MAX_LOG2`."""
    ratio = p / prob if prob > 0 else float("inf")
    return float(np.clip(np.log2(max(ratio, 1e-300)), -EFFECT_MAX_LOG2, EFFECT_MAX_LOG2))


def _effect_logs(result: dict) -> list[float | None]:
    """The bars of :func:`word_effect_bars` (a :class:`~ctxmodels.analysis.blanks.WordEffects` dict) or of
    :func:`attribution_bars` (a :class:`~ctxmodels.analysis.blanks.WordAttributions` dict): the log2 of the factor
    by which the answer is more likely without the word (hidden, or without its share), None where no bar."""
    if "scores" in result:  # a share of log P in nats: without it, P is divided by e^score
        return [None if s is None else float(np.clip(-s / np.log(2), -EFFECT_MAX_LOG2, EFFECT_MAX_LOG2))
                for s in result["scores"]]
    return [None if p is None else effect_log2(p, float(result["prob"])) for p in result["hidden_probs"]]


def shared_effect_scale(effect_sets: Sequence[dict]) -> float:
    """The longest bar (in powers of two) that any of ``effect_sets`` (the models' answers at one blank, by either
    method) draws: as ``x_max`` of :func:`word_effect_bars` or :func:`attribution_bars`, the models' charts side by
    side share one scale."""
    return max((abs(v) for e in effect_sets for v in _effect_logs(e) if v is not None), default=0.0)


def _hiding_bars(effects: dict) -> dict:
    """The bars of :func:`word_effect_bars`: x (log2 factors), text, hover and colour per word."""
    words, prob = effects["words"], float(effects["prob"])
    tops = effects.get("top_when_hidden") or [None] * len(words)
    answer = plain(effects["answer"])
    bars: dict = dict(x=_effect_logs(effects), text=[], hover=[], colour=[])
    for word, p, top in zip(words, effects["hidden_probs"], tops):
        if p is None:
            bars["text"].append("")
            bars["hover"].append(f"{plain(word)}: not hidden")
            bars["colour"].append(PALETTE[9])
            continue
        ratio = p / prob if prob > 0 else float("inf")
        then = f"<br>first guess then: {plain(top)}" if top is not None else ""
        bars["text"].append(times(ratio))
        bars["hover"].append(f"with “{plain(word)}” hidden: P({answer}) {percent(prob)} → {percent(p)} "
                             f"({times(ratio)}){then}")
        bars["colour"].append(PALETTE[0] if ratio < 1 else PALETTE[3])
    return bars


def _gradient_bars(result: dict) -> dict:
    """The bars of :func:`attribution_bars`: x (log2 factors), text, hover and colour per word."""
    answer = plain(result["answer"])
    bars: dict = dict(x=_effect_logs(result), text=[], hover=[], colour=[])
    for word, score, v in zip(result["words"], result["scores"], bars["x"]):
        if score is None:
            bars["text"].append("")
            bars["hover"].append(f"{plain(word)}: not scored")
            bars["colour"].append(PALETTE[9])
            continue
        ratio = float(np.exp(np.clip(-score, -700.0, 700.0)))  # P without the word's share, against P
        bars["text"].append(times(ratio))
        bars["hover"].append(f"“{plain(word)}”: {score:+.2f} nats of log P({answer}), a factor of {times(1 / ratio)}")
        bars["colour"].append(PALETTE[0] if v < 0 else PALETTE[3])
    return bars


def _word_rows(words: Sequence[str], scored: Sequence) -> list[str]:
    """The rows' names: each word as typed, in italics where it has no bar (a blank, the hidden word)."""
    return [plain(w) if v is not None else f"<i>{plain(w)}</i>" for w, v in zip(words, scored)]


def word_effect_bars(effects: dict, title: str = "", x_max: float | None = None) -> go.Figure:
    """Which words an answer rests on (``effects``: :class:`ctxmodels.analysis.fill_in.WordEffects` as a dict), one
    bar per word in the sentence's order, top to bottom: how many times less (÷, to the left) or more (×, to the
    right) likely the answer becomes when that word is hidden. The axis is logarithmic in the factor, so ÷4 is as
    long as ×4; it is symmetric, at least ÷2 to ×2, or ±``x_max`` (in powers of two) to share a scale with other
    models. A word not hidden (a blank, the hidden word itself) keeps its row without a bar."""
    return _factor_bars([_hiding_bars(effects)], _word_rows(effects["words"], effects["hidden_probs"]),
                        f"P({plain(effects['answer'])}) with the word hidden", title, x_max)


def attribution_bars(result: dict, title: str = "", x_max: float | None = None) -> go.Figure:
    """Which words an answer rests on by integrated gradients (``result``: :class:`ctxmodels.analysis.blanks.
    WordAttributions` as a dict), drawn as :func:`word_effect_bars` draws hiding, so the two methods compare: one bar
    per word, how many times less (÷, to the left) or more (×, to the right) likely the answer is without the
    word's share of its log-probability (e^-score). A word without a score (a blank, the hidden word) keeps its row
    without a bar."""
    return _factor_bars([_gradient_bars(result)], _word_rows(result["words"], result["scores"]),
                        f"P({plain(result['answer'])}) without the word's share", title, x_max)


def both_methods_bars(effects: dict, result: dict, title: str = "", x_max: float | None = None) -> go.Figure:
    """:func:`word_effect_bars` and :func:`attribution_bars` of one answer in one chart, two bars per word (hiding
    plain, gradients hatched, with a legend): where they differ, the words act together."""
    hiding = dict(_hiding_bars(effects), name="hiding the word")
    gradients = dict(_gradient_bars(result), name="its share (gradients)", pattern="/")
    return _factor_bars([hiding, gradients], _word_rows(effects["words"], effects["hidden_probs"]),
                        f"P({plain(effects['answer'])}) without the word", title, x_max)


def _factor_bars(series: Sequence[dict], names: Sequence[str], axis_title: str, title: str,
                 x_max: float | None) -> go.Figure:
    """Horizontal bars, one per row (``names``, already escaped, top to bottom) for each of ``series`` (x: a factor's
    log2, None for no bar; text, hover, colour per row; name and pattern where there are several), on a symmetric
    axis labelled ÷4 … ×4: at least ÷2 to ×2, or ±``x_max``."""
    span = max([abs(v) for bars in series for v in bars["x"] if v is not None] + [1.0, x_max or 0.0])
    ticks = list(range(-int(np.ceil(span)), int(np.ceil(span)) + 1))
    step = max(1, int(np.ceil(len(ticks) / 9)))  # at most about nine labels on the axis
    ticks = [t for t in ticks if t % step == 0]
    rows = list(range(len(names)))
    several = len(series) > 1
    return go.Figure(
        data=[dict(type="bar", x=list(bars["x"]), y=rows, orientation="h", name=bars.get("name", ""),
                   marker=dict(color=list(bars["colour"]), pattern=dict(shape=bars.get("pattern", ""))),
                   text=list(bars["text"]), textposition="outside", cliponaxis=False, constraintext="none",
                   customdata=list(bars["hover"]), hovertemplate="%{customdata}<extra></extra>")
              for bars in series],
        layout=dict(
            title=dict(text=plain(title)), height=90 + (40 if several else 26) * len(names) + (30 if several else 0),
            margin=dict(l=10, r=50, t=40, b=10), barmode="group",
            xaxis=dict(title=dict(text=axis_title), range=[-span * 1.2, span * 1.2], tickvals=ticks,
                       ticktext=[times(2.0 ** t) for t in ticks], zeroline=True, zerolinecolor="#888",
                       zerolinewidth=1, fixedrange=True),
            yaxis=dict(tickvals=rows, ticktext=list(names), autorange="reversed", automargin=True, fixedrange=True),
            showlegend=several, legend=dict(orientation="h", y=-0.25 if several else None, x=0),
        ),
    )


def blank_change_bars(change: dict, title: str = "", x_max: float | None = None) -> go.Figure:
    """How the guesses at a blank move from sentence A to sentence B (``change``: :class:`ctxmodels.analysis.
    blanks.BlankChange` as a dict), one bar per word, those that gained most in B at the top: how many times more
    (×, to the right) or less (÷, to the left) likely the word is in B. The axis is logarithmic in the factor and
    symmetric, at least ÷2 to ×2, or ±``x_max`` (in powers of two) to share a scale with other models."""
    words = change["words"]
    logs = [effect_log2(b, a) for a, b in zip(change["prob_a"], change["prob_b"])]
    texts = [times(b / a) if a > 0 else "" for a, b in zip(change["prob_a"], change["prob_b"])]
    hovers = [f"{plain(w)}: {percent(a)} in A → {percent(b)} in B ({t})"
              for w, a, b, t in zip(words, change["prob_a"], change["prob_b"], texts)]
    colours = [PALETTE[3] if v > 0 else PALETTE[0] for v in logs]
    return _factor_bars([dict(x=logs, text=texts, hover=hovers, colour=colours)], _plain_all(words),
                        "P(word) in B against A", title, x_max)


def loss_chart(records: Sequence[dict], title: str = "training loss") -> go.Figure:
    """Training loss over steps from metrics.jsonl records (other records, e.g. evaluations, are skipped)."""
    train = [r for r in records if "loss" in r]
    fig = go.Figure(go.Scatter(x=[r["step"] for r in train], y=[r["loss"] for r in train], mode="lines",
                               name="train loss"))
    fig.update_layout(title=plain(title), xaxis_title="step", yaxis_title="loss", height=300,
                      margin=dict(l=10, r=10, t=40, b=10))
    return fig


def shared_ranges(coord_sets: Sequence[np.ndarray], pad: float = 0.06, margin_px: float = 0.0
                  ) -> tuple[list[float], ...] | None:
    """The axis ranges (x, y and, for 3-D coordinates, z) that hold every finite point of every set (for panels
    fitted jointly), or None. ``pad``: the room beyond the points, as a share of their span; ``margin_px``: at
    least this many px of it in a panel of :data:`PANEL_PLOT_PX` (a shared point's ring at the edge must not be
    cut)."""
    pts = [np.asarray(c, dtype=float) for c in coord_sets if len(c)]
    if not pts:
        return None
    allp = np.concatenate(pts)
    allp = allp[np.isfinite(allp).all(axis=1)]
    if len(allp) == 0:
        return None
    lo, hi = allp.min(axis=0), allp.max(axis=0)
    # An axis along which the points do not spread (two points, or one, from a PCA) has a span of rounding noise
    # (1e-31): it takes the other axes' widest span, or 1, so the points sit in the middle rather than on an edge.
    widest = float(np.max(hi - lo))
    flat = ((hi - lo) <= 1e-9 * max(widest, float(np.max(np.abs(allp)))) if widest > 0
            else np.ones(len(lo), dtype=bool))
    span = np.where(flat, widest if widest > 0 and not flat.all() else 1.0, hi - lo)
    px = np.resize(np.array(PANEL_PLOT_PX, dtype=float), len(lo))  # depth: as wide as the panel
    pad = np.maximum(pad, margin_px / np.maximum(px - 2 * margin_px, 1.0))  # margin px of the padded width
    mid = (lo + hi) / 2
    lo, hi = np.where(flat, mid - span / 2, lo), np.where(flat, mid + span / 2, hi)
    lo, hi = lo - pad * span, hi + pad * span
    return tuple([float(a), float(b)] for a, b in zip(lo, hi))


# -- what fine-tuning changes ----------------------------------------------------------------------------------

BEFORE_AFTER = ("before", "after")


def _before_after_rows(table, before: str, after: str) -> list[dict]:
    """Rows for :func:`layer_panels` from a fine-tuning comparison's per-layer table: one "model" per side."""
    rows = []
    for r in table.to_dict("records"):
        base = {"layer": int(r["layer"]), "layer_name": r["layer_name"]}
        rows.append({**base, "model": f"before: {before}", "knn": r.get("knn_before"),
                     "silhouette": r.get("silhouette_before")})
        rows.append({**base, "model": f"after: {after}", "knn": r.get("knn_after"),
                     "silhouette": r.get("silhouette_after")})
    return rows


def representation_change(table, before: str, after: str) -> go.Figure:
    """How similar each layer stays through fine-tuning: linear CKA and the mean cosine of a word before and after,
    per layer (``table``: :class:`ctxmodels.analysis.finetuning.FinetuneComparison` ``.layers``)."""
    name = f"{before} → {after}"
    rows = [{"model": name, "layer": int(r["layer"]), "layer_name": r["layer_name"], "cka": r["cka"],
             "cosine": r["cosine"]} for r in table.to_dict("records")]
    fig = layer_panels(rows, [("cka", "linear CKA, before vs after", "CKA (1 = unchanged)", {"unchanged": 1.0}),
                              ("cosine", "a word's cosine, before vs after", "mean cosine", {"unchanged": 1.0})],
                       colours={name: PALETTE[0]})
    _layer_ticks(fig, table)
    return fig


def class_separation(table, before: str, after: str, majority: float | None = None) -> go.Figure:
    """How well the task's labels separate in each layer, before and after: leave-one-out 1-NN accuracy (with the
    majority label's share as the line to beat) and the silhouette of the labels."""
    rows = _before_after_rows(table, before, after)
    base = {"majority label": float(majority)} if majority is not None and _finite(majority) else None
    colours = {rows[0]["model"]: PALETTE[0], rows[1]["model"]: PALETTE[1]} if rows else None
    fig = layer_panels(rows, [("knn", "1-nearest-neighbour accuracy of the labels", "accuracy", base),
                              ("silhouette", "silhouette of the labels", "silhouette (cosine)", None)],
                       colours=colours)
    _layer_ticks(fig, table)
    return fig


def _layer_ticks(fig: go.Figure, table) -> None:
    """Layers named in words on every x axis (embeddings, layer 1, …), not numbered."""
    names = [plain(n) for n in table["layer_name"]]
    fig.update_xaxes(tickvals=list(range(len(names))), ticktext=names, title=None)


def head_change_heatmap(changes: np.ndarray, title: str = "", selected: tuple[int, int] | None = None) -> go.Figure:
    """Layers x heads: how much each head's attention changed (mean Jensen–Shannon divergence, 0 to 1), layer 1
    at the top; ``selected`` (layer, head), numbered from 1, is outlined."""
    changes = np.asarray(changes, dtype=float)
    L, H = changes.shape
    xs = [f"head {h + 1}" for h in range(H)]
    ys = [f"layer {i + 1}" for i in range(L)]
    shapes = []
    if selected is not None:
        li, hi = selected[0] - 1, selected[1] - 1
        shapes.append(dict(type="rect", x0=hi - 0.5, x1=hi + 0.5, y0=li - 0.5, y1=li + 0.5, xref="x", yref="y",
                           line=dict(color="#d62728", width=3)))
    return go.Figure(dict(
        data=[dict(type="heatmap", z=changes, x=list(range(H)), y=list(range(L)), colorscale="Reds", zmin=0,
                   text=[[f"{ys[i]}, {xs[h]}" for h in range(H)] for i in range(L)],
                   colorbar=dict(title=dict(text="JS div.")),
                   hovertemplate="%{text}: %{z:.4f}<extra></extra>")],
        layout=dict(title=dict(text=plain(title)), height=max(260, 60 + 36 * L), margin=dict(l=10, r=10, t=40, b=10),
                    shapes=shapes,
                    xaxis=dict(tickvals=list(range(H)), ticktext=xs),
                    yaxis=dict(tickvals=list(range(L)), ticktext=ys, autorange="reversed")),
    ))
