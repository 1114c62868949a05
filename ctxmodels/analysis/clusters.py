"""Senses without labels: cluster a word's occurrences, name the clusters, compare them with sense labels.

* :func:`cluster_vectors` — k-means in cosine geometry (rows scaled to unit length first); with ``k=None`` the
  k in a range with the best cosine silhouette. Occurrences without a vector (NaN) get cluster -1.
* :func:`name_clusters` — each cluster's most distinctive context words: the weighted log-odds ratio with an
  informative Dirichlet prior (Monroe, Colaresi & Quinn 2008, "Fightin' words"), one cluster against the others.
* :func:`cluster_layers` — both, at several layers (or ELMo's learned mix), with the adjusted Rand index against
  sense labels when there are any: does the unsupervised grouping find the senses the labels name?
* :func:`cluster_agreement_table` — the columns ``cluster_k``, ``cluster_silhouette`` and ``cluster_ari`` to merge
  into :func:`~ctxmodels.analysis.word_senses.measure_word`'s per-layer table (on ``layer_index``).
* :func:`cluster_label_names` — one display label per occurrence, e.g. ``"cluster 1: river, water, boat"``;
  :func:`spelling_names` — the same when the clusters are the word's spellings (a context-free layer's), named so.

Cluster numbers are ordered by size (0 is the largest; ties: the cluster met first), so the same grouping gets the
same numbers whatever ids k-means happened to give it; displays count from 1.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..cosine import unit_rows
from .senses import _thread_limit
from .vectors import OccurrenceSearch
from .word_senses import MIX, LearnedMix, layer_vectors

N_INIT = 4  # k-means restarts: a fixed number, so results do not move with sklearn's default
# With 3 points any 2 clusters leave one point alone, whose silhouette is 0 by convention: nothing to choose from.
MIN_POINTS = 4
SILHOUETTE_SAMPLE = 2000  # above this many points the silhouette is measured on a seeded sample (O(n^2) memory)
NO_CLUSTER = "—"

# Function words that would otherwise name every cluster ("the", "of"): a short list, not a linguistic claim.
STOP_WORDS = frozenset("""
a about above after again against all am an and any are as at be because been before being below between both but
by can could did do does doing down during each few for from further had has have having he her here hers herself
him himself his how i if in into is it its itself just me more most my myself no nor not now of off on once only or
other our ours ourselves out over own same she should so some such than that the their theirs them themselves then
there these they this those through to too under until up upon very was we were what when where which while who
whom why will with would you your yours yourself yourselves shall may might must also yet ever never one us thus
thee thou thy thine hath doth 's don't didn't doesn't isn't wasn't weren't won't wouldn't can't couldn't shouldn't
i'm i've i'll i'd you're you've you'll you'd he's she's it's we're we've we'll they're they've they'll that's
there's let's said mr mrs miss
""".split())

_APOSTROPHES = str.maketrans({"’": "'"})


@dataclass
class Clustering:
    """One grouping of a word's occurrences."""

    labels: np.ndarray  # int [n_occ]: the cluster of each occurrence, -1 where its vector is not finite
    k: int
    silhouettes: dict[int, float]  # k -> cosine silhouette, for each k tried (empty when k was given)
    names: dict[int, list[str]] = field(default_factory=dict)  # cluster -> distinctive words (name_clusters)
    notes: list[str] = field(default_factory=list)  # what was left out, clipped or could not be done

    @property
    def silhouette(self) -> float:
        """The silhouette of the k chosen (NaN when k was given and none was measured)."""
        return self.silhouettes.get(self.k, float("nan"))


def cluster_vectors(
    X: np.ndarray, k: int | None = None, k_range: tuple[int, int] = (2, 8), seed: int = 0
) -> Clustering:
    """Cluster the rows of ``X`` [n_occ, dim] by direction (cosine); the same ``seed`` gives the same result.

    ``k=None`` tries every k in ``k_range`` (inclusive; clipped to n - 1 and to the number of distinct
    directions) and keeps the one with the best cosine silhouette (ties: the smaller k). Too few points to
    compare groupings (fewer than :data:`MIN_POINTS`, or all in one direction) make one cluster, with a note."""
    with _thread_limit():  # once here: entering it costs milliseconds, and small inputs fit k-means 7 times
        return _cluster(X, k, k_range, seed)


