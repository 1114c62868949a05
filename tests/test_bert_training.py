"""BERT pre-training: masking, next-sentence pairs, determinism, learning, exact resume, bad input, the CLI."""

from __future__ import annotations

import argparse
import json
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from ctxmodels import cli
from ctxmodels.commands.train import add_kind_arguments, build
from ctxmodels.training.bert_corpus import TokenizedDocuments, split_sentences, tokenize_documents
from ctxmodels.training.bert_data import PretrainingData, VocabInfo, collate, mask_tokens
from ctxmodels.training.bert_task import BertSettings
from ctxmodels.training.trainer import Trainer
from tests.helpers import synthetic_corpus

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
PAD, UNK, CLS, SEP, MASK = range(5)


# ----------------------------------------------------------------------------------------------------------
# helpers


def unique_corpus(n_docs: int = 20, n_sents: int = 40, seed: int = 0, lengths=(3, 15)):
    """Token ids that are unique across the corpus and consecutive within a document, so an example's tokens
    say which document and which place they came from."""
    rng = np.random.default_rng(seed)
    docs, next_id, doc_first = [], len(SPECIALS), []
    for _ in range(n_docs):
        doc_first.append(next_id)
        sents = []
        for _ in range(n_sents):
            n = int(rng.integers(*lengths))
            sents.append(list(range(next_id, next_id + n)))
            next_id += n
        docs.append(sents)
    vocab = VocabInfo.from_tokens(SPECIALS + [f"t{i}" for i in range(len(SPECIALS), next_id)])
    return TokenizedDocuments.from_lists(docs), vocab, np.asarray(doc_first)


def original_ids(ex) -> np.ndarray:
    ids = ex.input_ids.copy()
    ids[ex.positions] = ex.labels
    return ids


