"""ELMo fills in blanks too: a blank read from both sides by its two language models.

ELMo has no ``[MASK]``. Its forward LM predicts each word from the words before it, its backward LM from the words
after it, both through one softmax over the output vocabulary. A blank at word ``i`` is scored as the product of
the two directions, renormalised over the vocabulary's words::

    P(w) ∝ P_fwd(w | w_1 … w_{i-1}) · P_bwd(w | w_{i+1} … w_n)

``<S>``, ``</S>`` and ``<UNK>`` are left out. Neither direction reads the blank itself, so what is written there does
not matter; another blank in the sentence is read as the unknown word ``[MASK]``. The vocabulary is of whole words
as the training text wrote them (cased: *Paris*, *bank*), so a hidden word is scored whole, and one the vocabulary
lacks cannot be scored. ELMo has no mask to hide a word with either: to see which words an answer rests on, each
word is left out of the sentence in turn; integrated gradients instead blends each word's character-CNN vector with
that of the unknown word ``[MASK]``, which is how ELMo reads a blank.

The functions here mirror :mod:`~ctxmodels.analysis.fill_in`'s, which hands an ELMo over to them.
"""

from __future__ import annotations

import math
import weakref
from typing import Any

import torch

from ..char_ids import batch_to_char_ids
from ..kinds import LANGUAGE_MODEL, LEFT_TO_RIGHT, declares, supports
from ..text import tokenize
from ..tokenization import MASK
from .blanks import (
    LayerGuesses,
    WordAttributions,
    WordEffects,
    WordScore,
    check_words_to_hide,
    find_word,
    is_whole_word,
    layer_guesses,
    normalize_masks,
)
from .integrated_gradients import integrate

SPECIALS = ("<S>", "</S>", "<UNK>")
_ROWS_PER_RUN = 32
_ALLOWED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # LM module -> {whole_words: bool tensor}
_INDEX: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # LM module -> {word: softmax row}


def can_fill(model: Any) -> bool:
    """An ELMo with its language models' softmax (published ELMo files carry none)."""
    return supports(model, LANGUAGE_MODEL) and not declares(model, LEFT_TO_RIGHT)


def _require_lm(model: Any) -> Any:
    if not can_fill(model):
        raise ValueError(f"{model.name} cannot fill in blanks: this ELMo has no language-model softmax (published "
                         "ELMo files carry none); it still gives word vectors. An ELMo trained with `ctxmodels train "
                         "elmo` has one")
    return model.model


def words_of(text: str | list[str]) -> list[str]:
    """The words ELMo reads: the project's word tokenizer, each blank (``[MASK]``, ``[mask]``, ``<mask>``) one word."""
    if isinstance(text, list):
        return [normalize_masks(w) for w in text]
    words: list[str] = []
    for i, part in enumerate(normalize_masks(text).split(MASK)):
        if i:
            words.append(MASK)
        words.extend(tokenize(part))
    return words


def _index(lm: Any) -> dict[str, int]:
    if lm not in _INDEX:
        _INDEX[lm] = {w: i for i, w in enumerate(lm.vocab)}
    return _INDEX[lm]


def _allowed(lm: Any, whole_words: bool) -> torch.Tensor:
    """Bool [V]: the vocabulary's words a guess may be (no specials; with ``whole_words``, no punctuation)."""
    per_lm = _ALLOWED.setdefault(lm, {})
    if whole_words not in per_lm:
        per_lm[whole_words] = torch.tensor([w not in SPECIALS and (not whole_words or is_whole_word(w))
                                            for w in lm.vocab])
    return per_lm[whole_words]


