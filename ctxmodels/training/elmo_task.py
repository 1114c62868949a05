"""Training ELMo: word tokenisation, the output vocabulary, window batches and the bidirectional LM objective.

The pieces, in the order data flows through them:

* :func:`tokenize` / :func:`split_sentences` — one regex word tokenizer that splits punctuation, used for the
  corpus here and for every sentence the analysis code feeds to ELMo, so both see words cut the same way.
* :class:`Vocabulary` — the output (softmax) vocabulary: ``<S>``, ``</S>``, ``<UNK>``, then the most frequent
  words of the *training* documents, most frequent first (the bilm-tf layout of ``vocab.txt``).
* :class:`EncodedCorpus` — the corpus as one stream of word-*type* ids (each sentence wrapped in ``<S> … </S>``),
  the 50 character ids of every type, and each type's output id. Character ids are stored per type, not per
  token, so an 11.6 M-word corpus costs 50 bytes x ~120 k types instead of 50 x 13 M. Cached as numpy files in
  the output directory, so ``--resume`` and re-runs skip tokenisation.
* :class:`ElmoLMTask` — the trainer's task. Batches are fixed windows of ``--seq-len`` tokens cut from the
  stream; the model is stateless (every window starts from a zero LSTM state). bilm-tf carried the LSTM state
  across 20-token windows instead; we do not, because a stateless window is a pure function of
  (seed, epoch, index) — which exact resume and DDP sharding need — and because the analysis code runs the
  model on single sentences from a zero state, which a model trained from zero states is used to. Windows
  (rather than padded sentences) waste no compute on padding, have one shape, and every position has both a
  next and a previous word as targets (taken from beyond the window at its edges). Default 20 tokens: what
  bilm-tf used, about one sentence of the corpus (25 tokens on average), and no slower per token on CPU than
  64 in bench/bench_elmo.py.
* The objective (formula 2.3): the forward LM predicts the next word from the top forward layer, the backward
  LM the previous word from the top backward layer, both through the one shared softmax (as in bilm-tf); the
  loss is the mean of the two. Training uses a sampled softmax (:func:`sampled_softmax_loss`, log-uniform
  candidates shared by the whole batch, logQ correction, accidental hits removed); evaluation computes the
  exact full-softmax perplexity of each direction on fixed windows of the held-out documents.
  Why sampled rather than adaptive: it trains exactly the [V, P] softmax that the exact evaluation, the saved
  checkpoint and bilm-tf use, with no extra parameters or frequency clusters; with 1,024 candidates out of
  30,003 words it made training 2-7x faster per token than the full softmax for the presets tiny, mini and
  small-cpu (bench/bench_elmo.py; less for the larger presets, whose time goes to the CNN and the LSTMs).

A boundary transition is not a prediction: after ``</S>`` comes ``<S>`` by construction, so the forward LM is
not scored on predicting ``<S>`` and the backward LM not on predicting ``</S>``. ``</S>`` still counts as the
forward LM's last target of a sentence and ``<S>`` as the backward LM's, the usual LM convention.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ..bounds import Bound, int_range
from ..char_ids import BOS_TOKEN, EOS_TOKEN, MAX_CHARS, word_to_char_ids
from ..checkpoint import CheckpointError, atomic_file, read_json, remove_stale_temps, write_json, write_text_atomic
from ..elmo import LIMITS, PRESETS, ElmoConfig, ElmoLanguageModel
from ..formats.allennlp import save_elmo
from ..text import read_documents, sentences, tokenizer_fingerprint
from .corpus import heldout_documents
from .settings import RunSettings
from .trainer import Batch, TrainConfig, TrainTask, default_model_card

UNK_TOKEN = "<UNK>"
SPECIAL_TOKENS = (BOS_TOKEN, EOS_TOKEN, UNK_TOKEN)

# ----------------------------------------------------------------------------------------------------------
# output vocabulary


class Vocabulary:
    """The LM's output words: ``<S>``, ``</S>``, ``<UNK>``, then words from most to least frequent."""

    def __init__(self, words: Sequence[str]):
        words = list(words)
        if words[:3] != list(SPECIAL_TOKENS):
            raise ValueError(f"a vocabulary must start with {', '.join(SPECIAL_TOKENS)}; got {words[:3]}")
        index = {}
        for i, w in enumerate(words):
            if not w or any(c.isspace() for c in w):
                raise ValueError(f"vocabulary entry {i} ({w!r}) is empty or contains whitespace")
            if w in index:
                raise ValueError(f"vocabulary entry {i} ({w!r}) is a duplicate of entry {index[w]}")
            index[w] = i
        self.words, self.index = words, index

    bos_id, eos_id, unk_id = 0, 1, 2

    @classmethod
    def from_counts(cls, counts: dict[str, int], max_words: int) -> Vocabulary:
        """The ``max_words`` most frequent words (ties broken alphabetically, so the result is reproducible)."""
        if max_words < 1:
            raise ValueError(f"--vocab-size must be at least 1, got {max_words}")
        ranked = sorted((w for w in counts if w not in SPECIAL_TOKENS), key=lambda w: (-counts[w], w))
        return cls([*SPECIAL_TOKENS, *ranked[:max_words]])

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word: str) -> bool:
        return word in self.index

    def id(self, word: str) -> int:
        return self.index.get(word, self.unk_id)

    def encode(self, words: Iterable[str]) -> list[int]:
        return [self.index.get(w, self.unk_id) for w in words]

    def save(self, path: str | Path) -> None:
        write_text_atomic(path, "".join(w + "\n" for w in self.words))

    @classmethod
    def load(cls, path: str | Path) -> Vocabulary:
        path = Path(path)
        if not path.is_file():
            raise CheckpointError(f"{path}: vocabulary file not found")
        try:
            words = [w for w in path.read_text(encoding="utf-8").split("\n") if w]
            return cls(words)
        except (UnicodeDecodeError, ValueError) as e:
            raise CheckpointError(f"{path}: not an ELMo vocabulary ({e})") from e


