"""Word-vector text files, as word2vec and GloVe write them: ``word v1 v2 ... vD`` a line, optionally a first
line ``N D`` (word2vec's header), gzip-compressed or not. :func:`read_text_vectors` reads one into a word list and
a float32 table, checking every line; :func:`ctxmodels.static.load_text_vectors` makes a model of them."""

from __future__ import annotations

import gzip
import itertools
import math
import os
import stat
import warnings
import zlib
from array import array
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

import numpy as np

from .bounds import Bound
from .checkpoint import CheckpointError
from .model_files import check_number, memory_budget, require_file

#: the longest line a word-vector text file may have (a 300-dimensional GloVe line is about 3 KB): a longer one
#: is not a vector line, and reading on would let one endless line (a decompression bomb) fill the memory
MAX_LINE_BYTES = 4 * 2**20
#: the largest magnitude a vector value may have (beyond it, squares overflow float32 in every cosine)
MAX_VECTOR_VALUE = 1e15
_BYTES_PER_WORD = 120  # what a word costs besides its vector while reading (the string, the index, the list)
GZIP_MAGIC = b"\x1f\x8b"


def read_text_vectors(path: str | Path, *, dim_bound: Bound,
                      max_words: int | None = None) -> tuple[list[str], np.ndarray]:
    """The file's words and their vectors [n, D] (float32), at most ``max_words`` of them.

    A repeated word keeps its first vector, with a warning. Anything that is not such a file (a malformed line, a
    line longer than :data:`MAX_LINE_BYTES`, a vector size outside ``dim_bound``, a value that is not a finite
    number within ±:data:`MAX_VECTOR_VALUE`, a damaged or truncated gzip stream, more vectors than fit in memory)
    raises a :class:`~ctxmodels.checkpoint.CheckpointError` naming the file and the line.
    """
    path = require_file(path, "word-vector file")
    table = _Table(path, dim_bound, memory_budget())
    compressed = False
    try:
        with _open_text(path) as (f, compressed):
            for n, line in _lines(f, path):
                table.add(n, line)
                if max_words is not None and len(table.words) >= max_words:
                    break
    except CheckpointError:
        raise
    except (OSError, EOFError, zlib.error) as e:
        what = "a damaged or truncated gzip file" if compressed else "cannot read the file"
        raise CheckpointError(f"{path}: {what} ({type(e).__name__}: {e})") from None
    return table.words, table.finish(whole_file=max_words is None)


class _Table:
    """The words and vectors read so far, the vector size (from the header or the first line) and the checks
    that need them: memory, the header's count, repeated words."""

    def __init__(self, path: Path, dim_bound: Bound, budget: int):
        self.path, self.dim_bound, self.budget = path, dim_bound, budget
        self.words: list[str] = []
        self.values = array("f")
        self.seen: set[str] = set()
        self.dim: int | None = None
        self.header_count: int | None = None
        self.duplicates = 0

    def add(self, n: int, line: str) -> None:
        """Line ``n`` of the file (not empty): the header or a word's vector."""
        path = self.path
        if n == 1 and _is_header(line):
            self.header_count, self.dim = (int(x) for x in line.split())
            self._check_dim(n)
            if 4 * self.header_count * self.dim + _BYTES_PER_WORD * self.header_count > self.budget:
                raise CheckpointError(f"{path}: the header announces {self.header_count:,} vectors of {self.dim:,} "
                                      f"numbers, more than fit in half of this machine's memory")
            return
        if self.dim is None:
            self.dim = _trailing_numbers(line.split())
            if self.dim < 1:
                raise CheckpointError(f"{path}: line {n}: expected a word followed by numbers, found {line[:60]!r}")
            self._check_dim(n)
        word, floats = _parse_vector_line(line, self.dim, path, n)
        if word in self.seen:
            self.duplicates += 1
            return
        self.seen.add(word)
        self.words.append(word)
        self.values.extend(floats)
        if 4 * len(self.values) + _BYTES_PER_WORD * len(self.words) > self.budget:
            raise CheckpointError(f"{path}: more vectors than fit in half of this machine's memory "
                                  f"({len(self.words):,} read by line {n})")

    def _check_dim(self, n: int) -> None:
        try:
            check_number(self.dim_bound, "the vector size", self.dim)
        except ValueError as e:
            raise CheckpointError(f"{self.path}: line {n}: {e}") from None

    def finish(self, whole_file: bool) -> np.ndarray:
        """The [n, D] table; checks that there is one and, for a ``whole_file``, that the header's count holds."""
        path, words = self.path, self.words
        if not words:
            raise CheckpointError(f"{path}: no vectors found (expected lines 'word v1 v2 ...')")
        if self.header_count is not None and whole_file and len(words) + self.duplicates != self.header_count:
            raise CheckpointError(f"{path}: the header announces {self.header_count} vectors but the file has "
                                  f"{len(words) + self.duplicates}; the file may be truncated")
        if self.duplicates:
            # stacklevel: the warning points at the caller of load_text_vectors
            warnings.warn(f"{path}: {self.duplicates} repeated word(s); kept the first vector of each", stacklevel=4)
        return np.frombuffer(self.values, dtype=np.float32).reshape(len(words), self.dim)


