"""Two of the Embedding Projector's tools on one layer's occurrence vectors: an occurrence and its nearest
neighbours (in the model's own vectors, not in a 2-D picture of them), and a custom axis from one word to another
(*money* → *river*) that every occurrence is placed on.

The axis works in cosine geometry, as the rest of the word-sense analysis does: every vector is scaled to unit
length first. An occurrence ``u`` sits at ``t = (u − a)·(b − a) / |b − a|²`` along the axis, where ``a`` and
``b`` are the two words' unit vectors: 0 at the first word, 1 at the second, ½ half way, and beyond either end
for an occurrence further out than the word itself. A word's vector (:func:`word_anchor`) is the mean of its
vectors in :data:`FRAMES`, short sentences that say nothing about which sense it has.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..cosine import unit_rows
from . import vectors
from .word_senses import nearest_occurrences

if TYPE_CHECKING:
    from ..loading import LoadedModel

#: the sentences a word is read in for its vector on an axis: the word alone, and two that do not say its sense
FRAMES = ("{w}", "I thought of {w}.", "They talked about {w}.")


def isolated(X: np.ndarray, index: int, k: int) -> list[int]:
    """Occurrence ``index`` and its ``k`` nearest neighbours by cosine in ``X`` [n_occ, dim] (the layer's own
    vectors), the occurrence first, then the nearest first. Rows without a vector are never neighbours."""
    if k < 0:
        raise ValueError(f"k must be 0 or more, got {k}")
    return [index] + [nb.index for nb in nearest_occurrences(X, index, n=k)]


def tied_with_last(X: np.ndarray, picked: Sequence[int], tol: float = 1e-6) -> int:
    """How many occurrences outside ``picked`` (an occurrence, then its nearest: :func:`isolated`) are as near to it
    as its last neighbour (cosine within ``tol``): in a context-free layer every occurrence of one spelling is."""
    if len(picked) < 2:
        return 0
    U = unit_rows(np.asarray(X, dtype=np.float64))
    cos = U @ U[picked[0]]
    last = cos[picked[-1]]
    outside = np.ones(len(U), dtype=bool)
    outside[list(picked)] = False
    return int(np.sum(outside & np.isfinite(cos) & (cos >= last - tol)))


def word_anchor(model: LoadedModel, word: str) -> np.ndarray:
    """The model's vector of ``word`` at every layer, [n_layers, dim]: the mean over :data:`FRAMES` of its vector in
    each (the frames where the model has none left out). ValueError for a word that is not one word, or that the
    model has no vector for in any frame (a word outside a static model's vocabulary)."""
    word = word.strip()
    if not word or len(vectors.split_words(word)) != 1:
        raise ValueError(f"“{word}” is not one word: an axis runs from one word to another")
    found = vectors.find_occurrences([f.format(w=word) for f in FRAMES], word)
    ov = vectors.occurrence_vectors(model, found)
    ok = np.isfinite(ov.vectors).all(axis=(1, 2))
    if not ok.any():
        raise ValueError(f"{model.name} has no vector for “{word}”")
    return ov.vectors[ok].mean(axis=0)


def axis_positions(X: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Where each row of ``X`` [n, dim] sits on the axis from ``a`` to ``b`` (both [dim]), all scaled to unit length
    first: ``t = (u − a)·(b − a) / |b − a|²``, 0 at ``a``, 1 at ``b``. NaN for a row without a vector. ValueError
    when ``a`` and ``b`` point the same way (there is no axis between them)."""
    ua, ub = unit_rows(np.asarray([a, b], dtype=np.float64))
    direction = ub - ua
    length2 = float(direction @ direction)
    if not np.isfinite(length2) or length2 < 1e-12:
        raise ValueError("the two words have the same direction in this layer, so there is no axis between them")
    U = unit_rows(np.asarray(X, dtype=np.float64))
    return (U - ua) @ direction / length2


def axis_coords(X: np.ndarray, a: np.ndarray, b: np.ndarray, n_dims: int = 2) -> np.ndarray:
    """[n, n_dims]: the axis position (:func:`axis_positions`) across, and up what the axis leaves out along the
    other axes: the first principal components of the unit vectors once their part along the axis is taken out (the
    Projector's custom projection with PCA for the rest). Rows without a vector are NaN."""
    t = axis_positions(X, a, b)
    U = unit_rows(np.asarray(X, dtype=np.float64))
    ua, ub = unit_rows(np.asarray([a, b], dtype=np.float64))
    direction = (ub - ua) / np.linalg.norm(ub - ua)
    out = np.full((len(U), n_dims), np.nan)
    ok = np.isfinite(U).all(axis=1)
    out[:, 0] = t
    if ok.sum() < 2 or n_dims < 2:
        if ok.any():
            out[ok, 1:] = 0.0
        return out
    rest = U[ok] - np.outer(U[ok] @ direction, direction)
    rest -= rest.mean(axis=0)
    _, _, vt = np.linalg.svd(rest, full_matrices=False)
    comps = vt[: n_dims - 1]
    # a component's sign is arbitrary: fix it (largest loading positive), so a redraw never mirrors the picture
    comps *= np.sign(comps[np.arange(len(comps)), np.abs(comps).argmax(axis=1)])[:, None]
    out[ok, 1:] = 0.0
    out[ok, 1:1 + len(comps)] = rest @ comps.T
    return out


def same_label_share(labels: Sequence[str | None], picked: Sequence[int]) -> float | None:
    """The share of the neighbours (``picked`` after its first, the occurrence itself) whose label is the
    occurrence's, or None when the occurrence has no label or there are no neighbours."""
    own, near = labels[picked[0]], list(picked[1:])
    if not own or not near:
        return None
    return sum(labels[i] == own for i in near) / len(near)
