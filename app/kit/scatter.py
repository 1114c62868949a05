"""The scatter of projected occurrences: :mod:`ctxmodels.viz.scatter` (the same function draws the notebook
views), under the names the pages use."""

from ctxmodels.viz.scatter import (
    LEGEND_BESIDE_CHARS,
    PANEL_PLOT_PX,
    RING_MARGIN_PX,
    RING_MAX_PX,
    SPREAD_MAX_PX,
    WEBGL_FROM,
    label_places,
    preview_scatter,
    sense_scatter,
    shared_ranges,
    word_axis,
)

__all__ = [
    "LEGEND_BESIDE_CHARS", "PANEL_PLOT_PX", "RING_MARGIN_PX", "RING_MAX_PX", "SPREAD_MAX_PX", "WEBGL_FROM",
    "label_places", "preview_scatter", "sense_scatter", "shared_ranges", "word_axis"
]
