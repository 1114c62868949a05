"""ELMo training: tokenisation, vocabulary, window batches, the sampled softmax, exact perplexity, the CLI."""

from __future__ import annotations

import argparse
import json
import math
import random
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from ctxmodels.char_ids import word_to_char_ids
from ctxmodels.checkpoint import CheckpointError, load_tensors
from ctxmodels.cli import main
from ctxmodels.commands.train import add_kind_arguments, build
from ctxmodels.elmo import ElmoConfig
from ctxmodels.formats.allennlp import load_elmo
from ctxmodels.text import sentences, split_sentences, tokenize, tokenize_with_offsets
from ctxmodels.training.elmo_data import BOS_TYPE, EOS_TYPE, IGNORE, EncodedCorpus, Vocabulary, load_corpus
from ctxmodels.training.elmo_task import ElmoLMTask
from ctxmodels.training.sampled_softmax import LogUniformSampler, sampled_softmax_loss
from tests.helpers import ADJS, NOUNS, generated_paragraph, write_corpus


def tiny_config() -> ElmoConfig:
    return ElmoConfig.preset("tiny")


def make_task(train_docs, heldout_docs, vocab_size=100, **kw) -> ElmoLMTask:
    corpus = EncodedCorpus.build(train_docs, heldout_docs, vocab_size)
    kw = {"seq_len": 8, "batch_size": 4, "n_samples": 16, "eval_tokens": 400, **kw}
    return ElmoLMTask(corpus, tiny_config(), **kw)


def run_cli(*args: str) -> int:
    return main(["train", "elmo", "--no-progress", "--threads", "1", *args])


def losses(out: Path) -> dict[int, float]:
    recs = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    return {r["step"]: r["loss"] for r in recs if "loss" in r}


# ----------------------------------------------------------------------------------------------------------
# tokenisation


def test_tokenize_splits_punctuation_and_keeps_words_whole():
    text = 'Mr. Dowling said, "Don’t go to the drawing-room!" It cost 1,000 pounds at 10:30 — 3.5 times more.'
    assert tokenize(text) == [
        "Mr.", "Dowling", "said", ",", '"', "Don’t", "go", "to", "the", "drawing-room", "!", '"', "It", "cost",
        "1,000", "pounds", "at", "10:30", "—", "3.5", "times", "more", ".",
    ]
    for word, start, end in tokenize_with_offsets(text):
        assert text[start:end] == word


def test_tokenize_odd_input():
    assert tokenize("") == [] and tokenize("   \n\t ") == []
    assert tokenize("café naïve Zürich") == ["café", "naïve", "Zürich"]
    assert tokenize("cafe\u0301!") == ["cafe\u0301", "!"]  # a combining accent stays inside its word
    assert tokenize("I ❤ it 👍🏽") == ["I", "❤", "it", "👍", "🏽"]  # symbols and emoji are tokens of their own
    assert tokenize("x" * 100) == ["x" * 100]
    assert tokenize("'tis the dogs' bone") == ["'", "tis", "the", "dogs", "'", "bone"]
    with pytest.raises(ValueError, match="str"):
        tokenize(["not", "text"])  # type: ignore[arg-type]


def test_split_sentences():
    text = 'He came. "Who is it?" she asked. Mr. Smith smiled... And then? no! It rained'
    assert sentences(text) == [
        ["He", "came", "."],
        ['"', "Who", "is", "it", "?", '"', "she", "asked", "."],
        ["Mr.", "Smith", "smiled", ".", ".", "."],
        ["And", "then", "?", "no", "!"],  # "no" is lower case: not a new sentence
        ["It", "rained"],
    ]
    # an opening quote after a full stop starts the next sentence; a touching one closes the current one
    assert sentences('He said. "Go."') == [["He", "said", "."], ['"', "Go", ".", '"']]
    assert split_sentences([]) == []
    long = " ".join(["word"] * 2000)
    assert sentences(long) == [["word"] * 2000]


# ----------------------------------------------------------------------------------------------------------
# vocabulary and the encoded corpus


