"""Fine-tuning a GPT (a left-to-right GPT-2, as ``ctxmodels train gpt`` writes it): tagging, sentence, sentence-pair
and question-answering tasks through transformers' GPT-2 heads; each saved folder loads in transformers' Auto class
with nothing missing or unexpected and our logits, and in ctxmodels as the GPT with ``finetune_info`` (no next-word
guesses from a classifier); resume continues the curve; the command line takes it."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
import torch
import transformers

import ctxmodels
from ctxmodels import cli, kinds
from ctxmodels.training.finetune_qa import QaTask
from tests import test_finetune_pairs as pairs
from tests import test_finetune_qa as qa
from tests.lm_fixtures import _restore_torch_threads  # noqa: F401 - autouse: torch's threads put back
from tests.test_finetune import (
    ANIMALS,
    OTHER,
    THINGS,
    _finetune,
    assert_resume_continues_the_curve,
    sentence_task,
    token_task,
    word_task,
)

WORDS = ["the", "old", "dog", "saw", "a", "stone", "near", "the", "cow"]


@pytest.fixture(scope="module")
def tiny_gpt(tmp_path_factory) -> Path:
    """A GPT trained for two steps by ``ctxmodels train gpt`` on text holding every word of the tasks here."""
    root = tmp_path_factory.mktemp("gpt")
    rng = random.Random(0)
    texts = [" ".join(rng.choice(ANIMALS + THINGS + OTHER) for _ in range(8)) + "." for _ in range(60)]
    texts += [line.replace("\t", " ") + "." for line in pairs.pair_lines(40, seed=3)]
    texts += [p["context"] + " " + qa.QUESTION for a in qa.squad(seed=9)["data"] for p in a["paragraphs"]]
    docs = ["\n".join(texts[i : i + 10]) for i in range(0, len(texts), 10)]
    corpus = root / "corpus.txt"
    corpus.write_text("\n\n".join(docs) + "\n", encoding="utf-8")
    threads = torch.get_num_threads()
    try:
        rc = cli.main(["train", "gpt", "--corpus", str(corpus), "--vocab-size", "200", "--out", str(root / "gpt"),
                       "--steps", "2", "--preset", "tiny", "--max-seq-len", "64", "--batch-size", "4",
                       "--eval-sequences", "4", "--no-progress", "--threads", "1", "--eval-every", "0"])
    finally:
        torch.set_num_threads(threads)
    assert rc == 0
    return root / "gpt"


def _check_saved(out: Path, auto, arch: str) -> torch.nn.Module:
    """The folder read by transformers' ``auto`` class: ``arch``, nothing missing, unexpected or misshapen."""
    assert json.loads((out / "config.json").read_text())["architectures"] == [arch]
    hf, loading = auto.from_pretrained(out, local_files_only=True, attn_implementation="eager",
                                       output_loading_info=True)
    assert type(hf).__name__ == arch
    assert not loading["missing_keys"] and not loading["unexpected_keys"] and not loading["mismatched_keys"]
    return hf.eval()


@pytest.mark.parametrize("make", [token_task, sentence_task, word_task])
def test_a_gpt_learns_a_small_task(make, tiny_gpt, tmp_path):
    data = make()
    task, trainer = _finetune(tiny_gpt, data, tmp_path, steps=120, lr=2e-3, batch_size=16)
    assert ctxmodels.load(tiny_gpt).kind == "gpt"
    expected = "GPT2ForSequenceClassification" if data.kind == "sentence" else "GPT2ForTokenClassification"
    assert type(task.model).__name__ == expected
    trainer.train()
    from ctxmodels.training.finetune_task import final_metrics

    info = final_metrics(task, trainer)
    assert info["metrics"]["test"]["accuracy"] > 1 / len(data.labels) + 0.3, info["metrics"]
    assert info["base_kind"] == "gpt" and info["base_type"] == "gpt2"
    card = (tmp_path / "README.md").read_text()
    assert card.startswith("# GPT fine-tuned on toy") and f"transformers' {expected}" in card


def test_the_saved_tagger_is_transformers_class_with_our_logits(tiny_gpt, tmp_path):
    from ctxmodels.formats.finetuned import load_task_model
    from ctxmodels.training.finetune_task import final_metrics

    task, trainer = _finetune(tiny_gpt, token_task(), tmp_path, steps=20, lr=2e-3, batch_size=16)
    trainer.train()
    final_metrics(task, trainer)
    hf = _check_saved(tmp_path, transformers.AutoModelForTokenClassification, "GPT2ForTokenClassification")
    assert hf.config.id2label == {0: "A", 1: "T", 2: "O"}
    # transformers' own tokenizer gives the ids we trained on, and no token types (GPT-2 would add them to the words)
    hf_tok = transformers.AutoTokenizer.from_pretrained(tmp_path, local_files_only=True)
    loaded = ctxmodels.load(tmp_path)
    enc = loaded.tokenizer.encode_words(WORDS, 64)[0]
    given = hf_tok(" ".join(WORDS), return_tensors="pt")
    assert given["input_ids"][0].tolist() == enc.ids and set(given) == {"input_ids", "attention_mask"}
    with torch.no_grad():
        ref = hf(**given).logits[0]
        ours = task.model.eval()(**loaded.tokenizer.collate([enc])).logits[0]
    torch.testing.assert_close(ours, ref, atol=1e-5, rtol=0)
    first = [enc.word_ids.index(w) for w in range(len(WORDS))]
    np.testing.assert_allclose(load_task_model(tmp_path).probabilities(WORDS), ref[first].softmax(-1).numpy(),
                               atol=1e-5, rtol=0)
    # ctxmodels reads the folder as the GPT with finetune_info; a classifier's word embeddings guess no next word
    info = loaded.finetune_info
    assert loaded.kind == "gpt" and info["task_kind"] == "token" and info["base_path"] == str(tiny_gpt)
    assert not loaded.has_lm and ctxmodels.load(tiny_gpt).has_lm
    assert not kinds.supports(loaded, kinds.LANGUAGE_MODEL) and kinds.supports(loaded, kinds.FINETUNE)
    (vectors,) = loaded.embed([WORDS])
    assert vectors.shape == (loaded.n_layers, len(WORDS), loaded.dim) and np.isfinite(vectors).all()


