"""ctxmodels.load: every kind from files written by each format's own save function, the Hugging Face cache
layout, the published ELMo reference, short names, clear errors, and embed() (shapes, pooling worked out by
hand, truncation, batching, odd input)."""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import numpy as np
import pytest
import torch

import ctxmodels
from ctxmodels.bert import BertConfig, BertForPreTraining
from ctxmodels.checkpoint import CheckpointError
from ctxmodels.elmo import ElmoConfig, ElmoLanguageModel
from ctxmodels.formats.allennlp import save_elmo
from ctxmodels.formats.huggingface import save_pretrained
from ctxmodels.loading import (
    BertLoaded,
    ElmoLoaded,
    ModelNotFoundError,
    StaticLoaded,
    clear_cache,
    load,
    pool_pieces,
)
from ctxmodels.static import StaticVectors
from ctxmodels.tokenization import WordPieceTokenizer

LETTERS = "abcdefghijklmnopqrstuvwxyz"
# Whole words, a word that splits into exactly three pieces (un ##believ ##able), and single letters so that
# any lower-case word has pieces.
VOCAB = (["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "bank", "river", "money", "un", "##believ",
          "##able", ".", ","] + list(LETTERS) + [f"##{c}" for c in LETTERS])


def make_tokenizer(tmp_path: Path) -> WordPieceTokenizer:
    vocab = tmp_path / "vocab-src.txt"
    vocab.write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    return WordPieceTokenizer.from_vocab(vocab)


def make_bert_dir(tmp_path: Path, name: str = "bert", **config) -> Path:
    torch.manual_seed(0)
    cfg = dict(vocab_size=len(VOCAB), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
               intermediate_size=64, max_position_embeddings=128)
    model = BertForPreTraining(BertConfig(**{**cfg, **config})).eval()
    out = tmp_path / name
    save_pretrained(model, make_tokenizer(tmp_path), out, card="# tiny test BERT\n")
    return out


def make_elmo_dir(tmp_path: Path, name: str = "elmo", n_vocab: int = 0) -> Path:
    torch.manual_seed(0)
    model = ElmoLanguageModel(ElmoConfig.preset("tiny", n_tokens_vocab=n_vocab)).eval()
    vocab = ["<S>", "</S>", "<UNK>"] + [f"w{i}" for i in range(n_vocab - 3)] if n_vocab else None
    save_elmo(model, tmp_path / name, vocab=vocab)
    return tmp_path / name


def make_static_dir(tmp_path: Path, name: str = "static") -> Path:
    words = ["the", "bank", "river", "money"]
    table = np.arange(len(words) * 3, dtype=np.float32).reshape(len(words), 3)
    StaticVectors.from_vectors(words, table, lowercase=True).save(tmp_path / name)
    return tmp_path / name


@pytest.fixture(autouse=True)
def _fresh_cache():
    clear_cache()
    yield
    clear_cache()


# -- each kind ---------------------------------------------------------------------------------------------


def test_load_our_bert(tmp_path):
    m = load(make_bert_dir(tmp_path))
    assert isinstance(m, BertLoaded) and m.kind == "bert"
    assert m.layer_names == ["embeddings", "layer 1", "layer 2"]
    assert (m.dim, m.static_layer, m.can_fill_mask, m.has_attention, m.has_lm) == (32, 0, True, True, False)
    assert m.tokenizer is not None and m.card.startswith("# tiny test BERT")
    assert m.config["model_type"] == "bert"
    d = m.describe()
    assert d["kind"] == "bert" and d["layers"] == m.layer_names and d["parameters"] == m.model.num_parameters()
    out = m.embed([["the", "bank", "."], ["river"]])
    assert [a.shape for a in out] == [(3, 3, 32), (3, 1, 32)] and out[0].dtype == np.float32
    assert np.isfinite(out[0]).all()


