"""The Attention page's figures: drawn by :mod:`ctxmodels.viz.attention`, which draws the same views in a
notebook (one function, one picture)."""

from ctxmodels.viz.attention import (
    HEAD_MEASURES,
    NOMINAL_CONTENT_PX,
    attention_grid,
    attention_lines,
    head_summary_grid,
    query_key_view,
)

__all__ = [
    "HEAD_MEASURES", "NOMINAL_CONTENT_PX", "attention_grid", "attention_lines", "head_summary_grid",
    "query_key_view"
]
