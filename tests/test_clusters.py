"""Senses without labels (ctxmodels.analysis.clusters) and the concordance (ctxmodels.analysis.concordance), on a
constructed two-sense set: vectors in two narrow cones, sentences about rivers or about money."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from ctxmodels.analysis import clusters as cl
from ctxmodels.analysis import concordance as kwic
from ctxmodels.analysis import vectors
from ctxmodels.analysis import word_senses as ws

RIVER = ["The boat drifted to the bank of the river.", "Water rose over the bank after the rain on the river.",
         "We sat on the grassy bank and watched the river water.", "Fish swam near the muddy bank of the stream.",
         "The river flooded the bank and the water reached the boat."]
MONEY = ["She paid the loan back to the bank with money.", "The bank lent money at a high interest rate.",
         "He opened an account at the bank to keep his money.", "The bank refused the loan for the house.",
         "Money in the bank earns interest on the account."]


def two_senses(n_each: int = 20, seed: int = 0):
    """``found`` (labelled river / money sentences, one "bank" each) and vectors [2 * n_each, 2 layers, 16]:
    layer 0 is noise, layer 1 puts each sense in its own narrow cone."""
    lines = [f"{RIVER[i % 5]} | river" for i in range(n_each)] + [f"{MONEY[i % 5]} | money" for i in range(n_each)]
    found = vectors.find_occurrences(lines, "bank")
    rng = np.random.default_rng(seed)
    a, b = np.eye(16)[0], np.eye(16)[1]
    V = np.empty((2 * n_each, 2, 16))
    V[:, 0] = rng.normal(size=(2 * n_each, 16))
    V[:, 1] = np.r_[[a] * n_each, [b] * n_each] * 3.0 + 0.15 * rng.normal(size=(2 * n_each, 16))
    return found, V


def gold_of(found) -> list[str | None]:
    return [o.label for o in found.occurrences]


# -- clustering ------------------------------------------------------------------------------------------------


def test_two_senses_are_found_and_k_is_chosen_by_silhouette():
    found, V = two_senses()
    c = cl.cluster_vectors(V[:, 1])
    assert c.k == 2 and sorted(c.silhouettes) == list(range(2, 9))
    assert max(c.silhouettes, key=c.silhouettes.get) == 2 and c.silhouette > 0.8
    assert cl.adjusted_rand(c.labels, gold_of(found)) > 0.9
    assert c.notes == []


def test_names_are_the_distinctive_context_words_without_the_target_or_stop_words():
    found, V = two_senses()
    c = cl.cluster_vectors(V[:, 1])
    names = cl.name_clusters(found, c.labels, n_words=4)
    by_sense = {found.occurrences[int(np.flatnonzero(c.labels == k)[0])].label: words for k, words in names.items()}
    assert set(by_sense) == {"river", "money"}
    assert {"river", "water"} <= set(by_sense["river"]) and "money" in by_sense["money"]
    assert not {"loan", "money", "interest", "account"} & set(by_sense["river"])
    every = {w for words in names.values() for w in words}
    assert not every & ({"bank", "the", "of", "and", "to", "."} | cl.STOP_WORDS)
    assert all(len(words) <= 4 for words in names.values())


def test_a_window_names_clusters_from_the_nearby_words_only():
    lines = ["river river river then bank loan"] * 2 + ["money money money then bank shore"] * 2
    found = vectors.find_occurrences(lines, "bank")
    ids = np.array([0, 0, 1, 1])
    assert cl.name_clusters(found, ids, window=1) == {0: ["loan"], 1: ["shore"]}  # "then" is in both: not named
    whole = cl.name_clusters(found, ids, n_words=2)
    assert whole == {0: ["river", "loan"], 1: ["money", "shore"]}


def test_a_cluster_without_context_words_has_no_name_and_a_lone_one_its_frequent_words():
    found = vectors.find_occurrences(["the river bank of the river", "bank!", "bank, water"], "bank")
    assert cl.name_clusters(found, np.array([0, 1, 0])) == {0: ["river", "water"], 1: []}
    assert cl.name_clusters(found, np.array([0, 0, -1])) == {0: ["river"]}
    assert cl.name_clusters(found, np.array([-1, -1, -1])) == {}


def test_occurrences_without_a_vector_get_minus_one():
    found, V = two_senses()
    X = V[:, 1].copy()
    X[[3, 25]] = np.nan
    c = cl.cluster_vectors(X)
    assert c.labels[3] == -1 and c.labels[25] == -1 and (np.delete(c.labels, [3, 25]) >= 0).all()
    assert c.k == 2 and any("2 occurrence(s) without a vector" in n for n in c.notes)
    c.names = cl.name_clusters(found, c.labels)
    shown = cl.cluster_label_names(c)
    assert shown[3] == "—" and shown[0].startswith("cluster ") and ": " in shown[0]


@pytest.mark.parametrize("n", [0, 1, 2, 3])
def test_too_few_points_make_one_cluster_with_a_note(n):
    X = np.random.default_rng(0).normal(size=(n, 5))
    c = cl.cluster_vectors(X)
    assert (c.labels == 0).all() and len(c.labels) == n and c.k == (1 if n else 0)
    assert c.notes and c.silhouettes == {}


def test_identical_directions_make_one_cluster_and_a_given_k_is_clipped():
    X = np.tile([1.0, 2.0, 3.0], (10, 1)) * np.arange(1, 11)[:, None]  # one direction, different lengths
    c = cl.cluster_vectors(X)
    assert c.k == 1 and (c.labels == 0).all() and "1 distinct direction" in c.notes[0]
    c = cl.cluster_vectors(X, k=3)
    assert c.k == 1 and (c.labels == 0).all() and "1 cluster(s), not 3" in c.notes[0]


def test_a_given_k_is_used_and_nothing_is_tried():
    _, V = two_senses()
    c = cl.cluster_vectors(V[:, 1], k=3)
    assert c.k == 3 and set(c.labels.tolist()) == {0, 1, 2} and c.silhouettes == {} and np.isnan(c.silhouette)
    with pytest.raises(ValueError, match="positive integer"):
        cl.cluster_vectors(V[:, 1], k=0)
    with pytest.raises(ValueError, match="k_range"):
        cl.cluster_vectors(V[:, 1], k_range=(1, 4))


def test_same_seed_same_clusters_numbered_by_size():
    _, V = two_senses(seed=3)
    X = np.r_[V[:, 0], V[:5, 1]]  # noise: k-means has real choices to make
    first, again = cl.cluster_vectors(X, seed=7), cl.cluster_vectors(X, seed=7)
    np.testing.assert_array_equal(first.labels, again.labels)
    assert first.silhouettes == again.silhouettes
    sizes = np.bincount(first.labels)
    assert (np.diff(sizes) <= 0).all()  # cluster 0 is the largest


# -- across layers -----------------------------------------------------------------------------------------------


def test_cluster_layers_table_with_and_without_gold():
    found, V = two_senses()
    res = cl.cluster_layers(V, found, [0, 1], layer_names=["noise", "senses"])
    assert list(res.table.columns) == ["layer_index", "layer", "k", "silhouette", "ari"]
    assert list(res.table["layer"]) == ["noise", "senses"] and res.table["ari"].isna().all()
    assert set(res.by_layer) == {0, 1} and res.by_layer[1].names

    res = cl.cluster_layers(V, found, [0, 1], gold=gold_of(found))
    ari = res.table.set_index("layer_index")["ari"]
    assert ari[1] > 0.9 and ari[0] < 0.5
    assert list(res.table["layer"]) == ["layer 0", "layer 1"]

    one_sense = ["river"] * len(found.occurrences)
    assert cl.cluster_layers(V, found, [1], gold=one_sense).table["ari"].isna().all()


def test_cluster_layers_takes_elmos_scalar_mix():
    found, V = two_senses()
    mix = ws.LearnedMix((0.1, 0.9), 1.0)
    res = cl.cluster_layers(V, found, [ws.MIX], mix=mix, gold=gold_of(found))
    assert list(res.table["layer"]) == ["scalar mix"] and res.table["ari"].iloc[0] > 0.9
    assert ws.MIX in res.by_layer
    with pytest.raises(ValueError, match="needs a mix"):
        cl.cluster_layers(V, found, [ws.MIX])


def test_cluster_agreement_table_merges_into_the_layer_measurements():
    found, V = two_senses(n_each=6)
    sentences = [np.random.default_rng(i).normal(size=(2, 5, 16)) for i in range(len(found.sentences))]
    measured = ws.measure_layers(V, gold_of(found), sentences, ["noise", "senses"])
    agreement = cl.cluster_agreement_table(V, found)
    assert list(agreement.columns) == ["layer_index", "cluster_k", "cluster_silhouette", "cluster_ari"]
    table = measured.table.merge(agreement, on="layer_index")
    assert len(table) == 2 and table.set_index("layer").loc["senses", "cluster_ari"] > 0.9
    assert "silhouette" in table.columns  # the labelled senses' silhouette is still there, apart


# -- concordance -----------------------------------------------------------------------------------------------


def test_concordance_reassembles_each_sentence_when_nothing_is_cut():
    lines = ["The bank of the river. | river", "Money in the bank, and the bank's vault. | money", "Bank!"]
    found = vectors.find_occurrences(lines, "bank")
    t = kwic.concordance(found, width=500)
    assert list(t.columns) == ["occurrence", "left", "word", "right", "label"]
    assert list(t["occurrence"]) == list(range(len(found.occurrences)))
    for row, o in zip(t.itertuples(), found.occurrences):
        assert row.left + row.word + row.right == o.sentence
    assert list(t["label"]) == [o.label for o in found.occurrences]
    assert t["word"].tolist() == ["bank", "bank", "Bank"]


def test_concordance_cuts_long_contexts_with_an_ellipsis_and_takes_extra_columns():
    sentence = "a" * 30 + " bank " + "b" * 30
    found = vectors.find_occurrences([sentence, "bank"], "bank")
    t = kwic.concordance(found, labels=["x", None], width=10, extra={"cluster": [1, -1], "document": ["d", "e"]})
    assert t.loc[0, "left"] == "…" + "a" * 8 + " " and len(t.loc[0, "left"]) == 10
    assert t.loc[0, "right"] == " " + "b" * 8 + "…" and len(t.loc[0, "right"]) == 10
    assert t.loc[1, "left"] == "" and t.loc[1, "right"] == ""
    assert list(t["label"]) == ["x", None] and list(t["cluster"]) == [1, -1] and list(t.columns)[-2:] == [
        "cluster", "document"]
    with pytest.raises(ValueError, match="labels"):
        kwic.concordance(found, labels=["x"])
    with pytest.raises(ValueError, match="extra column 'cluster'"):
        kwic.concordance(found, extra={"cluster": [1]})
    with pytest.raises(ValueError, match="width"):
        kwic.concordance(found, width=0)


def test_csv_bytes_defuses_formulas_and_round_trips_the_rest():
    df = pd.DataFrame({
        "text": ["=1+1", "+cmd", "-2+3", "@SUM(A1)", "\tx", "\rx", "  =HYPERLINK()", "plain, with \"quotes\"",
                 "naïve … ünïcode", "a=b\rc\nd"],
        "number": [-1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
        "score": [-0.5] * 10,
    })
    data = kwic.csv_bytes(df)
    assert data.startswith(b"\xef\xbb\xbf")  # UTF-8 with a byte-order mark
    back = pd.read_csv(io.BytesIO(data), encoding="utf-8-sig", keep_default_na=False)
    assert list(back.columns) == ["text", "number", "score"]
    expected = ["'=1+1", "'+cmd", "'-2+3", "'@SUM(A1)", "'\tx", "'\rx", "'  =HYPERLINK()"]
    assert back["text"].tolist()[:7] == expected
    assert back["text"].tolist()[7:] == df["text"].tolist()[7:]
    assert back["number"].tolist() == df["number"].tolist() and back["score"].tolist() == df["score"].tolist()

    evil_header = kwic.csv_bytes(pd.DataFrame({"=cmd": ["ok"]}))
    assert pd.read_csv(io.BytesIO(evil_header)).columns[0] == "'=cmd"


def test_a_concordance_goes_through_csv():
    found = vectors.find_occurrences(["=bank + 1 | -money", "The bank. | river"], "bank")
    data = kwic.csv_bytes(kwic.concordance(found))
    back = pd.read_csv(io.BytesIO(data), keep_default_na=False)
    assert back.loc[0, "left"] == "'=" and back.loc[0, "label"] == "'-money"
    assert back.loc[1, "left"] == "The " and back.loc[1, "right"] == "."
