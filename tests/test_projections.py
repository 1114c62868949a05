"""Projections: shapes, seeds, small-input notes, joint fitting, NaN rows and bad input.

UMAP tests are marked slow: a fresh process spends 10+ s importing umap and compiling its numba code.
"""

from __future__ import annotations

import numpy as np
import pytest

from ctxmodels.analysis.projections import Projection, project, warm_up_umap


def cloud(n: int, d: int = 16, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, d))


def test_pca_by_hand():
    # A cross: (+-1, 0) and (0, +-0.5). Variances 1/2 and 1/8 (ddof 0) -> ratios 0.8 and 0.2.
    X = np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 0.5], [0.0, -0.5]])
    p = project(X, method="pca", metric="euclidean")
    assert isinstance(p, Projection) and p.method == "pca" and p.notes == []
    assert np.allclose(np.abs(p.coords), [[1, 0], [1, 0], [0, 0.5], [0, 0.5]], atol=1e-12)
    assert np.allclose(p.explained_variance, [0.8, 0.2])


def test_cosine_ignores_length():
    v, w = np.array([1.0, 2.0, 0.5]), np.array([-1.0, 0.3, 2.0])
    p = project(np.stack([v, 3 * v, w, v + w]), method="pca")
    assert np.allclose(p.coords[0], p.coords[1])
    p = project(np.stack([v, 3 * v, w, v + w]), method="pca", metric="euclidean")
    assert not np.allclose(p.coords[0], p.coords[1])


@pytest.mark.parametrize("method", ["pca", "tsne"])
@pytest.mark.parametrize("n_components", [2, 3])
def test_shapes_and_reproducible_with_a_seed(method, n_components):
    X = cloud(40)
    a = project(X, method=method, n_components=n_components, seed=1)
    b = project(X, method=method, n_components=n_components, seed=1)
    assert a.coords.shape == (40, n_components) and np.isfinite(a.coords).all()
    assert np.array_equal(a.coords, b.coords)
    assert a.params["n_components"] == n_components and a.method == method


def test_tsne_starts_from_pca():
    # PCA initialisation (sklearn's default, more stable than random) makes t-SNE seed-independent
    p = project(cloud(40), method="tsne", seed=1)
    assert p.params["init"] == "pca"
    assert np.array_equal(p.coords, project(cloud(40), method="tsne", seed=2).coords)


def test_joint_fit_shares_axes():
    A = cloud(30, seed=1)
    B = A[:10].copy()
    p = project([A, B], method="pca")
    assert p.joint and [c.shape for c in p.coords] == [(30, 2), (10, 2)]
    assert np.allclose(p.coords[1], p.coords[0][:10])  # the same vectors land on the same points
    alone = project(np.vstack([A, B]), method="pca")
    assert np.allclose(np.vstack(p.coords), alone.coords)  # = one fit on the concatenation


def test_nan_rows_are_dropped_and_nan_in_place():
    X = cloud(12)
    Xn = X.copy()
    Xn[3] = np.nan
    Xn[7, 2] = np.inf
    p = project(Xn, method="pca")
    assert np.isnan(p.coords[[3, 7]]).all() and np.isfinite(np.delete(p.coords, [3, 7], axis=0)).all()
    assert np.allclose(np.delete(p.coords, [3, 7], axis=0), project(np.delete(X, [3, 7], axis=0), method="pca").coords)
    assert any("2 of 12 vectors contain NaN/inf" in n for n in p.notes)
    assert p.params["n_points"] == 10 and p.params["n_dropped"] == 2
    # NaN rows in a joint fit stay with their own set
    q = project([Xn[:6], Xn[6:]], method="pca")
    assert np.isnan(q.coords[0][3]).all() and np.isnan(q.coords[1][1]).all()


def test_one_point_and_identical_points_sit_at_the_origin():
    p = project(cloud(1), method="tsne")
    assert np.array_equal(p.coords, np.zeros((1, 2))) and "1 point" in p.notes[0]
    p = project(np.tile(cloud(1), (6, 1)), method="umap", n_components=3)
    assert np.array_equal(p.coords, np.zeros((6, 3))) and "identical" in p.notes[0]
    all_nan = project(np.full((3, 4), np.nan), method="pca")
    assert np.isnan(all_nan.coords).all() and any("no valid vectors" in n for n in all_nan.notes)


def test_fewer_points_than_axes():
    p = project(cloud(2), method="pca", n_components=3)
    assert p.coords.shape == (2, 3)
    assert np.all(p.coords[:, 1:] == 0) and np.allclose(p.explained_variance, [1, 0, 0])
    assert np.allclose(p.coords[0], -p.coords[1])  # two points: symmetric about the mean on axis 1
    assert any("only 1 of 3 PCA axes" in n for n in p.notes)


@pytest.mark.parametrize("method", ["umap", "tsne"])
def test_too_few_points_for_nonlinear_methods_fall_back_to_pca(method):
    p = project(cloud(3), method=method)
    assert p.method == "pca" and p.requested_method == method
    assert p.coords.shape == (3, 2) and np.isfinite(p.coords).all()
    assert any("needs at least 5 distinct points" in n for n in p.notes)
    p = project(np.repeat(cloud(4), 5, axis=0), method=method)  # 20 points, 4 distinct
    assert p.method == "pca" and p.coords.shape == (20, 2)


