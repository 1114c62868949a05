"""The corpus index (ctxmodels/corpus_index.py) and ``ctxmodels occurrences``.

Every count and hit is checked against a plain scan with the project's tokenizer, the definition the index must
meet; the rest covers when the index is rebuilt, sampling, limits and the command line.
"""

from __future__ import annotations

import json
import os
import sqlite3
import tempfile
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxmodels import corpus_index as ci
from ctxmodels.analysis import vectors as V
from ctxmodels.cli import main
from ctxmodels.corpus_index import MAX_LIMIT, CorpusIndex, word_forms
from ctxmodels.text import CorpusError, sentence_spans, split_sentences, tokenize_with_offsets, word_count

ODD = (
    "The bank of the river was steep. Mr.Bank went to the Bank's office! He met Mr. Bank there.\n"
    "She banked the fire; banks failed, banking was hard \u2014 and the bank\u2019s clerk ran.\n"
    "\"Run!\" he said. They were running, and he runs; the runner ran (run-down).\n"
    "A caf\u00e9, na\u00efve CAF\u00c9. Bank-holiday isn't bank. BANK bank Bank... 'bank' \u201cbanks\u201d.\n"
    "\n\n"
    "Nothing here but rivers.\n"
    "O\u2019Brien's rock-'n'-roll don't (bank) [banks] {bank's} <BANK> 1,000 banks' 3.14 \u00e9t\u00e9 _x_.\n"
    "\n"
    "The Bank! the bank? THE BANK. \u00abbank\u00bb bank\u00b7s bank\u2026 bank\n"
)
WORDS = ["bank", "Bank", "banks", "bank's", "bank\u2019s", "run", "ran", "running", "caf\u00e9", "CAF\u00c9",
         "na\u00efve", "river", "the", "xyzzy", "'", "\u2014", "mr", "Mr.", "isn't", "bank-holiday", "run-down", "-",
         ".", "o\u2019brien's", "1,000", "3.14", "_x_", "\u00e9t\u00e9", "\u2026", "\u00b7", "<", "{"]


def write(path, text: str):
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CTXMODELS_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture
def odd(tmp_path):
    return write(tmp_path / "odd.txt", ODD)


def plain_scan(path, forms) -> list[tuple[int, int, str, int, int, str]]:
    """(document, line, sentence, start, end, word) of every token whose fold (casefold, NFC) is a form: the
    definition."""
    found, document, in_document = [], 0, False
    for lineno, raw in enumerate(path.read_bytes().split(b"\n"), start=1):
        line = raw.decode("utf-8").lstrip("\ufeff").strip()
        if not line:
            document, in_document = document + in_document, False
            continue
        in_document = True
        spans = sentence_spans(line)
        for word, a, b in tokenize_with_offsets(line):
            if ci.fold(word) in forms:
                s, e = next((s, e) for s, e in spans if s <= a < e)
                found.append((document, lineno, line[s:e], a - s, b - s, word))
    return found


def as_rows(hits) -> list[tuple[int, int, str, int, int, str]]:
    return [(h.document, h.line, h.sentence, *h.char_span, h.word) for h in hits]


def assert_exact(index: CorpusIndex, path, word: str, inflections: bool) -> int:
    forms = word_forms(word, inflections)
    expected = plain_scan(path, forms)
    found = index.lookup(word, inflections, limit=None)
    assert as_rows(found.hits) == expected, (word, inflections)
    assert found.total == index.count(word, inflections) == len(expected)
    assert found.n_sentences == len({(d, line, s) for d, line, s, *_ in expected})  # no sentence repeats in ODD
    assert found.n_documents == len({row[0] for row in expected})
    assert found.forms == forms
    for h in found.hits:
        assert h.sentence[h.char_span[0]:h.char_span[1]] == h.word
    return len(expected)


# ----------------------------------------------------------------------------------------------------------
# exactness


def test_sentence_spans_give_the_sentences_of_split_sentences():
    for line in [*ODD.splitlines(), "", "  Two. Sentences!  ", "\"Go!\" he said. \u201cNo.\u201d (Yes.) Mr.X"]:
        spans = sentence_spans(line)
        assert all(line[a:b] == line[a:b].strip() != "" for a, b in spans)
        tokens = tokenize_with_offsets(line)
        assert [[w for w, s, _ in tokens if a <= s < b] for a, b in spans] == split_sentences(tokens)
        assert sum(b - a for a, b in spans) <= len(line.strip())


