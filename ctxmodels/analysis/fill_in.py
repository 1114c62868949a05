"""Fill in the blanks: what a masked language model guesses for each [MASK], and how it rates a chosen word.

``fill_mask`` is the simplest end-to-end proof that a loaded model works. ``mask_word`` hides one word of a
sentence and reports the probability and rank the model gives the word that was there.

Whole words in ``mask_word``: a word that the tokenizer splits into several pieces ("bankers" -> bank ##er ##s)
has *all* its pieces masked at once, so no piece gives the others away. The model then predicts each position
independently; the word's probability is the product of its pieces' probabilities (the model's own
independence assumption across masked positions), and its rank is the worst of its pieces' ranks: rank 1
means the word is the model's top guess at every piece. Per-piece figures are reported too.

Blanks as written: ``[mask]`` in any case and RoBERTa's ``<mask>`` are read as BERT's ``[MASK]``
(:func:`normalize_masks`), before the tokenizer sees the text; an encoder read through transformers then gets its
own mask token for it (``<mask>`` for RoBERTa), and its pieces are shown in BERT's convention (``##s`` for a piece
that continues a word, whatever the tokenizer's own marks: ``Ġ``, ``▁``).

Whole words (``whole_words=True``): the guesses leave out what a reader cannot take for a word: word pieces
(``##s``), special tokens (``[MASK]``, ``[CLS]``, ``[SEP]``, ``[PAD]``, ``[UNK]``, ``[unused7]``) and tokens without
a letter or digit (punctuation). The filter is applied before the top k are taken, so k guesses remain whenever the
vocabulary has k such tokens; each keeps the model's own probability (they are not renormalised, so they add up
to less than the whole). For the continuation pieces of a hidden word (``##er``, ``##s``), whose slot only a
piece can fill, the guesses are the ``##`` pieces with a letter or digit.

ELMo fills in blanks too, from both sides with its two language models, and an ELMo handed to any function here
is passed on to :mod:`~ctxmodels.analysis.elmo_blanks` (which says how).

Command line: ``ctxmodels fill-mask --model PATH [--top-k K] [--whole-words] [--json] "text with [MASK] ..."``.
"""

from __future__ import annotations

import math
import weakref
from typing import Any

import torch

from ..bert import BertForPreTraining
from ..kinds import ATTENTION, FILL_IN, LANGUAGE_MODEL, LEFT_TO_RIGHT, MASKED_LM, declares, supports
from ..tokenization import MASK, Encoded, WordPieceTokenizer
from . import elmo_blanks
from .blanks import (
    BlankChange,
    LayerGuesses,
    WordAttributions,
    WordEffects,
    WordScore,
    check_comparable,
    check_words_to_hide,
    find_word,
    is_whole_word,
    layer_guesses,
    normalize_masks,
)
from .integrated_gradients import integrate


def _is_continuation(token: str) -> bool:
    return token.startswith("##") and any(c.isalnum() for c in token[2:])


_ALLOWED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # tokenizer -> {(size, kind): bool tensor}


def _allowed_ids(tokenizer: WordPieceTokenizer, size: int, kind: str) -> torch.Tensor:
    """Bool [size]: the ids that have a token and, for ``kind`` "word", are whole words (:func:`is_whole_word`);
    for "piece", continuation pieces with a letter or digit; for "any", every known id. Kept per tokenizer."""
    per_tokenizer = _ALLOWED.setdefault(tokenizer, {})
    if (size, kind) not in per_tokenizer:
        allowed = tokenizer.known_ids(size)
        if kind != "any":
            test = is_whole_word if kind == "word" else _is_continuation
            for i in allowed.nonzero().flatten().tolist():
                if tokenizer.is_special(i) or not test(tokenizer.id_to_token(i)):
                    allowed[i] = False
        per_tokenizer[(size, kind)] = allowed
    return per_tokenizer[(size, kind)]


def _elmo(model: Any) -> Any | None:
    """:mod:`.elmo_blanks` when ``model`` is a loaded model whose kind fills in blanks with language models read
    from both sides (ELMo), else None."""
    return elmo_blanks if declares(model, LANGUAGE_MODEL) and not declares(model, LEFT_TO_RIGHT) else None


