"""One word across a model's layers (ctxmodels.analysis.word_senses): layer choice and ELMo's scalar mix, centred
joint projections, nearest occurrences and the per-layer measurements, on tiny arrays and a tiny fake model."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from ctxmodels.analysis import vectors
from ctxmodels.analysis import word_senses as ws
from ctxmodels.text import inflections


@pytest.fixture(autouse=True)
def _fresh_embedding_cache():
    vectors.CACHE.clear()
    yield
    vectors.CACHE.clear()


# -- layers and the scalar mix ---------------------------------------------------------------------------------


def test_layer_vectors_picks_a_layer_or_applies_the_mix():
    V = np.arange(12, dtype=np.float32).reshape(2, 3, 2)  # [n=2, layers=3, dim=2]
    np.testing.assert_array_equal(ws.layer_vectors(V, 1), V[:, 1])
    mix = ws.LearnedMix((0.5, 0.0, 0.5), 2.0)
    np.testing.assert_allclose(ws.layer_vectors(V, ws.MIX, mix), V[:, 0] + V[:, 2])  # 2 * (V0 + V2) / 2
    with pytest.raises(ValueError, match="needs a mix"):
        ws.layer_vectors(V, ws.MIX)
    with pytest.raises(ValueError, match="mix of 2 layers"):
        ws.LearnedMix((0.5, 0.5), 1.0).apply(V)


def test_mix_from_probe_needs_one_weight_per_layer():
    result = SimpleNamespace(mix_weights=[0.2, 0.5, 0.3], gamma=1.1)
    mix = ws.mix_from_probe(result, 3)
    assert mix == ws.LearnedMix((0.2, 0.5, 0.3), 1.1)
    assert hash(mix) == hash(((0.2, 0.5, 0.3), 1.1))  # a plain tuple: usable as a cache key
    assert ws.mix_from_probe(result, 2) is None
    assert ws.mix_from_probe(None, 3) is None


# -- projections -------------------------------------------------------------------------------------------------


def test_centred_directions_are_unit_rows_minus_their_mean_and_keep_nan_rows():
    X = np.array([[3.0, 0.0], [0.0, 2.0], [np.nan, np.nan], [-5.0, 0.0]])  # row 2: a word without a vector
    U = ws.centred_directions(X)
    unit = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
    np.testing.assert_allclose(U[[0, 1, 3]], unit - unit.mean(axis=0))
    assert np.isnan(U[2]).all()
    np.testing.assert_allclose(ws.centred_directions(7 * X)[[0, 1, 3]], U[[0, 1, 3]])  # the length does not count


def test_joint_projection_puts_two_layers_on_shared_axes():
    rng = np.random.default_rng(0)
    V = rng.normal(size=(12, 3, 8)).astype(np.float32)
    V[:, 2] = 4 * V[:, 0]  # the same directions, longer: centred directions make them one picture
    joint = ws.project_layers(V, (0, 2), method="pca")
    assert joint.joint and joint.method == "pca" and len(joint.coords) == 2
    assert joint.coords[0].shape == (12, 2)
    np.testing.assert_allclose(joint.coords[0], joint.coords[1], atol=1e-6)
    np.testing.assert_allclose(joint.path(5), [joint.coords[0][5], joint.coords[1][5]])  # [layers, 2]

    apart = ws.project_layers(V, (0, 1), method="pca", joint=False)
    assert not apart.joint
    alone = ws.project_layers(V, (1,), method="pca")  # one layer is never "joint"
    assert not alone.joint
    np.testing.assert_allclose(apart.coords[1], alone.coords[0])


def test_layers_projected_to_three_dimensions():
    V = np.random.default_rng(2).normal(size=(12, 3, 8))
    for method in ("pca", "umap", "tsne"):
        proj = ws.project_layers(V, (0, 2), method=method, n_components=3)
        assert [c.shape for c in proj.coords] == [(12, 3), (12, 3)] and proj.path(4).shape == (2, 3), method
        assert all(np.isfinite(c).all() for c in proj.coords), method


def test_projection_of_the_mix_layer():
    V = np.random.default_rng(1).normal(size=(10, 2, 4))
    proj = ws.project_layers(V, (0, ws.MIX), method="pca", mix=ws.LearnedMix((0.5, 0.5), 1.0))
    assert [c.shape for c in proj.coords] == [(10, 2), (10, 2)]
    assert np.isfinite(proj.coords[1]).all()


# -- neighbours --------------------------------------------------------------------------------------------------


def test_nearest_occurrences_by_cosine_without_itself_or_empty_rows():
    X = np.array([[1.0, 0.0], [0.0, 1.0], [np.nan, np.nan], [10.0, 1.0], [-1.0, 0.0]])
    near = ws.nearest_occurrences(X, 0, n=3)
    assert [nb.index for nb in near] == [3, 1, 4]
    assert near[0].cosine == pytest.approx(10 / np.sqrt(101))
    assert near[1].cosine == pytest.approx(0.0) and near[2].cosine == pytest.approx(-1.0)
    assert [nb.index for nb in ws.nearest_occurrences(X, 0)] == [3, 1, 4]  # only three others have a vector
    assert ws.nearest_occurrences(X, 2) == []  # an occurrence without a vector has no neighbours
    with pytest.raises(ValueError, match="out of range"):
        ws.nearest_occurrences(X, 5)


# -- measurements ------------------------------------------------------------------------------------------------


def test_a_search_for_context_words_reads_them_as_typed():
    assert ws.context_query(" River, money |water;  river ") == ["river", "money", "water"]
    assert ws.context_query("Bank's") == ["bank's"]
    with pytest.raises(ValueError, match="type one or more words"):
        ws.context_query(" , ;; !! ")
    with pytest.raises(ValueError, match="names 11 words; name at most 10"):
        ws.context_query(" ".join(f"w{i}" for i in range(11)))


def test_containing_finds_the_words_around_an_occurrence_not_the_occurrence_itself():
    sentences = ["We sat on the bank of the river.", "The bank raised its rates.", "The bank by the Rivers.",
                 "A bank beside the bank.", "Money in the bank."]
    found = vectors.find_occurrences(sentences, "bank")
    assert [o.sentence_index for o in found.occurrences] == [0, 1, 2, 3, 3, 4]
    assert ws.containing(found.occurrences, ["river"]).tolist() == [True, False, True, False, False, False]
    assert ws.containing(found.occurrences, ["river"], inflect=False).tolist() == [True, False, False, False, False,
                                                                                  False]
    # "bank" twice in one sentence: each occurrence has the other around it; a lone "bank" has none
    assert ws.containing(found.occurrences, ["bank"]).tolist() == [False, False, False, True, True, False]
    assert ws.containing(found.occurrences, ["river", "MONEY"]).tolist() == [True, False, True, False, False, True]
    # a word typed in another form finds the rest of its forms
    assert ws.containing(found.occurrences, ["rivers"]).tolist() == [True, False, True, False, False, False]
    assert {"run", "runs", "ran", "running"} <= ws.word_forms("running") and "river" in ws.word_forms("Rivers")
    assert ws.word_forms("bus") == inflections("bus")  # no stem shorter than three letters: "bu" is not guessed


def test_neighbour_share_is_how_often_the_marked_points_neighbours_are_marked():
    # two tight groups far apart: the marked group's nearest are all marked
    X = np.array([[1, 0.01 * i] for i in range(4)] + [[0.01 * i, 1] for i in range(4)], dtype=float)
    marked = np.array([True] * 4 + [False] * 4)
    assert ws.neighbour_share(X, marked, k=3) == pytest.approx(1.0)
    assert ws.neighbour_share(X, marked, k=5) == pytest.approx(3 / 5)  # only three other marked points each
    # every other point marked: each marked point's three nearest are its own group, one of them marked
    mixed = np.array([True, False, True, False, True, False, True, False])
    assert ws.neighbour_share(X, mixed, k=3) == pytest.approx(1 / 3)
    # a row without a vector is neither asked about nor a neighbour: the three left in the group need one more
    holed = X.copy()
    holed[0] = np.nan
    assert ws.neighbour_share(holed, marked, k=3) == pytest.approx(2 / 3)
    assert ws.neighbour_share(X, np.eye(8, dtype=bool)[0], k=3) is None  # one marked point: nothing to say
    # one vector for every occurrence (a context-free layer): all are tied, so a marked point's nearest are the
    # others' share of marked ones (3 of 7), whatever their order
    same = np.ones((8, 2))
    assert ws.neighbour_share(same, marked, k=3) == pytest.approx(3 / 7)
    assert ws.neighbour_share(same, marked[::-1].copy(), k=3) == pytest.approx(3 / 7)
    # points 0 and 1 have two neighbours above a four-way tie (cosine 0 with 3-6), which shares their last place
    # (one of the four is marked); point 3's three nearest are the three others like it, none marked
    line = np.array([[1, 0], [1, 0.001], [1, 0.002], [0, 1], [0, 1], [0, 1], [0, 1]], dtype=float)
    picked = np.array([True, True, False, True, False, False, False])
    assert ws.neighbour_share(line, picked, k=3) == pytest.approx(((1 + 0 + 1 / 4) / 3 * 2 + 0) / 3)


def test_majority_baseline_and_sense_names():
    assert ws.majority_baseline(["a", "a", "b", None, ""]) == pytest.approx(2 / 3)
    assert ws.majority_baseline(["a", "a", None]) is None  # one sense: nothing to compare with
    assert ws.sense_names(["a", None, "", "b", "a"]) == {"a", "b"}


def two_sense_vectors() -> tuple[np.ndarray, list[str], list[np.ndarray]]:
    """Six occurrences, two layers: layer 0 gives every occurrence the same vector, layer 1 separates the senses."""
    rng = np.random.default_rng(0)
    labels = ["river", "money"] * 3
    occ = np.zeros((6, 2, 4))
    occ[:, 0] = [1.0, 1.0, 0.0, 0.0]
    for i, lab in enumerate(labels):
        occ[i, 1] = ([1.0, 0.0, 0.0, 0.0] if lab == "river" else [0.0, 1.0, 0.0, 0.0]) + 0.05 * rng.normal(size=4)
    sentences = [rng.normal(size=(2, 5, 4)) for _ in range(6)]  # [layers, words, dim] each
    return occ, labels, sentences


def test_measure_layers_sense_accuracy_and_self_similarity():
    occ, labels, sentences = two_sense_vectors()
    m = ws.measure_layers(occ, labels, sentences, ["static", "contextual"])
    assert m.notes == []
    t = m.table.set_index("layer")
    assert list(t.index) == ["static", "contextual"] and list(t["layer_index"]) == [0, 1]
    assert t.loc["contextual", "knn1_accuracy"] == 1.0
    assert t.loc["static", "knn1_accuracy"] < 1.0  # identical vectors cannot tell the senses apart
    assert t.loc["static", "self_similarity"] == pytest.approx(1.0)
    assert t.loc["contextual", "self_similarity"] < 0.6
    assert t.loc["contextual", "silhouette"] > 0.8


def test_measure_layers_without_two_senses_or_sentences_says_what_is_missing():
    occ, _, sentences = two_sense_vectors()
    m = ws.measure_layers(occ, [None] * 6, sentences, ["a", "b"])
    assert "knn1_accuracy" not in m.table.columns and "self_similarity" in m.table.columns
    m = ws.measure_layers(occ, ["x", "y"] * 3, [], ["a", "b"])
    assert list(m.table.columns[:2]) == ["layer_index", "layer"] and "knn1_accuracy" in m.table.columns
    assert len(m.notes) == 1 and m.notes[0].startswith("self-similarity:")



def sense_rows(*rows) -> pd.DataFrame:
    """A measurement table: (layer_index, knn1_accuracy, knn1_macro_f1, majority_share) per layer."""
    return pd.DataFrame([{"layer_index": i, "layer": f"layer {i}", "knn1_accuracy": a, "knn1_macro_f1": f,
                          "majority_share": m} for i, a, f, m in rows])


def test_sense_separation_takes_the_best_layer_and_needs_30_percent_of_the_way_to_1():
    t = sense_rows((0, 0.50, 0.33, 0.5), (1, 0.70, 0.69, 0.5), (2, 0.66, 0.66, 0.5))
    sep = ws.sense_separation(t)
    assert (sep.layer_index, sep.layer, sep.accuracy, sep.majority) == (1, "layer 1", 0.70, 0.5)
    assert sep.bar == pytest.approx(0.65) and sep.separates
    # just below the bar: not separated; exactly on it: separated
    assert not ws.sense_separation(sense_rows((0, 0.64, 0.64, 0.5))).separates
    assert ws.sense_separation(sense_rows((0, 0.65, 0.65, 0.5))).separates
    # a common sense raises the bar towards 1 but never past it
    sep = ws.sense_separation(sense_rows((0, 0.92, 0.6, 0.9)))
    assert sep.bar == pytest.approx(0.93) and not sep.separates
    assert ws.sense_separation(sense_rows((0, 0.75, 0.75, 0.5)), share=0.6).bar == pytest.approx(0.8)
    with pytest.raises(ValueError, match="between 0 and 1"):
        ws.sense_separation(t, share=1.5)


def test_sense_separation_breaks_ties_by_macro_f1_then_the_lower_layer_and_skips_nan():
    t = sense_rows((0, 0.8, 0.70, 0.5), (1, 0.8, 0.79, 0.5), (2, 0.8, 0.79, 0.5), (3, float("nan"), 0.9, 0.5))
    assert ws.sense_separation(t).layer_index == 1


def test_sense_separation_of_measurements_and_without_senses():
    occ, labels, sentences = two_sense_vectors()
    m = ws.measure_layers(occ, labels, sentences, ["static", "contextual"])
    sep = ws.sense_separation(m.table)
    assert sep.layer == "contextual" and sep.accuracy == 1.0 and sep.separates
    only_static = ws.measure_layers(occ[:, :1], labels, [s[:1] for s in sentences], ["static"])
    assert not ws.sense_separation(only_static.table).separates
    no_senses = ws.measure_layers(occ, [None] * 6, sentences, ["a", "b"])
    assert ws.sense_separation(no_senses.table) is None
    assert ws.sense_separation(sense_rows((0, float("nan"), float("nan"), 0.5))) is None

class OneHotModel:
    """A fake two-layer model: layer 0 is a word's one-hot vector, layer 1 adds the mean of its sentence's."""

    name = "one-hot"
    layer_names = ["words", "context"]
    n_layers = 2

    def __init__(self, vocab: list[str]):
        self.index = {w: i for i, w in enumerate(vocab)}
        self.calls = 0

    def embed(self, sentences, pooling="mean", batch_size=32):
        self.calls += 1
        out = []
        for words in sentences:
            base = np.eye(len(self.index))[[self.index[w.lower()] for w in words]]  # [words, dim]
            out.append(np.stack([base, base + 3 * base.mean(axis=0)]).astype(np.float32))
        return out


def test_measure_word_embeds_once_and_finds_the_senses():
    lines = ["The bank of the river. | river", "The bank lent money. | money", "A river bank. | river",
             "Money in the bank. | money", "By the river bank. | river", "The bank kept money. | money"]
    found = vectors.find_occurrences(lines, "bank")
    model = OneHotModel(sorted({w.lower() for ws_ in found.words for w in ws_}))
    m = ws.measure_word(model, found)
    assert model.calls == 1  # the occurrence vectors and the sentence vectors come from one run of the model
    t = m.table.set_index("layer")
    assert t.loc["words", "self_similarity"] == pytest.approx(1.0)
    assert t.loc["context", "knn1_accuracy"] == 1.0


# -- which words shape one occurrence --------------------------------------------------------------------------


def _cosine_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row by row, written out plainly: 1 - a.b / (|a| |b|)."""
    return 1 - (a * b).sum(-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))


