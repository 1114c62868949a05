"""ELMo's layers: a probe's scalar-mix weights beside each layer's own accuracy. Pure (no
Streamlit).
"""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from ctxmodels.analysis import probes
from ctxmodels.viz.models import Model, as_model
from ctxmodels.viz.style import PALETTE, plain, plain_all


def mix_weights_bars(
    layer_names: Sequence[str], weights: Sequence[float], gamma: float, layer_accuracy: Sequence[float] | None = None,
    title: str = "",
) -> go.Figure:
    """Scalar-mix weights s_j as bars, each layer's own probe accuracy as a line on a second axis."""
    names = plain_all(layer_names)
    fig = go.Figure(go.Bar(x=names, y=list(weights), name="weight of the layer in the mix (s_j)",
                           marker_color=PALETTE[0], text=[f"{w:.2f}" for w in weights], textposition="outside"))
    if layer_accuracy is not None:
        fig.add_trace(go.Scatter(x=names, y=list(layer_accuracy), name="probe accuracy of the layer alone",
                                 mode="lines+markers", yaxis="y2", line=dict(color=PALETTE[1])))
    fig.update_layout(
        title=f"{plain(title)} (scale of the mix γ = {gamma:.2f})" if title else f"scale of the mix γ = {gamma:.2f}",
        yaxis=dict(title="weight in the mix (s_j)", range=[0, 1]),
        yaxis2=dict(title="accuracy of the layer alone", overlaying="y", side="right", range=[0, 1]),
        margin=dict(l=10, r=10, t=40, b=10), height=320, legend=dict(orientation="h", y=-0.2),
    )
    return fig


# -- from a model: the ELMo layers page's view ----------------------------------------------------------------

TASK_NAMES = {"pos": "part of speech", "wsd": "word sense"}


def elmo_layer_weights(model: Model, task: str = "pos", result: probes.ProbeResult | None = None) -> go.Figure:
    """How much a probe for ``task`` (pos: part of speech, wsd: word sense) weighs each layer of the model in its
    learned mix, beside each layer's own accuracy: ``result``, else the newest result stored with the model (the
    shipped one, or ``ctxmodels probe``'s; :func:`ctxmodels.analysis.probes.run_probe` runs a new one)."""
    m = as_model(model)
    r = result if result is not None else probes.latest_cached_result(m, task)
    if r is None:
        raise ValueError(f"no {task} probe is stored with {m.name}: run `ctxmodels probe --model {m.name} --task "
                         f"{task}`, or pass the result of ctxmodels.analysis.probes.run_probe")
    return mix_weights_bars(r.layer_names, r.mix_weights, r.gamma, r.layer_accuracies,
                            title=f"{TASK_NAMES.get(r.task, r.task)} probe")