@torch.inference_mode()
def slot_probs(model: Any, sentences: list[list[str]], slots: list[int]) -> torch.Tensor:
    """For each sentence and its slot (a word index): P(word at the slot | the words before and after it) over the
    output vocabulary, [n, V] (see the module docstring); specials get 0. A sentence given several times (one per
    blank) is run once."""
    lm = _require_lm(model)
    lm.eval()
    device = next(lm.parameters()).device
    distinct = list(dict.fromkeys(map(tuple, sentences)))
    row_of = {s: i for i, s in enumerate(distinct)}
    fwd, bwd = [], []  # per distinct sentence: the top forward and backward states [T, P], <S> and </S> included
    for start in range(0, len(distinct), _ROWS_PER_RUN):
        chunk = [list(s) for s in distinct[start:start + _ROWS_PER_RUN]]
        char_ids, mask = batch_to_char_ids(chunk, add_boundaries=True,
                                           max_chars=lm.config.char_cnn.max_characters_per_token)
        states = lm(char_ids.to(device), mask.to(device))
        fwd += list(states.forward_layers[-1])
        bwd += list(states.backward_layers[-1])
    rows = [row_of[tuple(s)] for s in sentences]
    # with <S> in front, word i sits at position i + 1: the forward state before it, the backward one after it
    return _joint(lm, torch.stack([fwd[r][i] for r, i in zip(rows, slots)]),
                  torch.stack([bwd[r][i + 2] for r, i in zip(rows, slots)]))


def _joint(lm: Any, forward: torch.Tensor, backward: torch.Tensor) -> torch.Tensor:
    """P(word) ∝ P_fwd · P_bwd over the output vocabulary, specials 0, from rows of forward and backward states
    [n, P] (each row pair read through the one softmax): [n, V] on the CPU."""
    log_p = torch.log_softmax(lm.full_softmax_logits(torch.cat([forward, backward])).float(), dim=-1)
    joint = log_p[:len(forward)] + log_p[len(forward):]
    specials = [_index(lm)[s] for s in SPECIALS if s in _index(lm)]
    joint[:, specials] = -math.inf
    probs = joint.softmax(dim=-1)
    if not bool(probs.isfinite().all()):
        raise ValueError("the model computed NaN or infinite scores for this text, so it has no guesses to show; "
                         "its weights are damaged")
    return probs.cpu()


@torch.inference_mode()
def _layer_probs(lm: Any, words: list[str], slot: int) -> torch.Tensor:
    """P(word at ``slot``) from every layer's states next to it, both directions joined: [n_layers, V]."""
    lm.eval()
    char_ids, mask = batch_to_char_ids([words], add_boundaries=True,
                                       max_chars=lm.config.char_cnn.max_characters_per_token)
    device = next(lm.parameters()).device
    states = lm(char_ids.to(device), mask.to(device))
    # with <S> in front, word i sits at position i + 1: the forward state before it, the backward one after it
    forward = torch.stack([layer[0, slot] for layer in [states.token_embedding, *states.forward_layers]])
    backward = torch.stack([layer[0, slot + 2] for layer in [states.token_embedding, *states.backward_layers]])
    return _joint(lm, forward, backward)


def guesses_by_layer(model: Any, text: str, blank: int = 0, top_k: int = 5, whole_words: bool = True) -> LayerGuesses:
    """:func:`~ctxmodels.analysis.fill_in.guesses_by_layer` for an ELMo: the softmax applied, in both directions,
    to every layer's state next to the blank (the character CNN's vector of the word before it and of the word
    after it, then each LSTM layer's), the two directions joined as for the guesses themselves. The top layer's
    are ELMo's own guesses."""
    lm = _require_lm(model)
    words, slots, _ = _guess_to_explain(model, text, blank, None)
    probs = _layer_probs(lm, words, slots[blank])
    return layer_guesses(model.layer_names, probs, lm.vocab.__getitem__, _allowed(lm, whole_words), top_k)


def hidden_by_layer(model: Any, text: str | list[str], word: str | int, occurrence: int = 0, top_k: int = 5,
                    whole_words: bool = True) -> LayerGuesses:
    """:func:`~ctxmodels.analysis.fill_in.hidden_by_layer` for an ELMo: the hidden word's rank per layer (neither
    direction reads the word itself, so it needs no mask)."""
    lm = _require_lm(model)
    words, index, answer, _ = _word_to_explain(model, text, word, occurrence)
    probs = _layer_probs(lm, words, index)
    return layer_guesses(model.layer_names, probs, lm.vocab.__getitem__, _allowed(lm, whole_words), top_k,
                         answer=answer)