def test_tsne_puts_exact_copies_on_one_point():
    X = np.vstack([np.repeat(cloud(3, seed=1), 10, axis=0), cloud(30, seed=2)])
    p = project(X, method="tsne")
    assert np.ptp(p.coords[:10], axis=0).max() == 0 and np.ptp(p.coords[10:20], axis=0).max() == 0
    assert "27 duplicate vectors share their original's point (t-SNE fitted on the 33 distinct ones)" in p.notes
    assert p.params["perplexity"] == pytest.approx(32 / 3)  # clipped for the 33 distinct points


def test_tsne_perplexity_clipped_with_a_note():
    p = project(cloud(10), method="tsne")
    assert p.params["perplexity"] == 3.0
    assert "t-SNE's perplexity lowered from 30 to 3: there are only 10 points" in p.notes
    p = project(cloud(100), method="tsne", perplexity=5)
    assert p.params["perplexity"] == 5 and not any("perplexity" in n for n in p.notes)


def test_pre_reduction_for_wide_inputs():
    p = project(cloud(80, d=120), method="tsne", max_iter=250)
    assert p.params["pre_pca"] == 50 and any("pre-reduced from 120 to 50" in n for n in p.notes)
    p = project(cloud(30, d=120), method="tsne", max_iter=250)  # fewer points than 50: nothing to gain
    assert p.params["pre_pca"] is None
    p = project(cloud(80, d=120), method="tsne", max_iter=250, pre_pca=None)
    assert p.params["pre_pca"] is None


@pytest.mark.slow
def test_umap_clips_neighbours_is_seeded_and_joint():
    X = cloud(10)
    p = project(X, method="umap")
    assert p.coords.shape == (10, 2) and np.isfinite(p.coords).all()
    assert p.params["n_neighbors"] == 9 and "UMAP looked at 9 neighbours, not 15: there are only 10 points" in p.notes
    A, B = cloud(40, seed=1), cloud(25, seed=2) + 0.5
    a = project([A, B], method="umap", n_components=3, seed=4)
    b = project([A, B], method="umap", n_components=3, seed=4)
    assert [c.shape for c in a.coords] == [(40, 3), (25, 3)]
    assert all(np.array_equal(x, y) for x, y in zip(a.coords, b.coords))
    whole = project(np.vstack([A, B]), method="umap", n_components=3, seed=4)
    assert np.allclose(np.vstack(a.coords), whole.coords)
    assert a.params["n_neighbors"] == 15 and a.params["min_dist"] == 0.1
    other_seed = project([A, B], method="umap", n_components=3, seed=5)
    assert not np.allclose(np.vstack(other_seed.coords), whole.coords)


@pytest.mark.slow
def test_umap_separates_two_clusters_and_warm_up():
    assert warm_up_umap() > 0
    rng = np.random.default_rng(0)
    centre = rng.normal(size=(2, 64)) * 3
    X = np.vstack([centre[0] + rng.normal(size=(30, 64)), centre[1] + rng.normal(size=(30, 64))])
    Y = project(X, method="umap").coords
    within = max(np.linalg.norm(Y[:30] - Y[:30].mean(0), axis=1).max(), np.linalg.norm(Y[30:] - Y[30:].mean(0),
                                                                                           axis=1).max())
    assert np.linalg.norm(Y[:30].mean(0) - Y[30:].mean(0)) > within


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: project([]), "empty list"),
        (lambda: project(np.ones(5)), r"2-D array .*x\[None, :\]"),
        (lambda: project(np.ones((2, 3, 4))), "2-D array"),
        (lambda: project(np.ones((0, 4))), "0 rows"),
        (lambda: project(np.ones((3, 0))), "width 0"),
        (lambda: project([np.ones((3, 4)), np.ones((3, 5))]), "different widths"),
        (lambda: project(np.array([["a", "b"]])), "not a numeric array"),
        (lambda: project(cloud(5), method="lda"), "unknown projection method 'lda'"),
        (lambda: project(cloud(5), metric="manhattan"), "unknown metric"),
        (lambda: project(cloud(5), n_components=4), "1, 2 or 3"),
        (lambda: project(cloud(5), n_neighbors=1), "n_neighbors"),
        (lambda: project(cloud(5), perplexity=0), "perplexity"),
        (lambda: project(cloud(5), min_dist=-1), "min_dist"),
        (lambda: project(cloud(5), method="tsne", max_iter=10), "max_iter"),
    ],
)
def test_projection_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_library_warnings_become_notes_of_the_thread_that_raised_them():
    """Two visitors project at once: each projection's notes hold its own library warnings, not the other's."""
    import threading
    import warnings

    from ctxmodels.analysis.projections import _notes_from_warnings

    barrier = threading.Barrier(2)
    notes: dict[str, list[str]] = {"alice": [], "bob": []}

    def visitor(name: str) -> None:
        with _notes_from_warnings(notes[name], "UMAP", ignore=("skip me",)):
            for i in range(2):
                barrier.wait()  # both threads warn in lockstep, interleaved
                warnings.warn(f"{name} {i}", UserWarning, stacklevel=1)
                warnings.warn(f"{name} skip me", UserWarning, stacklevel=1)
                warnings.warn(f"{name} old API", DeprecationWarning, stacklevel=1)

    threads = [threading.Thread(target=visitor, args=(n,)) for n in notes]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert notes == {"alice": ["UMAP: alice 0", "UMAP: alice 1"], "bob": ["UMAP: bob 0", "UMAP: bob 1"]}
