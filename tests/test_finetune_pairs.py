"""Sentence-pair classification in ``ctxmodels finetune`` ([CLS] A [SEP] B [SEP] from a user's
text_a<TAB>text_b<TAB>label file): the file's checks, the pair encoding, learning a task that needs both texts, the
saved folder as transformers' own sequence-classification class with our logits, read back by ctxmodels, and the
command's one-line errors."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import torch
import transformers

import ctxmodels
from ctxmodels.analysis import finetuning as ft
from ctxmodels.bert import BertConfig, BertForPreTraining
from ctxmodels.cli import main
from ctxmodels.elmo import ElmoConfig, ElmoLanguageModel
from ctxmodels.formats.allennlp import save_elmo
from ctxmodels.formats.huggingface import save_pretrained
from ctxmodels.tasks import TaskError, load_task, read_pair_task
from ctxmodels.tokenization import WordPieceTokenizer
from ctxmodels.training.finetune_task import FinetuneSettings, build_task, final_metrics
from ctxmodels.training.trainer import Trainer
from tests import hf_tiny

ANIMALS = ["dog", "cat", "horse", "cow"]
THINGS = ["table", "chair", "stone", "book"]
FILL = ["the", "a", "saw", "near", "old"]


def _text(rng: random.Random, noun: str) -> str:
    words = [rng.choice(FILL) for _ in range(rng.randint(1, 4))]
    words.insert(rng.randrange(len(words) + 1), noun)
    return " ".join(words)


def pair_lines(n: int = 200, seed: int = 0) -> list[str]:
    """The label says what A and B each mention (animal or thing): learnable only by reading both, and telling
    which text is which."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        a, b = rng.choice(ANIMALS + THINGS), rng.choice(ANIMALS + THINGS)
        label = ("animal" if a in ANIMALS else "thing") + "-" + ("animal" if b in ANIMALS else "thing")
        out.append(f"{_text(rng, a)}\t{_text(rng, b)}\t{label}")
    return out


def write_pairs(path: Path, lines: list[str], header: str = "text_a\ttext_b\tlabel") -> Path:
    path.write_text(header + "\n" + "\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def pairs_file(tmp_path_factory) -> Path:
    return write_pairs(tmp_path_factory.mktemp("pairs") / "pairs.tsv", pair_lines())


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory) -> Path:
    rng = random.Random(5)
    texts = [_text(rng, rng.choice(ANIMALS + THINGS)) for _ in range(200)]
    tok = WordPieceTokenizer.train(texts, vocab_size=60, min_frequency=1)
    config = BertConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=64)
    torch.manual_seed(0)
    out = tmp_path_factory.mktemp("bert")
    save_pretrained(BertForPreTraining(config), tok, out)
    return out


def _finetune(model: Path, task_file: Path, out: Path, **kw):
    settings = FinetuneSettings(model=str(model), model_path=str(model), task=str(task_file), **kw)
    task, cfg = build_task(ctxmodels.load(model), load_task(str(task_file)), settings)
    cfg.progress = False
    return task, Trainer(task, cfg, out)


# -- the file ---------------------------------------------------------------------------------------------------


def test_a_pair_file_is_read_by_its_header_in_any_column_order(tmp_path):
    lines = pair_lines(30)
    swapped = ["\t".join([x.split("\t")[2], x.split("\t")[1], x.split("\t")[0], f"doc{i % 5}"])
               for i, x in enumerate(lines)]
    data = load_task(str(write_pairs(tmp_path / "p.tsv", swapped, "label\ttext_b\ttext_a\tdocument")))
    assert data.kind == "pair" and data.split_by == "document"
    first = lines[0].split("\t")
    every = data.train + data.dev + data.test
    assert any(e.words == tuple(first[0].split()) and e.pair == tuple(first[1].split()) and e.label == first[2]
               for e in every)
    assert sorted(data.labels) == ["animal-animal", "animal-thing", "thing-animal", "thing-thing"]
    # without the header the file is a text<TAB>label one, as before
    plain = tmp_path / "plain.tsv"
    plain.write_text("".join(f"{x.split(chr(9))[0]}\t{x.split(chr(9))[2]}\n" for x in lines))
    assert load_task(str(plain)).kind == "sentence"


