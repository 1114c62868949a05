"""The held-out split shared by every trainer.

A corpus (read by :func:`ctxmodels.text.read_documents`) is a list of documents, each a list of paragraphs.
All three trainers (BERT, ELMo, static vectors) hold out whole documents with :func:`split_documents`, so with
the same ``--heldout-docs`` and seed their held-out scores are measured on the same text.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..heldout import default_heldout, heldout_indices
from ..text import Document, read_documents

__all__ = ["default_heldout", "heldout_documents", "heldout_indices", "split_documents"]


def split_documents(
    docs: Sequence[Document], heldout: int | Sequence[int] | None = None, seed: int = 0
) -> tuple[list[Document], list[Document]]:
    """Split documents into (train, held-out), holding out whole documents; both keep the corpus order."""
    held = set(heldout_indices(len(docs), heldout, seed))
    train = [d for i, d in enumerate(docs) if i not in held]
    test = [d for i, d in enumerate(docs) if i in held]
    return train, test


def heldout_documents(corpus: str | Path, heldout: int | Sequence[int] | None = None,
                      seed: int = 0) -> tuple[list[Document], list[int]]:
    """Every document of the corpus file, and the indices of those a training run with the same ``heldout`` and
    ``seed`` held out: what each model's held-out measurement starts from."""
    docs = read_documents(corpus)
    return docs, heldout_indices(len(docs), heldout, seed)
