"""What the pages share to draw their figures: :mod:`ctxmodels.viz.style` (the same functions draw the
notebook views), under the names the pages use."""

from ctxmodels.viz.style import (
    PALETTE,
    UNLABELLED,
    attention_heatmap,
    finite,
    highlight,
    layer_panels,
    loss_chart,
    model_colours,
    percent,
    plain,
    plain_all,
    sense_colours,
    short_layer_name,
    wrapped_title,
)

__all__ = [
    "PALETTE", "UNLABELLED", "attention_heatmap", "finite", "highlight", "layer_panels", "loss_chart",
    "model_colours", "percent", "plain", "plain_all", "sense_colours", "short_layer_name", "wrapped_title"
]
