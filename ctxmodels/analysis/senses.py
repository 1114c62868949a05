"""How well each layer separates word senses, and how contextual its vectors are.

Sense measurements (vectors of the occurrences of one word, each with a sense label):

* :func:`knn_sense_accuracy` — leave-one-out k-nearest-neighbour classification (cosine by default): every
  occurrence is labelled by its k nearest *other* occurrences. Accuracy and macro-F1
  (:func:`ctxmodels.analysis.metrics.macro_f1`, sklearn's definition; a k-NN only predicts senses present in the
  data, so the mean runs over those senses). Deterministic ties: neighbours at equal distance are taken in input
  order (stable sort); a tied vote goes to the tied sense whose member is nearest (the earliest of the k
  neighbours in that order).
* :func:`centroid_sense_accuracy` — leave-one-out nearest sense centroid. This is the ELMo paper's WSD probe
  (Peters et al. 2018, sec. 5.3: average the vectors of each sense over the training data, label a test
  occurrence by the nearest sense average) with the held-out occurrence removed from its own sense's average.
  Plain 1-NN LOO is the "k-NN on contextual embeddings" protocol (e.g. Wiedemann et al. 2019).
* :func:`mfs_baseline` — the most-frequent-sense baseline computed the same leave-one-out way: each occurrence is
  predicted as the sense most frequent among the *other* occurrences; when several senses tie, the occurrence
  gets 1/(number tied) credit if its sense is among them (the expected score of a random pick, so the result does
  not depend on the input order). It is the honest baseline for a LOO score, but note what removal does: with
  balanced senses (A, B, B, A) the held-out sense is always the minority of the rest, so the LOO MFS is 0.
  :func:`majority_share` is the usual in-sample figure (share of the most frequent sense, 0.5 there);
  :func:`sense_table` reports both.
* :func:`sense_silhouette` — silhouette (cosine) of the sense clusters; NaN with a reason when there are fewer
  than 2 senses or a sense has a single occurrence (silhouette is undefined / meaningless there).

Contextuality (Ethayarajh 2019, "How contextual are contextualized word representations?"):

* :func:`self_similarity` — mean cosine between the vectors of one word in different contexts (pairs i != j).
* :func:`intra_sentence_similarity` — mean cosine of each word of a sentence to the sentence's mean vector.
* :func:`anisotropy_baseline` — mean cosine of random pairs of words from different contexts: how similar any
  two vectors of the layer are. ``adjusted = raw - baseline`` (:func:`contextuality_table`).

Rows with NaN/inf (e.g. words beyond a model's maximum length) are dropped everywhere; the tables say how many
points each figure used.
"""

from __future__ import annotations

import os
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..cosine import unit_rows
from .metrics import macro_f1

METRICS = ("cosine", "euclidean")
#: Distances closer than this are one tie (identical vectors differ only by the rounding of their arithmetic).
TIE = 1e-9


# -- sense measurements ------------------------------------------------------------------------------------


@dataclass
class KnnResult:
    """Leave-one-out k-NN sense classification of one set of occurrence vectors.

    predictions: one per input row (same order), None for rows that were dropped (NaN/inf vector or no label).
    k: the k actually used (clipped to n - 1).  n: occurrences used.  notes: what was dropped or clipped.
    """

    accuracy: float
    macro_f1: float
    predictions: list
    k: int
    n: int
    n_senses: int
    notes: list[str] = field(default_factory=list)


def knn_sense_accuracy(X: np.ndarray, labels: Sequence[Hashable], k: int = 1, metric: str = "cosine") -> KnnResult:
    """Leave-one-out k-NN sense accuracy and macro-F1 (see the module docstring for the protocol and ties)."""
    _check_k(k)
    Xv, codes, names, kept, notes = _prepare(X, labels, "knn_sense_accuracy", metric)
    return _knn(_loo_distances(Xv, metric), codes, names, kept, k, notes)