@pytest.mark.parametrize("header,body,words", [
    ("text_a\tlabel", ["a dog\tanimal"] * 12, "names no text_b column"),
    ("text_a\ttext_b\tlabel\tcolour", ["a dog\ta cat\tx\tred"] * 12, "unknown column 'colour'"),
    ("text_a\ttext_b\tlabel", ["a dog\ta cat\tx"] * 5 + ["a dog\tanimal"] + ["a dog\ta cat\ty"] * 6,
     "line 7: 2 tab-separated columns, but the header has 3"),
    ("text_a\ttext_b\tlabel", ["a dog\t \tx"] * 12, "line 2: text_b is empty"),
    ("text_a\ttext_b\tlabel", ["a dog\ta cat\t"] * 12, "line 2: the label is empty"),
    ("text_a\ttext_b\tlabel", ["a dog\ta cat\tx"] * 4, "at least 10"),
])
def test_bad_pair_files_get_one_clear_line(header, body, words, tmp_path):
    path = write_pairs(tmp_path / "bad.tsv", body, header)
    with pytest.raises(TaskError) as e:
        read_pair_task(path)
    assert words in str(e.value) and str(path) in str(e.value) and "\n" not in str(e.value)


def test_the_pair_template_has_both_texts_and_token_types(tiny_bert):
    tok = ctxmodels.load(tiny_bert).tokenizer
    enc, cut = tok.encode_word_pair(["the", "dog"], ["a", "stone", "near"], 64)
    assert cut == 0 and enc.tokens[0] == "[CLS]" and enc.tokens.count("[SEP]") == 2
    sep = enc.tokens.index("[SEP]")
    assert enc.type_ids == [0] * (sep + 1) + [1] * (len(enc.ids) - sep - 1)
    assert enc.words == ["the", "dog", "a", "stone", "near"]
    # too long: the longer text loses its last words first, whole words only
    long_a = ["the", "old", "dog", "saw", "a", "cat", "near", "the", "stone"]
    enc, cut = tok.encode_word_pair(long_a, ["a", "cow"], 10)
    assert len(enc.ids) <= 10 and cut > 0 and enc.words[-2:] == ["a", "cow"]
    assert enc.words[:-2] == long_a[: len(long_a) - cut]


# -- learning and the saved folder ------------------------------------------------------------------------------


@pytest.mark.slow
def test_bert_learns_a_pair_task_that_needs_both_texts(tiny_bert, pairs_file, tmp_path):
    task, trainer = _finetune(tiny_bert, pairs_file, tmp_path, steps=150, lr=2e-3, batch_size=16)
    trainer.train()
    info = final_metrics(task, trainer)
    assert info["task_kind"] == "pair" and len(info["labels"]) == 4
    assert info["metrics"]["test"]["accuracy"] > 0.25 + 0.35, info["metrics"]  # chance: a quarter


@pytest.mark.parametrize("family", ["own-bert", "roberta", "distilbert"])
def test_the_saved_pair_model_is_transformers_class_with_our_logits(family, tiny_bert, pairs_file, tmp_path):
    base = tiny_bert if family == "own-bert" else hf_tiny.build(family, tmp_path / "base")
    task, trainer = _finetune(base, pairs_file, tmp_path / "out", steps=4, lr=1e-3, batch_size=8)
    trainer.train()
    final_metrics(task, trainer)
    out = tmp_path / "out"
    config = json.loads((out / "config.json").read_text())
    arch = config["architectures"][0]
    expected = "BertForSequenceClassification" if family == "own-bert" else hf_tiny_class(family)
    assert arch == expected and config["id2label"] == {str(i): lab for i, lab in enumerate(task.labels)}
    assert config["label2id"] == {lab: i for i, lab in enumerate(task.labels)}
    hf, loading = transformers.AutoModelForSequenceClassification.from_pretrained(
        out, local_files_only=True, attn_implementation="eager", output_loading_info=True)
    assert type(hf).__name__ == arch
    assert not loading["missing_keys"] and not loading["unexpected_keys"] and not loading["mismatched_keys"]
    assert_pair_model_matches(task, hf.eval(), out)
    assert ctxmodels.load(out).finetune_info["task"] == str(pairs_file)