def _cluster(X: np.ndarray, k: int | None, k_range: tuple[int, int], seed: int) -> Clustering:
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"cluster_vectors expects vectors [n_occurrences, dim], got shape {X.shape}")
    if k is not None and (not isinstance(k, (int, np.integer)) or isinstance(k, bool) or k < 1):
        raise ValueError(f"k must be a positive integer or None, got {k!r}")
    lo, hi = _check_range(k_range)
    finite = np.isfinite(X).all(axis=1)
    labels = np.full(len(X), -1, dtype=np.int64)
    notes: list[str] = []
    if (~finite).any():
        notes.append(f"{int((~finite).sum())} occurrence(s) without a vector (NaN) left out: cluster -1")
    U = unit_rows(X[finite])  # [n, dim]; k-means on unit rows groups by direction
    n = len(U)
    if n == 0:
        notes.append("no occurrence has a vector: nothing to cluster")
        return Clustering(labels, 0, {}, {}, notes)
    # Rounding makes float noise (and scaled copies, after unit_rows) count as one direction.
    distinct = len(np.unique(np.round(U, 6), axis=0))

    if k is not None:
        k_used = min(int(k), distinct)
        if k_used != k:
            notes.append(f"{k_used} cluster(s), not {k}: the vectors point in only {distinct} different direction(s)")
        labels[finite] = _kmeans(U.astype(np.float32), k_used, seed)
        return Clustering(labels, k_used, {}, {}, notes)

    top = min(hi, n - 1, distinct)
    if top < lo or n < MIN_POINTS:
        why = f"{n} occurrence(s)" if n < MIN_POINTS else f"{distinct} distinct direction(s) among {n} occurrences"
        notes.append(f"one cluster: {why} are too few to choose k by silhouette")
        labels[finite] = 0
        return Clustering(labels, 1, {}, {}, notes)
    if top < hi:
        notes.append(f"k tried up to {top}, not {hi}: {n} occurrence(s), {distinct} distinct direction(s)")

    sample = np.arange(n)
    if n > SILHOUETTE_SAMPLE:
        sample = np.sort(np.random.default_rng(seed).choice(n, SILHOUETTE_SAMPLE, replace=False))
        notes.append(f"silhouettes measured on a sample of {SILHOUETTE_SAMPLE} of {n} occurrences")
    D = 1.0 - U[sample] @ U[sample].T  # [n_sample, n_sample] cosine distances, shared by every k
    D = np.maximum(D, 0.0)  # rounding leaves -1e-16 where sklearn wants non-negative distances
    np.fill_diagonal(D, 0.0)

    U32 = U.astype(np.float32)  # k-means in float32 is twice as fast (measured), and model vectors are float32
    silhouettes: dict[int, float] = {}
    fits: dict[int, np.ndarray] = {}
    for kk in range(lo, top + 1):
        fits[kk] = _kmeans(U32, kk, seed)
        silhouettes[kk] = _silhouette(D, fits[kk][sample])
    scored = {kk: s for kk, s in silhouettes.items() if np.isfinite(s)}
    best = max(scored, key=lambda kk: (scored[kk], -kk)) if scored else lo
    labels[finite] = fits[best]
    return Clustering(labels, best, silhouettes, {}, notes)


def _check_range(k_range: tuple[int, int]) -> tuple[int, int]:
    try:
        lo, hi = (int(v) for v in k_range)
    except (TypeError, ValueError):
        raise ValueError(f"k_range must be two whole numbers (lowest, highest k), got {k_range!r}") from None
    if lo < 2 or hi < lo:
        raise ValueError(f"k_range must satisfy 2 <= lowest <= highest, got {k_range!r}")
    return lo, hi


