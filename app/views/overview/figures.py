"""The Overview page's figures: drawn by :mod:`ctxmodels.viz.overview`, which draws the same views in a
notebook (one function, one picture)."""

from ctxmodels.viz.overview import (
    same_word_lines,
)

__all__ = ["same_word_lines"]
