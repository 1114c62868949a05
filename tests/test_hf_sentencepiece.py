"""Encoders published with a SentencePiece model and no tokenizer.json, as microsoft/deberta-v3-* (spm.model) and
ALBERT (spiece.model) are: transformers converts the model into a fast tokenizer, which needs the sentencepiece and
protobuf packages. A SentencePiece Unigram model is trained here on a few sentences, a tiny random DeBERTa-v2 and
ALBERT are saved beside it, and ``ctxmodels.load`` is compared with direct transformers calls. No network."""

from __future__ import annotations

import json
import os
import shutil
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import sentencepiece
import torch
import transformers

import ctxmodels
from ctxmodels.analysis import attention as att
from ctxmodels.analysis.fill_in import fill_mask
from ctxmodels.checkpoint import CheckpointError
from ctxmodels.loading import TransformersLoaded, clear_cache
from tests.hf_tiny import SIZE, as_hub_cache

# varied enough for a 120-piece Unigram vocabulary, and "bankers" / "banking" end up in several pieces
CORPUS = """The old bank by the river was steep and muddy after the long winter rains.
She deposited the cheque at the bank yesterday morning before walking to work.
The bankers were banking on the riverside cafe to bring customers into town.
A river runs past the town, and the bank holds money for farmers and fishermen.
Interest rates rose quickly, so the bank raised its lending rates once again.
Children played football in the park while their parents watched from benches.
Quiet evenings by the fireplace were my grandmother's favourite hours of the day.
Jumping over puddles, the excited puppy splashed everyone standing nearby.
Seven brave explorers crossed frozen mountains looking for a hidden valley.
Vivid yellow flowers grew along the edge of the zigzagging country road.
"""
PIECES = 120
SENTENCES = [["The", "bankers", "were", "banking", "on", "the", "riverside", "cafe", "."],
             ["A", "river", "runs", "past", "the", "town"]]
TEXT = "The bankers deposited money at the riverside bank."
MASKED = "The bankers deposited [MASK] at the riverside bank."
ATOL = 1e-5

# what each published family's folder holds besides config.json and the weights
KINDS = {
    # microsoft/deberta-v3-base: spm.model and this tokenizer_config.json; [CLS]/[SEP]/[PAD]/[UNK] are pieces of
    # the SentencePiece model, [MASK] is added by the tokenizer after the last piece (config.json's vocab is larger)
    "deberta-v3": dict(file="spm", tokenizer_config={"do_lower_case": False, "vocab_type": "spm"},
                       spm=dict(pad_id=0, bos_id=1, eos_id=2, unk_id=3, pad_piece="[PAD]", bos_piece="[CLS]",
                                eos_piece="[SEP]", unk_piece="[UNK]")),
    # ALBERT: spiece.model whose first pieces are <pad> <unk> [CLS] [SEP] [MASK]; the tokenizer lowercases
    "albert": dict(file="spiece", tokenizer_config={"do_lower_case": True, "remove_space": True,
                                                    "keep_accents": False},
                   spm=dict(pad_id=0, unk_id=1, bos_id=-1, eos_id=-1, pad_piece="<pad>", unk_piece="<unk>",
                            control_symbols=["[CLS]", "[SEP]", "[MASK]"])),
    # the same ALBERT with no tokenizer_config.json at all: config.json's model_type picks the tokenizer class
    "albert-bare": dict(file="spiece", tokenizer_config=None, spm=None),
}


def _train_spm(root: Path, prefix: str, specials: dict) -> Path:
    text = root / "corpus.txt"
    text.write_text(CORPUS)
    sentencepiece.SentencePieceTrainer.train(
        input=str(text), model_prefix=str(root / prefix), vocab_size=PIECES, model_type="unigram",
        minloglevel=2, num_threads=1, **specials)
    return root / f"{prefix}.model"


def _build(kind: str, root: Path) -> Path:
    spec = KINDS[kind]
    spm_spec = spec["spm"] or KINDS["albert"]["spm"]
    work = root / f"{kind}-spm"
    work.mkdir()
    spm_file = _train_spm(work, spec["file"], spm_spec)
    folder = root / kind
    folder.mkdir()
    shutil.copy(spm_file, folder / spm_file.name)
    if spec["tokenizer_config"] is not None:
        (folder / "tokenizer_config.json").write_text(json.dumps(spec["tokenizer_config"]))
    torch.manual_seed(0)
    if kind == "deberta-v3":
        model = transformers.DebertaV2ForMaskedLM(transformers.DebertaV2Config(
            vocab_size=PIECES + 8, max_position_embeddings=64, pad_token_id=0, relative_attention=True,
            pos_att_type=["p2c", "c2p"], position_buckets=16, type_vocab_size=0, **SIZE))
    else:
        model = transformers.AlbertForMaskedLM(transformers.AlbertConfig(
            vocab_size=PIECES, embedding_size=16, max_position_embeddings=64, pad_token_id=0, **SIZE))
    model.eval().save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("hf-sentencepiece")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {kind: _build(kind, root) for kind in KINDS}