def assert_pair_model_matches(task, hf: torch.nn.Module, out: Path) -> None:
    """Our fine-tuned pair model and transformers' class ``hf`` read from ``out`` give the same logits, and
    ctxmodels reads the folder back as the backbone with finetune_info and a task model that labels a pair."""
    batch = {k: v for k, v in task.collate(task.test[:6]).items() if k != "labels"}
    task.model.eval()
    with torch.no_grad():
        torch.testing.assert_close(task.model(**batch).logits, hf(**batch).logits, atol=1e-5, rtol=0)
    loaded = ctxmodels.load(out)
    assert loaded.finetune_info["task_kind"] == "pair"
    a, b = ["the", "dog"], ["a", "stone"]
    enc, _ = loaded.tokenizer.encode_word_pair(a, b, 64)
    with torch.no_grad():
        ref = hf(**loaded.tokenizer.collate([enc])).logits[0]
    (label, p), = loaded.task_model().predict(a, pair=b)
    assert label == task.labels[int(ref.argmax())] and p == pytest.approx(float(ref.softmax(-1).max()), abs=1e-5)
    with pytest.raises(ValueError, match="pair"):
        loaded.task_model().predict(a)


def hf_tiny_class(family: str) -> str:
    return {"roberta": "RobertaForSequenceClassification", "distilbert": "DistilBertForSequenceClassification"}[family]


def test_the_fine_tuning_page_says_it_compares_only_one_text_tasks(pairs_file):
    with pytest.raises(ValueError, match="sentence-pair task") as e:
        ft.task_sentences(str(pairs_file))
    assert "its scores" in str(e.value)


# -- the command --------------------------------------------------------------------------------------------------


def _run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["finetune", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_cli_fine_tunes_a_pair_file_and_resumes(tiny_bert, pairs_file, tmp_path, capsys):
    out = tmp_path / "run"
    code, said, err = _run(capsys, "--model", str(tiny_bert), "--task", str(pairs_file), "--out", str(out),
                           "--steps", "4", "--batch-size", "8", "--seed", "3", "--threads", "1", "--no-progress")
    assert code == 0, err
    assert "done: 4 steps" in said and "test accuracy" in said
    info = json.loads((out / "finetune.json").read_text())
    assert info["task_kind"] == "pair" and info["settings"]["seed"] == 3
    assert "sentence-pair classification" in (out / "README.md").read_text()
    records = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert any("dev_accuracy" in (r.get("eval") or {}) for r in records)
    assert main(["finetune", "--out", str(out), "--resume", "--steps", "6", "--no-progress"]) == 0
    assert json.loads((out / "finetune.json").read_text())["steps"] == 6


def test_cli_bad_pair_input_is_one_line(tiny_bert, pairs_file, tmp_path, capsys):
    torch.manual_seed(0)
    save_elmo(ElmoLanguageModel(ElmoConfig.preset("tiny")), tmp_path / "elmo")
    bad = write_pairs(tmp_path / "bad.tsv", ["a dog\tanimal"] * 12, "text_a\tlabel")
    cases = [
        (["--model", str(tiny_bert), "--task", str(bad)], "names no text_b column"),
        (["--model", str(tmp_path / "elmo"), "--task", str(pairs_file)], "sentence-pair tasks need BERT"),
    ]
    for i, (args, words) in enumerate(cases):
        code, _, err = _run(capsys, *args, "--out", str(tmp_path / f"out{i}"))
        assert code == 2 and err.startswith("ctxmodels: error:") and words in err, err
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
        assert not (tmp_path / f"out{i}").exists() or not any((tmp_path / f"out{i}").iterdir())
