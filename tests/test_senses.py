"""Sense measurements and Ethayarajh contextuality on hand-made vectors with values worked out by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ctxmodels.analysis.senses import (
    anisotropy_baseline,
    centroid_sense_accuracy,
    contextuality_table,
    intra_sentence_similarity,
    knn_sense_accuracy,
    majority_share,
    mfs_baseline,
    self_similarity,
    sense_silhouette,
    sense_table,
)


def unit(degrees: float) -> np.ndarray:
    r = math.radians(degrees)
    return np.array([math.cos(r), math.sin(r)])


# Four occurrences on the unit circle at 0, 10, 90 and 30 degrees; senses A, A, B, B.
# 1-NN (cosine = angle order): 0->10 (A, right), 10->0 (A, right), 90->30 (B, right), 30->10 (A, wrong): 3/4.
TOY = np.stack([unit(0), unit(10), unit(90), unit(30)])
TOY_LABELS = ["A", "A", "B", "B"]


def test_1nn_leave_one_out_on_the_toy_set():
    r = knn_sense_accuracy(TOY, TOY_LABELS, k=1)
    assert r.accuracy == pytest.approx(0.75)
    assert r.predictions == ["A", "A", "B", "A"]
    # A: P = 2/3, R = 1 -> F1 = 0.8; B: P = 1, R = 1/2 -> F1 = 2/3; macro = 11/15
    assert r.macro_f1 == pytest.approx(11 / 15)
    assert (r.k, r.n, r.n_senses) == (1, 4, 2)


def test_knn_votes_and_tie_rule():
    # k=2: 0 -> {10: A, 30: B} tie, nearest is A; 90 -> {30: B, 10: A} tie, nearest is B; 30 -> {10, 0} both A.
    r2 = knn_sense_accuracy(TOY, TOY_LABELS, k=2)
    assert r2.predictions == ["A", "A", "B", "A"]
    # k=3 (all others): every point is outvoted by the other sense (2 against 1, or 2 A against its own B).
    r3 = knn_sense_accuracy(TOY, TOY_LABELS, k=3)
    assert r3.predictions == ["B", "B", "A", "A"]
    assert r3.accuracy == 0.0
    # k larger than n - 1 is clipped, with a note
    r9 = knn_sense_accuracy(TOY, TOY_LABELS, k=9)
    assert r9.k == 3 and r9.predictions == r3.predictions
    assert any("the 3 nearest, not 9" in n for n in r9.notes)


def test_equal_distances_go_to_the_earlier_occurrence():
    # (0,1) and (0,-1) are both exactly at cosine distance 1 from (1,0): the earlier one wins.
    X = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, -1.0]])
    assert knn_sense_accuracy(X, ["q", "up", "down"]).predictions[0] == "up"
    assert knn_sense_accuracy(X[[0, 2, 1]], ["q", "down", "up"]).predictions[0] == "down"


def test_euclidean_metric_differs_from_cosine():
    # Cosine ignores length; euclidean does not: (10, 0) is far from (1, 0) but at cosine distance 0.
    X = np.array([[1.0, 0.0], [10.0, 0.0], [1.0, 1.0]])
    labels = ["a", "b", "c"]
    assert knn_sense_accuracy(X, labels).predictions[0] == "b"
    assert knn_sense_accuracy(X, labels, metric="euclidean").predictions[0] == "c"


def test_nan_rows_and_missing_labels_are_dropped():
    X = np.vstack([TOY, [np.nan, 1.0], [0.5, 0.5]])
    r = knn_sense_accuracy(X, TOY_LABELS + ["B", None], k=1)
    assert r.accuracy == pytest.approx(0.75) and r.n == 4
    assert r.predictions == ["A", "A", "B", "A", None, None]
    assert any("NaN" in n for n in r.notes) and any("without a sense label" in n for n in r.notes)


def test_centroid_accuracy_leave_one_out():
    # 0: A-rest = {10} (10 deg) vs B = mean(90, 30) at 60 deg -> A. 10: A-rest {0} vs 60 -> A.
    # 90: B-rest {30} is 60 deg away, A = mean(0, 10) at 5 deg is 85 away -> B. 30: B-rest {90} 60 away, A 25 -> A.
    assert centroid_sense_accuracy(TOY, TOY_LABELS) == pytest.approx(0.75)
    # A sense whose only occurrence is held out has no centroid left: that occurrence is always wrong.
    assert centroid_sense_accuracy(np.stack([unit(0), unit(5), unit(80)]), ["A", "A", "B"]) == pytest.approx(2 / 3)


def test_centroid_accuracy_shares_a_tie_as_a_random_pick_would():
    """A context-free layer: nine occurrences of one spelling, one vector. Every centroid is that vector, so the
    tied senses share the pick (1/3 each for a and b); c's only occurrence has no centroid left (0)."""
    X = np.repeat(np.random.default_rng(0).normal(size=(1, 16)), 9, axis=0)
    assert centroid_sense_accuracy(X, ["a"] * 5 + ["b"] * 3 + ["c"]) == pytest.approx((5 / 3 + 3 / 3) / 9)