def test_vocabulary_order_unk_and_round_trip(tmp_path):
    vocab = Vocabulary.from_counts({"b": 5, "a": 5, "c": 9, "d": 1, "<UNK>": 100}, max_words=3)
    assert vocab.words == ["<S>", "</S>", "<UNK>", "c", "a", "b"]  # by count, ties alphabetically
    assert vocab.encode(["c", "d", "zzz", "<S>"]) == [3, 2, 2, 0]
    assert "d" not in vocab and len(vocab) == 6
    vocab.save(tmp_path / "vocab.txt")
    assert Vocabulary.load(tmp_path / "vocab.txt").words == vocab.words
    with pytest.raises(ValueError, match="must start with"):
        Vocabulary(["a", "b"])
    with pytest.raises(ValueError, match="duplicate"):
        Vocabulary(["<S>", "</S>", "<UNK>", "a", "a"])
    with pytest.raises(ValueError, match="at least 1"):
        Vocabulary.from_counts({"a": 1}, 0)
    (tmp_path / "bad.txt").write_text("the\nof\n")
    with pytest.raises(CheckpointError, match="bad.txt"):
        Vocabulary.load(tmp_path / "bad.txt")


def test_encoded_corpus_stream_vocab_and_cache(tmp_path):
    train = [["The cat sat. The cat ran."], ["A dog sat."]]
    heldout = [["The zebra sat zebra zebra."]]
    enc = EncodedCorpus.build(train, heldout, vocab_size=3)
    types = enc.types
    assert [types[t] for t in enc.train] == [
        "<S>", "The", "cat", "sat", ".", "</S>", "<S>", "The", "cat", "ran", ".", "</S>",
        "<S>", "A", "dog", "sat", ".", "</S>",
    ]
    # The vocabulary counts the training documents only: "zebra" is frequent in held-out text but not a word.
    assert enc.vocab.words == ["<S>", "</S>", "<UNK>", ".", "The", "cat"]
    assert [enc.vocab.words[enc.type_to_vocab[t]] for t in enc.heldout] == [
        "<S>", "The", "<UNK>", "<UNK>", "<UNK>", "<UNK>", ".", "</S>"]
    assert enc.oov_rate(enc.heldout) == pytest.approx(4 / 6)
    for t, word in enumerate(types):  # character ids per type, including the boundaries' special ids
        assert enc.type_chars[t].tolist() == word_to_char_ids(word)
    assert types[BOS_TYPE] == "<S>" and types[EOS_TYPE] == "</S>"

    key = {"version": 1, "what": "test"}
    enc.save(tmp_path / "cache", key)
    again = EncodedCorpus.load(tmp_path / "cache", key)
    assert again is not None and again.types == enc.types and again.vocab.words == enc.vocab.words
    assert np.array_equal(again.train, enc.train) and np.array_equal(again.type_chars, enc.type_chars)
    assert EncodedCorpus.load(tmp_path / "cache", {**key, "what": "other"}) is None
    assert EncodedCorpus.load(tmp_path / "nothing", key) is None


def test_batches_are_pure_functions_with_right_targets():
    rng = random.Random(1)
    train = [[generated_paragraph(rng) for _ in range(10)] for _ in range(2)]
    task = make_task(train, [[generated_paragraph(rng)]], seq_len=7, batch_size=3, seed=5)
    other = make_task(train, [[generated_paragraph(rng)]], seq_len=7, batch_size=3, seed=5)
    a, b = task.get_batch(2, 4), other.get_batch(2, 4)
    task.get_batch(0, 0)  # a different epoch in between must not matter
    c = task.get_batch(2, 4)
    for k in a:
        assert torch.equal(a[k], b[k]) and torch.equal(a[k], c[k])
    assert not torch.equal(task.get_batch(3, 4)["char_ids"], a["char_ids"])

    enc, V = task.corpus, task.corpus.vocab
    starts = task._epoch_starts(2)[12:15]
    for row, s in enumerate(starts):
        for j in range(7):
            t = enc.train[s + j]
            assert a["char_ids"][row, j].tolist() == word_to_char_ids(enc.types[t])
            nxt, prev = enc.train[s + j + 1], enc.train[s + j - 1]
            want_f = IGNORE if nxt == BOS_TYPE else V.id(enc.types[nxt])
            want_b = IGNORE if prev == EOS_TYPE else V.id(enc.types[prev])
            assert a["fwd_targets"][row, j] == want_f and a["bwd_targets"][row, j] == want_b
    # an epoch visits disjoint windows that all lie inside the stream
    all_starts = task._epoch_starts(2)
    assert len(set(all_starts.tolist())) == len(all_starts)
    assert all_starts.min() >= 1 and all_starts.max() + 7 <= len(enc.train) - 1
    assert len(a["candidates"]) == 16 and len(set(a["candidates"].tolist())) == 16


