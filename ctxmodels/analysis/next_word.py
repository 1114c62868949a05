"""What a left-to-right model (a GPT) can show on Fill in the blank: it reads the words before a position and
guesses the next piece, so it fills in a blank from the words *before* it only, rates a word of the sentence from
the words before it, and guesses the word after the sentence.

Each is read off one run of the whole text: the model's attention is causal (position ``i`` sees ``0..i``), so the
scores at the piece before a blank are exactly those of the text cut there; the words after the blank change
nothing. A word of several pieces is rated by the chain rule (each piece from everything before it, the product
of their probabilities: exact for such a model, unlike a masked LM's pieces guessed side by side); its rank is the
worst of its pieces' ranks, as :func:`ctxmodels.analysis.fill_in.mask_word` gives it. A word with nothing before it
(no start token, and first in the text) cannot be guessed at all.

The guesses layer by layer (:func:`blank_by_layer`, :func:`word_by_layer`) are the "logit lens" as it was first
read on GPT-2: the model's final layer norm and next-word head applied to every layer's vector at the piece before
the blank, not only the last one's (whose row is the model's own guesses).

Every word's probability in a sentence (the left-to-right line beside a masked LM's) is
:func:`ctxmodels.analysis.objectives.word_guesses`.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from ..kinds import LANGUAGE_MODEL, LEFT_TO_RIGHT, declares, supports
from ..tokenization import MASK
from .blanks import LayerGuesses, WordScore, find_word, layer_guesses, normalize_masks
from .fill_in import allowed_guesses, top_guesses

NOTHING_BEFORE = ("nothing comes before it, and a left-to-right model guesses a word only from the words before it: "
                  "put a word or two in front")


def reads_left_to_right(model: Any) -> bool:
    """Whether ``model`` is a left-to-right language model with its next-word head (a GPT)."""
    return declares(model, LEFT_TO_RIGHT) and supports(model, LANGUAGE_MODEL)


def _require(model: Any) -> None:
    if not reads_left_to_right(model):
        raise ValueError(f"{getattr(model, 'name', model)} is not a left-to-right language model (a GPT)")


def words_of(model: Any, text: str) -> list[str]:
    """The words of ``text`` as ``model`` reads them, blanks as ``[MASK]``."""
    return model.tokenizer.encode(normalize_masks(text)).words


def _run(model: Any, words: list[str]) -> tuple[Any, torch.Tensor]:
    """(the encoding of ``words``, log-probabilities [pieces, V]: row t for the piece after piece t)."""
    _require(model)
    enc, logits = model.next_word_logits(words)
    logp = logits.float().log_softmax(dim=-1)
    if not bool(logp.isfinite().all()):
        raise ValueError(f"{model.name} computed NaN or infinite scores for this sentence; its weights are damaged")
    return enc, logp


def _pieces(enc: Any, word: int, what: str) -> list[int]:
    positions = enc.word_pieces(word)
    if not positions:
        raise ValueError(f"{what} was cut off: the sentence is longer than the model reads at once; shorten it")
    if positions[0] == 0:
        raise ValueError(f"{what} cannot be guessed: {NOTHING_BEFORE}")
    return positions


def _kinds(n: int, whole_words: bool) -> list[str]:
    return [("word" if j == 0 else "piece") if whole_words else "any" for j in range(n)]


def blank_guesses(model: Any, text: str, top_k: int = 5, whole_words: bool = False) -> list[list[dict]]:
    """The model's ``top_k`` guesses for the first [MASK] of ``text`` from the words before it: one list (as
    :func:`ctxmodels.analysis.fill_in.fill_mask` gives one per blank) of {"token", "prob"}, best first. The words
    after the blank, and any later blank, are never read."""
    words = words_of(model, text)
    if MASK not in words:
        raise ValueError(f"the text has no {MASK}; write {MASK} where the model should guess a word")
    blank = words.index(MASK)
    enc, logp = _run(model, words[:blank + 1])  # the blank's own piece only marks where it is
    p = _pieces(enc, blank, "the blank")[0]
    return top_guesses(logp[p - 1:p].exp(), model.tokenizer, top_k, _kinds(1, whole_words))


def next_guesses(model: Any, text: str, top_k: int = 5, whole_words: bool = False) -> list[dict]:
    """The model's ``top_k`` guesses for the word after the whole of ``text``, best first."""
    words = words_of(model, text)
    enc, logp = _run(model, words)
    last = [p for p, w in enumerate(enc.word_ids) if w is not None]
    if not last or enc.truncated:
        raise ValueError("the sentence is longer than the model reads at once (or empty): shorten it")
    p = last[-1]
    return top_guesses(logp[p:p + 1].exp(), model.tokenizer, top_k, _kinds(1, whole_words))[0]


