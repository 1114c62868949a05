"""ELMo's training data: the output vocabulary, the corpus encoded as word types (cached), and windows of it.

* :class:`Vocabulary` — the output (softmax) vocabulary: ``<S>``, ``</S>``, ``<UNK>``, then the most frequent
  words of the *training* documents, most frequent first (the bilm-tf layout of ``vocab.txt``).
* :class:`EncodedCorpus` — the corpus as one stream of word-*type* ids (each sentence wrapped in ``<S> … </S>``),
  the 50 character ids of every type, and each type's output id. Character ids are stored per type, not per
  token, so an 11.6 M-word corpus costs 50 bytes x ~120 k types instead of 50 x 13 M. Cached as numpy files in
  the output directory, so ``--resume`` and re-runs skip tokenisation (:func:`load_corpus`).
* :func:`window_batch` — windows of the stream as character ids with each position's next and previous word as
  targets; :func:`eval_windows` — the fixed held-out windows.

A boundary transition is not a prediction: after ``</S>`` comes ``<S>`` by construction, so the forward LM is
not scored on predicting ``<S>`` and the backward LM not on predicting ``</S>`` (their target is :data:`IGNORE`).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..char_ids import BOS_TOKEN, EOS_TOKEN, MAX_CHARS, word_to_char_ids
from ..checkpoint import CheckpointError, atomic_file, read_json, remove_stale_temps, write_json, write_text_atomic
from ..text import read_documents, sentences, tokenizer_fingerprint
from .corpus import heldout_documents
from .task import Batch

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
# windows

IGNORE = -100  # target of a position that is not scored (a sentence-boundary transition)


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

