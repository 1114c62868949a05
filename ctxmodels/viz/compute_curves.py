"""Pre-training objectives compared per unit of compute: each measure of ``bench/bench_objectives.py``'s results
(held-out guessing accuracy, part-of-speech accuracy after fine-tuning, word senses' best layer) against the
operations spent training, one line per objective; and one measure alone, as the app's *How they learn* page shows
the shipped copy (:mod:`ctxmodels.analysis.compute_comparison`). Data in (the results' rows), figure out; no
Streamlit."""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .style import PALETTE, plain

#: the objectives in the order the bench trains them, with the words a legend shows
OBJECTIVES = {"bert": "BERT (masked words + next sentence)", "roberta": "RoBERTa (masked words only)",
              "albert": "ALBERT (shared layers + sentence order)", "electra": "ELECTRA (replaced words)",
              "gpt": "GPT (next word, left to right)"}

#: (title, the row's value) for each panel
PANELS = (
    ("Held-out guesses right", lambda r: r.get("guess_accuracy")),
    ("Part of speech after fine-tuning", lambda r: r["pos"]["test"]["accuracy"] if r.get("pos") else None),
    ("Word senses, best layer (macro-F1)", lambda r: r["senses"]["best_macro_f1"]),
)


def objectives_by_compute(rows: Sequence[dict], height: int = 360) -> go.Figure:
    """One panel per measure, x = training operations (TFLOP), one line per objective (rows: ``kind``, ``flops``,
    ``guess_accuracy``, ``pos``, ``senses``, as the bench writes them)."""
    fig = make_subplots(rows=1, cols=len(PANELS), subplot_titles=[title for title, _ in PANELS],
                        horizontal_spacing=0.07)
    kinds = [k for k in OBJECTIVES if any(r["kind"] == k for r in rows)]
    for colour, kind in zip(PALETTE, kinds):
        mine = sorted((r for r in rows if r["kind"] == kind), key=lambda r: r["flops"])
        for col, (title, value) in enumerate(PANELS, 1):
            points = [(r["flops"] / 1e12, value(r)) for r in mine if value(r) is not None]
            if not points:
                continue
            fig.add_trace(go.Scatter(
                x=[x for x, _ in points], y=[100 * y for _, y in points], mode="lines+markers", cliponaxis=False,
                name=plain(OBJECTIVES[kind]), legendgroup=kind, showlegend=col == 1,
                line={"color": colour}, marker={"color": colour, "size": 7},
                hovertemplate=f"{plain(OBJECTIVES[kind])}<br>%{{x:.1f}} TFLOP: %{{y:.1f}}%<extra>{title}</extra>"),
                row=1, col=col)
    fig.update_xaxes(title_text="training compute (TFLOP: 10¹² operations)", rangemode="tozero")
    fig.update_yaxes(ticksuffix="%")
    fig.update_layout(height=height, margin={"l": 40, "r": 20, "t": 40, "b": 40},
                      legend={"orientation": "h", "y": -0.25})
    return fig


def measure_by_compute(rows: Sequence[dict], measure: str, axis: str, not_measured: Sequence[str] = (),
                       title: str = "", height: int = 420) -> go.Figure:
    """One measure against training compute, a line per objective (rows: ``kind``, ``tflop`` and ``measure`` as a
    share, as :class:`~ctxmodels.analysis.compute_comparison.ComputeRow` holds them); the objectives in
    ``not_measured`` appear in the legend as such, with no line."""
    fig = go.Figure()
    kinds = list(dict.fromkeys([k for k in OBJECTIVES if any(r["kind"] == k for r in rows)]
                               + [r["kind"] for r in rows]))
    for colour, kind in zip(PALETTE * 2, kinds):
        name = plain(OBJECTIVES.get(kind, kind))
        points = sorted((r["tflop"], r[measure]) for r in rows if r["kind"] == kind and r[measure] is not None)
        if kind in not_measured or not points:
            fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", name=f"{name}: not measured",
                                     line={"color": colour, "dash": "dot"}, hoverinfo="skip"))
            continue
        fig.add_trace(go.Scatter(
            x=[x for x, _ in points], y=[100 * y for _, y in points], mode="lines+markers", cliponaxis=False, name=name,
            line={"color": colour, "width": 2.5}, marker={"color": colour, "size": 9},
            hovertemplate=f"{name}<br>%{{x:.1f}} TFLOP: %{{y:.1f}}%<extra></extra>"))
    fig.update_xaxes(title_text="training compute (TFLOP: a million million operations)", rangemode="tozero")
    # From 0: lines a point apart look a point apart, not a screen apart. Past the untrained start (compute 0, where
    # a guess is right 0% of the time) every measure is well above 0, so the legend sits in the empty lower right
    # of the plot and the first screen of a projector shows it.
    fig.update_yaxes(title_text=plain(axis), ticksuffix="%", rangemode="tozero")
    fig.update_layout(title=plain(title), height=height, margin={"l": 60, "r": 20, "t": 60, "b": 40},
                      legend={"yanchor": "bottom", "y": 0.02, "xanchor": "right", "x": 0.99,
                              "bgcolor": "rgba(0,0,0,0)"})
    return fig