def fills_blanks(model: Any) -> bool:
    """Whether a loaded model can fill in blanks: an encoder with a masked-LM head, or an ELMo with its LMs'
    softmax."""
    return supports(model, FILL_IN)


def why_no_fill(model: Any) -> str:
    """Why a loaded model cannot fill in blanks, in words ("" when it can)."""
    if fills_blanks(model):
        return ""
    if _elmo(model) is not None:
        return "an ELMo without its language models' softmax (published ELMo files carry none)"
    return _no_mask_reason(model)


def _no_mask_reason(model: Any) -> str:
    return model.no_fill_reason or f"a {model.kind} model has no masked-LM head"


def sentence_words(model: Any, text: str) -> list[str]:
    """The words of ``text`` as ``model`` reads them (a word it hides is one of these), blanks as ``[MASK]``."""
    if (elmo := _elmo(model)) is not None:
        return elmo.words_of(text)
    _, tokenizer = _parts(model, None)
    return tokenizer.encode(normalize_masks(text)).words


def _parts(model: Any, tokenizer: Any) -> tuple[Any, Any]:
    """(what runs the masked LM, its tokenizer) for our BERT module with its tokenizer, or a loaded model from
    ``ctxmodels.load`` (its own tokenizer when ``tokenizer`` is None): our BERT as its module, other encoders as
    the loaded model, whose ``mask_logits`` runs their own head."""
    if isinstance(model, torch.nn.Module):
        return model, tokenizer
    if tokenizer is None:
        tokenizer = model.tokenizer
    if not supports(model, MASKED_LM):
        raise ValueError(f"{model.name} cannot fill in blanks: {_no_mask_reason(model)}. It still gives word vectors"
                         + (" and attention." if supports(model, ATTENTION) else "."))
    return model.mask_runner(), tokenizer


def _require_mlm_head(model: Any) -> None:
    if not isinstance(model, torch.nn.Module):
        return  # a loaded model: checked by _parts
    if not getattr(model, "has_mlm_head", False):
        raise ValueError(
            "this model has no masked-LM head (it was saved as an encoder only, e.g. a sentence-embedding "
            "model), so it cannot fill in masks; it still gives hidden states and attention. "
            "Use a checkpoint saved with its MLM head (BertForMaskedLM / BertForPreTraining)."
        )


_ROWS_PER_RUN = 32  # encodings per forward pass (hiding words one at a time makes many)


@torch.inference_mode()
def _masked_probs(model: Any, encs: list[Encoded], positions: list[int]) -> torch.Tensor:
    """Softmax over the vocabulary at ``positions`` of encodings of one length (the same text with other words
    hidden): [len(encs), len(positions), V]."""
    if not isinstance(model, torch.nn.Module):  # an encoder read through transformers: its own head, a text a run
        return torch.stack([_softmax(model.mask_logits(e, positions)) for e in encs])
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    out = []
    try:
        for start in range(0, len(encs), _ROWS_PER_RUN):
            chunk = encs[start:start + _ROWS_PER_RUN]
            ids = torch.tensor([e.ids for e in chunk], device=device)
            types = torch.tensor([e.type_ids for e in chunk], device=device)
            pos = torch.tensor([positions] * len(chunk), device=device)
            out.append(_softmax(model(ids, token_type_ids=types, mlm_positions=pos).prediction_logits))
    finally:
        model.train(was_training)
    return torch.cat(out)


def _softmax(logits: torch.Tensor) -> torch.Tensor:
    probs = logits.float().softmax(dim=-1)
    if not bool(probs.isfinite().all()):
        raise ValueError("the model computed NaN or infinite scores for this text, so it has no guesses to "
                         "show; its weights are damaged (ctxmodels.load refuses such a model when it loads)")
    return probs


