"""What Fill in the blank shows, as one frozen value read from its widgets and the URL: the sentence, the models,
the mode (the blanks written, or a word hidden), how many guesses, and which explanations are asked for."""

from __future__ import annotations

from dataclasses import dataclass

SENTENCE = "The boat drifted slowly towards the far [MASK] of the river."
LENS_GUESSES = 5  # the guesses per layer in "the guesses layer by layer" (a row of cells each)
DEBOUNCE_MS = 20  # the keystroke box waits this long after a key before it reports (keys closer together: one run)
TOP_K = dict(min_value=1, max_value=20)
MODES = {"masks": "the blanks I write", "word": "a word I hide"}
BY = {"hiding": "hiding each word", "gradients": "integrated gradients", "both": "both ways"}
GUESS_CHARS = 40  # the guess to explain


@dataclass(frozen=True)
class FillState:
    models: tuple[str, ...]
    mode: str  # "masks" or "word"
    k: int  # guesses per blank
    whole_words: bool
    why: bool  # show which words the answer rests on
    by: str  # by hiding, by integrated gradients, or both
    guess: str | None  # the guess to explain at every blank; None: each model's first
    lens: bool  # the guesses layer by layer
    compare: str | None  # sentence B of a minimal pair


def summary(mode: str, k: int, whole_words: bool, why: bool, by: str) -> str:
    """The settings in a few words (on the folded controls in presentation mode, drawn before the widgets)."""
    return (f"{MODES[mode]}, {k} guesses" + (", whole words" if whole_words else "")
            + (f", which words it rests on ({BY[by]})" if why else ""))