@pytest.mark.parametrize("name", ["bert-eltec", "elmo-eltec", "static-eltec"])
def test_context_shifts_are_how_far_the_vector_moves_when_each_word_is_hidden(tiny_assets, name):
    import ctxmodels

    model = ctxmodels.load(str(tiny_assets / name))
    words = "she walked to the bank of the river".split()
    shifts = ws.context_shifts(model, words, 4)
    assert shifts.words == words and shifts.index == 4 and shifts.layer_names == model.layer_names
    assert shifts.shifts.shape == (model.n_layers, 8) and np.isnan(shifts.shifts[:, 4]).all()
    bert = name == "bert-eltec"
    assert shifts.hidden_as == ("[MASK]" if bert else "left out")
    whole = model.embed([words])[0][:, 4]
    for j in (0, 1, 5, 7):
        # each variant run on its own (the function runs them in one batch); BERT: a mask for each piece
        if bert:
            n = len(model.tokenizer.encode(words).word_pieces(j))
            assert n > 1 or j != 1  # "walked" is several pieces in the tiny vocabulary: the positions must hold
            variant, at = words[:j] + ["[MASK]"] * n + words[j + 1:], 4 + (n - 1 if j < 4 else 0)
            assert model.tokenizer.encode(variant).ids.count(model.tokenizer.mask_id) == n
        else:
            variant, at = words[:j] + words[j + 1:], 4 - (j < 4)
        moved = model.embed([variant])[0][:, at]
        np.testing.assert_allclose(shifts.shifts[:, j], _cosine_distance(whole, moved), rtol=0.02, atol=3e-7)
    others = np.delete(shifts.shifts, 4, axis=1)
    np.testing.assert_allclose(others[0], 0, atol=1e-6)  # the context-free layer (BERT's input embeddings too)
    if name == "static-eltec":
        assert model.n_layers == 1
    else:
        assert others[1:].min() > 1e-6  # the contextual layers move, for every word hidden


