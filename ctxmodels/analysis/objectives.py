"""How the models learn, seen on one sentence: BERT's corruption draw and what the model guesses where it struck
(the masked-LM loss there), and how a left-to-right model (a GPT) reads a sentence against a model that reads it
both ways.

The draw is :func:`ctxmodels.masking.mask_tokens`, the very function training calls for every sequence
(``training/bert_data.py``, ``training/lm_data.py``): 15% of the pieces are chosen; of those 80% become [MASK], 10%
a random piece and 10% stay the same. A seed fixes the draw, so a link reproduces it. The model's loss at a chosen
piece is the cross-entropy of the piece that was there, ``-ln p(original)`` in nats: 0 when the model is sure of it,
about 0.7 at a coin toss, and larger the less likely it found it.

The same word's guess with nothing hidden shows the pre-train / fine-tune mismatch: in training the model mostly
meets [MASK] where it must guess, while a fine-tuned model never sees [MASK] and reads every word as written.

Left to right (:func:`word_guesses`): a GPT guesses each word from the words before it only (its attention is
causal: position ``i`` sees positions ``0..i``, :func:`reading_mask`); a BERT with the word hidden guesses it from
both sides.
"""

from __future__ import annotations

import json
import math
import weakref
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..encoding import Encoded
from ..kinds import LEFT_TO_RIGHT, MASKED_LM, declares, supports
from ..masking import MLM_PROBABILITY, VocabInfo, mask_tokens
from ..model_files import is_dir
from ..text import tokenize

TOP_GUESSES = 3  # guesses kept per chosen piece
FATES = ("special", "not chosen", "[MASK]", "random word", "kept")

_VOCABS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # tokenizer -> VocabInfo


def heads_on_file(path: str | Path) -> frozenset[str] | None:
    """The pre-training heads a model folder's ``config.json`` says its weights keep, read without loading the
    model (so a page can offer a model before it loads it): "masked_lm", "next_sentence" (BERT's NSP),
    "sentence_order" (ALBERT's SOP), "replaced" (an ELECTRA discriminator with its generator in ``generator/``),
    "next_word" (a left-to-right language model's head; a GPT fine-tuned for a task has none).
    None when the config names no architecture: only loading the weights tells."""
    folder = Path(path)
    if not is_dir(folder):
        folder = folder.parent
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    names = config.get("architectures") if isinstance(config, dict) else None
    if not isinstance(names, list) or not names or not all(isinstance(a, str) for a in names):
        return None
    electra = config.get("model_type") == "electra"
    heads = set()
    for a in names:
        if a.endswith("ForMaskedLM") or (a.endswith("ForPreTraining") and not electra):
            heads.add("masked_lm")
        if a in ("BertForPreTraining", "BertForNextSentencePrediction"):
            heads.add("next_sentence")
        if a == "AlbertForPreTraining":
            heads.add("sentence_order")
        if electra and a == "ElectraForPreTraining" and (folder / "generator" / "config.json").is_file():
            heads.add("replaced")
        if a.endswith(("LMHeadModel", "ForCausalLM")):
            heads.add("next_word")
    return frozenset(heads)


def vocab_info(tokenizer: Any) -> VocabInfo:
    """What the draw needs to know of ``tokenizer``'s vocabulary (kept per tokenizer: reading it takes a moment)."""
    if tokenizer not in _VOCABS:
        if tokenizer.mask_id is None:
            raise ValueError("the model's tokenizer has no mask token, so nothing can be masked")
        _VOCABS[tokenizer] = VocabInfo.from_tokenizer(tokenizer)
    return _VOCABS[tokenizer]


def words_of(text: str) -> list[str]:
    """The words of ``text`` as the models read them; ValueError when there are none."""
    words = tokenize(text)
    if not words:
        raise ValueError("the sentence has no words: type a sentence")
    return words


def encode(model: Any, text: str) -> Encoded:
    """``text`` as ``model`` reads it: its words, in word pieces, cut at a word boundary to the model's length."""
    enc, cut = model.tokenizer.encode_words(words_of(text), model.max_length)
    if cut:
        raise ValueError(f"the sentence is longer than {model.name} reads at once ({model.max_length} pieces): "
                         "shorten it")
    return enc


# -- the draw ------------------------------------------------------------------------------------------------------


@dataclass
class Draw:
    """One corruption draw of a sentence, before any model reads it."""

    pieces: list[str]  # the sentence's pieces, [CLS] and [SEP] included
    ids: list[int]
    reads: list[int]  # the ids after the draw: what the model reads
    fates: list[str]  # per piece, one of FATES
    positions: list[int]  # the chosen pieces, in order
    word_ids: list[int | None]
    words: list[str]
    seed: int
    whole_words: bool

    def counts(self) -> dict[str, int]:
        return {fate: self.fates.count(fate) for fate in FATES}


