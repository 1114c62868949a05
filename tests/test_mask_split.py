"""``--mask-split MASK/RANDOM/KEEP``: the share of the chosen pieces that become [MASK], a random piece or stay the
same, honoured by the draw (``ctxmodels.masking``), reaching every masked LM's data, recorded in run.json and kept on
--resume; bad input in one line, and a GPT (nothing masked) refuses it."""

from __future__ import annotations

import argparse
import json

import numpy as np
import pytest

from ctxmodels import masking
from ctxmodels.commands.train import add_kind_arguments, build
from ctxmodels.masking import VocabInfo, mask_tokens, parse_mask_split
from tests import lm_fixtures

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
MASK = 4

TINY, train = lm_fixtures.TINY, lm_fixtures.train
corpus_file, tokenizer_dir = lm_fixtures.corpus_file, lm_fixtures.tokenizer_dir  # module fixtures
_restore_torch_threads = lm_fixtures._restore_torch_threads  # autouse


def fates(split, seed: int = 0, n: int = 3000) -> tuple[int, int, int, list]:
    """([MASK], random, kept) counts over ``n`` sequences drawn with ``split``, and every draw's output."""
    vocab = VocabInfo.from_tokens(SPECIALS + [f"w{i}" for i in range(995)])
    rng = np.random.default_rng(seed)
    counts, outputs = np.zeros(3, int), []
    for _ in range(n):
        ids = rng.integers(len(SPECIALS), vocab.size, size=int(rng.integers(20, 128)))
        out, pos, _ = mask_tokens(ids, np.ones(len(ids), bool), rng, vocab, 1000, split=split)
        counts += [(out[pos] == MASK).sum(), ((out[pos] != MASK) & (out[pos] != ids[pos])).sum(),
                   (out[pos] == ids[pos]).sum()]
        outputs.append((out, pos))
    return (*counts.tolist(), outputs)


def test_electras_split_gives_no_random_pieces_and_85_percent_mask():
    to_mask, to_random, kept, _ = fates((85, 0, 15))
    chosen = to_mask + to_random + kept
    assert chosen > 30_000 and to_random == 0
    assert to_mask / chosen == pytest.approx(0.85, abs=0.01)
    assert kept / chosen == pytest.approx(0.15, abs=0.01)
    to_mask, to_random, kept, _ = fates((0, 100, 0))
    # a random piece may by chance be the original (1 in 995 here): it reads as kept
    assert to_mask == 0 and kept / (to_random + kept) < 0.005


def test_the_default_split_draws_exactly_what_80_10_10_drew():
    assert masking.MASK_SPLIT == (80, 10, 10)
    assert 80 / 100 == masking.MASK_SHARE and 10 / 100 == masking.RANDOM_SHARE  # the same floats, the same draws
    *_, default = fates(masking.MASK_SPLIT, seed=5, n=200)
    *_, given = fates((80, 10, 10), seed=5, n=200)
    assert all(np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1]) for a, b in zip(default, given))


@pytest.mark.parametrize("text, said", [("85/15", "three whole percentages"), ("a/b/c", "three whole percentages"),
                                        ("85.5/0/14.5", "three whole percentages"), ("90/20/10", "adds up to 120"),
                                        ("110/-10/0", "cannot be negative")])
def test_a_split_that_is_not_three_percentages_adding_up_to_100_is_refused(text, said):
    with pytest.raises(ValueError, match=said):
        parse_mask_split(text)
    assert parse_mask_split(" 85 / 0 / 15 ") == (85, 0, 15)


@pytest.mark.parametrize("kind", ["roberta", "bert"])
@pytest.mark.parametrize("text, said", [("85/15", "three whole percentages"), ("90/20/10", "adds up to 120"),
                                        ("110/-10/0", "cannot be negative")])
def test_bad_input_is_one_clear_line(tmp_path, corpus_file, capsys, kind, text, said):
    rc, err = train(["train", kind, "--corpus", str(corpus_file), "--out", str(tmp_path / "a"),
                     f"--mask-split={text}"], capsys)
    lines = [line for line in err.splitlines() if "error" in line]
    assert rc == 2 and len(lines) == 1 and "--mask-split" in lines[0] and said in lines[0]
    assert "Traceback" not in err and not (tmp_path / "a").exists()


