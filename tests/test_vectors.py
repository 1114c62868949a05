"""Word vectors per layer: labels, inflections, finding occurrences, vectors per occurrence and layer, the
embedding cache, and the `ctxmodels embed` command end to end (including the published ELMo folder)."""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import numpy as np
import pytest
import torch

from ctxmodels.analysis import vectors as V
from ctxmodels.analysis.vectors import (
    EmbeddingCache,
    find_occurrences,
    inflections,
    parse_labelled,
    word_vectors,
)
from ctxmodels.bert import BertConfig, BertForPreTraining
from ctxmodels.cli import main
from ctxmodels.elmo import ElmoConfig, ElmoLanguageModel
from ctxmodels.formats.allennlp import save_elmo
from ctxmodels.formats.huggingface import save_pretrained
from ctxmodels.loading import clear_cache, load
from ctxmodels.static import StaticVectors
from ctxmodels.tokenization import WordPieceTokenizer

LETTERS = "abcdefghijklmnopqrstuvwxyz"
WORDS = ["the", "bank", "banks", "river", "money", "run", "ran", "runs", "running", "by", "was", "closed"]


@pytest.fixture(autouse=True)
def _fresh_caches():
    clear_cache()
    V.CACHE.clear()
    yield
    clear_cache()
    V.CACHE.clear()


@pytest.fixture
def static_dir(tmp_path) -> Path:
    """Row i of the table is [i, i, i, i]: the expected vectors are known by hand."""
    table = np.repeat(np.arange(len(WORDS), dtype=np.float32)[:, None], 4, axis=1)
    StaticVectors.from_vectors(WORDS, table, lowercase=True).save(tmp_path / "static")
    return tmp_path / "static"


@pytest.fixture
def bert_dir(tmp_path) -> Path:
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocab = specials + WORDS + [".", ","] + list(LETTERS) + [f"##{c}" for c in LETTERS]
    (tmp_path / "v.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    torch.manual_seed(0)
    model = BertForPreTraining(BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2,
                                          num_attention_heads=2, intermediate_size=64, max_position_embeddings=64))
    save_pretrained(model.eval(), WordPieceTokenizer.from_vocab(tmp_path / "v.txt"), tmp_path / "bert")
    return tmp_path / "bert"


# -- labels and inflections ----------------------------------------------------------------------------------


def test_parse_labelled():
    assert parse_labelled("The bank was closed. | money") == ("The bank was closed.", "money")
    assert parse_labelled("No label here.") == ("No label here.", None)
    assert parse_labelled("a | b | river bank ") == ("a | b", "river bank")  # the last bar separates
    assert parse_labelled("Empty label |") == ("Empty label", None)


@pytest.mark.parametrize("word,expected", [
    ("run", {"run", "runs", "ran", "running"}),
    ("ran", {"run", "runs", "ran", "running"}),
    ("bank", {"bank", "banks", "banked", "banking"}),
    ("try", {"try", "tries", "tried", "trying"}),
    ("stop", {"stop", "stops", "stopped", "stopping"}),
    ("hope", {"hope", "hopes", "hoped", "hoping"}),
    ("die", {"die", "dies", "died", "dying"}),
    ("watch", {"watch", "watches", "watched", "watching"}),
    ("bear", {"bear", "bears", "bearing", "bore", "borne", "born"}),
    ("light", {"light", "lights", "lighting", "lit", "lighted"}),
    ("go", {"go", "goes", "going", "went", "gone"}),
    ("man", {"man", "men", "mans", "manning"}),
])
def test_inflections(word, expected):
    assert inflections(word) == expected


def test_inflections_of_longer_words_keep_both_spellings():
    forms = inflections("visit")  # visited, but admitted: both spellings are tried
    assert {"visited", "visiting", "visits"} <= forms


# -- finding occurrences --------------------------------------------------------------------------------------