def fill_mask(
    model: BertForPreTraining | Any, tokenizer: WordPieceTokenizer | Any, text: str, top_k: int = 5,
    whole_words: bool = False,
) -> list[list[dict[str, float | str]]]:
    """The ``top_k`` pieces for every [MASK] in ``text`` (also written ``[mask]`` or ``<mask>``), best first: one
    list per mask of {"token", "prob"}. ``whole_words``: only guesses that are words (see the module docstring).

    ``model``: our BERT module with its ``tokenizer``, or a model from ``ctxmodels.load`` (``tokenizer`` None:
    its own); an encoder read through transformers gets ``[MASK]`` as its own mask token (``<mask>``, …)."""
    if (elmo := _elmo(model)) is not None:
        return elmo.fill(model, text, top_k, whole_words)
    model, tokenizer = _parts(model, tokenizer)
    _require_mlm_head(model)
    if top_k < 1:
        raise ValueError(f"top_k must be at least 1, got {top_k}")
    enc, positions = _blanks(tokenizer, text)
    probs = _masked_probs(model, [enc], positions)[0]
    return _top(probs, tokenizer, top_k, ["word" if whole_words else "any"] * len(positions))


def _blanks(tokenizer: Any, text: str) -> tuple[Encoded, list[int]]:
    """The text's encoding and the positions of its blanks; ValueError when it has none left."""
    text = normalize_masks(text)
    enc = tokenizer.encode(text)
    positions = [i for i, t in enumerate(enc.ids) if t == tokenizer.mask_id]
    if not positions:
        if MASK in text:
            raise ValueError(f"every {MASK} in the text was cut off by truncation; shorten the text")
        raise ValueError(f"the text has no {MASK}; write {MASK} where the model should guess a word")
    return enc, positions


def _top_ids(row: torch.Tensor, tokenizer: WordPieceTokenizer, top_k: int, kind: str) -> torch.return_types.topk:
    """The ``top_k`` best of one row of probabilities [V] among the ids the tokenizer has a token for (a model may
    have rows no token maps to) and ``kind`` allows (see :func:`_allowed_ids`): (values, indices)."""
    allowed = _allowed_ids(tokenizer, row.shape[-1], kind).to(row.device)
    n = min(top_k, int(allowed.sum()))
    if n == 0:  # a vocabulary without a single such token: show what there is
        allowed = _allowed_ids(tokenizer, row.shape[-1], "any").to(row.device)
        n = min(top_k, int(allowed.sum()))
    return row.masked_fill(~allowed, -1.0).topk(n)


def _top(probs: torch.Tensor, tokenizer: WordPieceTokenizer, top_k: int,
         kinds: list[str]) -> list[list[dict[str, float | str]]]:
    """The ``top_k`` tokens of each row of ``probs`` [n, V], best first, as :func:`_top_ids` picks them."""
    out = []
    for row, kind in zip(probs, kinds):
        top = _top_ids(row, tokenizer, top_k, kind)
        out.append([{"token": tokenizer.id_to_token(i), "prob": p}
                    for p, i in zip(top.values.tolist(), top.indices.tolist())])
    return out


def allowed_guesses(tokenizer: Any, size: int, whole_words: bool) -> torch.Tensor:
    """Bool [size]: the ids a guess may be, whole words only with ``whole_words`` (the module docstring)."""
    return _allowed_ids(tokenizer, size, "word" if whole_words else "any")


def top_guesses(probs: torch.Tensor, tokenizer: Any, top_k: int, kinds: list[str]) -> list[list[dict]]:
    """The ``top_k`` tokens of each row of ``probs`` [n, V], best first: for ``kinds`` "word" whole words only,
    "piece" continuation pieces only, "any" every token (the module docstring)."""
    return _top(probs, tokenizer, top_k, kinds)


def _hide(enc: Encoded, word: int, mask_id: int) -> Encoded:
    """``enc`` with every piece of word ``word`` replaced by [MASK] (same length, so the positions hold)."""
    ids = [mask_id if w == word else i for i, w in zip(enc.ids, enc.word_ids)]
    return Encoded(ids, enc.tokens, enc.type_ids, enc.word_ids, enc.offsets, enc.sequence_ids, enc.words,
                   enc.truncated)