def test_a_gpt_refuses_it_in_one_line(tmp_path, corpus_file, capsys):
    rc, err = train(["train", "gpt", "--corpus", str(corpus_file), "--out", str(tmp_path / "a"),
                     "--mask-split", "85/0/15"], capsys)
    assert rc == 2 and "--mask-split does not fit this model" in err and "nothing is masked" in err
    from ctxmodels.training.gpt_task import GptSettings

    with pytest.raises(ValueError, match="--mask-split does not fit a GPT"):
        GptSettings(corpus=str(corpus_file), mask_split="85/0/15").check()


@pytest.mark.parametrize("kind", ["bert", "roberta", "albert", "electra"])
def test_the_split_reaches_the_training_and_held_out_draws_of_every_masked_lm(tmp_path, corpus_file, tokenizer_dir,
                                                                               kind):
    p = argparse.ArgumentParser()
    add_kind_arguments(p, kind)
    args = p.parse_args(["--corpus", str(corpus_file), "--tokenizer", str(tokenizer_dir), "--out",
                         str(tmp_path / kind), "--mask-split", "85/0/15", *TINY])
    task, _ = build(args)
    assert task.train_data.mask_split == task.eval_data.mask_split == (85, 0, 15)
    assert json.loads((tmp_path / kind / "run.json").read_text())["settings"]["mask_split"] == "85/0/15"


def test_recorded_in_run_json_and_the_card_and_kept_on_resume(tmp_path, corpus_file, tokenizer_dir, capsys):
    out = tmp_path / "run"
    common = ["train", "roberta", "--out", str(out), "--no-progress"]
    rc, err = train([*common, "--corpus", str(corpus_file), "--tokenizer", str(tokenizer_dir), "--steps", "2",
                     "--stop-at", "1", "--mask-split", "85/0/15", *TINY], capsys)
    assert rc == 0, err
    assert json.loads((out / "run.json").read_text())["settings"]["mask_split"] == "85/0/15"
    rc, err = train([*common, "--resume", "--mask-split", "80/10/10"], capsys)
    assert rc == 2 and "--mask-split 80/10/10 (the run used 85/0/15)" in err
    rc, err = train([*common, "--resume", "--mask-split", "85/00/15"], capsys)  # the same split, written otherwise
    assert rc == 0, err
    assert "85% [MASK] / 0% random / 15% kept" in (out / "README.md").read_text()


def test_a_run_that_stored_no_split_resumes_with_80_10_10(tmp_path, corpus_file, tokenizer_dir, capsys):
    out = tmp_path / "run"
    rc, err = train(["train", "roberta", "--corpus", str(corpus_file), "--tokenizer", str(tokenizer_dir), "--out",
                     str(out), "--steps", "2", "--stop-at", "1", *TINY], capsys)
    assert rc == 0, err
    run = json.loads((out / "run.json").read_text())
    assert run["settings"].pop("mask_split") == "80/10/10"
    (out / "run.json").write_text(json.dumps(run))  # as a run started before the split was a setting
    rc, err = train(["train", "roberta", "--out", str(out), "--resume", "--no-progress"], capsys)
    assert rc == 0, err
    assert json.loads((out / "run.json").read_text())["settings"]["mask_split"] == "80/10/10"


def test_quality_measures_a_run_with_its_own_split_and_the_card_says_so(tmp_path, corpus_file, tokenizer_dir,
                                                                        capsys):
    from ctxmodels.release import successors
    from tests.test_successor_quality import quality, run_eval

    run = tmp_path / "electra"
    rc, err = train(["train", "electra", "--corpus", str(corpus_file), "--tokenizer", str(tokenizer_dir), "--out",
                     str(run), "--steps", "3", "--mask-split", "85/0/15", *TINY], capsys)
    assert rc == 0, err
    entry = quality([run], corpus_file, tmp_path / "report.json", "--bert-sequences", "4")["models"]["electra"]
    assert entry["heldout_settings"]["mask_split"] == "85/0/15"
    own = run_eval(run)
    assert own
    for key, value in own.items():  # the same sequences and masks as the run's own evaluation
        assert entry["heldout"][key] == pytest.approx(value, rel=1e-6, abs=1e-9), key
    how = successors._how("electra", entry["heldout_sequences"], entry["heldout_settings"])
    assert "85% [MASK], 0% random, 15% kept" in how
    assert "80% [MASK], 10% random, 10% kept" in successors._how("roberta", 4, {"seed": 0, "max_seq_len": 32})
