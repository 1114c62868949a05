"""The scatter of projected occurrences that Word senses, Models and What fine-tuning changes draw (in the app
and from :mod:`ctxmodels.viz`): one trace per
sense, points that share one vector drawn as a ringed sunflower, a search's occurrences ringed, axes shared by
panels fitted jointly. Pure (no Streamlit).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from ctxmodels.viz.style import NEUTRAL, UNLABELLED, plain, sense_colours, wrapped_title

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
    point_labels: Mapping[int, str] | None = None,
    focus: Sequence[int] = (),
    focus_name: str = "",
    picked: int | None = None,
) -> go.Figure:
    """Scatter of projected occurrences (2-D or 3-D), one trace per sense so the legend toggles senses.

    ``marked``: occurrences ringed in black on top of their dots (those a search found), one more legend entry
    named ``marked_name``.

    ``customdata`` holds each point's occurrence index, so a click can be mapped back to the occurrence. From
    :data:`WEBGL_FROM` points on, 2-D traces are drawn with WebGL (``scattergl``): SVG slows panning and hovering
    down to a crawl at a few thousand points, and the markers shrink so that the crowd stays readable.
    ``ranges`` (x, y and for 3-D z, as :func:`shared_ranges` gives them) fixes the axes, so that panels fitted
    jointly share them.

    The Embedding Projector's tools: ``point_labels`` writes a short text beside those occurrences (a few, or it is a
    wall of text); ``focus`` (an occurrence, then its neighbours) draws the others faded (in 3-D, small) and the
    first as a star named ``focus_name``; ``picked`` (the clicked occurrence) gets a red ring.
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
    # In 3-D a point that occurrences of several senses share stays one point (no sunflower): drawn in one sense's
    # colour it would claim that sense, so its dots are drawn at size 0 and the ring's neutral dot stands for all of
    # them. Plotly sizes a 3-D legend entry by its trace's mean size, so each sense's entry is then a trace of its
    # own: one undrawn (NaN) dot of the usual size, in the sense's legend group (a click still hides the sense).
    shared = np.zeros(len(coords), dtype=bool)
    if three_d:
        for st in stacks:
            shared[st] = len(set(names[st].tolist())) > 1
    for name in sorted(set(names)):
        idx = np.flatnonzero(names == name)
        trace = dict(
            type=kind, name=plain(name), mode="markers", customdata=idx,
            text=text[idx], x=coords[idx, 0], y=coords[idx, 1],
            hovertemplate="%{text}<extra>" + plain(name) + "</extra>",
            # opacity: Plotly draws markers with sizes per point ("bubbles") at 0.7 unless told
            marker=dict(size=dot_sizes[idx] if spread else np.where(shared[idx], 0, marker_size) if shared.any()
                        else marker_size, color=colours.get(name, "#333"), line=outline, opacity=1),
        )
        if len(focus):
            _fade(trace["marker"], np.isin(idx, np.asarray(focus, dtype=int)), three_d)
        if three_d:
            trace["z"] = coords[idx, 2]
        if shared.any() or len(focus):  # a faded legend dot would read as a faded sense: an undrawn twin instead
            trace.update(legendgroup=plain(name), showlegend=False)
            traces.append(dict(type=kind, name=plain(name), mode="markers", x=[np.nan], y=[np.nan],
                               **({"z": [np.nan]} if three_d else {}), legendgroup=plain(name), hoverinfo="skip",
                               marker=dict(size=marker_size, color=colours.get(name, "#333"), opacity=1)))
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
    if point_labels:  # a shared point's occurrences would write their labels on top of each other: its ring speaks
        in_stack = {i for st in stacks for i in st}
        point_labels = {i: t for i, t in point_labels.items() if i not in in_stack}
    panel = None if three_d else ranges or shared_ranges([coords])
    traces += _tool_traces(kind, coords, text, marker_size, point_labels, focus, focus_name, picked, panel)
    axis = dict(showticklabels=False, title=None, zeroline=False)
    fixed = [dict(axis, range=r, autorange=False) for r in ranges] if ranges is not None else [axis] * 3
    xaxis, yaxis = (axis, axis) if three_d else fixed[:2]
    # One constructor call with plain dicts: plotly validates it once (adding traces one by one and updating
    # the layout afterwards is 3-4x slower, and this runs on every redraw).
    title_text, title_lines = wrapped_title(title)
    # constant: the legend's dots keep their size when a sunflower's dots are smaller
    legend, below = dict(title=dict(text=plain(legend_title)), itemsizing="constant"), 0
    entries = [plain(t["name"]) for t in traces if t.get("showlegend", True)]
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