def _hidden_word(tokenizer: Any, text: str | list[str], word: str | int,
                 occurrence: int) -> tuple[Encoded, int, list[int]]:
    """The text's encoding, the index of the word to hide and the positions of its pieces."""
    enc = tokenizer.encode(normalize_masks(text) if isinstance(text, str) else [normalize_masks(t) for t in text])
    index = find_word(enc.words, word, occurrence, tokenizer.lowercase)
    positions = enc.word_pieces(index)
    if not positions:
        raise ValueError(f"the word {enc.words[index]!r} gives no word pieces (or was truncated away)")
    return enc, index, positions


def _nth_blank(tokenizer: Any, text: str, blank: int) -> tuple[Encoded, list[int]]:
    """:func:`_blanks` of a text that must have blank number ``blank`` (0-based)."""
    enc, positions = _blanks(tokenizer, text)
    if not 0 <= blank < len(positions):
        raise ValueError(f"blank {blank + 1} does not exist: the text has {len(positions)} blank(s)")
    return enc, positions


def _word_to_explain(tokenizer: Any, text: str | list[str], word: str | int,
                     occurrence: int) -> tuple[Encoded, int, list[int], list[int], set[int]]:
    """What explaining a hidden word needs: the encoding with the word hidden, the word's index, its pieces'
    positions and original ids, and the words no explanation hides (the word itself and every blank)."""
    enc, index, positions = _hidden_word(tokenizer, text, word, occurrence)
    original = [enc.ids[p] for p in positions]
    blanks = {enc.word_ids[p] for p, t in enumerate(enc.ids) if t == tokenizer.mask_id}
    return _hide(enc, index, tokenizer.mask_id), index, positions, original, blanks | {index}


def mask_word(
    model: BertForPreTraining | Any,
    tokenizer: WordPieceTokenizer | Any,
    text: str | list[str],
    word: str | int,
    occurrence: int = 0,
    top_k: int = 5,
    whole_words: bool = False,
) -> WordScore:
    """Mask ``word`` (a word of ``text``, or its index in ``Encoded.words``) and score the original.

    All the word's pieces are masked together; see the module docstring for how a split word is scored.
    ``whole_words`` filters the model's guesses shown per piece (``top``), not the word's probability or rank.
    ``model`` and ``tokenizer`` as for :func:`fill_mask`.
    """
    if (elmo := _elmo(model)) is not None:
        return elmo.score_word(model, text, word, occurrence, top_k, whole_words)
    model, tokenizer = _parts(model, tokenizer)
    _require_mlm_head(model)
    enc, index, positions = _hidden_word(tokenizer, text, word, occurrence)
    original = [enc.ids[p] for p in positions]
    probs = _masked_probs(model, [_hide(enc, index, tokenizer.mask_id)], positions)[0]
    piece_probs = [float(probs[j, t]) for j, t in enumerate(original)]
    # rank = 1 + how many vocabulary items the model put strictly above the original piece
    piece_ranks = [int((probs[j] > probs[j, t]).sum()) + 1 for j, t in enumerate(original)]
    log_prob = sum(math.log(max(p, 1e-45)) for p in piece_probs)
    return WordScore(
        word=enc.words[index],
        word_index=index,
        pieces=[tokenizer.id_to_token(t) for t in original],
        prob=math.exp(log_prob),
        log_prob=log_prob,
        rank=max(piece_ranks),
        piece_probs=piece_probs,
        piece_ranks=piece_ranks,
        top=_top(probs, tokenizer, top_k,
                 [("word" if j == 0 else "piece") if whole_words else "any" for j in range(len(positions))]),
    )


# --- Which words an answer rests on -------------------------------------------------------------------------------