def _kmeans(U: np.ndarray, k: int, seed: int) -> np.ndarray:
    """Cluster ids [n] of ``U`` [n, dim], renumbered by size (largest first; ties: first met)."""
    from sklearn.cluster import KMeans

    if k == 1:
        return np.zeros(len(U), dtype=np.int64)
    raw = KMeans(n_clusters=k, n_init=N_INIT, random_state=seed).fit_predict(U)
    ids, first, counts = np.unique(raw, return_index=True, return_counts=True)
    order = sorted(range(len(ids)), key=lambda i: (-counts[i], first[i]))
    renumber = np.empty(ids.max() + 1, dtype=np.int64)
    renumber[ids[order]] = np.arange(len(ids))
    return renumber[raw]


def _silhouette(D: np.ndarray, labels: np.ndarray) -> float:
    from sklearn.metrics import silhouette_score

    n_labels = len(np.unique(labels))
    if not 2 <= n_labels <= len(labels) - 1:  # a sample can miss a small cluster
        return float("nan")
    return float(silhouette_score(D, labels, metric="precomputed"))


# ----------------------------------------------------------------------------------------------------------
# naming clusters by their context words


def _is_word(token: str) -> bool:
    """Letters, possibly joined by inner apostrophes or hyphens (don't, drawing-room): no numbers, no punctuation."""
    core = unicodedata.normalize("NFC", token).replace("'", "").replace("’", "").replace("-", "")
    return core.isalpha()


def _context_words(found: OccurrenceSearch, index: int, window: int | None) -> list[str]:
    o = found.occurrences[index]
    words = found.words[o.sentence_index]
    if window is None:
        around = words[: o.word_index] + words[o.word_index + 1:]
    else:
        around = words[max(0, o.word_index - window): o.word_index] + words[o.word_index + 1: o.word_index + 1 + window]
    target = {f.translate(_APOSTROPHES) for f in found.forms}
    out = []
    for w in around:
        w = w.casefold().translate(_APOSTROPHES)
        if not _is_word(w) or w in STOP_WORDS or w in target or (w.endswith("'s") and w[:-2] in target):
            continue
        out.append(w)
    return out


def name_clusters(
    found: OccurrenceSearch, clusters: np.ndarray, n_words: int = 4, window: int | None = None
) -> dict[int, list[str]]:
    """The ``n_words`` most distinctive context words of each cluster (cluster -1 is not named).

    Context words: the casefolded words of each occurrence's sentence (or ``window`` words either side), without
    the target's own forms, punctuation, numbers and :data:`STOP_WORDS`. Each cluster is compared with all the
    others by the weighted log-odds ratio with an informative Dirichlet prior (Monroe et al. 2008, eq. 16–22); the
    prior is the pooled counts of all clusters, so a word's score grows with how much more often it occurs in the
    cluster than elsewhere and with how much evidence there is. Words with a positive z-score, highest first
    (ties: alphabetical). A cluster with no context words gets no name; when only one cluster has any, there is
    nothing to contrast it with, and its most frequent words name it."""
    clusters = np.asarray(clusters)
    if clusters.shape != (len(found.occurrences),):
        raise ValueError(f"{clusters.shape} cluster ids for {len(found.occurrences)} occurrences: give one each")
    if n_words < 1:
        raise ValueError(f"n_words must be at least 1, got {n_words}")
    if window is not None and window < 1:
        raise ValueError(f"window must be at least 1 word (or None for the whole sentence), got {window}")
    counts: dict[int, Counter[str]] = {}
    for i, c in enumerate(clusters.tolist()):
        if c >= 0:
            counts.setdefault(c, Counter()).update(_context_words(found, i, window))
    names: dict[int, list[str]] = {c: [] for c, cnt in counts.items() if not cnt}
    counts = {c: cnt for c, cnt in counts.items() if cnt}
    if len(counts) == 1:  # the log-odds of a cluster against nothing is 0 for every word
        (c, cnt), = counts.items()
        return names | {c: [w for w, _ in sorted(cnt.items(), key=lambda kv: (-kv[1], kv[0]))[:n_words]]}

    vocab = sorted(set().union(*counts.values())) if counts else []
    index = {w: j for j, w in enumerate(vocab)}
    Y = np.zeros((len(counts), len(vocab)))  # [n_clusters, n_words]: how often each word is in each cluster
    ids = sorted(counts)
    for r, c in enumerate(ids):
        for w, m in counts[c].items():
            Y[r, index[w]] = m
    alpha = Y.sum(axis=0)  # [n_words] the informative prior: pooled counts
    a0 = alpha.sum()
    for r, c in enumerate(ids):
        y_i, y_j = Y[r], Y.sum(axis=0) - Y[r]  # this cluster, all the others
        n_i, n_j = y_i.sum(), y_j.sum()
        with np.errstate(divide="ignore", invalid="ignore"):
            delta = (np.log((y_i + alpha) / (n_i + a0 - y_i - alpha))
                     - np.log((y_j + alpha) / (n_j + a0 - y_j - alpha)))
            z = delta / np.sqrt(1.0 / (y_i + alpha) + 1.0 / (y_j + alpha))
        order = sorted((j for j in range(len(vocab)) if np.isfinite(z[j]) and z[j] > 0),
                       key=lambda j: (-z[j], vocab[j]))
        names[c] = [vocab[j] for j in order[:n_words]]
    return names


