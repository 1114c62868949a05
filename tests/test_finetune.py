"""Fine-tuning (issue 17): heads that load in transformers, learning a small task, ELMo's two modes, exact resume,
the command's errors, and the saved folder loading as its backbone with ``finetune_info``."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import torch
import transformers

import ctxmodels
from ctxmodels.bert import BertConfig, BertForPreTraining
from ctxmodels.cli import main
from ctxmodels.elmo import ElmoConfig, ElmoLanguageModel
from ctxmodels.formats.allennlp import save_elmo
from ctxmodels.formats.finetuned import load_task_model, save_bert_task_model
from ctxmodels.formats.huggingface import save_pretrained
from ctxmodels.heads import HEAD_CLASSES
from ctxmodels.paths import assets_dir
from ctxmodels.tokenization import WordPieceTokenizer
from ctxmodels.training.finetune_task import FinetuneSettings, build_task, final_metrics, portable_base_path
from ctxmodels.training.trainer import Trainer

ANIMALS = ["dog", "cat", "horse", "cow", "sheep"]
THINGS = ["table", "chair", "stone", "book", "door"]
OTHER = ["the", "a", "saw", "near", "and", "old"]


@dataclass(frozen=True)
class Example:  # the fields of ctxmodels.tasks.Example
    words: tuple[str, ...]
    label: str | tuple[str, ...]
    doc: str
    target: int | None = None


@dataclass
class TaskData:  # the fields of ctxmodels.tasks.TaskData that fine-tuning reads
    name: str
    kind: str
    labels: tuple[str, ...]
    train: list = field(default_factory=list)
    dev: list = field(default_factory=list)
    test: list = field(default_factory=list)
    description: str = "a made-up task"
    source: str = "generated in the test"


def _sentences(n: int, seed: int) -> list[tuple[str, ...]]:
    rng = random.Random(seed)
    return [tuple(rng.choice(ANIMALS + THINGS + OTHER) for _ in range(rng.randint(3, 8))) for _ in range(n)]


def token_task(n: int = 240) -> TaskData:
    """Tag each word animal / thing / other: learnable from the word alone."""
    ex = [Example(s, tuple("A" if w in ANIMALS else "T" if w in THINGS else "O" for w in s), str(i))
          for i, s in enumerate(_sentences(n, 0))]
    k = n * 2 // 3
    return TaskData("toy-tags", "token", ("A", "T", "O"), ex[:k], ex[k : k + n // 6], ex[k + n // 6 :])


def sentence_task(n: int = 240) -> TaskData:
    """Does the sentence mention an animal?"""
    rng = random.Random(1)
    ex = []
    for i in range(n):
        words = [rng.choice(THINGS + OTHER) for _ in range(rng.randint(3, 7))]
        if i % 2:
            words.insert(rng.randrange(len(words) + 1), rng.choice(ANIMALS))
        ex.append(Example(tuple(words), "animal" if i % 2 else "none", str(i)))
    k = n * 2 // 3
    return TaskData("toy-animal", "sentence", ("none", "animal"), ex[:k], ex[k : k + n // 6], ex[k + n // 6 :])


def word_task(n: int = 120) -> TaskData:
    """The class of the target word (a word task: one label at words[target])."""
    ex = []
    for i, s in enumerate(_sentences(n, 2)):
        t = i % len(s)
        ex.append(Example(s, "A" if s[t] in ANIMALS else "T" if s[t] in THINGS else "O", str(i), target=t))
    return TaskData("toy-word", "word", ("A", "T", "O"), ex[:80], ex[80:100], ex[100:])


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory) -> Path:
    texts = [" ".join(s) for s in _sentences(200, 5)]
    tok = WordPieceTokenizer.train(texts, vocab_size=80, min_frequency=1)
    config = BertConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=64)
    torch.manual_seed(0)
    out = tmp_path_factory.mktemp("bert")
    save_pretrained(BertForPreTraining(config), tok, out)
    return out


@pytest.fixture(scope="module")
def tiny_elmo(tmp_path_factory) -> Path:
    torch.manual_seed(0)
    out = tmp_path_factory.mktemp("elmo")
    save_elmo(ElmoLanguageModel(ElmoConfig.preset("tiny")), out)
    return out


def _finetune(model: Path, data: TaskData, out: Path, **kw):
    settings = FinetuneSettings(model=str(model), model_path=str(model), task=data.name, **kw)
    task, cfg = build_task(ctxmodels.load(model), data, settings)
    cfg.progress = False
    trainer = Trainer(task, cfg, out)
    return task, trainer


def _losses(out: Path) -> dict[int, float]:
    recs = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    return {r["step"]: r["loss"] for r in recs if "loss" in r}


# -- heads in transformers -------------------------------------------------------------------------------------


@pytest.mark.parametrize("arch", list(HEAD_CLASSES))
def test_saved_heads_load_in_transformers_with_equal_outputs(arch, tiny_bert, tmp_path):
    model, tok = ctxmodels.load(tiny_bert).model, ctxmodels.load(tiny_bert).tokenizer
    labels = ["start", "end"] if arch == "BertForQuestionAnswering" else ["x", "y", "z"]
    torch.manual_seed(3)
    head = HEAD_CLASSES[arch](model.config, len(labels)).eval()
    with torch.no_grad():  # random biases and LayerNorms, so every parameter shows in the comparison
        for name, p in head.named_parameters():
            if name.endswith("bias") or "LayerNorm" in name:
                p.add_(0.2 * torch.randn(p.shape))
    save_bert_task_model(head, tok, tmp_path, labels)
    hf = getattr(transformers, arch).from_pretrained(tmp_path, attn_implementation="eager").eval()
    assert hf.config.architectures == [arch]
    if arch != "BertForQuestionAnswering":
        assert hf.config.id2label == dict(enumerate(labels)) and hf.config.num_labels == 3
    batch = tok.collate(tok.encode_batch(["the dog saw a stone", "a cat", "old door and the table near a cow"]))
    with torch.no_grad():
        ours, ref = head(**batch), hf(**batch)
    for name in ("logits", "start_logits", "end_logits"):
        if getattr(ours, name) is not None:
            torch.testing.assert_close(getattr(ours, name), getattr(ref, name), atol=1e-5, rtol=0)


# -- learning ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("make", [token_task, sentence_task, word_task])
def test_bert_finetune_learns_a_small_task(make, tiny_bert, tmp_path):
    data = make()
    task, trainer = _finetune(tiny_bert, data, tmp_path, steps=150, lr=2e-3, batch_size=16)
    trainer.train()
    info = final_metrics(task, trainer)
    chance = 1 / len(data.labels)
    assert info["metrics"]["test"]["accuracy"] > chance + 0.35, info["metrics"]
    assert info["metrics"]["test"]["macro_f1"] > 0.6
    assert set(info["metrics"]["test"]["per_class"]) <= set(data.labels)


def test_elmo_feature_mode_freezes_the_bilm_and_finetune_trains_it(tiny_elmo, tmp_path):
    base = {k: v.clone() for k, v in ctxmodels.load(tiny_elmo).model.bilm.state_dict().items()}
    for mode in ("feature", "finetune"):
        task, trainer = _finetune(tiny_elmo, token_task(), tmp_path / mode, steps=60, mode=mode, batch_size=16, lr=1e-2)
        mix_before = task.model.scalar_mix.scalar_parameters.detach().clone()
        trainer.train()
        info = final_metrics(task, trainer)
        assert info["metrics"]["test"]["accuracy"] > 0.7, (mode, info["metrics"])
        after = task.model.bilm.state_dict()
        changed = [k for k in base if not torch.equal(base[k], after[k])]
        assert (changed == []) == (mode == "feature"), (mode, changed[:3])
        assert not torch.equal(mix_before, task.model.scalar_mix.scalar_parameters.detach())  # s_j learn in both
        # the saved biLM is the trained one, and the shared loaded model was never touched
        saved = ctxmodels.load(tmp_path / mode).model.bilm.state_dict()
        assert all(torch.equal(saved[k], after[k]) for k in after)
    assert all(torch.equal(v, ctxmodels.load(tiny_elmo).model.bilm.state_dict()[k]) for k, v in base.items())


def test_resume_after_an_interrupt_continues_the_curve(tiny_bert, tmp_path):
    assert_resume_continues_the_curve(tiny_bert, tmp_path, steps=12)


def assert_resume_continues_the_curve(model: Path, tmp_path: Path, steps: int) -> None:
    """Fine-tuning ``model`` on the token task stopped after one step and resumed logs the same losses as a run
    that never stopped."""
    data = token_task()
    kw = dict(steps=steps, lr=1e-3, batch_size=16, save_every=0, log_every=1)
    task, trainer = _finetune(model, data, tmp_path / "full", **kw)
    trainer.train()
    full = _losses(tmp_path / "full")

    task, trainer = _finetune(model, data, tmp_path / "part", **kw)
    trainer.cfg.time_limit_s = 0.0  # stops after the first step with a checkpoint, as Ctrl-C does
    trainer.train()
    assert max(_losses(tmp_path / "part")) == 1
    task, trainer = _finetune(model, data, tmp_path / "part", **kw)
    trainer.train(resume=True)
    resumed = _losses(tmp_path / "part")
    assert sorted(resumed) == sorted(full)
    for step in full:
        assert resumed[step] == pytest.approx(full[step], abs=1e-6), step


# -- the saved folder ----------------------------------------------------------------------------------------


def test_load_gives_the_backbone_with_finetune_info_and_a_task_model(tiny_bert, tiny_elmo, tmp_path):
    assert ctxmodels.load(tiny_bert).finetune_info is None
    for model, data in ((tiny_bert, word_task()), (tiny_elmo, sentence_task())):
        out = tmp_path / model.name
        task, trainer = _finetune(model, data, out, steps=20, lr=1e-3, batch_size=16)
        trainer.train()
        final_metrics(task, trainer)
        loaded = ctxmodels.load(out)
        assert loaded.kind == ctxmodels.load(model).kind
        info = loaded.finetune_info
        assert info["base_model"] == str(model) and info["task_kind"] == data.kind
        assert info["labels"] == list(data.labels) and info["steps"] == 20
        assert set(info["metrics"]) == {"dev", "test"} and info["examples_per_second"] > 0
        if loaded.kind == "elmo":
            assert len(info["scalar_mix"]["weights"]) == loaded.n_layers and "Learned layer weights" in card_text(out)
        (vectors,) = loaded.embed([["the", "dog", "near", "a", "stone"]])
        assert vectors.shape[:2] == (loaded.n_layers, 5)
        card = (out / "README.md").read_text()
        assert "fine-tuned on toy" in card and "| test |" in card and "generated in the test" in card
        predicted = load_task_model(out).predict(["the", "dog", "near", "a", "stone"], target=1)
        assert len(predicted) == 1 and predicted[0][0] in data.labels


# -- the command ---------------------------------------------------------------------------------------------


def _run(capsys, *args: str) -> tuple[int, str]:
    code = main(["finetune", *args])
    return code, capsys.readouterr().err


def test_cli_errors_are_one_clear_line(tiny_bert, tmp_path, capsys):
    static = assets_dir() / "static-eltec"
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x.txt").write_text("x")
    cases = [
        (["--model", str(tiny_bert), "--task", "no-such-task", "--out", str(tmp_path / "a")], "no-such-task"),
        (["--model", str(static), "--task", "pos", "--out", str(tmp_path / "b")], "static"),
        (["--model", str(tiny_bert), "--task", "pos", "--out", str(tmp_path / "full")], "--resume"),
        (["--task", "pos", "--out", str(tmp_path / "c")], "--model"),
        (["--out", str(tmp_path / "d"), "--resume"], "no fine-tuning run"),
    ]
    for args, words in cases:
        code, err = _run(capsys, *args)
        assert code == 2, (args, err)
        assert err.startswith("ctxmodels: error:") and words in err and "Traceback" not in err, err
        assert len(err.strip().splitlines()) == 1, err


def test_cli_fine_tunes_a_tsv_task_and_resumes_to_more_steps(tiny_bert, tmp_path, capsys):
    data = sentence_task(120)
    tsv = tmp_path / "animals.tsv"
    tsv.write_text("".join(f"{' '.join(e.words)}\t{e.label}\n" for e in data.train + data.dev + data.test))
    out = tmp_path / "run"
    common = ["--lr", "2e-3", "--batch-size", "8", "--threads", "1", "--no-progress"]
    code = main(["finetune", "--model", str(tiny_bert), "--task", str(tsv), "--out", str(out), "--steps", "10",
                 *common])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "done: 10 steps" in captured.out and "test accuracy" in captured.out
    info = json.loads((out / "finetune.json").read_text())
    assert info["task"] == str(tsv) and info["task_kind"] == "sentence" and info["steps"] == 10
    assert sorted(info["labels"]) == ["animal", "none"] and info["mode"] == "finetune"
    assert "command" in (out / "README.md").read_text() and "finetune" in (out / "README.md").read_text()
    # --resume needs no options but may move the end; a differing setting is refused
    code, err = _run(capsys, "--out", str(out), "--resume", "--lr", "1e-3")
    assert code == 2 and "--lr" in err
    assert main(["finetune", "--out", str(out), "--resume", "--steps", "16", "--no-progress"]) == 0
    info = json.loads((out / "finetune.json").read_text())
    assert info["steps"] == 16 and max(_losses(out)) == 16
    loaded = ctxmodels.load(out, reload=True)
    assert loaded.kind == "bert" and loaded.finetune_info["steps"] == 16
    assert loaded.task_model().predict(["the", "dog", "and", "a", "table"])[0][0] in ("animal", "none")


def test_bert_feature_mode_trains_only_the_head(tiny_bert, tmp_path):
    base = {k: v.clone() for k, v in ctxmodels.load(tiny_bert).model.bert.state_dict().items()}
    task, trainer = _finetune(tiny_bert, token_task(), tmp_path, steps=10, mode="feature", lr=1e-2, batch_size=16)
    head = task.model.classifier.weight.detach().clone()
    trainer.train()
    after = task.model.bert.state_dict()
    assert all(torch.equal(after[k], base[k]) for k in after)
    assert not torch.equal(head, task.model.classifier.weight.detach())


def card_text(out: Path) -> str:
    return (out / "README.md").read_text()


def test_a_shipped_base_is_recorded_by_its_name_and_any_other_by_its_path(tmp_path, monkeypatch):
    """finetune.json's base_path: "" for a shipped model given by its short name (the name finds it anywhere; this
    machine's path would mislead on another), the resolved path for anything else."""
    assets = tmp_path / "assets"
    (assets / "bert-eltec").mkdir(parents=True)
    monkeypatch.setenv("CTXMODELS_ASSETS", str(assets))
    shipped = FinetuneSettings(model="bert-eltec", task="pos", model_path=str((assets / "bert-eltec").resolve()))
    assert portable_base_path(shipped) == ""
    own = str((tmp_path / "runs" / "bert").resolve())
    assert portable_base_path(FinetuneSettings(model="runs/bert", task="pos", model_path=own)) == own
    # a folder in assets/ named by its path is a path like any other
    by_path = FinetuneSettings(model=str(assets / "bert-eltec"), task="pos",
                               model_path=str((assets / "bert-eltec").resolve()))
    assert portable_base_path(by_path) == str((assets / "bert-eltec").resolve())