def test_data_seed_changes_the_order_only():
    rng = random.Random(2)
    train = [[generated_paragraph(rng) for _ in range(10)] for _ in range(2)]
    held = [[generated_paragraph(rng)]]
    base = make_task(train, held, seed=5)
    same = make_task(train, held, seed=5, data_seed=5)
    other = make_task(train, held, seed=5, data_seed=6)
    assert torch.equal(base.get_batch(0, 0)["char_ids"], same.get_batch(0, 0)["char_ids"])
    assert not np.array_equal(base._epoch_starts(0), other._epoch_starts(0))
    assert len(other._epoch_starts(0)) == len(base._epoch_starts(0))  # as many windows, in another order
    assert not torch.equal(base.get_batch(0, 0)["candidates"], other.get_batch(0, 0)["candidates"])
    # the initial weights and the held-out windows stay the seed's
    assert all(torch.equal(a, b) for a, b in zip(base.model.state_dict().values(),
                                                 other.model.state_dict().values()))
    assert np.array_equal(base._eval_starts, other._eval_starts)


# ----------------------------------------------------------------------------------------------------------
# the softmax


def test_sampled_softmax_with_every_class_is_the_full_softmax():
    torch.manual_seed(0)
    V, P, N = 30, 8, 50
    states = torch.randn(N, P, requires_grad=True)
    weight, bias = torch.randn(V, P, requires_grad=True), torch.randn(V, requires_grad=True)
    targets = torch.randint(V, (N,))
    full = F.cross_entropy(states @ weight.t() + bias, targets, reduction="none")
    sampled = sampled_softmax_loss(states, targets, weight, bias, torch.randperm(V))
    torch.testing.assert_close(sampled, full, atol=1e-5, rtol=1e-5)
    g_full = torch.autograd.grad(full.sum(), (states, weight, bias))
    g_sampled = torch.autograd.grad(sampled.sum(), (states, weight, bias))
    for x, y in zip(g_full, g_sampled):
        torch.testing.assert_close(x, y, atol=1e-5, rtol=1e-5)


def test_sampled_softmax_approaches_full_softmax_as_samples_grow():
    torch.manual_seed(0)
    V, P, N = 400, 16, 64
    states, weight, bias = torch.randn(N, P), torch.randn(V, P) * 0.5, torch.zeros(V)
    targets = torch.randint(V, (N,))
    full = F.cross_entropy(states @ weight.t() + bias, targets).item()
    sampler = LogUniformSampler(V)

    def gap(n: int) -> float:
        values = []
        for seed in range(20):
            cand, tries = sampler.sample(n, np.random.default_rng(seed))
            loss = sampled_softmax_loss(states, targets, weight, bias, cand, sampler.log_expected_count(cand, tries),
                                        sampler.log_expected_count(targets, tries))
            values.append(loss.mean().item())
        return abs(float(np.mean(values)) - full)

    gaps = [gap(n) for n in (20, 100, 399)]
    assert gaps[0] > gaps[1] > gaps[2]
    assert gaps[2] < 0.01 * full


def test_log_uniform_sampler():
    V = 50
    sampler = LogUniformSampler(V)
    p = sampler.prob(torch.arange(V))
    assert float(p.sum()) == pytest.approx(1.0, abs=1e-12)
    assert bool((p[:-1] > p[1:]).all())  # Zipfian: frequent (low) ids more likely
    # Inclusion frequencies over many samples match the predicted inclusion probabilities. The prediction,
    # 1 - (1 - p)^tries, is TensorFlow's approximation (it ignores that the last draw is always new), hence
    # the tolerance.
    rng = np.random.default_rng(0)
    hits, predicted = np.zeros(V), np.zeros(V)
    for _ in range(2000):
        cand, tries = sampler.sample(10, rng)
        assert len(cand) == 10 and len(set(cand.tolist())) == 10
        hits[cand.numpy()] += 1
        predicted += sampler.log_expected_count(torch.arange(V), tries).exp().numpy()
    np.testing.assert_allclose(hits / 2000, predicted / 2000, atol=0.05)
    assert np.abs(hits - predicted).mean() / 2000 < 0.015
    with pytest.raises(ValueError, match="distinct"):
        sampler.sample(V, rng)


