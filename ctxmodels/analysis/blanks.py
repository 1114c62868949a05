"""What filling in blanks shares across models (:mod:`.fill_in` for the BERT family, :mod:`.elmo_blanks` for ELMo):
how a blank may be written, which guesses are words, and the results they give."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

import pandas as pd

from ..tokenization import MASK

MASK_SPELLINGS = re.compile(r"\[mask\]|<mask>", re.IGNORECASE)


def normalize_masks(text: str) -> str:
    """``text`` with every blank written as ``[mask]`` (any case) or ``<mask>`` (RoBERTa's) turned into ``[MASK]``."""
    return MASK_SPELLINGS.sub(MASK, text)


def is_whole_word(token: str) -> bool:
    """A token a reader takes for a word: not a ``##`` piece, not a special token, with a letter or digit."""
    if token.startswith("##") or (token.startswith("[") and token.endswith("]") and len(token) > 2):
        return False
    return any(c.isalnum() for c in token)


#: Hiding words one at a time costs one model run per word; past this many the question is for a shorter text.
MAX_WORDS_TO_HIDE = 100


def check_words_to_hide(n: int) -> None:
    """ValueError when ``n`` words are too many to hide one at a time (:data:`MAX_WORDS_TO_HIDE`)."""
    if n > MAX_WORDS_TO_HIDE:
        raise ValueError(f"the text has {n} words to hide one at a time (one model run each); which words an answer "
                         f"rests on is shown for texts of up to {MAX_WORDS_TO_HIDE} words: shorten it")


def find_word(words: Sequence[str], word: str | int, occurrence: int, lowercase: bool) -> int:
    """The index in ``words`` of occurrence ``occurrence`` (0-based) of ``word``, or ``word`` itself as an index.
    Compared lower-cased for an uncased model; for a cased one exactly, or in any case when nothing matches
    exactly."""
    if isinstance(word, int):
        if not 0 <= word < len(words):
            raise ValueError(f"word index {word} is out of range: the text has {len(words)} words")
        return word
    hits = [] if lowercase else [i for i, w in enumerate(words) if w == word]
    hits = hits or [i for i, w in enumerate(words) if w.lower() == word.lower()]
    if len(hits) <= occurrence:
        found = f"{len(hits)} time(s)" if hits else "not at all"
        raise ValueError(f"the word {word!r} occurs {found} in the text (words: {list(words)}); "
                         f"asked for occurrence {occurrence}")
    return hits[occurrence]


@dataclass
class WordScore:
    """How the model rates the original word at a masked slot (see the module docstring for whole words)."""

    word: str
    word_index: int
    pieces: list[str]
    prob: float  # product of the pieces' probabilities
    log_prob: float
    rank: int  # worst piece rank; 1 = top guess at every piece
    piece_probs: list[float] = field(default_factory=list)
    piece_ranks: list[int] = field(default_factory=list)
    top: list[list[dict[str, float | str]]] = field(default_factory=list)  # model's top guesses per piece

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class WordEffects:
    """How much the model's probability of one answer at a blank rests on each word of the sentence.

    Each word is hidden in turn (all its pieces replaced by [MASK], so nothing else moves) and the answer's
    probability is read again: a word whose hiding makes the answer much less likely is one the answer rests on; a
    word whose hiding makes it *more* likely was pulling towards another answer. An answer of several pieces (a
    hidden word the tokenizer splits) is scored as in :func:`mask_word`: the product of its pieces' probabilities.
    """

    words: list[str]  # the sentence's words, as written
    answer: str  # what is explained: a guess at a blank, or the hidden word
    prob: float  # P(answer) with every word in view
    hidden_probs: list[float | None]  # P(answer) with word i hidden; None where nothing is hidden (a blank)
    top_when_hidden: list[str | None]  # the first guess at the answer's slot (its first piece) with word i hidden

    @property
    def changes(self) -> list[float | None]:
        """P(answer) with word i hidden minus P(answer) with all words in view (negative: the answer rests on it)."""
        return [None if p is None else p - self.prob for p in self.hidden_probs]

    @classmethod
    def of(cls, words: Sequence[str], answer: str, prob: float, hidden: Sequence[int], hidden_probs: Sequence[float],
           firsts: Sequence[str]) -> WordEffects:
        """The result for the words at ``hidden`` (hidden in turn, with these probabilities and first guesses);
        every other word gets None."""
        probs: list[float | None] = [None] * len(words)
        tops: list[str | None] = [None] * len(words)
        for j, p, first in zip(hidden, hidden_probs, firsts):
            probs[j], tops[j] = float(p), str(first)
        return cls(list(words), answer, float(prob), probs, tops)

    def to_dict(self) -> dict:
        return {**asdict(self), "changes": self.changes}


@dataclass
class WordAttributions:
    """Which words an answer rests on, by integrated gradients (:mod:`.integrated_gradients`): how much of the
    answer's log-probability each word of the sentence accounts for.

    The path runs from a baseline, the sentence with every attributed word hidden (all its pieces ``[MASK]`` for a
    BERT; for ELMo, which has no mask, the unknown word ``[MASK]`` in its place), to the sentence as written, through
    blends of the two sentences' input word vectors. ``scores[i]`` is word i's share of ``log(prob /
    baseline_prob)`` in nats: ``exp(scores[i])`` is the factor it accounts for, so a word scored +2.3 raises the
    answer about ten times, where :class:`WordEffects` hides the word on its own. The scores add up to that log-ratio
    up to ``gap`` (the integral's approximation error over ``steps`` intervals).
    """

    words: list[str]
    answer: str
    prob: float  # P(answer), the sentence as written
    baseline_prob: float  # P(answer) with every attributed word hidden
    scores: list[float | None]  # nats per word; None where nothing is attributed (a blank, the hidden word)
    steps: int
    gap: float  # Σ scores − log(prob / baseline_prob)

    def to_dict(self) -> dict:
        return asdict(self)


def rank_agreement(hiding: dict | WordEffects, gradients: dict | WordAttributions) -> float | None:
    """How alike the two methods rank the words one answer rests on: the Spearman correlation between hiding's
    log-factor, log(P / P with the word hidden), and the gradients' share, over the words both score (results or
    their dicts). None with fewer than three such words, or where either method gives them all one score."""
    h = hiding if isinstance(hiding, dict) else hiding.to_dict()
    g = gradients if isinstance(gradients, dict) else gradients.to_dict()
    both = [(-math.log(max(p, 1e-45) / h["prob"]), s) for p, s in zip(h["hidden_probs"], g["scores"])
            if p is not None and s is not None and h["prob"] > 0]
    if len(both) < 3:
        return None
    table = pd.DataFrame(both, columns=["hiding", "gradients"])
    if table["hiding"].nunique() < 2 or table["gradients"].nunique() < 2:
        return None
    return float(table["hiding"].corr(table["gradients"], method="spearman"))


def check_comparable(text_a: str, text_b: str) -> None:
    """ValueError unless each of two sentences to compare has exactly one blank (whatever the model)."""
    for which, text in (("A", text_a), ("B", text_b)):
        n = normalize_masks(text).count(MASK)
        if n != 1:
            raise ValueError(f"sentence {which} has {n} blanks; to compare two sentences, write one {MASK} in each")


@dataclass
class BlankChange:
    """How the guesses at one blank move from sentence A to sentence B, a minimal pair ("He worked as a [MASK]." /
    "She worked as a [MASK]."): the words that gained most in B first, those that lost most last."""

    text_a: str
    text_b: str
    words: list[str]
    prob_a: list[float]  # P(word) at A's blank
    prob_b: list[float]  # P(word) at B's blank

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class LayerGuesses:
    """What the masked-LM head reads from every layer at one blank: the head (ELMo: its softmax) applied to each
    layer's vector at the blank instead of the last one's only, as exBERT and the "logit lens" do. Only the last
    layer was trained to be read this way, so an earlier layer's guesses say what that layer already holds in the
    head's terms, not what it "thinks"; the answer's rank per layer shows where the answer takes shape."""

    layer_names: list[str]
    top: list[list[dict]]       # per layer, the top guesses {"token", "prob"}, best first
    answer: str                 # the model's own first guess: the last layer's
    answer_probs: list[float]   # per layer
    answer_ranks: list[int]     # per layer; 1 = that layer's first guess (among the guesses allowed)

    def to_dict(self) -> dict:
        return asdict(self)


def layer_guesses(layer_names: Sequence[str], probs, token_of: Callable[[int], str], allowed,
                  top_k: int, answer: int | None = None) -> LayerGuesses:
    """:class:`LayerGuesses` from the probabilities ``probs`` [n_layers, V] (a torch tensor), the vocabulary
    (``token_of(id)``) and the bool tensor ``allowed`` [V] of the guesses that may be shown. ``answer``: the id
    whose rank is followed (a hidden word's), by default the last layer's first guess; its rank counts only the
    guesses that may be shown above it."""
    if top_k < 1:
        raise ValueError(f"top_k must be at least 1, got {top_k}")
    masked = probs.masked_fill(~allowed, -1.0)
    n = min(top_k, int(allowed.sum()))
    top = masked.topk(n, dim=-1)
    answer = int(masked[-1].argmax()) if answer is None else answer
    chance = probs[:, answer]
    ranks = (masked > chance[:, None]).sum(dim=-1) + 1
    return LayerGuesses(
        list(layer_names),
        [[{"token": token_of(i), "prob": p} for p, i in zip(values, indices)]
         for values, indices in zip(top.values.tolist(), top.indices.tolist())],
        token_of(answer), chance.tolist(), ranks.tolist())
