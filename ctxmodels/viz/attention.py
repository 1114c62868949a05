"""The attention views: every head at a glance, one head's lines, and how its queries and keys give its
weights (BertViz's neuron view). Pure (no Streamlit).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from ctxmodels.analysis import attention as att
from ctxmodels.viz.models import Model, as_model
from ctxmodels.viz.style import PALETTE, attention_heatmap, percent, plain, plain_all


def query_key_view(tokens: Sequence[str], row: int, query: np.ndarray, keys: np.ndarray, products: np.ndarray,
                   weights: np.ndarray, title: str = "") -> go.Figure:
    """How one head weighs the tokens for the token at ``row`` (BertViz's neuron view), in three panels that share
    one row per token: the query (top row) and every token's key, dimension by dimension; the query times each key,
    divided by √d (a row sums to that token's score); and the weights, the softmax of the scores.

    query: [d]; keys, products: [T, d]; weights: [T]. Red is positive, blue negative; each heatmap is centred on 0
    with its own symmetric range. A row of NaN products is a key the head may not look at (a GPT's later words,
    hidden by its causal mask): left blank, its weight marked "later: not seen". The rows are categories named by
    their labels (unique: "token ·position"), so the hover reads them from the axis and the cells need no text of
    their own (it runs on every head change)."""
    keys, products = np.asarray(keys, dtype=np.float32), np.asarray(products, dtype=np.float32)
    weights = np.asarray(weights, dtype=float)
    T, d = keys.shape
    names = plain_all(tokens)
    me = names[row]
    # the query's row first, then a key per token (the query's own token in bold)
    labels = [f"<b>query</b> · {me}"] + [f"<b>{n} ·{j}</b>" if j == row else f"{n} ·{j}" for j, n in enumerate(names)]
    vectors = np.vstack([np.asarray(query, dtype=np.float32)[None, :], keys])
    masked = np.isnan(products).all(axis=1)
    scores = products.sum(axis=1)

    def limit(a: np.ndarray) -> float:
        return float(np.nanmax(np.abs(a), initial=0.0)) or 1.0

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
                 text=["later: not seen" if m else f"{percent(w)} ({s:+.1f})"
                       for w, s, m in zip(weights, scores, masked)],
                 textposition="outside", cliponaxis=False,
                 hovertemplate=f"{me} → %{{y}}: weight %{{x:.2%}}<extra></extra>"),
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
                    bins: int = 5, token: int | None = None) -> go.Figure:
    """Lines from each token (left) to the tokens it attends to (right); stronger weights draw darker and wider.

    Lines are grouped into ``bins`` weight bands, one trace each (segments separated by gaps), so a long
    sentence gives a handful of traces rather than one per pair. Each token on the left is a point whose hover
    lists where it looks, and a click on it (``customdata``: its row) picks it; ``token`` (a row) draws its lines
    in orange and every other line faded, as BertViz does on hover (Plotly restyles nothing on hover by itself).
    """
    m = np.asarray(matrix, dtype=float)
    n = len(tokens)
    y = np.arange(n)[::-1].astype(float)
    rows, cols = np.nonzero(m >= threshold)
    weights = m[rows, cols]
    edges = np.linspace(threshold, max(threshold, float(weights.max(initial=threshold))), bins + 1)
    band = np.clip(np.searchsorted(edges, weights, side="right") - 1, 0, bins - 1)
    chosen = token is not None and 0 <= token < n
    mine = rows == token if chosen else np.zeros(len(rows), dtype=bool)
    traces = []
    for b in range(bins):
        for own in (False, True):
            sel = (band == b) & (mine == own)
            if not sel.any():
                continue
            k = int(sel.sum())
            xs = np.tile(np.array([0.0, 1.0, np.nan], dtype=np.float32), k)  # float32: half the bytes of float64
            ys = np.column_stack([y[rows[sel]], y[cols[sel]], np.full(k, np.nan)]).ravel().astype(np.float32)
            w = float(weights[sel].mean())
            alpha = min(1.0, 0.15 + w) * (0.25 if chosen and not own else 1.0)
            colour = f"rgba(230,120,20,{max(alpha, 0.6):.2f})" if own else f"rgba(31,119,180,{alpha:.2f})"
            traces.append(dict(type="scatter", x=xs, y=ys, mode="lines", hoverinfo="skip", showlegend=False,
                               line=dict(color=colour, width=(2 if own else 1) + 4 * w)))
    names = plain_all(tokens)
    looks = [_looks_at(names[i], m[i], names, threshold) for i in range(n)]
    bold = [f"<b>{t}</b>" if chosen and i == token else t for i, t in enumerate(names)]
    # labels outside the lines: the left column left (a point each, to hover and click), the right column right
    traces.append(dict(type="scatter", x=[0] * n, y=y, mode="markers+text", text=bold, textposition="middle left",
                       customdata=np.arange(n), hovertext=looks, hovertemplate="%{hovertext}<extra></extra>",
                       showlegend=False, marker=dict(size=9, color=["rgba(230,120,20,0.9)" if chosen and i == token
                                                                    else "rgba(31,119,180,0.35)" for i in range(n)])))
    traces.append(dict(type="scatter", x=[1] * n, y=y, mode="text", text=names, textposition="middle right",
                       hoverinfo="skip", showlegend=False))
    layout = dict(title=dict(text=plain(title)), height=max(300, 18 * n + 80), margin=dict(l=10, r=10, t=40, b=10),
                  xaxis=dict(visible=False, range=[-0.6, 1.6], fixedrange=True),
                  yaxis=dict(visible=False, fixedrange=True), clickmode="event", hovermode="closest")
    return go.Figure(dict(data=traces, layout=layout))


def _looks_at(me: str, row: np.ndarray, names: Sequence[str], threshold: float, top: int = 5) -> str:
    """A token's hover on the line view: where its attention goes, strongest first."""
    order = [j for j in np.argsort(-row, kind="stable")[:top] if row[j] >= threshold]
    where = ", ".join(f"{names[j]} {percent(row[j])}" for j in order) or f"nothing above {percent(threshold)}"
    return f"<b>{me}</b> looks at {where}<br>(click: its lines stand out)"


# -- from a model: the Attention page's views ---------------------------------------------------------------

GRID_TOKENS = 48  # the grid of every head shows at most this many positions per map (it must stay light)


def attention_maps(model: Model, sentence: str, pair: str | None = None, merge: bool = True, hide: bool = False,
                   rollout: bool = False) -> att.AttentionMaps:
    """Every head's map on ``sentence`` (and ``pair``, a second sentence), read as the Attention page reads them:
    rolled out through the layers first when ``rollout``, then word pieces merged into words (``merge``) and
    [CLS]/[SEP] hidden (``hide``)."""
    pair = pair.strip() if pair else None
    maps = att.compute_attention(as_model(model), None, sentence.strip(), pair=pair or None)
    return read_maps(maps, merge, hide, rollout)


def read_maps(maps: att.AttentionMaps, merge: bool, hide: bool, rollout: bool = False) -> att.AttentionMaps:
    """Maps on word pieces read as the Attention page reads them: rolled out on the full maps first, then merged
    into words and [CLS]/[SEP] hidden."""
    if rollout:
        maps = att.attention_rollout(maps)
    if merge:
        maps = att.merge_word_pieces(maps)
    if hide:
        maps = att.hide_special(maps)
    return maps


def _one(maps: att.AttentionMaps, layer: int, head: int | None) -> tuple:
    """Head ``head`` of ``layer`` (both from 1; ``head`` None: the mean over the layer's heads): its map and name."""
    if not 1 <= layer <= maps.n_layers:
        raise ValueError(f"layer {layer} is not one of 1 to {maps.n_layers}")
    if head is None:
        return att.mean_over_heads(maps).attentions[layer - 1, 0], f"layer {layer}, mean over heads"
    if not 1 <= head <= maps.n_heads:
        raise ValueError(f"head {head} is not one of 1 to {maps.n_heads}")
    return maps.attentions[layer - 1, head - 1], f"layer {layer}, head {head}"


def heads_grid(model: Model, sentence: str, pair: str | None = None, merge: bool = True,
               hide: bool = False) -> go.Figure:
    """Every head's map at a glance: layers down, heads across, each map scaled to its own largest weight."""
    return attention_grid(attention_maps(model, sentence, pair, merge, hide).attentions, max_tokens=GRID_TOKENS)


def heads_summary(model: Model, sentence: str, pair: str | None = None, merge: bool = True,
                  hide: bool = False) -> go.Figure:
    """Every head summed up: how much of its attention goes to the previous and next token, itself, [CLS], [SEP],
    and how spread it is, one small layers x heads grid per measure."""
    return head_summary_grid(att.head_summaries(attention_maps(model, sentence, pair, merge, hide)))


def head_map(model: Model, sentence: str, layer: int = 1, head: int | None = 1, pair: str | None = None,
             merge: bool = True, hide: bool = False) -> go.Figure:
    """One head's map (``layer`` and ``head`` from 1; ``head`` None: the mean over the layer's heads): rows attend,
    columns are attended to."""
    maps = attention_maps(model, sentence, pair, merge, hide)
    matrix, what = _one(maps, layer, head)
    return attention_heatmap(matrix, maps.tokens, title=what)


def head_lines(model: Model, sentence: str, layer: int = 1, head: int | None = 1, threshold: float = 0.05,
               pair: str | None = None, merge: bool = True, hide: bool = False) -> go.Figure:
    """One head's map as lines from each word (left) to those it attends to (right), weights below ``threshold``
    left out (BertViz's head view)."""
    maps = attention_maps(model, sentence, pair, merge, hide)
    matrix, what = _one(maps, layer, head)
    return attention_lines(matrix, maps.tokens, threshold=threshold, title=what)


def head_query_key(model: Model, sentence: str, layer: int = 1, head: int = 1, token: int = 1,
                   pair: str | None = None) -> go.Figure:
    """How one head computes the weights of word piece ``token`` (its position, [CLS] being 0): its query against
    every key, dimension by dimension, their products and the softmax of the sums (BertViz's neuron view)."""
    pair = pair.strip() if pair else None
    qk = att.query_keys(as_model(model), None, sentence.strip(), pair=pair or None)
    if not (1 <= layer <= qk.attentions.shape[0] and 1 <= head <= qk.attentions.shape[1]):
        raise ValueError(f"layer {layer}, head {head} is not one of the model's {qk.attentions.shape[0]} layers and "
                         f"{qk.attentions.shape[1]} heads (both counted from 1)")
    if not 0 <= token < len(qk.tokens):
        raise ValueError(f"token {token} is not one of the {len(qk.tokens)} positions (0 to {len(qk.tokens) - 1})")
    layer, head = layer - 1, head - 1
    title = f"layer {layer + 1}, head {head + 1}: from {qk.tokens[token]} ·{token}"
    return query_key_view(qk.tokens, token, qk.queries[layer, head, token], qk.keys[layer, head],
                          qk.products(layer, head, token), qk.attentions[layer, head, token], title=title)


def rollout(model: Model, sentence: str, layer: int | None = None, pair: str | None = None, merge: bool = True,
            hide: bool = False) -> go.Figure:
    """Attention rollout up to ``layer`` (default: the last): how much each word draws on each input word through
    all the layers below, the residual connections counted."""
    maps = attention_maps(model, sentence, pair, merge, hide, rollout=True)
    layer = maps.n_layers if layer is None else layer
    if not 1 <= layer <= maps.n_layers:
        raise ValueError(f"layer {layer} is not one of 1 to {maps.n_layers}")
    return attention_heatmap(maps.attentions[layer - 1, 0], maps.tokens, title=f"rollout up to layer {layer}")
