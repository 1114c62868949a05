"""The Lesson's answers as small charts (data from ``compute.py``'s ``chart``, figures out): the class reads a
line or a bar, not a chain of numbers. The same views the pages draw, made small for one screen."""

from __future__ import annotations

import plotly.graph_objects as go

from ctxmodels.viz.elmo_layers import mix_weights_bars
from ctxmodels.viz.overview import same_word_lines
from ctxmodels.viz.style import PALETTE, layer_panels, model_colours, plain

HEIGHT = 300  # px: a chart and the question above it fit one projector screen


def draw(data: dict) -> list[go.Figure]:
    """The figures of one step's answer, side by side on the page (none for a step answered in words)."""
    kind = data["kind"]
    if kind == "same_word":
        title = data.get("title", "how alike the two vectors of “bank” are")
        figs = [same_word_lines(data["results"], "bank", title=title)]
    elif kind == "clouds":
        figs = [_clouds(data["rows"], data["majority"])] if data["rows"] else []
    elif kind == "layers":
        figs = [mix_weights_bars(p["layer_names"], p["weights"], p["gamma"], p["alone"], title=p["task"])
                for p in data["probes"]]
    elif kind == "guesses":
        figs = [_guesses(name, guesses) for name, guesses in data["guesses"].items()]
    elif kind == "ranks":
        figs = [_ranks(name, r) for name, r in data["ranks"].items()]
    else:
        raise ValueError(f"no chart for {kind!r}")
    for fig in figs:
        fig.update_layout(height=HEIGHT, margin=dict(l=10, r=10, t=40, b=10))
    return figs


def _clouds(rows: list[dict], majority: float | None) -> go.Figure:
    baseline = {"always one sense": majority} if majority is not None else None
    fig = layer_panels(rows, [("knn1_accuracy", "nearest occurrence has the same sense", "share", baseline)],
                       columns=1)
    fig.update_yaxes(range=[0, 1.05], tickformat=".0%")
    return fig


def _guesses(name: str, guesses: list[tuple[str, float]]) -> go.Figure:
    words = [plain(w) for w, _ in guesses][::-1]  # the best guess on top
    probs = [p for _, p in guesses][::-1]
    return go.Figure(go.Bar(x=probs, y=words, orientation="h", marker_color=PALETTE[0],
                            text=[f"{p:.0%}" for p in probs], textposition="outside", cliponaxis=False),
                     layout=dict(title=plain(name), xaxis=dict(title="probability", tickformat=".0%",
                                                               range=[0, max(probs, default=0.1) * 1.25])))


def _ranks(name: str, r: dict) -> go.Figure:
    colour = model_colours([name])[name]
    fig = go.Figure(go.Scatter(x=[plain(n) for n in r["layer_names"]], y=r["ranks"], mode="lines+markers+text",
                               text=[f"{k:,}" for k in r["ranks"]], textposition="top center",
                               line=dict(color=colour), cliponaxis=False, name=plain(name)))
    fig.update_layout(title=f"{plain(name)}: where “{plain(r['answer'])}” ranks, layer by layer",
                      yaxis=dict(title="rank (1: its first guess)", type="log", autorange="reversed"),
                      xaxis=dict(title="layer"))
    return fig