def test_the_folders_hold_only_a_sentencepiece_model_as_tokenizer(folders):
    for kind, folder in folders.items():
        names = {p.name for p in folder.iterdir()}
        assert names == {"config.json", "model.safetensors", KINDS[kind]["file"] + ".model"} | (
            {"tokenizer_config.json"} if KINDS[kind]["tokenizer_config"] is not None else set())


def _direct(folder: Path):
    """An independent transformers model (eager attention, with its MLM head) and tokenizer from the same files."""
    model = transformers.AutoModelForMaskedLM.from_pretrained(folder, attn_implementation="eager",
                                                              local_files_only=True).eval()
    return model, transformers.AutoTokenizer.from_pretrained(folder, local_files_only=True)


def _pool(hidden: np.ndarray, word_ids: list, n_words: int) -> np.ndarray:
    out = np.zeros((hidden.shape[0], n_words, hidden.shape[2]), np.float32)
    for w in range(n_words):
        out[:, w] = hidden[:, [t for t, x in enumerate(word_ids) if x == w]].mean(axis=1)
    return out


@pytest.mark.parametrize("kind", KINDS)
def test_vectors_attention_and_fill_in_equal_direct_transformers_calls(folders, kind):
    folder = folders[kind]
    m = ctxmodels.load(folder)
    assert isinstance(m, TransformersLoaded) and m.tokenizer.style == "sentencepiece"
    assert m.layer_names == ["embeddings", "layer 1", "layer 2"] and m.can_fill_mask
    mlm, hf_tok = _direct(folder)
    assert hf_tok.is_fast
    base = mlm.base_model

    # the converted tokenizer splits text exactly as the SentencePiece model itself does
    sp = sentencepiece.SentencePieceProcessor(model_file=str(folder / (KINDS[kind]["file"] + ".model")))
    enc = m.tokenizer.encode(TEXT)
    assert enc.ids == hf_tok(TEXT)["input_ids"]
    expected = sp.encode(TEXT.lower() if kind.startswith("albert") else TEXT)
    assert enc.ids[1:-1] == expected and enc.tokens[0] == "[CLS]" and enc.tokens[-1] == "[SEP]"

    for words, got in zip(SENTENCES, m.embed(SENTENCES)):
        enc = m.tokenizer.encode(words)
        batch = {"input_ids": torch.tensor([enc.ids]), "attention_mask": torch.ones(1, len(enc), dtype=torch.long)}
        if "token_type_ids" in hf_tok.model_input_names:
            batch["token_type_ids"] = torch.tensor([enc.type_ids])
        with torch.no_grad():
            hidden = torch.stack(base(**batch, output_hidden_states=True).hidden_states)[:, 0].numpy()
        assert got.shape == (3, len(words), 32)
        np.testing.assert_allclose(got, _pool(hidden, enc.word_ids, len(words)), atol=ATOL)

    maps = att.compute_attention(m, None, TEXT)
    with torch.no_grad():
        direct = base(**hf_tok(TEXT, return_tensors="pt"), output_attentions=True).attentions
    np.testing.assert_allclose(maps.attentions, torch.stack(direct)[:, 0].numpy(), atol=ATOL)

    got = fill_mask(m, None, MASKED, top_k=5)
    inputs = hf_tok(MASKED.replace("[MASK]", hf_tok.mask_token), return_tensors="pt")
    position = inputs["input_ids"][0].tolist().index(hf_tok.mask_token_id)
    with torch.no_grad():
        top = mlm(**inputs).logits[0, position].softmax(-1).topk(5)
    np.testing.assert_allclose([g["prob"] for g in got[0]], top.values.numpy(), atol=ATOL)
    assert [g["token"] for g in got[0]] == [m.tokenizer.id_to_token(i) for i in top.indices.tolist()]