def _knn(D: np.ndarray, codes: np.ndarray, names: list, kept: np.ndarray, k: int, notes: list[str]) -> KnnResult:
    """k-NN on a distance matrix whose diagonal is +inf (so no point is its own neighbour)."""
    n = len(codes)
    k_used = min(int(k), n - 1)
    notes = list(notes)
    if k_used != k:
        notes.append(f"compared with the {k_used} nearest, not {k}: there are only {n} occurrences")
    neighbours = np.argsort(D, axis=1, kind="stable")[:, :k_used]  # equal distances: lower index first
    neighbour_codes = codes[neighbours]  # [n, k]
    votes = np.zeros((n, len(names)), dtype=np.int64)
    np.add.at(votes, (np.repeat(np.arange(n), k_used), neighbour_codes.ravel()), 1)
    top = votes.max(axis=1)
    # Among the senses with the top vote, the one whose member comes first in the neighbour order wins.
    is_top = votes[np.arange(n)[:, None], neighbour_codes] == top[:, None]
    pred = neighbour_codes[np.arange(n), is_top.argmax(axis=1)]
    return KnnResult(
        accuracy=float(np.mean(pred == codes)),
        macro_f1=macro_f1(codes, pred),
        predictions=_scatter(pred, names, kept),
        k=k_used,
        n=n,
        n_senses=len(names),
        notes=notes,
    )


def centroid_sense_accuracy(X: np.ndarray, labels: Sequence[Hashable], metric: str = "cosine") -> float:
    """Leave-one-out nearest-sense-centroid accuracy (the ELMo paper's probe; see the module docstring).

    A sense whose only occurrence is the held-out one has no centroid left and cannot be predicted for it.
    Senses at the same distance (within :data:`TIE`: a context-free layer gives every occurrence of one spelling
    one vector, so several centroids can be that vector exactly) share the pick: the occurrence gets 1/(number
    tied) credit if its sense is among them, the expected score of a random pick, as :func:`mfs_baseline` counts
    ties. Breaking them by order, or by the last bit of rounding, would score a context-free layer by accident.
    """
    Xv, codes, names, _, _ = _prepare(X, labels, "centroid_sense_accuracy", metric)
    return _centroid_accuracy(Xv, codes, len(names), metric)


def _centroid_accuracy(X: np.ndarray, codes: np.ndarray, n_senses: int, metric: str) -> float:
    n = len(X)
    sums = np.zeros((n_senses, X.shape[1]))
    np.add.at(sums, codes, X)
    counts = np.bincount(codes, minlength=n_senses).astype(np.float64)
    # Distances to every full centroid, then each point's own sense replaced by the centroid without it.
    D = _pairwise(X, sums / counts[:, None], metric)  # [n, n_senses]
    own_count = counts[codes] - 1
    own = np.divide(sums[codes] - X, own_count[:, None], out=np.zeros_like(X), where=own_count[:, None] > 0)
    own_d = _rowwise(X, own, metric)
    D[np.arange(n), codes] = np.where(own_count > 0, own_d, np.inf)
    tied = D <= D.min(axis=1, keepdims=True) + TIE
    return float(np.mean(tied[np.arange(n), codes] / tied.sum(axis=1)))


def mfs_baseline(labels: Sequence[Hashable]) -> float:
    """Leave-one-out most-frequent-sense accuracy (see the module docstring: 0 for perfectly balanced senses).

    Missing labels (None/NaN) are ignored."""
    codes, names = _encode_labels(_present(_check_labels(labels, "mfs_baseline")))
    if len(codes) < 2:
        raise ValueError("mfs_baseline needs at least 2 labelled occurrences")
    counts = np.bincount(codes, minlength=len(names))
    # Holding out an occurrence of sense c only lowers c's count: the credit depends on c alone.
    credit = np.zeros(len(names))
    for c in range(len(names)):
        rest = counts.copy()
        rest[c] -= 1
        tied = rest == rest.max()
        credit[c] = tied[c] / tied.sum()  # a tie is a fair coin among the tied senses, not input order
    return float(np.mean(credit[codes]))


def majority_share(labels: Sequence[Hashable]) -> float:
    """Share of the most frequent sense: the in-sample MFS accuracy most WSD papers quote."""
    codes, _ = _encode_labels(_present(_check_labels(labels, "majority_share")))
    if len(codes) == 0:
        raise ValueError("majority_share needs at least one label")
    return float(np.bincount(codes).max() / len(codes))


