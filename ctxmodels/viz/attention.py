"""The attention views: every head at a glance, one head's lines, and how its queries and keys give its
weights (BertViz's neuron view). Pure (no Streamlit).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from ctxmodels.viz.style import PALETTE, percent, plain, plain_all


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
    names = plain_all(tokens)
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
        traces.append(dict(type="scatter", x=[x] * n, y=y, mode="text", text=plain_all(tokens),
                           textposition=f"middle {anchor}", hoverinfo="skip", showlegend=False))
    layout = dict(title=dict(text=plain(title)), height=max(300, 18 * n + 80), margin=dict(l=10, r=10, t=40, b=10),
                  xaxis=dict(visible=False, range=[-0.6, 1.6]), yaxis=dict(visible=False))
    return go.Figure(dict(data=traces, layout=layout))