def test_full_softmax_perplexity_by_hand():
    train = [["One two three four. Five six seven eight."] * 5, ["Nine ten one two."] * 5]
    task = make_task(train, [["one two zebra."]], seq_len=16, n_samples=0)
    torch.manual_seed(0)
    torch.nn.init.normal_(task.model.softmax.weight, std=0.5)  # make the output distribution far from uniform
    task.model.eval()
    got = task.evaluate(task.model)

    # The held-out stream is <S> one two zebra . </S>; the one window covers "one two zebra ." (no boundaries
    # inside it), from a zero state. Score it by hand from the model's top layer and the softmax weights.
    words = ["one", "two", "zebra", "."]
    vocab = task.corpus.vocab
    with torch.no_grad():
        out = task.model(torch.tensor([[word_to_char_ids(w) for w in words]]))
        W, b = task.model.softmax.weight, task.model.softmax.bias

        def mean_nll(states, targets):
            total = 0.0
            for s, t in zip(states[0], targets):
                logits = W @ s + b
                total += (torch.log(torch.exp(logits - logits.max()).sum()) + logits.max() - logits[t]).item()
            return total / len(targets)

        fwd = mean_nll(out.forward_layers[-1], vocab.encode(["two", "zebra", ".", "</S>"]))
        bwd = mean_nll(out.backward_layers[-1], vocab.encode(["<S>", "one", "two", "zebra"]))
    assert vocab.id("zebra") == vocab.unk_id  # "zebra" only occurs in held-out text: scored as <UNK>
    assert got["fwd_ppl"] == pytest.approx(math.exp(fwd), rel=1e-5)
    assert got["bwd_ppl"] == pytest.approx(math.exp(bwd), rel=1e-5)
    assert got["ppl"] == pytest.approx(math.exp((fwd + bwd) / 2), rel=1e-5)
    assert got["fwd_ppl"] != pytest.approx(got["bwd_ppl"], rel=1e-3)


def test_loss_ignores_boundary_transitions_and_full_softmax_equals_cross_entropy():
    rng = random.Random(2)
    train = [[generated_paragraph(rng) for _ in range(5)] for _ in range(2)]
    task = make_task(train, [], n_samples=0)
    task.model.eval()  # no dropout: the loss is a deterministic function of the batch
    batch = task.get_batch(0, 0)
    loss, stats = task.loss(task.model, batch)
    assert stats["tokens"] == 4 * 8
    with torch.no_grad():
        out = task.model(batch["char_ids"])
        fwd = F.cross_entropy(task.model.full_softmax_logits(out.forward_layers[-1]).flatten(0, 1),
                              batch["fwd_targets"].flatten(), ignore_index=IGNORE)
        bwd = F.cross_entropy(task.model.full_softmax_logits(out.backward_layers[-1]).flatten(0, 1),
                              batch["bwd_targets"].flatten(), ignore_index=IGNORE)
    assert (batch["fwd_targets"] == IGNORE).any()  # the generated text has sentence boundaries inside windows
    assert loss.item() == pytest.approx(0.5 * (fwd + bwd).item(), rel=1e-5)
    assert stats["fwd_loss"] == pytest.approx(fwd.item(), rel=1e-5)
    assert task.evaluate(task.model) == {}  # no held-out documents: nothing to report


# ----------------------------------------------------------------------------------------------------------
# training


@pytest.mark.slow
def test_training_clearly_lowers_heldout_perplexity(tmp_path):
    corpus = write_corpus(tmp_path / "gen.txt", n_docs=4, paragraphs=60)
    out = tmp_path / "run"
    code = run_cli("--corpus", str(corpus), "--out", str(out), "--preset", "tiny", "--steps", "120",
                   "--lr", "1e-2", "--warmup", "10", "--batch-size", "16", "--seq-len", "20", "--n-samples", "20",
                   "--eval-every", "1000", "--save-every", "1000", "--heldout-docs", "1", "--eval-tokens", "2000")
    assert code == 0
    recs = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    final = [r["eval"] for r in recs if "eval" in r][-1]

    # perplexity of the same untrained model (same seed gives the same initial weights)
    from ctxmodels.training.elmo_data import load_corpus

    run = json.loads((out / "run.json").read_text())["settings"]
    enc, _ = load_corpus(corpus, 1, 0, run["vocab_size"], run["corpus_sha256"], out / "data_cache")
    fresh = ElmoLMTask(enc, tiny_config(), seq_len=20, batch_size=16, n_samples=20, eval_tokens=2000)
    fresh.model.eval()
    before = fresh.evaluate(fresh.model)
    assert before["ppl"] > 30  # about the vocabulary size (~45 words) when untrained
    assert final["fwd_ppl"] < 0.25 * before["fwd_ppl"] and final["bwd_ppl"] < 0.25 * before["bwd_ppl"]

    model = load_elmo(out)  # the result is a loadable ELMo with its LM head and vocabulary
    assert model.has_lm_head and model.vocab == (out / "vocab.txt").read_text().splitlines()
    card = (out / "README.md").read_text()
    assert "gen.txt" in card and "preset `tiny`" in card and "fwd_ppl" in card and "Held-out" in card


