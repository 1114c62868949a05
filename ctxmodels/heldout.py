"""Which documents of a corpus a training run holds out: whole documents drawn with the run's seed, so that every
trainer (``training/corpus.py``) and every measurement of a trained model (the held-out sentence pairs of the app's
*How they learn* page, ``analysis/sentence_pairs.py``) finds the same text from a run's settings alone.
"""

from __future__ import annotations

import random
import warnings
from collections.abc import Sequence

from .text import CorpusError


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