# ----------------------------------------------------------------------------------------------------------
# the encoded corpus

# Type ids 0 and 1 are the sentence boundaries in every encoded corpus.
BOS_TYPE, EOS_TYPE = 0, 1
CACHE_VERSION = 1  # bump when tokenisation or the encoding changes, so old caches are rebuilt


@dataclass
class EncodedCorpus:
    """The corpus as word-type ids. ``train`` and ``heldout`` are int32 streams of type ids, every sentence
    written as ``<S> words </S>``; ``type_chars[t]`` holds the 50 character ids of type t and
    ``type_to_vocab[t]`` its output id (``<UNK>`` for words outside the vocabulary)."""

    types: list[str]
    type_chars: np.ndarray  # [n_types, 50] int16
    type_to_vocab: np.ndarray  # [n_types] int32
    train: np.ndarray  # int32
    heldout: np.ndarray  # int32
    vocab: Vocabulary

    @classmethod
    def build(cls, train_docs: Sequence[Sequence[str]], heldout_docs: Sequence[Sequence[str]],
              vocab_size: int, vocab: Vocabulary | None = None) -> EncodedCorpus:
        """Encode the documents; the output vocabulary is the ``vocab_size`` most frequent training words, or
        ``vocab`` when given (a trained model's, to score new text against it)."""
        type_index: dict[str, int] = {BOS_TOKEN: BOS_TYPE, EOS_TOKEN: EOS_TYPE}

        def encode(docs: Sequence[Sequence[str]]) -> np.ndarray:
            ids: list[int] = []
            for doc in docs:
                for paragraph in doc:
                    for sent in sentences(paragraph):
                        ids.append(BOS_TYPE)
                        # setdefault gives every new type the next id
                        ids.extend([type_index.setdefault(w, len(type_index)) for w in sent])
                        ids.append(EOS_TYPE)
            return np.asarray(ids, dtype=np.int32)

        train = encode(train_docs)
        n_train_types = len(type_index)
        heldout = encode(heldout_docs)
        types = list(type_index)
        if vocab is None:
            # Counts come from the training documents only: the held-out text must not choose the vocabulary.
            counts = np.bincount(train, minlength=n_train_types)
            vocab = Vocabulary.from_counts({types[t]: int(counts[t]) for t in range(2, n_train_types)}, vocab_size)
        type_to_vocab = np.asarray([vocab.id(w) for w in types], dtype=np.int32)
        type_chars = np.asarray([word_to_char_ids(w) for w in types], dtype=np.int16).reshape(-1, MAX_CHARS)
        return cls(types, type_chars, type_to_vocab, train, heldout, vocab)

    @property
    def n_train_tokens(self) -> int:
        return int(len(self.train))

    def oov_rate(self, stream: np.ndarray) -> float:
        """Share of word positions (boundaries excluded) whose output id is ``<UNK>``."""
        words = stream[stream > EOS_TYPE]
        return float((self.type_to_vocab[words] == Vocabulary.unk_id).mean()) if len(words) else 0.0

    # -- cache --------------------------------------------------------------------------------------------

    def save(self, directory: Path, key: dict[str, Any]) -> None:
        """Write the cache: arrays as .npy, the types as JSON, ``key`` (what it was built from) last."""
        directory.mkdir(parents=True, exist_ok=True)
        for name in ("type_chars", "type_to_vocab", "train", "heldout"):
            array = getattr(self, name)
            with atomic_file(directory / f"{name}.npy", size=array.nbytes + 200) as tmp, open(tmp, "wb") as f:
                np.save(f, array)
        write_json(directory / "types.json", self.types)
        self.vocab.save(directory / "vocab.txt")
        write_json(directory / "key.json", key)  # written last: a cache without it is ignored

    @classmethod
    def load(cls, directory: Path, key: dict[str, Any]) -> EncodedCorpus | None:
        """The cached corpus if it was built from exactly ``key``, else None."""
        try:
            if read_json(directory / "key.json") != key:
                return None
            arrays = {n: np.load(directory / f"{n}.npy") for n in ("type_chars", "type_to_vocab", "train", "heldout")}
            types = json.loads((directory / "types.json").read_text(encoding="utf-8"))
            vocab = Vocabulary.load(directory / "vocab.txt")
        except Exception:  # missing or damaged (numpy fails in many ways on a damaged file): rebuild it
            return None
        if not isinstance(types, list) or len(types) != len(arrays["type_chars"]) \
                or len(types) != len(arrays["type_to_vocab"]):
            return None
        in_range = all(a.ndim == 1 and (a.size == 0 or (0 <= a.min() and a.max() < len(types)))
                       for a in (arrays["train"], arrays["heldout"]))
        if not in_range or not (arrays["type_to_vocab"].size == 0 or
                                (0 <= arrays["type_to_vocab"].min() and arrays["type_to_vocab"].max() < len(vocab))):
            return None  # damaged: rebuilt rather than indexing out of range in the middle of training
        return cls(types=types, vocab=vocab, **arrays)


