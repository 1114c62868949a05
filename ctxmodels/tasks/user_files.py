"""A user's own task from a file: ``text<TAB>label`` lines (sentence classification), a ``text_a<TAB>text_b<TAB>label``
file (sentence-pair classification) or a CoNLL-style ``word<TAB>label`` file (token labelling), checked line by line
with messages that say what to fix."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path

from ..text import tokenize
from .data import SPLIT_SEED, Example, TaskData, TaskError
from .splits import assemble

MAX_FILE_BYTES = 256 * 2**20
MAX_LINE_CHARS = 20_000       # one example a line: a sentence or paragraph, not a book
MAX_SENTENCE_WORDS = 1_000
MIN_USER_EXAMPLES = 10
NO_LABEL = "_"                # CoNLL-style files: a word without a label (not scored)


def _user_lines(path: str | Path, what: str) -> Iterable[tuple[int, str]]:
    path = Path(path)
    if not path.exists():
        raise TaskError(f"{path}: file not found (a task is pos, ner, wsd:LEMMA, period or a .tsv / CoNLL file)")
    if not path.is_file():
        raise TaskError(f"{path}: not a regular file; give a {what}")
    size = path.stat().st_size
    if size == 0:
        raise TaskError(f"{path}: the file is empty; a {what} has one example a line")
    if size > MAX_FILE_BYTES:
        raise TaskError(f"{path}: {size / 2**20:.0f} MB is more than the {MAX_FILE_BYTES // 2**20} MB a task file "
                        "may have; sample it down first")
    with path.open("rb") as f:
        for n, raw in enumerate(f, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise TaskError(f"{path}, line {n}: not UTF-8 ({e.reason} at byte {e.start}); convert the file, e.g. "
                                "`iconv -f latin1 -t utf-8`") from None
            if n == 1:
                line = line.lstrip("\ufeff")
            if "\x00" in line:
                raise TaskError(f"{path}, line {n}: a NUL byte: a binary file, not a {what}")
            line = line.rstrip("\r\n")
            if len(line) > MAX_LINE_CHARS:
                raise TaskError(f"{path}, line {n}: {len(line):,} characters, more than {MAX_LINE_CHARS:,}; an "
                                "example is a sentence or a paragraph: split long texts first")
            yield n, line


def _check_labels(path: Path, labels: Counter, n_examples: int, what: str) -> None:
    if len(labels) < 2:
        only = next(iter(labels), "")
        raise TaskError(f"{path}: every {what} has the label {only!r}; a classifier needs two or more classes")
    if len(labels) > 50 and len(labels) > n_examples // 2:
        raise TaskError(f"{path}: {len(labels):,} different labels for {n_examples:,} examples: the labels look like "
                        "text. Are the columns in the order text<TAB>label (word<TAB>label)?")


def read_tsv_task(path: str | Path, seed: int = SPLIT_SEED) -> TaskData:
    """A sentence-classification task from ``text<TAB>label`` lines (an optional third column names the example's
    document; then the split is by document). A first line ``text<TAB>label`` is a header and skipped. Without
    documents the split is by example, seeded with ``seed``."""
    path = Path(path)
    examples, groups = [], []
    columns: tuple[int, int] | None = None    # (number of columns, line that set it)
    for n, line in _user_lines(path, "text<TAB>label file"):
        if not line.strip():
            continue
        fields = line.split("\t")
        if n == 1 and [f.strip().lower() for f in fields[:2]] == ["text", "label"]:
            continue
        if len(fields) == 1:
            raise TaskError(f"{path}, line {n}: no tab; each line is text<TAB>label (a tab, not spaces, before the "
                            "label)")
        if len(fields) > 3:
            raise TaskError(f"{path}, line {n}: {len(fields)} tab-separated columns; expected text<TAB>label or "
                            "text<TAB>label<TAB>document (a tab inside the text? replace it with a space)")
        if columns is None:
            columns = (len(fields), n)
        elif len(fields) != columns[0]:
            raise TaskError(f"{path}, line {n}: {len(fields)} columns, but line {columns[1]} has {columns[0]}; every "
                            "line needs the same columns")
        text, label = fields[0], fields[1].strip()
        words = tokenize(text)
        if not words:
            raise TaskError(f"{path}, line {n}: the text is empty")
        if not label:
            raise TaskError(f"{path}, line {n}: the label is empty")
        doc = fields[2].strip() if len(fields) == 3 else ""
        if len(fields) == 3 and not doc:
            raise TaskError(f"{path}, line {n}: the document column is empty")
        examples.append(Example(tuple(words), label, doc or f"line {n}"))
        groups.append(doc or f"line {n}")
    return _user_task(path, "sentence", examples, groups, seed, by_document=columns is not None and columns[0] == 3)


#: the header of a sentence-pair file: two texts and a label, in any order, and optionally the document
PAIR_COLUMNS = ("text_a", "text_b", "label")
PAIR_HEADER = "text_a<TAB>text_b<TAB>label (optionally <TAB>document)"


def is_pair_file(path: Path) -> bool:
    """Whether the first line of ``path`` is a sentence-pair header (it names text_a or text_b)."""
    if path.is_file() and path.stat().st_size == 0:
        return False  # the reader says it is empty
    for _, line in _user_lines(path, "text_a<TAB>text_b<TAB>label file"):
        return bool({"text_a", "text_b"} & {f.strip().lower() for f in line.split("\t")})
    return False


def _pair_columns(path: Path, header: str) -> dict[str, int]:
    names = [f.strip().lower() for f in header.split("\t")]
    for name in PAIR_COLUMNS:
        if name not in names:
            raise TaskError(f"{path}, line 1: the header names no {name} column; a sentence-pair file starts with "
                            f"the header {PAIR_HEADER}")
    unknown = [n for n in names if n not in PAIR_COLUMNS + ("document",)]
    if unknown or len(set(names)) != len(names):
        raise TaskError(f"{path}, line 1: the header {' | '.join(names)} has "
                        f"{'an unknown column ' + repr(unknown[0]) if unknown else 'a column twice'}; a sentence-pair "
                        f"file starts with the header {PAIR_HEADER}")
    return {n: i for i, n in enumerate(names)}


def read_pair_task(path: str | Path, seed: int = SPLIT_SEED) -> TaskData:
    """A sentence-pair classification task ([CLS] A [SEP] B [SEP]) from a tab-separated file whose first line is
    the header ``text_a<TAB>text_b<TAB>label`` (columns in any order; an optional ``document`` column names the
    example's document, and then the split is by document). Without documents the split is by example, seeded
    with ``seed``."""
    path = Path(path)
    examples, groups = [], []
    columns: dict[str, int] = {}
    for n, line in _user_lines(path, "text_a<TAB>text_b<TAB>label file"):
        if n == 1:
            columns = _pair_columns(path, line)
            continue
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != len(columns):
            raise TaskError(f"{path}, line {n}: {len(fields)} tab-separated columns, but the header has "
                            f"{len(columns)} ({' | '.join(columns)}); every line needs the same columns (a tab "
                            "inside a text? replace it with a space)")
        a, b = tokenize(fields[columns["text_a"]]), tokenize(fields[columns["text_b"]])
        label = fields[columns["label"]].strip()
        if not a or not b:
            raise TaskError(f"{path}, line {n}: {'text_a' if not a else 'text_b'} is empty")
        if not label:
            raise TaskError(f"{path}, line {n}: the label is empty")
        doc = fields[columns["document"]].strip() if "document" in columns else f"line {n}"
        if not doc:
            raise TaskError(f"{path}, line {n}: the document column is empty")
        examples.append(Example(tuple(a), label, doc, pair=tuple(b)))
        groups.append(doc)
    return _user_task(path, "pair", examples, groups, seed, by_document="document" in columns)


_DOCSTART = "-DOCSTART-"
_DOC_COMMENT = re.compile(r"#\s*doc(?:ument)?(?:_id)?\s*[:=]\s*(\S.*)$", re.IGNORECASE)


def _conll_rows(path: Path) -> Iterator[tuple[int, str, str]]:
    """(line number, word, label) for each word of a CoNLL-style file; ``("", "")`` at a blank line (a sentence
    ends) and ``(_DOCSTART, name)`` where a document starts (``name`` is "" for a bare ``-DOCSTART-``)."""
    columns: tuple[int, int] | None = None
    for n, line in _user_lines(path, "CoNLL-style word<TAB>label file"):
        stripped = line.strip()
        if not stripped:
            yield n, "", ""
            continue
        if stripped.startswith("# ") and "\t" not in line:
            m = _DOC_COMMENT.match(stripped)
            if m:
                yield n, _DOCSTART, m.group(1).strip()
            continue
        fields = line.split("\t") if "\t" in line else stripped.split()
        if fields[0] == _DOCSTART:
            yield n, _DOCSTART, ""
            continue
        if len(fields) < 2:
            raise TaskError(f"{path}, line {n}: one column; each line is word<TAB>label, with a blank line between "
                            "sentences")
        if columns is None:
            columns = (len(fields), n)
        elif len(fields) != columns[0]:
            raise TaskError(f"{path}, line {n}: {len(fields)} columns, but line {columns[1]} has {columns[0]}; the "
                            "label is the last column, so every line needs the same columns")
        word, label = fields[0].strip(), fields[-1].strip()
        if not word or not label:
            raise TaskError(f"{path}, line {n}: empty {'word' if not word else 'label'} (use {NO_LABEL} for a word "
                            "without a label)")
        if " " in word:
            raise TaskError(f"{path}, line {n}: the word {word[:40]!r} holds a space; one word a line")
        yield n, word, label


def read_conll_task(path: str | Path, seed: int = SPLIT_SEED) -> TaskData:
    """A token-labelling task from a CoNLL-style file: ``word<TAB>label`` a line (several columns: the first is
    the word, the last the label, as in CoNLL-2003), a blank line between sentences. ``-DOCSTART-`` or
    ``# doc: ID`` starts a document (then the split is by document); other lines starting ``# `` are comments.
    A label ``_`` leaves the word unlabelled (not scored). Without documents the split is by sentence, seeded
    with ``seed``."""
    path = Path(path)
    examples: list[Example] = []
    groups: list[str] = []
    words: list[str] = []
    labels: list[str] = []
    doc: str | None = None
    n_docs = 0
    start = 0

    def close() -> None:
        if words:
            if len(words) > MAX_SENTENCE_WORDS:
                raise TaskError(f"{path}, line {start}: a sentence of {len(words):,} words (more than "
                                f"{MAX_SENTENCE_WORDS:,}); is a blank line missing between sentences?")
            d = doc if doc is not None else f"sentence {len(examples) + 1}"
            examples.append(Example(tuple(words), tuple("" if x == NO_LABEL else x for x in labels), d))
            groups.append(d)
            words.clear()
            labels.clear()

    for n, word, label in _conll_rows(path):
        if word == _DOCSTART:
            close()
            n_docs += 1
            doc = label or f"document {n_docs}"
        elif not word:
            close()
        else:
            if not words:
                start = n
            words.append(word)
            labels.append(label)
    close()
    return _user_task(path, "token", examples, groups, seed, by_document=n_docs >= 3)


def _user_task(path: Path, kind: str, examples: list[Example], groups: list[str], seed: int,
               by_document: bool) -> TaskData:
    unit = "sentence" if kind == "token" else "example"
    if len(examples) < MIN_USER_EXAMPLES:
        raise TaskError(f"{path}: {len(examples)} {unit}(s); a task needs at least {MIN_USER_EXAMPLES} to fill a "
                        "train, dev and test split")
    counts: Counter = Counter()
    for ex in examples:
        counts.update([x for x in ex.label if x] if kind == "token" else [ex.label])
    if not counts:
        raise TaskError(f"{path}: no word has a label (every label is {NO_LABEL}); label the words to learn")
    _check_labels(path, counts, len(examples), "labelled word" if kind == "token" else "example")
    labels = sorted(counts, key=lambda x: (-counts[x], x))
    if by_document and len(set(groups)) < 3:
        by_document = False
    if not by_document:
        groups = [f"{unit} {i}" for i in range(len(examples))]
    what = {"sentence": "sentence classification (one label per text)", "token": "token labelling (one label per word)",
            "pair": "sentence-pair classification (one label per pair of texts)"}[kind]
    split = ("Split by the documents the file names (80/10/10 of the examples)." if by_document else
             f"The file names no documents (or fewer than three), so the split is by {unit}, seeded "
             f"(80/10/10): {unit}s from one text can be in training and test, which makes the test easier.")
    description = f"A user's task from {path.name}: {what}, {len(labels)} classes. {split}"
    return assemble(path.stem, kind, labels, examples, groups, description, f"{path.name} (user file)",
                    "document" if by_document else unit, seed=seed)


def looks_like_tsv(path: Path) -> bool:
    """A file of whole texts (a space inside the first column) rather than one word a line."""
    for i, (_, line) in enumerate(_user_lines(path, "task file")):
        if i >= 200:
            break
        if line.strip() and not line.startswith("# ") and " " in line.split("\t", 1)[0].strip() and "\t" in line:
            return True
    return False