FADED = 0.12  # the opacity of the occurrences outside a focus
PICKED = "#d62728"  # the ring around a clicked occurrence


def _fade(marker: dict, inside: np.ndarray, three_d: bool) -> None:
    """Fade the dots outside a focus (in place): WebGL and SVG take an opacity per point, a 3-D trace does not, so
    there they shrink to a speck instead."""
    if three_d:
        marker["size"] = np.where(inside, marker["size"], 2)
    else:
        marker["opacity"] = np.where(inside, 1.0, FADED)


def _tool_traces(kind: str, coords: np.ndarray, text: np.ndarray, size: int, point_labels: Mapping[int, str] | None,
                 focus: Sequence[int], focus_name: str, picked: int | None,
                 ranges: tuple[Sequence[float], ...] | None) -> list[dict]:
    """The Projector's additions on top of the dots: a focus' star, a clicked occurrence's ring, the labels (in 2-D
    each on the side of its dot that keeps it off the others, :func:`label_layout`; one that fits nowhere is left to
    the hover)."""
    three_d = coords.shape[1] == 3
    out = []

    def at(idx: Sequence[int], **trace) -> dict:
        idx = np.asarray(idx, dtype=int)
        placed = dict(type=kind, x=coords[idx, 0], y=coords[idx, 1], customdata=idx, **trace)
        if three_d:
            placed["z"] = coords[idx, 2]
        return placed

    if len(focus):
        out.append(at(focus[:1], name=plain(focus_name) or "the chosen occurrence", mode="markers",
                      text=text[focus[:1]], hovertemplate="%{text}<extra></extra>",
                      marker=dict(symbol="diamond" if three_d else "star", size=size + 9, color="#111",
                                  line=dict(width=1, color="white"))))
    if picked is not None and 0 <= picked < len(coords):
        out.append(at([picked], name="the clicked occurrence", mode="markers", hoverinfo="skip", showlegend=False,
                      marker=dict(symbol="circle-open", size=size + 14, color=PICKED, line=dict(width=3))))
    idx = [i for i in (point_labels or {}) if 0 <= i < len(coords) and np.isfinite(coords[i]).all()]
    places = ["top center"] * len(idx)
    if idx and ranges is not None:
        layout = label_layout(ranges[:2], coords[idx, :2], [size + 4] * len(idx), [point_labels[i] for i in idx])
        idx, places = [i for i, (_, ok) in zip(idx, layout) if ok], [p for p, ok in layout if ok]
    if idx:
        # SVG text (WebGL text needs fonts the page may not serve); never over the plot's edge
        out.append(dict(at(idx, name="labels", mode="text", text=[plain(point_labels[i]) for i in idx],
                           textposition=places, textfont=dict(size=11), hoverinfo="skip", showlegend=False),
                        type="scatter3d" if three_d else "scatter", **({} if three_d else {"cliponaxis": False})))
    return out


def word_axis(fig: go.Figure, word_a: str, word_b: str) -> go.Figure:
    """Name a custom axis' ends (``ctxmodels.analysis.projector``): the x axis runs from ``word_a`` at 0 to ``word_b``
    at 1, each end marked with a dotted line; up is how else they differ (PCA)."""
    a, b = plain(word_a), plain(word_b)
    ticks = dict(showticklabels=True, tickvals=[0, 1], ticktext=[f"<b>{a}</b>", f"<b>{b}</b>"])
    if any(t.type == "scatter3d" for t in fig.data):
        fig.update_scenes(xaxis=dict(ticks, title=dict(text=f"{a} → {b}")))
        return fig
    fig.update_xaxes(ticks, automargin=True, title=dict(text=f"from {a} (0) to {b} (1)", standoff=2))
    fig.update_yaxes(automargin=True, title=dict(text="how else they differ (PCA)", font=dict(size=11)))
    for x in (0, 1):
        fig.add_vline(x=x, line=dict(dash="dot", width=1, color="#888"))
    return fig