# ----------------------------------------------------------------------------------------------------------
# sampled softmax


class LogUniformSampler:
    """Draws softmax candidates from the log-uniform (Zipfian) distribution over ids sorted by frequency:
    P(k) = log((k + 2) / (k + 1)) / log(V + 1), as TensorFlow's ``log_uniform_candidate_sampler``.

    :meth:`sample` draws until it has ``n`` distinct ids and returns, with each id, the log of its
    probability of being in such a sample, 1 - (1 - P(k))^tries: the logQ correction of the sampled softmax.
    """

    def __init__(self, n_classes: int):
        if n_classes < 2:
            raise ValueError(f"the sampled softmax needs at least 2 classes, got {n_classes}")
        self.n_classes = n_classes
        self._log_range = math.log(n_classes + 1)

    def prob(self, ids: torch.Tensor) -> torch.Tensor:
        ids = ids.double()
        return (torch.log(ids + 2) - torch.log(ids + 1)) / self._log_range

    def log_expected_count(self, ids: torch.Tensor, tries: int) -> torch.Tensor:
        """log of P(id is among the candidates) after ``tries`` draws (float32)."""
        p = self.prob(ids)
        return torch.log(-torch.expm1(tries * torch.log1p(-p))).float()

    def sample(self, n: int, rng: np.random.Generator) -> tuple[torch.Tensor, int]:
        """``n`` distinct ids (LongTensor, in order of first draw) and the number of draws it took."""
        if n >= self.n_classes:
            raise ValueError(f"cannot draw {n} distinct candidates from {self.n_classes} classes")
        draws = np.empty(0, dtype=np.int64)
        chunk = 2 * n
        while True:
            u = rng.random(chunk)
            new = np.floor(np.exp(u * self._log_range)).astype(np.int64) - 1
            draws = np.concatenate([draws, np.clip(new, 0, self.n_classes - 1)])
            uniq, first = np.unique(draws, return_index=True)
            if len(uniq) >= n:
                first = np.sort(first)[:n]  # the first n distinct ids, as sequential draws would find them
                return torch.from_numpy(draws[first]), int(first[-1]) + 1
            chunk *= 2


