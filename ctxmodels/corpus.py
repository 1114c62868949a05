"""Plain-text corpora and the held-out split shared by every trainer.

A corpus is a UTF-8 text file with one paragraph a line and a blank line between documents (novels, articles).
All three trainers (BERT, ELMo, static vectors) hold out whole documents with :func:`split_documents`, so with
the same ``--heldout-docs`` and seed their held-out scores are measured on the same text.
"""

from __future__ import annotations

import hashlib
import random
import warnings
from collections.abc import Sequence
from pathlib import Path

Document = list[str]  # the paragraphs of one document, in order


class CorpusError(ValueError):
    """A corpus that cannot be used; the message names the file and says what to do."""


def read_documents(path: str | Path) -> list[Document]:
    """Read a corpus into documents: lists of paragraph lines, split at blank lines.

    Lines are stripped; runs of blank lines count as one separator. The file is decoded line by line, so a
    non-UTF-8 byte is reported with its line number, and memory stays close to the size of the text itself.
    """
    path = Path(path)
    if not path.exists():
        raise CorpusError(f"{path}: corpus file not found")
    if not path.is_file():
        raise CorpusError(f"{path}: not a file (pass a plain-text corpus file with --corpus)")
    docs: list[Document] = []
    current: Document = []
    try:
        with open(path, "rb") as f:
            for lineno, raw in enumerate(f, start=1):
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as e:
                    raise CorpusError(
                        f"{path}: line {lineno} is not UTF-8 ({e.reason} at byte {e.start} of the line); "
                        "convert the file to UTF-8 first, e.g. `iconv -f latin1 -t utf-8`"
                    ) from None
                if lineno == 1:
                    line = line.lstrip("\ufeff")  # byte-order mark written by some editors
                line = line.strip()
                if line:
                    current.append(line)
                elif current:
                    docs.append(current)
                    current = []
    except OSError as e:
        raise CorpusError(f"{path}: cannot read the corpus ({e.strerror or e})") from e
    if current:
        docs.append(current)
    if not docs:
        raise CorpusError(f"{path}: the corpus is empty (no text lines); expected one paragraph a line")
    return docs


def default_heldout(n_docs: int) -> int:
    """Held-out documents when ``--heldout-docs`` is not given: 2, or 1 for corpora of under 10 documents."""
    return 2 if n_docs >= 10 else 1


def heldout_indices(n_docs: int, heldout: int | Sequence[int] | None, seed: int = 0) -> list[int]:
    """Indices (sorted) of the documents to hold out: ``heldout`` of them drawn with ``seed``, or the given list.

    The draw uses Python's ``random.Random(seed).sample``, which is stable across platforms and versions.
    """
    if n_docs <= 0:
        raise CorpusError("the corpus has no documents")
    if heldout is None:
        heldout = default_heldout(n_docs)
    if isinstance(heldout, int):
        if heldout < 0:
            raise CorpusError(f"--heldout-docs must be 0 or more, got {heldout}")
        chosen = sorted(random.Random(seed).sample(range(n_docs), heldout)) if heldout < n_docs else None
        count = heldout
    else:
        chosen = sorted(int(i) for i in heldout)
        bad = [i for i in chosen if not 0 <= i < n_docs]
        if bad:
            raise CorpusError(f"held-out document indices {bad} are out of range: the corpus has {n_docs} documents")
        if len(set(chosen)) != len(chosen):
            raise CorpusError(f"held-out document indices {chosen} contain duplicates")
        count = len(chosen)
    if chosen is None or count >= n_docs:
        raise CorpusError(
            f"the corpus has {n_docs} document{'s' * (n_docs != 1)} (documents are separated by blank lines); "
            f"holding out {count} leaves none to train on. Add documents, or pass --heldout-docs 0 to train "
            "without a held-out evaluation"
        )
    if count == 0:
        warnings.warn("no held-out documents (--heldout-docs 0): training without a held-out evaluation",
                      stacklevel=2)
    return chosen


def split_documents(
    docs: Sequence[Document], heldout: int | Sequence[int] | None = None, seed: int = 0
) -> tuple[list[Document], list[Document]]:
    """Split documents into (train, held-out), holding out whole documents; both keep the corpus order."""
    held = set(heldout_indices(len(docs), heldout, seed))
    train = [d for i, d in enumerate(docs) if i not in held]
    test = [d for i, d in enumerate(docs) if i in held]
    return train, test


def file_sha256(path: str | Path) -> str:
    """Hex sha256 of a file, read in 1 MiB blocks (keys the training-data caches to the corpus content)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