def sense_silhouette(X: np.ndarray, labels: Sequence[Hashable], metric: str = "cosine") -> tuple[float, str]:
    """Silhouette of the sense clusters; returns (value, reason). The value is NaN when undefined, with the reason;
    the reason is "" otherwise."""

    Xv, codes, names, _, _ = _prepare(X, labels, "sense_silhouette", metric)
    return _silhouette(_pairwise(Xv, Xv, metric), codes, names)


def _silhouette(D: np.ndarray, codes: np.ndarray, names: list) -> tuple[float, str]:
    from sklearn.metrics import silhouette_score

    if len(names) < 2:
        return float("nan"), f"only one sense ({names[0]!r}): silhouette needs at least 2"
    counts = np.bincount(codes)
    single = [names[c] for c in np.flatnonzero(counts == 1)]
    if single:
        return float("nan"), f"sense(s) {', '.join(map(repr, single))} have a single occurrence"
    D = np.maximum(D, 0.0)  # rounding can leave -1e-16 where sklearn insists on non-negative distances
    np.fill_diagonal(D, 0.0)
    return float(silhouette_score(D, codes, metric="precomputed")), ""


def sense_table(
    vectors: np.ndarray,
    labels: Sequence[Hashable],
    layer_names: Sequence[str] | None = None,
    k: Sequence[int] = (1, 5),
    metric: str = "cosine",
) -> pd.DataFrame:
    """One row per layer: LOO k-NN accuracy and macro-F1 for each k, centroid accuracy, silhouette, baselines.

    vectors: ``[n_occurrences, n_layers, dim]`` (as ``word_vectors(...).vectors``); labels: one sense per occurrence.
    Columns: layer, layer_index, n, n_senses, knn{k}_accuracy, knn{k}_macro_f1 (each k), centroid_accuracy,
    silhouette, mfs_accuracy (LOO), majority_share, note.
    """
    V = np.asarray(vectors, dtype=np.float64)
    if V.ndim != 3:
        raise ValueError(f"sense_table expects vectors [n_occurrences, n_layers, dim], got shape {V.shape}")
    n_layers = V.shape[1]
    names = list(layer_names) if layer_names is not None else [f"layer {i}" for i in range(n_layers)]
    if len(names) != n_layers:
        raise ValueError(f"{len(names)} layer names for {n_layers} layers")
    ks = [k] if isinstance(k, (int, np.integer)) else list(k)
    if not ks:
        raise ValueError("sense_table needs at least one k")
    for kk in ks:
        _check_k(kk)
    rows = []
    with _thread_limit():
        for layer, name in enumerate(names):
            Xv, codes, senses, kept, dropped = _prepare(V[:, layer, :], labels, f"sense_table ({name})", metric)
            D = _pairwise(Xv, Xv, metric)  # one distance matrix per layer serves every measure
            row: dict = {"layer": name, "layer_index": layer, "n": len(Xv), "n_senses": len(senses)}
            notes = list(dropped)
            loo = D.copy()
            np.fill_diagonal(loo, np.inf)
            for kk in ks:
                r = _knn(loo, codes, senses, kept, kk, [])
                row[f"knn{kk}_accuracy"], row[f"knn{kk}_macro_f1"] = r.accuracy, r.macro_f1
                notes += r.notes
            row["centroid_accuracy"] = _centroid_accuracy(Xv, codes, len(senses), metric)
            row["silhouette"], reason = _silhouette(D, codes, senses)
            if reason:
                notes.append(f"silhouette: {reason}")
            used = [senses[c] for c in codes]
            row["mfs_accuracy"], row["majority_share"] = mfs_baseline(used), majority_share(used)
            row["note"] = "; ".join(notes)
            rows.append(row)
    front = ["layer", "layer_index", "n", "n_senses"]
    table = pd.DataFrame(rows)
    return table[front + [c for c in table.columns if c not in front]]


# -- contextuality (Ethayarajh 2019) -------------------------------------------------------------------------


