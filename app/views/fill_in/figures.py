"""The Fill in the blank page's figures: drawn by :mod:`ctxmodels.viz.blanks`, which draws the same views in a
notebook (one function, one picture)."""

from ctxmodels.viz.blanks import (
    EFFECT_MAX_LOG2,
    SUPERSCRIPTS,
    attribution_bars,
    blank_change_bars,
    both_methods_bars,
    effect_log2,
    fill_bars,
    layer_guess_grid,
    shared_bar_scale,
    shared_effect_scale,
    times,
    word_effect_bars,
)
from ctxmodels.viz.objectives import word_guess_lines

__all__ = [
    "EFFECT_MAX_LOG2", "SUPERSCRIPTS", "attribution_bars", "blank_change_bars", "both_methods_bars", "effect_log2",
    "fill_bars", "layer_guess_grid", "shared_bar_scale", "shared_effect_scale", "times", "word_effect_bars",
    "word_guess_lines"
]