def test_mfs_baseline_leave_one_out():
    assert mfs_baseline(["A", "A", "A", "B"]) == pytest.approx(3 / 4)  # holding out B leaves only A
    assert mfs_baseline(["A", "B", "B", "A"]) == 0.0  # balanced: the held-out sense is always the minority
    # [A, A, B]: holding out an A leaves A:1 B:1, a tie -> credit 1/2; holding out B leaves A -> wrong. (1/2+1/2)/3
    assert mfs_baseline(["A", "A", "B"]) == pytest.approx(1 / 3)
    assert mfs_baseline(["B", "A", "A"]) == pytest.approx(1 / 3)  # same in any order
    assert mfs_baseline(["A", None, "A", "B", "A"]) == pytest.approx(3 / 4)  # missing labels ignored
    assert majority_share(["A", "B", "B", "A"]) == 0.5
    assert majority_share(["x", "y", "y"]) == pytest.approx(2 / 3)


@pytest.mark.parametrize("k", [1, 3])
def test_knn_macro_f1_is_sklearns_on_its_predictions(k):
    """The k-NN's macro-F1 is the package's one macro-F1 (ctxmodels.analysis.metrics, sklearn's definition), on
    random vectors with senses of unequal size; a k-NN only ever predicts senses of the data."""
    from sklearn.metrics import f1_score

    rng = np.random.default_rng(k)
    labels = ["a"] * 20 + ["b"] * 8 + ["c"] * 3 + ["d"] * 2
    X = rng.normal(size=(len(labels), 5))
    r = knn_sense_accuracy(X, labels, k=k)
    assert set(r.predictions) <= set(labels)
    assert r.macro_f1 == pytest.approx(f1_score(labels, r.predictions, average="macro", zero_division=0), abs=1e-12)


@pytest.mark.parametrize("metric", ["cosine", "euclidean"])
def test_knn_and_centroid_agree_with_plain_loops(metric):
    from sklearn.model_selection import LeaveOneOut, cross_val_predict
    from sklearn.neighbors import KNeighborsClassifier

    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 6)) + rng.choice([0.0, 1.5], size=(40, 1))
    labels = list(rng.choice(["p", "q", "r"], size=39)) + ["lonely"]
    # 1-NN: sklearn's LOO prediction (random continuous data has no ties)
    sk = cross_val_predict(KNeighborsClassifier(1, metric=metric, algorithm="brute"), X, labels, cv=LeaveOneOut())
    assert knn_sense_accuracy(X, labels, metric=metric).predictions == list(sk)

    def distance(a, b):
        if metric == "cosine":
            return 1 - a @ b / (np.linalg.norm(a) * np.linalg.norm(b))
        return np.linalg.norm(a - b)

    correct = 0
    for i in range(len(X)):  # centroids recomputed without point i, one at a time
        rest = [j for j in range(len(X)) if j != i]
        senses = sorted({labels[j] for j in rest})
        centroid = {s: X[[j for j in rest if labels[j] == s]].mean(axis=0) for s in senses}
        correct += min(senses, key=lambda s: distance(X[i], centroid[s])) == labels[i]
    assert centroid_sense_accuracy(X, labels, metric=metric) == pytest.approx(correct / len(X))


def test_silhouette_by_hand_and_undefined_cases():
    X = np.array([[1.0, 0, 0], [1.0, 0, 0], [0, 1.0, 0], [0, 1.0, 0]])
    value, reason = sense_silhouette(X, ["a", "a", "b", "b"])
    assert value == pytest.approx(1.0) and reason == ""
    # A = {e1, e2}: a = 1, b = 1 -> 0. B = {e3, -e3}: a = 2 (opposite), b = 1 -> (1 - 2) / 2 = -0.5. Mean -0.25.
    X = np.array([[1.0, 0, 0], [0, 1.0, 0], [0, 0, 1.0], [0, 0, -1.0]])
    assert sense_silhouette(X, ["A", "A", "B", "B"])[0] == pytest.approx(-0.25)
    value, reason = sense_silhouette(X, ["A"] * 4)
    assert math.isnan(value) and "one sense" in reason
    value, reason = sense_silhouette(X, ["A", "A", "A", "B"])
    assert math.isnan(value) and "single occurrence" in reason and "'B'" in reason