@pytest.mark.parametrize("inflections", [False, True])
def test_counts_and_hits_equal_a_plain_scan(odd, inflections):
    index = CorpusIndex.open(odd)
    found = {w: assert_exact(index, odd, w, inflections) for w in WORDS}
    assert found["xyzzy"] == 0 and found["bank"] > 10 and found["caf\u00e9"] == 2 and found["\u2014"] == 1
    assert found["mr"] == 1 and found["Mr."] == 1  # "Mr.Bank" is Mr + . + Bank; "Mr. Bank" keeps its title
    assert index.n_documents == 3 and index.n_sentences == sum(len(sentence_spans(x)) for x in ODD.splitlines())
    words = [w for x in ODD.splitlines() for w, _, _ in tokenize_with_offsets(x)]
    assert index.n_words == sum(1 for w in words if w[0].isalnum() or w[0] == "_") == word_count(words)


def test_inflections_and_possessives(odd):
    index = CorpusIndex.open(odd)
    words = {h.word for h in index.lookup("bank", inflections=True).hits}
    assert {"bank", "Bank", "BANK", "banks", "banked", "banking", "Bank's", "bank\u2019s", "bank's"} <= words
    assert {h.word for h in index.lookup("ran", inflections=True).hits} == {"Run", "running", "runs", "ran"}
    assert index.count("bank") < index.count("bank", inflections=True)
    assert index.count("run-down") == 1 and index.count("run", inflections=True) == 5  # run-down is a word of its own


def test_the_analysis_finds_the_same_occurrences(odd):
    """vectors.find_occurrences and the index share word_forms: the same sentences give the same count."""
    index = CorpusIndex.open(odd)
    sentences = [h.sentence for h in index.lookup("bank", inflections=True, limit=None).hits]
    assert V._target_forms("Bank", True) == word_forms("Bank", True)
    found = V.find_occurrences(sorted(set(sentences)), "bank", inflections=True)
    assert len(found.occurrences) == index.count("bank", inflections=True)


# pieces joined with and without spaces, so words, punctuation and quotes meet in every way
PIECES = ["bank", "Bank", "banks", "bank's", "Bank\u2019s", "ran", "run", ".", "!", "?", "\"", "'", "\u201c", "\u201d",
          "Mr.", "Mr", "(", ")", "-", "\u2014", "caf\u00e9", "na\u00efve", "St", "x", "1", ",", "...", "\u00e9", "\x01",
          "\u00a0"]
PARAGRAPH = st.lists(st.sampled_from(PIECES), min_size=1, max_size=12).map(
    lambda ws: "".join(w + (" " if i % 3 else "") for i, w in enumerate(ws)))


@settings(max_examples=25, deadline=None)
@given(st.lists(st.lists(PARAGRAPH, min_size=1, max_size=4), min_size=1, max_size=3))
def test_random_corpora_equal_a_plain_scan(documents):
    text = "\n\n".join("\n".join(paragraphs) for paragraphs in documents)
    if not text.strip():
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = write(Path(tmp) / "r.txt", text)
        with CorpusIndex.open(path, cache=tmp) as index:
            for word in ["bank", "run", ".", "'", "mr", "Mr.", "caf\u00e9", "\x01", "x"]:
                for inflections in (False, True):
                    forms = word_forms(word, inflections)
                    expected = plain_scan(path, forms)
                    found = index.lookup(word, inflections, limit=None)
                    assert as_rows(found.hits) == expected
                    assert found.total == index.count(word, inflections) == len(expected)


def test_a_wrong_position_in_the_index_falls_back_to_reading_the_sentences(odd, monkeypatch):
    index = CorpusIndex.open(odd)
    expected = as_rows(index.lookup("bank", limit=None).hits)
    real = index._sentences

    def shifted(ids):  # as if the index's word positions were off by one in every sentence
        return {i: (d, line, "x " + text, after) for i, (d, line, text, after) in real(ids).items()}

    monkeypatch.setattr(index, "_sentences", shifted)
    found = index.lookup("bank", limit=None)
    assert [row[5] for row in as_rows(found.hits)] == [row[5] for row in expected]
    assert found.total == len(expected)


# ----------------------------------------------------------------------------------------------------------
# sampling and limits