def _hide_each(model: Any, tokenizer: Any, enc: Encoded, positions: list[int],
               keep: set[int]) -> tuple[list[int], torch.Tensor]:
    """The words of ``enc`` not in ``keep`` (those hidden in turn), and the probabilities at ``positions`` for
    ``enc`` itself (row 0) and with each of those words hidden (row 1 + i): [1 + n, len(positions), V]."""
    hideable = [w for w in range(len(enc.words)) if w not in keep and enc.word_pieces(w)]
    check_words_to_hide(len(hideable))
    variants = [enc] + [_hide(enc, w, tokenizer.mask_id) for w in hideable]
    return hideable, _masked_probs(model, variants, positions)


def _effects(tokenizer: Any, words: list[str], hideable: list[int], probs: torch.Tensor, answer_ids: list[int],
             answer: str, whole_words: bool) -> WordEffects:
    """:class:`WordEffects` of ``answer_ids`` (one id per position) from :func:`_hide_each`'s result."""
    target = torch.tensor(answer_ids, device=probs.device)
    # the answer's probability per sentence: the product over its pieces, [1 + len(hideable)]
    answer_probs = probs[:, torch.arange(len(answer_ids)), target].double().clamp_min(1e-45).log().sum(-1).exp()
    kind = "word" if whole_words else "any"
    firsts = [tokenizer.id_to_token(int(_top_ids(row[0], tokenizer, 1, kind).indices[0])) for row in probs[1:]]
    return WordEffects.of(words, answer, float(answer_probs[0]), hideable, answer_probs[1:].tolist(), firsts)


def _answer_id(row: torch.Tensor, tokenizer: Any, guess: str | None, whole_words: bool, search: int) -> int:
    """The vocabulary id of ``guess`` at a blank whose probabilities are ``row`` [V], looked up among the blank's
    first ``search`` guesses (then in the vocabulary); None: the blank's first guess."""
    kind = "word" if whole_words else "any"
    ids = _top_ids(row, tokenizer, 1 if guess is None else search, kind).indices.tolist()
    found = [i for i in ids if guess is None or tokenizer.id_to_token(i) == guess]
    answer_id = found[0] if found else tokenizer.token_to_id(guess)
    if answer_id is None or answer_id >= row.shape[-1]:
        raise ValueError(f"{guess!r} is not one piece of this model's vocabulary, so it cannot be a guess at one "
                         "blank; pick one of the guesses shown")
    return answer_id


def guess_effects(model: BertForPreTraining | Any, tokenizer: WordPieceTokenizer | Any, text: str, blank: int = 0,
                  guess: str | None = None, whole_words: bool = True, search: int = 1000) -> WordEffects:
    """Which words of ``text`` the model's ``guess`` at blank number ``blank`` (0-based) rests on: see
    :class:`WordEffects`. ``guess``: a token as :func:`fill_mask` shows it, looked up among the blank's first
    ``search`` guesses (then in the vocabulary); None: the blank's first guess (a whole word when ``whole_words``).
    Other blanks stay blank. ``model`` and ``tokenizer`` as for :func:`fill_mask`."""
    if (elmo := _elmo(model)) is not None:  # its guesses are its vocabulary's words: no search needed
        return elmo.guess_effects(model, text, blank, guess, whole_words)
    model, tokenizer = _parts(model, tokenizer)
    _require_mlm_head(model)
    enc, positions = _nth_blank(tokenizer, text, blank)
    hideable, probs = _hide_each(model, tokenizer, enc, [positions[blank]], {enc.word_ids[p] for p in positions})
    answer_id = _answer_id(probs[0, 0], tokenizer, guess, whole_words, search)
    return _effects(tokenizer, enc.words, hideable, probs, [answer_id], tokenizer.id_to_token(answer_id),
                    whole_words)


def word_effects(model: BertForPreTraining | Any, tokenizer: WordPieceTokenizer | Any, text: str, word: str | int,
                 occurrence: int = 0, whole_words: bool = True) -> WordEffects:
    """Which other words of ``text`` the probability of ``word`` (hidden as in :func:`mask_word`) rests on: see
    :class:`WordEffects`. Blanks written in the text stay blank."""
    if (elmo := _elmo(model)) is not None:
        return elmo.word_effects(model, text, word, occurrence, whole_words)
    model, tokenizer = _parts(model, tokenizer)
    _require_mlm_head(model)
    hidden, index, positions, original, keep = _word_to_explain(tokenizer, text, word, occurrence)
    hideable, probs = _hide_each(model, tokenizer, hidden, positions, keep)
    return _effects(tokenizer, hidden.words, hideable, probs, original, hidden.words[index], whole_words)


