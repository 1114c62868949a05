"""Cosine geometry: the one row normalisation that every cosine in the package goes through.

NumPy only and importing nothing of the package, so the models (static vectors' neighbours) and the analysis
(sense measurements, projections, WSD/WiC evaluation) share it without a layering problem.
"""

from __future__ import annotations

import numpy as np


def unit_rows(X: np.ndarray) -> np.ndarray:
    """``X`` with each row (the last axis) scaled to unit length, in ``X``'s float dtype.

    Zero rows stay zero, so their cosine to anything counts as 0; a row with NaN or infinity is left as it is, so
    its cosines are NaN. A 1-D array is one row. A finite row so large that its squared length overflows (float32
    beyond about 1e19), or so small that it underflows to 0, is first divided by its largest absolute value, so
    it still gets its direction (other rows are computed exactly as without that step).
    """
    X = np.asarray(X)
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is what the rescue below repairs
        norms = np.linalg.norm(X, axis=-1, keepdims=True)
        if X.ndim and X.shape[-1]:
            peak = np.abs(X).max(axis=-1, keepdims=True)
            rescue = np.isfinite(peak) & (peak > 0) & ((norms == 0) | np.isinf(norms))
            if rescue.any():
                X = np.where(rescue, X / np.where(rescue, peak, 1), X)
                norms = np.where(rescue, np.linalg.norm(X, axis=-1, keepdims=True), norms)
        return X / np.where(norms > 0, norms, 1.0)
