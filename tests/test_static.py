"""Static word vectors: skip-gram training on a toy corpus, saving and loading, text-format vectors, the CLI."""

from __future__ import annotations

import argparse
import gzip
import json
import random
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from ctxmodels import cli
from ctxmodels.checkpoint import CheckpointError
from ctxmodels.commands.train import add_kind_arguments, build
from ctxmodels.static import (
    StaticConfig,
    StaticVectors,
    UnknownWordError,
    load_static,
    load_text_vectors,
    sgns_loss,
)
from ctxmodels.training.static_task import (
    StaticSettings,
    StaticTask,
    build_task,
    context_pairs,
    keep_probabilities,
    load_or_prepare,
    prepare_data,
    tokenize,
)

FRUIT = ["apple", "banana", "cherry", "grape", "mango"]
METAL = ["iron", "copper", "zinc", "tin", "nickel"]
FILLER = ["the", "and", "a", "of"]


def write_two_group_corpus(path: Path, docs: int = 10, paragraphs: int = 24, seed: int = 0) -> Path:
    """Documents whose paragraphs each talk about one group only, with filler words shared by both."""
    rng = random.Random(seed)
    lines = []
    for d in range(docs):
        for p in range(paragraphs):
            group = FRUIT if (d + p) % 2 == 0 else METAL
            words = [rng.choice(group) if rng.random() < 0.7 else rng.choice(FILLER) for _ in range(10)]
            words[0] = words[0].capitalize()
            lines.append(" ".join(words) + ".")
        lines.append("")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


TRAIN_ARGS = ["--dim", "16", "--window", "2", "--negatives", "3", "--min-count", "1", "--subsample", "0",
              "--batch-size", "256", "--lr", "0.03", "--warmup", "5", "--log-every", "1", "--no-progress"]


def train_cli(corpus: Path, out: Path, *extra: str) -> int:
    return cli.main(["train", "static", "--corpus", str(corpus), "--out", str(out), *TRAIN_ARGS, *extra])


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    """One toy model trained through the command line, shared by the tests that only read it."""
    tmp = tmp_path_factory.mktemp("static")
    corpus = write_two_group_corpus(tmp / "corpus.txt")
    out = tmp / "model"
    assert train_cli(corpus, out, "--steps", "60", "--eval-every", "30", "--save-every", "40") == 0
    return out


def _losses(out: Path) -> dict[int, float]:
    recs = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    return {r["step"]: r["loss"] for r in recs if "loss" in r}


# ----------------------------------------------------------------------------------------------------------
# training


def test_neighbours_come_out_in_their_group(trained):
    model = StaticVectors.load(trained)
    for group, other in ((FRUIT, METAL), (METAL, FRUIT)):
        for word in group:
            top = [w for w, _ in model.most_similar(word, k=4)]
            assert set(top) == set(group) - {word}, (word, top)
            assert model.similarity(word, group[0 if word != group[0] else 1]) > model.similarity(word, other[0])


def test_training_lowers_the_heldout_loss_and_writes_a_card(trained):
    recs = [json.loads(line) for line in (trained / "metrics.jsonl").read_text().splitlines()]
    evals = [r["eval"] for r in recs if "eval" in r and r["eval"]]
    assert evals[-1]["heldout_loss"] < evals[0]["heldout_loss"]
    # the untrained model scores every pair 0: loss (1 + negatives) * log 2
    assert evals[-1]["heldout_loss"] < 4 * np.log(2) * 0.8
    # chance is 1/4 (the true word against 3 noise words); the untrained model, scoring all 0, gets 0
    assert 0.3 < evals[-1]["heldout_accuracy"] <= 1.0
    card = (trained / "README.md").read_text()
    assert "Nearest neighbours" in card and "corpus.txt" in card and "held-out loss" in card
    assert (trained / "static-data.npz").is_file()
    config = json.loads((trained / "config.json").read_text())
    assert config["model_type"] == "static" and config["dim"] == 16 and config["lowercase"] is True