def _top(lm: Any, row: torch.Tensor, top_k: int, whole_words: bool) -> list[dict[str, float | str]]:
    allowed = _allowed(lm, whole_words)
    top = row.masked_fill(~allowed, -1.0).topk(min(top_k, int(allowed.sum())))
    return [{"token": lm.vocab[i], "prob": p} for p, i in zip(top.values.tolist(), top.indices.tolist())]


def _blanks(words: list[str]) -> list[int]:
    slots = [i for i, w in enumerate(words) if w == MASK]
    if not slots:
        raise ValueError(f"the text has no {MASK}; write {MASK} where the model should guess a word")
    return slots


def fill(model: Any, text: str, top_k: int = 5, whole_words: bool = False) -> list[list[dict[str, float | str]]]:
    """:func:`~ctxmodels.analysis.fill_in.fill_mask` for an ELMo: the ``top_k`` words for every blank."""
    if top_k < 1:
        raise ValueError(f"top_k must be at least 1, got {top_k}")
    lm = _require_lm(model)
    words = words_of(text)
    slots = _blanks(words)
    probs = slot_probs(model, [words] * len(slots), slots)
    return [_top(lm, row, top_k, whole_words) for row in probs]


def _row_of(lm: Any, word: str, model_name: str) -> int:
    row = _index(lm).get(word)
    if row is None or word in SPECIALS:
        raise ValueError(f"{word!r} is not in {model_name}'s output vocabulary ({len(lm.vocab):,} words as the "
                         "training text wrote them), so ELMo cannot score it as a blank's answer; it still has a "
                         "vector")
    return row


def score_word(model: Any, text: str | list[str], word: str | int, occurrence: int = 0, top_k: int = 5,
               whole_words: bool = False) -> WordScore:
    """:func:`~ctxmodels.analysis.fill_in.mask_word` for an ELMo: the word hidden and scored whole."""
    lm = _require_lm(model)
    words = words_of(text)
    index = find_word(words, word, occurrence, lowercase=False)
    row_id = _row_of(lm, words[index], model.name)
    row = slot_probs(model, [words], [index])[0]
    prob = float(row[row_id])
    rank = int((row > row[row_id]).sum()) + 1
    return WordScore(word=words[index], word_index=index, pieces=[words[index]], prob=prob,
                     log_prob=math.log(max(prob, 1e-45)), rank=rank, piece_probs=[prob], piece_ranks=[rank],
                     top=[_top(lm, row, top_k, whole_words)])


def _effects(model: Any, words: list[str], slot: int, keep: set[int], answer: int | None,
             whole_words: bool) -> WordEffects:
    """Leave out each word not in ``keep`` in turn and read the probability of vocabulary row ``answer`` at ``slot``
    again (None: the first guess with every word in view)."""
    lm = model.model
    hideable = [j for j in range(len(words)) if j not in keep]
    check_words_to_hide(len(hideable))
    variants = [words] + [words[:j] + words[j + 1:] for j in hideable]
    slots = [slot] + [slot - (j < slot) for j in hideable]
    probs = slot_probs(model, variants, slots)
    if answer is None:
        answer = _index(lm)[_top(lm, probs[0], 1, whole_words)[0]["token"]]
    firsts = [_top(lm, row, 1, whole_words)[0]["token"] for row in probs[1:]]
    return WordEffects.of(words, lm.vocab[answer], float(probs[0, answer]), hideable, probs[1:, answer].tolist(),
                          firsts)


def _guess_to_explain(model: Any, text: str, blank: int, guess: str | None) -> tuple[list[str], list[int], int | None]:
    """What explaining a guess at blank number ``blank`` needs: the words, the blanks' indices, and the vocabulary
    row of ``guess`` (None: the first guess, found when explaining)."""
    lm = _require_lm(model)
    words = words_of(text)
    slots = _blanks(words)
    if not 0 <= blank < len(slots):
        raise ValueError(f"blank {blank + 1} does not exist: the text has {len(slots)} blank(s)")
    return words, slots, None if guess is None else _row_of(lm, guess, model.name)


def _word_to_explain(model: Any, text: str, word: str | int, occurrence: int) -> tuple[list[str], int, int, set[int]]:
    """What explaining a hidden word needs: the words, the word's index and vocabulary row, and the words no
    explanation leaves out (the word itself and every blank)."""
    lm = _require_lm(model)
    words = words_of(text)
    index = find_word(words, word, occurrence, lowercase=False)
    blanks = {i for i, w in enumerate(words) if w == MASK}
    return words, index, _row_of(lm, words[index], model.name), blanks | {index}