def test_bert_without_mlm_head_says_so(tmp_path):
    import transformers

    torch.manual_seed(0)
    cfg = transformers.BertConfig(vocab_size=len(VOCAB), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                  intermediate_size=64, max_position_embeddings=64)
    transformers.BertModel(cfg).save_pretrained(tmp_path / "hf")
    make_tokenizer(tmp_path).save(tmp_path / "hf")
    m = load(tmp_path / "hf")
    assert m.kind == "bert" and not m.can_fill_mask and m.has_attention
    assert m.embed([["the", "bank"]])[0].shape == (3, 2, 32)


def test_load_bert_from_the_hugging_face_cache(tmp_path, monkeypatch):
    hub = tmp_path / "hub"
    repo = hub / "models--someorg--tiny-bert"
    snapshot = make_bert_dir(tmp_path, "src")
    (repo / "snapshots").mkdir(parents=True)
    # An older snapshot and the one refs/main points to.
    make_bert_dir(repo / "snapshots", "0000old", num_hidden_layers=1)
    snapshot.rename(repo / "snapshots" / "abc123")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("abc123")
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))

    m = load("someorg/tiny-bert")
    assert m.name == "someorg/tiny-bert" and m.path.name == "abc123" and m.n_layers == 3
    assert load(repo).path == m.path  # the models--ORG--NAME folder itself
    assert load(repo / "snapshots" / "0000old").n_layers == 2  # an explicit snapshot
    with pytest.raises(ModelNotFoundError, match="models--someorg--other"):
        load("someorg/other")

    # listed for the Models page; an interrupted download (no snapshot) is left out
    (hub / "models--someorg--broken").mkdir()
    from ctxmodels.loading import hf_cache_models

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))  # keep this machine's own cache out of the list
    monkeypatch.delenv("HF_HOME", raising=False)
    assert hf_cache_models() == [{"name": "someorg/tiny-bert", "model_type": "bert", "path": str(m.path)}]


def test_hugging_face_cache_environment_variables(tmp_path, monkeypatch):
    """Each variable alone puts the cache where huggingface_hub puts it, and the loader, the BERT reader and the
    Models page all follow it; with several set, the most specific comes first; cache_dir= overrides them all."""
    from ctxmodels.formats.huggingface import resolve_checkpoint_dir
    from ctxmodels.loading import hf_cache_dirs, hf_cache_models, resolve

    def snapshot(root: Path, name: str) -> Path:
        snap = root / f"models--org--{name}" / "snapshots" / "rev1"
        snap.mkdir(parents=True)
        (snap / "config.json").write_text('{"model_type": "bert"}')
        return snap

    roots = {  # variable -> (its value, the cache folder it means)
        "HF_HUB_CACHE": (tmp_path / "hub-cache", tmp_path / "hub-cache"),
        "HUGGINGFACE_HUB_CACHE": (tmp_path / "old-hub-cache", tmp_path / "old-hub-cache"),
        "HF_HOME": (tmp_path / "hf-home", tmp_path / "hf-home" / "hub"),
        "XDG_CACHE_HOME": (tmp_path / "xdg", tmp_path / "xdg" / "huggingface" / "hub"),
        "HOME": (tmp_path / "home", tmp_path / "home" / ".cache" / "huggingface" / "hub"),
    }
    for var, (value, root) in roots.items():
        for other in roots:
            monkeypatch.delenv(other, raising=False)
        monkeypatch.setenv("HOME", str(tmp_path / "no-home"))  # never this machine's own cache
        monkeypatch.setenv(var, str(value))
        name = var.lower().replace("_", "-")
        snap = snapshot(root, name)
        assert hf_cache_dirs()[0] == root, var
        assert resolve(f"org/{name}") == (snap, f"org/{name}"), var
        assert resolve_checkpoint_dir(f"org/{name}") == snap, var
        assert {"name": f"org/{name}", "model_type": "bert", "path": str(snap)} in hf_cache_models(), var

    for var, (value, _) in roots.items():
        monkeypatch.setenv(var, str(value))
    assert hf_cache_dirs() == [root for _, root in list(roots.values())[:4]]  # $XDG_CACHE_HOME replaces ~/.cache
    first, later = snapshot(roots["HF_HUB_CACHE"][1], "both"), snapshot(roots["HF_HOME"][1], "both")
    assert resolve("org/both")[0] == first and resolve_checkpoint_dir("org/both") == first
    assert resolve_checkpoint_dir("org/both", cache_dir=roots["HF_HOME"][1]) == later
    with pytest.raises(CheckpointError, match="models--org--hf-hub-cache"):
        resolve_checkpoint_dir("org/hf-hub-cache", cache_dir=roots["HF_HOME"][1])


