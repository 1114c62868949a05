"""What *How they learn* can show, read from its widgets and the URL: its parts (BERT's corruption, left to right or
both ways, training curves, the objectives per unit of compute), the sentences it starts from and the limits of
what a visitor types; the draw a view shows is one frozen value, :class:`DrawState`, so the same link gives the
same draw."""

from __future__ import annotations

from dataclasses import dataclass

from app.kit.presets import SAME_BEFORE_BANK

PARTS = {"corruption": "BERT's corruption", "directions": "Left to right or both ways", "electra": "ELECTRA",
         "pairs": "NSP or SOP", "curves": "Training curves", "compute": "Per unit of compute"}
# The measures of the comparison per unit of compute (ctxmodels.analysis.compute_comparison.MEASURES), as the choice
# names them.
COMPUTE_MEASURES = {"guesses": "Held-out guesses", "pos": "Part of speech", "senses": "Word senses"}
SENTENCE = "The old fisherman sat on the bank of the river and watched the boats drift slowly by."
# Sentences that make a point: a long word split into pieces (whole-word masking), an easy and a hard guess.
PRESETS = {
    SENTENCE: "a river scene",
    "The shipwrecked mariners were bewildered by the unfathomable tranquillity of the marshland.":
        "long words in pieces (try whole-word masking)",
    "She put the money in the bank and walked home along the river.": "one sentence, both banks",
    "It was the best of times, it was the worst of times.": "a famous opening",
}
PAIR_A, PAIR_B = SAME_BEFORE_BANK  # the same words before "bank": a left-to-right model cannot tell them apart there
PAIR_WORD = "bank"
# The shipped BERT first: it was trained here with both of BERT's objectives, and its training record ships with it.
DEFAULT_MODELS = ("bert-eltec", "minilm-eltec")
# A sentence pair, and a sentence from elsewhere for the "random" group (NSP's negative).
PAIR_FIRST = "She opened the door and looked into the dark room."
PAIR_NEXT = "Nobody had been inside it for years."
PAIR_OTHER = "The price of wheat rose again that autumn."
HELD_OUT = dict(min_value=20, max_value=500)  # pairs per group in the held-out measurement
HELD_OUT_DEFAULT = 100
SEED = dict(min_value=0, max_value=999_999)
MAX_WORDS = 60  # a sentence or two: every word is guessed once per model in "left to right or both ways"
WORD_CHARS = 40


@dataclass(frozen=True)
class DrawState:
    """One corruption draw as the page shows it: the model, the sentence, the seed and the whole-word switch."""

    model: str
    text: str
    seed: int
    whole_words: bool


def summary(part: str, seed: int, whole_words: bool, bert: str | None) -> str:
    """The settings in a few words (on the folded controls)."""
    if part == "corruption":
        return f"{bert or 'no model'}, seed {seed}" + (", whole words" if whole_words else "")
    return bert or "no model"
