"""``ctxmodels train albert``: sentence-order pairs, the saved ALBERT folder in transformers and in ctxmodels.load
(the same logits as the model in memory), factorised embeddings and layer groups in its config, exact resume, bad
input."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from ctxmodels.text import CorpusError
from ctxmodels.training.bert_corpus import TokenizedDocuments
from ctxmodels.training.bert_data import IGNORE_INDEX, PretrainingData, VocabInfo
from tests import lm_fixtures

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]

TINY, train = lm_fixtures.TINY, lm_fixtures.train
corpus_file, tokenizer_dir = lm_fixtures.corpus_file, lm_fixtures.tokenizer_dir  # module fixtures
_restore_torch_threads = lm_fixtures._restore_torch_threads  # autouse


def toy_docs(sentences_per_doc: tuple[int, ...] = (3, 4, 5, 2)) -> tuple[TokenizedDocuments, VocabInfo]:
    """Three documents of unique, consecutive ids (sentences of 3 pieces), so a segment says where it came from."""
    docs, next_id = [], len(SPECIALS)
    for _ in range(3):
        sents = []
        for _ in sentences_per_doc:
            sents.append(list(range(next_id, next_id + 3)))
            next_id += 3
        docs.append(sents)
    vocab = VocabInfo.from_tokens(SPECIALS + [f"t{i}" for i in range(len(SPECIALS), next_id)])
    return TokenizedDocuments.from_lists(docs), vocab


def test_sentence_order_pairs_are_in_order_or_swapped_and_labelled_so():
    docs, vocab = toy_docs()
    data = PretrainingData(docs, vocab, max_seq_len=16, max_predictions=2, batch_size=4, sentence_order=True)
    labels_seen = []
    for epoch in range(40):  # 3 chunks an epoch
        for index in range(data.num_batches):
            batch = data.batch(epoch, index)
            assert "next_sentence_label" not in batch
            for row, order in enumerate(batch["sentence_order_label"].tolist()):
                ids = batch["input_ids"][row].clone()
                keep = batch["mlm_labels"][row] != IGNORE_INDEX
                ids[batch["mlm_positions"][row][keep]] = batch["mlm_labels"][row][keep]  # the original pieces
                ids = ids[batch["attention_mask"][row] == 1].tolist()
                first_sep = ids.index(3)
                a, b = ids[1:first_sep], ids[first_sep + 1:-1]
                assert a and b and ids[0] == 2 and ids[-1] == 3
                assert all(y == x + 1 for x, y in zip(a, a[1:])) and all(y == x + 1 for x, y in zip(b, b[1:]))
                # label 0: B goes on where A stops; label 1: the same two segments swapped
                assert (b[0] == a[-1] + 1) if order == 0 else (a[0] == b[-1] + 1)
                labels_seen.append(order)
    assert set(labels_seen) == {0, 1} and 0.35 < np.mean(labels_seen) < 0.65


def test_documents_of_one_sentence_have_no_order_to_learn(tmp_path, capsys):
    docs, vocab = toy_docs(sentences_per_doc=(1,))
    with pytest.raises(CorpusError, match="sentence-order prediction needs documents of two sentences"):
        PretrainingData(docs, vocab, max_seq_len=16, sentence_order=True)
    PretrainingData(docs, vocab, max_seq_len=16)  # next-sentence pairs still cut a sentence in two
    corpus = tmp_path / "lines.txt"
    corpus.write_text("\n\n".join(f"The cat number {i} sat on the mat today." for i in range(12)) + "\n")
    rc, err = train(["train", "albert", "--corpus", str(corpus), "--out", str(tmp_path / "a"), "--vocab-size",
                     "60", *TINY], capsys)
    lines = [line for line in err.splitlines() if line.startswith("ctxmodels: error")]
    assert rc == 2 and len(lines) == 1 and "every document here is a single sentence" in lines[0]


@pytest.fixture(scope="module")
def trained(tmp_path_factory, corpus_file, tokenizer_dir):
    """A 3-step run through the command's own build, the trained model still in memory."""
    import argparse

    from ctxmodels.commands.train import add_arguments, build
    from ctxmodels.training.trainer import Trainer

    out = tmp_path_factory.mktemp("albert") / "run"
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["albert", "--corpus", str(corpus_file), "--tokenizer", str(tokenizer_dir), "--out",
                              str(out), "--steps", "3", *TINY])
    threads = torch.get_num_threads()
    task, cfg = build(args)
    Trainer(task, cfg, out).train()
    torch.set_num_threads(threads)
    return out, task.lm