@pytest.mark.parametrize("kind", KINDS)
def test_words_split_into_pieces_and_the_mask_token(folders, kind):
    tok = ctxmodels.load(folders[kind]).tokenizer
    for given in (["The", "bankers", "were", "banking"], "The bankers were banking"):
        enc = tok.encode(given)
        assert enc.words == ["The", "bankers", "were", "banking"]
        for w, word in ((1, "bankers"), (3, "banking")):
            pieces = enc.word_pieces(w)
            assert len(pieces) >= 2, (kind, enc.tokens)  # the 120-piece vocabulary splits them
            raw = [tok.raw_token(enc.ids[p]) for p in pieces]
            assert raw[0].startswith("▁") and not any("▁" in r for r in raw[1:])
            assert "".join(raw).replace("▁", "") == word
            assert not enc.tokens[pieces[0]].startswith("##")
            assert all(enc.tokens[p].startswith("##") for p in pieces[1:])
            assert all(enc.word_ids[p] == w for p in pieces)

    # the user's [MASK] is the model's own mask token: one word, one piece, the tokenizer's mask id
    hf_tok = transformers.AutoTokenizer.from_pretrained(folders[kind], local_files_only=True)
    assert tok.mask_id == hf_tok.mask_token_id == hf_tok.convert_tokens_to_ids("[MASK]")
    if kind == "deberta-v3":  # not a piece of spm.model: added right after its last piece, as in deberta-v3-base
        assert tok.mask_id == PIECES
    for given in ("the [MASK] of the river", ["the", "[MASK]", "of", "the", "river"]):
        enc = tok.encode(given)
        assert enc.words[1] == "[MASK]" and [enc.ids[p] for p in enc.word_pieces(1)] == [tok.mask_id]


@pytest.mark.parametrize("kind", ["deberta-v3", "albert"])
def test_loads_from_a_hugging_face_cache_layout(folders, kind, tmp_path, monkeypatch):
    as_hub_cache(folders[kind], tmp_path / "hub", f"someone/tiny-{kind}")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    by_name = ctxmodels.load(f"someone/tiny-{kind}")
    by_folder = ctxmodels.load(tmp_path / "hub" / f"models--someone--tiny-{kind}")
    direct = ctxmodels.load(folders[kind])
    assert isinstance(by_name, TransformersLoaded) and by_name.name == f"someone/tiny-{kind}"
    reference = fill_mask(direct, None, MASKED, top_k=3)
    for m in (by_name, by_folder):
        for a, b in zip(m.embed(SENTENCES), direct.embed(SENTENCES)):
            np.testing.assert_allclose(a, b, atol=ATOL)
        np.testing.assert_allclose(att.compute_attention(m, None, TEXT).attentions,
                                   att.compute_attention(direct, None, TEXT).attentions, atol=ATOL)
        got = fill_mask(m, None, MASKED, top_k=3)
        assert [g["token"] for g in got[0]] == [g["token"] for g in reference[0]]


# A fresh interpreter in which `import X` raises ImportError (sys.modules holds None for X), as when the package is
# not installed: in this process transformers has already found both packages and remembers it (lru_cache).
_WITHOUT = """
import sys
for module in sys.argv[2:]:
    sys.modules[module] = None
import ctxmodels
from ctxmodels.checkpoint import CheckpointError
try:
    ctxmodels.load(sys.argv[1])
except CheckpointError as e:
    print(e)
else:
    print("LOADED")
"""


@pytest.mark.slow
@pytest.mark.parametrize("blocked, install", [
    (["sentencepiece"], "sentencepiece"),
    (["google.protobuf"], "protobuf"),
    (["sentencepiece", "google.protobuf"], "sentencepiece protobuf"),
])
def test_without_the_packages_the_message_says_what_to_install(folders, blocked, install):
    import subprocess

    folder = folders["deberta-v3"]
    run = subprocess.run([sys.executable, "-c", _WITHOUT, str(folder), *blocked], capture_output=True, text=True,
                         timeout=120, env={**os.environ, "OMP_NUM_THREADS": "1"}, cwd=Path(__file__).parents[1])
    assert run.returncode == 0, run.stderr[-2000:]
    message = run.stdout.strip().splitlines()[-1]
    assert message.startswith(f"{folder}: cannot read the tokenizer") and "spm.model" in message
    assert "tiktoken" not in message  # what transformers' own error names when the packages are missing
    assert message.endswith(f"run `pip install {install}`")
    # the same folder in this process, with both packages: it loads
    clear_cache()
    assert ctxmodels.load(folder).can_fill_mask


def test_a_damaged_sentencepiece_model_is_named(folders, tmp_path):
    folder = shutil.copytree(folders["albert"], tmp_path / "cut")
    spm_file = folder / "spiece.model"
    spm_file.write_bytes(spm_file.read_bytes()[:100])
    with pytest.raises(CheckpointError, match=r"spiece\.model is not a SentencePiece model"):
        ctxmodels.load(folder)


def test_a_folder_without_its_sentencepiece_model_is_refused(folders, tmp_path):
    # transformers then builds a tokenizer of special tokens only, which would read every word as [UNK]
    folder = shutil.copytree(folders["deberta-v3"], tmp_path / "no-spm")
    (folder / "spm.model").unlink()
    with pytest.raises(CheckpointError, match="no tokenizer vocabulary: the tokenizer built knows only its special"):
        ctxmodels.load(folder)
    (folder / "spm.model").mkdir()  # not a file either
    with pytest.raises(CheckpointError, match="no tokenizer vocabulary"):
        ctxmodels.load(folder)
