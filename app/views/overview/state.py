"""The Overview's first try, as one frozen value read from its widgets and the URL: one word in two sentences, and
the models that read it."""

from __future__ import annotations

from dataclasses import dataclass

SENTENCE_A = "We sat on the bank of the river and watched the boats."
SENTENCE_B = "She paid the money into her account at the bank."
WORD = "bank"
MAX_WORD_CHARS = 100


@dataclass(frozen=True)
class TryState:
    a: str  # sentence A, as typed
    b: str
    word: str
    models: tuple[str, ...]
    senses: bool  # also name the dictionary sense each model reads in A and in B