def test_load_our_elmo(tmp_path):
    m = load(make_elmo_dir(tmp_path, n_vocab=10))
    assert isinstance(m, ElmoLoaded)
    assert m.layer_names == ["layer 0 (char CNN)", "layer 1 (LSTM)", "layer 2 (LSTM)"]
    assert (m.dim, m.has_lm, m.can_fill_mask, m.has_attention, m.tokenizer) == (64, True, False, False, None)
    out = m.embed([["The", "bank", "."], ["A", "bank"]])
    assert [a.shape for a in out] == [(3, 3, 64), (3, 2, 64)]
    # Layer 0 is context-free and duplicated [e; e]; layers 1-2 depend on the context.
    np.testing.assert_allclose(out[0][0, 1], out[1][0, 1], atol=1e-6)
    np.testing.assert_allclose(out[0][0, :, :32], out[0][0, :, 32:])
    assert not np.allclose(out[0][2, 1], out[1][2, 1])
    assert not load(make_elmo_dir(tmp_path, "nohead")).has_lm


def test_published_elmo_reference_matches_the_recorded_top_layer(elmo_reference):
    m = load(elmo_reference)
    assert m.kind == "elmo" and not m.has_lm and m.name == "elmo-reference" and m.dim == 32
    sentences = json.loads((elmo_reference / "sentences.json").read_text())
    batch0 = [sentences[k][0].split() for k in range(3)]  # recorded from a zero state
    out = m.embed(batch0)
    for k in range(3):
        with h5py.File(elmo_reference / f"lm_embeddings_{k}.hdf5", "r") as f:
            ref = f["0"][...]  # [2, n, 16]: forward and backward top layer
        np.testing.assert_allclose(out[k][2], np.concatenate([ref[0], ref[1]], axis=-1), atol=1e-5)
    # The options file or the weights file alone name the same model.
    for p in (elmo_reference / "options.json", elmo_reference / "lm_weights.hdf5"):
        other = load(p)
        assert other.name == "elmo-reference"
        np.testing.assert_allclose(other.embed(batch0[:1])[0], out[0], atol=1e-6)


def test_load_static_dir_and_text_file(tmp_path):
    m = load(make_static_dir(tmp_path))
    assert isinstance(m, StaticLoaded) and m.layer_names == ["static"] and m.dim == 3
    assert (m.can_fill_mask, m.has_attention, m.has_lm) == (False, False, False)
    with pytest.warns(UserWarning, match=r"1 of 3 word\(s\) have no vector in static and get NaN vectors, "
                                         r"e.g. 'unknownword'"):
        (v,) = m.embed([["The", "bank", "unknownword"]])
    np.testing.assert_array_equal(v[0, :2], [[0, 1, 2], [3, 4, 5]])
    assert np.isnan(v[0, 2]).all()

    text = tmp_path / "glove.txt"
    text.write_text("bank 1 0\nriver 0 1\n", encoding="utf-8")
    t = load(text)
    assert t.kind == "static" and t.name == "glove.txt"
    with pytest.warns(UserWarning, match="1 of 3 word"):
        (v,) = t.embed([["Bank", "river", "x"]])  # lower-cased fall-back for "Bank"
    np.testing.assert_array_equal(v[0, :2], [[1, 0], [0, 1]])
    assert np.isnan(v[0, 2]).all()
    folder = tmp_path / "vecdir"
    folder.mkdir()
    (folder / "vectors.vec").write_text("2 2\nbank 1 0\nriver 0 1\n", encoding="utf-8")
    assert load(folder).kind == "static"


# -- names, the cache, errors ------------------------------------------------------------------------------


