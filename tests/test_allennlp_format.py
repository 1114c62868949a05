"""ELMo checkpoints: our format, the published AllenNLP/bilm-tf layout, export, and clear errors."""

from __future__ import annotations

import json
import shutil

import h5py
import pytest
import torch

from ctxmodels.char_ids import batch_to_char_ids
from ctxmodels.checkpoint import CheckpointError
from ctxmodels.cli import main
from ctxmodels.elmo import ElmoConfig, ElmoLanguageModel
from ctxmodels.formats.allennlp import export_published, load_elmo, load_published_elmo, save_elmo

SENTENCES = [["the", "bank", "of", "the", "river"], ["café", "😀"], []]


def _layers(model) -> torch.Tensor:
    char_ids, mask = batch_to_char_ids(SENTENCES)
    with torch.no_grad():
        return model.eval()(char_ids, mask).layers()


@pytest.fixture
def trained_like(tmp_path):
    """A tiny ELMo with a head and non-trivial weights (as if trained), saved in our format."""
    torch.manual_seed(1)
    model = ElmoLanguageModel(ElmoConfig.preset("tiny", n_tokens_vocab=6))
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.05 * torch.randn_like(p))
    vocab = ["<S>", "</S>", "<UNK>", "the", "bank", "river"]
    save_elmo(model, tmp_path / "ours", vocab=vocab)
    return model, vocab, tmp_path / "ours"


# ----------------------------------------------------------------------------------------------------------
# our format


def test_save_and_load_ours(trained_like):
    model, vocab, directory = trained_like
    assert {p.name for p in directory.iterdir()} == {"config.json", "model.safetensors", "vocab.txt", "README.md"}
    assert json.loads((directory / "config.json").read_text())["model_type"] == "elmo"
    loaded = load_elmo(directory)
    assert loaded.has_lm_head and loaded.vocab == vocab and loaded.config == model.config
    assert torch.equal(_layers(loaded), _layers(model))
    states = torch.randn(3, model.config.lstm.projection_dim)
    torch.testing.assert_close(loaded.full_softmax_logits(states), model.full_softmax_logits(states))


def test_save_needs_the_vocabulary_of_a_head(tmp_path):
    model = ElmoLanguageModel(ElmoConfig.preset("tiny", n_tokens_vocab=3))
    with pytest.raises(ValueError, match="vocab"):
        save_elmo(model, tmp_path / "a")
    with pytest.raises(ValueError, match="3 rows"):
        save_elmo(model, tmp_path / "b", vocab=["a", "b"])
    with pytest.raises(ValueError, match="single-line"):
        save_elmo(model, tmp_path / "c", vocab=["a", "b\nc", "d"])


def test_model_without_head_saves_no_vocab_and_keeps_other_files(tmp_path):
    (tmp_path / "metrics.jsonl").write_text("{}\n")
    model = ElmoLanguageModel(ElmoConfig.preset("tiny"))
    save_elmo(model.bilm, tmp_path, card="# my card\n")  # a bare ElmoBiLM is accepted too
    assert not (tmp_path / "vocab.txt").exists() and (tmp_path / "metrics.jsonl").exists()
    assert (tmp_path / "README.md").read_text() == "# my card\n"
    loaded = load_elmo(tmp_path)
    assert not loaded.has_lm_head and loaded.vocab is None
    assert torch.equal(_layers(loaded), _layers(model))
    # The biLM of a model with a head saves as a model without one.
    with_head = ElmoLanguageModel(ElmoConfig.preset("tiny", n_tokens_vocab=5))
    save_elmo(with_head.bilm, tmp_path / "bilm_only")
    assert not load_elmo(tmp_path / "bilm_only").has_lm_head


