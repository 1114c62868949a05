"""A full-text index of a plain-text corpus: every occurrence of a word in a whole corpus, in milliseconds.

The corpus format is :func:`ctxmodels.text.read_documents`' (one paragraph a line, blank lines between documents).
Each paragraph is cut into sentences by the project's own tokenizer and sentence splitter, and each sentence is
stored twice in one SQLite file: its text as written, and its words (folded by :func:`fold`: casefolded and in
Unicode's composed form, NFC, so that a word typed with "é" finds it written as "e" and a combining accent and the
other way round; joined by single spaces) in an FTS5 table. FTS5's ``ascii`` tokenizer is told that every ASCII
character but the space belongs to a token (non-ASCII characters always do), so FTS5's tokens are exactly the
project's words and its token positions are the project's word positions; a lookup reads the positions of a word's
forms straight from the index (``fts5vocab``) and re-tokenizes only the sentences it returns, checking each hit on
the way. Counts and hits are therefore those of a plain scan with :func:`ctxmodels.text.tokenize_with_offsets`. FTS5
keeps only the first 32,768 bytes of a token, so a word longer than :data:`MAX_WORD_BYTES` in UTF-8 is refused as a
query in one line (it could not be told from the longer words that share its beginning); such words in the corpus
are indexed, cut, and never confuse a search for a shorter word.

The index lives in the project cache (``cache_dir()/corpus-index``; the corpus folder may be read-only), is
built into a temporary file and renamed into place when complete, and is rebuilt when the corpus content, the
tokenizer rules or this file format change: the corpus is hashed on every open (SHA-256, about 0.06 s for a
64 MB corpus), so a file changed in place with the same size and modification time is noticed. An index file
that fails a cheap check on opening (SQLite's ``quick_check``, about 0.13 s for the 124 MB index of a 64 MB
corpus; its tables; the stored counts against the rows and the full-text index's own totals) is rebuilt with a
warning naming the file and the problem, never trusted; one found damaged while reading is a one-line
:class:`~ctxmodels.text.CorpusError` and is removed, so the next open rebuilds it.

    index = CorpusIndex.open("corpus.txt")
    index.count("bank", inflections=True)          # every occurrence of bank, banks, bank's, banked, ...
    found = index.lookup("bank", limit=100)       # 100 occurrences sampled evenly across the documents
"""

from __future__ import annotations

import bisect
import csv
import hashlib
import io
import os
import random
import re
import sqlite3
import threading
import unicodedata
import warnings
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .bounds import MAX_SEED, int_range
from .checkpoint import atomic_file, file_sha256, remove_stale_temps, write_failure
from .paths import cache_dir
from .text import (
    CorpusError,
    iter_paragraphs,
    read_text_file,
    sentence_token_ranges,
    tokenize,
    tokenize_with_offsets,
    tokenizer_fingerprint,
    word_count,
)
from .text import inflections as simple_inflections

MAX_LIMIT = 5000
FORMAT_VERSION = 3  # bump when the schema or what is stored changes: older files are then rebuilt

LIMIT = int_range(1, MAX_LIMIT)
#: the longest word (its folded form, in UTF-8 bytes) a search finds exactly: FTS5 cuts its tokens at 32,768 bytes,
#: so a term of 32,768 bytes would also count every longer word beginning with it
MAX_WORD_BYTES = 32_767
SEED = int_range(0, MAX_SEED)

_BATCH = 20_000  # sentences per executemany: large enough to amortise the calls, small enough for memory
_STALE_TEMP_S = 600.0  # a build writes its temporary constantly; one untouched this long was left by a kill
# Every ASCII character but the space is a token character, so only the spaces we join words with separate
# FTS5 tokens (letters, digits and non-ASCII characters are token characters of `ascii` anyway).
_TOKEN_CHARS = "".join(chr(i) for i in range(1, 128) if not chr(i).isalnum() and chr(i) != " ")