def test_cli_resume_equals_uninterrupted_run(tmp_path):
    corpus = write_corpus(tmp_path / "gen.txt", n_docs=3, paragraphs=10)
    common = ["--corpus", str(corpus), "--preset", "tiny", "--steps", "6", "--batch-size", "4", "--seq-len", "8",
              "--n-samples", "10", "--log-every", "1", "--eval-every", "3", "--save-every", "100",
              "--eval-tokens", "200"]
    assert run_cli(*common, "--out", str(tmp_path / "full")) == 0
    # --time-limit stops after the first step with a checkpoint; --resume with no other options (not even the
    # corpus or the bookkeeping: the run stored --log-every 1) continues
    assert run_cli(*common, "--out", str(tmp_path / "cut"), "--time-limit", "1e-6") == 0
    assert max(losses(tmp_path / "cut")) == 1
    assert run_cli("--out", str(tmp_path / "cut"), "--resume") == 0
    full, cut = losses(tmp_path / "full"), losses(tmp_path / "cut")
    assert sorted(full) == sorted(cut) == list(range(1, 7))
    for step in full:
        assert cut[step] == pytest.approx(full[step], abs=1e-6)
    a, b = (load_tensors(tmp_path / name / "model.safetensors") for name in ("full", "cut"))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    # the encoded corpus was cached, and reused on resume
    assert (tmp_path / "cut" / "data_cache" / "key.json").is_file()


def test_stop_at_pauses_on_the_full_schedule_and_resumes_exactly(tmp_path, capsys):
    """--stop-at N stops at step N with a checkpoint while the learning rate follows --steps' schedule, so a resume
    replays the uninterrupted run; a run already at N is told so."""
    corpus = write_corpus(tmp_path / "gen.txt", n_docs=3, paragraphs=10)
    common = ["--corpus", str(corpus), "--preset", "tiny", "--steps", "6", "--batch-size", "4", "--seq-len", "8",
              "--n-samples", "10", "--log-every", "1", "--eval-every", "0", "--save-every", "100",
              "--eval-tokens", "200"]
    assert run_cli(*common, "--out", str(tmp_path / "full")) == 0
    capsys.readouterr()
    assert run_cli(*common, "--out", str(tmp_path / "cut"), "--stop-at", "3") == 0
    out = capsys.readouterr().out
    assert "stopped at step 3 of 6" in out and "--resume" in out and "done:" not in out
    assert max(losses(tmp_path / "cut")) == 3
    records = {name: [json.loads(line) for line in (tmp_path / name / "metrics.jsonl").read_text().splitlines()]
               for name in ("full", "cut")}
    lrs = {name: {r["step"]: r["lr"] for r in recs if "lr" in r} for name, recs in records.items()}
    assert [lrs["cut"][s] for s in (1, 2, 3)] == [lrs["full"][s] for s in (1, 2, 3)]  # the 6-step schedule
    assert run_cli("--out", str(tmp_path / "cut"), "--resume", "--stop-at", "2") == 2
    assert "already at step 3; give --stop-at above it" in capsys.readouterr().err
    assert run_cli("--out", str(tmp_path / "cut"), "--resume") == 0
    full, cut = losses(tmp_path / "full"), losses(tmp_path / "cut")
    assert sorted(cut) == list(range(1, 7)) and all(cut[s] == pytest.approx(full[s], abs=1e-6) for s in full)
    a, b = (load_tensors(tmp_path / name / "model.safetensors") for name in ("full", "cut"))
    assert all(torch.equal(a[k], b[k]) for k in a)
    # --stop-at on the last step (or beyond it) is a finished run: evaluated, with a "done" event
    capsys.readouterr()
    assert run_cli(*common, "--out", str(tmp_path / "last"), "--stop-at", "6") == 0
    assert "done: 6 steps" in capsys.readouterr().out
    events = [json.loads(line).get("event") for line in (tmp_path / "last" / "metrics.jsonl").read_text().splitlines()]
    assert events[-1] == "done" and "stop_at" not in events