def test_resume_is_exact(tmp_path):
    corpus = write_two_group_corpus(tmp_path / "corpus.txt", docs=6, paragraphs=12)
    common = ["--steps", "12", "--save-every", "5", "--eval-every", "0"]
    assert train_cli(corpus, tmp_path / "full", *common) == 0
    assert train_cli(corpus, tmp_path / "part", *common, "--time-limit", "0") == 0  # stops after step 1
    assert max(_losses(tmp_path / "part")) == 1
    # --resume needs none of the options again: not the corpus, the vectors' settings or the schedule (the run's
    # own are kept: 12 steps, not one epoch)
    assert cli.main(["train", "static", "--out", str(tmp_path / "part"), "--resume", "--no-progress"]) == 0
    full, resumed = _losses(tmp_path / "full"), _losses(tmp_path / "part")
    assert sorted(full) == sorted(resumed) == list(range(1, 13))
    for step in full:
        assert resumed[step] == pytest.approx(full[step], abs=1e-6), step
    a, b = load_file(tmp_path / "full" / "model.safetensors"), load_file(tmp_path / "part" / "model.safetensors")
    for key in a:
        torch.testing.assert_close(a[key], b[key], rtol=0, atol=1e-6)


def test_resume_with_other_settings_is_refused(tmp_path, capsys):
    corpus = write_two_group_corpus(tmp_path / "corpus.txt", docs=4, paragraphs=6)
    assert train_cli(corpus, tmp_path / "out", "--steps", "2", "--eval-every", "0") == 0
    assert train_cli(corpus, tmp_path / "out", "--steps", "4", "--resume", "--eval-every", "0", "--dim", "8") == 2
    assert "--dim 8 (the run used 16)" in capsys.readouterr().err
    assert train_cli(corpus, tmp_path / "out", "--resume", "--cased", "--window", "4") == 2
    err = capsys.readouterr().err
    assert "--cased (the run was without it)" in err and "--window 4 (the run used 2)" in err
    assert train_cli(corpus, tmp_path / "out", "--resume", "--eval-every", "0", "--lr", "0.1") == 2
    assert "--lr 0.1 (the run used 0.03)" in capsys.readouterr().err
    # a new --steps moves the run's end: train longer
    assert train_cli(corpus, tmp_path / "out", "--steps", "4", "--resume", "--eval-every", "0") == 0
    assert max(_losses(tmp_path / "out")) == 4


def test_a_run_started_before_run_json_resumes_from_its_checkpoint(tmp_path, capsys):
    """Older runs stored the schedule and the vectors' settings in the checkpoint only; the rest is given again."""
    corpus = write_two_group_corpus(tmp_path / "corpus.txt", docs=4, paragraphs=6)
    out = tmp_path / "out"
    assert train_cli(corpus, out, "--steps", "4", "--eval-every", "0", "--time-limit", "0") == 0
    (out / "run.json").unlink()
    resume = ["train", "static", "--out", str(out), "--resume", "--no-progress"]
    assert cli.main(resume) == 2
    assert "does not record its corpus; pass --corpus" in capsys.readouterr().err
    assert cli.main([*resume, "--corpus", str(corpus), "--dim", "8"]) == 2
    assert "--dim 8 (the run used 16)" in capsys.readouterr().err
    assert cli.main([*resume, "--corpus", str(corpus), "--batch-size", "256"]) == 0
    assert max(_losses(out)) == 4
    assert json.loads((out / "run.json").read_text())["settings"]["lr"] == 0.03


