"""The Word senses page's figures: drawn by :mod:`ctxmodels.viz.senses`, which draws the same views in a
notebook (one function, one picture)."""

from ctxmodels.viz.senses import (
    POS_NAMES,
    add_layer_path,
    context_shift_heatmap,
    dictionary_sense_map,
    neighbour_pos_bars,
)

__all__ = ["POS_NAMES", "add_layer_path", "context_shift_heatmap", "dictionary_sense_map", "neighbour_pos_bars"]