def test_cli_refuses_conflicting_resume_and_overwriting(tmp_path, capsys):
    corpus = write_corpus(tmp_path / "gen.txt", n_docs=3, paragraphs=10)
    out = tmp_path / "run"
    common = ["--corpus", str(corpus), "--out", str(out), "--preset", "tiny", "--batch-size", "4", "--seq-len", "8",
              "--n-samples", "10", "--eval-tokens", "100"]
    assert run_cli(*common, "--steps", "2") == 0
    capsys.readouterr()
    assert run_cli(*common, "--steps", "2") == 2  # no --resume: refuses to overwrite the run
    assert "--resume" in capsys.readouterr().err
    assert run_cli(*common, "--steps", "4", "--seq-len", "16", "--resume") == 2
    err = capsys.readouterr().err
    assert "--seq-len 16 (the run used 8)" in err and "--steps" not in err  # more steps may be asked for
    assert run_cli(*common, "--steps", "4", "--resume", "--log-every", "1") == 0  # extends the run to 4 steps
    assert max(losses(out)) == 4 and json.loads((out / "run.json").read_text())["settings"]["steps"] == 4
    assert run_cli("--corpus", str(corpus), "--out", str(tmp_path / "new"), "--resume") == 2
    assert "run.json: not found, so there is no ELMo run to resume" in capsys.readouterr().err
    corpus.write_text(corpus.read_text() + "\nMore text.\n")
    assert run_cli("--corpus", str(corpus), "--out", str(out), "--resume") == 2
    assert "corpus changed" in capsys.readouterr().err


def test_init_from_continues_a_trained_model_with_its_vocabulary(tmp_path, capsys):
    corpus = write_corpus(tmp_path / "gen.txt", n_docs=3, paragraphs=10)
    common = ["--corpus", str(corpus), "--batch-size", "4", "--seq-len", "8", "--n-samples", "10",
              "--eval-tokens", "200", "--eval-every", "0"]
    assert run_cli(*common, "--out", str(tmp_path / "first"), "--preset", "tiny", "--vocab-size", "40",
                   "--steps", "3") == 0
    first = load_elmo(tmp_path / "first")
    # A learning rate too small to move the weights: the continued run starts exactly where the first ended.
    assert run_cli(*common, "--out", str(tmp_path / "next"), "--init-from", str(tmp_path / "first"),
                   "--lr", "1e-12", "--warmup", "0", "--steps", "1") == 0
    after = load_elmo(tmp_path / "next")
    assert after.vocab == first.vocab  # the start's vocabulary, not a new one
    a, b = first.state_dict(), after.state_dict()
    assert all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)
    first_ppl = json.loads((tmp_path / "first" / "metrics.jsonl").read_text().splitlines()[-1])["eval"]["ppl"]
    next_ppl = json.loads((tmp_path / "next" / "metrics.jsonl").read_text().splitlines()[-1])["eval"]["ppl"]
    assert next_ppl == pytest.approx(first_ppl, rel=1e-4)
    settings = json.loads((tmp_path / "next" / "run.json").read_text())["settings"]
    assert settings["vocab_size"] == len(first.vocab) - 3
    assert settings["init_from"] == str((tmp_path / "first").resolve())
    card = (tmp_path / "next" / "README.md").read_text()
    assert f"Initial weights: `{(tmp_path / 'first').resolve()}`" in card and "at the starting model's size" in card
    # it resumes (the start may be gone by then: the run's checkpoint has the size and vocabulary)
    (tmp_path / "first").rename(tmp_path / "moved")
    assert run_cli("--out", str(tmp_path / "next"), "--resume", "--steps", "2") == 0
    assert max(losses(tmp_path / "next")) == 2
    capsys.readouterr()
    # a size or vocabulary that is not the start's is refused with what to do
    assert run_cli(*common, "--out", str(tmp_path / "bad1"), "--init-from", str(tmp_path / "moved"),
                   "--preset", "mini") == 2
    assert "does not fit --preset mini" in capsys.readouterr().err
    assert run_cli(*common, "--out", str(tmp_path / "bad2"), "--init-from", str(tmp_path / "moved"),
                   "--vocab-size", "30") == 2
    assert "leave --vocab-size out" in capsys.readouterr().err
    assert run_cli(*common, "--out", str(tmp_path / "bad3"), "--init-from", str(tmp_path / "nowhere")) == 2
    assert "nowhere" in capsys.readouterr().err
    # a new training order for the continuation: stored, named in the card, fixed on --resume
    assert run_cli(*common, "--out", str(tmp_path / "reordered"), "--init-from", str(tmp_path / "moved"),
                   "--data-seed", "7", "--steps", "1") == 0
    assert json.loads((tmp_path / "reordered" / "run.json").read_text())["settings"]["data_seed"] == 7
    assert "Training order: `--data-seed 7`" in (tmp_path / "reordered" / "README.md").read_text()
    capsys.readouterr()
    assert run_cli("--out", str(tmp_path / "reordered"), "--resume", "--data-seed", "8", "--steps", "2") == 2
    assert "data-seed" in capsys.readouterr().err