def sampled_softmax_loss(
    states: torch.Tensor,
    targets: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor,
    candidates: torch.Tensor,
    candidate_log_q: torch.Tensor | None = None,
    target_log_q: torch.Tensor | None = None,
) -> torch.Tensor:
    """Per-row sampled softmax cross-entropy, the candidates shared by all rows.

    ``states`` [N, P], ``targets`` [N]; ``weight`` [V, P] and ``bias`` [V] are the full softmax. Each row is
    scored against its true class and the candidates, all logits minus their log expected count (the logQ
    correction; None = no correction). A candidate equal to a row's target is masked out for that row
    ("accidental hit"), so with every class as a candidate and no correction this is exactly the full
    softmax cross-entropy.
    """
    true_logit = (states * weight[targets]).sum(-1) + bias[targets]
    cand_logits = states @ weight[candidates].t() + bias[candidates]
    if target_log_q is not None:
        true_logit = true_logit - target_log_q
    if candidate_log_q is not None:
        cand_logits = cand_logits - candidate_log_q
    hits = targets[:, None] == candidates[None, :]
    cand_logits = cand_logits.masked_fill(hits, float("-inf"))
    logits = torch.cat([true_logit[:, None], cand_logits], dim=1)
    return torch.logsumexp(logits, dim=1) - true_logit


# ----------------------------------------------------------------------------------------------------------
# the training task

IGNORE = -100  # target of a position that is not scored (a sentence-boundary transition)
_ORDER, _SAMPLES = 0, 1  # stream tags for numpy's SeedSequence, so that no two uses of the seed share numbers


def _unwrap(model: nn.Module) -> ElmoLanguageModel:
    return model.module if isinstance(model, nn.parallel.DistributedDataParallel) else model  # type: ignore