def segments(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    seps = np.flatnonzero(ids == SEP)
    assert ids[0] == CLS and len(seps) == 2 and seps[1] == len(ids) - 1
    return ids[1 : seps[0]], ids[seps[0] + 1 : -1]


def parse_bert_args(argv: list[str]) -> argparse.Namespace:
    """The arguments `ctxmodels train bert` would parse, for building the task with `build`."""
    p = argparse.ArgumentParser()
    add_kind_arguments(p, "bert")
    return p.parse_args(argv)


def losses(out: Path) -> dict[int, float]:
    recs = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    return {r["step"]: r["loss"] for r in recs if "loss" in r}


def run_cli(argv: list[str], capsys) -> tuple[int, str]:
    rc = cli.main(argv)
    return rc, capsys.readouterr().err


@pytest.fixture(scope="module")
def corpus_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("corpus") / "synthetic.txt"
    path.write_text(synthetic_corpus(), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory, corpus_file) -> Path:
    from ctxmodels.text import read_documents
    from ctxmodels.tokenization import WordPieceTokenizer

    out = tmp_path_factory.mktemp("tokenizer")
    texts = [p for d in read_documents(corpus_file) for p in d]
    WordPieceTokenizer.train(texts, vocab_size=150).save(out)
    return out


# One thread: on a machine shared with other jobs, two OpenMP threads can be ten times slower than one.
TINY = ["--preset", "tiny", "--max-seq-len", "32", "--batch-size", "8", "--eval-sequences", "8",
        "--no-progress", "--threads", "1"]


@pytest.fixture(autouse=True)
def _restore_torch_threads():
    """`--threads` sets torch's global thread count; give other tests theirs back."""
    n = torch.get_num_threads()
    yield
    torch.set_num_threads(n)


# ----------------------------------------------------------------------------------------------------------
# masking


def _random_sequences(n: int, rng: np.random.Generator, vocab_size: int):
    for _ in range(n):
        length = int(rng.integers(20, 128))
        ids = rng.integers(len(SPECIALS), vocab_size, size=length)
        ids[0], ids[length // 2], ids[-1] = CLS, SEP, SEP
        yield ids


def test_masking_statistics_on_a_large_sample():
    vocab = VocabInfo.from_tokens(SPECIALS + [f"w{i}" for i in range(995)])
    rng = np.random.default_rng(0)
    chosen = candidates = to_mask = to_random = kept = 0
    for ids in _random_sequences(4000, rng, vocab.size):
        maskable = ids > MASK
        out, pos, labels = mask_tokens(ids, maskable, rng, vocab, max_predictions=1000)
        n_cand = int(maskable.sum())
        assert len(pos) == max(1, int(n_cand * 0.15 + 0.5))
        assert maskable[pos].all(), "special tokens are never chosen"
        assert (labels == ids[pos]).all() and (np.diff(pos) > 0).all()
        untouched = np.ones(len(ids), bool)
        untouched[pos] = False
        assert (out[untouched] == ids[untouched]).all()
        chosen += len(pos)
        candidates += n_cand
        to_mask += int((out[pos] == MASK).sum())
        kept += int((out[pos] == ids[pos]).sum())
        to_random += int(((out[pos] != MASK) & (out[pos] != ids[pos])).sum())
        assert out[pos][out[pos] != MASK].min(initial=99) > MASK, "random replacements are never specials"
    assert chosen / candidates == pytest.approx(0.15, abs=0.003)
    assert to_mask / chosen == pytest.approx(0.8, abs=0.01)
    assert to_random / chosen == pytest.approx(0.1, abs=0.008)
    assert kept / chosen == pytest.approx(0.1, abs=0.008)


def test_cap_on_predictions_per_sequence():
    vocab = VocabInfo.from_tokens(SPECIALS + [f"w{i}" for i in range(95)])
    rng = np.random.default_rng(1)
    for ids in _random_sequences(500, rng, vocab.size):
        maskable = ids > MASK
        _, pos, _ = mask_tokens(ids, maskable, rng, vocab, max_predictions=5)
        assert len(pos) == min(5, max(1, int(maskable.sum() * 0.15 + 0.5)))


def test_whole_word_masking_masks_whole_words():
    # ids 5..54 start words, 55..104 are "##" continuations
    tokens = SPECIALS + [f"w{i}" for i in range(50)] + [f"##c{i}" for i in range(50)]
    vocab = VocabInfo.from_tokens(tokens)
    rng = np.random.default_rng(2)
    chosen = candidates = 0
    for _ in range(1000):
        words = [[int(rng.integers(5, 55))] + list(rng.integers(55, 105, size=int(rng.integers(0, 3))))
                 for _ in range(int(rng.integers(10, 60)))]
        ids = np.array([CLS] + [p for w in words for p in w] + [SEP])
        maskable = ids > MASK
        out, pos, _ = mask_tokens(ids, maskable, rng, vocab, max_predictions=20, word_start=~vocab.continuation[ids])
        n_pred = min(20, max(1, int(maskable.sum() * 0.15 + 0.5)))
        assert len(pos) <= n_pred and maskable[pos].all()
        picked = np.zeros(len(ids), bool)
        picked[pos] = True
        start = 1
        for w in words:
            span = picked[start : start + len(w)]
            assert span.all() or not span.any(), "a word is masked whole or not at all"
            start += len(w)
        chosen += len(pos)
        candidates += int(maskable.sum())
    assert chosen / candidates == pytest.approx(0.15, abs=0.01)


def test_whole_word_masking_in_built_examples():
    docs, vocab, _ = unique_corpus(n_docs=6, n_sents=30)
    vocab.continuation[len(SPECIALS) :: 3] = True  # every third id continues a word
    data = PretrainingData(docs, vocab, max_seq_len=48, max_predictions=7, batch_size=16, whole_word_masking=True)
    for index in range(data.num_batches):
        for ex in data.examples(0, index):
            ids = original_ids(ex)
            picked = np.zeros(len(ids), bool)
            picked[ex.positions] = True
            real = (ids != CLS) & (ids != SEP)
            word_start = ~vocab.continuation[ids] | ~np.roll(real, 1)
            word = np.cumsum(word_start | ~real)
            for w in np.unique(word[real]):
                span = picked[(word == w) & real]
                assert span.all() or not span.any()
            assert len(ex.positions) <= 7 and not picked[~real].any()


# ----------------------------------------------------------------------------------------------------------
# next-sentence pairs and packing


def test_nsp_pairs_are_half_random_and_random_segments_come_from_another_document():
    docs, vocab, doc_first = unique_corpus()
    data = PretrainingData(docs, vocab, max_seq_len=32, max_predictions=5, batch_size=32)
    doc_of = lambda ids: np.searchsorted(doc_first, ids, side="right") - 1  # noqa: E731
    n_random = n = 0
    for epoch in range(4):
        for index in range(data.num_batches):
            for ex in data.examples(epoch, index):
                ids = original_ids(ex)
                assert len(ids) <= 32
                a, b = segments(ids)
                assert len(a) and len(b)
                assert (ex.token_type_ids == (np.arange(len(ids)) > len(a) + 1)).all()
                assert (np.diff(a) == 1).all() and (np.diff(b) == 1).all(), "segments are consecutive text"
                assert len(set(doc_of(a))) == 1 and len(set(doc_of(b))) == 1
                if ex.is_random_next:
                    assert doc_of(b)[0] != doc_of(a)[0], "a random segment comes from another document"
                else:
                    assert b[0] == a[-1] + 1, "the true next segment continues A"
                n_random += ex.is_random_next
                n += 1
    assert n > 800
    assert n_random / n == pytest.approx(0.5, abs=0.05)


def test_sequences_are_packed_up_to_the_maximum_length():
    docs, vocab, _ = unique_corpus(n_docs=5, n_sents=300, lengths=(3, 8))
    data = PretrainingData(docs, vocab, max_seq_len=64, max_predictions=10, batch_size=32)
    lengths = [len(ex.input_ids) for i in range(data.num_batches) for ex in data.examples(0, i)]
    # Most sequences come close to the limit (sentences are 3-7 tokens, so a chunk stops at most 6 short);
    # about 10% get a shorter random target, as in BERT, and a document's last chunk may be short.
    assert max(lengths) <= 64
    assert np.mean(np.array(lengths) >= 64 - 7) > 0.75


def test_masks_are_fresh_each_epoch_and_reproducible():
    docs, vocab, _ = unique_corpus(n_docs=8)
    make = lambda seed=0: PretrainingData(docs, vocab, max_seq_len=48, max_predictions=7,  # noqa: E731
                                          batch_size=16, seed=seed)
    a, b = make(), make()
    for epoch, index in [(0, 0), (0, 3), (2, 1)]:
        x, y = a.batch(epoch, index), b.batch(epoch, index)
        assert x.keys() == y.keys() and all(torch.equal(x[k], y[k]) for k in x)
    assert not torch.equal(a.batch(0, 0)["input_ids"], make(seed=1).batch(0, 0)["input_ids"][: len(a.batch(0, 0))])

    def masks(epoch: int) -> dict[int, tuple]:
        return {ex.chunk: tuple(original_ids(ex)[ex.positions]) + tuple(ex.positions)
                for i in range(a.num_batches) for ex in a.examples(epoch, i)}

    m0, m1 = masks(0), masks(1)
    assert sorted(m0) == sorted(m1) == list(range(a.num_chunks)), "every chunk once per epoch"
    same = sum(m0[c] == m1[c] for c in m0)
    assert same < 0.1 * len(m0), "masks (and pair splits) are drawn afresh each epoch"
    assert not np.array_equal(a.epoch_order(0), a.epoch_order(1))
    # --data-seed: another order and other masks, the same sequences and the same fixed evaluation set
    c = PretrainingData(docs, vocab, max_seq_len=48, max_predictions=7, batch_size=16, seed=0, data_seed=3)
    assert not np.array_equal(a.epoch_order(0), c.epoch_order(0))
    assert sorted(c.epoch_order(0)) == sorted(a.epoch_order(0)) and np.array_equal(c.chunks, a.chunks)
    assert all(torch.equal(x[k], y[k]) for x, y in zip(a.fixed_batches(20, 8), c.fixed_batches(20, 8)) for k in x)


def test_over_long_sentence_is_truncated_with_a_warning():
    docs = TokenizedDocuments.from_lists([
        [list(range(5, 505)), [7, 8, 9]],  # a 500-token sentence
        [[10, 11, 12, 13], [14, 15]],
        [list(range(20, 90))],
    ])
    vocab = VocabInfo.from_tokens(SPECIALS + [f"t{i}" for i in range(5, 505)])
    with pytest.warns(UserWarning, match="2 sentence\\(s\\) longer than 29 tokens will be truncated"):
        data = PretrainingData(docs, vocab, max_seq_len=32, max_predictions=5, batch_size=2)
    for epoch in range(5):
        for index in range(data.num_batches):
            batch = data.batch(epoch, index)
            assert batch["input_ids"].shape[1] <= 32
            assert int(batch["mlm_positions"].max()) < batch["input_ids"].shape[1]


def test_too_few_documents_for_nsp_is_a_clear_error():
    docs = TokenizedDocuments.from_lists([[[5, 6, 7], [8, 9]]])
    vocab = VocabInfo.from_tokens(SPECIALS + [f"t{i}" for i in range(5, 10)])
    with pytest.raises(ValueError, match="at least 2 documents.*blank lines"):
        PretrainingData(docs, vocab, max_seq_len=16)
    # a held-out set with one document draws its random segments from another pool
    pool = TokenizedDocuments.from_lists([[[5, 6]], [[7, 8, 9]]])
    data = PretrainingData(docs, vocab, max_seq_len=16, random_pool=pool, batch_size=4)
    assert len(data.fixed_batches(4, 2)) == 1


def test_collate_pads_predictions_with_ignore_index():
    docs, vocab, _ = unique_corpus(n_docs=4, n_sents=10)
    data = PretrainingData(docs, vocab, max_seq_len=40, max_predictions=6, batch_size=8)
    examples = data.examples(0, 0)
    batch = collate(examples, PAD)
    B, T = batch["input_ids"].shape
    assert B == len(examples) and T == max(len(e.input_ids) for e in examples)
    for i, e in enumerate(examples):
        n, p = len(e.input_ids), len(e.positions)
        assert batch["attention_mask"][i].sum() == n and (batch["input_ids"][i, n:] == PAD).all()
        assert (batch["mlm_labels"][i, p:] == -100).all() and (batch["mlm_positions"][i, p:] == 0).all()
        assert (batch["mlm_labels"][i, :p].numpy() == e.labels).all()
    assert batch["next_sentence_label"].tolist() == [int(e.is_random_next) for e in examples]


def test_fixed_eval_set_is_identical_every_time():
    docs, vocab, _ = unique_corpus(n_docs=4, n_sents=40)
    data = PretrainingData(docs, vocab, max_seq_len=40, max_predictions=6, batch_size=8)
    assert data.num_chunks > 20
    first, again = data.fixed_batches(20, 8), data.fixed_batches(20, 8)
    assert [b["input_ids"].shape[0] for b in first] == [8, 8, 4]
    assert all(torch.equal(x[k], y[k]) for x, y in zip(first, again) for k in x)


# ----------------------------------------------------------------------------------------------------------
# sentences and tokenisation


def test_split_sentences():
    text = 'Mr. Smith came in. "Who are you?" she asked. He left! 3 days later, Dr. Watson... came. end'
    assert split_sentences(text) == [
        "Mr. Smith came in.", '"Who are you?" she asked.', "He left!", "3 days later, Dr. Watson... came. end"
    ]
    assert split_sentences("He came. Mr. Brown left. (Mrs. Brown stayed.) St. Ives.") == [
        "He came.", "Mr. Brown left.", "(Mrs. Brown stayed.)", "St. Ives."
    ]
    assert split_sentences("   ") == []


def test_tokenize_documents_keeps_document_and_sentence_boundaries():
    def encode(texts):  # a stand-in tokenizer: one id per word, punctuation-only sentences give nothing
        return [[len(w) + 5 for w in t.split() if w.strip(".!?")] for t in texts]

    docs = [["One two. Three four five.", "Six."], ["!!!"], ["Seven eight nine ten."]]
    tok = tokenize_documents(docs, encode, batch_sentences=2)
    assert tok.n_docs == 3 and tok.n_sentences == 4
    assert tok.doc_offsets.tolist() == [0, 3, 3, 4]
    assert tok.sentence_lengths().tolist() == [2, 3, 1, 4]
    assert tok.sentence(1).tolist() == [10, 9, 10]


# ----------------------------------------------------------------------------------------------------------
# the command line and the trainer


def test_cli_trains_end_to_end_and_writes_a_loadable_model(tmp_path, corpus_file, capsys):
    from ctxmodels.formats.huggingface import load_bert

    out = tmp_path / "run"
    rc, err = run_cli(["train", "bert", "--corpus", str(corpus_file), "--out", str(out), "--vocab-size", "150",
                       "--steps", "4", "--log-every", "1", *TINY], capsys)
    assert rc == 0, err
    for name in ("config.json", "model.safetensors", "vocab.txt", "tokenizer.json", "README.md",
                 "run.json", "data/meta.json", "checkpoint/trainer_state.pt"):
        assert (out / name).is_file(), name
    recs = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in recs if "loss" in r]
    assert [r["step"] for r in steps] == [1, 2, 3, 4]
    assert all(r["loss"] == pytest.approx(r["mlm_loss"] + r["nsp_loss"], rel=1e-5) for r in steps)
    final = [r["eval"] for r in recs if "eval" in r][-1]
    assert set(final) == {"mlm_loss", "mlm_perplexity", "mlm_accuracy", "mlm_top5_accuracy", "nsp_accuracy"}
    assert final["mlm_perplexity"] == pytest.approx(np.exp(final["mlm_loss"]))
    card = (out / "README.md").read_text()
    assert "synthetic.txt" in card and "held-out documents" in card and "mlm_accuracy" in card
    assert "tiny: 2 layers, hidden 128" in card and "WordPiece trained on the 10 training documents" in card

    model, tok = load_bert(out)
    assert tok.vocab_size == model.config.vocab_size == json.loads((out / "config.json").read_text())["vocab_size"]
    assert model.config.num_hidden_layers == 2 and model.has_mlm_head and model.has_nsp_head

    # the same --out again without --resume is refused before anything is overwritten
    args_before = (out / "run.json").read_text()
    rc, err = run_cli(["train", "bert", "--corpus", str(corpus_file), "--out", str(out), "--steps", "9", *TINY],
                      capsys)
    assert rc == 2 and "already holds a training run" in err
    assert (out / "run.json").read_text() == args_before


def test_interrupted_run_resumes_with_identical_losses(tmp_path, corpus_file, tokenizer_dir, capsys):
    common = ["train", "bert", "--corpus", str(corpus_file), "--tokenizer", str(tokenizer_dir), "--steps", "8",
              "--log-every", "1", "--eval-every", "3", *TINY]
    full, part = tmp_path / "full", tmp_path / "part"
    assert run_cli([*common, "--out", str(full)], capsys)[0] == 0
    # --time-limit 0 stops cleanly (with a checkpoint) after the first step
    assert run_cli([*common, "--out", str(part), "--time-limit", "0"], capsys)[0] == 0
    assert max(losses(part)) == 1
    # resume needs no repeated settings; changing one is refused
    rc, err = run_cli(["train", "bert", "--corpus", str(corpus_file), "--out", str(part), "--resume",
                       "--batch-size", "4", "--seed", "3"], capsys)
    assert rc == 2 and "--batch-size 4 (the run used 8)" in err and "--seed 3 (the run used 0)" in err
    # nothing but --out: the corpus, model and schedule come from the run's run.json
    rc, err = run_cli(["train", "bert", "--out", str(part), "--resume", "--no-progress", "--threads", "1"], capsys)
    assert rc == 0, err
    assert "tokenising" not in err, "resume reuses the cached pre-training data"
    a, b = losses(full), losses(part)
    assert sorted(a) == sorted(b) == list(range(1, 9))
    for step in a:
        assert b[step] == pytest.approx(a[step], abs=1e-6), step


def test_resume_with_more_steps_extends_the_run(tmp_path, corpus_file, tokenizer_dir, capsys):
    """--steps on --resume moves the end: the steps already taken stay, the learning-rate decay stretches."""
    out = tmp_path / "run"
    common = ["train", "bert", "--corpus", str(corpus_file), "--tokenizer", str(tokenizer_dir), "--log-every", "1",
              "--eval-every", "0", "--out", str(out), *TINY]
    assert run_cli([*common, "--steps", "4"], capsys)[0] == 0
    first = losses(out)
    rc, err = run_cli(["train", "bert", "--corpus", str(corpus_file), "--out", str(out), "--resume", "--steps", "8",
                       "--log-every", "1"], capsys)
    assert rc == 0, err
    after = losses(out)
    assert sorted(after) == list(range(1, 9))
    assert all(after[s] == first[s] for s in first), "the steps already taken are kept as they were"
    assert json.loads((out / "run.json").read_text())["settings"]["steps"] == 8
    recs = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    lrs = [r["lr"] for r in recs if "lr" in r and r["step"] > 4]
    # (the lr logged at a step is the next step's) decaying after step 4 (where the short run ended at 0), to 0 at 8
    assert lrs[0] > 0 and lrs[-1] == 0 and all(a > b for a, b in zip(lrs, lrs[1:])), lrs


def test_a_run_started_before_run_json_resumes_from_train_args_json(tmp_path, corpus_file, tokenizer_dir, capsys):
    out = tmp_path / "run"
    assert run_cli(["train", "bert", "--corpus", str(corpus_file), "--tokenizer", str(tokenizer_dir), "--steps", "3",
                    "--log-every", "1", "--out", str(out), "--time-limit", "0", *TINY], capsys)[0] == 0
    stored = json.loads((out / "run.json").read_text())
    del stored["settings"]["corpus_sha256"]  # the older file did not record it
    (out / "train_args.json").write_text(json.dumps(stored))
    (out / "run.json").unlink()
    rc, err = run_cli(["train", "bert", "--out", str(out), "--resume", "--preset", "mini"], capsys)
    assert rc == 2 and "--preset mini (the run used tiny)" in err
    rc, err = run_cli(["train", "bert", "--out", str(out), "--resume", "--no-progress", "--threads", "1"], capsys)
    assert rc == 0, err
    assert max(losses(out)) == 3
    assert json.loads((out / "run.json").read_text())["settings"]["max_seq_len"] == 32


def test_resume_without_a_run_is_a_clear_error(tmp_path, corpus_file, capsys):
    rc, err = run_cli(["train", "bert", "--corpus", str(corpus_file), "--out", str(tmp_path / "none"), "--resume"],
                      capsys)
    assert rc == 2 and "no BERT run to resume" in err


@pytest.mark.parametrize("text, extra, message", [
    ("", [], "the corpus is empty"),
    ("Just one line of text.\n", [], "leaves none to train on"),
    ("Just one line of text.\n", ["--heldout-docs", "0"], "at least 2 documents"),
    (None, ["--max-seq-len", "600"], "argument --max-seq-len: must be a whole number between 8 and 512, got 600"),
])
def test_bad_input_gives_a_clear_error(tmp_path, corpus_file, capsys, text, extra, message):
    path = corpus_file
    if text is not None:
        path = tmp_path / "bad.txt"
        path.write_text(text)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # --heldout-docs 0 warns first
        rc, err = run_cli(["train", "bert", "--corpus", str(path), "--out", str(tmp_path / "o"), "--steps", "2",
                           "--vocab-size", "100", *TINY, *extra], capsys)
    assert rc == 2
    assert message in err and "Traceback" not in err


def test_over_long_sentence_in_a_corpus_trains_with_a_warning(tmp_path, capsys):
    long_sentence = " ".join(f"word{i % 50}" for i in range(400)) + "."
    text = synthetic_corpus(n_docs=4, paragraphs=3) + "\n" + long_sentence + "\n"
    path = tmp_path / "long.txt"
    path.write_text(text)
    with pytest.warns(UserWarning, match="longer than 29 tokens will be truncated"):
        rc, err = run_cli(["train", "bert", "--corpus", str(path), "--out", str(tmp_path / "o"), "--steps", "3",
                           "--vocab-size", "120", "--heldout-docs", "1", *TINY], capsys)
    assert rc == 0, err


@pytest.mark.slow
def test_a_minute_of_training_clearly_lowers_heldout_mlm_loss(tmp_path):
    torch.set_num_threads(1)
    corpus = tmp_path / "synthetic.txt"
    corpus.write_text(synthetic_corpus(n_docs=16, paragraphs=30, seed=1))
    args = parse_bert_args(["--corpus", str(corpus), "--out", str(tmp_path / "run"), "--preset", "tiny",
                            "--vocab-size", "200", "--max-seq-len", "32", "--batch-size", "32", "--steps", "200",
                            "--lr", "2e-3", "--eval-every", "0", "--eval-sequences", "64", "--no-progress"])
    task, cfg = build(args)
    task.model.eval()
    with torch.no_grad():
        before = task.evaluate(task.model)
    after = Trainer(task, cfg, args.out, command="test").train()
    assert before["mlm_loss"] > 0.9 * np.log(task.tokenizer.vocab_size)  # untrained: close to uniform
    # Predicting the unigram distribution alone gets about 3.6 here; context has to be used to go well below.
    assert after["mlm_loss"] < 0.6 * before["mlm_loss"]
    assert after["mlm_accuracy"] > 0.35 and after["mlm_top5_accuracy"] > after["mlm_accuracy"]


def bert_task_in(out: Path, *argv: str):
    """The task `ctxmodels train bert --out OUT ARGV` would train (its settings stored in OUT, nothing trained)."""
    return build(parse_bert_args(["--out", str(out), *argv]))[0]


def test_dropout_and_sinusoidal_positions_options(corpus_file, tokenizer_dir, tmp_path):
    common = ["--corpus", str(corpus_file), "--tokenizer", str(tokenizer_dir), *TINY]
    task = bert_task_in(tmp_path / "run", *common, "--dropout", "0", "--sinusoidal-positions")
    cfg = task.model.config
    assert cfg.hidden_dropout_prob == 0 and cfg.attention_probs_dropout_prob == 0
    pos = task.model.bert.embeddings.position_embeddings.weight.detach()
    assert float(pos.std()) == pytest.approx(cfg.initializer_range, rel=1e-3)
    assert torch.all(pos[0, 0::2] == 0)  # sin(0)
    # neighbouring positions start out more alike than distant ones
    cos = torch.nn.functional.cosine_similarity
    assert cos(pos[10], pos[11], dim=0) > cos(pos[10], pos[60], dim=0) + 0.2
    assert bert_task_in(tmp_path / "r2", *common).model.config.hidden_dropout_prob == 0.1
    with pytest.raises(SystemExit):  # argparse: "argument --dropout: must be at least 0 and below 1, got 1.5"
        bert_task_in(tmp_path / "r3", *common, "--dropout", "1.5")
    with pytest.raises(ValueError, match="--dropout must be at least 0 and below 1, got 1.5"):
        BertSettings.resolve({"corpus": corpus_file, "dropout": 1.5}, tmp_path / "r4")


def test_init_from_an_earlier_run(corpus_file, tokenizer_dir, tmp_path):
    common = ["--corpus", str(corpus_file), "--tokenizer", str(tokenizer_dir), *TINY]
    first = bert_task_in(tmp_path / "a", *common, "--seed", "1")
    first.save_model(tmp_path / "a")
    second = bert_task_in(tmp_path / "b", *common, "--init-from", str(tmp_path / "a"), "--data-seed", "4")
    for (k, a), b in zip(first.model.state_dict().items(), second.model.state_dict().values()):
        assert torch.equal(a, b), k
    card = second.model_card({"metrics": {}})
    assert "continued pre-training" in card and "| training order | `--data-seed 4`" in card
    assert second.settings.order_seed == 4 and second.settings.train_config().seed == 4
    with pytest.raises(Exception, match="does not fit"):
        bert_task_in(tmp_path / "c", *common, "--preset", "mini", "--init-from", str(tmp_path / "a"))


def _transformers_encoder(folder: Path) -> Path:
    """A random tiny Hugging Face BERT encoder alone (BertModel: no pre-training heads) and its tokenizer."""
    import transformers

    from tests.hf_tiny import _wordpiece

    torch.manual_seed(0)
    tk = _wordpiece()
    tok = transformers.BertTokenizerFast(tokenizer_object=tk, unk_token="[UNK]", sep_token="[SEP]",
                                         pad_token="[PAD]", cls_token="[CLS]", mask_token="[MASK]")
    config = transformers.BertConfig(vocab_size=tk.get_vocab_size(), hidden_size=32, num_hidden_layers=2,
                                     num_attention_heads=2, intermediate_size=37, max_position_embeddings=64,
                                     pad_token_id=tok.pad_token_id)
    transformers.BertModel(config).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def test_init_from_a_transformers_encoder(corpus_file, tokenizer_dir, tmp_path):
    """Continued pre-training of a published encoder: its size, its tokenizer and its weights; fresh heads."""
    from safetensors.torch import load_file

    from ctxmodels.training.bert_task import INIT_LR

    start = _transformers_encoder(tmp_path / "encoder")
    common = ["--corpus", str(corpus_file), "--max-seq-len", "32", "--batch-size", "8", "--eval-sequences", "8",
              "--no-progress"]
    task = bert_task_in(tmp_path / "run", *common, "--init-from", str(start))
    cfg = task.model.config
    assert (cfg.hidden_size, cfg.num_hidden_layers, cfg.intermediate_size) == (32, 2, 37)
    assert task.tokenizer.vocab_size == cfg.vocab_size == json.loads((start / "config.json").read_text())["vocab_size"]
    assert task.settings.tokenizer == str(start) and task.settings.lr == INIT_LR and task.settings.preset is None
    ours = task.model.state_dict()
    for k, v in load_file(start / "model.safetensors").items():
        if k != "embeddings.position_ids":
            assert torch.equal(ours[f"bert.{k}"], v), k
    assert task.model.cls.predictions.decoder.weight is task.model.bert.embeddings.word_embeddings.weight
    assert "cls.predictions.transform.dense" in task.fresh_heads and "cls.seq_relationship" in task.fresh_heads
    assert not any(h.startswith("bert.") for h in task.fresh_heads)  # the pooler came with the encoder
    card = task.model_card({"metrics": {}})
    assert "started fresh: cls.predictions" in card and "the starting model's: 2 layers, hidden 32" in card
    # the start is named in the card (its README's title and licence), also when the run is resumed
    (start / "README.md").write_text("---\nlicense: apache-2.0\n---\n\n# tiny-encoder\n\nA test model.\n")
    task = bert_task_in(tmp_path / "run2", *common, "--init-from", str(start))
    assert task.start == "tiny-encoder (licence apache-2.0)"
    (tmp_path / "run2" / "checkpoint").mkdir()
    resumed = build(parse_bert_args(["--out", str(tmp_path / "run2"), "--resume"]))[0]
    assert resumed.start == task.start and resumed.fresh_heads == task.fresh_heads
    assert "tiny-encoder (licence apache-2.0)" in resumed.model_card({"metrics": {}})
    # a size or vocabulary other than the start's is refused with what to do
    with pytest.raises(Exception, match="does not fit --preset tiny.*leave --preset out"):
        bert_task_in(tmp_path / "r2", *common, "--preset", "tiny", "--init-from", str(start))
    with pytest.raises(Exception, match="vocabulary has .* pieces.*leave --tokenizer out"):
        bert_task_in(tmp_path / "r3", *common, "--tokenizer", str(tokenizer_dir), "--init-from", str(start))
    (tmp_path / "bare").mkdir()
    with pytest.raises(Exception, match="no config.json to take the model's size from; give --preset"):
        bert_task_in(tmp_path / "r4", *common, "--tokenizer", str(tokenizer_dir), "--init-from",
                     str(tmp_path / "bare"))


def test_init_from_a_transformers_masked_lm(corpus_file, tmp_path):
    """A Hugging Face BertForMaskedLM (no pooler, no next-sentence classifier): its MLM head is kept, the rest fresh."""
    from safetensors.torch import load_file

    from tests.hf_tiny import build as build_hf

    start = build_hf("bert", tmp_path / "mlm")
    task = bert_task_in(tmp_path / "run", "--corpus", str(corpus_file), "--max-seq-len", "32", "--batch-size", "8",
                        "--eval-sequences", "8", "--no-progress", "--init-from", str(start))
    assert task.fresh_heads == ["bert.pooler.dense", "cls.seq_relationship"]
    ours = task.model.state_dict()
    for k, v in load_file(start / "model.safetensors").items():
        assert torch.equal(ours[k], v), k  # the encoder and the masked-LM head as published


def test_data_workers_give_the_same_batches_in_the_same_order(corpus_file, tokenizer_dir, tmp_path):
    import dataclasses

    args = parse_bert_args(["--corpus", str(corpus_file), "--tokenizer", str(tokenizer_dir), *TINY,
                            "--out", str(tmp_path / "run"), "--steps", "7"])
    task, cfg = build(args)
    here = list(Trainer(task, cfg, tmp_path / "run")._batches(2))
    ahead = list(Trainer(task, dataclasses.replace(cfg, data_workers=2), tmp_path / "run")._batches(2))
    assert [s for s, _ in ahead] == [s for s, _ in here] == list(range(2, 7))
    for (_, a), (_, b) in zip(here, ahead):
        assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_init_from_takes_a_model_name(corpus_file, tmp_path, monkeypatch):
    """--init-from takes names as every --model does (here the shipped bert-eltec); an unknown one is refused."""
    monkeypatch.delenv("CTXMODELS_ASSETS", raising=False)
    from ctxmodels.paths import assets_dir

    common = ["--corpus", str(corpus_file), "--max-seq-len", "32", "--batch-size", "8", "--eval-sequences", "8",
              "--no-progress"]
    task = bert_task_in(tmp_path / "run", *common, "--init-from", "bert-eltec")
    assert Path(task.settings.init_from) == assets_dir().resolve() / "bert-eltec"
    assert task.fresh_heads == [] and task.model.config.num_hidden_layers == 2
    with pytest.raises(Exception, match="cannot find a model 'no-such-model'"):
        bert_task_in(tmp_path / "r2", *common, "--init-from", "no-such-model")


def test_add_text_trains_on_more_documents_and_keeps_the_heldout_split(corpus_file, tokenizer_dir, tmp_path):
    """--add-text puts every document of its file on the training side: the held-out documents, and so the held-out
    figures, are those a run on --corpus alone holds out."""
    from ctxmodels.text import read_documents

    added = tmp_path / "added.txt"
    added.write_text("A first added paragraph.\nAnd a second one.\n\nAnother added document.\n", encoding="utf-8")
    common = ["--corpus", str(corpus_file), "--tokenizer", str(tokenizer_dir), *TINY]
    alone = bert_task_in(tmp_path / "alone", *common)
    more = bert_task_in(tmp_path / "more", *common, "--add-text", str(added))
    assert more.data_meta["heldout_indices"] == alone.data_meta["heldout_indices"]
    assert more.data_meta["heldout_tokens"] == alone.data_meta["heldout_tokens"]
    assert more.data_meta["documents"] == len(read_documents(corpus_file))
    assert more.data_meta["added_documents"] == 2
    assert more.data_meta["train_tokens"] > alone.data_meta["train_tokens"]
    assert "the 2 documents of `added.txt`" in more.model_card({"metrics": {}})
    assert "--add-text" not in alone.model_card({"metrics": {}})
    stored = json.loads((tmp_path / "more" / "run.json").read_text())
    assert Path(stored["settings"]["add_text"]) == added.resolve()


def test_add_text_that_changed_or_is_missing_is_refused(corpus_file, tokenizer_dir, tmp_path, capsys):
    added = tmp_path / "added.txt"
    added.write_text("An added paragraph.\n", encoding="utf-8")
    out = tmp_path / "run"
    rc, err = run_cli(["train", "bert", "--corpus", str(corpus_file), "--tokenizer", str(tokenizer_dir),
                       "--add-text", str(added), "--steps", "1", "--eval-every", "0", "--out", str(out), *TINY], capsys)
    assert rc == 0, err
    added.write_text("A changed paragraph.\n", encoding="utf-8")
    rc, err = run_cli(["train", "bert", "--out", str(out), "--resume", "--steps", "2"], capsys)
    assert rc != 0 and "added text changed since this run started" in err and "restore added.txt" in err
    rc, err = run_cli(["train", "bert", "--corpus", str(corpus_file), "--tokenizer", str(tokenizer_dir),
                       "--add-text", str(tmp_path / "missing.txt"), "--out", str(tmp_path / "other"), *TINY], capsys)
    assert rc != 0 and "missing.txt" in err and "Traceback" not in err