def test_a_sentence_is_read_at_its_last_piece_whatever_the_padding(tiny_gpt, tmp_path):
    task, trainer = _finetune(tiny_gpt, sentence_task(), tmp_path, steps=4, lr=1e-3, batch_size=8)
    trainer.train()
    hf = _check_saved(tmp_path, transformers.AutoModelForSequenceClassification, "GPT2ForSequenceClassification")
    assert hf.config.pad_token_id == task.tokenizer.pad_id
    items = sorted(task.test[:6], key=lambda e: len(e.ids))  # of different lengths: the short ones padded
    assert len(items[0].ids) < len(items[-1].ids)
    batch = {k: v for k, v in task.collate(items).items() if k != "labels"}
    assert "token_type_ids" not in batch
    task.model.eval()
    with torch.no_grad():
        together = task.model(**batch).logits
        alone = torch.cat([task.model(**{k: v[i : i + 1, : len(e.ids)] for k, v in batch.items()}).logits
                           for i, e in enumerate(items)])
        torch.testing.assert_close(together, hf(**batch).logits, atol=1e-5, rtol=0)
    torch.testing.assert_close(together, alone, atol=1e-5, rtol=0)


def test_the_saved_pair_model_is_transformers_class_with_our_logits(tiny_gpt, tmp_path):
    from ctxmodels.training.finetune_task import final_metrics

    task_file = pairs.write_pairs(tmp_path / "pairs.tsv", pairs.pair_lines())
    task, trainer = pairs._finetune(tiny_gpt, task_file, tmp_path / "out", steps=4, lr=1e-3, batch_size=8)
    trainer.train()
    final_metrics(task, trainer)
    hf = _check_saved(tmp_path / "out", transformers.AutoModelForSequenceClassification,
                      "GPT2ForSequenceClassification")
    pairs.assert_pair_model_matches(task, hf, tmp_path / "out")


def test_the_saved_qa_model_is_transformers_class_with_our_logits(tiny_gpt, tmp_path):
    from ctxmodels.training.finetune_task import final_metrics

    qa_file = tmp_path / "owners.json"
    qa_file.write_text(json.dumps(qa.squad()))
    task, trainer = qa._finetune(tiny_gpt, qa_file, tmp_path / "out", steps=3, lr=1e-3, batch_size=8,
                                 max_length=32)
    assert isinstance(task, QaTask)
    trainer.train()
    final_metrics(task, trainer)
    hf = _check_saved(tmp_path / "out", transformers.AutoModelForQuestionAnswering, "GPT2ForQuestionAnswering")
    batch = {k: v for k, v in task.collate(task.test[:5]).items() if not k.endswith("_positions")}
    task.model.eval()
    with torch.no_grad():
        ours, ref = task.model(**batch), hf(**batch)
    for name in ("start_logits", "end_logits"):
        torch.testing.assert_close(getattr(ours, name), getattr(ref, name), atol=1e-5, rtol=0)
    context = "the old house was quiet and the owner is anna."
    answer, score = ctxmodels.load(tmp_path / "out").task_model().answer(qa.QUESTION, context)
    assert answer and answer in context and np.isfinite(score)


def test_resume_after_an_interrupt_continues_the_curve(tiny_gpt, tmp_path):
    assert_resume_continues_the_curve(tiny_gpt, tmp_path, steps=10)


def test_cli_fine_tunes_a_gpt_and_resumes(tiny_gpt, tmp_path, capsys):
    task_file = pairs.write_pairs(tmp_path / "pairs.tsv", pairs.pair_lines())
    out = tmp_path / "out"
    common = ["finetune", "--out", str(out), "--no-progress", "--threads", "1"]
    assert cli.main([*common, "--model", str(tiny_gpt), "--task", str(task_file), "--steps", "2",
                     "--batch-size", "8"]) == 0
    said = capsys.readouterr()
    assert "(gpt, finetune)" in said.err and "done: 2 steps" in said.out
    assert cli.main([*common, "--resume", "--steps", "4"]) == 0
    info = json.loads((out / "finetune.json").read_text())
    assert info["steps"] == 4 and info["base_kind"] == "gpt" and info["task_kind"] == "pair"