class ElmoLMTask(TrainTask):
    """Trains an :class:`ElmoLanguageModel` on windows of an :class:`EncodedCorpus` (see the module docstring).

    ``n_samples`` is the number of distinct softmax candidates a batch shares; 0, or at least the vocabulary
    size, trains with the exact full softmax instead.
    """

    name = "elmo"

    def __init__(self, corpus: EncodedCorpus, config: ElmoConfig, seq_len: int = 20, batch_size: int = 32,
                 n_samples: int = 1024, eval_tokens: int = 10_000, seed: int = 0,
                 card_info: dict[str, Any] | None = None, data_seed: int | None = None):
        if seq_len < 1 or batch_size < 1:
            raise ValueError(f"--seq-len and --batch-size must be at least 1, got {seq_len} and {batch_size}")
        if n_samples < 0:
            raise ValueError(f"--n-samples must be 0 (full softmax) or more, got {n_samples}")
        self.corpus, self.seq_len, self.batch_size, self.seed = corpus, seq_len, batch_size, seed
        self.order_seed = seed if data_seed is None else data_seed  # the windows' order and softmax samples
        V = len(corpus.vocab)
        self.config = dataclasses.replace(config, n_tokens_vocab=V)
        self.n_samples = n_samples if 0 < n_samples < V else 0
        self.sampler = LogUniformSampler(V) if self.n_samples else None
        self.card_info = card_info or {}
        self._windows = (len(corpus.train) - 1) // seq_len - 1  # every window position has both neighbours
        if self._windows < batch_size:
            raise ValueError(
                f"the training documents hold {len(corpus.train):,} tokens (with sentence boundaries): too few for "
                f"one batch of {batch_size} windows of {seq_len}; use a larger corpus or smaller --batch-size / "
                "--seq-len"
            )
        self._eval_starts, self._eval_len = eval_windows(len(corpus.heldout), seq_len, eval_tokens)
        with torch.random.fork_rng(devices=[]):  # the initial weights depend on the seed only
            torch.manual_seed(seed)
            self.model = ElmoLanguageModel(self.config)
        self._epoch_cache: tuple[int, np.ndarray] | None = None

    # -- data ---------------------------------------------------------------------------------------------

    def num_batches(self, epoch: int) -> int:
        return self._windows // self.batch_size

    def _epoch_starts(self, epoch: int) -> np.ndarray:
        """Window starts of an epoch in training order: a fresh offset and shuffle per epoch."""
        if self._epoch_cache is None or self._epoch_cache[0] != epoch:
            rng = np.random.default_rng([self.order_seed, epoch, _ORDER])
            offset = int(rng.integers(self.seq_len))
            starts = 1 + offset + self.seq_len * rng.permutation(self._windows)
            self._epoch_cache = (epoch, starts)
        return self._epoch_cache[1]

    def get_batch(self, epoch: int, index: int) -> Batch:
        starts = self._epoch_starts(epoch)[index * self.batch_size : (index + 1) * self.batch_size]
        batch = window_batch(self.corpus, self.corpus.train, starts, self.seq_len)
        if self.sampler is not None:
            rng = np.random.default_rng([self.order_seed, epoch, index, _SAMPLES])
            candidates, tries = self.sampler.sample(self.n_samples, rng)
            batch["candidates"] = candidates
            batch["candidate_log_q"] = self.sampler.log_expected_count(candidates, tries)
            batch["tries"] = torch.tensor(tries)
        return batch

    # -- objective ----------------------------------------------------------------------------------------

    def _softmax_losses(self, head: nn.Linear, states: torch.Tensor, targets: torch.Tensor,
                        batch: Batch) -> torch.Tensor:
        """Per-position loss: the exact cross-entropy, or the sampled softmax's estimate of it."""
        if self.sampler is None:
            return F.cross_entropy(head(states), targets, reduction="none")
        target_log_q = self.sampler.log_expected_count(targets, int(batch["tries"])).to(states.device)
        return sampled_softmax_loss(states, targets, head.weight, head.bias, batch["candidates"],
                                    batch["candidate_log_q"], target_log_q)

    def loss(self, model: nn.Module, batch: Batch) -> tuple[torch.Tensor, dict[str, float]]:
        out = model(batch["char_ids"])
        head = _unwrap(model).require_lm_head()
        # bilm-tf drops out the top LSTM output too (the model itself drops out only each layer's input).
        p, training = self.config.dropout, model.training
        fwd_targets, bwd_targets = batch["fwd_targets"], batch["bwd_targets"]
        fwd_keep, bwd_keep = fwd_targets != IGNORE, bwd_targets != IGNORE
        # Both directions go through the one shared softmax in one call, sharing the sampled candidates.
        states = torch.cat([F.dropout(out.forward_layers[-1], p, training)[fwd_keep],
                            F.dropout(out.backward_layers[-1], p, training)[bwd_keep]])
        losses = self._softmax_losses(head, states, torch.cat([fwd_targets[fwd_keep], bwd_targets[bwd_keep]]), batch)
        n_fwd = int(fwd_keep.sum())
        fwd, bwd = _mean(losses[:n_fwd]), _mean(losses[n_fwd:])
        loss = 0.5 * (fwd + bwd)
        return loss, {"tokens": batch["char_ids"].shape[0] * batch["char_ids"].shape[1],
                      "fwd_loss": fwd.item(), "bwd_loss": bwd.item()}

    # -- evaluation ---------------------------------------------------------------------------------------

    def evaluate(self, model: nn.Module) -> dict[str, float]:
        """Exact full-softmax perplexity of each direction, and of both together, on the held-out windows."""
        return heldout_perplexity(_unwrap(model), self.corpus, self._eval_starts, self._eval_len)

    # -- saving -------------------------------------------------------------------------------------------

    def save_model(self, directory: Path) -> None:
        save_elmo(self.model, directory, vocab=self.corpus.vocab.words)

    def model_card(self, info: dict[str, Any]) -> str:
        c = self.card_info
        s, cnn = self.config.lstm, self.config.char_cnn
        heldout = "\n".join(f"- document {i}: {title}" for i, title in c.get("heldout_docs", [])) or "- none"
        credit = f"\n{c['credit']}\n" if c.get("credit") else ""
        added = (f" (with the {c['added_documents']} documents of `{c['add_text']}`: `--add-text`, trained on, none "
                 "held out)" if c.get("add_text") else "")
        size = f"preset `{c['preset']}`" if c.get("preset") else "at the starting model's size"
        start = (f"Initial weights: `{c['init_from']}` (its size and output vocabulary; continued training with this "
                 "run's schedule).\n" if c.get("init_from") else "")
        if self.order_seed != self.seed:
            start += (f"Training order: `--data-seed {self.order_seed}` (the held-out split and initial weights: "
                      f"`--seed {self.seed}`).\n")
        return default_model_card(self.name, info) + f"""
## Model

ELMo {size}: character CNN ({cnn.n_filters} filters, {cnn.n_highway} highway),
{s.n_layers} LSTM layers of {s.dim} cells projected to {s.projection_dim}; output vocabulary of
{len(self.corpus.vocab):,} words (`vocab.txt`: `<S>`, `</S>`, `<UNK>`, then the most frequent training words).
Trained on windows of {self.seq_len} tokens, batches of {self.batch_size},
{f'sampled softmax with {self.n_samples} shared candidates' if self.n_samples else 'full softmax'}, dropout
{self.config.dropout:g}. Held-out perplexities are exact (full softmax) over
{len(self._eval_starts) * self._eval_len:,} held-out tokens.
{start}
## Data

Corpus: `{c.get('corpus', '?')}` (sha256 `{c.get('corpus_sha256', '?')[:16]}…`), {c.get('n_docs', '?')} documents,
{self.corpus.n_train_tokens:,} training tokens with sentence boundaries{added}; held-out documents (never trained on,
out-of-vocabulary rate {100 * self.corpus.oov_rate(self.corpus.heldout):.2f}%):

{heldout}
{credit}"""


