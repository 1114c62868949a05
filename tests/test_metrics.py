"""The one accuracy / macro-F1 of the package (ctxmodels.analysis.metrics) and the one row normalisation
(ctxmodels.cosine): worked by hand, and macro-F1 pinned to scikit-learn's definition."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from ctxmodels.analysis.metrics import accuracy, macro_f1
from ctxmodels.cosine import unit_rows


def test_macro_f1_by_hand():
    # true a a b c, predicted a b b b: a F1 = 2/3 (P 1, R 1/2), b F1 = 1/2 (P 1/3, R 1), c F1 = 0 -> 7/18
    assert macro_f1(["a", "a", "b", "c"], ["a", "b", "b", "b"]) == pytest.approx(7 / 18)
    # a class that is only predicted counts as well, with F1 0: a F1 = 2/3, c F1 = 0 -> 1/3 (not 2/3)
    assert macro_f1(["a", "a"], ["a", "c"]) == pytest.approx(1 / 3)
    assert macro_f1([1, 2, 2], [1, 2, 2]) == 1.0
    assert macro_f1(["a"], ["b"]) == 0.0
    for bad in ((["a"], ["a", "b"]), ([], [])):
        with pytest.raises(ValueError, match="equally long, non-empty"):
            macro_f1(*bad)


@pytest.mark.parametrize("seed", range(6))
def test_macro_f1_is_sklearns_macro_average(seed):
    """Random label lists where some gold classes are never predicted and some predicted ones are never gold."""
    from sklearn.metrics import f1_score

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 80))
    y_true = rng.choice(["a", "b", "c", "d", "e"][: int(rng.integers(1, 6))], size=n).tolist()
    y_pred = rng.choice(["a", "b", "c", "x", "y"][: int(rng.integers(1, 6))], size=n).tolist()
    expected = f1_score(y_true, y_pred, average="macro", zero_division=0)
    assert macro_f1(y_true, y_pred) == pytest.approx(expected, abs=1e-12)
    ints_true, ints_pred = rng.integers(0, 4, size=n), rng.integers(2, 7, size=n)  # numpy ints, partly disjoint
    assert macro_f1(ints_true, ints_pred) == pytest.approx(
        f1_score(ints_true, ints_pred, average="macro", zero_division=0), abs=1e-12)


def test_accuracy():
    assert accuracy(["a", "b", "b"], ["a", "b", "c"]) == pytest.approx(2 / 3)
    assert accuracy([True, False], [True, False]) == 1.0
    with pytest.raises(ValueError, match="equally long"):
        accuracy(["a"], [])


def test_unit_rows():
    X = np.array([[3.0, 4.0], [0.0, 0.0], [np.nan, 1.0]], dtype=np.float32)
    U = unit_rows(X)
    assert U.dtype == np.float32
    np.testing.assert_allclose(U[0], [0.6, 0.8])
    assert (U[1] == 0).all()  # a zero row stays zero: its cosine to anything is 0
    assert np.isnan(U[2] @ U[0])  # a row with NaN gives NaN cosines (a missing vector stays missing)
    np.testing.assert_allclose(unit_rows(np.array([0.0, 2.0])), [0.0, 1.0])  # a single vector is one row
    assert X[0, 0] == 3.0  # the input is not changed


def test_unit_rows_of_huge_and_tiny_vectors_keep_their_direction():
    # squares of 1e30 overflow float32 and squares of 1e-30 underflow to 0: such rows are scaled first
    X = np.array([[1e30, 1e30], [3e-30, 4e-30], [3.0, 4.0], [np.inf, 1.0]], dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow warning escapes
        U = unit_rows(X)
    np.testing.assert_allclose(U[:3], [[0.5**0.5, 0.5**0.5], [0.6, 0.8], [0.6, 0.8]], rtol=1e-6)
    assert np.isnan(U[3] @ U[2])  # a row with infinity stays no vector
    rows = np.random.default_rng(0).normal(size=(50, 7)).astype(np.float32)  # every ordinary row exactly as before
    assert np.array_equal(unit_rows(rows), rows / np.linalg.norm(rows, axis=-1, keepdims=True))
