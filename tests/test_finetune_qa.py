"""Extractive question answering in ``ctxmodels finetune`` (a user's SQuAD v1.1 file): exact match and F1 as the
official v1.1 script computes them, span decoding (end before start, the length limit, windows), the windows and
the answer's pieces, the file's checks, learning a trivially learnable set, the saved folder as transformers'
``*ForQuestionAnswering`` with our logits, and the command's one-line errors."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
import torch
import transformers

import ctxmodels
from ctxmodels.bert import BertConfig, BertForPreTraining
from ctxmodels.cli import main
from ctxmodels.elmo import ElmoConfig, ElmoLanguageModel
from ctxmodels.encoding import Encoded
from ctxmodels.formats.allennlp import save_elmo
from ctxmodels.formats.huggingface import save_pretrained
from ctxmodels.tasks import TaskError, best_span, load_task, normalize_answer, read_squad_task, squad_scores
from ctxmodels.tasks.squad import answer_positions, decode_answer, exact_match, f1
from ctxmodels.tokenization import WordPieceTokenizer
from ctxmodels.training.finetune_qa import QaTask
from ctxmodels.training.finetune_task import FinetuneSettings, build_task, final_metrics
from ctxmodels.training.trainer import Trainer
from tests import hf_tiny

NAMES = ["anna", "boris", "clara", "dmitri", "elena", "fyodor", "greta", "hans", "ivan", "jonas"]
FILL = ["the", "old", "house", "by", "river", "was", "quiet", "and", "a", "dog", "slept", "there"]
QUESTION = "who is the owner?"


def squad(articles: int = 12, per_article: int = 5, seed: int = 0) -> dict:
    """The answer is always the word after "is": a set a tiny model learns in a few hundred steps."""
    rng = random.Random(seed)
    data = []
    for a in range(articles):
        paragraphs = []
        for p in range(per_article):
            name = rng.choice(NAMES)
            before = " ".join(rng.choice(FILL) for _ in range(rng.randint(3, 12)))
            after = " ".join(rng.choice(FILL) for _ in range(rng.randint(0, 12)))
            context = f"{before} the owner is {name} and {after}."
            qa = {"id": f"{a}-{p}", "question": QUESTION,
                  "answers": [{"text": name, "answer_start": context.index(" is ") + 4}]}
            paragraphs.append({"context": context, "qas": [qa]})
        data.append({"title": f"article {a}", "paragraphs": paragraphs})
    return {"version": "1.1", "data": data}


@pytest.fixture(scope="module")
def qa_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("qa") / "owners.json"
    path.write_text(json.dumps(squad()))
    return path


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory) -> Path:
    texts = [p["context"] for a in squad(seed=9)["data"] for p in a["paragraphs"]] + [QUESTION] + NAMES
    tok = WordPieceTokenizer.train(texts, vocab_size=120, min_frequency=1)
    config = BertConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=64)
    torch.manual_seed(0)
    out = tmp_path_factory.mktemp("bert")
    save_pretrained(BertForPreTraining(config), tok, out)
    return out


def _finetune(model: Path, task_file: Path, out: Path, **kw):
    settings = FinetuneSettings(model=str(model), model_path=str(model), task=str(task_file), **kw)
    task, cfg = build_task(ctxmodels.load(model), load_task(str(task_file)), settings, QaTask)
    cfg.progress = False
    return task, Trainer(task, cfg, out)


# -- scoring as the official SQuAD v1.1 script --------------------------------------------------------------------


@pytest.mark.parametrize("text,normal", [
    ("The  Cat, the HAT!", "cat hat"),        # lower, punctuation, articles, spaces
    ("an apple a day", "apple day"),
    ("theatre", "theatre"),                   # an article only as a whole word
    ("U.S.A.", "usa"),
    ("the-end", "theend"),                    # punctuation goes first, so "the" is no longer a word of its own
    ("  A  ", ""),
])
def test_normalisation_follows_the_official_script(text, normal):
    assert normalize_answer(text) == normal


def test_exact_match_and_f1_by_hand():
    assert exact_match("The Cat!", "cat") == 1.0 and exact_match("cats", "cat") == 0.0
    assert f1("the cat sat", "a cat sat down") == pytest.approx(0.8)  # P 2/2, R 2/3
    assert f1("cat cat", "cat") == pytest.approx(2 / 3)                 # shared words count once: P 1/2, R 1
    assert f1("dog", "cat") == 0.0
    # only articles on both sides: equal after normalising (EM 1) but no word in common (F1 0), as in the script
    assert exact_match("the", "a") == 1.0 and f1("the", "a") == 0.0
    # the best over the gold answers, then the mean over the questions
    scores = squad_scores(["blue", "Paris!"], [["red", "blue sky"], ["London"]])
    assert scores == {"exact_match": 0.0, "f1": pytest.approx((2 / 3 + 0) / 2), "n": 2}
    assert squad_scores(["the Paris"], [["Rome", "paris"]])["exact_match"] == 1.0


# -- span decoding ------------------------------------------------------------------------------------------------


def test_best_span_never_ends_before_it_starts():
    start, end = np.array([0, 0, 9, 0.0]), np.array([0, 8, 1, 0.0])
    score, first, last = best_span(start, end, np.array([False, True, True, True]), 30)
    assert (first, last) == (2, 2) and score == 10  # (2, 1) would score 17, but it ends before it starts


def test_best_span_keeps_to_the_length_limit_and_the_context():
    start, end = np.array([0, 9, 0, 0, 0.0]), np.array([0, 0, 1, 0, 9.0])
    allowed = np.array([False, True, True, True, True])
    assert best_span(start, end, allowed, 4)[1:] == (1, 4)   # 4 pieces: allowed
    assert best_span(start, end, allowed, 3)[1:] == (1, 2)   # at most 3 pieces
    assert best_span(start, end, allowed, 1)[1:] in ((1, 1), (4, 4))
    assert best_span(np.array([50.0, 0, 0]), np.array([50.0, 0, 0]), np.array([False, True, True]), 5)[1] == 1
    assert best_span(start, end, np.zeros(5, bool), 30) is None


def _window(offsets: list[tuple[int, int]], question: int = 2) -> Encoded:
    """[CLS] question [SEP] context [SEP] with the given context offsets."""
    n = len(offsets)
    seq = [None] + [0] * question + [None] + [1] * n + [None]
    offs = [(0, 0)] + [(0, 1)] * question + [(0, 0)] + list(offsets) + [(0, 0)]
    return Encoded([0] * len(seq), ["x"] * len(seq), [0] * len(seq), [None] * len(seq), offs, seq, [])


def test_the_answer_is_the_best_span_over_all_windows():
    context = "aaa bbb ccc ddd"
    w1, w2 = _window([(0, 3), (4, 7), (8, 11)]), _window([(4, 7), (8, 11), (12, 15)])
    s1, e1 = np.zeros(len(w1)), np.zeros(len(w1))
    s1[1] = e1[1] = 100.0  # the question's piece: never an answer
    s1[5], e1[6] = 1.0, 2.0  # "bbb ccc": 3 (the context is at 4, 5, 6)
    s2, e2 = np.zeros(len(w2)), np.zeros(len(w2))
    s2[6] = e2[6] = 2.5  # "ddd": 5
    assert decode_answer(context, [w1, w2], [s1, s2], [e1, e2], 30) == ("ddd", 5.0)
    assert decode_answer(context, [w1], [s1], [e1], 30) == ("bbb ccc", 3.0)
    assert decode_answer(context, [w1], [s1], [e1], 1)[0] in ("aaa", "bbb", "ccc")


def test_windows_cover_the_context_with_the_stride_and_find_the_answer(tiny_bert):
    tok = ctxmodels.load(tiny_bert).tokenizer
    context = "the old house by the river was quiet and the owner is greta and a dog slept there by the river."
    answer = context.index("greta")
    windows = tok.encode_windows(QUESTION, context, 20, stride=4)
    assert len(windows) > 2 and all(len(w) <= 20 for w in windows)
    firsts = [w.offsets[w.sequence_ids.index(1)][0] for w in windows]
    pieces = [[w.offsets[t] for t, s in enumerate(w.sequence_ids) if s == 1] for w in windows]
    assert len(pieces[0]) > 4 and all(p[4][0] == q[0][0] for p, q in zip(pieces, pieces[1:]))  # 4 pieces apart
    assert firsts[0] == 0 and pieces[-1][-1][1] == len(context)
    for w in windows:  # the question, then the window: [CLS] question [SEP] context [SEP], types 0 then 1
        assert w.tokens[0] == "[CLS]" and w.type_ids[-1] == 1 and w.type_ids[1] == 0
    found = [answer_positions(w, answer, answer + len("greta")) for w in windows]
    holding = [(w, f) for w, f in zip(windows, found) if f != (0, 0)]
    assert holding and len(holding) < len(windows)
    for w, (first, last) in holding:
        assert context[w.offsets[first][0] : w.offsets[last][1]] == "greta"
    # a question longer than the window keeps at most half of it: the context still gets the other half
    long = tok.encode_windows(QUESTION * 20, context, 20)
    assert all(w.sequence_ids.count(0) == (20 - 3) // 2 for w in long)
    assert all(w.sequence_ids.count(1) == 20 - 3 - (20 - 3) // 2 for w in long[:-1])


# -- the file ------------------------------------------------------------------------------------------------------


def test_a_squad_file_is_split_by_article(qa_file):
    data = load_task(str(qa_file))
    assert data.kind == "qa" and data.split_by == "article" and data.labels == ()
    assert len(data.train) + len(data.dev) + len(data.test) == 60
    train_docs = {e.doc.rsplit(" #", 1)[0] for e in data.train}
    assert not train_docs & {e.doc.rsplit(" #", 1)[0] for e in data.test}
    ex = data.train[0]
    (text, start), = ex.answers
    assert ex.context[start : start + len(text)] == text and ex.question == QUESTION


def _bad(tmp_path: Path, content: str) -> Path:
    path = tmp_path / "bad.json"
    path.write_text(content)
    return path


def _with(change) -> str:
    d = squad()
    change(d)
    return json.dumps(d)


@pytest.mark.parametrize("content,words", [
    ("", "the file is empty"),
    ('{"data": [{"paragraphs": [}', "not valid JSON"),
    ("[1, 2]", '"data" is missing'),
    (_with(lambda d: d["data"][1]["paragraphs"][2].pop("context")), 'article 2, paragraph 3: "context" is missing'),
    (_with(lambda d: d["data"][0]["paragraphs"][1]["qas"][0]["answers"][0].update(answer_start=0)),
     "article 1, paragraph 2, question 1, answer 1: the answer"),
    (_with(lambda d: d["data"][0]["paragraphs"][0]["qas"][0].update(answers=[])), "no answers"),
    (_with(lambda d: d.update(data=d["data"][:1])), "at least 10"),
])
def test_bad_squad_files_get_one_clear_line(content, words, tmp_path):
    path = _bad(tmp_path, content)
    with pytest.raises(TaskError) as e:
        read_squad_task(path)
    message = str(e.value)
    assert words in message and str(path) in message and "\n" not in message, message
    if "the answer" in words:
        assert "is not at answer_start 0" in message


# -- learning and the saved folder ----------------------------------------------------------------------------------


@pytest.mark.slow
def test_bert_learns_the_word_after_is(tiny_bert, qa_file, tmp_path):
    task, trainer = _finetune(tiny_bert, qa_file, tmp_path, steps=150, lr=2e-3, batch_size=16, max_length=24,
                              doc_stride=6)
    assert len(task.train) > len(task.questions["train"])  # long paragraphs are read in several windows
    trainer.train()
    info = final_metrics(task, trainer)
    for split in ("dev", "test"):  # chance: one of the ~15 words of a paragraph
        m = info["metrics"][split]
        assert m["n"] >= 5 and m["exact_match"] > 0.5 and m["f1"] >= m["exact_match"], info["metrics"]
    answer, _ = ctxmodels.load(tmp_path).task_model().answer(QUESTION, "a dog slept there and the owner is ivan.")
    assert answer == "ivan"


@pytest.mark.parametrize("family", ["own-bert", "roberta", "distilbert"])
def test_the_saved_qa_model_is_transformers_class_with_our_logits(family, tiny_bert, qa_file, tmp_path):
    base = tiny_bert if family == "own-bert" else hf_tiny.build(family, tmp_path / "base")
    task, trainer = _finetune(base, qa_file, tmp_path / "out", steps=3, lr=1e-3, batch_size=8, max_length=32)
    trainer.train()
    final_metrics(task, trainer)
    out = tmp_path / "out"
    arch = json.loads((out / "config.json").read_text())["architectures"][0]
    expected = {"own-bert": "BertForQuestionAnswering", "roberta": "RobertaForQuestionAnswering",
                "distilbert": "DistilBertForQuestionAnswering"}[family]
    assert arch == expected
    hf, loading = transformers.AutoModelForQuestionAnswering.from_pretrained(
        out, local_files_only=True, attn_implementation="eager", output_loading_info=True)
    assert type(hf).__name__ == arch
    assert not loading["missing_keys"] and not loading["unexpected_keys"] and not loading["mismatched_keys"]
    batch = {k: v for k, v in task.collate(task.test[:5]).items() if not k.endswith("_positions")}
    task.model.eval()
    hf.eval()
    with torch.no_grad():
        ours, ref = task.model(**batch), hf(**batch)
    for name in ("start_logits", "end_logits"):
        torch.testing.assert_close(getattr(ours, name), getattr(ref, name), atol=1e-5, rtol=0)
    loaded = ctxmodels.load(out)
    assert loaded.finetune_info["task_kind"] == "qa" and set(loaded.finetune_info["metrics"]["test"]) >= {
        "exact_match", "f1", "n"}
    context = "the old house was quiet and the owner is anna."
    answer, score = loaded.task_model().answer(QUESTION, context)
    assert answer and answer in context and np.isfinite(score)


def test_resume_after_an_interrupt_continues_the_curve(tiny_bert, qa_file, tmp_path):
    kw = dict(steps=8, lr=1e-3, batch_size=8, max_length=24, save_every=0, log_every=1)
    task, trainer = _finetune(tiny_bert, qa_file, tmp_path / "full", **kw)
    trainer.train()
    task, trainer = _finetune(tiny_bert, qa_file, tmp_path / "part", **kw)
    trainer.cfg.time_limit_s = 0.0  # stops after the first step with a checkpoint, as Ctrl-C does
    trainer.train()
    task, trainer = _finetune(tiny_bert, qa_file, tmp_path / "part", **kw)
    trainer.train(resume=True)
    full, resumed = (_losses(tmp_path / name) for name in ("full", "part"))
    assert sorted(resumed) == sorted(full) == list(range(1, 9))
    for step in full:
        assert resumed[step] == pytest.approx(full[step], abs=1e-6), step


def _losses(out: Path) -> dict[int, float]:
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    return {r["step"]: r["loss"] for r in records if "loss" in r}


# -- the command -----------------------------------------------------------------------------------------------------


def _run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["finetune", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_cli_fine_tunes_question_answering_and_resumes(tiny_bert, qa_file, tmp_path, capsys):
    out = tmp_path / "run"
    code, said, err = _run(capsys, "--model", str(tiny_bert), "--task", str(qa_file), "--out", str(out),
                           "--steps", "4", "--batch-size", "8", "--max-length", "24", "--doc-stride", "5",
                           "--max-answer-length", "3", "--threads", "1", "--no-progress")
    assert code == 0, err
    assert "done: 4 steps" in said and "test exact match" in said and "windows" in err
    info = json.loads((out / "finetune.json").read_text())
    assert info["task_kind"] == "qa" and info["settings"]["doc_stride"] == 5
    assert info["settings"]["max_answer_length"] == 3 and set(info["metrics"]) == {"dev", "test"}
    card = (out / "README.md").read_text()
    assert "exact match" in card and "official SQuAD v1.1" in card
    records = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert any("dev_f1" in (r.get("eval") or {}) for r in records)
    code, _, err = _run(capsys, "--out", str(out), "--resume", "--doc-stride", "7")
    assert code == 2 and "--doc-stride" in err
    assert main(["finetune", "--out", str(out), "--resume", "--steps", "6", "--no-progress"]) == 0
    assert json.loads((out / "finetune.json").read_text())["steps"] == 6


def test_cli_bad_qa_input_is_one_line(tiny_bert, qa_file, tmp_path, capsys):
    torch.manual_seed(0)
    save_elmo(ElmoLanguageModel(ElmoConfig.preset("tiny")), tmp_path / "elmo")
    cases = [
        (["--model", str(tiny_bert), "--task", str(_bad(tmp_path, '{"data": ['))], "not valid JSON"),
        (["--model", str(tmp_path / "elmo"), "--task", str(qa_file)], "question answering need BERT"),
    ]
    for i, (args, words) in enumerate(cases):
        code, _, err = _run(capsys, *args, "--out", str(tmp_path / f"out{i}"))
        assert code == 2 and err.startswith("ctxmodels: error:") and words in err, err
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
