"""What fine-tuning changes: how each layer's representations and the task's classes change, and
how much each attention head's pattern moved. Pure (no Streamlit).
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ctxmodels.analysis import finetuning as ft
from ctxmodels.analysis import projections
from ctxmodels.viz.models import Model, as_model, label_of
from ctxmodels.viz.scatter import sense_scatter
from ctxmodels.viz.style import PALETTE, finite, highlight, layer_panels, plain, sense_colours

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
    base = {"majority label": float(majority)} if majority is not None and finite(majority) else None
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


# -- from a model: the What fine-tuning changes page's views --------------------------------------------------


def finetuning_comparison(model: Model, base: Model | None = None, split: str = "dev", n_sentences: int = 200
                          ) -> tuple[ft.FinetuneComparison, str, str]:
    """A fine-tuned model and the model it started from (``base``, default: the one its finetune.json names) on
    ``n_sentences`` sentences of its task's ``split``, layer by layer and head by head (kept for the next call),
    and the two models' names."""
    after = as_model(model)
    task = (ft.finetune_info(after) or {}).get("task")
    if not task:
        raise ValueError(f"{after.name} is not a fine-tuned model (no finetune.json naming its task)")
    before = ft.base_model(after) if base is None else as_model(base)
    ft.check_comparable(before, after)
    result = ft.compare_on_task(before, after, task, split=split, max_sentences=n_sentences)
    return result, label_of(before), label_of(after)


def finetuning_layers(model: Model, base: Model | None = None, split: str = "dev",
                      n_sentences: int = 200) -> go.Figure:
    """How similar each layer stays through fine-tuning: linear CKA and a word's mean cosine, before vs after."""
    result, before, after = finetuning_comparison(model, base, split, n_sentences)
    return representation_change(result.layers, before, after)


def finetuning_classes(model: Model, base: Model | None = None, split: str = "dev",
                       n_sentences: int = 200) -> go.Figure:
    """How well the task's labels separate in each layer, before and after fine-tuning."""
    result, before, after = finetuning_comparison(model, base, split, n_sentences)
    return class_separation(result.layers, before, after, result.majority)


def finetuning_heads(model: Model, base: Model | None = None, split: str = "dev",
                     n_sentences: int = 200) -> go.Figure:
    """How much each attention head's pattern moved through fine-tuning (a transformer encoder's)."""
    result, _, after = finetuning_comparison(model, base, split, n_sentences)
    if result.heads is None:
        raise ValueError(f"{after} has no attention heads to compare")
    return head_change_heatmap(result.heads, title="mean Jensen–Shannon divergence, before vs after")


def finetuning_points(model: Model, layer: int | None = None, method: str = "pca", base: Model | None = None,
                      split: str = "dev", n_sentences: int = 200) -> list[go.Figure]:
    """The task's labelled words in ``layer`` (default: the top one), before and after fine-tuning, each projected
    on its own by ``method``: two figures."""
    result, before, after = finetuning_comparison(model, base, split, n_sentences)
    layer = len(result.layer_names) - 1 if layer is None else layer
    coords = [projections.project(X, method=method, seed=0).coords for X in result.layer_points(layer)]
    colours = sense_colours(result.point_labels)
    hover = [highlight(t, span) for t, span in zip(result.point_text, result.point_spans)]
    name = result.layer_names[layer]
    return [sense_scatter(xy, result.point_labels, hover, colours=colours, legend_title="label",
                          title=f"{side}: {who}, {name}, {projections.DISPLAY[method]}")
            for xy, who, side in ((coords[0], before, "before"), (coords[1], after, "after"))]
