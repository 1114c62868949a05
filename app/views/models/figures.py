"""The Models page's figure: the model in training, one preset word's occurrences in its top layer (PCA) at the
last checkpoint, drawn with the shared scatter (``app/kit/scatter.py``). Pure (no Streamlit)."""

from __future__ import annotations

import plotly.graph_objects as go

from app.kit.scatter import sense_scatter


def preview_scatter(preview: dict, word: str) -> go.Figure:
    """``preview``: the coordinates, sense labels, hover text and layer name of :func:`compute.preview`."""
    return sense_scatter(preview["coords"], preview["labels"], preview["hover"], marker_size=7,
                         title=f"{word}: {preview['layer']}, PCA, at the last checkpoint")