# --- The same question by integrated gradients ----------------------------------------------------------------------


def _word_embeddings(runner: Any) -> torch.nn.Module:
    """The module that turns ids into word vectors: integrated gradients blends its output."""
    if isinstance(runner, torch.nn.Module):
        return runner.bert.embeddings.word_embeddings
    return runner.model.get_input_embeddings()


def _hide_all(enc: Encoded, words: list[int], mask_id: int) -> Encoded:
    for w in words:
        enc = _hide(enc, w, mask_id)
    return enc


def _attributions(runner: Any, tokenizer: Any, enc: Encoded, positions: list[int], answer_ids: list[int],
                  answer_text: str, keep: set[int], steps: int | None) -> WordAttributions:
    """Integrated gradients of log P(answer) (the product of ``answer_ids``' probabilities at ``positions``) along
    the blends of the word vectors of ``enc`` with those of ``enc`` with every word not in ``keep`` hidden."""
    attributed = [w for w in range(len(enc.words)) if w not in keep and enc.word_pieces(w)]
    check_words_to_hide(len(attributed))
    embeddings = _word_embeddings(runner)
    module = runner if isinstance(runner, torch.nn.Module) else runner.model
    device = next(module.parameters()).device
    ids = torch.tensor([enc.ids], device=device)
    with torch.no_grad():
        x = embeddings(ids)[0]
        baseline = embeddings(torch.tensor([_hide_all(enc, attributed, tokenizer.mask_id).ids], device=device))[0]
    answer = torch.tensor(answer_ids, device=device)
    where = torch.arange(len(positions), device=device)

    def log_prob(blends: torch.Tensor) -> torch.Tensor:
        n = blends.shape[0]
        # The model reads the blends in place of its own word vectors for the ids (same shape, so every other
        # input, positions and segments, is its own).
        handle = embeddings.register_forward_hook(lambda _module, _inputs, _output: blends)
        try:
            if isinstance(runner, torch.nn.Module):
                types = torch.tensor([enc.type_ids] * n, device=device)
                pos = torch.tensor([positions] * n, device=device)
                logits = runner(ids.expand(n, -1), token_type_ids=types, mlm_positions=pos).prediction_logits
            else:
                logits = runner.model(**runner.tokenizer.collate([enc] * n, device=device)).logits[:, positions]
        finally:
            handle.remove()
        return logits.float().log_softmax(dim=-1)[:, where, answer].sum(dim=-1)

    was_training = module.training
    module.eval()
    try:
        ig = integrate(log_prob, x, baseline, steps)
    finally:
        module.train(was_training)
    per_piece = ig.attributions.tolist()
    scores: list[float | None] = [None] * len(enc.words)
    for w in attributed:
        scores[w] = sum(per_piece[p] for p in enc.word_pieces(w))
    return WordAttributions(list(enc.words), answer_text, math.exp(ig.score), math.exp(ig.baseline_score),
                            scores, ig.steps, ig.gap)


def guess_attributions(model: BertForPreTraining | Any, tokenizer: WordPieceTokenizer | Any, text: str,
                       blank: int = 0, guess: str | None = None, whole_words: bool = True, steps: int | None = None,
                       search: int = 1000) -> WordAttributions:
    """Which words of ``text`` the model's ``guess`` at blank number ``blank`` rests on, by integrated gradients:
    see :class:`WordAttributions`. ``guess``, ``whole_words`` and ``search`` as for :func:`guess_effects`; other
    blanks stay blank. ``steps``: the integral's intervals (None: as many as it takes to add up, see
    :func:`~ctxmodels.analysis.integrated_gradients.integrate`). ``model`` and ``tokenizer`` as for
    :func:`fill_mask`."""
    if (elmo := _elmo(model)) is not None:
        return elmo.guess_attributions(model, text, blank, guess, whole_words, steps)
    model, tokenizer = _parts(model, tokenizer)
    _require_mlm_head(model)
    enc, positions = _nth_blank(tokenizer, text, blank)
    row = _masked_probs(model, [enc], [positions[blank]])[0, 0]
    answer_id = _answer_id(row, tokenizer, guess, whole_words, search)
    return _attributions(model, tokenizer, enc, [positions[blank]], [answer_id], tokenizer.id_to_token(answer_id),
                         {enc.word_ids[p] for p in positions}, steps)