def test_find_occurrences_case_punctuation_several_per_sentence_and_spans():
    sentences = [
        "The Bank, by the bank, was closed. | money",
        "No target here.",
        "BANK!",
        "The banks were full.",
    ]
    found = find_occurrences(sentences, "bank")
    assert [(o.sentence_index, o.word_index, o.word) for o in found.occurrences] == [
        (0, 1, "Bank"), (0, 5, "bank"), (2, 0, "BANK")]
    for o in found.occurrences:
        a, b = o.char_span
        assert o.sentence[a:b] == o.word
    assert found.occurrences[0].char_span == (4, 8) and found.occurrences[1].char_span == (17, 21)
    assert [o.label for o in found.occurrences] == ["money", "money", None]
    assert found.occurrences[0].sentence == "The Bank, by the bank, was closed."  # the label is not text
    assert found.missing == [1, 3] and found.missing_sentences == ["No target here.", "The banks were full."]
    assert found.words[0][:3] == ["The", "Bank", ","]


def test_find_occurrences_with_inflections_and_explicit_forms():
    sentences = ["He runs and ran.", "Running was fun.", "The bank's door.", "A run."]
    found = find_occurrences(sentences, "run", inflections=True)
    assert [o.word for o in found.occurrences] == ["runs", "ran", "Running", "run"]
    assert found.missing == [2]
    assert [o.word for o in find_occurrences(sentences, "bank", inflections=True).occurrences] == ["bank's"]
    explicit = find_occurrences(sentences, "run", inflections=["ran"])
    assert [o.word for o in explicit.occurrences] == ["ran", "run"]
    assert find_occurrences(sentences, "run").missing == [0, 1, 2]  # "run" alone misses runs, ran, Running


def test_a_word_that_never_occurs_lists_the_sentences():
    with pytest.raises(ValueError, match=r"'crane' occurs in none of the 2 sentences:\n  0: A bank\.\n  1: A river\."):
        find_occurrences(["A bank. | money", "A river."], "crane")
    with pytest.raises(ValueError, match="its forms"):
        find_occurrences(["nothing"], "run", inflections=True)
    with pytest.raises(ValueError, match="one word"):
        find_occurrences(["a river bank"], "river bank")
    with pytest.raises(ValueError, match="empty"):
        find_occurrences(["a bank"], " ")
    with pytest.raises(ValueError, match="no sentences"):
        find_occurrences([], "bank")


def test_labelled_tuples_emoji_and_empty_sentences():
    found = find_occurrences([("🙂 bank 🙂", "money"), "", "naïve bank"], "bank")
    assert [(o.sentence_index, o.word_index, o.label) for o in found.occurrences] == [(0, 1, "money"), (2, 1, None)]
    assert found.missing == [1]
    assert found.occurrences[0].sentence[slice(*found.occurrences[0].char_span)] == "bank"


# -- vectors per occurrence ------------------------------------------------------------------------------------


def test_word_vectors_with_static_vectors_by_hand(static_dir):
    sentences = ["The bank by the river bank. | river", "Money in the BANK | money", "Nothing."]
    ov = word_vectors(str(static_dir), sentences, "bank")
    assert ov.vectors.shape == (3, 1, 4) and ov.vectors.dtype == np.float32
    np.testing.assert_array_equal(ov.vectors[:, 0, 0], [1, 1, 1])  # "bank" is row 1
    assert ov.layer_names == ["static"] and ov.labels == ["river", "river", "money"]
    assert ov.missing == [2] and ov.missing_sentences == ["Nothing."]
    assert ov.layer("static").shape == (3, 4) and ov.layer(0).shape == (3, 4)
    with pytest.raises(ValueError, match="no layer named 'layer 9'"):
        ov.layer("layer 9")
    with pytest.raises(ValueError, match="out of range"):
        ov.layer(3)

    inflected = word_vectors(str(static_dir), ["Banks run; the bank ran."], "run", inflections=True)
    assert [o.word for o in inflected.occurrences] == ["run", "ran"]
    np.testing.assert_array_equal(inflected.vectors[:, 0, 0], [WORDS.index("run"), WORDS.index("ran")])