def test_sampling_is_reproducible_and_spread_across_documents(tmp_path):
    big = "\n".join(f"Line {i} has the bank and another bank." for i in range(100))
    small = ["A bank.\nThe banks.\nOne bank more." for _ in range(5)]
    path = write(tmp_path / "s.txt", "\n\n".join([big, *small]))
    index = CorpusIndex.open(path)
    found = index.lookup("bank", limit=10, seed=3)
    assert found.total == 200 + 10 and found.n_documents == 6 and found.n_sentences == 100 + 10
    assert len(found.hits) == 10
    per_document = [sum(h.document == d for h in found.hits) for d in range(6)]
    assert min(per_document) >= 1 and max(per_document) <= 2  # the long document does not take the sample
    assert [(h.sentence_id, h.char_span) for h in found.hits] == sorted((h.sentence_id, h.char_span)
                                                                        for h in found.hits)
    again = index.lookup("bank", limit=10, seed=3)
    assert again.hits == found.hits
    others = [index.lookup("bank", limit=10, seed=s).hits for s in range(4, 9)]
    assert any(o != found.hits for o in others)
    assert len(index.lookup("bank", limit=MAX_LIMIT).hits) == 210
    assert len(index.lookup("bank", limit=None).hits) == 210


@pytest.mark.parametrize("limit", [0, -1, MAX_LIMIT + 1, 2.5, True, "10"])
def test_limit_out_of_range_is_a_clear_error(odd, limit):
    with pytest.raises(ValueError, match=f"limit must be a whole number between 1 and {MAX_LIMIT}"):
        CorpusIndex.open(odd).lookup("bank", limit=limit)


@pytest.mark.parametrize("word, message", [("", "empty"), ("   ", "empty"), ("river bank", "one word"),
                                           ("bank.", "not one word for the tokenizer"),
                                           ("don't!", "not one word")])
def test_words_that_cannot_be_looked_up(odd, word, message):
    index = CorpusIndex.open(odd)
    with pytest.raises(ValueError, match=message):
        index.lookup(word)
    with pytest.raises(ValueError, match=message):
        index.count(word)


# ----------------------------------------------------------------------------------------------------------
# corpora that cannot be indexed


@pytest.mark.parametrize("content, message", [
    (None, "corpus file not found"), ("folder", "not a file"), (b"ok\ncaf\xe9\n", "line 2 is not UTF-8"),
    ("", "the corpus is empty"), ("\n \n\t\n", "the corpus is empty"), (b"a\x00b", "NUL byte"),
])
def test_unusable_corpora_are_clear_errors(tmp_path, cache, content, message):
    path = tmp_path / "c.txt"
    if content == "folder":
        path.mkdir()
    elif isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    with pytest.raises(CorpusError, match=message):
        CorpusIndex.open(path)
    assert not list(cache.rglob("*.sqlite")) and not [p for p in cache.rglob("*") if p.is_file()]


# ----------------------------------------------------------------------------------------------------------
# where the index lives and when it is rebuilt


def builds(monkeypatch) -> list:
    calls = []
    real = ci._build

    def counted(*args):
        calls.append(args[0])
        return real(*args)

    monkeypatch.setattr(ci, "_build", counted)
    return calls


def test_the_index_is_kept_in_the_cache_and_reused(odd, cache, monkeypatch):
    built = builds(monkeypatch)
    index = CorpusIndex.open(odd)
    assert index.db_path.parent == cache / "corpus-index" and index.db_path.name.startswith("odd-")
    assert index.path == odd.resolve() and len(index.sha256) == 64
    assert CorpusIndex.open(odd).count("bank") == index.count("bank")
    assert len(built) == 1
    with pytest.raises(sqlite3.OperationalError):  # opened read-only: a reader never writes
        index._conn.execute("DELETE FROM meta")


def test_an_odd_corpus_file_name(tmp_path):
    path = write(tmp_path / "my novels \U0001f642 (2).txt", ODD)
    index = CorpusIndex.open(path)
    assert index.db_path.name.startswith("my_novels_") and index.db_path.suffix == ".sqlite"
    assert index.count("bank") == len(plain_scan(path, {"bank"}))