def cluster_label_names(c: Clustering) -> list[str]:
    """One display label per occurrence: ``"cluster 1: river, water, boat"`` (``"—"`` without a cluster)."""
    out = []
    for lab in c.labels.tolist():
        if lab < 0:
            out.append(NO_CLUSTER)
            continue
        words = c.names.get(lab, [])
        out.append(f"cluster {lab + 1}" + (f": {', '.join(words)}" if words else ""))
    return out


def spelling_names(c: Clustering, words: Sequence[str]) -> list[str] | None:
    """When the clusters are the word's spellings rather than senses, one label per occurrence naming its spelling
    (``"spelling: lights"``); None otherwise. A context-free layer gives each spelling one vector, so in a corpus
    with inflections (light, lights, lighted) its "clusters" are exactly its spellings: each cluster holds one
    spelling and no spelling is in two clusters. ``words``: each occurrence's word as written."""
    forms = [w.lower() for w in words]
    if len(forms) != len(c.labels) or c.k < 2:
        return None
    by_cluster: dict[int, set[str]] = {}
    for lab, form in zip(c.labels.tolist(), forms):
        if lab >= 0:
            by_cluster.setdefault(lab, set()).add(form)
    spellings = [next(iter(f)) for f in by_cluster.values() if len(f) == 1]
    if len(spellings) != len(by_cluster) or len(set(spellings)) != len(spellings):
        return None
    return [NO_CLUSTER if lab < 0 else f"spelling: {form}" for lab, form in zip(c.labels.tolist(), forms)]


def display_names(c: Clustering, words: Sequence[str]) -> tuple[list[str], str]:
    """One display label per occurrence and what the groups are, for a legend: the spellings
    (:func:`spelling_names`, "spelling") where the clusters are exactly those, else the clusters named by their
    words (:func:`cluster_label_names`, "cluster")."""
    spelled = spelling_names(c, words)
    return (spelled, "spelling") if spelled else (cluster_label_names(c), "cluster")


# ----------------------------------------------------------------------------------------------------------
# across layers, and agreement with the sense labels


@dataclass
class LayerClusters:
    """:func:`cluster_layers`' result: one named :class:`Clustering` per layer asked for, and a table."""

    by_layer: dict[int | str, Clustering]  # keyed by the layer as given (an index, or MIX)
    table: pd.DataFrame  # layer_index, layer, k, silhouette, ari (NaN without two senses in the gold labels)


