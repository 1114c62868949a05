"""The What fine-tuning changes page's figures: drawn by :mod:`ctxmodels.viz.finetuning`, which draws the same
views in a notebook (one function, one picture)."""

from ctxmodels.viz.finetuning import (
    BEFORE_AFTER,
    class_separation,
    head_change_heatmap,
    representation_change,
)

__all__ = ["BEFORE_AFTER", "class_separation", "head_change_heatmap", "representation_change"]