def test_our_checkpoint_errors(trained_like, tmp_path):
    _, _, directory = trained_like
    other = tmp_path / "other"
    shutil.copytree(directory, other)
    config = json.loads((other / "config.json").read_text())
    config["lstm"]["dim"] = 64
    (other / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match="model.safetensors.*shape"):
        load_elmo(other)
    config["model_type"] = "bert"
    (other / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match="not an ELMo"):
        load_elmo(other)
    shutil.copytree(directory, tmp_path / "novocab")
    (tmp_path / "novocab" / "vocab.txt").unlink()
    with pytest.raises(CheckpointError, match="vocab.txt"):
        load_elmo(tmp_path / "novocab")
    with pytest.raises(CheckpointError, match="not found"):
        load_elmo(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(CheckpointError, match="no ELMo found"):
        load_elmo(tmp_path / "empty")


# ----------------------------------------------------------------------------------------------------------
# published layout


def test_published_elmo_has_no_lm_head(elmo_reference):
    model = load_elmo(elmo_reference)
    assert not model.has_lm_head and model.config.lstm.projection_dim == 16
    assert _layers(model).shape == (3, 3, 7, 32)
    with pytest.raises(ValueError, match="no language-model head.*perplexity"):
        model.full_softmax_logits(torch.zeros(2, 16))
    # The options file alone finds its weights beside it.
    assert _layers(load_published_elmo(elmo_reference / "options.json")).shape == (3, 3, 7, 32)


def test_export_round_trip(trained_like, tmp_path):
    model, _, directory = trained_like
    out = export_published(model, tmp_path / "exported")
    assert {p.name for p in out.iterdir()} == {"options.json", "weights.hdf5"}
    with h5py.File(out / "weights.hdf5") as f:
        assert f["char_embed"].shape == (261, model.config.char_cnn.embedding_dim)
        assert f["RNN_1/RNN/MultiRNNCell/Cell1/LSTMCell/W_0"].shape == (2 * 32, 4 * 128)
        assert f["CNN/W_cnn_3"].shape == (1, 4, 8, 64)
    again = load_published_elmo(out)
    assert not again.has_lm_head
    torch.testing.assert_close(_layers(again), _layers(model), rtol=0, atol=1e-6)
    # ... and once more through the exporter: a fixed point.
    export_published(again, tmp_path / "twice")
    torch.testing.assert_close(_layers(load_elmo(tmp_path / "twice")), _layers(model), rtol=0, atol=1e-6)


def test_export_cli(trained_like, tmp_path, capsys):
    _, _, directory = trained_like
    assert main(["export-elmo", "--model", str(directory), "--out", str(tmp_path / "cli")]) == 0
    assert "LM head" in capsys.readouterr().out
    assert (tmp_path / "cli" / "weights.hdf5").is_file() and (tmp_path / "cli" / "options.json").is_file()
    assert main(["export-elmo", "--model", str(tmp_path / "missing"), "--out", str(tmp_path / "x")]) == 2
    assert "cannot find a model" in capsys.readouterr().err


def _published_copy(elmo_reference, tmp_path):
    d = tmp_path / "published"
    d.mkdir()
    shutil.copy(elmo_reference / "options.json", d / "options.json")
    shutil.copy(elmo_reference / "lm_weights.hdf5", d / "lm_weights.hdf5")
    return d


def test_broken_options_files(elmo_reference, tmp_path):
    d = _published_copy(elmo_reference, tmp_path)
    (d / "options.json").write_text("{not json")
    with pytest.raises(CheckpointError, match="options.json.*not valid JSON"):
        load_elmo(d)
    options = json.loads((elmo_reference / "options.json").read_text())
    del options["lstm"]["projection_dim"]
    (d / "options.json").write_text(json.dumps(options))
    with pytest.raises(CheckpointError, match="options.json.*projection_dim"):
        load_elmo(d)
    (d / "options.json").unlink()
    with pytest.raises(CheckpointError, match="options"):
        load_published_elmo(d)


def test_options_inconsistent_with_weights(elmo_reference, tmp_path):
    d = _published_copy(elmo_reference, tmp_path)
    options = json.loads((elmo_reference / "options.json").read_text())
    options["lstm"]["projection_dim"] = 32
    (d / "options.json").write_text(json.dumps(options))
    with pytest.raises(CheckpointError, match="lm_weights.hdf5.*shape.*do not belong together"):
        load_elmo(d)
    options["lstm"]["projection_dim"] = 16
    options["char_cnn"]["filters"] = options["char_cnn"]["filters"][:-1]
    (d / "options.json").write_text(json.dumps(options))
    with pytest.raises(CheckpointError, match="shape"):
        load_elmo(d)


def test_weights_that_are_not_an_elmo(elmo_reference, tmp_path):
    d = _published_copy(elmo_reference, tmp_path)
    (d / "lm_weights.hdf5").write_bytes(b"this is not hdf5")
    with pytest.raises(CheckpointError, match="lm_weights.hdf5.*not an HDF5"):
        load_elmo(d)
    shutil.copy(elmo_reference / "elmo_token_embeddings.hdf5", d / "lm_weights.hdf5")
    with pytest.raises(CheckpointError, match="not an ELMo weights file"):
        load_elmo(d)
    shutil.copy(elmo_reference / "lm_weights.hdf5", d / "lm_weights.hdf5")
    with h5py.File(d / "lm_weights.hdf5", "a") as f:
        del f["RNN_1/RNN/MultiRNNCell/Cell1/LSTMCell/W_P_0"]
    with pytest.raises(CheckpointError, match="W_P_0.*missing"):
        load_elmo(d)
    shutil.copy(elmo_reference / "lm_weights.hdf5", d / "other_weights.hdf5")
    with pytest.raises(CheckpointError, match="one ELMo weights file"):
        load_elmo(d)