def draw(tokenizer: Any, enc: Encoded, seed: int, whole_words: bool = False,
         mlm_probability: float = MLM_PROBABILITY, max_predictions: int | None = None) -> Draw:
    """The corruption training would draw for ``enc`` with ``seed``: training's own :func:`mask_tokens` on the
    sentence's pieces, the special ones left out. ``whole_words``: a word's pieces are chosen together.
    ``max_predictions``: at most this many pieces (None: no cap; training caps a sequence of 128 at 20, which a
    sentence never reaches). A random piece that happens to be the original counts as kept: the model reads the
    same either way."""
    vocab = vocab_info(tokenizer)
    ids = np.asarray(enc.ids, dtype=np.int64)
    maskable = np.array([s is not None for s in enc.sequence_ids], dtype=bool)
    word_start = ~vocab.continuation[np.minimum(ids, vocab.size - 1)] if whole_words else None
    cap = int(maskable.sum()) if max_predictions is None else max_predictions
    out, positions, _ = mask_tokens(ids, maskable, np.random.default_rng(seed), vocab, cap, word_start,
                                    mlm_probability)
    fates = ["not chosen" if m else "special" for m in maskable]
    for p in positions.tolist():
        fates[p] = "[MASK]" if out[p] == vocab.mask_id else "kept" if out[p] == ids[p] else "random word"
    return Draw(list(enc.tokens), ids.tolist(), out.tolist(), fates, positions.tolist(), list(enc.word_ids),
                list(enc.words), seed, whole_words)


# -- what the model guesses where the draw struck --------------------------------------------------------------------


def _require_mlm(model: Any) -> None:
    if not supports(model, MASKED_LM):
        raise ValueError(f"{model.name} has no masked-LM head, so it cannot guess hidden words")


def head_probs(model: Any, enc: Encoded, positions: list[int]) -> torch.Tensor:
    """The masked-LM head's probabilities over the vocabulary at ``positions`` of ``enc`` (as given: whatever it
    holds there, [MASK] or not): [len(positions), V]."""
    _require_mlm(model)
    runner = model.mask_runner()
    if isinstance(runner, torch.nn.Module):  # our BERT: its own forward, the head run at the positions only
        device = next(runner.parameters()).device
        with torch.inference_mode():
            out = runner(torch.tensor([enc.ids], device=device), token_type_ids=torch.tensor([enc.type_ids],
                         device=device), mlm_positions=torch.tensor([positions], device=device))
        logits = out.prediction_logits[0]
    else:  # an encoder read through transformers runs its own head
        logits = runner.mask_logits(enc, positions)
    probs = logits.float().softmax(dim=-1)
    if not bool(probs.isfinite().all()):
        raise ValueError(f"{model.name} computed NaN or infinite scores for this sentence; its weights are damaged")
    return probs


def _with_ids(enc: Encoded, ids: list[int]) -> Encoded:
    return Encoded(list(ids), enc.tokens, enc.type_ids, enc.word_ids, enc.offsets, enc.sequence_ids, enc.words,
                   enc.truncated)


def _top(tokenizer: Any, row: torch.Tensor, k: int) -> list[dict]:
    top = row.topk(min(k, row.shape[-1]))
    return [{"token": tokenizer.id_to_token(i), "prob": p} for p, i in zip(top.values.tolist(), top.indices.tolist())]


@dataclass
class Corruption:
    """A draw and what the model made of it: per chosen piece, what it read there, its first guesses, the
    probability it gave the original piece and its loss there (``-ln p``, nats); and the same with nothing hidden."""

    pieces: list[str]
    reads: list[str]  # the pieces the model read
    fates: list[str]
    positions: list[int]
    words: list[str]
    word_ids: list[int | None]
    seed: int
    whole_words: bool
    guesses: list[list[dict]]  # per chosen piece, its first guesses as corrupted
    prob: list[float]  # P(original) as corrupted
    loss: list[float]  # -ln P(original)
    plain_prob: list[float]  # P(original) with nothing hidden
    plain_guess: list[str]  # the first guess with nothing hidden

    @property
    def mean_loss(self) -> float:
        """The masked-LM loss of this draw: the mean over the chosen pieces (nan when none was chosen)."""
        return float(np.mean(self.loss)) if self.loss else math.nan

    def to_dict(self) -> dict:
        return {**asdict(self), "mean_loss": self.mean_loss}