def test_settings_and_task_from_plain_values(tmp_path):
    corpus = write_two_group_corpus(tmp_path / "corpus.txt", docs=4, paragraphs=6)
    out = tmp_path / "out"
    settings = StaticSettings.resolve({"corpus": corpus, "dim": 8, "min_count": 1, "batch_size": 64}, out)
    assert settings.steps is None and settings.weight_decay == 0.0  # one epoch, decided by the data
    task, cfg = build_task(settings, out)
    assert cfg.max_steps == settings.steps == task.num_batches(0) and cfg.warmup_steps == min(100, cfg.max_steps // 10)
    stored = json.loads((out / "run.json").read_text())
    assert stored["kind"] == "static" and stored["settings"]["heldout_docs"] == 1  # the default, resolved
    assert stored["settings"]["corpus"] == str(corpus.resolve()) and len(stored["settings"]["corpus_sha256"]) == 64
    with pytest.raises(ValueError, match="--batch-size must be a whole number between 1 and 1048576, got 0"):
        StaticSettings.resolve({"corpus": corpus, "batch_size": 0}, tmp_path / "other")


def test_add_text_trains_on_more_documents_and_keeps_the_heldout_split(tmp_path):
    corpus = write_two_group_corpus(tmp_path / "corpus.txt", docs=4, paragraphs=6)
    added = tmp_path / "added.txt"
    added.write_text("zebras zebras zebras graze\n\nzebras graze again\n", encoding="utf-8")
    settings = dict(heldout_docs=None, seed=0, lowercase=True, min_count=1, vocab_size=1000)
    alone = prepare_data(corpus, **settings)
    more = prepare_data(corpus, add_text=added, **settings)
    assert [alone.words[i] for i in alone.heldout.ids] == [more.words[i] for i in more.heldout.ids]
    assert more.info["train_tokens"] == alone.info["train_tokens"] + 7 and "zebras" in more.words
    assert more.info["added_documents"] == 2 and more.info["heldout_documents"] == alone.info["heldout_documents"]
    task = _task(tmp_path, corpus, "--add-text", str(added))
    assert "plus the 2 documents of `added.txt`" in task.model_card({"metrics": {}})
    assert "zebras" in task.data.words


def _task(tmp_path: Path, corpus: Path, *extra: str) -> StaticTask:
    p = argparse.ArgumentParser()
    add_kind_arguments(p, "static")
    return build(p.parse_args(["--corpus", str(corpus), "--out", str(tmp_path / "out"), *TRAIN_ARGS, *extra]))[0]


def test_batches_are_a_pure_function_of_seed_epoch_and_index(tmp_path):
    corpus = write_two_group_corpus(tmp_path / "corpus.txt", docs=4, paragraphs=10)
    a = _task(tmp_path, corpus, "--subsample", "0.01")
    b = _task(tmp_path, corpus, "--subsample", "0.01")  # second build reads the cached corpus
    first = a.get_batch(1, 2)
    a.get_batch(0, 0), a.get_batch(3, 1)  # other epochs in between must not matter
    for key, value in b.get_batch(1, 2).items():
        assert torch.equal(value, first[key]), key
    assert a.num_batches(1) == b.num_batches(1) > 0
    assert not torch.equal(a.get_batch(0, 2)["center"], a.get_batch(1, 2)["center"])
    assert len(first["center"]) == len(first["context"]) == len(first["negatives"])
    assert first["negatives"].shape[1] == 3 and first["negatives"].max() < len(a.model)
    # --data-seed draws other batches; the held-out pairs and the initial vectors stay --seed's
    c = _task(tmp_path, corpus, "--subsample", "0.01", "--data-seed", "9")
    assert not torch.equal(c.get_batch(1, 2)["center"], first["center"])
    held_a, held_c = a._heldout_batch(), c._heldout_batch()
    assert held_a is not None and all(torch.equal(held_a[k], held_c[k]) for k in held_a)
    assert all(torch.equal(x, y) for x, y in zip(a.model.state_dict().values(), c.model.state_dict().values()))


def test_context_pairs_stay_in_their_window_and_paragraph():
    ids = np.arange(40, dtype=np.int32)  # id = position, so pairs reveal distances
    para = np.repeat(np.arange(4, dtype=np.int32), 10)
    center, context = context_pairs(ids, para, np.arange(40), 3, np.random.default_rng(0))
    dist = np.abs(center - context)
    assert len(center) > 40 and dist.min() >= 1 and dist.max() <= 3
    assert np.all(para[center] == para[context])
    # every centre has its immediate neighbours (window is at least 1) unless at a paragraph edge
    assert {(c, c + 1) for c in range(39) if para[c] == para[c + 1]} <= set(zip(center.tolist(), context.tolist()))


def test_subsampling_keeps_rare_words_and_thins_frequent_ones():
    counts = np.array([1_000_000, 10_000, 10])
    keep = keep_probabilities(counts, 1e-4)
    assert keep[2] == 1.0 and keep[0] < keep[1] < 1.0
    f = counts[0] / counts.sum()
    assert keep[0] == pytest.approx((np.sqrt(f / 1e-4) + 1) * 1e-4 / f, rel=1e-5)
    assert np.all(keep_probabilities(counts, 0) == 1.0)


def test_sgns_loss_by_hand():
    pos, neg = torch.tensor([0.0, 2.0]), torch.tensor([[0.0, 1.0], [-1.0, 3.0]])
    ls = torch.nn.functional.logsigmoid
    expected = -((ls(torch.tensor(0.0)) + ls(torch.tensor(0.0)) + ls(torch.tensor(-1.0)))
                 + (ls(torch.tensor(2.0)) + ls(torch.tensor(1.0)) + ls(torch.tensor(-3.0)))) / 2
    assert sgns_loss(pos, neg).item() == pytest.approx(expected.item())
    mask = torch.tensor([[True, False], [True, True]])
    assert sgns_loss(pos, neg, mask).item() == pytest.approx(expected.item() + ls(torch.tensor(-1.0)).item() / 2)


def test_tokenize_splits_punctuation_and_lowercases():
    assert tokenize("Don't run—the river-bank’s edge, Sir!") == [
        "don't", "run", "—", "the", "river-bank’s", "edge", ",", "sir", "!"]
    assert tokenize("Bank", lowercase=False) == ["Bank"]


# ----------------------------------------------------------------------------------------------------------
# bad training input


def test_empty_corpus_is_a_clear_error(tmp_path, capsys):
    (tmp_path / "empty.txt").write_text("\n\n")
    assert train_cli(tmp_path / "empty.txt", tmp_path / "out", "--steps", "2") == 2
    assert "empty" in capsys.readouterr().err


def test_one_line_corpus_is_a_clear_error(tmp_path, capsys):
    (tmp_path / "one.txt").write_text("The river bank was green.\n")
    assert train_cli(tmp_path / "one.txt", tmp_path / "out", "--steps", "2") == 2
    assert "leaves none to train on" in capsys.readouterr().err
    with pytest.warns(UserWarning, match="no held-out"):
        assert train_cli(tmp_path / "one.txt", tmp_path / "out", "--steps", "2", "--heldout-docs", "0",
                         "--min-count", "5") == 2
    assert "lower --min-count" in capsys.readouterr().err


def test_missing_corpus_is_a_clear_error(tmp_path, capsys):
    assert train_cli(tmp_path / "nope.txt", tmp_path / "out", "--steps", "2") == 2
    assert "not found" in capsys.readouterr().err


def test_cache_is_rebuilt_when_the_corpus_changes(tmp_path):
    corpus = tmp_path / "c.txt"
    settings = dict(heldout_docs=0, seed=0, lowercase=True, min_count=1, vocab_size=100)
    corpus.write_text("a b c\n")
    with pytest.warns(UserWarning, match="no held-out"):
        assert load_or_prepare(tmp_path, corpus, **settings).words == ["a", "b", "c"]
    corpus.write_text("x y\n")
    with pytest.warns(UserWarning, match="no held-out"):
        assert load_or_prepare(tmp_path, corpus, **settings).words == ["x", "y"]


# ----------------------------------------------------------------------------------------------------------
# the model: lookups, saving, loading


def small_model(with_output: bool = True) -> StaticVectors:
    words = ["river", "bank", "money", "water", "stream"]
    torch.manual_seed(0)
    model = StaticVectors(StaticConfig(vocab_size=5, dim=4, min_count=1), words, [50, 40, 30, 20, 10],
                          with_output=with_output)
    with torch.no_grad():
        model.input_embeddings.weight.copy_(torch.tensor([
            [1.0, 0.0, 0.0, 0.0], [0.7, 0.7, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0],
            [0.9, 0.0, 0.1, 0.0], [1.0, 0.0, 0.0, 0.1]]))
        if with_output:
            model.output_embeddings.weight.normal_()
    return model


def test_lookups_and_most_similar_by_hand():
    m = small_model()
    assert m.vector("BANK").tolist() == pytest.approx([0.7, 0.7, 0.0, 0.0])  # lower-cased model
    assert m.vectors(["river", "money"]).shape == (2, 4)
    assert m.similarity("river", "river") == pytest.approx(1.0)
    assert m.similarity("river", "money") == pytest.approx(0.0)
    top = m.most_similar("river", k=3)
    assert [w for w, _ in top] == ["stream", "water", "bank"]
    assert top[2][1] == pytest.approx(np.sqrt(0.5))
    assert len(m.most_similar("river", k=100)) == 4  # all other words, never the word itself
    assert StaticVectors.from_vectors(["alone"], np.ones((1, 3))).most_similar("alone") == []
    assert "Money" in m and "gold" not in m


def test_unknown_word_is_a_clear_error_with_close_matches():
    m = small_model()
    with pytest.raises(UnknownWordError, match="'banks'.*close: bank.*not in the vocabulary") as e:
        m.vector("banks")
    assert isinstance(e.value, ValueError) and isinstance(e.value, KeyError)
    with pytest.raises(ValueError, match="'gold'; 'silver' are not in the vocabulary"):
        m.vectors(["river", "gold", "silver"])
    with pytest.raises(ValueError, match="k must be"):
        m.most_similar("river", k=0)


def test_save_load_round_trip(tmp_path):
    m = small_model()
    m.save(tmp_path / "m")
    assert {p.name for p in (tmp_path / "m").iterdir()} == {"config.json", "model.safetensors", "vocab.txt",
                                                            "README.md"}
    back = StaticVectors.load(tmp_path / "m")
    assert back.words == m.words and back.counts == m.counts and back.config == m.config
    for a, b in zip(m.state_dict().values(), back.state_dict().values()):
        assert torch.equal(a, b)
    assert back.most_similar("bank", 4) == m.most_similar("bank", 4)
    assert "Nearest neighbours" in (tmp_path / "m" / "README.md").read_text()

    bare = small_model(with_output=False)  # e.g. vectors from a text file: no output table, no counts
    bare.counts = None
    bare.save(tmp_path / "bare")
    back = StaticVectors.load(tmp_path / "bare")
    assert back.output_embeddings is None and back.counts is None
    assert np.array_equal(back.vectors(bare.words), bare.vectors(bare.words))
    with pytest.raises(ValueError, match="no output"):
        back(torch.tensor([0]), torch.tensor([1]), torch.tensor([[2]]))


@pytest.mark.parametrize("damage, message", [
    (lambda d: (d / "config.json").unlink(), "config.json: file not found"),
    (lambda d: (d / "config.json").write_text("{not json"), "not valid JSON"),
    (lambda d: (d / "config.json").write_text('{"model_type": "bert"}'), "not a static-vector model"),
    (lambda d: (d / "config.json").write_text('{"dim": -3, "vocab_size": 5}'), "dim must be a whole number between 1"),
    (lambda d: (d / "model.safetensors").write_bytes(b"garbage"), "not a readable weights file"),
    (lambda d: (d / "vocab.txt").write_text("river\nbank\n"), "vocab.txt: 2 words"),
    (lambda d: (d / "vocab.txt").write_text("a\t1\nb\tx\nc\t1\nd\t1\ne\t1\n"), "line 2: count 'x'"),
    (lambda d: (d / "vocab.txt").write_text("a\nb\na\nd\ne\n"), "'a' appears more than once"),
    (lambda d: (d / "vocab.txt").unlink(), "vocab.txt: file not found"),
])
def test_broken_files_give_clear_errors(tmp_path, damage, message):
    small_model().save(tmp_path)
    damage(tmp_path)
    with pytest.raises(CheckpointError, match=message):
        StaticVectors.load(tmp_path)


def test_shape_mismatch_names_the_file(tmp_path):
    small_model().save(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    config["dim"] = 8
    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match=r"model.safetensors: input_embeddings.weight has shape \(5, 4\)"):
        StaticVectors.load(tmp_path)


def test_from_vectors_wraps_any_table():
    m = StaticVectors.from_vectors(["[CLS]", "Bank", "bank"], np.eye(3, dtype=np.float32))
    assert not m.config.lowercase and m.vector("Bank").tolist() == [0, 1, 0]
    with pytest.raises(ValueError, match="appears twice"):
        StaticVectors.from_vectors(["a", "a"], np.eye(2))
    with pytest.raises(ValueError, match=r"\[2, dim\] table"):
        StaticVectors.from_vectors(["a", "b"], np.eye(3))


# ----------------------------------------------------------------------------------------------------------
# word2vec / GloVe text files


def test_text_vectors_with_and_without_header(tmp_path):
    (tmp_path / "w2v.txt").write_text("3 2\nriver 1.0 0.0 \nbank 0.6 0.8 \nmoney 0 1\n")
    (tmp_path / "glove.txt").write_text("river 1.0 0.0\nbank 0.6 0.8\nmoney 0 1e0\n")
    with gzip.open(tmp_path / "glove.txt.gz", "wt") as f:
        f.write("river 1.0 0.0\nbank 0.6 0.8\nmoney 0 1e0\n")
    for name in ("w2v.txt", "glove.txt", "glove.txt.gz"):
        m = load_text_vectors(tmp_path / name)
        assert m.words == ["river", "bank", "money"] and m.dim == 2, name
        assert m.vector("bank").tolist() == pytest.approx([0.6, 0.8])
        assert m.most_similar("money", 1)[0][0] == "bank"
    assert load_static(tmp_path / "glove.txt").words == ["river", "bank", "money"]
    assert load_text_vectors(tmp_path / "glove.txt", max_words=2).words == ["river", "bank"]
    # a word that holds a space (as in some GloVe files) stays whole
    (tmp_path / "space.txt").write_text("new york 1 2\nparis 3 4\n")
    assert load_text_vectors(tmp_path / "space.txt").words == ["new york", "paris"]


@pytest.mark.parametrize("text, message", [
    ("river 1 0\nbank 0.6\nmoney 0 1\n", "line 2: expected a word and 2 numbers"),
    ("river 1 0\nbank 0.6 0.8\nmoney 0 one\n", "line 3: 'one' is not a number"),
    ("river 1 0\nbank 0.6 0.8 0.1\n", "line 2: more than 2 numbers"),
    ("3 2\nriver 1 0\nbank 0.6 0.8\n", "header announces 3 vectors but the file has 2"),
    ("river 1 0\nbank nan 0\n", "line 2: the vector of 'bank' holds NaN"),
    ("", "no vectors found"),
    ("river\n", "line 1: expected a word followed by numbers"),
])
def test_malformed_text_vectors_name_the_line(tmp_path, text, message):
    (tmp_path / "v.txt").write_text(text)
    with pytest.raises(ValueError, match=message):
        load_text_vectors(tmp_path / "v.txt")


def test_text_vectors_edge_cases(tmp_path):
    (tmp_path / "v.bin").write_bytes(b"2 2\n\xff\xfe\x00\x01 garbage\n")
    with pytest.raises(ValueError, match="line 2 is not UTF-8"):
        load_text_vectors(tmp_path / "v.bin")
    (tmp_path / "dup.txt").write_text("a 1 0\nb 0 1\na 5 5\n")
    with pytest.warns(UserWarning, match="1 repeated word"):
        m = load_text_vectors(tmp_path / "dup.txt")
    assert m.vector("a").tolist() == [1, 0]
    with pytest.raises(ValueError, match="file not found"):
        load_text_vectors(tmp_path / "missing.txt")


# ----------------------------------------------------------------------------------------------------------
# ctxmodels neighbours


def test_neighbours_cli(trained, capsys):
    assert cli.main(["neighbours", "--model", str(trained), "Apple", "zinc", "--k", "4", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert set(result) == {"Apple", "zinc"}
    assert {w for w, _ in result["Apple"]} == set(FRUIT) - {"apple"}
    assert all(-1 <= s <= 1 for _, s in result["zinc"])
    assert cli.main(["neighbours", "--model", str(trained), "tin"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("tin:") and len(out.strip().splitlines()) == 1 + 10


def test_neighbours_cli_errors(trained, tmp_path, capsys):
    assert cli.main(["neighbours", "--model", str(trained), "apple", "aple", "gold"]) == 2
    err = capsys.readouterr().err
    assert "'aple' (close: apple)" in err and "'gold'" in err and "not in the vocabulary" in err
    assert cli.main(["neighbours", "--model", str(tmp_path / "nothing"), "apple"]) == 2
    assert "cannot find a model" in capsys.readouterr().err
    (tmp_path / "v.txt").write_text("river 1 0\nbank x 0\n")
    assert cli.main(["neighbours", "--model", str(tmp_path / "v.txt"), "river"]) == 2
    assert "line 2" in capsys.readouterr().err