def test_dropout_option_is_the_runs_own_and_is_trained_with(tmp_path, capsys):
    corpus = write_corpus(tmp_path / "gen.txt", n_docs=3, paragraphs=10)
    common = ["--corpus", str(corpus), "--batch-size", "4", "--seq-len", "8", "--n-samples", "10",
              "--eval-tokens", "200", "--eval-every", "0", "--steps", "1"]
    assert run_cli(*common, "--out", str(tmp_path / "first"), "--preset", "tiny", "--vocab-size", "40") == 0
    assert load_elmo(tmp_path / "first").config.dropout == 0.1  # the default, as every preset
    # the continuation's dropout replaces the start's: in the task, the saved config, run.json and the card
    cont = [*common, "--init-from", str(tmp_path / "first")]
    parser = argparse.ArgumentParser()
    add_kind_arguments(parser, "elmo")
    for p, same in ((0.0, True), (0.5, False)):  # in training mode, only dropout makes one batch's loss vary
        task, _ = build(parser.parse_args([*cont, "--dropout", str(p), "--out", str(tmp_path / f"built{p}")]))
        assert task.model.config.dropout == p and task.config.dropout == p
        task.model.train()
        batch = task.get_batch(0, 0)
        with torch.no_grad():
            a, b = (task.loss(task.model, batch)[0].item() for _ in range(2))
        assert (a == b) is same
    assert run_cli(*cont, "--dropout", "0", "--out", str(tmp_path / "d0")) == 0
    assert load_elmo(tmp_path / "d0").config.dropout == 0
    assert json.loads((tmp_path / "d0" / "run.json").read_text())["settings"]["dropout"] == 0
    assert "dropout\n0." in (tmp_path / "d0" / "README.md").read_text()
    # a run from that model without the option trains with the default again, not with the start's 0
    assert run_cli(*common, "--out", str(tmp_path / "back"), "--init-from", str(tmp_path / "d0")) == 0
    assert load_elmo(tmp_path / "back").config.dropout == 0.1
    capsys.readouterr()
    assert run_cli(*common, "--out", str(tmp_path / "bad"), "--preset", "tiny", "--dropout", "1") == 2
    assert "--dropout" in capsys.readouterr().err


def test_add_text_trains_on_more_documents_and_keeps_the_heldout_split(tmp_path, capsys):
    corpus = write_corpus(tmp_path / "gen.txt", n_docs=3, paragraphs=10)
    added = tmp_path / "added.txt"
    added.write_text("Zebras graze by the river.\nThe river floods its banks.\n\nAnother added document.\n",
                     encoding="utf-8")
    alone, _ = load_corpus(corpus, None, 0, 100, "x", None)
    more, info = load_corpus(corpus, None, 0, 100, "x", None, add_text=added, add_text_sha="y")
    assert [alone.types[t] for t in alone.heldout] == [more.types[t] for t in more.heldout]  # held out: the same
    assert len(more.train) == len(alone.train) + 3 * 2 + 6 + 6 + 4  # the added sentences, each in <S> ... </S>
    assert "Zebras" in more.vocab and info["added_documents"] == 2
    common = ["--corpus", str(corpus), "--preset", "tiny", "--batch-size", "4", "--seq-len", "8", "--n-samples", "10",
              "--eval-tokens", "100", "--eval-every", "0", "--steps", "1"]
    out = tmp_path / "run"
    assert run_cli(*common, "--add-text", str(added), "--out", str(out)) == 0
    assert "with the 2 documents of `added.txt`" in (out / "README.md").read_text()
    capsys.readouterr()
    added.write_text("Changed.\n", encoding="utf-8")
    assert run_cli("--out", str(out), "--resume", "--steps", "2") == 2
    assert "added text changed since this run started" in capsys.readouterr().err
    # added text cannot join (or leave) a run that started without it (or with it)
    assert run_cli(*common, "--out", str(tmp_path / "plain")) == 0
    capsys.readouterr()
    assert run_cli("--out", str(tmp_path / "plain"), "--resume", "--steps", "2", "--add-text", str(added)) == 2
    assert "--add-text" in capsys.readouterr().err