def window_batch(corpus: EncodedCorpus, stream: np.ndarray, starts: np.ndarray, length: int) -> Batch:
    """Windows ``stream[start:start + length]`` as character ids, with each position's next and previous word."""
    pos = starts[:, None] + np.arange(length)[None, :]
    nxt, prev = stream[pos + 1], stream[pos - 1]
    fwd = corpus.type_to_vocab[nxt].astype(np.int64)
    bwd = corpus.type_to_vocab[prev].astype(np.int64)
    fwd[nxt == BOS_TYPE] = IGNORE
    bwd[prev == EOS_TYPE] = IGNORE
    return {
        "char_ids": torch.from_numpy(corpus.type_chars[stream[pos]].astype(np.int64)),
        "fwd_targets": torch.from_numpy(fwd),
        "bwd_targets": torch.from_numpy(bwd),
    }


def eval_windows(n_tokens: int, seq_len: int, eval_tokens: int) -> tuple[np.ndarray, int]:
    """Fixed held-out windows (starts, length) spread evenly over a stream of ``n_tokens`` (none: empty)."""
    length = min(seq_len, n_tokens - 2)
    if eval_tokens <= 0 or length < 1:
        return np.zeros(0, dtype=np.int64), 0
    available = (n_tokens - 2) // length  # windows starting at 1, 1 + length, ... with both neighbours
    n = min(available, max(1, math.ceil(eval_tokens / length)))
    picks = np.unique(np.round(np.linspace(0, available - 1, n)).astype(np.int64))
    return 1 + length * picks, length


