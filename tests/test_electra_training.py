"""``ctxmodels train electra``: replaced-token labels, the loss against transformers' own loss paths, shared
embeddings, both saved folders in transformers and in ctxmodels.load, exact resume, bad input."""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch

from ctxmodels.training.bert_data import IGNORE_INDEX
from ctxmodels.training.electra_task import (
    GENERATOR,
    ElectraPair,
    ElectraSettings,
    build_task,
    electra_configs,
    replaced_token_labels,
)
from ctxmodels.training.trainer import Trainer
from tests import lm_fixtures

TINY, train = lm_fixtures.TINY, lm_fixtures.train
corpus_file, tokenizer_dir = lm_fixtures.corpus_file, lm_fixtures.tokenizer_dir  # module fixtures
_restore_torch_threads = lm_fixtures._restore_torch_threads  # autouse


def tiny_pair(disc_weight: float = 50.0) -> ElectraPair:
    import transformers

    tok = type("Tok", (), {"vocab_size": 40, "pad_id": 0, "cls_id": 2, "sep_id": 3})()
    settings = ElectraSettings(preset="tiny", dropout=0.0)
    disc, gen = electra_configs(settings, tok, 0.25)
    torch.manual_seed(0)
    return ElectraPair(transformers.ElectraForMaskedLM(gen), transformers.ElectraForPreTraining(disc), disc_weight)


def test_replaced_token_labels_count_a_sample_equal_to_the_original_as_original():
    ids = torch.tensor([[2, 4, 11, 4, 13, 3, 0, 0]])  # [CLS] [MASK] w [MASK] w [SEP] [PAD] [PAD]
    labels = torch.full_like(ids, IGNORE_INDEX)
    labels[0, 1], labels[0, 3] = 10, 12  # the originals at the two masked positions
    attention = (ids != 0).long()
    sampled = torch.tensor([10, 30])  # the first sample is the original word, the second is not
    corrupted, target = replaced_token_labels(ids, labels, attention, sampled)
    assert corrupted.tolist() == [[2, 10, 11, 30, 13, 3, 0, 0]]
    assert target.tolist() == [[0, 0, 0, 1, 0, 0, IGNORE_INDEX, IGNORE_INDEX]]


def test_loss_is_generator_mlm_plus_lambda_discriminator_as_transformers_computes_them():
    pair = tiny_pair(disc_weight=7.0).eval()
    ids = torch.tensor([[2, 4, 11, 12, 4, 14, 3, 0], [2, 15, 4, 17, 18, 19, 20, 3]])
    labels = torch.full_like(ids, IGNORE_INDEX)
    labels[0, 1], labels[0, 4], labels[1, 2] = 10, 13, 16
    batch = {"input_ids": ids, "attention_mask": (ids != 0).long(), "labels": labels}
    with torch.no_grad():
        scores = pair(batch, sampler=torch.Generator().manual_seed(5))
        loss, gen, disc = pair.loss(scores)
        # the same batch through transformers' own heads and losses, the same samples drawn
        hf_gen = pair.generator(input_ids=ids, attention_mask=batch["attention_mask"], labels=labels)
        chosen = labels != IGNORE_INDEX
        sampled = torch.multinomial(hf_gen.logits[chosen].softmax(-1), 1,
                                    generator=torch.Generator().manual_seed(5)).squeeze(-1)
        corrupted, target = replaced_token_labels(ids, labels, batch["attention_mask"], sampled)
        hf_disc = pair.discriminator(input_ids=corrupted, attention_mask=batch["attention_mask"],
                                     labels=target.clamp(min=0))
    assert torch.allclose(gen, hf_gen.loss, atol=1e-5) and torch.allclose(disc, hf_disc.loss, atol=1e-5)
    assert torch.allclose(loss, hf_gen.loss + 7.0 * hf_disc.loss, atol=1e-4)
    assert int(scores.masked) == 3 and int(scores.real) == 15 and int(scores.replaced) == int(target.clamp(min=0).sum())