def corruption(model: Any, text: str, seed: int, whole_words: bool = False, top_k: int = TOP_GUESSES) -> Corruption:
    """BERT's corruption of ``text`` with ``seed`` (:func:`draw`) and the model's guesses at each chosen piece,
    then the same pieces read with nothing hidden."""
    _require_mlm(model)
    tok = model.tokenizer
    enc = encode(model, text)
    d = draw(tok, enc, seed, whole_words)
    if not d.positions:
        raise ValueError("the sentence has no piece that can be masked")
    corrupted = head_probs(model, _with_ids(enc, d.reads), d.positions)
    plain = head_probs(model, enc, d.positions)
    originals = [d.ids[p] for p in d.positions]
    prob = [float(corrupted[j, i]) for j, i in enumerate(originals)]
    return Corruption(
        pieces=d.pieces, reads=[tok.id_to_token(i) for i in d.reads], fates=d.fates, positions=d.positions,
        words=d.words, word_ids=d.word_ids, seed=seed, whole_words=whole_words,
        guesses=[_top(tok, row, top_k) for row in corrupted], prob=prob,
        loss=[-math.log(max(p, 1e-45)) for p in prob],
        plain_prob=[float(plain[j, i]) for j, i in enumerate(originals)],
        plain_guess=[tok.id_to_token(int(row.argmax())) for row in plain])


# -- left to right, or both ways ---------------------------------------------------------------------------------


def left_to_right(model: Any) -> bool:
    """Whether ``model`` reads only the words before each position (a GPT)."""
    return declares(model, LEFT_TO_RIGHT)


def causal_mask(n: int) -> np.ndarray:
    """[n, n] bool: row ``i`` (a position reading) may look at column ``j`` when ``j <= i``."""
    return np.tril(np.ones((n, n), dtype=bool))


def reading_mask(model: Any, text: str) -> dict:
    """Which pieces each piece of ``text`` may look at in ``model``: {"pieces", "allowed" ([n, n] bool, row: the
    piece reading), "left_to_right"}."""
    enc = encode(model, text)
    n = len(enc.ids)
    ltr = left_to_right(model)
    allowed = causal_mask(n) if ltr else np.ones((n, n), dtype=bool)
    return {"pieces": list(enc.tokens), "allowed": allowed, "left_to_right": ltr}


@dataclass
class WordGuesses:
    """Each word of a sentence as the model predicts it: from the words before it (a GPT), or with it hidden and
    every other word read (a masked LM)."""

    model: str
    words: list[str]
    prob: list[float | None]  # P(the word as written); None where the model has nothing to read it from
    guess: list[str | None]  # the model's first guess for the word's first piece
    left_to_right: bool

    def to_dict(self) -> dict:
        return asdict(self)


def word_guesses(model: Any, text: str) -> WordGuesses:
    """Every word of ``text`` as ``model`` predicts it. A GPT: the product of its pieces' next-piece probabilities
    (each piece from everything before it: the chain rule, exact); the first word has none when nothing comes
    before it. A masked LM: the word's pieces all hidden at once, the product of their probabilities (each piece
    predicted on its own, as Fill in the blank scores a hidden word)."""
    words = words_of(text)
    if left_to_right(model):
        return _next_words(model, words)
    _require_mlm(model)
    enc = encode(model, text)
    tok = model.tokenizer
    prob: list[float | None] = []
    guess: list[str | None] = []
    for w in range(len(enc.words)):
        positions = enc.word_pieces(w)
        if not positions:
            prob.append(None)
            guess.append(None)
            continue
        hidden = [tok.mask_id if i in positions else t for i, t in enumerate(enc.ids)]
        probs = head_probs(model, _with_ids(enc, hidden), positions)
        prob.append(float(np.prod([float(probs[j, enc.ids[p]]) for j, p in enumerate(positions)])))
        guess.append(tok.id_to_token(int(probs[0].argmax())))
    return WordGuesses(model.name, list(enc.words), prob, guess, False)


def _next_words(model: Any, words: list[str]) -> WordGuesses:
    enc, logits = model.next_word_logits(words)
    if enc.truncated:
        raise ValueError(f"the sentence is longer than {model.name} reads at once: shorten it")
    logp = logits.float().log_softmax(dim=-1)
    tok = model.tokenizer
    prob: list[float | None] = []
    guess: list[str | None] = []
    for w in range(len(enc.words)):
        positions = enc.word_pieces(w)
        if not positions or positions[0] == 0:  # nothing before the word to guess it from
            prob.append(None)
            guess.append(None)
            continue
        prob.append(float(math.exp(sum(float(logp[p - 1, enc.ids[p]]) for p in positions))))
        guess.append(tok.id_to_token(int(logp[positions[0] - 1].argmax())))
    return WordGuesses(model.name, list(enc.words), prob, guess, True)