def self_similarity(vectors: np.ndarray) -> float:
    """Mean cosine between the vectors of one word in its different contexts, over pairs i != j.

    A context-free (static) model gives exactly 1. Needs at least 2 valid occurrences.
    """
    X = _finite_rows(vectors, "self_similarity")
    if len(X) < 2:
        raise ValueError(f"self_similarity needs at least 2 occurrences with finite vectors, got {len(X)}")
    U = unit_rows(X)
    # sum_{i != j} cos(x_i, x_j) = |sum_i u_i|^2 - sum_i |u_i|^2: O(n d) instead of the n x n matrix.
    total = U.sum(axis=0)
    n = len(U)
    return float((total @ total - np.sum(U * U)) / (n * (n - 1)))


def intra_sentence_similarity(vectors: np.ndarray) -> float:
    """Mean cosine of each word of one sentence ``[n_words, dim]`` to the sentence's mean vector (needs 2+ words)."""
    X = _finite_rows(vectors, "intra_sentence_similarity")
    if len(X) < 2:
        raise ValueError(f"intra_sentence_similarity needs a sentence of at least 2 words with finite vectors, "
                         f"got {len(X)} (a one-word sentence is trivially 1)")
    mean = X.mean(axis=0)
    return float(np.mean(unit_rows(X) @ unit_rows(mean[None, :])[0]))


def anisotropy_baseline(
    vectors: np.ndarray, context_ids: Sequence[int] | None = None, n_pairs: int = 1000, seed: int = 0
) -> float:
    """Mean cosine of random pairs of word vectors from different contexts (Ethayarajh's anisotropy baseline).

    vectors: ``[n, dim]`` word vectors of one layer; context_ids: the sentence each comes from (None: every
    vector is its own context). Pairs are drawn uniformly with replacement among pairs from different contexts;
    when there are no more such pairs than ``n_pairs``, all of them are used (exact). Reproducible with ``seed``.
    """
    X = np.asarray(vectors, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"anisotropy_baseline expects [n_words, dim], got shape {X.shape}")
    ctx = np.arange(len(X)) if context_ids is None else np.asarray(context_ids)
    if len(ctx) != len(X):
        raise ValueError(f"{len(ctx)} context ids for {len(X)} vectors")
    if n_pairs < 1:
        raise ValueError(f"n_pairs must be positive, got {n_pairs}")
    ok = np.isfinite(X).all(axis=1)
    U, ctx = unit_rows(X[ok]), ctx[ok]
    n = len(U)
    _, sizes = np.unique(ctx, return_counts=True)
    eligible = n * (n - 1) // 2 - int(np.sum(sizes * (sizes - 1) // 2))
    if eligible == 0:
        raise ValueError(f"anisotropy_baseline needs words from at least 2 different contexts (got {n} finite "
                         f"vectors from {len(sizes)} context(s))")
    if eligible <= n_pairs:
        i, j = np.triu_indices(n, k=1)
        keep = ctx[i] != ctx[j]
        i, j = i[keep], j[keep]
    else:
        rng = np.random.default_rng(seed)
        i_parts, j_parts, got = [], [], 0
        while got < n_pairs:  # rejection sampling; at least one pair in ~n^2/eligible draws is kept
            a, b = rng.integers(0, n, size=(2, 2 * n_pairs))
            keep = ctx[a] != ctx[b]
            i_parts.append(a[keep])
            j_parts.append(b[keep])
            got += int(keep.sum())
        i, j = np.concatenate(i_parts)[:n_pairs], np.concatenate(j_parts)[:n_pairs]
    return float(np.mean(np.sum(U[i] * U[j], axis=1)))