def test_occurrences_without_vectors_warn_or_fail(static_dir, bert_dir):
    static_dir_model = load(static_dir)
    with pytest.raises(ValueError, match="has no vector for 'crane'"):
        word_vectors(static_dir_model, ["A crane flew.", "The crane lifted it."], "crane")
    # BERT: the occurrence beyond the 64 positions of the model has NaN rows, the other one a vector.
    far = " ".join(["the"] * 80) + " bank"
    with pytest.warns(UserWarning, match="1 of 2 occurrences of 'bank' have no vector"):
        ov = word_vectors(load(bert_dir), ["the bank", far], "bank")
    assert ov.finite.tolist() == [True, False] and np.isnan(ov.vectors[1]).all()


def test_word_vectors_select_layers_and_pooling(bert_dir):
    model = load(bert_dir)
    sentences = ["the bank by the river", "money in the bank"]
    full = word_vectors(model, sentences, "bank")
    assert full.vectors.shape == (2, 3, 32) and full.layer_names == ["embeddings", "layer 1", "layer 2"]
    some = word_vectors(model, sentences, "bank", layers=["layer 2", 0])
    assert some.layer_names == ["layer 2", "embeddings"]
    np.testing.assert_array_equal(some.vectors[:, 0], full.layer("layer 2"))
    np.testing.assert_array_equal(some.vectors[:, 1], full.layer(0))
    # "bank" is one word piece, so every pooling agrees; the static layer is the same in both sentences.
    for pooling in ("first", "last"):
        np.testing.assert_allclose(word_vectors(model, sentences, "bank", pooling=pooling).vectors, full.vectors)
    with pytest.raises(ValueError, match="pooling"):
        word_vectors(model, sentences, "bank", pooling="max")


def _count_forward(module: torch.nn.Module) -> list[int]:
    calls = [0]

    def hook(*_):
        calls[0] += 1

    module.register_forward_hook(hook)
    return calls


def test_cache_means_another_layer_or_word_does_not_run_the_model(bert_dir):
    model = load(bert_dir)
    calls = _count_forward(model.model.bert)
    sentences = ["the bank by the river", "money in the bank", "the river ran"]
    first = word_vectors(model, sentences, "bank", batch_size=8)
    assert calls[0] == 1
    again = word_vectors(model, sentences, "bank", layers=["layer 1"])
    other_word = word_vectors(model, sentences, "river")
    assert calls[0] == 1  # nothing ran again
    np.testing.assert_array_equal(again.vectors[:, 0], first.layer("layer 1"))
    assert len(other_word) == 2
    # One new sentence: only that one runs (one forward call of one sentence).
    word_vectors(model, sentences + ["a bank"], "bank")
    assert calls[0] == 2
    # Another pooling is another cache entry.
    word_vectors(model, sentences, "bank", pooling="first")
    assert calls[0] == 3


def test_cached_arrays_cannot_be_changed_by_callers(static_dir):
    ov = word_vectors(str(static_dir), ["the bank"], "bank")
    ov.vectors[:] = -1  # the result is a copy
    np.testing.assert_array_equal(word_vectors(str(static_dir), ["the bank"], "bank").vectors[:, 0, 0], [1])
    (cached,) = V.embed_sentences(load(static_dir), [["the", "bank"]])
    with pytest.raises(ValueError):
        cached[0, 0, 0] = 5


def test_embedding_cache_is_bounded_by_bytes():
    cache = EmbeddingCache(max_bytes=3 * 400)
    owner = object()
    for i in range(5):
        cache.put(cache.key(owner, "mean", [str(i)]), owner, np.zeros(100, np.float32))  # 400 bytes each
    assert len(cache) == 3 and cache.nbytes == 1200
    assert cache.get(cache.key(owner, "mean", ["0"])) is None  # the oldest went first
    assert cache.get(cache.key(owner, "mean", ["4"])) is not None
    cache.put(cache.key(owner, "mean", ["big"]), owner, np.zeros(1000, np.float32))  # larger than the cache
    assert len(cache) == 3


# -- `ctxmodels embed` ------------------------------------------------------------------------------------------


def _embed(tmp_path, model: str, lines: list[str], *extra: str) -> tuple[int, Path]:
    src = tmp_path / "in.txt"
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "out" / "vectors.npz"
    rc = main(["embed", "--model", model, "--input", str(src), "--out", str(out), *extra])
    return rc, out