def test_a_run_started_before_run_json_resumes_from_elmo_run_json(tmp_path, capsys):
    corpus = write_corpus(tmp_path / "gen.txt", n_docs=3, paragraphs=10)
    out = tmp_path / "run"
    assert run_cli("--corpus", str(corpus), "--out", str(out), "--preset", "tiny", "--steps", "3", "--batch-size", "4",
                   "--seq-len", "8", "--n-samples", "10", "--eval-tokens", "100", "--time-limit", "1e-6") == 0
    # the older file: the settings, flat, with the held-out count left to the default
    settings = json.loads((out / "run.json").read_text())["settings"]
    old = {k: settings[k] for k in ("preset", "vocab_size", "seq_len", "batch_size", "n_samples", "eval_tokens", "seed",
                                    "steps", "lr", "warmup", "weight_decay", "bf16", "corpus", "corpus_sha256")}
    (out / "elmo_run.json").write_text(json.dumps({**old, "heldout_docs": None}))
    (out / "run.json").unlink()
    capsys.readouterr()
    assert run_cli("--out", str(out), "--resume", "--seq-len", "16") == 2
    assert "--seq-len 16 (the run used 8)" in capsys.readouterr().err
    assert run_cli("--out", str(out), "--resume", "--log-every", "1") == 0
    assert max(losses(out)) == 3
    assert json.loads((out / "run.json").read_text())["settings"]["heldout_docs"] == 1


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "empty"),
        ("Just one line of text.\n", "leaves none to train on"),
        ("A short document.\n\nAnother one.\n", "too few for one batch"),
    ],
)
def test_cli_bad_corpus_gives_clear_error(tmp_path, capsys, text, message):
    corpus = tmp_path / "bad.txt"
    corpus.write_text(text, encoding="utf-8")
    assert run_cli("--corpus", str(corpus), "--out", str(tmp_path / "out"), "--preset", "tiny") == 2
    assert message in capsys.readouterr().err


def test_cli_missing_corpus_and_bad_sizes(tmp_path, capsys):
    assert run_cli("--corpus", str(tmp_path / "nope.txt"), "--out", str(tmp_path / "o")) == 2
    assert "not found" in capsys.readouterr().err
    corpus = write_corpus(tmp_path / "gen.txt", n_docs=2, paragraphs=5)
    assert run_cli("--corpus", str(corpus), "--out", str(tmp_path / "o"), "--seq-len", "0") == 2
    assert "argument --seq-len: must be a whole number between 1 and 1024, got 0" in capsys.readouterr().err


def test_long_sentences_emoji_and_long_words_train_and_evaluate(tmp_path):
    rng = random.Random(3)
    long_sentence = " ".join(rng.choice(NOUNS + ADJS) for _ in range(2000))
    odd = "Emoji 👍🏽 and ❤ here, café naïve Zürich, " + "x" * 100 + " and " + "é" * 60 + "."
    train = [[long_sentence, odd], [generated_paragraph(rng) for _ in range(10)]]
    task = make_task(train, [[odd, long_sentence]], seq_len=16, batch_size=4)
    assert any(len(t) == 100 for t in task.corpus.types)
    loss, _ = task.loss(task.model, task.get_batch(0, 0))
    assert torch.isfinite(loss)
    loss.backward()
    metrics = task.evaluate(task.model)
    assert all(math.isfinite(v) and v > 1 for v in metrics.values())


@pytest.mark.slow
def test_two_process_training_keeps_ranks_identical(tmp_path):
    """build_task under torchrun; the shared softmax is used outside the model's forward, so this also checks
    that DDP still averages its gradients (identical weights on both ranks afterwards)."""
    import os
    import subprocess
    import sys

    from tests.helpers import RANK_SCRIPT  # reports a hash of each rank's final weights

    corpus = write_corpus(tmp_path / "gen.txt", n_docs=3, paragraphs=10)
    script = tmp_path / "rank.py"
    script.write_text(RANK_SCRIPT)
    env = dict(os.environ, HASH_DIR=str(tmp_path), OMP_NUM_THREADS="1")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", str(script),
           "train", "elmo", "--corpus", str(corpus), "--out", str(tmp_path / "run"), "--preset", "tiny",
           "--steps", "3", "--batch-size", "4", "--seq-len", "8", "--n-samples", "10", "--lr", "1e-2",
           "--warmup", "1", "--eval-tokens", "100", "--no-progress"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    reports = [(tmp_path / f"rank{r}.txt").read_text().split() for r in range(2)]
    assert reports[0] == reports[1] and reports[0][0] == "2"
    assert load_elmo(tmp_path / "run").has_lm_head