def test_saved_folder_loads_in_transformers_with_the_logits_of_the_model_in_memory(trained):
    import transformers

    out, in_memory = trained
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in records if "loss" in r]
    assert len(steps) == 3 and all(r["loss"] == pytest.approx(r["mlm_loss"] + r["sop_loss"]) for r in steps)
    assert "sop_accuracy" in records[-1]["eval"]
    model, info = transformers.AlbertForPreTraining.from_pretrained(out, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"]
    ids = torch.tensor([[2, 10, 11, 12, 4, 3, 13, 14, 3]])
    types = torch.tensor([[0] * 6 + [1] * 3])
    model.eval(), in_memory.eval()
    ours, theirs = in_memory(ids, token_type_ids=types), model(ids, token_type_ids=types)
    assert torch.equal(ours.prediction_logits, theirs.prediction_logits)
    assert torch.equal(ours.sop_logits, theirs.sop_logits)
    masked_lm = transformers.AlbertForMaskedLM.from_pretrained(out)
    assert torch.equal(masked_lm.eval()(ids, token_type_ids=types).logits, theirs.prediction_logits)
    card = (out / "README.md").read_text()
    assert "AlbertForPreTraining" in card and "sentence order" in card


def test_embedding_size_and_groups_land_in_the_config(trained, tmp_path, corpus_file, tokenizer_dir, capsys):
    out, model = trained
    config = json.loads((out / "config.json").read_text())
    assert config["model_type"] == "albert" and config["embedding_size"] == 64 and config["hidden_size"] == 128
    assert config["num_hidden_groups"] == 1 and model.albert.embeddings.word_embeddings.weight.shape[1] == 64
    assert json.loads((out / "run.json").read_text())["settings"]["embedding_size"] == 64
    rc, err = train(["train", "albert", "--corpus", str(corpus_file), "--tokenizer", str(tokenizer_dir), "--out",
                     str(tmp_path / "b"), "--steps", "1", "--embedding-size", "32", "--hidden-groups", "2", *TINY],
                    capsys)
    assert rc == 0, err
    config = json.loads((tmp_path / "b" / "config.json").read_text())
    assert config["embedding_size"] == 32 and config["num_hidden_groups"] == 2


def test_our_loss_is_transformers_own_on_the_same_batch(trained):
    """The score at the masked positions only, and the SOP labels' meaning, agree with transformers' own loss
    (``labels`` at every position, ``sentence_order_label``)."""
    from ctxmodels.training.albert_task import AlbertTask

    out, model = trained
    docs, _ = toy_docs()
    vocab = VocabInfo.from_tokens(SPECIALS + [f"t{i}" for i in range(len(SPECIALS), 150)])
    batch = PretrainingData(docs, vocab, max_seq_len=16, batch_size=4, sentence_order=True).batch(0, 0)
    model.eval()
    with torch.no_grad():
        mlm_total, n, _, sop_total, _ = AlbertTask.score(model, batch)
        labels = torch.full_like(batch["input_ids"], IGNORE_INDEX)
        keep = batch["mlm_labels"] != IGNORE_INDEX
        rows = torch.arange(len(labels))[:, None].expand_as(keep)
        labels[rows[keep], batch["mlm_positions"][keep]] = batch["mlm_labels"][keep]
        theirs = model(input_ids=batch["input_ids"], token_type_ids=batch["token_type_ids"],
                       attention_mask=batch["attention_mask"], labels=labels,
                       sentence_order_label=batch["sentence_order_label"]).loss
    ours = mlm_total / n + sop_total / len(labels)
    assert ours.item() == pytest.approx(theirs.item(), rel=1e-5)


def test_ctxmodels_loads_it_and_fills_in_blanks(trained):
    import ctxmodels
    from ctxmodels.analysis.fill_in import fill_mask

    loaded = ctxmodels.load(trained[0])
    assert loaded.kind == "transformers" and loaded.model_type == "albert"
    assert loaded.can_fill_mask and loaded.has_attention
    vectors = loaded.embed([["the", "old", "bank"]])[0]
    assert vectors.shape[0] == loaded.n_layers == 3 and np.isfinite(vectors).all()
    guesses = fill_mask(loaded, None, "the old [MASK] by the river")
    assert len(guesses) == 1 and len(guesses[0]) == 5 and all(0 <= g["prob"] <= 1 for g in guesses[0])


def test_resume_gives_the_losses_and_weights_of_an_uninterrupted_run(tmp_path, corpus_file, tokenizer_dir, capsys):
    from safetensors.torch import load_file

    common = ["train", "albert", "--corpus", str(corpus_file), "--tokenizer", str(tokenizer_dir), "--steps", "4",
              "--whole-word-masking", *TINY]
    assert train([*common, "--out", str(tmp_path / "whole")], capsys)[0] == 0
    assert train([*common, "--out", str(tmp_path / "cut"), "--stop-at", "2"], capsys)[0] == 0
    assert train(["train", "albert", "--out", str(tmp_path / "cut"), "--resume", "--no-progress"], capsys)[0] == 0
    a, b = load_file(tmp_path / "whole" / "model.safetensors"), load_file(tmp_path / "cut" / "model.safetensors")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)

    def losses(run: str) -> dict[int, tuple]:
        records = (json.loads(line) for line in (tmp_path / run / "metrics.jsonl").read_text().splitlines())
        return {r["step"]: (r["mlm_loss"], r["sop_loss"]) for r in records if "loss" in r}

    assert losses("whole") == losses("cut") and sorted(losses("cut")) == [1, 2, 3, 4]