def _present(label: str | None) -> bool:
    return label is not None and not (isinstance(label, float) and np.isnan(label)) and label != ""


def adjusted_rand(clusters: np.ndarray, gold: Sequence[str | None]) -> float:
    """Adjusted Rand index between cluster ids and sense labels, over the occurrences that have both; NaN when
    the labels there name fewer than two senses (agreement with one sense says nothing)."""
    from sklearn.metrics import adjusted_rand_score

    clusters = np.asarray(clusters)
    if len(gold) != len(clusters):
        raise ValueError(f"{len(gold)} gold labels for {len(clusters)} occurrences: give one each (None: unknown)")
    both = [i for i, (c, g) in enumerate(zip(clusters.tolist(), gold)) if c >= 0 and _present(g)]
    if len({gold[i] for i in both}) < 2:
        return float("nan")
    return float(adjusted_rand_score([gold[i] for i in both], clusters[both]))


def cluster_layers(
    vectors: np.ndarray,
    found: OccurrenceSearch,
    layers: Sequence[int | str],
    k: int | None = None,
    k_range: tuple[int, int] = (2, 8),
    seed: int = 0,
    gold: Sequence[str | None] | None = None,
    layer_names: Sequence[str] | None = None,
    mix: LearnedMix | None = None,
    n_words: int = 4,
    window: int | None = None,
) -> LayerClusters:
    """Cluster and name the occurrences at each of ``layers`` of ``vectors`` [n_occ, n_layers, dim].

    ``layers``: indices, or :data:`~ctxmodels.analysis.word_senses.MIX` with ``mix`` (ELMo's learned scalar mix).
    ``gold``: a sense label (or None) per occurrence; with two senses or more the table's ``ari`` is the adjusted
    Rand index of each layer's clusters against them."""
    vectors = np.asarray(vectors)
    if vectors.ndim != 3 or vectors.shape[0] != len(found.occurrences):
        raise ValueError(f"vectors must be [{len(found.occurrences)} occurrences, n_layers, dim], "
                         f"got shape {vectors.shape}")
    by_layer: dict[int | str, Clustering] = {}
    rows = []
    for layer in layers:
        c = cluster_vectors(layer_vectors(vectors, layer, mix), k=k, k_range=k_range, seed=seed)
        c.names = name_clusters(found, c.labels, n_words=n_words, window=window)
        by_layer[layer] = c
        rows.append({
            "layer_index": layer,
            "layer": _layer_name(layer, layer_names),
            "k": c.k,
            "silhouette": c.silhouette,
            "ari": adjusted_rand(c.labels, gold) if gold is not None else float("nan"),
        })
    return LayerClusters(by_layer, pd.DataFrame(rows, columns=["layer_index", "layer", "k", "silhouette", "ari"]))


def _layer_name(layer: int | str, layer_names: Sequence[str] | None) -> str:
    if layer == MIX:
        return "scalar mix"
    return str(layer_names[layer]) if layer_names is not None else f"layer {layer}"


def cluster_agreement_table(
    vectors: np.ndarray,
    found: OccurrenceSearch,
    gold: Sequence[str | None] | None = None,
    k: int | None = None,
    seed: int = 0,
) -> pd.DataFrame:
    """Per layer of ``vectors`` [n_occ, n_layers, dim]: ``layer_index``, ``cluster_k``, ``cluster_silhouette`` and
    ``cluster_ari`` (against ``gold``, default the occurrences' own labels), named so that they merge into
    :func:`~ctxmodels.analysis.word_senses.measure_word`'s table on ``layer_index`` without clashing with the
    silhouette of the labelled senses there."""
    gold = [o.label for o in found.occurrences] if gold is None else gold
    clustered = cluster_layers(vectors, found, range(np.asarray(vectors).shape[1]), k=k, seed=seed, gold=gold,
                               n_words=1)
    return clustered.table.drop(columns=["layer"]).rename(
        columns={"k": "cluster_k", "silhouette": "cluster_silhouette", "ari": "cluster_ari"})