def contextuality_table(
    sentence_vectors: Sequence[np.ndarray],
    layer_names: Sequence[str] | None = None,
    occurrences: np.ndarray | None = None,
    words: Sequence[Sequence[str]] | None = None,
    min_occurrences: int = 5,
    n_pairs: int = 1000,
    seed: int = 0,
) -> pd.DataFrame:
    """Ethayarajh's measures per layer, raw and adjusted for anisotropy (``adjusted = raw - baseline``).

    sentence_vectors: one ``[n_layers, n_words, dim]`` array per sentence (what ``LoadedModel.embed`` returns);
        they give the intra-sentence similarity (mean over sentences with 2+ words) and the anisotropy baseline
        (random word pairs from different sentences, the same ``seed`` in every layer).
    occurrences: ``[n_occ, n_layers, dim]`` vectors of one target word -> its self-similarity. Otherwise, when
        ``words`` (the tokens of each sentence, aligned with the vectors) is given: the mean self-similarity over
        the word types (lower-cased) with at least ``min_occurrences`` occurrences (5 in the paper). Otherwise the
        self-similarity columns are NaN.
    Columns: layer, layer_index, self_similarity, self_similarity_adjusted, intra_sentence_similarity,
    intra_sentence_adjusted, anisotropy, n_self (occurrences or word types used), n_sentences (used for intra).
    """
    sents = [np.asarray(s, dtype=np.float64) for s in sentence_vectors]
    if not sents:
        raise ValueError("contextuality_table needs at least one sentence")
    bad = [i for i, s in enumerate(sents) if s.ndim != 3]
    if bad:
        raise ValueError(f"sentence {bad[0]}: expected [n_layers, n_words, dim], got shape {sents[bad[0]].shape}")
    n_layers, dim = sents[0].shape[0], sents[0].shape[2]
    bad = [i for i, s in enumerate(sents) if s.shape[0] != n_layers or s.shape[2] != dim]
    if bad:
        raise ValueError(f"sentence {bad[0]} has shape {sents[bad[0]].shape}, sentence 0 has {sents[0].shape}: "
                         "all sentences must come from the same model")
    names = list(layer_names) if layer_names is not None else [f"layer {i}" for i in range(n_layers)]
    if len(names) != n_layers:
        raise ValueError(f"{len(names)} layer names for {n_layers} layers")
    occ = None
    if occurrences is not None:
        occ = np.asarray(occurrences, dtype=np.float64)
        if occ.ndim != 3 or occ.shape[1:] != (n_layers, dim):
            raise ValueError(f"occurrences must be [n_occ, {n_layers}, {dim}] like the sentences, got {occ.shape}")
    types = _word_types(words, sents, min_occurrences) if occ is None and words is not None else None

    all_words = np.concatenate([s.transpose(1, 0, 2) for s in sents], axis=0)  # [total words, layers, dim]
    ctx = np.repeat(np.arange(len(sents)), [s.shape[1] for s in sents])
    rows = []
    for layer, name in enumerate(names):
        baseline = anisotropy_baseline(all_words[:, layer], ctx, n_pairs=n_pairs, seed=seed)
        intra = [intra_sentence_similarity(s[layer]) for s in sents if np.isfinite(s[layer]).all(axis=1).sum() >= 2]
        if occ is not None:
            self_sim, n_self = self_similarity(occ[:, layer]), int(np.isfinite(occ[:, layer]).all(axis=1).sum())
        elif types:
            sims = [self_similarity(np.stack([sents[s][layer, w] for s, w in places])) for places in types.values()]
            self_sim, n_self = float(np.mean(sims)), len(sims)
        else:
            self_sim, n_self = float("nan"), 0
        intra_mean = float(np.mean(intra)) if intra else float("nan")
        rows.append({
            "layer": name,
            "layer_index": layer,
            "self_similarity": self_sim,
            "self_similarity_adjusted": self_sim - baseline,
            "intra_sentence_similarity": intra_mean,
            "intra_sentence_adjusted": intra_mean - baseline,
            "anisotropy": baseline,
            "n_self": n_self,
            "n_sentences": len(intra),
        })
    return pd.DataFrame(rows)


# -- helpers -------------------------------------------------------------------------------------------------


def _word_types(words, sents, min_occurrences) -> dict[str, list[tuple[int, int]]]:
    """Lower-cased word type -> (sentence, word) places, for types with enough occurrences with finite vectors."""
    if len(words) != len(sents):
        raise ValueError(f"{len(words)} token lists for {len(sents)} sentences")
    places: dict[str, list[tuple[int, int]]] = {}
    for s, (tokens, vecs) in enumerate(zip(words, sents)):
        if len(tokens) != vecs.shape[1]:
            raise ValueError(f"sentence {s}: {len(tokens)} tokens but {vecs.shape[1]} word vectors")
        finite = np.isfinite(vecs).all(axis=(0, 2))
        for w, tok in enumerate(tokens):
            if finite[w]:
                places.setdefault(tok.lower(), []).append((s, w))
    return {t: p for t, p in places.items() if len(p) >= max(2, min_occurrences)}