@pytest.mark.parametrize(("option", "message"), [
    (["--embedding-size", "200"], "--embedding-size 200 is larger than the hidden size 128 of --preset tiny"),
    (["--embedding-size", "0"], "--embedding-size"),
    (["--embedding-size", "many"], "--embedding-size"),
    (["--hidden-groups", "3"], "--hidden-groups 3 does not divide the 2 layers"),
    (["--max-seq-len", "600"], "--max-seq-len"),
    (["--init-from", "x"], "unrecognized arguments: --init-from"),
])
def test_bad_input_is_one_clear_line(tmp_path, corpus_file, capsys, option, message):
    rc, err = train(["train", "albert", "--corpus", str(corpus_file), "--out", str(tmp_path / "a"), *TINY, *option],
                    capsys)
    lines = [line for line in err.splitlines() if "error" in line]
    assert rc == 2 and len(lines) == 1 and message in lines[0] and "Traceback" not in err


@pytest.mark.parametrize("kind", ["gpt", "roberta", "bert", "elmo"])
def test_embedding_size_of_a_kind_without_factorised_embeddings_says_whose_it_is(tmp_path, corpus_file, capsys,
                                                                                 kind):
    rc, err = train(["train", kind, "--corpus", str(corpus_file), "--out", str(tmp_path / "a"), "--embedding-size",
                     "64"], capsys)
    lines = [line for line in err.splitlines() if "error" in line]
    assert rc == 2 and len(lines) == 1 and "--embedding-size does not fit this model" in lines[0]
    assert "ALBERT" in lines[0] and not (tmp_path / "a").exists()


def test_a_sequence_longer_than_the_position_table_is_refused():
    import transformers

    from ctxmodels.training.lm_task import check_sequence_length

    config = transformers.AlbertConfig(max_position_embeddings=64)
    check_sequence_length(64, config)
    with pytest.raises(ValueError, match="--max-seq-len 65 exceeds the model's 64 positions; give --max-seq-len 64"):
        check_sequence_length(65, config)


@pytest.mark.slow
def test_two_process_training_ends_with_identical_weights(tmp_path, corpus_file):
    """Under torchrun (2 processes, gloo on CPU) both ranks end with the same weights: MLM and SOP heads run
    inside the model DDP wraps, so every gradient is averaged."""
    import os
    import subprocess
    import sys

    from tests.helpers import RANK_SCRIPT

    script = tmp_path / "rank.py"
    script.write_text(RANK_SCRIPT)
    out = tmp_path / "run"
    env = dict(os.environ, HASH_DIR=str(tmp_path), OMP_NUM_THREADS="1")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", str(script),
           "train", "albert", "--corpus", str(corpus_file), "--out", str(out), "--vocab-size", "120", "--steps", "3",
           "--preset", "tiny", "--max-seq-len", "32", "--batch-size", "4", "--eval-sequences", "4", "--no-progress",
           "--log-every", "1"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    reports = [(tmp_path / f"rank{r}.txt").read_text().split() for r in range(2)]
    assert reports[0][0] == reports[1][0] == "2" and reports[0][1] == reports[1][1]
