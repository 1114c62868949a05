"""Classification scores shared by the sense measurements, the WSD/WiC evaluations and the model cards.

One definition each, so that ``ctxmodels eval wsd``, :func:`ctxmodels.analysis.senses.sense_table` and the
figures of ``ctxmodels quality`` mean the same thing by the same name:

* :func:`accuracy` — the share of predictions equal to the gold label.
* :func:`macro_f1` — scikit-learn's ``f1_score(y_true, y_pred, average="macro", zero_division=0)``: the unweighted
  mean of per-class F1 over every class that occurs in the gold labels *or* the predictions (the convention the
  WSD literature reports). A class that is predicted but never gold scores F1 = 0 and so lowers the mean; a gold
  class that is never predicted correctly scores 0 too.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np


def _paired(y_true, y_pred, where: str) -> tuple[list, list]:
    y_true, y_pred = list(y_true), list(y_pred)
    if len(y_true) == 0 or len(y_true) != len(y_pred):
        raise ValueError(f"{where} needs two equally long, non-empty label lists (got {len(y_true)} and "
                         f"{len(y_pred)})")
    return y_true, y_pred


def accuracy(y_true: Sequence[Hashable], y_pred: Sequence[Hashable]) -> float:
    """Share of positions where the prediction equals the gold label."""
    y_true, y_pred = _paired(y_true, y_pred, "accuracy")
    return float(np.mean([t == p for t, p in zip(y_true, y_pred)]))


def macro_f1(y_true: Sequence[Hashable], y_pred: Sequence[Hashable]) -> float:
    """Macro-F1 over the classes in ``y_true`` or ``y_pred`` (see the module docstring).

    The same number as ``sklearn.metrics.f1_score(y_true, y_pred, average="macro", zero_division=0)``, computed
    directly: sklearn's input validation costs ~40 ms a call, which adds up over layers, lemmas and k values.
    Labels may be any hashable values (strings, ints, sense keys).
    """
    y_true, y_pred = _paired(y_true, y_pred, "macro_f1")
    index: dict = {}
    true = np.array([index.setdefault(lab, len(index)) for lab in y_true], dtype=np.int64)
    pred = np.array([index.setdefault(lab, len(index)) for lab in y_pred], dtype=np.int64)
    n = len(index)
    tp = np.bincount(true[true == pred], minlength=n)
    # 2 tp / (2 tp + fp + fn) with tp + fn = gold count and tp + fp = predicted count; never 0 / 0, since every
    # class of the union occurs on at least one side.
    f1 = 2 * tp / (np.bincount(true, minlength=n) + np.bincount(pred, minlength=n))
    return float(np.mean(f1))
