"""``ctxmodels train roberta``: packed full-sentence sequences, dynamic and static masking, the saved folder in
transformers and in ctxmodels.load, exact resume, bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from ctxmodels.training.bert_corpus import TokenizedDocuments
from ctxmodels.training.bert_data import IGNORE_INDEX, VocabInfo
from ctxmodels.training.lm_data import PackedData
from ctxmodels.training.roberta_task import RobertaTask
from ctxmodels.training.task import load_model_weights
from tests import lm_fixtures

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]

TINY, train = lm_fixtures.TINY, lm_fixtures.train
corpus_file, tokenizer_dir = lm_fixtures.corpus_file, lm_fixtures.tokenizer_dir  # module fixtures
_restore_torch_threads = lm_fixtures._restore_torch_threads  # autouse


def toy_data(static_masking: int = 0, max_seq_len: int = 12) -> PackedData:
    """Three documents of unique, consecutive ids, so a sequence's tokens say where they came from."""
    docs, next_id = [], len(SPECIALS)
    for _ in range(3):
        sents = []
        for n in (3, 4, 5, 2):
            sents.append(list(range(next_id, next_id + n)))
            next_id += n
        docs.append(sents)
    vocab = VocabInfo.from_tokens(SPECIALS + [f"t{i}" for i in range(len(SPECIALS), next_id)])
    return PackedData(TokenizedDocuments.from_lists(docs), vocab, max_seq_len=max_seq_len, batch_size=2,
                      max_predictions=4, static_masking=static_masking)


def masks_by_sequence(data: PackedData, epoch: int) -> dict[int, tuple]:
    """{sequence: (input ids, labels)} of every batch of an epoch, keyed by the sequence's first original id."""
    found = {}
    for index in range(data.num_batches):
        batch = data.batch(epoch, index)
        for ids, labels in zip(batch["input_ids"].numpy(), batch["labels"].numpy()):
            original = np.where(labels != IGNORE_INDEX, labels, ids)
            found[int(original[1])] = (tuple(ids), tuple(labels))
    return found


def test_sequences_pack_whole_sentences_across_documents():
    data = toy_data(max_seq_len=22)  # documents of 14 pieces: the second sequence starts inside one
    seqs = [data.tokens(i) for i in range(data.num_sequences)]
    assert all(s[0] == 2 and s[-1] == 3 and len(s) <= 22 for s in seqs)
    inner = np.concatenate([s[1:-1] for s in seqs])
    assert sorted(inner[inner > 4].tolist()) == list(range(5, 5 + 42))  # every piece once, none cut
    # some sequence crosses a document boundary, marked by an inner [SEP]
    assert any(3 in s[1:-1].tolist() for s in seqs)


def test_dynamic_masking_draws_new_masks_each_epoch_static_repeats_them():
    dynamic, static = toy_data(0), toy_data(static_masking=2)
    d0, d1 = masks_by_sequence(dynamic, 0), masks_by_sequence(dynamic, 1)
    assert d0.keys() == d1.keys() and any(d0[k] != d1[k] for k in d0)
    s0, s1, s2 = (masks_by_sequence(static, e) for e in (0, 1, 2))
    assert s0 == s1 and any(s0[k] != s2[k] for k in s0)  # reused for 2 epochs, then a new draw
    assert masks_by_sequence(dynamic, 1) == d1  # a pure function of (seed, epoch, index)
    for ids, labels in d0.values():
        chosen = np.array(labels) != IGNORE_INDEX
        assert 1 <= chosen.sum() <= 4 and not set(np.array(ids)[~chosen]) & {4}