def word_score(model: Any, text: str, word: str | int, occurrence: int = 0, top_k: int = 5,
               whole_words: bool = False) -> WordScore:
    """How likely the model finds ``word`` (its ``occurrence``-th, or the word at that index) from the words
    before it: its pieces' probabilities by the chain rule, their ranks and the model's guesses at each piece (as
    :func:`ctxmodels.analysis.fill_in.mask_word` reports a hidden word)."""
    words = words_of(model, text)
    index = find_word(words, word, occurrence, getattr(model.tokenizer, "lowercase", False))
    if MASK in words[:index]:
        raise ValueError(f"a blank comes before {words[index]!r}, and a left-to-right model reads the words before a "
                         "word as they are written: fill in the blank first")
    enc, logp = _run(model, words[:index + 1])
    positions = _pieces(enc, index, f"the word {words[index]!r}")
    original = [enc.ids[p] for p in positions]
    rows = torch.stack([logp[p - 1] for p in positions])
    piece_logp = [float(rows[j, t]) for j, t in enumerate(original)]
    ranks = [int((rows[j] > rows[j, t]).sum()) + 1 for j, t in enumerate(original)]
    log_prob = sum(piece_logp)
    return WordScore(word=words[index], word_index=index, pieces=[model.tokenizer.id_to_token(t) for t in original],
                     prob=math.exp(log_prob), log_prob=log_prob, rank=max(ranks),
                     piece_probs=[math.exp(v) for v in piece_logp], piece_ranks=ranks,
                     top=top_guesses(rows.exp(), model.tokenizer, top_k, _kinds(len(positions), whole_words)))


def _lens(model: Any, words: list[str], word: int, what: str) -> tuple[Any, int, torch.Tensor]:
    """(the encoding of ``words``, the position read: the piece before word ``word``, P over the vocabulary
    [layers, V] from the final layer norm and the next-word head applied to every layer's vector there)."""
    _require(model)
    enc, _ = model.tokenizer.encode_words(words, model.max_length)
    position = _pieces(enc, word, what)[0] - 1
    gpt = model.model
    gpt.eval()
    with torch.inference_mode():
        batch = model.tokenizer.collate([enc], device=model.device)
        out = gpt.transformer(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                              output_hidden_states=True, return_dict=True)
        states = torch.stack([h[0, position] for h in out.hidden_states]).float()
        final = out.last_hidden_state[0, position].float()
        # the last layer's state is the final norm's output in some transformers versions and its input in others
        normed = torch.allclose(states[-1], final, atol=1e-5)
        rows = torch.cat([gpt.transformer.ln_f(states[:-1]), final[None]]) if normed else gpt.transformer.ln_f(states)
        probs = gpt.lm_head(rows).float().softmax(dim=-1)
    if not bool(probs.isfinite().all()):
        raise ValueError(f"{model.name} computed NaN or infinite scores for this sentence; its weights are damaged")
    return enc, position, probs


def blank_by_layer(model: Any, text: str, top_k: int = 5, whole_words: bool = True) -> LayerGuesses:
    """The guesses for the first blank read from every layer at the piece before it (the logit lens), as
    :func:`ctxmodels.analysis.fill_in.guesses_by_layer` gives a masked LM's; the last layer's are
    :func:`blank_guesses`'."""
    words = words_of(model, text)
    if MASK not in words:
        raise ValueError(f"the text has no {MASK}; write {MASK} where the model should guess a word")
    blank = words.index(MASK)
    _, _, probs = _lens(model, words[:blank + 1], blank, "the blank")
    allowed = allowed_guesses(model.tokenizer, probs.shape[-1], whole_words).to(probs.device)
    return layer_guesses(model.layer_names, probs, model.tokenizer.id_to_token, allowed, top_k)


def word_by_layer(model: Any, text: str, word: str | int, occurrence: int = 0, top_k: int = 5,
                  whole_words: bool = True) -> LayerGuesses:
    """The guesses for a word of ``text`` read from every layer at the piece before it, and the rank of the word's
    first piece in each (as :func:`ctxmodels.analysis.fill_in.hidden_by_layer` follows a hidden word's)."""
    words = words_of(model, text)
    index = find_word(words, word, occurrence, getattr(model.tokenizer, "lowercase", False))
    if MASK in words[:index]:
        raise ValueError(f"a blank comes before {words[index]!r}, and a left-to-right model reads the words before a "
                         "word as they are written: fill in the blank first")
    enc, position, probs = _lens(model, words[:index + 1], index, f"the word {words[index]!r}")
    allowed = allowed_guesses(model.tokenizer, probs.shape[-1], whole_words).to(probs.device)
    return layer_guesses(model.layer_names, probs, model.tokenizer.id_to_token, allowed, top_k,
                         answer=enc.ids[position + 1])