def _check_labels(labels, where: str) -> list:
    if isinstance(labels, (str, bytes)):
        raise ValueError(f"{where}: labels must be a sequence with one sense label per occurrence, not a string")
    return list(labels)


def _is_missing(label) -> bool:
    return label is None or (isinstance(label, float) and np.isnan(label))


def _present(labels: list) -> list:
    return [lab for lab in labels if not _is_missing(lab)]


def _check_metric(metric: str) -> None:
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; choose one of {', '.join(METRICS)}")


def _encode_labels(labels: list) -> tuple[np.ndarray, list]:
    """Integer codes in order of first appearance (which is also the tie-breaking order)."""
    index: dict = {}
    codes = np.array([index.setdefault(lab, len(index)) for lab in labels], dtype=np.int64)
    return codes, list(index)


def _prepare(X, labels, where: str, metric: str = "cosine"):
    """Drop rows with NaN/inf vectors or missing labels; returns (X, codes, sense names, kept mask, notes)."""
    _check_metric(metric)
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"{where}: expected vectors [n_occurrences, dim], got shape {X.shape}")
    labels = _check_labels(labels, where)
    if len(labels) != len(X):
        raise ValueError(f"{where}: {len(X)} vectors but {len(labels)} labels; give one sense label per occurrence")
    finite = np.isfinite(X).all(axis=1)
    labelled = np.array([not _is_missing(lab) for lab in labels], dtype=bool)
    kept = finite & labelled
    notes = []
    if (~finite).any():
        notes.append(f"{int((~finite).sum())} occurrence(s) with NaN/inf vectors left out")
    if (~labelled).any():
        notes.append(f"{int((~labelled).sum())} occurrence(s) without a sense label left out")
    if kept.sum() < 2:
        raise ValueError(f"{where}: needs at least 2 labelled occurrences with finite vectors, got {int(kept.sum())}")
    codes, names = _encode_labels([lab for lab, k in zip(labels, kept) if k])
    return X[kept], codes, names, kept, notes


def _scatter(pred_codes: np.ndarray, names: list, kept: np.ndarray) -> list:
    out: list = [None] * len(kept)
    for pos, c in zip(np.flatnonzero(kept), pred_codes):
        out[pos] = names[c]
    return out


def _pairwise(X: np.ndarray, Y: np.ndarray, metric: str) -> np.ndarray:
    """Distances [len(X), len(Y)]: cosine = 1 - cos (zero vectors: cos 0), or euclidean."""
    if metric == "cosine":
        return 1.0 - unit_rows(X) @ unit_rows(Y).T
    sx, sy = np.sum(X * X, axis=1), np.sum(Y * Y, axis=1)
    return np.sqrt(np.maximum(sx[:, None] + sy[None, :] - 2 * X @ Y.T, 0.0))


def _rowwise(X: np.ndarray, Y: np.ndarray, metric: str) -> np.ndarray:
    """Distance of each row of X to the same row of Y."""
    if metric == "cosine":
        return 1.0 - np.sum(unit_rows(X) * unit_rows(Y), axis=1)
    return np.linalg.norm(X - Y, axis=1)


def _loo_distances(X: np.ndarray, metric: str) -> np.ndarray:
    with _thread_limit():
        D = _pairwise(X, X, metric)
    np.fill_diagonal(D, np.inf)  # leave one out: a point is never its own neighbour
    return D


def _thread_limit():
    """BLAS with every core busy-waits on a small shared machine (10x slower measured); use half of them."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(max(1, (os.cpu_count() or 2) // 2))


def _check_k(k) -> None:
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")


def _finite_rows(vectors, where: str) -> np.ndarray:
    X = np.asarray(vectors, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"{where}: expected [n, dim] vectors, got shape {X.shape}")
    if len(X) == 0:
        raise ValueError(f"{where}: no vectors given")
    return X[np.isfinite(X).all(axis=1)]