def test_saved_folder_loads_in_transformers_and_ctxmodels(tmp_path, corpus_file, tokenizer_dir, capsys):
    import transformers

    import ctxmodels

    out = tmp_path / "run"
    rc, err = train(["train", "roberta", "--corpus", str(corpus_file), "--tokenizer", str(tokenizer_dir),
                     "--out", str(out), "--steps", "3", *TINY], capsys)
    assert rc == 0, err
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert any("mlm_loss" in r for r in records)
    model, info = transformers.RobertaForMaskedLM.from_pretrained(out, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"]
    ours = transformers.RobertaForMaskedLM(model.config)
    RobertaTask.load_weights(type("H", (), {"lm": ours})(), out)  # what --resume reads
    ids = torch.tensor([[2, 10, 11, 12, 4, 13, 3]])
    model.eval(), ours.eval()
    assert torch.equal(model(ids).logits, ours(ids).logits)

    loaded = ctxmodels.load(out)
    assert loaded.model_type == "roberta" and loaded.can_fill_mask and loaded.has_attention
    vectors = loaded.embed([["the", "old", "bank"]])[0]
    assert vectors.shape[0] == loaded.n_layers == 3 and np.isfinite(vectors).all()
    from ctxmodels.analysis.fill_in import fill_mask

    guesses = fill_mask(loaded, None, "the old [MASK] by the river")
    assert len(guesses) == 1 and len(guesses[0]) == 5 and all(0 <= g["prob"] <= 1 for g in guesses[0])
    assert "RobertaForMaskedLM" in (out / "README.md").read_text()


def test_resume_gives_the_weights_of_an_uninterrupted_run(tmp_path, corpus_file, tokenizer_dir, capsys):
    from safetensors.torch import load_file

    common = ["train", "roberta", "--corpus", str(corpus_file), "--tokenizer", str(tokenizer_dir), "--steps", "4",
              "--static-masking", "2", *TINY]
    assert train([*common, "--out", str(tmp_path / "whole")], capsys)[0] == 0
    assert train([*common, "--out", str(tmp_path / "cut"), "--stop-at", "2"], capsys)[0] == 0
    assert train(["train", "roberta", "--out", str(tmp_path / "cut"), "--resume", "--no-progress"], capsys)[0] == 0
    a, b = load_file(tmp_path / "whole" / "model.safetensors"), load_file(tmp_path / "cut" / "model.safetensors")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert json.loads((tmp_path / "cut" / "run.json").read_text())["settings"]["static_masking"] == 2


def test_bad_input_is_one_clear_line(tmp_path, corpus_file, capsys):
    rc, err = train(["train", "roberta", "--corpus", str(corpus_file), "--out", str(tmp_path / "a"),
                     "--max-seq-len", "600"], capsys)
    assert rc == 2 and "--max-seq-len" in err and "Traceback" not in err
    rc, err = train(["train", "roberta", "--corpus", str(corpus_file), "--out", str(tmp_path / "b"),
                     "--static-masking", "-1"], capsys)
    assert rc == 2 and "--static-masking" in err
    rc, err = train(["train", "roberta", "--corpus", str(corpus_file), "--out", str(tmp_path / "c"),
                     "--init-from", "x"], capsys)
    assert rc == 2 and "unrecognized arguments: --init-from" in err


def test_checkpoint_weights_are_plain_state_dict_minus_the_tied_output(tmp_path):
    """What resume reads: transformers' own file, the tied output layer written once."""
    import transformers

    config = transformers.RobertaConfig(vocab_size=30, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                        intermediate_size=32, max_position_embeddings=20, pad_token_id=0)
    model = transformers.RobertaForMaskedLM(config)
    model.save_pretrained(tmp_path, safe_serialization=True)
    with pytest.raises(Exception, match="lm_head.decoder.weight|missing"):
        load_model_weights(transformers.RobertaForMaskedLM(config), tmp_path / "model.safetensors")
    other = transformers.RobertaForMaskedLM(config)
    RobertaTask.load_weights(type("H", (), {"lm": other})(), tmp_path)
    assert torch.equal(other.lm_head.decoder.weight, model.lm_head.decoder.weight)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["roberta", "gpt"])
def test_two_process_training_ends_with_identical_weights(tmp_path, corpus_file, kind):
    """Under torchrun (2 processes, gloo on CPU) both ranks end with the same weights: the loss runs inside the
    model DDP wraps, so every gradient is averaged."""
    import os
    import subprocess
    import sys

    from tests.helpers import RANK_SCRIPT

    script = tmp_path / "rank.py"
    script.write_text(RANK_SCRIPT)
    out = tmp_path / "run"
    env = dict(os.environ, HASH_DIR=str(tmp_path), OMP_NUM_THREADS="1")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", str(script),
           "train", kind, "--corpus", str(corpus_file), "--out", str(out), "--vocab-size", "120", "--steps", "3",
           "--preset", "tiny", "--max-seq-len", "32", "--batch-size", "4", "--eval-sequences", "4", "--no-progress",
           "--log-every", "1"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    reports = [(tmp_path / f"rank{r}.txt").read_text().split() for r in range(2)]
    assert reports[0][0] == reports[1][0] == "2" and reports[0][1] == reports[1][1]
    steps = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in steps if "loss" in r] == [1, 2, 3]