def test_context_shifts_clear_errors(tiny_assets, monkeypatch):
    import ctxmodels

    model = ctxmodels.load(str(tiny_assets / "static-eltec"))
    with pytest.raises(ValueError, match="word 3 is out of range: the sentence has 3 words"):
        ws.context_shifts(model, ["the", "river", "bank"], 3)
    monkeypatch.setattr(ws, "MAX_CONTEXT_WORDS", 2)
    with pytest.raises(ValueError, match="3 other words to hide .* up to 3 words"):
        ws.context_shifts(model, ["the", "river", "bank", "was"], 1)
    assert ws.context_shifts(model, ["the", "river", "bank"], 1).shifts.shape == (1, 3)


# -- one word in two sentences ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["bert-eltec", "elmo-eltec", "static-eltec"])
def test_same_word_is_the_cosine_of_its_two_vectors_per_layer(tiny_assets, name):
    import ctxmodels
    from ctxmodels.analysis import senses

    model = ctxmodels.load(str(tiny_assets / name))
    a, b = "we sat on the bank of the river", "the bank lent money to the Bank"
    r = ws.same_word(model, a, b, "BANK")
    assert r.layer_names == model.layer_names and r.index == (4, 1)  # the first occurrence, any case
    va, vb = model.embed([a.split()])[0][:, 4], model.embed([b.split()])[0][:, 1]
    np.testing.assert_allclose(r.cosine, 1 - _cosine_distance(va, vb), atol=1e-5)
    # the baseline: every pair of one other word from each sentence
    layer = model.n_layers - 1
    others_a = np.delete(model.embed([a.split()])[0][layer], 4, axis=0)
    others_b = np.delete(model.embed([b.split()])[0][layer], 1, axis=0)
    want = senses.anisotropy_baseline(np.concatenate([others_a, others_b]), [0] * 7 + [1] * 6)
    assert r.baseline[layer] == pytest.approx(want, abs=1e-6)
    if name != "bert-eltec":  # static vectors and ELMo's character layer: one vector for one spelling
        assert r.cosine[0] == pytest.approx(1.0, abs=1e-6)
    if name != "static-eltec":
        assert r.cosine[-1] < 0.9999  # the contextual layers tell the two apart


def test_same_word_says_which_sentence_lacks_the_word(tiny_assets):
    import ctxmodels

    model = ctxmodels.load(str(tiny_assets / "bert-eltec"))
    with pytest.raises(ValueError, match="does not occur in sentence B"):
        ws.same_word(model, "the bank", "the river", "bank")
    with pytest.raises(ValueError, match="occurs in none"):
        ws.same_word(model, "a river", "the river", "bank")
    alone = ws.same_word(model, "bank", "the bank", "bank")  # no other word in A: no baseline, still a cosine
    assert all(np.isnan(alone.baseline)) and np.isfinite(alone.cosine).all()