SPREAD_MAX_PX = 16  # the largest sunflower's radius
CROWDED_RINGS = 12  # beyond this many shared points the rings are drawn smaller, thinner and lighter
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
        ring = 14 + 4 * np.log2(len(st))
        if len(stacks) > CROWDED_RINGS:  # a heap of rings (a BERT's input layer: one per word and position)
            ring = 8 + 3 * np.log2(len(st))
        sizes.append(min(RING_MAX_PX, max(ring, 2 * spread + 6)))
        counts.append(f"×{len(st)}")
        hovers.append(f"<b>{len(st)} occurrences share this point</b> (the same vector)<br>{listed}")
    # customdata: a click on the ring picks the stack's first occurrence, as a click on a point would.
    trace = dict(type="scatter", name="shared points", mode="markers+text", x=centres[:, 0], y=centres[:, 1],
                 text=counts, customdata=[st[0] for st in stacks], hovertext=hovers,
                 hovertemplate="%{hovertext}<extra></extra>",
                 marker=dict(size=sizes, symbol="circle-open", color="#222" if len(stacks) <= CROWDED_RINGS
                             else "rgba(34,34,34,0.45)", line=dict(width=2 if len(stacks) <= CROWDED_RINGS else 1)),
                 showlegend=True)
    if centres.shape[1] == 3:  # a turning cloud has no fixed place to keep a label off: each goes above its ring
        # a filled grey dot, no sense's colour: the point stands for every occurrence, whatever its sense
        return dict(trace, type="scatter3d", z=centres[:, 2], textposition="top center",
                    marker=dict(size=[max(8.0, s / 2) for s in sizes], symbol="circle", color=NEUTRAL,
                                line=dict(width=2, color="#222")))
    # cliponaxis off: a count above a ring at the top edge is drawn whole, not cut by the plot's edge; a count that
    # would land on another count is left to the ring's hover (rings packed tight wrote unreadable heaps of counts)
    layout = label_layout(ranges, centres, sizes, counts)
    return dict(trace, text=[t if drawn else "" for t, (_, drawn) in zip(counts, layout)],
                textposition=[place for place, _ in layout], cliponaxis=False)


#: the plot area of a half-width Word senses panel at a laptop's width, in px (where labels would collide)
PANEL_PLOT_PX = (330, 370)
_PLACES = ("top center", "middle right", "bottom center", "middle left")


def label_places(ranges: tuple[Sequence[float], Sequence[float]], rings: np.ndarray, sizes: Sequence[float],
                 texts: Sequence[str], plot_px: tuple[int, int] = PANEL_PLOT_PX) -> list[str]:
    """Where each ring's label goes (:func:`label_layout`'s places)."""
    return [place for place, _ in label_layout(ranges, rings, sizes, texts, plot_px)]


def label_layout(ranges: tuple[Sequence[float], Sequence[float]], rings: np.ndarray, sizes: Sequence[float],
                 texts: Sequence[str], plot_px: tuple[int, int] = PANEL_PLOT_PX) -> list[tuple[str, bool]]:
    """For each ring's label (rings in order of preference), a Plotly ``textposition`` that keeps it off the other
    rings, the labels placed before it and the plot's edges, where one of four places around its ring does, else
    the place that overlaps least; and whether it is clear (on no label placed before it and inside the plot: a
    label that is not is better left out). Plotly never moves a label itself: rings a few pixels apart wrote their
    counts over each other's rings. ``ranges``: the x and y axis ranges; sizes are ring diameters in px. The pixel
    scale is estimated for a panel of ``plot_px``."""
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

    def outside(b: tuple[float, ...]) -> float:  # the label's area beyond the plot's edges, where it is cut off
        inside = max(0.0, min(b[2], plot_px[0]) - max(b[0], 0.0)) * max(0.0, min(b[3], plot_px[1]) - max(b[1], 0.0))
        return (b[2] - b[0]) * (b[3] - b[1]) - inside

    ring_boxes = [(cx - r, cy - r, cx + r, cy + r) for (cx, cy), r in zip(centre, radii)]
    placed: list[tuple[float, float, float, float]] = []
    places = []
    for k in range(len(centre)):
        others = ring_boxes[:k] + ring_boxes[k + 1:] + placed
        cost = {p: sum(overlap(box(k, p), o) for o in others) + 2 * outside(box(k, p)) for p in _PLACES}
        best = min(_PLACES, key=lambda p: (cost[p], _PLACES.index(p)))
        clear = outside(box(k, best)) == 0 and not any(overlap(box(k, best), o) for o in placed)
        places.append((best, clear))
        if clear:
            placed.append(box(k, best))
    return places


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


def preview_scatter(preview: dict, word: str) -> go.Figure:
    """A model in training: one word's occurrences in its top layer (PCA) at the last checkpoint (``preview``: the
    coordinates, sense labels, hover text and layer name the app's Models page computes)."""
    return sense_scatter(preview["coords"], preview["labels"], preview["hover"], marker_size=7,
                         title=f"{word}: {preview['layer']}, PCA, at the last checkpoint")