def word_attributions(model: BertForPreTraining | Any, tokenizer: WordPieceTokenizer | Any, text: str,
                      word: str | int, occurrence: int = 0, steps: int | None = None) -> WordAttributions:
    """Which other words of ``text`` the probability of ``word`` (hidden as in :func:`mask_word`) rests on, by
    integrated gradients: see :class:`WordAttributions`. Blanks written in the text stay blank."""
    if (elmo := _elmo(model)) is not None:
        return elmo.word_attributions(model, text, word, occurrence, steps)
    model, tokenizer = _parts(model, tokenizer)
    _require_mlm_head(model)
    hidden, index, positions, original, keep = _word_to_explain(tokenizer, text, word, occurrence)
    return _attributions(model, tokenizer, hidden, positions, original, hidden.words[index], keep, steps)


COMPARE_POOL = 100  # the changes are ranked among each sentence's best guesses, where the probabilities mean something


def _one_blank(model: Any, text: str, whole_words: bool) -> tuple[torch.Tensor, Any]:
    """P over the vocabulary at the first blank of ``text``, with what a guess may not be set to 0, and a function
    from a row to its word."""
    if (elmo := _elmo(model)) is not None:
        lm = elmo._require_lm(model)
        words = elmo.words_of(text)
        slots = elmo._blanks(words)
        row, allowed = elmo.slot_probs(model, [words], slots[:1])[0], elmo._allowed(lm, whole_words)
        name = lm.vocab.__getitem__
    else:
        runner, tokenizer = _parts(model, None)
        _require_mlm_head(runner)
        enc, slots = _blanks(tokenizer, text)
        row = _masked_probs(runner, [enc], slots[:1])[0, 0]
        allowed = _allowed_ids(tokenizer, row.shape[-1], "word" if whole_words else "any")
        name = tokenizer.id_to_token
    return row.masked_fill(~allowed.to(row.device), 0.0), name


@torch.inference_mode()
def _layer_probs(runner: Any, enc: Encoded, position: int) -> tuple[list[str], torch.Tensor]:
    """(layer names, P over the vocabulary [n_layers, V]) from the masked-LM head applied to every layer's vector at
    ``position``. Our BERT: its head on each hidden state. An encoder read through transformers: the encoding run
    once per layer in one batch, with a hook that hands copy k's layer-k states to the head in place of the last
    layer's, so every architecture's own head (BERT, RoBERTa, DistilBERT, ALBERT, ELECTRA, DeBERTa) runs unchanged."""
    if isinstance(runner, torch.nn.Module):
        runner.eval()
        device = next(runner.parameters()).device
        out = runner.bert(torch.tensor([enc.ids], device=device), token_type_ids=torch.tensor([enc.type_ids],
                          device=device), output_hidden_states=True)
        states = torch.stack([h[0, position] for h in out.hidden_states])  # [L+1, H]
        names = ["embeddings"] + [f"layer {i}" for i in range(1, len(states))]
        return names, _softmax(runner.cls.predictions(states))
    hf, names = runner.model, list(runner.layer_names)

    def each_layer(module, args, output):
        states = output.hidden_states
        if states is None or len(states) != len(names):
            raise ValueError(f"{runner.name} gave {0 if states is None else len(states)} hidden states for "
                             f"{len(names)} layers; its guesses cannot be read layer by layer")
        output.last_hidden_state = torch.stack([states[k][k] for k in range(len(names))])
        return output

    hf.eval()
    handle = hf.base_model.register_forward_hook(each_layer)
    try:
        batch = runner.tokenizer.collate([enc] * len(names), device=runner.device)
        logits = hf(**batch, output_hidden_states=True).logits
    finally:
        handle.remove()
    return names, _softmax(logits[:, position].float())