def test_sense_table_one_row_per_layer():
    perfect = np.stack([unit(0), unit(10), unit(80), unit(90)])
    V = np.stack([TOY, perfect], axis=1)  # [4 occurrences, 2 layers, 2]
    t = sense_table(V, TOY_LABELS, layer_names=["static", "layer 1"], k=(1, 3))
    assert list(t["layer"]) == ["static", "layer 1"]
    assert list(t["knn1_accuracy"]) == pytest.approx([0.75, 1.0])
    assert list(t["knn3_accuracy"]) == pytest.approx([0.0, 0.0])
    assert list(t["knn1_macro_f1"]) == pytest.approx([11 / 15, 1.0])
    assert list(t["centroid_accuracy"]) == pytest.approx([0.75, 1.0])
    assert list(t["mfs_accuracy"]) == [0.0, 0.0] and list(t["majority_share"]) == [0.5, 0.5]
    assert list(t["n"]) == [4, 4] and list(t["n_senses"]) == [2, 2]
    assert t["silhouette"].iloc[1] > t["silhouette"].iloc[0]
    for col in ("knn1_accuracy", "knn3_macro_f1", "silhouette", "note"):
        assert col in t.columns


def test_sense_table_notes_and_nan_layer():
    V = np.stack([TOY, TOY], axis=1).copy()
    V[0, 1] = np.nan  # occurrence 0 lost in layer 1 only
    t = sense_table(V, ["A", "A", "B", "C"], k=(1,))
    assert list(t["n"]) == [4, 3]
    assert "single occurrence" in t["note"].iloc[0] and "NaN" in t["note"].iloc[1]
    assert math.isnan(t["silhouette"].iloc[0])


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: knn_sense_accuracy(TOY, TOY_LABELS[:3]), "4 vectors but 3 labels"),
        (lambda: knn_sense_accuracy(TOY[0], ["A", "A"]), r"\[n_occurrences, dim\]"),
        (lambda: knn_sense_accuracy(TOY[:1], ["A"]), "at least 2"),
        (lambda: knn_sense_accuracy(np.full((3, 2), np.nan), ["A", "B", "C"]), "at least 2"),
        (lambda: knn_sense_accuracy(TOY, TOY_LABELS, k=0), "positive integer"),
        (lambda: knn_sense_accuracy(TOY, TOY_LABELS, metric="manhattan"), "unknown metric"),
        (lambda: knn_sense_accuracy(TOY, "AABB"), "not a string"),
        (lambda: mfs_baseline(["A"]), "at least 2"),
        (lambda: sense_table(TOY, TOY_LABELS), r"\[n_occurrences, n_layers, dim\]"),
        (lambda: sense_table(TOY[:, None], TOY_LABELS, layer_names=["a", "b"]), "2 layer names for 1 layers"),
        (lambda: sense_silhouette(TOY, TOY_LABELS, metric="dot"), "unknown metric"),
    ],
)
def test_sense_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# -- contextuality ------------------------------------------------------------------------------------------


def test_static_vectors_have_self_similarity_one():
    v = np.random.default_rng(0).normal(size=16)
    assert self_similarity(np.tile(v, (7, 1))) == pytest.approx(1.0, abs=1e-12)
    assert self_similarity(np.stack([v, 3 * v])) == pytest.approx(1.0, abs=1e-12)  # length does not matter


def test_self_similarity_by_hand():
    # e1, e2, 5*(e1+e2)/sqrt2: cosines 0, 1/sqrt2, 1/sqrt2 -> mean over ordered pairs i != j = sqrt2 / 3
    X = np.array([[1.0, 0.0], [0.0, 1.0], [5.0, 5.0], [np.nan, 0.0]])
    assert self_similarity(X) == pytest.approx(math.sqrt(2) / 3)
    assert self_similarity(np.array([[1.0, 0.0], [-1.0, 0.0]])) == pytest.approx(-1.0)