def guess_effects(model: Any, text: str, blank: int = 0, guess: str | None = None,
                  whole_words: bool = True) -> WordEffects:
    """:func:`~ctxmodels.analysis.fill_in.guess_effects` for an ELMo (each word left out in turn); ``guess``: any
    word of its vocabulary."""
    words, slots, answer = _guess_to_explain(model, text, blank, guess)
    return _effects(model, words, slots[blank], set(slots), answer, whole_words)


def word_effects(model: Any, text: str, word: str | int, occurrence: int = 0,
                 whole_words: bool = True) -> WordEffects:
    """:func:`~ctxmodels.analysis.fill_in.word_effects` for an ELMo (each other word left out in turn)."""
    words, index, answer, keep = _word_to_explain(model, text, word, occurrence)
    return _effects(model, words, index, keep, answer, whole_words)


def _attributions(model: Any, words: list[str], slot: int, keep: set[int], answer: int | None, whole_words: bool,
                  steps: int | None) -> WordAttributions:
    """Integrated gradients of log P(vocabulary row ``answer`` at ``slot``) (None: the first guess) along the blends
    of the sentence's token vectors with those of the sentence with every word not in ``keep`` read as ``[MASK]``."""
    lm = model.model
    attributed = [j for j in range(len(words)) if j not in keep]
    check_words_to_hide(len(attributed))
    if answer is None:
        answer = _index(lm)[_top(lm, slot_probs(model, [words], [slot])[0], 1, whole_words)[0]["token"]]
    baseline_words = [MASK if j in attributed else w for j, w in enumerate(words)]
    device = next(lm.parameters()).device
    char_ids, mask = batch_to_char_ids([words, baseline_words], add_boundaries=True,
                                       max_chars=lm.config.char_cnn.max_characters_per_token)
    char_ids, mask = char_ids.to(device), mask.to(device)
    specials = [_index(lm)[s] for s in SPECIALS if s in _index(lm)]
    lm.eval()
    with torch.no_grad():
        tokens = lm.bilm.embed_tokens(char_ids, mask)  # [2, T, P]: the sentence, the baseline

    def log_prob(blends: torch.Tensor) -> torch.Tensor:
        states = lm.bilm.contextualize(blends, mask[:1].expand(blends.shape[0], -1))
        # with <S> in front, word i sits at position i + 1: the forward state before it, the backward one after it
        both = torch.stack([states.forward_layers[-1][:, slot], states.backward_layers[-1][:, slot + 2]])
        joint = torch.log_softmax(lm.full_softmax_logits(both).float(), dim=-1).sum(dim=0)
        joint[:, specials] = -math.inf
        return joint.log_softmax(dim=-1)[:, answer]

    ig = integrate(log_prob, tokens[0], tokens[1], steps)
    per_token = ig.attributions.tolist()
    scores: list[float | None] = [None] * len(words)
    for j in attributed:
        scores[j] = per_token[j + 1]
    return WordAttributions(list(words), lm.vocab[answer], math.exp(ig.score), math.exp(ig.baseline_score), scores,
                            ig.steps, ig.gap)


def guess_attributions(model: Any, text: str, blank: int = 0, guess: str | None = None, whole_words: bool = True,
                       steps: int | None = None) -> WordAttributions:
    """:func:`~ctxmodels.analysis.fill_in.guess_attributions` for an ELMo; ``guess``: any word of its vocabulary."""
    words, slots, answer = _guess_to_explain(model, text, blank, guess)
    return _attributions(model, words, slots[blank], set(slots), answer, whole_words, steps)


def word_attributions(model: Any, text: str, word: str | int, occurrence: int = 0,
                      steps: int | None = None) -> WordAttributions:
    """:func:`~ctxmodels.analysis.fill_in.word_attributions` for an ELMo."""
    words, index, answer, keep = _word_to_explain(model, text, word, occurrence)
    return _attributions(model, words, index, keep, answer, True, steps)