def _read_layers(runner: Any, tokenizer: Any, enc: Encoded, position: int, top_k: int, whole_words: bool,
                 answer: int | None = None) -> LayerGuesses:
    names, probs = _layer_probs(runner, enc, position)
    allowed = _allowed_ids(tokenizer, probs.shape[-1], "word" if whole_words else "any").to(probs.device)
    return layer_guesses(names, probs, tokenizer.id_to_token, allowed, top_k, answer=answer)


def guesses_by_layer(model: BertForPreTraining | Any, tokenizer: WordPieceTokenizer | Any, text: str, blank: int = 0,
                     top_k: int = 5, whole_words: bool = True) -> LayerGuesses:
    """The guesses the masked-LM head reads from every layer at blank ``blank`` of ``text`` (exBERT's guesses per
    layer, the "logit lens"; :class:`~ctxmodels.analysis.blanks.LayerGuesses` says how to read them). The last
    layer's are the model's own guesses, as :func:`fill_mask` gives them. An ELMo goes to
    :func:`~ctxmodels.analysis.elmo_blanks.guesses_by_layer`."""
    if (elmo := _elmo(model)) is not None:
        return elmo.guesses_by_layer(model, text, blank, top_k, whole_words)
    runner, tokenizer = _parts(model, tokenizer)
    _require_mlm_head(runner)
    enc, positions = _nth_blank(tokenizer, text, blank)
    return _read_layers(runner, tokenizer, enc, positions[blank], top_k, whole_words)


def hidden_by_layer(model: BertForPreTraining | Any, tokenizer: WordPieceTokenizer | Any, text: str | list[str],
                    word: str | int, occurrence: int = 0, top_k: int = 5, whole_words: bool = True) -> LayerGuesses:
    """:func:`guesses_by_layer` for a word of ``text`` hidden as :func:`mask_word` hides it (every piece a
    ``[MASK]``), following the rank of the word that was there instead of the model's answer: for a word the
    tokenizer splits, of its first piece, the one read at the position shown."""
    if (elmo := _elmo(model)) is not None:
        return elmo.hidden_by_layer(model, text, word, occurrence, top_k, whole_words)
    runner, tokenizer = _parts(model, tokenizer)
    _require_mlm_head(runner)
    hidden, _, positions, original, _ = _word_to_explain(tokenizer, text, word, occurrence)
    return _read_layers(runner, tokenizer, hidden, positions[0], top_k, whole_words, answer=original[0])


def compare_blanks(model: Any, text_a: str, text_b: str, top_k: int = 5, whole_words: bool = True) -> BlankChange:
    """How the guesses at the blank of ``text_a`` change at the blank of ``text_b`` (one ``[MASK]`` in each; a
    loaded BERT-family model or ELMo): the ``top_k`` words that become most likely more in B, then the ``top_k``
    that become most likely less, by the ratio of their probabilities, among the best :data:`COMPARE_POOL` guesses
    of either sentence (further down the list a ratio of two tiny probabilities says little)."""
    if top_k < 1:
        raise ValueError(f"top_k must be at least 1, got {top_k}")
    check_comparable(text_a, text_b)
    a, name = _one_blank(model, text_a, whole_words)
    b, _ = _one_blank(model, text_b, whole_words)
    n = min(COMPARE_POOL, a.shape[-1])
    pool = torch.unique(torch.cat([a.topk(n).indices, b.topk(n).indices]))
    pool = pool[(a[pool] > 0) & (b[pool] > 0)]
    order = pool[torch.argsort(torch.log(b[pool]) - torch.log(a[pool]), descending=True)].tolist()
    picked = order[:top_k] + order[max(top_k, len(order) - top_k):]
    return BlankChange(text_a, text_b, [name(i) for i in picked], [float(a[i]) for i in picked],
                       [float(b[i]) for i in picked])