def test_short_names_resolve_in_the_assets_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("CTXMODELS_ASSETS", str(tmp_path))
    make_static_dir(tmp_path, "static-eltec")
    m = ctxmodels.load("static-eltec")
    assert m.name == "static-eltec" and m.kind == "static"
    with pytest.raises(ModelNotFoundError, match=r"'bert-eltec' is not in this checkout.*bert-eltec"):
        load("bert-eltec")
    with pytest.raises(ModelNotFoundError) as e:
        load("no-such-model")
    assert "no file or directory" in str(e.value) and "bert-eltec" in str(e.value)


def test_an_installed_package_without_assets_says_which_variable_to_set(tmp_path, monkeypatch):
    monkeypatch.setenv("CTXMODELS_ASSETS", str(tmp_path / "not-there"))
    with pytest.raises(ModelNotFoundError, match=r"not installed with the package.*Set CTXMODELS_ASSETS"):
        load("elmo-eltec")


def test_paths_follow_their_environment_variables(tmp_path, monkeypatch):
    from ctxmodels import paths

    for var in ("CTXMODELS_ASSETS", "CTXMODELS_DATA", "CTXMODELS_CACHE", "XDG_CACHE_HOME"):
        monkeypatch.delenv(var, raising=False)
    checkout = Path(ctxmodels.__file__).resolve().parents[1]
    assert paths.data_dir() == checkout.parent / "shared" / "data"
    assert paths.examples_dir() == checkout / "assets" / "examples"
    assert paths.cache_dir() == Path.home() / ".cache" / "ctxmodels"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert paths.cache_dir() == tmp_path / "xdg" / "ctxmodels"
    for var, get in (("CTXMODELS_ASSETS", paths.assets_dir), ("CTXMODELS_DATA", paths.data_dir),
                     ("CTXMODELS_CACHE", paths.cache_dir)):
        monkeypatch.setenv(var, str(tmp_path / var))
        assert get() == tmp_path / var
    assert paths.examples_dir() == tmp_path / "CTXMODELS_ASSETS" / "examples"


def test_the_default_assets_folder_is_beside_the_package(monkeypatch):
    from ctxmodels.loading import assets_dir

    monkeypatch.delenv("CTXMODELS_ASSETS", raising=False)
    assert assets_dir() == Path(ctxmodels.__file__).resolve().parents[1] / "assets"


def test_each_path_is_loaded_once(tmp_path):
    d = make_bert_dir(tmp_path)
    a = load(d)
    assert load(str(d)) is a and load(d / ".." / d.name) is a
    assert load(d / "config.json") is a and load(d / "model.safetensors") is a  # a file of the checkpoint
    assert load(d, reload=True) is not a
    b = load(d)
    # Retraining in place (a newer file) loads the new model.
    cfg = d / "config.json"
    st = cfg.stat()
    import os

    os.utime(cfg, (st.st_atime, st.st_mtime + 10))
    assert load(d) is not b


def test_missing_and_empty_paths_list_what_was_looked_for(tmp_path):
    with pytest.raises(ModelNotFoundError, match="no file or directory"):
        load(tmp_path / "nothing-here")
    with pytest.raises(ModelNotFoundError, match="no model given"):
        load("")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelNotFoundError, match=r"config.json.*options.json.*\.txt"):
        load(tmp_path / "empty")
    (tmp_path / "model.bin").write_bytes(b"\x00\x01")
    with pytest.raises(ModelNotFoundError, match="not a model file"):
        load(tmp_path / "model.bin")