def test_cli_embed_static_by_hand_with_empty_lines(tmp_path, static_dir):
    rc, out = _embed(tmp_path, str(static_dir), ["the bank", "", "river 🙂 unknown"])
    assert rc == 0
    with np.load(out) as f:  # no pickles needed
        assert list(f["layers"]) == ["static"]
        assert sorted(f.files) == ["layers", "s0", "s1", "s2"]
        np.testing.assert_array_equal(f["s0"][0, :, 0], [0, 1])
        assert f["s1"].shape == (1, 0, 4)
        assert f["s2"].shape == (1, 3, 4) and f["s2"].dtype == np.float32
        assert f["s2"][0, 0, 0] == WORDS.index("river") and np.isnan(f["s2"][0, 1:]).all()


def test_cli_embed_bert_keeps_the_given_words(tmp_path, bert_dir):
    rc, out = _embed(tmp_path, str(bert_dir), ["the bank, by the river.", "money"], "--pooling", "last")
    assert rc == 0
    model = load(bert_dir)
    expected = model.embed([["the", "bank,", "by", "the", "river."], ["money"]], pooling="last")
    with np.load(out) as f:
        assert list(f["layers"]) == ["embeddings", "layer 1", "layer 2"]
        assert f["s0"].shape == (3, 5, 32)  # "bank," is one given word, its pieces pooled
        np.testing.assert_allclose(f["s0"], expected[0], atol=1e-6)
        np.testing.assert_allclose(f["s1"], expected[1], atol=1e-6)


def test_cli_embed_published_elmo_folder(tmp_path, elmo_reference):
    sentences = json.loads((elmo_reference / "sentences.json").read_text())
    lines = [sentences[0][0], "", sentences[1][0]]
    rc, out = _embed(tmp_path, str(elmo_reference), lines)
    assert rc == 0
    with np.load(out) as f:
        assert list(f["layers"]) == ["layer 0 (char CNN)", "layer 1 (LSTM)", "layer 2 (LSTM)"]
        assert f["s1"].shape == (3, 0, 32)
        for i, k in ((0, 0), (2, 1)):
            with h5py.File(elmo_reference / f"lm_embeddings_{k}.hdf5", "r") as h:
                ref = h["0"][...]
            assert f[f"s{i}"].shape == (3, len(lines[i].split()), 32)
            np.testing.assert_allclose(f[f"s{i}"][2], np.concatenate([ref[0], ref[1]], -1), atol=1e-5)
            # Layer 0 is the token embedding duplicated to full width.
            np.testing.assert_array_equal(f[f"s{i}"][0, :, :16], f[f"s{i}"][0, :, 16:])


def test_cli_embed_our_elmo(tmp_path):
    torch.manual_seed(0)
    save_elmo(ElmoLanguageModel(ElmoConfig.preset("tiny")).eval(), tmp_path / "elmo")
    rc, out = _embed(tmp_path, str(tmp_path / "elmo"), ["A 🙂 naïve bank", "", "the bank"])
    assert rc == 0
    with np.load(out) as f:
        assert f["s0"].shape == (3, 4, 64) and np.isfinite(f["s0"]).all()
        assert f["s1"].shape == (3, 0, 64) and f["s2"].shape == (3, 2, 64)
        np.testing.assert_allclose(f["s0"][0, 3], f["s2"][0, 1], atol=1e-6)  # layer 0 of "bank": context-free


def test_cli_embed_bad_input_is_a_clear_error(tmp_path, static_dir, capsys):
    rc, _ = _embed(tmp_path, str(tmp_path / "missing-model"), ["a bank"])
    assert rc == 2 and "cannot find a model" in capsys.readouterr().err
    bad = tmp_path / "latin1.txt"
    bad.write_bytes("caf\xe9 bank\n".encode("latin-1"))
    rc = main(["embed", "--model", str(static_dir), "--input", str(bad), "--out", str(tmp_path / "x.npz")])
    assert rc == 2 and "not UTF-8" in capsys.readouterr().err
    rc = main(["embed", "--model", str(static_dir), "--input", str(tmp_path / "nope.txt"),
               "--out", str(tmp_path / "x.npz")])
    assert rc == 2 and "input file not found" in capsys.readouterr().err
    assert not (tmp_path / "x.npz").exists()
