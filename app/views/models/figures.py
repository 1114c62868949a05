"""The Models page's figure: drawn by :mod:`ctxmodels.viz.scatter`, which draws the same views in a notebook."""

from ctxmodels.viz.scatter import (
    preview_scatter,
)

__all__ = ["preview_scatter"]