def test_generator_is_a_fraction_of_the_discriminator():
    tok = type("Tok", (), {"vocab_size": 40, "pad_id": 0, "cls_id": 2, "sep_id": 3})()
    disc, gen = electra_configs(ElectraSettings(preset="mini"), tok, 0.25)
    assert (disc.hidden_size, disc.num_attention_heads, disc.intermediate_size) == (256, 4, 1024)
    assert (gen.hidden_size, gen.num_attention_heads, gen.intermediate_size) == (64, 1, 256)
    assert gen.embedding_size == disc.embedding_size == 256 and gen.num_hidden_layers == disc.num_hidden_layers
    disc, gen = electra_configs(ElectraSettings(preset="mini"), tok, 1.0)
    assert gen.to_diff_dict() | {"architectures": None} == disc.to_diff_dict() | {"architectures": None}


def test_trained_folders_load_in_transformers_and_ctxmodels_with_the_models_logits(tmp_path, corpus_file,
                                                                                  tokenizer_dir):
    import transformers
    from safetensors.torch import load_file

    import ctxmodels
    from ctxmodels.analysis.fill_in import fill_mask

    out = tmp_path / "run"
    settings = ElectraSettings.resolve({"corpus": str(corpus_file), "tokenizer": str(tokenizer_dir), "steps": 3,
                                        "preset": "tiny", "max_seq_len": 32, "batch_size": 4, "eval_sequences": 4,
                                        "eval_every": 0, "log_every": 1}, out)
    task, cfg = build_task(settings, out)
    Trainer(task, dataclasses.replace(cfg, progress=False), out).train()
    gen, disc = task.lm.generator, task.lm.discriminator
    # one embeddings module while training: the same tensors, the generator's output tied to the shared words
    assert gen.electra.embeddings is disc.electra.embeddings
    assert gen.generator_lm_head.weight is disc.electra.embeddings.word_embeddings.weight
    assert gen.electra.embeddings_project.in_features == 128 and gen.config.hidden_size == 32

    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in records if "loss" in r]
    assert len(steps) == 3 and all({"gen_loss", "disc_loss", "disc_accuracy", "replaced"} <= r.keys() for r in steps)
    assert all(abs(r["loss"] - (r["gen_loss"] + 50 * r["disc_loss"])) < 1e-3 for r in steps)

    saved_disc, info = transformers.ElectraForPreTraining.from_pretrained(out, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"]
    saved_gen, info = transformers.ElectraForMaskedLM.from_pretrained(out / GENERATOR, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"]
    ids = torch.tensor([[2, 10, 11, 12, 4, 13, 3]])
    for saved, ours in ((saved_disc, disc), (saved_gen, gen)):
        saved.eval(), ours.eval()
        with torch.no_grad():
            assert torch.equal(saved(ids).logits, ours(ids).logits)
    a, b = load_file(out / "model.safetensors"), load_file(out / GENERATOR / "model.safetensors")
    shared = [k for k in a if k.startswith("electra.embeddings.")]
    assert len(shared) == 5 and all(torch.equal(a[k], b[k]) for k in shared)

    discriminator, generator = ctxmodels.load(out), ctxmodels.load(out / GENERATOR)
    assert discriminator.model_type == generator.model_type == "electra"
    assert not discriminator.can_fill_mask and "discriminator" in discriminator.no_fill_reason
    assert discriminator.has_attention and generator.can_fill_mask
    guesses = fill_mask(generator, None, "the old [MASK] by the river")
    assert len(guesses[0]) == 5 and all(0 <= g["prob"] <= 1 for g in guesses[0])
    card = (out / "README.md").read_text()
    assert "ElectraForPreTraining" in card and "hidden 32, 1 head," in card


def test_resume_gives_the_losses_and_weights_of_an_uninterrupted_run(tmp_path, corpus_file, tokenizer_dir,
                                                                     capsys):
    from safetensors.torch import load_file

    common = ["train", "electra", "--corpus", str(corpus_file), "--tokenizer", str(tokenizer_dir), "--steps", "4",
              "--generator-fraction", "0.5", "--disc-weight", "20", *TINY]
    assert train([*common, "--out", str(tmp_path / "whole")], capsys)[0] == 0
    assert train([*common, "--out", str(tmp_path / "cut"), "--stop-at", "2"], capsys)[0] == 0
    assert train(["train", "electra", "--out", str(tmp_path / "cut"), "--resume", "--no-progress"], capsys)[0] == 0

    def losses(run: str) -> list[tuple]:
        lines = (tmp_path / run / "metrics.jsonl").read_text().splitlines()
        return [(r["step"], r["gen_loss"], r["disc_loss"]) for r in map(json.loads, lines) if "loss" in r]

    assert len(losses("whole")) == 4 and losses("cut") == losses("whole")
    for file in ("model.safetensors", f"{GENERATOR}/model.safetensors"):
        a, b = load_file(tmp_path / "whole" / file), load_file(tmp_path / "cut" / file)
        assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    stored = json.loads((tmp_path / "cut" / "run.json").read_text())["settings"]
    assert stored["generator_fraction"] == 0.5 and stored["disc_weight"] == 20


@pytest.mark.parametrize(("option", "value", "said"), [
    ("--generator-fraction", "1.5", "argument --generator-fraction: 1.5 would make the generator wider than its "
                                    "discriminator (at 1 it is as wide)"),
    ("--generator-fraction", "0", "argument --generator-fraction: must be above 0 and at most 1, got 0"),
    ("--generator-fraction", "-0.25", "must be above 0"),
    ("--generator-fraction", "half", "must be a number, got 'half'"),
    ("--disc-weight", "-1", "argument --disc-weight: must be between 0 and 10000, got -1"),
    ("--static-masking", "2", "unrecognized arguments: --static-masking"),
    ("--max-seq-len", "600", "argument --max-seq-len: must be a whole number between 8 and 512, got 600"),
])
def test_bad_input_is_one_clear_line(tmp_path, corpus_file, capsys, option, value, said):
    rc, err = train(["train", "electra", "--corpus", str(corpus_file), "--out", str(tmp_path / "run"), option, value],
                    capsys)
    assert rc == 2 and said in err.strip().splitlines()[-1] and "Traceback" not in err  # argparse's usage, then it
    assert not (tmp_path / "run").exists()


def test_a_stored_fraction_above_one_is_refused_with_the_reason():
    with pytest.raises(ValueError, match="wider than its discriminator"):
        ElectraSettings(corpus="x", generator_fraction=2.0).check()


@pytest.mark.slow
def test_two_process_training_ends_with_identical_weights(tmp_path, corpus_file):
    """Under torchrun (2 processes, gloo on CPU) both ranks end with the same generator and discriminator, though
    each rank draws its own samples: the whole ELECTRA loss runs inside the model DDP wraps."""
    import os
    import subprocess
    import sys

    from tests.helpers import RANK_SCRIPT

    script = tmp_path / "rank.py"
    script.write_text(RANK_SCRIPT)
    out = tmp_path / "run"
    env = dict(os.environ, HASH_DIR=str(tmp_path), OMP_NUM_THREADS="1")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", str(script),
           "train", "electra", "--corpus", str(corpus_file), "--out", str(out), "--vocab-size", "120", "--steps",
           "3", "--preset", "tiny", "--max-seq-len", "32", "--batch-size", "4", "--eval-sequences", "4",
           "--no-progress", "--log-every", "1"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    reports = [(tmp_path / f"rank{r}.txt").read_text().split() for r in range(2)]
    assert reports[0][0] == reports[1][0] == "2" and reports[0][1] == reports[1][1]
