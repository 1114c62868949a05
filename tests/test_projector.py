"""The Embedding Projector's tools on occurrence vectors (ctxmodels.analysis.projector): an occurrence and its
nearest neighbours in the layer's own vectors, and a custom axis from one word to another, checked against sums
done by hand."""

from __future__ import annotations

import numpy as np
import pytest

from ctxmodels.analysis import projector


def test_an_isolated_occurrence_comes_first_then_its_nearest_by_cosine_in_the_full_vectors():
    X = np.array([[1.0, 0.0, 0.0], [0.9, 0.1, 0.0], [0.0, 1.0, 0.0], [0.7, 0.7, 0.0], [np.nan, np.nan, np.nan]])
    # cosines to row 0: row 1 0.994, row 3 0.707, row 2 0; row 4 has no vector and is never a neighbour
    assert projector.isolated(X, 0, 2) == [0, 1, 3]
    assert projector.isolated(X, 0, 10) == [0, 1, 3, 2]
    assert projector.isolated(X, 2, 0) == [2]
    with pytest.raises(ValueError):
        projector.isolated(X, 0, -1)


def test_the_axis_places_each_occurrence_as_computed_by_hand():
    a, b = np.array([2.0, 0.0]), np.array([0.0, 3.0])  # unit: (1, 0) and (0, 1); b - a = (-1, 1), |b - a|² = 2
    X = np.array([[5.0, 0.0],  # at a: 0
                  [0.0, 0.5],  # at b: 1
                  [1.0, 1.0],  # unit (0.7071, 0.7071): ((-0.2929)(-1) + 0.7071) / 2 = 0.5
                  [3.0, 4.0],  # unit (0.6, 0.8): ((-0.4)(-1) + 0.8) / 2 = 0.6
                  [1.0, -1.0],  # unit (0.7071, -0.7071): ((-0.2929)(-1) - 0.7071) / 2 = -0.2071
                  [np.nan, np.nan]])
    t = projector.axis_positions(X, a, b)
    np.testing.assert_allclose(t[:5], [0.0, 1.0, 0.5, 0.6, (1 - np.sqrt(0.5) - np.sqrt(0.5)) / 2], atol=1e-9)
    assert np.isnan(t[5])
    with pytest.raises(ValueError, match="same direction"):
        projector.axis_positions(X, a, 3 * a)


def test_axis_coords_put_the_axis_across_and_the_spread_it_leaves_out_up():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 5))
    X[3] = np.nan
    a, b = rng.normal(size=5), rng.normal(size=5)
    xy = projector.axis_coords(X, a, b)
    np.testing.assert_allclose(xy[:, 0], projector.axis_positions(X, a, b))
    assert np.isnan(xy[3]).all() and np.isfinite(np.delete(xy, 3, axis=0)).all()
    # up: the first principal component of what is left of the unit vectors once the axis' direction is taken out
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    ua, ub = a / np.linalg.norm(a), b / np.linalg.norm(b)
    d = (ub - ua) / np.linalg.norm(ub - ua)
    ok = np.delete(np.arange(30), 3)
    rest = U[ok] - np.outer(U[ok] @ d, d)
    rest -= rest.mean(axis=0)
    pc = np.linalg.svd(rest)[2][0]
    np.testing.assert_allclose(np.abs(xy[ok, 1]), np.abs(rest @ pc), atol=1e-9)
    assert abs(pc @ d) < 1e-9  # the up axis is at right angles to the word axis
    assert projector.axis_coords(X, a, b, n_dims=3).shape == (30, 3)
    np.testing.assert_array_equal(projector.axis_coords(X, a, b), xy)  # the same picture every time


def test_the_share_of_neighbours_with_the_occurrences_label():
    labels = ["river", "river", "money", None, "river"]
    assert projector.same_label_share(labels, [0, 1, 2, 4]) == pytest.approx(2 / 3)
    assert projector.same_label_share(labels, [3, 0, 1]) is None
    assert projector.same_label_share(labels, [0]) is None


def test_a_word_anchor_is_the_mean_of_its_vectors_in_the_neutral_frames(tiny_assets):
    import ctxmodels
    from ctxmodels.analysis import vectors

    model = ctxmodels.load(str(tiny_assets / "bert-eltec"))
    anchor = projector.word_anchor(model, "river")
    each = vectors.word_vectors(model, [f.format(w="river") for f in projector.FRAMES], "river").vectors
    assert anchor.shape == (model.n_layers, model.dim) and each.shape[0] == len(projector.FRAMES)
    np.testing.assert_allclose(anchor, each.mean(axis=0), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="not one word"):
        projector.word_anchor(model, "two words")
    static = ctxmodels.load(str(tiny_assets / "static-eltec"))
    with pytest.raises(ValueError, match="no vector"):
        projector.word_anchor(static, "zzqxv")


def test_labels_stay_off_each_other_and_a_shared_point_keeps_only_its_ring():
    from ctxmodels.viz import scatter

    xy = np.array([[0.0, 0.0], [0.001, 0.0], [1.0, 1.0], [0.5, 0.2], [0.5, 0.2]])
    labels = {i: f"occurrence {i + 1}" for i in range(5)}
    fig = scatter.sense_scatter(xy, ["a"] * 5, ["s"] * 5, point_labels=labels, stacks=[[3, 4]])
    drawn = next(t for t in fig.data if t.name == "labels")
    texts = list(drawn.text)
    assert "occurrence 4" not in texts and "occurrence 5" not in texts  # on the ring of a shared point
    assert "occurrence 3" in texts and "occurrence 1" in texts
    assert len(texts) == len(drawn.textposition) <= 4
    faded = scatter.sense_scatter(xy, ["a", "a", "b", "b", "b"], ["s"] * 5, focus=[0, 1])
    legend = [t for t in faded.data if t.showlegend is not False and t.name in ("a", "b")]
    assert legend and all(t.marker.opacity == 1 for t in legend)  # the legend's dots are not faded


def test_ties_with_the_last_neighbour_are_counted():
    X = np.array([[1.0, 0.0], [2.0, 0.0], [3.0, 0.0], [1.0, 0.0], [0.0, 1.0]])  # rows 0 to 3: one direction
    picked = projector.isolated(X, 0, 2)
    assert picked == [0, 1, 2] and projector.tied_with_last(X, picked) == 1  # row 3 is as near as row 2
    assert projector.tied_with_last(X, projector.isolated(X, 0, 3)) == 0
    assert projector.tied_with_last(X, [0]) == 0
