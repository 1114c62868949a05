"""``ctxmodels train gpt``: the next-word loss, the saved GPT-2 folder in transformers and in ctxmodels.load (the
``gpt`` kind: attention and next-word guesses, no fill-in), exact resume, options that do not fit a GPT."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from ctxmodels import cli, kinds
from tests import lm_fixtures

TINY, train = lm_fixtures.TINY, lm_fixtures.train
corpus_file, tokenizer_dir = lm_fixtures.corpus_file, lm_fixtures.tokenizer_dir  # module fixtures
_restore_torch_threads = lm_fixtures._restore_torch_threads  # autouse


@pytest.fixture(scope="module")
def trained(tmp_path_factory, corpus_file, tokenizer_dir) -> Path:
    out = tmp_path_factory.mktemp("gpt") / "run"
    rc = cli.main(["train", "gpt", "--corpus", str(corpus_file), "--tokenizer", str(tokenizer_dir), "--out",
                   str(out), "--steps", "3", *TINY])
    assert rc == 0
    return out


def test_saved_folder_loads_in_transformers_with_the_same_logits(trained):
    import transformers
    from safetensors.torch import load_file

    records = [json.loads(line) for line in (trained / "metrics.jsonl").read_text().splitlines()]
    assert any("lm_loss" in r for r in records)
    model, info = transformers.GPT2LMHeadModel.from_pretrained(trained, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"]
    # the same weights in a model built from the config alone: the saved tensors are the whole model
    again = transformers.GPT2LMHeadModel(model.config)
    missing, unexpected = again.load_state_dict(load_file(trained / "model.safetensors"), strict=False)
    assert not unexpected and set(missing) <= {"lm_head.weight"}
    again.tie_weights()
    ids = torch.tensor([[2, 10, 11, 12, 13, 3]])
    model.eval(), again.eval()
    assert torch.equal(model(ids).logits, again(ids).logits)
    assert "GPT2LMHeadModel" in (trained / "README.md").read_text()


def test_ctxmodels_loads_it_as_a_left_to_right_model(trained):
    import ctxmodels
    from ctxmodels.analysis.attention import compute_attention

    loaded = ctxmodels.load(trained)
    assert loaded.kind == "gpt" and loaded.has_attention and not loaded.can_fill_mask
    assert kinds.supports(loaded, kinds.LANGUAGE_MODEL) and kinds.supports(loaded, kinds.ATTENTION)
    assert not kinds.supports(loaded, kinds.FILL_IN) and not kinds.supports(loaded, kinds.MASKED_LM)
    assert "gpt" not in kinds.with_capability(kinds.FILL_IN) and "gpt" in kinds.with_capability(kinds.LEFT_TO_RIGHT)
    words = ["the", "old", "bank", "by", "the", "river"]
    vectors = loaded.embed([words])[0]
    assert vectors.shape == (3, 6, loaded.dim) and np.isfinite(vectors).all()
    # a word's vector cannot know the words after it: change the last word, the first words stay the same
    other = loaded.embed([words[:-1] + ["money"]])[0]
    assert np.allclose(vectors[:, :4], other[:, :4], atol=1e-5) and not np.allclose(vectors[:, 5], other[:, 5])
    enc, logits = loaded.next_word_logits(words)
    assert logits.shape == (len(enc.ids), loaded.model.config.vocab_size)
    attn = compute_attention(loaded, None, "the old bank by the river")
    a = np.asarray(attn.attentions)
    assert np.allclose(np.triu(a[0, 0], k=1), 0)  # the causal triangle: nothing from later positions


def test_transformers_auto_classes_feed_it_as_it_was_trained(trained):
    """Training fed ids and a mask: the saved tokenizer gives no token types, which GPT-2 would add to its word
    vectors, so ``model(**tok(text))`` is the model that was trained."""
    import transformers

    tok = transformers.AutoTokenizer.from_pretrained(trained)
    model = transformers.AutoModelForCausalLM.from_pretrained(trained).eval()
    enc = tok(["the old bank by the river", "a word"], padding=True, return_tensors="pt")
    assert set(enc) == {"input_ids", "attention_mask"}
    with torch.no_grad():
        given = model(**enc).logits
        as_trained = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).logits
    assert torch.equal(given, as_trained)


@pytest.mark.parametrize("stop", [2, 0])
def test_resume_gives_the_weights_of_an_uninterrupted_run(tmp_path, corpus_file, tokenizer_dir, capsys, stop):
    from safetensors.torch import load_file

    common = ["train", "gpt", "--corpus", str(corpus_file), "--tokenizer", str(tokenizer_dir), "--steps", "4", *TINY]
    assert train([*common, "--out", str(tmp_path / "whole")], capsys)[0] == 0
    assert train([*common, "--out", str(tmp_path / "cut"), "--stop-at", str(stop)], capsys)[0] == 0
    if stop == 0:  # the run's untrained start: its initial weights, loadable, with their held-out evaluation
        import transformers

        records = [json.loads(line) for line in (tmp_path / "cut" / "metrics.jsonl").read_text().splitlines()]
        assert [r["eval"].keys() for r in records if "eval" in r] == [{"top1", "ppl"}]
        assert records[-1] == {"event": "stop_at", "step": 0}
        model, info = transformers.GPT2LMHeadModel.from_pretrained(tmp_path / "cut", output_loading_info=True)
        assert not info["missing_keys"] and not info["unexpected_keys"]
        start = load_file(tmp_path / "cut" / "model.safetensors")
    assert train(["train", "gpt", "--out", str(tmp_path / "cut"), "--resume", "--no-progress"], capsys)[0] == 0
    a, b = load_file(tmp_path / "whole" / "model.safetensors"), load_file(tmp_path / "cut" / "model.safetensors")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    if stop == 0:
        assert not all(torch.equal(start[k], a[k]) for k in a)  # what resumed from the start did train


@pytest.mark.parametrize("option", [["--embedding-size", "64"], ["--whole-word-masking"], ["--static-masking", "2"],
                                    ["--max-predictions", "5"], ["--nsp"]])
def test_options_that_do_not_fit_a_gpt_are_one_clear_line(tmp_path, corpus_file, capsys, option):
    rc, err = train(["train", "gpt", "--corpus", str(corpus_file), "--out", str(tmp_path / "a"), *option], capsys)
    lines = [line for line in err.splitlines() if line.startswith("ctxmodels") and "error" in line]
    assert rc == 2 and f"{option[0]} does not fit this model" in err and len(lines) == 1
    assert not (tmp_path / "a").exists()


def test_sequence_length_above_the_position_table(tmp_path, corpus_file, capsys):
    rc, err = train(["train", "gpt", "--corpus", str(corpus_file), "--out", str(tmp_path / "a"), "--max-seq-len",
                     "1000"], capsys)
    assert rc == 2 and "--max-seq-len" in err and "Traceback" not in err
