"""Cosine geometry: the one row normalisation that every cosine in the package goes through.

NumPy only and importing nothing of the package, so the models (static vectors' neighbours) and the analysis
(sense measurements, projections, WSD/WiC evaluation) share it without a layering problem.
"""

from __future__ import annotations

import numpy as np


def unit_rows(X: np.ndarray) -> np.ndarray:
    """``X`` with each row (the last axis) scaled to unit length, in ``X``'s float dtype.

    Zero rows stay zero, so their cosine to anything counts as 0; a row with NaN is left as it is, so its cosines
    are NaN. A 1-D array is one row.
    """
    X = np.asarray(X)
    norms = np.linalg.norm(X, axis=-1, keepdims=True)
    return X / np.where(norms > 0, norms, 1.0)