@torch.no_grad()
def heldout_perplexity(lm: ElmoLanguageModel, corpus: EncodedCorpus, starts: np.ndarray,
                       length: int) -> dict[str, float]:
    """Exact full-softmax perplexity forward, backward and both, on windows of ``corpus.heldout``."""
    if not len(starts):
        return {}
    device = next(lm.parameters()).device
    nll = {"fwd": 0.0, "bwd": 0.0}
    count = {"fwd": 0, "bwd": 0}
    per_batch = max(1, 4096 // length)
    for i in range(0, len(starts), per_batch):
        batch = window_batch(corpus, corpus.heldout, starts[i : i + per_batch], length)
        out = lm(batch["char_ids"].to(device))
        for key, states in (("fwd", out.forward_layers[-1]), ("bwd", out.backward_layers[-1])):
            s, c = full_softmax_nll(lm, states, batch[f"{key}_targets"].to(device))
            nll[key] += s
            count[key] += c
    fwd, bwd = nll["fwd"] / max(count["fwd"], 1), nll["bwd"] / max(count["bwd"], 1)
    both = (nll["fwd"] + nll["bwd"]) / max(count["fwd"] + count["bwd"], 1)
    return {"fwd_ppl": math.exp(fwd), "bwd_ppl": math.exp(bwd), "ppl": math.exp(both)}


def heldout_metrics(lm: ElmoLanguageModel, vocab: Sequence[str], corpus: str | Path, eval_tokens: int = 100_000,
                    seq_len: int = 20, heldout_docs: int | Sequence[int] | None = None,
                    seed: int = 0) -> dict[str, float]:
    """Held-out perplexities of a trained LM (its output vocabulary ``vocab``) on the documents of ``corpus``
    that a training run with the same ``heldout_docs`` and ``seed`` held out. Adds ``eval_tokens``, the
    number of windowed positions scored, and ``oov_rate`` of the held-out words."""
    docs, held = heldout_documents(corpus, heldout_docs, seed)
    encoded = EncodedCorpus.build([], [docs[i] for i in held], 0, vocab=Vocabulary(vocab))
    starts, length = eval_windows(len(encoded.heldout), seq_len, eval_tokens)
    lm.eval()
    out = heldout_perplexity(lm, encoded, starts, length)
    return {**out, "eval_tokens": int(len(starts) * length), "oov_rate": encoded.oov_rate(encoded.heldout)}


def _mean(x: torch.Tensor) -> torch.Tensor:
    return x.mean() if x.numel() else x.sum()  # a batch with nothing to score adds 0, not NaN


def full_softmax_nll(lm: ElmoLanguageModel, states: torch.Tensor, targets: torch.Tensor,
                     chunk: int = 2048) -> tuple[float, int]:
    """Summed exact negative log-likelihood and the number of scored positions (targets != IGNORE)."""
    keep = targets != IGNORE
    states, targets = states[keep], targets[keep]
    total = 0.0
    for i in range(0, len(targets), chunk):  # chunks keep the [N, V] logits small
        logits = lm.full_softmax_logits(states[i : i + chunk]).float()
        total += F.cross_entropy(logits, targets[i : i + chunk], reduction="sum").item()
    return total, int(len(targets))


# ----------------------------------------------------------------------------------------------------------
# the run: its settings (stored in out/run.json, see .settings), the corpus, the task


DEFAULT_PRESET = "mini"
DEFAULT_VOCAB_SIZE = 30_000  # most frequent training words, plus <S>, </S>, <UNK>


@dataclass
class ElmoSettings(RunSettings):
    """An ELMo run: the common settings plus the model size, the output vocabulary, windows and the softmax."""

    KIND: ClassVar[str] = "elmo"
    TITLE: ClassVar[str] = "ELMo"
    PATHS: ClassVar[tuple[str, ...]] = (*RunSettings.PATHS, "init_from")
    BOUNDS: ClassVar[dict[str, Bound]] = {
        "vocab_size": int_range(1, 1_000_000),
        "seq_len": int_range(1, 1024),
        "batch_size": int_range(1, 8192),
        "n_samples": int_range(0, 1_000_000),
        "eval_tokens": int_range(0, 100_000_000),
        "dropout": LIMITS["dropout"],  # the model config's own range
    }

    # The shipped recipe: mini, 4,000 steps of 640 tokens, about two hours on a 2-core CPU. Measured on ELTeC:
    # held-out perplexity 297 after 200 steps and 191 after 400 (bench/bench_elmo.py has the speed figures).
    steps: int | None = 4_000
    lr: float | None = 3e-3
    warmup: int | None = 100
    preset: str | None = None  # DEFAULT_PRESET, or with --init-from the starting model's own size
    vocab_size: int | None = None  # DEFAULT_VOCAB_SIZE, or with --init-from the starting model's own vocabulary
    seq_len: int = 20  # tokens per training window
    batch_size: int = 32  # windows per batch
    n_samples: int = 1024  # distinct sampled-softmax candidates per batch; 0 = exact full softmax
    dropout: float = ElmoConfig.dropout  # on every LSTM layer's input and the softmax's, while training
    eval_tokens: int = 10_000  # held-out tokens scored per evaluation
    init_from: str | None = None  # a trained ELMo to continue from (its size, vocabulary and weights)

    def check(self) -> None:
        super().check()
        if self.preset is None and not self.init_from:
            self.preset = DEFAULT_PRESET
        if self.vocab_size is None and not self.init_from:
            self.vocab_size = DEFAULT_VOCAB_SIZE
        if self.preset is not None and self.preset not in PRESETS:
            raise ValueError(f"unknown --preset {self.preset!r}; choose one of {', '.join(PRESETS)}")

    @classmethod
    def legacy(cls, out: Path) -> dict[str, Any] | None:
        path = out / "elmo_run.json"  # runs started before run.json: the settings, flat
        return read_json(path) if path.is_file() else None


def _is_rank0() -> bool:
    return int(os.environ.get("RANK", "0")) == 0


def load_corpus(corpus: Path, heldout_docs: int | None, seed: int, vocab_size: int, sha: str,
                cache_dir: Path | None, vocab: Vocabulary | None = None, add_text: Path | None = None,
                add_text_sha: str = "") -> tuple[EncodedCorpus, dict[str, Any]]:
    """Read, split and encode the corpus, through the cache in ``cache_dir`` when it matches. The output
    vocabulary is the ``vocab_size`` most frequent training words, or ``vocab`` (a starting model's) when given.
    The documents of ``add_text`` join the training side, after the corpus's own; none of them is held out."""
    docs, held = heldout_documents(corpus, heldout_docs, seed)
    added = read_documents(add_text) if add_text is not None else []
    info = {"n_docs": len(docs), "heldout_docs": [(i, docs[i][0][:80]) for i in held],
            "add_text": add_text.name if add_text is not None else None, "added_documents": len(added)}
    key = {"version": CACHE_VERSION, "tokenizer": tokenizer_fingerprint(), "corpus_sha256": sha, "heldout": held,
           "vocab_size": vocab_size}
    if add_text is not None:
        key["add_text_sha256"] = add_text_sha
    if vocab is not None:
        key["vocab_sha256"] = hashlib.sha256("\n".join(vocab.words).encode("utf-8")).hexdigest()
    encoded = EncodedCorpus.load(cache_dir, key) if cache_dir is not None else None
    if encoded is None:
        held_set = set(held)
        encoded = EncodedCorpus.build([d for i, d in enumerate(docs) if i not in held_set] + added,
                                      [docs[i] for i in held], vocab_size, vocab=vocab)
        if cache_dir is not None and _is_rank0():
            remove_stale_temps(cache_dir, min_age_s=3600)  # runs may share the cache: only long-dead writers'
            encoded.save(cache_dir, key)
    return encoded, info


def load_start(settings: ElmoSettings, out: Path) -> ElmoLanguageModel:
    """The model ``--init-from`` names, checked against the run's other settings. On --resume the run's own
    checkpoint stands in for it (only its size and vocabulary are used then): the start may have gone or changed."""
    from ..formats.allennlp import load_elmo

    own = out / "checkpoint"
    start = own if (own / "config.json").is_file() else Path(settings.init_from or "")
    lm = load_elmo(start)  # CheckpointError naming the file for anything that is not a loadable ELMo
    if not lm.has_lm_head or not lm.vocab:
        raise CheckpointError(f"{settings.init_from}: has no language-model head (a published ELMo ships without "
                              "one), so training cannot continue from it; start from a model trained here")
    if settings.preset is not None:
        shape = dataclasses.replace(lm.config, n_tokens_vocab=0, dropout=0.0)
        if dataclasses.replace(ElmoConfig.preset(settings.preset), n_tokens_vocab=0, dropout=0.0) != shape:
            raise CheckpointError(f"{settings.init_from}: does not fit --preset {settings.preset} (it has "
                                  f"{lm.config.lstm.n_layers} LSTM layers of {lm.config.lstm.dim} cells); leave "
                                  "--preset out to continue at the starting model's size")
    own_words = len(lm.vocab) - len(SPECIAL_TOKENS)
    if settings.vocab_size is not None and settings.vocab_size != own_words:
        raise ValueError(f"--vocab-size {settings.vocab_size}: the starting model {settings.init_from} predicts "
                         f"{own_words:,} words (plus <S>, </S>, <UNK>), and continued training keeps its vocabulary; "
                         "leave --vocab-size out")
    settings.vocab_size = own_words
    return lm


def build_task(settings: ElmoSettings, out: str | Path, data_cache: str | Path | None = None,
               resume: bool = False) -> tuple[ElmoLMTask, TrainConfig]:
    """The task and trainer settings of an ELMo run in ``out``, from :meth:`ElmoSettings.resolve`'s settings;
    the encoded corpus is cached in ``data_cache`` (default ``out/data_cache``; runs may share one). With
    ``--init-from`` the model starts from a trained ELMo's weights, size and output vocabulary."""
    out, s = Path(out), settings
    corpus = Path(s.corpus)
    cache = Path(data_cache) if data_cache else out / "data_cache"
    if cache.exists() and not cache.is_dir():
        raise ValueError(f"--data-cache {cache} is a file, not a folder")
    start = load_start(s, out) if s.init_from else None
    vocab = Vocabulary(start.vocab) if start is not None else None
    assert s.vocab_size is not None  # set by check() or by load_start()
    encoded, info = load_corpus(corpus, s.heldout_docs, s.seed, s.vocab_size, s.corpus_sha256, cache, vocab=vocab,
                                add_text=Path(s.add_text) if s.add_text else None, add_text_sha=s.add_text_sha256)
    s.heldout_docs = len(info["heldout_docs"])
    credit = ("Trained on the English Novel Corpus (ELTeC-eng), ed. Lou Burnard, v1.0.1, DOI 10.5281/zenodo.3533868."
              if "eltec" in corpus.name.lower() else "")
    # the run's dropout replaces the start's: it is a training setting, stored in the model's config for the next run
    config = dataclasses.replace(start.config if start is not None else ElmoConfig.preset(s.preset),
                                 dropout=s.dropout)
    task = ElmoLMTask(
        encoded, config, seq_len=s.seq_len, batch_size=s.batch_size,
        n_samples=s.n_samples, eval_tokens=s.eval_tokens, seed=s.seed, data_seed=s.data_seed,
        card_info={**info, "preset": s.preset, "corpus": corpus.name,
                   "corpus_sha256": s.corpus_sha256, "credit": credit, "init_from": s.init_from},
    )
    if start is not None and not resume:
        task.model.load_state_dict({k: v.float() for k, v in start.state_dict().items()})
    s.save(out)
    return task, s.train_config()