def _fts_tokenizer() -> str:
    """The ``tokenize=`` argument, quoted twice over: a '...' string for FTS5 inside a "..." SQL identifier."""
    inner = "ascii tokenchars '" + _TOKEN_CHARS.replace("'", "''") + "'"
    return '"' + inner.replace('"', '""') + '"'


_SCHEMA = f"""
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE documents(id INTEGER PRIMARY KEY, first_sentence INTEGER NOT NULL);
-- `after` is the character that follows the sentence in its paragraph: the tokenizer looks one character
-- ahead ("Mr." before a letter is "Mr" + "."), so re-tokenizing text + after gives the paragraph's words.
CREATE TABLE sentences(id INTEGER PRIMARY KEY, document INTEGER NOT NULL, line INTEGER NOT NULL,
                       text TEXT NOT NULL, after TEXT NOT NULL);
CREATE VIRTUAL TABLE words USING fts5(tokens, content='', columnsize=0, detail=full, tokenize={_fts_tokenizer()});
CREATE VIRTUAL TABLE word_rows USING fts5vocab(words, row);
CREATE VIRTUAL TABLE word_positions USING fts5vocab(words, instance);
"""
# every table of the schema, FTS5's shadow tables among them: a file lacking one is damaged
_TABLES = frozenset({"meta", "documents", "sentences", "words", "words_data", "words_idx", "words_config", "word_rows",
                     "word_positions"})
_COUNTS = ("n_documents", "n_sentences", "n_words", "n_tokens")  # meta values that must be counts


# ----------------------------------------------------------------------------------------------------------
# what a lookup returns


@dataclass(frozen=True)
class Hit:
    """One occurrence of a word: ``sentence[char_span[0]:char_span[1]] == word``."""

    document: int  # 0-based document number in the file
    document_name: str  # from the metadata file beside the corpus, else "document N" (1-based)
    line: int  # 1-based line number of the paragraph in the file
    sentence_id: int  # row id of the sentence in the index
    sentence: str  # the sentence exactly as in the file (a slice of the stripped paragraph line)
    char_span: tuple[int, int]
    word: str  # as written


@dataclass
class Lookup:
    hits: list[Hit]  # the sampled occurrences, in corpus order
    total: int  # every occurrence in the corpus (before the limit)
    n_sentences: int  # sentences that contain the word (before the limit)
    n_documents: int  # documents that contain it
    forms: frozenset[str]  # the casefolded word forms searched


def fold(word: str) -> str:
    """The form words are indexed and searched by: canonical caseless matching (Unicode's D145, NFD then
    casefold), composed again (NFC). "Café" with a precomposed "é" and "cafe" + U+0301 both fold to "café"."""
    return unicodedata.normalize("NFC", unicodedata.normalize("NFD", word).casefold())


def word_forms(word: str, inflections: bool | Iterable[str] = False) -> frozenset[str]:
    """The folded (:func:`fold`) forms to look for: ``word`` itself; with ``inflections=True`` also its simple
    inflections (:func:`ctxmodels.text.inflections`) and their possessives ('s and ’s: the tokenizer keeps
    "bank's" whole); a list of forms gives them explicitly. The one rule behind the index and the analysis'
    occurrence search."""
    if not isinstance(word, str) or not word.strip():
        raise ValueError("the target word is empty: give the word to look for, e.g. 'bank'")
    if len(word.split()) > 1:
        raise ValueError(f"the target must be one word, got {word!r}; give a single word such as 'bank'")
    w = fold(word.strip())
    if inflections is True:
        forms = simple_inflections(w)
        return frozenset(forms | {f + apo for f in forms for apo in ("'s", "’s")})
    if inflections is False or inflections is None:
        return frozenset({w})
    if isinstance(inflections, str):
        raise ValueError("inflections must be True/False or a list of word forms, not a string")
    return frozenset({w} | {fold(f.strip()) for f in inflections if f.strip()})


