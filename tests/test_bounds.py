"""Declared ranges of options and settings (ctxmodels.bounds), and the command line's checks of the paths it is
given: one message naming the option, never a default in place of a value, never a traceback."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

from ctxmodels import cli, text
from ctxmodels.bounds import float_range, int_range
from ctxmodels.text import CorpusError, read_text_file
from tests.test_static import TRAIN_ARGS, write_two_group_corpus


def test_a_bound_parses_checks_and_says_its_range():
    b = int_range(1, 65536)
    assert b.parse("--batch-size", "32") == 32 and b.parse("--batch-size", " 1e3 ") == 1000
    for bad in ("0", "65537", "2.5", "nan", "inf", "", "x", "1e400", "True"):
        with pytest.raises(ValueError, match="^--batch-size must be a whole number between 1 and 65536, got "):
            b.parse("--batch-size", bad)
    with pytest.raises(ValueError, match="got 0$"):
        b.check("--batch-size", 0)
    for bad in (True, 2.0, "3", None, float("nan")):
        assert not b.contains(bad)
    lr = float_range(0, 10, lo_open=True)
    assert lr.parse("--lr", "1e-3") == 0.001 and lr.describe() == "above 0 and at most 10"
    for bad in ("0", "-1", "nan", "-inf", "inf", "10.5"):
        with pytest.raises(ValueError, match="^--lr must be above 0 and at most 10, got "):
            lr.parse("--lr", bad)
    assert float_range(0, 1, hi_open=True).describe() == "at least 0 and below 1"


@pytest.fixture
def corpus(tmp_path) -> Path:
    return write_two_group_corpus(tmp_path / "corpus.txt", docs=6, paragraphs=10)


def train(corpus: Path, out, *extra: str) -> int:
    return cli.main(["train", "static", "--corpus", str(corpus), "--out", str(out), *TRAIN_ARGS, *extra])


@pytest.mark.parametrize("option, value, message", [
    ("--steps", "0", "argument --steps: must be a whole number between 1 and 1000000000, got 0"),
    ("--steps", "-1", "argument --steps: must be a whole number between 1 and 1000000000, got -1"),
    ("--warmup", "-5", "argument --warmup: must be a whole number between 0 and 1000000000, got -5"),
    ("--log-every", "0", "argument --log-every: must be a whole number between 1 and 1000000000, got 0"),
    ("--threads", "-1", "argument --threads: must be a whole number between 1 and 1024, got -1"),
    ("--batch-size", "0", "argument --batch-size: must be a whole number between 1 and 1048576, got 0"),
    ("--vocab-size", "0", "argument --vocab-size: must be a whole number between 1 and 100000000, got 0"),
    ("--lr", "nan", "argument --lr: must be above 0 and at most 10, got nan"),
    ("--time-limit", "inf", "argument --time-limit: must be between 0 and 10000000, got inf"),
    ("--stop-at", "-1", "argument --stop-at: must be a whole number between 0 and 1000000000, got -1"),
    ("--subsample", "1", "argument --subsample: must be at least 0 and below 1, got 1.0"),
    ("--dim", "ten", "argument --dim: must be a whole number between 1 and 2048, got 'ten'"),
])
def test_an_option_out_of_range_is_refused_by_name(corpus, tmp_path, capsys, option, value, message):
    assert train(corpus, tmp_path / "run", f"{option}={value}") == 2
    err = capsys.readouterr().err
    assert err.splitlines()[-1].endswith(message) and not (tmp_path / "run").exists()


@pytest.mark.parametrize("argv, message", [
    (["neighbours", "--model", "static-eltec", "--k", "0", "bank"], "argument --k: must be a whole number"),
    (["fill-mask", "--model", "bert-eltec", "--top-k", "-3", "[MASK]"], "argument --top-k: must be a whole number"),
    (["embed", "--model", "x", "--input", "x", "--out", "x", "--batch-size", "nan"], "argument --batch-size:"),
    (["probe", "--model", "x", "--task", "pos", "--epochs", "0"], "argument --epochs:"),
    (["quality", "--model", "x", "--bert-sequences", "1e12"], "argument --bert-sequences:"),
    (["eval", "wsd", "--data", "x", "--model", "x", "--batch-size", "0"], "argument --batch-size:"),
    (["train", "static", "--out", "", "--corpus", "c.txt"], "--out must not be empty"),
    (["eval", "wsd", "--data", "x", "--model", "x", "--words", " "], "--words must not be empty"),
    (["ship", "runs/x", ""], "a PATH must not be empty"),
])
def test_every_command_refuses_bad_values_in_one_line(capsys, tmp_path, monkeypatch, argv, message):
    monkeypatch.chdir(tmp_path)  # an empty path means the current folder: never the checkout's
    assert cli.main(argv) == 2
    last = capsys.readouterr().err.splitlines()[-1]
    assert "error:" in last and message in last


def test_out_must_be_a_folder_of_its_own(corpus, tmp_path, capsys):
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "notes.md").write_text("mine")
    assert train(corpus, theirs, "--steps", "2") == 2
    assert "holds files that are not a training run's (notes.md)" in capsys.readouterr().err
    assert sorted(p.name for p in theirs.iterdir()) == ["notes.md"]
    assert train(corpus, corpus, "--steps", "2") == 2
    assert "is a file, not a folder" in capsys.readouterr().err
    # the corpus itself and a log beside the run are fine (the app writes both into the run's folder)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "corpus.txt").write_text(corpus.read_text())
    (mine / "train.log").write_text("")
    assert train(mine / "corpus.txt", mine, "--steps", "2") == 0


def test_ship_never_replaces_a_folder_that_is_not_a_shipped_model(corpus, tmp_path, capsys, monkeypatch):
    run = tmp_path / "run"
    assert train(corpus, run, "--steps", "2") == 0
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "notes.md").write_text("mine")
    monkeypatch.chdir(project)
    for target in (str(project), ".", str(tmp_path), str(run)):
        assert cli.main(["ship", str(run), target]) == 2, target
        assert "shipping would replace it" in capsys.readouterr().err
    assert cli.main(["ship", str(run), str(project / "src")]) == 0  # an empty folder: fine
    assert (project / "notes.md").read_text() == "mine"
    assert cli.main(["ship", str(run), str(project / "src")]) == 0  # an earlier shipped model: replaced


def test_resume_with_steps_it_has_taken_is_refused_before_anything_changes(corpus, tmp_path, capsys):
    out = tmp_path / "run"
    assert train(corpus, out, "--steps", "6") == 0
    before = (out / "run.json").read_text()
    for steps in ("3", "6"):
        assert cli.main(["train", "static", "--out", str(out), "--resume", "--steps", steps]) == 2
        assert "the run is at step 6 already" in capsys.readouterr().err
    assert (out / "run.json").read_text() == before
    assert cli.main(["train", "static", "--out", str(out), "--resume", "--no-progress"]) == 2  # finished: says so
    assert "already took its 6 steps" in capsys.readouterr().err
    assert cli.main(["train", "static", "--out", str(out), "--resume", "--steps", "8", "--no-progress"]) == 0
    assert json.loads((out / "run.json").read_text())["settings"]["steps"] == 8


def test_a_text_file_is_read_defensively(tmp_path, monkeypatch):
    monkeypatch.setattr(text, "PIPE_WAIT_S", 0.2)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    started = time.monotonic()
    with pytest.raises(CorpusError, match="a named pipe that nothing wrote to"):
        read_text_file(fifo)
    assert time.monotonic() - started < 5
    # a pipe with a writer is read like a file

    def write():
        with open(fifo, "w", encoding="utf-8") as f:
            f.write("the bank\n")

    writer = threading.Thread(target=write)
    writer.start()
    assert read_text_file(fifo) == "the bank\n"
    writer.join()
    with pytest.raises(CorpusError, match="a device or socket"):
        read_text_file("/dev/zero")
    with pytest.raises(CorpusError, match="a folder, not a file"):
        read_text_file(tmp_path)
    (tmp_path / "big.txt").write_text("x" * 100)
    with pytest.raises(CorpusError, match="too big"):
        read_text_file(tmp_path / "big.txt", max_bytes=10)
    (tmp_path / "bin.txt").write_bytes(b"ok\n\x00\x01")
    with pytest.raises(CorpusError, match="line 2 holds a NUL byte"):
        read_text_file(tmp_path / "bin.txt")


def test_a_whole_number_too_big_for_a_float_is_out_of_range_not_an_error():
    with pytest.raises(ValueError, match="between 1 and 10"):
        int_range(1, 10).parse("--steps", "1" * 400)
    assert not int_range(1, 10).contains(10**400)
