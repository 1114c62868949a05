"""Fine-tuning the encoders transformers reads (issue 17): tiny random RoBERTa and DistilBERT (tests/hf_tiny.py)
learn a made-up task through transformers' own heads; the saved folder loads in transformers as that head class
with our logits, and in ctxmodels as the backbone with ``finetune_info``; resume continues the curve; the
analysis of what fine-tuning changed compares it with its base."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
import transformers

import ctxmodels
from ctxmodels.analysis import finetuning as ft
from ctxmodels.formats.finetuned import load_task_model
from ctxmodels.training.finetune_task import final_metrics
from tests import hf_tiny
from tests.test_finetune import _finetune, _losses, sentence_task, token_task, word_task

FAMILIES = ("roberta", "distilbert")
WORDS = ["the", "old", "dog", "saw", "a", "stone", "near", "the", "cow"]


@pytest.fixture(scope="module")
def bases(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("hf-bases")
    return {f: hf_tiny.build(f, root / f) for f in FAMILIES}


@pytest.fixture(scope="module")
def tuned(bases, tmp_path_factory) -> dict[str, Path]:
    """Each base fine-tuned for 40 steps on the token task."""
    root = tmp_path_factory.mktemp("hf-tuned")
    out = {}
    for family, base in bases.items():
        task, trainer = _finetune(base, token_task(), root / family, steps=40, lr=2e-3, batch_size=16)
        trainer.train()
        final_metrics(task, trainer)
        out[family] = root / family
    return out


@pytest.mark.parametrize("family,make", [("roberta", token_task), ("roberta", sentence_task),
                                         ("distilbert", token_task), ("distilbert", word_task)])
def test_a_transformers_encoder_learns_a_small_task(family, make, bases, tmp_path):
    data = make()
    task, trainer = _finetune(bases[family], data, tmp_path, steps=150, lr=2e-3, batch_size=16)
    assert ctxmodels.load(bases[family]).kind == "transformers"
    expected = {"sentence": "ForSequenceClassification"}.get(data.kind, "ForTokenClassification")
    assert type(task.model).__name__.endswith(expected) and task.model.config.model_type == family
    trainer.train()
    info = final_metrics(task, trainer)
    chance = 1 / len(data.labels)
    assert info["metrics"]["test"]["accuracy"] > chance + 0.3, info["metrics"]
    assert info["base_kind"] == "transformers" and info["base_type"] == family
    card = (tmp_path / "README.md").read_text()
    title = {"roberta": "RoBERTa", "distilbert": "DistilBERT"}[family]
    assert card.startswith(f"# {title} fine-tuned on toy") and f"transformers' {type(task.model).__name__}" in card


@pytest.mark.parametrize("family", FAMILIES)
def test_the_saved_folder_is_transformers_head_class_with_our_logits(family, tuned):
    out = tuned[family]
    config = json.loads((out / "config.json").read_text())
    arch = config["architectures"][0]
    assert arch.endswith("ForTokenClassification") and config["id2label"] == {"0": "A", "1": "T", "2": "O"}
    hf = transformers.AutoModelForTokenClassification.from_pretrained(out, local_files_only=True,
                                                                      attn_implementation="eager").eval()
    assert type(hf).__name__ == arch
    loaded = ctxmodels.load(out)
    assert loaded.kind == "transformers" and loaded.model_type == family
    # the tokenizer files: transformers' own tokenizer splits a text as our adapter does
    hf_tok = transformers.AutoTokenizer.from_pretrained(out, local_files_only=True)
    assert hf_tok(" ".join(WORDS))["input_ids"] == loaded.tokenizer.encode(" ".join(WORDS)).ids
    # what predict computes, against transformers' logits at each word's first piece
    model = load_task_model(out)
    enc = loaded.tokenizer.encode_words(WORDS, 64)[0]
    with torch.no_grad():
        ref = hf(**loaded.tokenizer.collate([enc])).logits[0]
    first = [enc.word_ids.index(w) for w in range(len(WORDS))]
    with torch.no_grad():
        ours = model.model(**loaded.tokenizer.collate([enc])).logits[0]
    torch.testing.assert_close(ours, ref, atol=1e-5, rtol=0)
    np.testing.assert_allclose(model.probabilities(WORDS), ref[first].softmax(-1).numpy(), atol=1e-5, rtol=0)
    predicted = loaded.task_model().predict(WORDS)
    assert [p[0] for p in predicted] == [model.labels[i] for i in ref[first].argmax(-1).tolist()]


@pytest.mark.parametrize("family", FAMILIES)
def test_load_gives_the_backbone_with_finetune_info(family, bases, tuned):
    loaded = ctxmodels.load(tuned[family])
    info = loaded.finetune_info
    assert info["base_path"] == str(bases[family]) and info["base_kind"] == "transformers"
    assert info["task_kind"] == "token" and info["labels"] == ["A", "T", "O"] and info["steps"] == 40
    assert set(info["metrics"]) == {"dev", "test"}
    assert ctxmodels.load(bases[family]).finetune_info is None
    (vectors,) = loaded.embed([WORDS])
    assert vectors.shape == (loaded.n_layers, len(WORDS), loaded.dim) and np.isfinite(vectors).all()
    assert not loaded.can_fill_mask and "fine-tuned classifier" in loaded.no_fill_reason
    assert ft.base_model(loaded) is ctxmodels.load(bases[family])


def test_resume_after_an_interrupt_continues_the_curve(bases, tmp_path):
    data = token_task()
    kw = dict(steps=10, lr=1e-3, batch_size=16, save_every=0, log_every=1)
    task, trainer = _finetune(bases["roberta"], data, tmp_path / "full", **kw)
    trainer.train()
    full = _losses(tmp_path / "full")

    task, trainer = _finetune(bases["roberta"], data, tmp_path / "part", **kw)
    trainer.cfg.time_limit_s = 0.0  # stops after the first step with a checkpoint, as Ctrl-C does
    trainer.train()
    assert max(_losses(tmp_path / "part")) == 1
    task, trainer = _finetune(bases["roberta"], data, tmp_path / "part", **kw)
    trainer.train(resume=True)
    resumed = _losses(tmp_path / "part")
    assert sorted(resumed) == sorted(full)
    for step in full:
        assert resumed[step] == pytest.approx(full[step], abs=1e-6), step


def test_feature_mode_trains_only_the_head(bases, tmp_path):
    base = {k: v.clone() for k, v in ctxmodels.load(bases["distilbert"]).model.base_model.state_dict().items()}
    task, trainer = _finetune(bases["distilbert"], token_task(), tmp_path, steps=10, mode="feature", lr=1e-2,
                              batch_size=16)
    head = task.model.classifier.weight.detach().clone()
    trainer.train()
    after = task.model.base_model.state_dict()
    assert all(torch.equal(after[k], base[k]) for k in after)
    assert not torch.equal(head, task.model.classifier.weight.detach())


def test_compare_a_finetuned_encoder_with_its_base(bases, tuned):
    before, after = ctxmodels.load(bases["roberta"]), ctxmodels.load(tuned["roberta"])
    data = token_task()
    sentences = [list(e.words) for e in data.dev]
    result = ft.compare(before, after, sentences, [e.label for e in data.dev], "token")
    assert list(result.layers["layer_name"]) == ["embeddings", "layer 1", "layer 2"]
    assert result.heads is not None and result.heads.shape == (2, 2) and (result.heads > 0).any()
    cka = result.layers["cka"].to_numpy()
    assert np.isfinite(cka).all() and (cka < 1 - 1e-4).any() and (cka <= 1 + 1e-9).all()
    assert result.layers["knn_after"].notna().all()
    # another architecture of the same size is refused, by its model type
    with pytest.raises(ValueError, match="same architecture"):
        ft.check_comparable(ctxmodels.load(bases["distilbert"]), after)