def index_path(corpus: str | Path, cache: str | Path | None = None) -> Path:
    """Where the index of ``corpus`` is kept: named after the file, keyed to its absolute path."""
    corpus = Path(corpus).resolve()
    key = hashlib.sha256(str(corpus).encode("utf-8", "surrogateescape")).hexdigest()[:12]
    name = re.sub(r"[^\w.-]+", "_", corpus.stem)[:60] or "corpus"
    return Path(cache if cache is not None else cache_dir() / "corpus-index") / f"{name}-{key}.sqlite"


# ----------------------------------------------------------------------------------------------------------
# the index


class CorpusIndex:
    """A corpus file's index, open read-only. Build or open it with :meth:`open`; safe to share between threads."""

    path: Path  # the corpus file
    db_path: Path  # the index file
    n_documents: int
    n_sentences: int
    n_words: int  # words as the tokenizer splits them, punctuation marks and symbols not counted
    sha256: str  # of the corpus content the index was built from
    document_names: list[str]

    def __init__(self, path: Path, db_path: Path, conn: sqlite3.Connection):
        self.path, self.db_path, self._conn = path, db_path, conn
        self._lock = threading.Lock()  # one connection, many threads (the app's script runs)
        meta = dict(conn.execute("SELECT key, value FROM meta"))
        self.n_documents, self.n_sentences = int(meta["n_documents"]), int(meta["n_sentences"])
        self.n_words, self.sha256 = int(meta["n_words"]), meta["sha256"]
        self._first_sentence = [s for (s,) in conn.execute("SELECT first_sentence FROM documents ORDER BY id")]
        self.document_names = document_names(path, self.n_documents)

    @classmethod
    def open(
        cls,
        corpus: str | Path,
        cache: str | Path | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> CorpusIndex:
        """The index of ``corpus``, built first when missing or stale (``progress(bytes_done, bytes_total)`` is
        called during a build). ``cache`` is the folder for index files (default ``cache_dir()/corpus-index``).
        A corpus that cannot be used raises :class:`ctxmodels.text.CorpusError`."""
        path = Path(corpus)
        if not path.exists():
            raise CorpusError(f"{path}: corpus file not found")
        if not path.is_file():
            raise CorpusError(f"{path}: not a file (pass a plain-text corpus file with --corpus)")
        path = path.resolve()
        db_path = index_path(path, cache)
        state = _state(path, db_path)
        if state not in ("current", "missing", "stale"):
            warnings.warn(f"{db_path}: the corpus index is damaged ({state}); rebuilding it", stacklevel=2)
        if state != "current":
            _build(path, db_path, progress)
        try:
            return cls._connected(path, db_path)
        except (sqlite3.Error, KeyError, ValueError):
            # Replaced between the check and the connection by something unusable: build once more.
            _build(path, db_path, progress)
            return cls._connected(path, db_path)

    @classmethod
    def _connected(cls, path: Path, db_path: Path) -> CorpusIndex:
        conn = _connect(db_path)
        try:
            return cls(path, db_path, conn)
        except BaseException:
            conn.close()
            raise

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> CorpusIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def document_of(self, sentence_id: int) -> int:
        """The 0-based document that holds a sentence (sentence ids run in corpus order)."""
        return bisect.bisect_right(self._first_sentence, sentence_id) - 1

    def count(self, word: str, inflections: bool | Iterable[str] = False) -> int:
        """How often ``word`` (and its forms) occurs in the corpus; every position counts."""
        forms = self._forms(word, inflections)
        marks = ",".join("?" * len(forms))
        with self._reading():
            (n,) = self._conn.execute(f"SELECT coalesce(sum(cnt), 0) FROM word_rows WHERE term IN ({marks})",
                                      sorted(forms)).fetchone()
        return int(n)

    def lookup(
        self, word: str, inflections: bool | Iterable[str] = False, limit: int | None = 1000, seed: int = 0
    ) -> Lookup:
        """The occurrences of ``word``: all of them when there are at most ``limit`` (``None``: no limit), else
        ``limit`` of them sampled evenly across the documents: each document's occurrences are shuffled with
        ``random.Random(seed)`` and taken in turn, one document after another, so one long novel cannot fill the
        sample and the same seed gives the same sample. Hits come back in corpus order."""
        if limit is not None:
            LIMIT.check("limit", limit)
        SEED.check("seed", seed)
        forms = self._forms(word, inflections)
        marks = ",".join("?" * len(forms))
        with self._reading():
            positions = self._conn.execute(
                f"SELECT doc, offset FROM word_positions WHERE term IN ({marks})", sorted(forms)).fetchall()
        positions.sort()
        hits = self._hits(self._sample(positions, limit, seed), forms)
        if hits is None:  # the index disagrees with the tokenizer: answer from the sentences themselves
            positions = self._scan({s for s, _ in positions}, forms)
            hits = self._hits(self._sample(positions, limit, seed), forms) or []
        sentences = {s for s, _ in positions}
        documents = {self.document_of(s) for s in sentences}
        return Lookup(hits, len(positions), len(sentences), len(documents), forms)

    # -- helpers

    @contextmanager
    def _reading(self) -> Iterator[None]:
        """Holds the connection; SQLite finding the file damaged while reading ends in one line."""
        with self._lock:
            try:
                yield
            except sqlite3.DatabaseError as e:
                raise self._damaged(str(e)) from None

    def _damaged(self, problem: str) -> CorpusError:
        """The error for an index found damaged while reading; the file is removed, so the next open rebuilds it."""
        try:
            self.db_path.unlink(missing_ok=True)
        except OSError:
            pass
        return CorpusError(f"{self.db_path}: the corpus index is damaged ({problem}); it has been removed and is "
                           f"rebuilt when {self.path.name} is opened again")

    @staticmethod
    def _forms(word: str, inflections: bool | Iterable[str]) -> frozenset[str]:
        forms = word_forms(word, inflections)
        words = tokenize(word.strip())
        if words != [word.strip()]:
            shown = " ".join(repr(w) for w in words)
            raise ValueError(f"{word.strip()!r} is not one word for the tokenizer (it reads {shown}); "
                             "look up one of those words instead")
        longest = max(forms, key=lambda f: len(f.encode("utf-8")))
        if len(longest.encode("utf-8")) > MAX_WORD_BYTES:
            raise ValueError(f"{longest[:20]!r}... ({len(longest):,} characters, {len(longest.encode('utf-8')):,} "
                             f"bytes in UTF-8) is too long to search: the longest word the index can search is "
                             f"{MAX_WORD_BYTES:,} bytes (as many characters of ASCII, fewer of other scripts)")
        return forms

    def _sample(self, positions: list[tuple[int, int]], limit: int | None, seed: int) -> list[tuple[int, int]]:
        if limit is None or len(positions) <= limit:
            return positions
        rng = random.Random(seed)
        by_document: dict[int, list[tuple[int, int]]] = {}
        for p in positions:
            by_document.setdefault(self.document_of(p[0]), []).append(p)
        queues = [by_document[d] for d in sorted(by_document)]
        for q in queues:
            rng.shuffle(q)
        picked: list[tuple[int, int]] = []
        turn = 0
        while len(picked) < limit:
            row = [q[turn] for q in queues if turn < len(q)]
            if len(picked) + len(row) > limit:  # the last turn is short: which documents get one is drawn too
                rng.shuffle(row)
                row = row[: limit - len(picked)]
            picked += row
            turn += 1
        return sorted(picked)

    def _sentences(self, ids: Iterable[int]) -> dict[int, tuple[int, int, str, str]]:
        """id -> (document, line, text, after), fetched in chunks under SQLite's limit on bound parameters."""
        ids = sorted(set(ids))
        found: dict[int, tuple[int, int, str, str]] = {}
        with self._reading():
            for i in range(0, len(ids), 500):
                chunk = ids[i:i + 500]
                rows = self._conn.execute("SELECT id, document, line, text, after FROM sentences WHERE id IN "
                                          f"({','.join('?' * len(chunk))})", chunk)
                found.update((r[0], r[1:]) for r in rows)
        return found

    def _hits(self, picked: list[tuple[int, int]], forms: frozenset[str]) -> list[Hit] | None:
        """The picked (sentence, word position) pairs as hits; None when one is not the word it should be."""
        rows = self._sentences(s for s, _ in picked)
        words: dict[int, list[tuple[str, int, int]]] = {}
        hits = []
        for sentence_id, position in picked:
            if sentence_id not in rows:
                raise self._damaged(f"sentence {sentence_id} is missing")
            document, line, text, after = rows[sentence_id]
            if sentence_id not in words:
                words[sentence_id] = [t for t in tokenize_with_offsets(text + after) if t[1] < len(text)]
            tokens = words[sentence_id]
            if position >= len(tokens) or fold(tokens[position][0]) not in forms:
                return None
            word, a, b = tokens[position]
            hits.append(Hit(document, self.document_names[document], line, sentence_id, text, (a, b), word))
        return hits

    def _scan(self, sentence_ids: set[int], forms: frozenset[str]) -> list[tuple[int, int]]:
        """Positions of ``forms`` found by re-tokenizing the given sentences (the slow, certain way)."""
        positions = []
        for sentence_id, (_, _, text, after) in sorted(self._sentences(sentence_ids).items()):
            tokens = [t for t in tokenize_with_offsets(text + after) if t[1] < len(text)]
            positions += [(sentence_id, i) for i, (w, _, _) in enumerate(tokens) if fold(w) in forms]
        return positions


# ----------------------------------------------------------------------------------------------------------
# opening and building


def _connect(db_path: Path) -> sqlite3.Connection:
    """A read-only connection: readers never write, so several processes can share one index file."""
    conn = sqlite3.connect(db_path.resolve().as_uri() + "?mode=ro", uri=True, check_same_thread=False,
                           timeout=30)
    try:
        conn.execute("PRAGMA query_only = 1")
        return conn
    except sqlite3.Error:
        conn.close()
        raise


def _state(corpus: Path, db_path: Path) -> str:
    """"current" when the index file serves the corpus as it is now; "missing"; "stale" for an index of other
    content, tokenizer rules or format; else what is wrong with the file (it is damaged)."""
    if not db_path.is_file():
        return "missing"
    try:
        conn = _connect(db_path)
    except sqlite3.Error as e:
        return f"cannot be opened: {e}"
    try:
        meta = {str(k): str(v) for k, v in conn.execute("SELECT key, value FROM meta")}
        if "format" not in meta:
            return "no meta record"
        if meta["format"] != str(FORMAT_VERSION) or meta.get("tokenizer") != tokenizer_fingerprint():
            return "stale"
        damage = _cut_or_grown(conn, db_path) or _damage(conn, meta)
    except sqlite3.Error as e:  # "database disk image is malformed", "no such table", ...
        return str(e)
    finally:
        conn.close()
    if damage:
        return damage
    # The content decides, not the size and time stamp: a file rewritten in place can keep both.
    if meta.get("size") != str(corpus.stat().st_size) or meta.get("sha256") != file_sha256(corpus):
        return "stale"
    return "current"


def _cut_or_grown(conn: sqlite3.Connection, db_path: Path) -> str | None:
    """A file whose size is not the pages its header counts (cut short or grown): SQLite can read a cut file without
    an error and find fewer words, so the size is checked before anything is read."""
    (pages,) = conn.execute("PRAGMA page_count").fetchone()
    (page_size,) = conn.execute("PRAGMA page_size").fetchone()
    size = db_path.stat().st_size
    return None if size == pages * page_size else f"{size:,} bytes where its {pages:,} pages make {pages * page_size:,}"


def _damage(conn: sqlite3.Connection, meta: dict[str, str]) -> str | None:
    """What a cheap check finds wrong with an index file of the present format (None: nothing)."""
    (check,) = conn.execute("PRAGMA quick_check(1)").fetchone()
    if check != "ok":
        return f"quick_check: {check}"
    missing = _TABLES - {name for (name,) in conn.execute("SELECT name FROM sqlite_master")}
    if missing:
        return "table(s) missing: " + ", ".join(sorted(missing))
    stored = {}
    for key in _COUNTS:
        if not re.fullmatch(r"[0-9]{1,15}", meta.get(key, "")):
            return f"meta {key} is {meta.get(key)!r}, not a count"
        stored[key] = int(meta[key])
    n_docs, first, last = conn.execute("SELECT count(*), min(first_sentence), max(first_sentence) FROM documents"
                                       ).fetchone()
    n_rows, lo, hi = conn.execute("SELECT count(*), min(id), max(id) FROM sentences").fetchone()
    fts_rows, fts_tokens = _fts_totals(conn)
    found = {"documents rows": (n_docs, stored["n_documents"]), "sentences rows": (n_rows, stored["n_sentences"]),
             "last sentence id": (hi or 0, stored["n_sentences"]), "full-text rows": (fts_rows, stored["n_sentences"]),
             "full-text tokens": (fts_tokens, stored["n_tokens"])}
    for what, (have, expected) in found.items():
        if have != expected:
            return f"{what}: {have:,}, the meta record says {expected:,}"
    if n_rows and (lo != 1 or first != 1 or last > hi):
        return "the documents do not start at sentences of the index"
    return None


def _fts_totals(conn: sqlite3.Connection) -> tuple[int, int]:
    """(rows, tokens) as the full-text index counts them: FTS5's averages record (rowid 1 of its data table) is
    the number of rows and then the tokens of each column, as SQLite varints."""
    row = conn.execute("SELECT block FROM words_data WHERE id = 1").fetchone()
    if row is None or not isinstance(row[0], bytes):
        return 0, 0
    block, values, at = row[0], [], 0
    while at < len(block) and len(values) < 2:
        value = 0
        for i in range(9):
            byte = block[at] if at < len(block) else 0
            at += 1
            if i == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if byte < 0x80:
                break
        values.append(value)
    return (values + [0, 0])[0], (values + [0, 0])[1]


def _build(corpus: Path, db_path: Path, progress: Callable[[int, int], None] | None) -> None:
    """Index ``corpus`` into a temporary file beside ``db_path``, then rename it into place: a reader sees the
    old file or the complete new one, and a build that fails or is interrupted leaves no index behind."""
    db_path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(db_path.parent, min_age_s=_STALE_TEMP_S)
    stat = corpus.stat()  # the stamp taken before reading: a file changed during the build is rebuilt next time
    with atomic_file(db_path) as tmp:
        conn = sqlite3.connect(tmp)
        try:
            _fill(conn, corpus, stat, progress)
        except sqlite3.Error as e:  # a full disk or the file-size limit, as SQLite reports them
            cause = write_failure(tmp, e, needed=stat.st_size)
            if cause is None:
                raise
            raise cause from e
        finally:
            conn.close()
            Path(f"{tmp}-journal").unlink(missing_ok=True)


def _fill(conn: sqlite3.Connection, corpus: Path, stat: os.stat_result,
          progress: Callable[[int, int], None] | None) -> None:
    # No journal and no syncing while building: the file is a temporary until it is complete, and atomic_file
    # flushes it to disk before renaming it.
    conn.executescript("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA temp_store = MEMORY;")
    conn.executescript(_SCHEMA)
    digest = hashlib.sha256()
    done = 0

    def on_line(raw: bytes) -> None:
        nonlocal done
        digest.update(raw)
        done += len(raw)

    sentences: list[tuple[int, int, int, str, str]] = []
    words: list[tuple[int, str]] = []
    first_sentence: list[tuple[int, int]] = []
    n_sentences = n_words = n_tokens = 0

    def flush() -> None:
        conn.executemany("INSERT INTO sentences VALUES (?, ?, ?, ?, ?)", sentences)
        conn.executemany("INSERT INTO words(rowid, tokens) VALUES (?, ?)", words)
        sentences.clear()
        words.clear()
        if progress is not None:
            progress(done, stat.st_size)

    if progress is not None:
        progress(0, stat.st_size)
    for document, line, paragraph in iter_paragraphs(corpus, on_line):
        if document == len(first_sentence):
            first_sentence.append((document, n_sentences + 1))
        tokens = tokenize_with_offsets(paragraph)
        n_words += word_count([t[0] for t in tokens])
        for a, b in sentence_token_ranges(tokens):
            n_sentences += 1
            n_tokens += b - a
            start, end = tokens[a][1], tokens[b - 1][2]
            sentences.append((n_sentences, document, line, paragraph[start:end], paragraph[end:end + 1]))
            # Folding the joined string equals folding each word: casefold maps character by character, and
            # normalisation never composes or reorders across a space (a starter that composes with nothing).
            words.append((n_sentences, fold(" ".join([t[0] for t in tokens[a:b]]))))
        if len(sentences) >= _BATCH:
            flush()
    flush()
    conn.executemany("INSERT INTO documents VALUES (?, ?)", first_sentence)
    conn.execute("INSERT INTO words(words) VALUES ('optimize')")  # one segment: the fastest lookups
    meta = {"format": FORMAT_VERSION, "tokenizer": tokenizer_fingerprint(), "sha256": digest.hexdigest(),
            "size": stat.st_size, "mtime_ns": stat.st_mtime_ns,
            "corpus": str(corpus).encode("utf-8", "backslashreplace").decode(),  # for people reading the file
            "n_documents": len(first_sentence), "n_sentences": n_sentences, "n_words": n_words,
            "n_tokens": n_tokens}
    conn.executemany("INSERT INTO meta VALUES (?, ?)", [(k, str(v)) for k, v in meta.items()])
    conn.commit()


# ----------------------------------------------------------------------------------------------------------
# document names

_EDITION = re.compile(r"(?:\s*:\s*ELTeC edition)+\s*$", re.IGNORECASE)  # one title says it twice
_LIFE_DATES = re.compile(r"\s*\([^()]*\d[^()]*\)\.?\s*$")  # "Eliot, George (1819-1880)."


def document_names(corpus: str | Path, n_documents: int) -> list[str]:
    """A name per document: "Title — Author" from ``<stem>-metadata.tsv`` beside the corpus (a header with a
    ``title`` column, optionally ``author``, and one row per document), else "document N"."""
    fallback = [f"document {i + 1}" for i in range(n_documents)]
    corpus = Path(corpus)
    tsv = corpus.with_name(f"{corpus.stem}-metadata.tsv")
    if not os.path.lexists(tsv):
        return fallback
    try:
        text = read_text_file(tsv, "metadata file", pipes=False)
        rows = [r for r in csv.reader(io.StringIO(text, newline=""), delimiter="\t", quoting=csv.QUOTE_NONE)
                if any(c.strip() for c in r)]
    except (CorpusError, csv.Error) as e:
        problem = str(e) if isinstance(e, CorpusError) else f"{tsv}: {e}"
        warnings.warn(f"{problem}; documents are named by number", stacklevel=2)
        return fallback
    if not rows or "title" not in rows[0] or len(rows) - 1 != n_documents:
        return fallback
    header = rows[0]
    t, a = header.index("title"), header.index("author") if "author" in header else None
    names = []
    for i, row in enumerate(rows[1:]):
        title = _EDITION.sub("", row[t]).strip() if t < len(row) else ""
        author = _LIFE_DATES.sub("", row[a]).strip() if a is not None and a < len(row) else ""
        names.append((f"{title} — {author}" if author else title) if title else fallback[i])
    return names
