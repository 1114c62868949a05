"""2-D / 3-D projections of word vectors: UMAP, PCA and t-SNE behind one call.

``project(X)`` or ``project([X_a, X_b])`` returns a :class:`Projection`. Several sets are fitted jointly on their
concatenation so that they share axes (e.g. a static and a contextual layer of the same occurrences, or two
models); the coordinates come back split per set.

What the function does beyond calling the library, and why:

* ``metric="cosine"`` (the default) L2-normalises every row first and then works with euclidean distances. On unit
  vectors ``|a - b|^2 = 2 - 2 cos(a, b)``, so nearest neighbours (UMAP) and perplexity-calibrated affinities
  (t-SNE) are the cosine ones, PCA becomes PCA of the directions, and PCA pre-reduction keeps its meaning.
  Zero vectors stay zero (their cosine is undefined).
* Rows with NaN or inf (e.g. words beyond a model's maximum length) are dropped before fitting; their coordinates
  are NaN in place and a note says how many.
* Small inputs give a picture rather than an exception: UMAP's ``n_neighbors`` and t-SNE's ``perplexity`` are
  clipped to the number of points (with a note), fewer than :data:`MIN_POINTS_NONLINEAR` distinct points fall
  back to PCA, one point or identical points sit at the origin, and PCA axes that n points cannot span are 0.
  UMAP and t-SNE are fitted on the distinct vectors; exact copies share their original's point (otherwise
  t-SNE scatters identical vectors far apart, having no distance scale among them).
* Large inputs: UMAP and t-SNE first reduce to ``pre_pca`` (50) dimensions with PCA when the vectors are wider
  than that and there are more points than that (the usual scanpy / openTSNE practice; fitting cost grows
  with the width, and the discarded directions are mostly noise).
* BLAS and OpenMP (PCA, t-SNE) run with at most half the CPU cores (``n_threads``) while fitting: on a small,
  shared machine every core busy-waiting gets 10-30x slower (measured on the 2-core dev box under load: PCA of
  300 x 512 0.2 s with 1 thread vs 6 s with 2; t-SNE of 300 points 3.2 s vs 26 s). threadpoolctl's limit is
  process-wide while it lasts.

Start-up cost of UMAP: ``import umap`` takes 15-35 s on a cold machine and the first fit compiles numba code
(10-13 s). ``umap`` is therefore imported lazily inside :func:`project`, and a server should call
:func:`warm_up_umap` once in a background thread at start-up (``start_umap_warm_up()`` does exactly that), so
the first UMAP a person asks for is fast.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from ..cosine import unit_rows
from ..thread_warnings import CHATTER, caught_warnings

METHODS = ("umap", "pca", "tsne")
DISPLAY = {"umap": "UMAP", "pca": "PCA", "tsne": "t-SNE"}
METRICS = ("cosine", "euclidean")
MIN_POINTS_NONLINEAR = 5  # below this UMAP / t-SNE have no neighbourhoods worth the name: PCA instead


@dataclass
class Projection:
    """Coordinates of a projection and how they were made.

    coords: ``[n, n_components]`` for one input array, or a list of such arrays (one per input set, same order)
        when a list was given. Rows that were dropped (NaN/inf input) are NaN.
    method: the method actually used ("pca" when a small input fell back from UMAP/t-SNE; see ``notes``).
    requested_method: what the caller asked for.
    params: the parameters actually used (after clipping), e.g. ``n_neighbors``, ``perplexity``, ``pre_pca``.
    notes: human-readable remarks for the app to show (clipping, fallbacks, dropped rows, library warnings).
    explained_variance: PCA only: fraction of the total variance along each axis (sklearn's
        ``explained_variance_ratio_``; 0 for axes the points cannot span). None for UMAP / t-SNE.
    """

    coords: np.ndarray | list[np.ndarray]
    method: str
    requested_method: str
    n_components: int
    params: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    explained_variance: np.ndarray | None = None

    @property
    def joint(self) -> bool:
        return isinstance(self.coords, list)


def project(
    vectors: np.ndarray | Sequence[np.ndarray],
    method: str = "umap",
    n_components: int = 2,
    seed: int = 0,
    n_neighbors: int = 15,
    min_dist: float = 0.1,
    perplexity: float = 30.0,
    metric: str = "cosine",
    pre_pca: int | None = 50,
    max_iter: int | None = None,
    n_threads: int | None = None,
    dim: int | None = None,
) -> Projection:
    """Project vectors to ``n_components`` (1-3) dimensions; see the module docstring for the details.

    vectors: ``[n, d]`` array, or a list of such arrays (same ``d``) fitted jointly so they share axes.
    method: "umap" | "pca" | "tsne".  seed: makes every method reproducible (same input, same seed -> same output);
        t-SNE starts from the PCA layout (sklearn's default), so its result does not depend on the seed at all.
    n_neighbors, min_dist: UMAP.  perplexity, max_iter: t-SNE (sklearn's default 1000 iterations when None).
    metric: "cosine" (rows L2-normalised first) or "euclidean".
    pre_pca: width to reduce to with PCA before UMAP / t-SNE when ``d`` and ``n`` both exceed it; None or 0: never.
    n_threads: BLAS/OpenMP threads while fitting (default: half the CPU cores, at least 1).
    dim: alias of ``n_components``.
    """
    if dim is not None:
        n_components = dim
    sets, joint = _as_sets(vectors)
    _check_params(method, n_components, n_neighbors, min_dist, perplexity, metric, pre_pca, max_iter)

    X = np.concatenate(sets, axis=0)
    valid = np.isfinite(X).all(axis=1)
    notes: list[str] = []
    n_dropped = int((~valid).sum())
    if n_dropped:
        notes.append(f"{n_dropped} of {len(X)} vectors contain NaN/inf (e.g. words past the model's maximum length):"
                     " left out, their coordinates are NaN")
    Xv = X[valid]
    if metric == "cosine":
        Xv = unit_rows(Xv)
    params: dict[str, Any] = {"n_components": n_components, "seed": seed, "metric": metric,
                              "input_dim": X.shape[1], "n_points": int(len(Xv)), "n_dropped": n_dropped}

    threads = n_threads or max(1, (os.cpu_count() or 2) // 2)
    params["threads"] = threads
    with threadpool_limits(threads):
        used, Y, explained = _fit(Xv, method, n_components, seed, n_neighbors, min_dist, perplexity, pre_pca,
                                  max_iter, params, notes)
    params["method"] = used

    full = np.full((len(X), n_components), np.nan)
    full[valid] = Y
    if joint:
        bounds = np.cumsum([len(s) for s in sets])[:-1]
        coords: np.ndarray | list[np.ndarray] = list(np.split(full, bounds))
    else:
        coords = full
    return Projection(coords=coords, method=used, requested_method=method, n_components=n_components,
                      params=params, notes=notes, explained_variance=explained)


def _fit(X, method, n_components, seed, n_neighbors, min_dist, perplexity, pre_pca, max_iter, params, notes):
    """Dispatch on size and method; returns (method used, coords [n, n_components], explained variance or None)."""
    n = len(X)
    if n == 0:
        notes.append("no valid vectors to project")
        return method, np.zeros((0, n_components)), None
    if n == 1 or _all_identical(X):
        what = "1 point" if n == 1 else f"all {n} vectors identical" + (" in direction" if params["metric"] ==
                                                                         "cosine" else "")
        notes.append(f"{what}: placed at the origin")
        explained = np.zeros(n_components) if method == "pca" else None
        return method, np.zeros((n, n_components)), explained
    inverse = None
    if method != "pca":
        # Exact duplicates (e.g. a static layer: one vector per word type) leave t-SNE/UMAP without a scale
        # and get scattered apart; fit the distinct vectors and put every copy on its original's point.
        distinct, inverse = np.unique(X, axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
        if len(distinct) < MIN_POINTS_NONLINEAR:
            notes.append(f"{DISPLAY[method]} needs at least {MIN_POINTS_NONLINEAR} distinct points; showing PCA of "
                         f"the {n} points")
            method, inverse = "pca", None
        elif len(distinct) < n:
            notes.append(f"{n - len(distinct)} duplicate vectors share their original's point ({DISPLAY[method]} "
                         f"fitted on the {len(distinct)} distinct ones)")
            X, n = distinct, len(distinct)
        else:
            inverse = None
    if method == "pca":
        Y, explained = _pca(X, n_components, seed, notes)
        return "pca", Y, explained

    if pre_pca and X.shape[1] > pre_pca and n > pre_pca:
        X, kept = _pca_reduce(X, pre_pca, seed)
        params["pre_pca"] = pre_pca
        notes.append(f"pre-reduced from {params['input_dim']} to {pre_pca} dimensions with PCA "
                     f"({kept:.0%} of the variance kept)")
    else:
        params["pre_pca"] = None
    if method == "umap":
        Y = _umap(X, n_components, seed, n_neighbors, min_dist, params, notes)
    else:
        Y = _tsne(X, n_components, seed, perplexity, max_iter, params, notes)
    return method, (Y if inverse is None else Y[inverse]), None


def _pca(X: np.ndarray, n_components: int, seed: int, notes: list[str]) -> tuple[np.ndarray, np.ndarray]:
    from sklearn.decomposition import PCA

    n, d = X.shape
    # n centred points span at most n-1 directions; further axes would be arbitrary, so they are 0.
    k = min(n_components, n - 1, d)
    if k < n_components:
        notes.append(f"only {k} of {n_components} PCA axes carry variance ({n} points in {d} dimensions); the rest "
                     "are 0")
    pca = PCA(n_components=k, svd_solver="full", random_state=seed)
    Y = np.zeros((n, n_components))
    Y[:, :k] = pca.fit_transform(X)
    explained = np.zeros(n_components)
    explained[:k] = pca.explained_variance_ratio_
    return Y, explained


def _pca_reduce(X: np.ndarray, width: int, seed: int) -> tuple[np.ndarray, float]:
    from sklearn.decomposition import PCA

    pca = PCA(n_components=width, random_state=seed)
    Xr = pca.fit_transform(X)
    return Xr, float(pca.explained_variance_ratio_.sum())


LARGE_UMAP = 2_000  # points from which UMAP optimises for 200 epochs (its own choice from 10,000)


def _umap(X, n_components, seed, n_neighbors, min_dist, params, notes) -> np.ndarray:
    n = len(X)
    k = max(2, min(int(n_neighbors), n - 1))
    if k != n_neighbors:
        notes.append(f"UMAP looked at {k} neighbours, not {n_neighbors}: there are only {n} points")
    params.update(n_neighbors=k, min_dist=min_dist)
    umap = _import_umap()
    knn = _exact_knn(X, k)
    # UMAP runs 500 optimisation epochs below 10,000 points and 200 above. From a few thousand points 200 already
    # settle the layout, at 40% of the time (5,000 points: 1.9 s instead of 4.5 s), which a corpus view feels.
    epochs = 200 if n >= LARGE_UMAP else None

    def fit(init: str) -> np.ndarray:
        # n_jobs=1: a fixed random_state forces it anyway, and saying so avoids UMAP's warning.
        reducer = umap.UMAP(n_neighbors=k, n_components=n_components, min_dist=min_dist, metric="euclidean",
                            random_state=seed, n_jobs=1, init=init, tqdm_kwds={"disable": True},
                            precomputed_knn=knn, n_epochs=epochs)
        with _notes_from_warnings(notes, "UMAP", ignore=("knn_search_index",)):
            return reducer.fit_transform(X)

    try:
        Y = fit("spectral")
    except (TypeError, ValueError) as e:  # spectral init can fail on tiny or degenerate neighbour graphs
        notes.append(f"UMAP spectral initialisation failed ({e}); used random initialisation")
        Y = fit("random")
        params["init"] = "random"
    return np.asarray(Y, dtype=np.float64)


def _exact_knn(X: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, None]:
    """Exact k nearest neighbours (the point itself first, as UMAP expects) for UMAP's ``precomputed_knn``.

    Why not let UMAP search: its own path compiles a parallel numba kernel (small inputs) or pynndescent (4096+
    points) on first use, half of UMAP's cold-start time (measured: 35 of 70 s under load); sklearn's exact
    search is already compiled and, at the widths used here (<= pre_pca dims), fast for the sizes an app shows.
    The search index is None: this UMAP cannot ``transform`` new points, which we never do.
    """
    from sklearn.neighbors import NearestNeighbors

    dists, idx = NearestNeighbors(n_neighbors=k - 1).fit(X).kneighbors()  # without X: excludes each point itself
    n = len(X)
    idx = np.hstack([np.arange(n)[:, None], idx]).astype(np.int32)
    dists = np.hstack([np.zeros((n, 1)), dists]).astype(np.float32)
    return idx, dists, None


def _tsne(X, n_components, seed, perplexity, max_iter, params, notes) -> np.ndarray:
    from sklearn.manifold import TSNE

    n, d = X.shape
    # sklearn needs perplexity < n; (n-1)/3 keeps the 3*perplexity neighbours it uses within the data.
    p = float(max(1.0, min(perplexity, (n - 1) / 3)))
    if p != perplexity:
        notes.append(f"t-SNE's perplexity lowered from {perplexity:g} to {p:.3g}: there are only {n} points")
    init = "pca" if d >= n_components else "random"
    params.update(perplexity=p, init=init)
    kwargs = {"max_iter": max_iter} if max_iter else {}
    tsne = TSNE(n_components=n_components, perplexity=p, init=init, learning_rate="auto", random_state=seed,
                method="barnes_hut" if n_components < 4 else "exact", **kwargs)
    params["max_iter"] = tsne.max_iter
    with _notes_from_warnings(notes, "t-SNE"):
        return np.asarray(tsne.fit_transform(X), dtype=np.float64)


def warm_up_umap(n_components: int = 2) -> float:
    """Import umap and run one tiny fit so numba compiles its code; returns the seconds it took.

    Call once at server start-up, off the request path::

        threading.Thread(target=warm_up_umap, daemon=True).start()   # or start_umap_warm_up()

    A later :func:`project` in any thread then skips the import (15-35 s cold) and the first-fit compilation
    (10-13 s). The fit uses the same settings as :func:`project` so the same compiled functions are reused.
    """
    start = time.perf_counter()
    X = np.random.default_rng(0).normal(size=(40, 8))
    project(X, method="umap", n_components=n_components, seed=0)
    return time.perf_counter() - start


def start_umap_warm_up() -> threading.Thread:
    """Run :func:`warm_up_umap` in a daemon thread and return the thread (join it to wait)."""
    thread = threading.Thread(target=warm_up_umap, name="umap-warm-up", daemon=True)
    thread.start()
    return thread


def _import_umap():
    with caught_warnings():  # umap / numba emit import-time deprecation chatter: dropped
        import umap
    return umap


@contextmanager
def _notes_from_warnings(notes: list[str], prefix: str, ignore: tuple[str, ...] = ()) -> Iterator[None]:
    """Turn library warnings raised inside the block into notes (shown by the app) instead of stderr noise.

    Only this thread's warnings are caught (:mod:`ctxmodels.thread_warnings`): the app projects for several
    visitors at once, and ``warnings.catch_warnings`` would swap process-wide state under the others."""
    with caught_warnings() as caught:
        yield
    messages = (str(message).strip() for message, category in caught if not issubclass(category, CHATTER))
    for msg in dict.fromkeys(messages):
        if not any(part in msg for part in ignore):
            notes.append(f"{prefix}: {msg}")


def _as_sets(vectors) -> tuple[list[np.ndarray], bool]:
    """Validate input; returns (list of float64 [n_i, d] arrays, whether a list was given)."""
    joint = isinstance(vectors, (list, tuple))
    raw = list(vectors) if joint else [vectors]
    if not raw:
        raise ValueError("project() got an empty list of vector sets; pass at least one [n, dim] array")
    sets = []
    for i, s in enumerate(raw):
        where = f"vector set {i}" if joint else "vectors"
        try:
            a = np.asarray(s, dtype=np.float64)
        except (TypeError, ValueError) as e:
            raise ValueError(f"{where}: not a numeric array ({e})") from e
        if a.ndim != 2:
            raise ValueError(f"{where}: expected a 2-D array [n_points, dim], got shape {a.shape}"
                             + ("; for one vector use x[None, :]" if a.ndim == 1 else ""))
        if a.shape[1] == 0:
            raise ValueError(f"{where}: vectors have width 0")
        sets.append(a)
    widths = {a.shape[1] for a in sets}
    if len(widths) > 1:
        raise ValueError(f"vector sets have different widths {[a.shape[1] for a in sets]}; joint projection needs "
                         "the same dimension (project each layer/model separately, or pick matching layers)")
    if sum(len(a) for a in sets) == 0:
        raise ValueError("no vectors to project (0 rows)")
    return sets, joint


def _check_params(method, n_components, n_neighbors, min_dist, perplexity, metric, pre_pca, max_iter) -> None:
    if method not in METHODS:
        raise ValueError(f"unknown projection method {method!r}; choose one of {', '.join(METHODS)}")
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; choose one of {', '.join(METRICS)}")
    if not isinstance(n_components, (int, np.integer)) or not 1 <= n_components <= 3:
        raise ValueError(f"n_components must be 1, 2 or 3, got {n_components!r}")
    if int(n_neighbors) < 2:
        raise ValueError(f"UMAP n_neighbors must be at least 2, got {n_neighbors}")
    if not min_dist >= 0:
        raise ValueError(f"UMAP min_dist must be >= 0, got {min_dist}")
    if not perplexity > 0:
        raise ValueError(f"t-SNE perplexity must be > 0, got {perplexity}")
    if pre_pca is not None and pre_pca < 0:
        raise ValueError(f"pre_pca must be a positive width, 0 or None, got {pre_pca}")
    if max_iter is not None and max_iter < 250:
        raise ValueError(f"t-SNE max_iter must be at least 250 (sklearn's minimum), got {max_iter}")


def _all_identical(X: np.ndarray) -> bool:
    scale = max(1.0, float(np.abs(X).max()))
    return bool(np.abs(X - X[0]).max() <= 1e-9 * scale)
