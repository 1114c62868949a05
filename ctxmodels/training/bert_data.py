"""BERT pre-training examples from the tokenised corpus (:mod:`.bert_corpus`): masking, next-sentence pairs
(or ALBERT's sentence-order pairs), batches.

Each document's consecutive sentences are packed into chunks of up to ``max_seq_len - 3`` tokens. Every batch is
then made on the fly from ``(seed, epoch, index)`` alone, as the trainer requires: the epoch's chunk order, where
each chunk is split into segments A and B, whether B is the true continuation or a segment of another document
(50/50), and which tokens are masked. Masks are therefore drawn afresh every epoch, and a resumed or distributed
run sees exactly the batches an uninterrupted single-process run would. With ``sentence_order`` (ALBERT's
sentence-order prediction) B is always the true continuation, and the coin decides instead whether A and B are
swapped.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from ..masking import MASK_SPLIT, MLM_PROBABILITY, VocabInfo, mask_tokens
from ..text import CorpusError
from .bert_corpus import (
    PreparedData,
    TokenizedDocuments,
    batch_encoder,
    prepare_data,
    split_sentences,
    tokenize_documents,
)
from .task import Batch

# the corpus side and the masking draw (../masking.py, which the app shows) are re-exported: importers have found
# them here since before they had their own modules
__all__ = ["IGNORE_INDEX", "MLM_PROBABILITY", "SHORT_SEQ_PROB", "Example", "PreparedData", "PretrainingData",
           "TokenizedDocuments", "VocabInfo", "batch_encoder", "collate", "mask_tokens", "pack_chunks",
           "prepare_data", "split_sentences", "tokenize_documents"]

SHORT_SEQ_PROB = 0.1  # as in the original BERT: some chunks get a shorter target so short inputs are seen too
IGNORE_INDEX = -100

# Stream tags for numpy's SeedSequence, so that no two uses of the seed share random numbers.
_TRAIN, _EVAL, _ORDER, _PACK = 0, 1, 2, 3


# ----------------------------------------------------------------------------------------------------------
# chunks, sentence pairs and batches


@dataclass
class Example:
    input_ids: np.ndarray  # [T] corrupted: [CLS] A [SEP] B [SEP]
    token_type_ids: np.ndarray  # [T]
    positions: np.ndarray  # [n] positions chosen for prediction
    labels: np.ndarray  # [n] original ids there
    is_random_next: bool  # the pair's label: B is a segment of another document (NSP), A and B swapped (SOP)
    chunk: int = -1  # the chunk it was made from


def pack_chunks(
    docs: TokenizedDocuments, max_tokens: int, rng: np.random.Generator, short_seq_prob: float = SHORT_SEQ_PROB
) -> np.ndarray:
    """Greedily pack each document's consecutive sentences into chunks of at most ``max_tokens`` tokens.

    Returns [n_chunks, 3] int64 rows (document, first sentence, end sentence). A sentence longer than
    ``max_tokens`` forms a chunk of its own and is truncated when used. A chunk never spans two documents.
    """
    lengths = np.minimum(docs.sentence_lengths(), max_tokens)
    rows: list[tuple[int, int, int]] = []
    for d in range(docs.n_docs):
        first, end = int(docs.doc_offsets[d]), int(docs.doc_offsets[d + 1])
        start, total = first, 0
        target = max_tokens
        for s in range(first, end):
            n = int(lengths[s])
            if s > start and total + n > target:
                rows.append((d, start, s))
                start, total = s, 0
                target = int(rng.integers(2, max_tokens + 1)) if rng.random() < short_seq_prob else max_tokens
            total += n
        if end > start:
            rows.append((d, start, end))
    return np.asarray(rows, dtype=np.int64).reshape(-1, 3)


class PretrainingData:
    """Masked-LM + NSP examples from tokenised documents; every batch is a pure function of (seed, epoch, index).

    ``random_pool``: where "random next" segments come from (default: the same documents, never the example's
    own document). The held-out set of a run with a single held-out document draws them from the training text.
    ``data_seed`` (default ``seed``) seeds the epochs' order and the training batches' masks and pairs; ``seed``
    the packing into sequences and the fixed evaluation set. ``sentence_order``: ALBERT's sentence-order pairs
    (label 1: A and B swapped, as transformers' ``sentence_order_label``) instead of next-sentence pairs.
    ``mask_split``: the percentages of the chosen pieces that become [MASK], a random piece and stay the same.
    """

    def __init__(
        self,
        docs: TokenizedDocuments,
        vocab: VocabInfo,
        max_seq_len: int = 128,
        max_predictions: int = 20,
        batch_size: int = 32,
        whole_word_masking: bool = False,
        seed: int = 0,
        random_pool: TokenizedDocuments | None = None,
        mlm_probability: float = MLM_PROBABILITY,
        short_seq_prob: float = SHORT_SEQ_PROB,
        name: str = "corpus",
        data_seed: int | None = None,
        sentence_order: bool = False,
        mask_split: tuple[int, int, int] = MASK_SPLIT,
    ):
        if max_seq_len < 5:
            raise ValueError(f"--max-seq-len must be at least 5 ([CLS] A [SEP] B [SEP]), got {max_seq_len}")
        if batch_size < 1 or max_predictions < 1:
            raise ValueError("--batch-size and --max-predictions must be at least 1")
        self.docs, self.vocab = docs, vocab
        self.max_seq_len, self.max_predictions, self.batch_size = max_seq_len, max_predictions, batch_size
        self.whole_word_masking, self.seed, self.mlm_probability = whole_word_masking, seed, mlm_probability
        self.order_seed = seed if data_seed is None else data_seed
        self.max_tokens = max_seq_len - 3
        self.sentence_order, self.mask_split = sentence_order, mask_split
        self.label_key = "sentence_order_label" if sentence_order else "next_sentence_label"
        self.pool = docs if random_pool is None else random_pool
        self._exclude_own = random_pool is None and not sentence_order
        self.chunks = pack_chunks(docs, self.max_tokens, np.random.default_rng([seed, _PACK]), short_seq_prob)
        if sentence_order:
            self.chunks = self._orderable(self.chunks, name)
        if len(self.chunks) == 0:
            raise CorpusError(f"{name}: no text to train on after tokenisation")
        n_docs_with_text = int(np.count_nonzero(np.diff(self.pool.doc_offsets)))
        if self._exclude_own and n_docs_with_text < 2:
            raise CorpusError(
                f"{name}: next-sentence prediction needs at least 2 documents to draw random segments from, "
                f"found {n_docs_with_text}; separate the documents of the corpus with blank lines"
            )
        long = int(np.count_nonzero(docs.sentence_lengths() > self.max_tokens))
        if long:
            warnings.warn(
                f"{name}: {long} sentence(s) longer than {self.max_tokens} tokens will be truncated to fit "
                f"--max-seq-len {max_seq_len}",
                stacklevel=2,
            )
        self._order_epoch: int | None = None
        self._order: np.ndarray | None = None

    def _orderable(self, chunks: np.ndarray, name: str) -> np.ndarray:
        """The chunks a sentence-order pair can be cut from (two pieces at least); CorpusError when no document
        has two sentences, as then every pair would be one sentence cut in two: no order of sentences to learn."""
        if self.docs.n_tokens and not np.any(np.diff(self.docs.doc_offsets) >= 2):
            raise CorpusError(
                f"{name}: sentence-order prediction needs documents of two sentences or more to put in order, and "
                "every document here is a single sentence; give running text (one paragraph a line, blank lines "
                "only between documents), not one sentence per document")
        offsets = self.docs.sent_offsets
        pieces = offsets[chunks[:, 2]] - offsets[chunks[:, 1]]
        return chunks[pieces >= 2]

    # -- sizes and order ---------------------------------------------------------------------------------------

    @property
    def num_chunks(self) -> int:
        return len(self.chunks)

    @property
    def num_batches(self) -> int:
        return math.ceil(self.num_chunks / self.batch_size)

    def epoch_order(self, epoch: int) -> np.ndarray:
        if self._order_epoch != epoch:
            self._order = np.random.default_rng([self.order_seed, _ORDER, epoch]).permutation(self.num_chunks)
            self._order_epoch = epoch
        return self._order

    # -- examples ----------------------------------------------------------------------------------------------

    def _tokens(self, docs: TokenizedDocuments, first: int, end: int, budget: int) -> np.ndarray:
        """Tokens of sentences first..end-1 (each truncated to max_tokens), cut to at most ``budget``."""
        pieces, total = [], 0
        for s in range(first, end):
            piece = docs.sentence(s)[: self.max_tokens][: budget - total]
            pieces.append(piece)
            total += len(piece)
            if total >= budget:
                break
        return np.concatenate(pieces) if pieces else np.zeros(0, np.int32)

    def _random_segment(self, rng: np.random.Generator, own_doc: int, budget: int) -> np.ndarray:
        """Up to ``budget`` tokens of consecutive sentences starting at a random sentence of another document."""
        pool = self.pool
        lo, hi = (int(pool.doc_offsets[own_doc]), int(pool.doc_offsets[own_doc + 1])) if self._exclude_own else (0, 0)
        s = int(rng.integers(pool.n_sentences - (hi - lo)))
        if s >= lo:
            s += hi - lo  # skip the own document's sentences
        d = int(np.searchsorted(pool.doc_offsets, s, side="right")) - 1
        return self._tokens(pool, s, int(pool.doc_offsets[d + 1]), budget)

    def example(self, chunk: int, rng: np.random.Generator) -> Example:
        doc, first, end = (int(x) for x in self.chunks[chunk])
        is_random = bool(rng.random() < 0.5)
        if end - first >= 2:
            a_end = int(rng.integers(first + 1, end))  # A = sentences first..a_end-1, B = the rest
            a = self._tokens(self.docs, first, a_end, self.max_tokens)
            b_true = self._tokens(self.docs, a_end, end, self.max_tokens - len(a))
        else:  # a single (possibly long) sentence: split it at a word boundary
            tokens = self._tokens(self.docs, first, end, self.max_tokens)
            starts = np.flatnonzero(~self.vocab.continuation[tokens[1:]]) + 1
            if len(starts) == 0:
                starts = np.arange(1, len(tokens))
            if len(starts) == 0:  # a one-token document chunk: only a random continuation is possible
                a, b_true, is_random = tokens, tokens[:0], True
            else:
                cut = int(starts[rng.integers(len(starts))])
                a, b_true = tokens[:cut], tokens[cut:]
        if self.sentence_order:  # the true continuation, after A or (swapped) before it
            a, b = (b_true, a) if is_random else (a, b_true)
        else:  # a random B gets the length the true B would have had, so length is no clue to the NSP label
            b = self._random_segment(rng, doc, max(1, len(b_true))) if is_random else b_true

        v = self.vocab
        ids = np.concatenate([[v.cls_id], a, [v.sep_id], b, [v.sep_id]]).astype(np.int64)
        type_ids = np.zeros(len(ids), np.int64)
        type_ids[len(a) + 2 :] = 1
        maskable = np.ones(len(ids), bool)
        maskable[[0, len(a) + 1, len(ids) - 1]] = False
        word_start = None
        if self.whole_word_masking:
            word_start = ~v.continuation[ids]
            word_start[[1, len(a) + 2]] = True  # a segment always starts a word (B is never empty)
        masked, positions, labels = mask_tokens(
            ids, maskable, rng, v, self.max_predictions, word_start, self.mlm_probability, self.mask_split
        )
        return Example(masked, type_ids, positions, labels, is_random, chunk)

    def examples(self, epoch: int, index: int) -> list[Example]:
        order = self.epoch_order(epoch)
        chunks = order[index * self.batch_size : (index + 1) * self.batch_size]
        if len(chunks) == 0:
            raise IndexError(f"batch {index} is past the end of epoch {epoch} ({self.num_batches} batches)")
        rng = np.random.default_rng([self.order_seed, _TRAIN, epoch, index])
        return [self.example(int(c), rng) for c in chunks]

    def batch(self, epoch: int, index: int) -> Batch:
        return collate(self.examples(epoch, index), self.vocab.pad_id, self.label_key)

    def fixed_batches(self, n_sequences: int, batch_size: int) -> list[Batch]:
        """A fixed evaluation set: the same ``n_sequences`` examples (chunks, pairs and masks) every time."""
        order = np.random.default_rng([self.seed, _EVAL]).permutation(self.num_chunks)[:n_sequences]
        rng = np.random.default_rng([self.seed, _EVAL, 1])
        examples = [self.example(int(c), rng) for c in order]
        return [collate(examples[i : i + batch_size], self.vocab.pad_id, self.label_key)
                for i in range(0, len(examples), batch_size)]


def collate(examples: Sequence[Example], pad_id: int, label_key: str = "next_sentence_label") -> Batch:
    """Pad examples to the longest in the batch. ``mlm_positions`` padding points at [CLS] with label -100; the
    pairs' labels are under ``label_key``."""
    B = len(examples)
    T = max(len(e.input_ids) for e in examples)
    P = max(1, max(len(e.positions) for e in examples))
    input_ids = np.full((B, T), pad_id, np.int64)
    type_ids = np.zeros((B, T), np.int64)
    attention = np.zeros((B, T), np.int64)
    positions = np.zeros((B, P), np.int64)
    labels = np.full((B, P), IGNORE_INDEX, np.int64)
    for i, e in enumerate(examples):
        n, p = len(e.input_ids), len(e.positions)
        input_ids[i, :n], type_ids[i, :n], attention[i, :n] = e.input_ids, e.token_type_ids, 1
        positions[i, :p], labels[i, :p] = e.positions, e.labels
    return {
        "input_ids": torch.from_numpy(input_ids),
        "token_type_ids": torch.from_numpy(type_ids),
        "attention_mask": torch.from_numpy(attention),
        "mlm_positions": torch.from_numpy(positions),
        "mlm_labels": torch.from_numpy(labels),
        label_key: torch.tensor([int(e.is_random_next) for e in examples], dtype=torch.long),
    }