def test_corrupt_files_are_clear_errors(tmp_path):
    d = make_bert_dir(tmp_path)
    (d / "model.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(CheckpointError, match="model.safetensors"):
        load(d)
    (d / "config.json").write_text("{ not json")
    with pytest.raises(CheckpointError, match=r"config.json: not valid JSON"):
        load(d)
    (d / "config.json").write_text(json.dumps({"model_type": "t5", "num_layers": 2}))  # gpt2: the gpt kind's
    with pytest.raises(CheckpointError, match="model_type 't5' is not supported"):
        load(d)
    e = make_elmo_dir(tmp_path)
    (e / "model.safetensors").write_bytes(b"\x00" * 20)
    with pytest.raises(CheckpointError, match="model.safetensors"):
        load(e)
    bad = tmp_path / "pub"
    bad.mkdir()
    (bad / "options.json").write_text("{}")
    (bad / "weights.hdf5").write_bytes(b"not hdf5")
    with pytest.raises(CheckpointError, match="options.json"):
        load(bad)
    txt = tmp_path / "broken.txt"
    txt.write_text("bank 1 0\nriver 0 x\n")
    with pytest.raises(ValueError, match="line 2"):
        load(txt)


# Weights each far below the limit for one weight (1e15) that multiply to 1e42 in layer 2's feed-forward.
OVERFLOWING = {"bert.encoder.layer.1.attention.output.LayerNorm.weight": 0.0,
               "bert.encoder.layer.1.attention.output.LayerNorm.bias": 1e14,
               "bert.encoder.layer.1.intermediate.dense.weight": 1e14,
               "bert.encoder.layer.1.output.dense.weight": 1e14}


def test_a_model_that_computes_nan_is_refused_at_load_and_never_gives_nan_as_numbers(tmp_path, monkeypatch):
    d = make_bert_dir(tmp_path)
    m = load(d)
    assert m.embed([["the", "bank"]])[0].shape == (3, 2, 32)
    # weights that are each finite but overflow together: the load-time run of a plain sentence finds them
    import safetensors.torch as st

    state = st.load_file(d / "model.safetensors")
    for name, value in OVERFLOWING.items():
        state[name].view(-1)[0] = value
    st.save_file(state, d / "model.safetensors")
    with pytest.raises(CheckpointError, match=r"model.safetensors|bert: the model computes NaN or infinite values "
                                              r"\(layer 2\) for a plain six-word sentence"):
        load(d)
    # a model that goes NaN only on some input: those words get NaN vectors and a warning naming the model's
    # computation, not "no word pieces"
    clear_cache()
    good = load(make_bert_dir(tmp_path, "good"))
    real = good._hidden_states

    def damaged(batch):
        hidden = real(batch).clone()
        hidden[2, :, 1] = float("inf")
        return hidden

    monkeypatch.setattr(good, "_hidden_states", damaged)
    with pytest.warns(UserWarning, match=r"the model computed NaN or infinite values for 2 word\(s\)") as said:
        out = good.embed([["the", "bank"], ["river", "money"]])
    assert not any("no word pieces" in str(w.message) for w in said)
    assert all(np.isnan(a[:, 0]).all() and np.isfinite(a[:, 1]).all() for a in out)


def test_bert_config_limits_and_exact_size():
    with pytest.raises(ValueError, match="num_attention_heads must be a whole number between 1 and 4096, got 0"):
        BertConfig(num_attention_heads=0)
    with pytest.raises(ValueError, match="hidden_dropout_prob must be at least 0 and below 1, got nan"):
        BertConfig(hidden_dropout_prob=float("nan"))
    with pytest.raises(ValueError, match=r"pad_token_id \(a row of the vocabulary\) must be"):
        BertConfig(vocab_size=10, hidden_size=8, num_attention_heads=2, pad_token_id=10)
    with pytest.raises(ValueError, match="more than half of this machine's memory"):
        BertConfig(vocab_size=10_000_000, hidden_size=65_536, num_attention_heads=1)
    with pytest.raises(ValueError, match="required field"):
        BertConfig.from_dict({"model_type": "bert", "hidden_size": 8})
    for config in (BertConfig.preset("tiny", vocab_size=100), BertConfig(vocab_size=7, hidden_size=6,
                                                                         num_attention_heads=3, type_vocab_size=1)):
        assert config.num_parameters() == BertForPreTraining(config).num_parameters()
    elmo = ElmoConfig.preset("tiny", n_tokens_vocab=11)
    assert elmo.num_parameters() == sum(p.numel() for p in ElmoLanguageModel(elmo).parameters())


# -- embed: pooling, truncation, batching, odd input ----------------------------------------------------------


def test_pool_pieces_by_hand():
    # 2 layers, 6 positions: [CLS] the un ##believ ##able [SEP]; hidden value = 10 * layer + position.
    hidden = torch.tensor([[[10.0 * l + t] * 2 for t in range(6)] for l in range(2)])
    word_ids = [None, 0, 1, 1, 1, None]
    mean = pool_pieces(hidden, word_ids, 2, "mean")
    first = pool_pieces(hidden, word_ids, 2, "first")
    last = pool_pieces(hidden, word_ids, 2, "last")
    assert mean.shape == (2, 2, 2)
    np.testing.assert_array_equal(mean[:, :, 0], [[1, 3], [11, 13]])  # (2 + 3 + 4) / 3 = 3
    np.testing.assert_array_equal(first[:, :, 0], [[1, 2], [11, 12]])
    np.testing.assert_array_equal(last[:, :, 0], [[1, 4], [11, 14]])
    # A word without pieces (cut off) is NaN.
    assert np.isnan(pool_pieces(hidden, word_ids, 3, "mean")[:, 2]).all()
    with pytest.raises(ValueError, match="pooling"):
        pool_pieces(hidden, word_ids, 2, "max")


def test_bert_embed_pools_a_three_piece_word(tmp_path, monkeypatch):
    m = load(make_bert_dir(tmp_path))
    enc = m.tokenizer.encode(["the", "unbelievable", "bank"])
    assert enc.tokens == ["[CLS]", "the", "un", "##believ", "##able", "bank", "[SEP]"]

    def known_hidden(batch):  # hidden value = 100 * layer + position, whatever the input
        B, T = batch["input_ids"].shape
        pos = torch.arange(T, dtype=torch.float32)[None, :, None].expand(B, T, m.dim)
        return torch.stack([pos + 100.0 * l for l in range(m.n_layers)])

    monkeypatch.setattr(m, "_hidden_states", known_hidden)
    words = ["the", "unbelievable", "bank"]
    expect = {"mean": [1, 3, 5], "first": [1, 2, 5], "last": [1, 4, 5]}
    for pooling, cols in expect.items():
        (v,) = m.embed([words], pooling=pooling)
        for layer in range(3):
            np.testing.assert_array_equal(v[layer, :, 0], np.array(cols) + 100 * layer)


def test_bert_pooling_on_real_hidden_states(tmp_path):
    m = load(make_bert_dir(tmp_path))
    words = ["the", "unbelievable", "bank"]
    batch = m.tokenizer.collate([m.tokenizer.encode(words)])
    with torch.no_grad():
        hs = m.model(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"],
                     output_hidden_states=True).hidden_states
    (v,) = m.embed([words])
    for layer in range(3):
        np.testing.assert_allclose(v[layer, 1], hs[layer][0, 2:5].mean(0).numpy(), atol=1e-6)
        np.testing.assert_allclose(v[layer, 2], hs[layer][0, 5].numpy(), atol=1e-6)


def test_bert_truncates_at_a_word_boundary_with_a_warning(tmp_path):
    m = load(make_bert_dir(tmp_path, max_position_embeddings=12))
    # "the" = 1 piece, "unbelievable" = 3: 1 + 3 + 3 + 3 = 10 pieces fit with [CLS]/[SEP] (12); the 4th
    # "unbelievable" would straddle the limit and is dropped whole.
    words = ["the"] + ["unbelievable"] * 4 + ["bank"] * 30
    with pytest.warns(UserWarning, match="truncated.*NaN"):
        (v,) = m.embed([words])
    assert v.shape == (3, 35, 32)
    assert np.isfinite(v[:, :4]).all() and np.isnan(v[:, 4:]).all()
    # The kept words are exactly what the model gives for those words alone.
    (short,) = m.embed([words[:4]])
    np.testing.assert_allclose(v[:, :4], short, atol=1e-5)


def test_batched_equals_one_by_one(tmp_path):
    sentences = [["the", "bank"], ["river", "money", "the", "unbelievable", "bank", "."], [], ["x"]]
    for model in (load(make_bert_dir(tmp_path)), load(make_elmo_dir(tmp_path))):
        together = model.embed(sentences, batch_size=3)
        for s, v in zip(sentences, together):
            np.testing.assert_allclose(v, model.embed([s], batch_size=1)[0], atol=1e-5)
        assert together[2].shape == (model.n_layers, 0, model.dim)


def test_long_sentences_emoji_and_empty_input(tmp_path):
    bert, elmo, static = load(make_bert_dir(tmp_path)), load(make_elmo_dir(tmp_path)), load(make_static_dir(tmp_path))
    odd = ["🙂", "naïve", "👩‍👩‍👧", "bank", "x" * 100]
    long = ["bank", "river"] * 1000  # 2,000 words
    for m in (bert, elmo, static):
        assert m.embed([]) == []
        (e,) = m.embed([[]])
        assert e.shape == (m.n_layers, 0, m.dim)
        (v,) = m.embed([odd])
        assert v.shape == (m.n_layers, 5, m.dim)
        if m is not static:
            assert np.isfinite(v).all()
    with pytest.warns(UserWarning, match="truncated"):
        (w,) = bert.embed([long])
    assert w.shape == (3, 2000, 32) and np.isfinite(w[:, :100]).all() and np.isnan(w[:, 200:]).all()
    (w,) = static.embed([long])
    assert w.shape == (1, 2000, 3) and np.isfinite(w).all()


@pytest.fixture
def one_thread():
    # The LSTM runs ~10 tiny ops per word; with 2 OpenMP threads on a busy 2-core machine every op waits for
    # a descheduled thread (measured: 0.5 s with 1 thread vs 23 s with 2 for 500 words under load).
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.mark.slow
def test_elmo_embeds_a_2000_word_sentence(tmp_path, one_thread):
    elmo = load(make_elmo_dir(tmp_path))
    long = ["bank", "river"] * 1000
    (w,) = elmo.embed([long, ["bank", "river"]])[:1]
    assert w.shape == (3, 2000, 64) and np.isfinite(w).all()  # ELMo has no length limit
    # Layer 0 is context-free: the same for "bank" everywhere.
    np.testing.assert_allclose(w[0, 0], w[0, 1998], atol=1e-6)


def test_embed_rejects_bad_input(tmp_path):
    m = load(make_static_dir(tmp_path))
    with pytest.raises(ValueError, match="list of sentences"):
        m.embed("the bank")
    with pytest.raises(ValueError, match="sentence 0 must be a list of words"):
        m.embed(["the bank"])
    with pytest.raises(ValueError, match="pooling"):
        m.embed([["bank"]], pooling="max")
    with pytest.raises(ValueError, match="batch_size"):
        m.embed([["bank"]], batch_size=0)


@pytest.mark.parametrize("block", ["model check", "transformers load"])
def test_a_quiet_load_in_one_thread_does_not_silence_another_threads_warnings(tiny_assets, block, monkeypatch):
    """A visitor's model loading keeps its libraries' warnings quiet in its own thread only: a warning another
    visitor's input raises meanwhile still reaches that visitor (warnings.catch_warnings would have set the
    process-wide filters to 'ignore' for every thread while it ran)."""
    import threading
    import warnings

    from ctxmodels.formats.transformers_models import _quiet
    from ctxmodels.thread_warnings import caught_warnings

    inside, done = threading.Event(), threading.Event()

    def hold() -> None:  # the other thread stays inside its quiet block until this one has warned
        warnings.warn("library chatter", UserWarning, stacklevel=1)
        inside.set()
        done.wait(10)

    if block == "model check":
        model = ctxmodels.load(str(tiny_assets / "static-eltec"))
        monkeypatch.setattr(model, "_probe", lambda: hold())
        other = threading.Thread(target=model.check_outputs)
    else:
        def load() -> None:
            with _quiet():
                hold()
        other = threading.Thread(target=load)
    with caught_warnings():  # the router is in place before the other thread starts, as in a running server
        pass
    other.start()
    try:
        assert inside.wait(10)
        with caught_warnings() as caught:
            warnings.warn("your sentence was cut", UserWarning, stacklevel=1)
    finally:
        done.set()
        other.join()
    assert [str(m) for m, _ in caught] == ["your sentence was cut"]