def _lines(f: BinaryIO, path: Path) -> Iterator[tuple[int, str]]:
    """(line number, text without trailing blanks) of the file's non-empty lines, each checked for its length and
    its UTF-8."""
    for n in itertools.count(1):
        raw = f.readline(MAX_LINE_BYTES + 1)
        if not raw:
            return
        if len(raw) > MAX_LINE_BYTES:
            raise CheckpointError(f"{path}: line {n} is longer than {MAX_LINE_BYTES // 2**20} MB; not a "
                                  "word-vector text file")
        try:
            line = raw.decode("utf-8").rstrip()
        except UnicodeDecodeError:
            raise CheckpointError(f"{path}: line {n} is not UTF-8 text (binary word2vec files are not "
                                  "supported; convert them to the text format)") from None
        if line:
            yield n, line


@contextmanager
def _open_text(path: Path) -> Iterator[tuple[BinaryIO, bool]]:
    """The file's bytes, decompressed when it starts as gzip does (whatever its name), and whether it was."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as e:
        raise CheckpointError(f"{path}: cannot open the word-vector file ({e.strerror or e})") from None
    with os.fdopen(fd, "rb") as raw:
        if not stat.S_ISREG(os.fstat(raw.fileno()).st_mode):
            raise CheckpointError(f"{path}: not a regular file, cannot be a word-vector file")
        compressed = raw.read(2) == GZIP_MAGIC
        raw.seek(0)
        if compressed:
            with gzip.GzipFile(fileobj=raw, mode="rb") as f:
                yield f, True
        else:
            yield raw, False


def _is_header(line: str) -> bool:
    parts = line.split()
    return (len(parts) == 2 and all(p.isascii() and p.isdigit() for p in parts) and int(parts[1]) > 0
            and len(parts[0]) < 19 and len(parts[1]) < 19)


def _parse_vector_line(line: str, dim: int, path: Path, n: int) -> tuple[str, list[float]]:
    # Split from the right so that a word holding a space (GloVe has a few) stays whole.
    parts = line.rsplit(maxsplit=dim)
    word, values = parts[0], parts[1:]
    if len(values) < dim:
        raise CheckpointError(f"{path}: line {n}: expected a word and {dim} numbers, found {len(parts)} field(s)")
    if any(c in word for c in "\t\r\n"):
        last = word.split()[-1]
        if _is_number(last):
            raise CheckpointError(f"{path}: line {n}: more than {dim} numbers (earlier lines have {dim})")
        raise CheckpointError(f"{path}: line {n}: the word {word[:60]!r} holds a tab or line break")
    if " " in word:
        last = word.split()[-1]
        if _is_number(last):
            raise CheckpointError(f"{path}: line {n}: more than {dim} numbers (earlier lines have {dim})")
    try:
        floats = [float(v) for v in values]
    except ValueError:
        bad = next(v for v in values if not _is_number(v))
        raise CheckpointError(f"{path}: line {n}: {bad[:60]!r} is not a number") from None
    if not all(math.isfinite(x) for x in floats):
        raise CheckpointError(f"{path}: line {n}: the vector of {word[:60]!r} holds NaN or infinity")
    if max(map(abs, floats)) > MAX_VECTOR_VALUE:
        raise CheckpointError(f"{path}: line {n}: the vector of {word[:60]!r} holds a value beyond "
                              f"±{MAX_VECTOR_VALUE:.0e}; not a word vector")
    return word, floats


def _trailing_numbers(fields: list[str]) -> int:
    """How many fields at the end of the first line are numbers (at most all but one): the vector size."""
    n = 0
    while n < len(fields) - 1 and _is_number(fields[-1 - n]):
        n += 1
    return n


def _is_number(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True