def test_a_changed_file_is_reindexed(odd, monkeypatch):
    built = builds(monkeypatch)
    before = CorpusIndex.open(odd)
    write(odd, ODD + "\nA new bank document.\n")
    after = CorpusIndex.open(odd)
    assert len(built) == 2 and after.n_documents == 4 and after.count("bank") == before.count("bank") + 1
    # same size, new content, and the old modification time: the content hash decides
    stat = odd.stat()
    write(odd, ODD + "\nA new Bonk document.\n")
    os.utime(odd, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1))
    assert CorpusIndex.open(odd).count("bank") == before.count("bank") and len(built) == 3


def test_a_touched_file_with_the_same_content_is_not_reindexed(odd, monkeypatch):
    built = builds(monkeypatch)
    CorpusIndex.open(odd)
    os.utime(odd, ns=(odd.stat().st_atime_ns, odd.stat().st_mtime_ns + 10**9))
    hashed = []
    real_hash = ci.file_sha256
    monkeypatch.setattr(ci, "file_sha256", lambda p: hashed.append(p) or real_hash(p))
    CorpusIndex.open(odd)
    CorpusIndex.open(odd)
    assert len(built) == 1 and len(hashed) == 2  # hashed on every open: the time stamp alone proves nothing


def test_a_file_changed_in_place_with_the_same_size_and_time_is_reindexed(odd, monkeypatch):
    built = builds(monkeypatch)
    before = CorpusIndex.open(odd).count("bank")
    stat = odd.stat()
    write(odd, ODD.replace("bank", "bonk", 1))
    os.utime(odd, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert odd.stat().st_size == stat.st_size and odd.stat().st_mtime_ns == stat.st_mtime_ns
    assert CorpusIndex.open(odd).count("bank") == before - 1 and len(built) == 2


def test_other_tokenizer_rules_or_format_rebuild(odd, monkeypatch):
    built = builds(monkeypatch)
    CorpusIndex.open(odd)
    monkeypatch.setattr(ci, "tokenizer_fingerprint", lambda: "other rules")
    CorpusIndex.open(odd)
    monkeypatch.setattr(ci, "FORMAT_VERSION", ci.FORMAT_VERSION + 1)
    CorpusIndex.open(odd)
    CorpusIndex.open(odd)
    assert len(built) == 3


@pytest.mark.parametrize("damage", ["garbage", "empty", "foreign", "truncated", "no meta rows"])
def test_a_damaged_or_foreign_index_file_is_rebuilt(odd, damage):
    first = CorpusIndex.open(odd)
    expected = first.count("bank", inflections=True)
    first.close()
    db = first.db_path
    if damage == "garbage":
        db.write_bytes(os.urandom(5000))
    elif damage == "empty":
        db.write_bytes(b"")
    elif damage == "truncated":
        db.write_bytes(db.read_bytes()[:6000])
    else:
        if damage == "foreign":
            db.unlink()
        conn = sqlite3.connect(db)
        conn.execute("CREATE TABLE IF NOT EXISTS other(x)") if damage == "foreign" else conn.execute("DELETE FROM meta")
        conn.commit()
        conn.close()
    assert CorpusIndex.open(odd).count("bank", inflections=True) == expected


def test_an_index_cut_anywhere_is_rebuilt_not_read_short(tmp_path, monkeypatch):
    """SQLite reads some cut files without an error and finds fewer words (the fuzzing found a cut at byte 55,068):
    a file shorter than the pages its header counts is damaged, wherever the cut falls."""
    monkeypatch.setenv("CTXMODELS_CACHE", str(tmp_path / "cache"))
    corpus = tmp_path / "long.txt"
    corpus.write_text("\n\n".join(" ".join(f"the river bank word{i} {j}." for j in range(40)) for i in range(40)),
                      encoding="utf-8")
    first = CorpusIndex.open(corpus)
    expected = first.count("river")
    first.close()
    whole = first.db_path.read_bytes()
    for at in range(1000, len(whole), 997):
        first.db_path.write_bytes(whole[:at])
        with pytest.warns(UserWarning, match="damaged"):
            index = CorpusIndex.open(corpus)
        assert index.count("river") == expected, at
        index.close()


def _sql(db, *statements: str) -> None:
    conn = sqlite3.connect(db)
    for statement in statements:
        conn.execute(statement)
    conn.commit()
    conn.close()


def _overwrite_pages(db, first: int = 2) -> None:
    """Every page from ``first`` on (1-based) filled with bytes that are no b-tree page."""
    raw = bytearray(db.read_bytes())
    page = int.from_bytes(raw[16:18], "big")
    raw[(first - 1) * page:] = bytes([0x0D, 0xFF, 0xFF, 0xFF]) * ((len(raw) - (first - 1) * page) // 4)
    db.write_bytes(bytes(raw))


INDEX_DAMAGE = {
    "pages overwritten": lambda db: _overwrite_pages(db),
    "sentences dropped": lambda db: _sql(db, "DROP TABLE sentences"),
    "documents dropped": lambda db: _sql(db, "DROP TABLE documents"),
    "full-text data dropped": lambda db: _sql(db, "DROP TABLE words_data"),
    "sentences emptied": lambda db: _sql(db, "DELETE FROM sentences"),
    "documents emptied": lambda db: _sql(db, "DELETE FROM documents"),
    "full-text emptied": lambda db: _sql(db, "INSERT INTO words(words) VALUES ('delete-all')"),
    "last sentence removed": lambda db: _sql(db, "DELETE FROM sentences WHERE id = (SELECT max(id) FROM sentences)"),
    "negative count": lambda db: _sql(db, "UPDATE meta SET value = '-3' WHERE key = 'n_documents'"),
    "count not a number": lambda db: _sql(db, "UPDATE meta SET value = '1e3' WHERE key = 'n_words'"),
    "count too large": lambda db: _sql(db, "UPDATE meta SET value = value + 5 WHERE key = 'n_sentences'"),
    "tokens miscounted": lambda db: _sql(db, "UPDATE meta SET value = value - 1 WHERE key = 'n_tokens'"),
    "documents shifted": lambda db: _sql(db, "UPDATE documents SET first_sentence = first_sentence + 1"),
}


@pytest.mark.parametrize("damage", list(INDEX_DAMAGE))
def test_a_damaged_index_is_rebuilt_with_a_warning(odd, damage):
    first = CorpusIndex.open(odd)
    expected = first.count("bank", inflections=True), first.lookup("bank", limit=None).total
    first.close()
    INDEX_DAMAGE[damage](first.db_path)
    with pytest.warns(UserWarning, match=r"corpus index is damaged \(.+\); rebuilding it") as caught:
        index = CorpusIndex.open(odd)
    assert str(first.db_path) in str(caught[0].message) and "\n" not in str(caught[0].message)
    assert (index.count("bank", inflections=True), index.lookup("bank", limit=None).total) == expected


def test_an_index_damaged_while_open_is_one_line_and_removed(odd):
    index = CorpusIndex.open(odd)
    _overwrite_pages(index.db_path)
    with pytest.raises(CorpusError, match=r"the corpus index is damaged .*rebuilt when odd.txt is opened again"):
        index.lookup("bank", limit=None)
    assert not index.db_path.exists()
    assert CorpusIndex.open(odd).count("bank") == len(plain_scan(odd, {"bank"}))


def test_an_interrupted_build_leaves_no_index(odd, cache):
    def stop(done, total):
        if done:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        CorpusIndex.open(odd, progress=stop)
    assert [p for p in cache.rglob("*") if p.is_file()] == []
    seen = []
    CorpusIndex.open(odd, progress=lambda d, t: seen.append((d, t)))
    assert seen[0] == (0, len(ODD.encode())) and seen[-1] == (len(ODD.encode()),) * 2


def test_concurrent_opens_agree(odd):
    results, errors = [], []

    def open_and_count():
        try:
            with CorpusIndex.open(odd) as index:
                results.append(index.count("bank", inflections=True))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=open_and_count) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(set(results)) == 1 and len(results) == 4


def test_document_names_from_the_metadata_file(tmp_path):
    path = write(tmp_path / "novels.txt", "One bank.\n\nTwo banks.\n")
    assert CorpusIndex.open(path).document_names == ["document 1", "document 2"]
    write(tmp_path / "novels-metadata.tsv", "file\ttitle\tauthor\n"
          "a\tThe First : ELTeC edition\tAuthor, Ann (1800-1870).\nb\tSecond\t\n")
    index = CorpusIndex.open(path)
    assert index.document_names == ["The First \u2014 Author, Ann", "Second"]
    assert [h.document_name for h in index.lookup("bank", inflections=True).hits] == index.document_names
    write(tmp_path / "novels-metadata.tsv", "file\ttitle\na\tOnly one row\n")  # not one row per document
    assert CorpusIndex.open(path).document_names == ["document 1", "document 2"]


@pytest.mark.parametrize("damage", ["fifo", "latin-1", "folder"])
def test_a_metadata_file_that_cannot_be_read_is_a_warning_not_a_hang(tmp_path, damage):
    from ctxmodels.tasks.period import TaskError, _read_metadata

    path = write(tmp_path / "novels.txt", "One bank.\n\nTwo banks.\n")
    tsv = tmp_path / "novels-metadata.tsv"
    if damage == "fifo":
        os.mkfifo(tsv)
    elif damage == "folder":
        tsv.mkdir()
    else:
        tsv.write_bytes("file\ttitle\na\tCaf\u00e9\nb\tTwo\n".encode("latin-1"))
    found = []
    worker = threading.Thread(target=lambda: found.append(CorpusIndex.open(path).document_names), daemon=True)
    with pytest.warns(UserWarning, match=r"novels-metadata.tsv: .*; documents are named by number") as caught:
        worker.start()
        worker.join(30)
    assert found == [["document 1", "document 2"]], "waiting on a named pipe?"
    assert {"fifo": "named pipe", "folder": "a folder", "latin-1": "line 2 is not UTF-8"}[damage] in \
        str(caught[0].message)
    if damage != "folder":
        with pytest.raises(TaskError, match="novels-metadata.tsv: .*(named pipe|byte offset 16)"):
            _read_metadata(tsv)


# ----------------------------------------------------------------------------------------------------------
# the command line


def test_cli_count_json_and_listing(odd, capsys):
    expected = plain_scan(odd, word_forms("bank", True))
    assert main(["occurrences", "--corpus", str(odd), "--word", "Bank", "--inflections", "--count"]) == 0
    out, err = capsys.readouterr()
    assert out == f"{len(expected)}\n"
    assert main(["occurrences", "--corpus", str(odd), "--word", "bank", "--inflections", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["document"], r["line"], r["sentence"], r["start"], r["end"], r["word"]) for r in rows] == expected
    assert all(r["sentence"][r["start"]:r["end"]] == r["word"] and r["document_name"] for r in rows)
    assert main(["occurrences", "--corpus", str(odd), "--word", "bank", "--json", "--limit", "3", "--seed", "7"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 3
    assert main(["occurrences", "--corpus", str(odd), "--word", "bank", "--limit", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3 and all("[" in x and "]" in x for x in lines[:2])
    assert lines[-1].startswith(f"{plain_scan(odd, {'bank'}).__len__()} occurrence(s) of bank in ")
    assert main(["occurrences", "--corpus", str(odd), "--word", "xyzzy"]) == 0
    assert capsys.readouterr().out == "no occurrence of xyzzy in the 3 document(s)\n"


def test_cli_shows_progress_only_while_building(odd, capsys):
    assert main(["occurrences", "--corpus", str(odd), "--word", "bank", "--count"]) == 0
    assert "indexing the corpus" in capsys.readouterr().err
    assert main(["occurrences", "--corpus", str(odd), "--word", "bank", "--count"]) == 0
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("argv, message", [
    (["--corpus", "MISSING", "--word", "bank"], "corpus file not found"),
    (["--corpus", "DIR", "--word", "bank"], "not a file"),
    (["--corpus", "BINARY", "--word", "bank"], "NUL byte"),
    (["--corpus", "ODD", "--word", "river bank"], "must be one word"),
    (["--corpus", "ODD", "--word", "bank."], "not one word for the tokenizer"),
    (["--corpus", "ODD", "--word", ""], "--word must not be empty"),
    (["--corpus", "ODD", "--word", "bank", "--limit", "0"], "--limit: must be a whole number between 1 and 5000"),
    (["--corpus", "ODD", "--word", "bank", "--seed", "-1"], "--seed: must be a whole number"),
    (["--corpus", "ODD", "--word", "bank", "--count", "--json"], "not allowed with"),
])
def test_cli_errors_are_one_line(tmp_path, odd, capsys, argv, message):
    (tmp_path / "bin.txt").write_bytes(b"text\x00more")
    names = {"MISSING": str(tmp_path / "nope.txt"), "DIR": str(tmp_path), "BINARY": str(tmp_path / "bin.txt"),
             "ODD": str(odd)}
    assert main(["occurrences", *[names.get(a, a) for a in argv]]) == 2
    out, err = capsys.readouterr()
    assert out == "" and message in err and "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith(("ctxmodels: error:", "ctxmodels occurrences: error:"))
