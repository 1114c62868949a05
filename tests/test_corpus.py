"""Reading corpora and the held-out split every trainer shares."""

from __future__ import annotations

import warnings

import pytest

from ctxmodels import text
from ctxmodels.text import CorpusError, read_documents
from ctxmodels.training.corpus import default_heldout, heldout_indices, split_documents


def _write(tmp_path, text: str | bytes, name: str = "c.txt"):
    path = tmp_path / name
    (path.write_bytes if isinstance(text, bytes) else path.write_text)(text)
    return path


def test_documents_are_split_at_blank_lines(tmp_path):
    path = _write(tmp_path, "\ufeffFirst para.\n  Second para.  \n\n\n \t\nDoc two.\r\nMore.\r\n\r\nDoc three")
    assert read_documents(path) == [["First para.", "Second para."], ["Doc two.", "More."], ["Doc three"]]


@pytest.mark.parametrize("text", ["", "\n\n   \n\t\n"])
def test_empty_corpus_is_a_clear_error(tmp_path, text):
    path = _write(tmp_path, text)
    with pytest.raises(CorpusError, match="c.txt: the corpus is empty"):
        read_documents(path)


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(CorpusError, match="nope.txt: corpus file not found"):
        read_documents(tmp_path / "nope.txt")
    with pytest.raises(CorpusError, match="not a file"):
        read_documents(tmp_path)


def test_non_utf8_names_the_line(tmp_path):
    path = _write(tmp_path, "fine line\n\nstill fine\ncaf\xe9 au lait\n".encode("latin-1"))
    with pytest.raises(CorpusError, match=r"c.txt: line 4 is not UTF-8.*iconv"):
        read_documents(path)


def test_unreadable_file(tmp_path, monkeypatch):
    path = _write(tmp_path, "text\n")

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(text, "open", refuse, raising=False)
    with pytest.raises(CorpusError, match="c.txt: cannot read the corpus \\(Permission denied\\)"):
        read_documents(path)


def test_split_holds_out_whole_documents_deterministically():
    docs = [[f"doc {i} para {j}" for j in range(3)] for i in range(30)]
    train, held = split_documents(docs, 3, seed=7)
    assert len(held) == 3 and len(train) == 27
    assert all(d in docs for d in held)
    assert not any(d in held for d in train)
    # corpus order is kept on both sides
    assert train == sorted(train, key=docs.index) and held == sorted(held, key=docs.index)
    assert split_documents(docs, 3, seed=7) == (train, held)
    assert heldout_indices(30, 3, seed=7) == [docs.index(d) for d in held]
    assert any(heldout_indices(30, 3, seed=s) != heldout_indices(30, 3, seed=7) for s in range(5))


def test_split_defaults_and_explicit_indices():
    assert default_heldout(99) == 2 and default_heldout(10) == 2 and default_heldout(9) == 1
    docs = [[str(i)] for i in range(12)]
    assert len(split_documents(docs)[1]) == 2
    assert len(split_documents(docs[:4])[1]) == 1
    train, held = split_documents(docs, [5, 2])
    assert held == [["2"], ["5"]] and len(train) == 10


def test_split_errors_say_what_to_do():
    docs = [["only one"]]
    with pytest.raises(CorpusError, match="1 document .*leaves none to train on.*--heldout-docs 0"):
        split_documents(docs)
    with pytest.raises(CorpusError, match="leaves none"):
        split_documents([["a"], ["b"]], 2)
    with pytest.raises(CorpusError, match="0 or more"):
        split_documents([["a"], ["b"]], -1)
    with pytest.raises(CorpusError, match="out of range"):
        split_documents([["a"], ["b"]], [2])
    with pytest.raises(CorpusError, match="duplicates"):
        split_documents([["a"], ["b"], ["c"]], [1, 1])


def test_holding_out_nothing_warns():
    with pytest.warns(UserWarning, match="no held-out documents"):
        train, held = split_documents([["a"]], 0)
    assert train == [["a"]] and held == []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        split_documents([["a"], ["b"]], 1)


@pytest.mark.shared_data
def test_real_corpus_has_99_novels(shared_data):
    path = shared_data / "corpus" / "eltec-eng.txt"
    docs = read_documents(path)
    assert len(docs) == 99
    metadata = (shared_data / "corpus" / "eltec-eng-metadata.tsv").read_text(encoding="utf-8").strip().splitlines()
    assert len(metadata) - 1 == 99  # a header line, then one novel a line
    assert sum(len(d) for d in docs) > 200_000