def test_intra_sentence_similarity_by_hand():
    assert intra_sentence_similarity(np.eye(2)) == pytest.approx(1 / math.sqrt(2))  # mean (1/2, 1/2)
    assert intra_sentence_similarity(np.eye(3) * [1, 2, 3]) == pytest.approx(
        np.mean([1 / np.linalg.norm([1, 2, 3]) * k for k in (1, 2, 3)])
    )


def test_anisotropy_of_orthogonal_vectors_is_zero():
    assert anisotropy_baseline(np.eye(6)) == 0.0
    # same-context pairs are excluded: e1,e1 share context 0 (cosine 1) and must not count
    assert anisotropy_baseline(np.array([[1.0, 0], [1.0, 0], [0, 1.0]]), context_ids=[0, 0, 1]) == 0.0


def test_anisotropy_sampling_is_seeded():
    X = np.random.default_rng(1).normal(size=(200, 8)) + 2.0  # a shared offset: an anisotropic cloud
    a = anisotropy_baseline(X, n_pairs=300, seed=3)
    assert a == anisotropy_baseline(X, n_pairs=300, seed=3)
    assert a != anisotropy_baseline(X, n_pairs=300, seed=4)
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    exact = (np.sum(U @ U.T) - len(U)) / (len(U) * (len(U) - 1))
    assert a == pytest.approx(exact, abs=0.03)  # 300 random pairs estimate the mean over all pairs
    assert anisotropy_baseline(np.tile([1.0, 2.0], (50, 1)), n_pairs=10) == pytest.approx(1.0)


def test_contextuality_table_static_and_contextual_layers():
    rng = np.random.default_rng(0)
    sentences = [["the", "bank", "is", "closed"], ["a", "river", "bank"], ["the", "bank", "the", "end"]]
    table = {w: rng.normal(size=8) for s in sentences for w in s}
    vecs = []
    for s in sentences:
        static = np.stack([table[w] for w in s])
        contextual = rng.normal(size=static.shape)
        vecs.append(np.stack([static, contextual]))  # [2 layers, n_words, 8]
    t = contextuality_table(vecs, ["static", "ctx"], words=sentences, min_occurrences=3, n_pairs=500)
    # word types with >= 3 occurrences: "the" (3) and "bank" (3)
    assert list(t["n_self"]) == [2, 2] and list(t["n_sentences"]) == [3, 3]
    assert t["self_similarity"].iloc[0] == pytest.approx(1.0)
    assert t["self_similarity"].iloc[1] < 0.9
    for raw, adj in (("self_similarity", "self_similarity_adjusted"),
                     ("intra_sentence_similarity", "intra_sentence_adjusted")):
        assert np.allclose(t[adj], t[raw] - t["anisotropy"])
    # one target word's occurrences instead of all word types
    occ = np.stack([vecs[0][:, 1], vecs[1][:, 2], vecs[2][:, 1]])  # "bank" x 3 -> [3, 2 layers, 8]
    t2 = contextuality_table(vecs, occurrences=occ)
    assert t2["self_similarity"].iloc[0] == pytest.approx(1.0) and list(t2["n_self"]) == [3, 3]
    assert list(t2["layer"]) == ["layer 0", "layer 1"]
    assert np.isnan(contextuality_table(vecs)["self_similarity"]).all()


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: self_similarity(np.ones((1, 3))), "at least 2 occurrences"),
        (lambda: self_similarity(np.zeros((0, 3))), "no vectors"),
        (lambda: self_similarity(np.array([[1.0, 2.0], [np.nan, 1.0]])), "at least 2 occurrences"),
        (lambda: self_similarity(np.ones(3)), r"\[n, dim\]"),
        (lambda: intra_sentence_similarity(np.ones((1, 3))), "at least 2 words"),
        (lambda: anisotropy_baseline(np.eye(3), context_ids=[0, 0, 0]), "at least 2 different contexts"),
        (lambda: anisotropy_baseline(np.eye(3), context_ids=[0, 1]), "2 context ids for 3 vectors"),
        (lambda: contextuality_table([]), "at least one sentence"),
        (lambda: contextuality_table([np.ones((2, 3, 4)), np.ones((3, 3, 4))]), "same model"),
        (lambda: contextuality_table([np.ones((2, 3, 4))], words=[["a", "b"]]), "2 tokens but 3 word vectors"),
        (lambda: contextuality_table([np.ones((2, 3, 4))], occurrences=np.ones((3, 2, 5))), "occurrences must be"),
    ],
)
def test_contextuality_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()
