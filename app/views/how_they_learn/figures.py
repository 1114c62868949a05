"""The *How they learn* page's figures: drawn by :mod:`ctxmodels.viz.objectives` (and the Overview's cosine lines,
:mod:`ctxmodels.viz.overview`; the comparison per unit of compute, :mod:`ctxmodels.viz.compute_curves`), which draw
the same views in a notebook."""

from ctxmodels.viz.compute_curves import measure_by_compute
from ctxmodels.viz.objectives import (
    corruption_bars,
    corruption_strip,
    loss_curves,
    pair_bars,
    reading_masks,
    replaced_strip,
    word_guess_lines,
)
from ctxmodels.viz.overview import same_word_lines

__all__ = ["corruption_bars", "corruption_strip", "loss_curves", "measure_by_compute", "pair_bars", "reading_masks",
           "replaced_strip", "same_word_lines", "word_guess_lines"]
