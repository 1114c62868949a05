"""The ELMo layers page's figures: drawn by :mod:`ctxmodels.viz.elmo_layers`, which draws the same views in a
notebook (one function, one picture)."""

from ctxmodels.viz.elmo_layers import (
    mix_weights_bars,
)

__all__ = ["mix_weights_bars"]
