"""What fine-tuning changes (issue 17): linear CKA, the layer-by-layer comparison, class separation and the heads
that changed, on tiny random-weight models and a copy of one with its top layer (or one head) perturbed."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import ctxmodels
from ctxmodels.analysis import finetuning as ft
from ctxmodels.loading import BertLoaded
from tests.app_fixtures import perturb_top_layer, write_finetuned

SENTENCES = [s.split() for s in [
    "The bank raised its interest rates .", "We sat on the bank of the river .", "She moved her savings elsewhere .",
    "The boat reached the bank at dusk .", "He deposited his wages at the bank .", "Reeds grew along the stream .",
    "The old man walked to the river .", "Money was lent to the farmer .",
]]


def pos_like(words: list[str]) -> tuple[str, ...]:
    """A made-up tag per word (enough classes with several members each)."""
    return tuple("DET" if w.lower() in ("the", "a", "its", "her", "his") else "PUNCT" if w == "." else
                 "ADP" if w in ("on", "of", "at", "to", "along") else "OTHER" for w in words)


LABELS = [pos_like(s) for s in SENTENCES]


# -- linear CKA ------------------------------------------------------------------------------------------------


def test_cka_of_identical_inputs_is_one():
    X = np.random.default_rng(0).normal(size=(50, 8))
    assert ft.linear_cka(X, X) == pytest.approx(1.0, abs=1e-12)
    wide = np.random.default_rng(1).normal(size=(10, 40))  # fewer rows than columns: the Gram-matrix form
    assert ft.linear_cka(wide, wide) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("n, d", [(60, 8), (12, 30)])
def test_cka_is_invariant_to_rotation_and_isotropic_scaling_but_not_to_any_linear_map(n, d):
    rng = np.random.default_rng(2)
    X = rng.normal(size=(n, d))
    Q, _ = np.linalg.qr(rng.normal(size=(d, d)))
    assert ft.linear_cka(X, 3.7 * X @ Q) == pytest.approx(1.0, abs=1e-10)
    assert ft.linear_cka(X @ Q, X) == pytest.approx(1.0, abs=1e-10)
    # a shift changes nothing either (CKA centres the columns)
    assert ft.linear_cka(X, X + 5.0) == pytest.approx(1.0, abs=1e-10)
    # a non-orthogonal map (stretch one direction a lot) is not the same representation for CKA
    A = np.eye(d)
    A[0, 0] = 50.0
    assert ft.linear_cka(X, X @ A) < 0.9


def test_cka_of_unrelated_inputs_is_low_and_symmetric():
    rng = np.random.default_rng(3)
    X, Y = rng.normal(size=(500, 10)), rng.normal(size=(500, 6))
    assert ft.linear_cka(X, Y) < 0.1
    assert ft.linear_cka(X, Y) == pytest.approx(ft.linear_cka(Y, X))


def test_cka_agrees_with_the_hsic_formula():
    """The definition in Kornblith et al. (2019): HSIC(K, L) / sqrt(HSIC(K, K) HSIC(L, L)) with H K H."""
    rng = np.random.default_rng(4)
    X, Y = rng.normal(size=(30, 5)), rng.normal(size=(30, 7)) + rng.normal(size=(30, 1))
    H = np.eye(30) - 1 / 30

    def hsic(K, L):
        return np.trace(K @ H @ L @ H)

    K, L = X @ X.T, Y @ Y.T
    assert ft.linear_cka(X, Y) == pytest.approx(hsic(K, L) / np.sqrt(hsic(K, K) * hsic(L, L)), rel=1e-10)


def test_cka_refuses_what_it_cannot_compare():
    with pytest.raises(ValueError, match="same items"):
        ft.linear_cka(np.zeros((4, 2)), np.zeros((5, 2)))
    with pytest.raises(ValueError, match="NaN"):
        ft.linear_cka(np.array([[1.0], [np.nan]]), np.ones((2, 1)))
    assert np.isnan(ft.linear_cka(np.ones((5, 3)), np.random.default_rng(0).normal(size=(5, 3))))


def test_js_divergence_bounds():
    p = np.array([1.0, 0.0])
    assert ft.js_divergence(p, p) == pytest.approx(0.0)
    assert ft.js_divergence(p, np.array([0.0, 1.0])) == pytest.approx(1.0)  # disjoint: 1 bit


# -- two models ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def base(tiny_assets):
    return ctxmodels.load(tiny_assets / "bert-eltec")


def copy_of(model: BertLoaded, name: str, **perturb) -> BertLoaded:
    m = copy.deepcopy(model.model)
    if perturb:
        perturb_top_layer(m, **perturb)
    return BertLoaded(name, None, m.eval(), model.tokenizer)


def test_a_model_compared_with_itself_is_unchanged_everywhere(base):
    same = copy_of(base, "copy")
    result = ft.compare(base, same, SENTENCES, LABELS, "token")
    assert result.layer_names == base.layer_names
    np.testing.assert_allclose(result.layers["cka"], 1.0, atol=1e-5)
    np.testing.assert_allclose(result.layers["cosine"], 1.0, atol=1e-5)
    np.testing.assert_allclose(result.layers["knn_before"], result.layers["knn_after"])
    assert result.heads.shape == (2, 2)
    np.testing.assert_allclose(result.heads, 0.0, atol=1e-6)
    assert len(result.point_labels) == sum(1 for lab in LABELS for t in lab if t)
    assert 0 < result.majority < 1


def test_a_perturbed_top_layer_changes_only_the_top(base):
    after = copy_of(base, "perturbed", scale=3.0)
    result = ft.compare(base, after, SENTENCES, LABELS, "token")
    cka = result.layers.set_index("layer_name")["cka"]
    assert cka["embeddings"] == pytest.approx(1.0, abs=1e-5)
    assert cka["layer 1"] == pytest.approx(1.0, abs=1e-5)
    assert cka["layer 2"] < 0.99
    cos = result.layers.set_index("layer_name")["cosine"]
    assert cos["layer 2"] < cos["layer 1"]
    # the attention of the layers below is untouched; the top layer's heads move
    np.testing.assert_allclose(result.heads[0], 0.0, atol=1e-6)
    assert (result.heads[1] > 1e-4).all()


def test_the_perturbed_head_ranks_first(base):
    after = copy_of(base, "one head", head=1)
    result = ft.compare(base, after, SENTENCES, LABELS, "token")
    ranked = result.ranked_heads()
    assert (ranked.loc[0, "layer"], ranked.loc[0, "head"]) == (2, 2)
    assert ranked.loc[0, "js_divergence"] > 1e-3
    assert ranked["js_divergence"].iloc[1:].max() < 1e-6  # the other heads attend exactly as before


def test_sentence_and_word_tasks_make_their_points(base):
    after = copy_of(base, "perturbed", scale=1.0)
    sent_labels = ["money" if "bank" in s and ("rates" in s or "wages" in s) else "river" if "river" in s or
                   "stream" in s or "boat" in s else "other" for s in SENTENCES]
    result = ft.compare(base, after, SENTENCES, sent_labels, "sentence", attention=False)
    assert result.heads is None
    assert len(result.point_labels) == len(SENTENCES)
    assert result.points_before.shape == (len(SENTENCES), base.n_layers, base.dim)
    before, after_points = result.layer_points("layer 2")
    assert before.shape == after_points.shape == (len(SENTENCES), base.dim)

    banks = [(s, s.index("bank")) for s in SENTENCES if "bank" in s]
    word_labels = ["money" if {"rates", "wages"} & set(s) else "river" for s, _ in banks]
    result = ft.compare(base, after, [s for s, _ in banks], word_labels, "word", targets=[i for _, i in banks],
                        attention=False)
    assert [result.point_text[i][slice(*result.point_spans[i])] for i in range(len(banks))] == ["bank"] * 4
    assert set(result.layers.columns) >= {"knn_before", "knn_after", "silhouette_before", "silhouette_after"}


def test_results_are_cached(base):
    after = copy_of(base, "cached", scale=0.3)
    first = ft.compare(base, after, SENTENCES, LABELS, "token")
    assert ft.compare(base, after, SENTENCES, LABELS, "token") is first
    assert ft.compare(base, after, SENTENCES[:4], LABELS[:4], "token") is not first


def test_mismatched_models_are_refused_with_a_clear_message(base, tiny_assets):
    elmo = ctxmodels.load(tiny_assets / "elmo-eltec")
    with pytest.raises(ValueError, match="same architecture"):
        ft.compare(base, elmo, SENTENCES, LABELS, "token")
    from ctxmodels.bert import BertConfig, BertForPreTraining

    cfg = BertConfig.preset("tiny", vocab_size=base.tokenizer.vocab_size, max_position_embeddings=128,
                            num_hidden_layers=3)
    deeper = BertLoaded("deeper", None, BertForPreTraining(cfg).eval(), base.tokenizer)
    with pytest.raises(ValueError, match="different layers"):
        ft.compare(base, deeper, SENTENCES, LABELS, "token")
    with pytest.raises(ValueError, match="kind must be"):
        ft.compare(base, base, SENTENCES, LABELS, "tokens")
    with pytest.raises(ValueError, match="targets"):
        ft.compare(base, base, SENTENCES, ["a"] * len(SENTENCES), "word")


def test_base_model_of_a_finetuned_folder(base, tiny_assets, tmp_path):
    out = write_finetuned(tiny_assets / "bert-eltec", tmp_path / "ft")
    tuned = ctxmodels.load(out)
    info = ft.finetune_info(tuned)
    assert info["task"] == "pos" and info["base_path"] == str(tiny_assets / "bert-eltec")
    assert ft.base_model(tuned) is base  # the same loaded object: ctxmodels.load loads a path once
    assert ft.finetune_info(base) is None
    with pytest.raises(ValueError, match="not a fine-tuned model"):
        ft.base_model(base)
    gone = write_finetuned(tiny_assets / "bert-eltec", tmp_path / "ft2")
    info = {**ft.finetune_info(ctxmodels.load(gone)), "base_path": str(tmp_path / "nowhere"), "base_model": "nope"}
    (gone / "finetune.json").write_text(__import__("json").dumps(info), encoding="utf-8")
    with pytest.raises(ValueError, match="cannot be loaded"):
        ft.base_model(ctxmodels.load(gone, reload=True))


def test_task_sentences_and_compare_on_task(base, tmp_path):
    from tests.app_fixtures import tag_of, write_tag_task

    task = write_tag_task(tmp_path / "tags.conll")
    dev = ft.task_sentences(str(task), "dev", max_sentences=5, seed=1)
    assert dev.kind == "token" and len(dev.sentences) == 5 and dev.available > 5
    assert all(lab == tuple(tag_of(w) for w in s) for s, lab in zip(dev.sentences, dev.labels))
    assert ft.task_sentences(str(task), "dev", max_sentences=5, seed=1).sentences == dev.sentences
    after = copy_of(base, "perturbed", scale=3.0)
    result = ft.compare_on_task(base, after, str(task), split="test", max_sentences=10)
    assert result.n_sentences == 10 and result.kind == "token"
    assert result.layers["cka"].iloc[0] == pytest.approx(1.0, abs=1e-5) and result.layers["cka"].iloc[-1] < 0.99
    with pytest.raises(ValueError, match="no such file|unknown task"):
        ft.task_sentences(str(tmp_path / "gone.conll"))
    with pytest.raises(ValueError, match="split"):
        ft.task_sentences(str(task), "validation")
