"""Training sequences for BERT's successors: whole sentences packed across document boundaries (RoBERTa's
"full-sentences" input), masked for a masked LM (``train roberta``) or left whole for a left-to-right LM
(``train gpt``).

Sentences follow each other in corpus order into sequences of up to ``max_seq_len`` pieces, ``[CLS] … [SEP]``
(RoBERTa's ``<s> … </s>``), with an extra ``[SEP]`` where one document ends and the next begins. Unlike BERT's
data (:mod:`.bert_data`) there are no sentence pairs and no next-sentence label.

Masking is the 15% draw of :func:`.bert_data.mask_tokens` (80/10/10, or the run's ``mask_split``), seeded by
(seed, sequence, draw): with dynamic masking (``static_masking`` 0) the draw is the epoch, so a sequence gets new
masks every time it is seen; with ``static_masking`` N the draw is ``epoch // N``, so masks drawn once are reused
for N epochs, as the original BERT data did (its corpus duplicated with 10 maskings). Every batch stays a pure
function of (seeds, epoch, index), as the trainer's exact resume requires.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..masking import MASK_SPLIT
from ..text import CorpusError
from .bert_corpus import TokenizedDocuments
from .bert_data import IGNORE_INDEX, MLM_PROBABILITY, VocabInfo, mask_tokens
from .task import Batch

# Stream tags for numpy's SeedSequence (distinct from bert_data's, which never share a run with these).
_ORDER, _MASK, _EVAL = 10, 11, 12


def pack_stream(docs: TokenizedDocuments, budget: int) -> np.ndarray:
    """[n_sequences, 2] int64 rows (first sentence, end sentence): consecutive sentences, across documents, of at
    most ``budget`` pieces counting one separator at each document boundary inside. A sentence longer than the
    budget is a sequence of its own, cut when used."""
    lengths = np.minimum(docs.sentence_lengths(), budget)
    starts_doc = np.zeros(docs.n_sentences, bool)
    starts_doc[docs.doc_offsets[:-1][docs.doc_offsets[:-1] < docs.n_sentences]] = True
    rows: list[tuple[int, int]] = []
    start, total = 0, 0
    for s in range(docs.n_sentences):
        n = int(lengths[s]) + int(starts_doc[s] and s > start)
        if s > start and total + n > budget:
            rows.append((start, s))
            start, total, n = s, 0, int(lengths[s])
        total += n
    if docs.n_sentences > start:
        rows.append((start, docs.n_sentences))
    return np.asarray(rows, dtype=np.int64).reshape(-1, 2)


class PackedData:
    """Packed sequences of a corpus's documents, in batches; ``mlm`` masks them (see the module docstring)."""

    def __init__(self, docs: TokenizedDocuments, vocab: VocabInfo, max_seq_len: int = 128, batch_size: int = 32,
                 mlm: bool = True, max_predictions: int = 20, static_masking: int = 0,
                 whole_word_masking: bool = False, seed: int = 0, data_seed: int | None = None,
                 name: str = "corpus", mask_split: tuple[int, int, int] = MASK_SPLIT):
        if max_seq_len < 3:
            raise ValueError(f"--max-seq-len must be at least 3 ([CLS] a word [SEP]), got {max_seq_len}")
        self.docs, self.vocab, self.max_seq_len, self.batch_size = docs, vocab, max_seq_len, batch_size
        self.mlm, self.max_predictions, self.static_masking = mlm, max_predictions, static_masking
        self.whole_word_masking, self.seed, self.mask_split = whole_word_masking, seed, mask_split
        self.order_seed = seed if data_seed is None else data_seed
        self.budget = max_seq_len - 2
        self.rows = pack_stream(docs, self.budget)
        if docs.n_tokens == 0 or len(self.rows) == 0:
            raise CorpusError(f"{name}: no text to train on after tokenisation")
        self._doc_start = set(int(d) for d in docs.doc_offsets[1:-1])

    @property
    def num_sequences(self) -> int:
        return len(self.rows)

    @property
    def num_batches(self) -> int:
        return math.ceil(self.num_sequences / self.batch_size)

    def tokens(self, sequence: int) -> np.ndarray:
        """The uncorrupted ids of one sequence: [CLS] sentences [SEP], a [SEP] between documents."""
        first, end = (int(x) for x in self.rows[sequence])
        v, pieces, total = self.vocab, [np.array([self.vocab.cls_id])], 0
        for s in range(first, end):
            part = self.docs.sentence(s)
            if s > first and s in self._doc_start:
                part = np.concatenate([[v.sep_id], part])
            part = part[: self.budget - total]
            pieces.append(part)
            total += len(part)
        pieces.append(np.array([v.sep_id]))
        return np.concatenate(pieces).astype(np.int64)

    def draw(self, epoch: int) -> int:
        """Which masking a sequence gets in ``epoch``: a new one each epoch, or each ``static_masking`` epochs."""
        return epoch if self.static_masking == 0 else epoch // self.static_masking

    def example(self, sequence: int, rng: np.random.Generator | None) -> tuple[np.ndarray, np.ndarray]:
        """(input ids, labels): masked ids and the originals at the chosen positions (-100 elsewhere) for a masked
        LM; for a left-to-right LM the ids themselves (transformers shifts them)."""
        ids = self.tokens(sequence)
        if not self.mlm:
            return ids, ids.copy()
        maskable = ids != self.vocab.cls_id
        maskable &= ids != self.vocab.sep_id
        word_start = ~self.vocab.continuation[ids] if self.whole_word_masking else None
        masked, positions, originals = mask_tokens(ids, maskable, rng, self.vocab, self.max_predictions,
                                                   word_start, MLM_PROBABILITY, self.mask_split)
        labels = np.full(len(ids), IGNORE_INDEX, np.int64)
        labels[positions] = originals
        return masked, labels

    def epoch_order(self, epoch: int) -> np.ndarray:
        return np.random.default_rng([self.order_seed, _ORDER, epoch]).permutation(self.num_sequences)

    def batch(self, epoch: int, index: int) -> Batch:
        chunk = self.epoch_order(epoch)[index * self.batch_size: (index + 1) * self.batch_size]
        if len(chunk) == 0:
            raise IndexError(f"batch {index} is past the end of epoch {epoch} ({self.num_batches} batches)")
        draw = self.draw(epoch)
        return self.collate([self.example(int(c), np.random.default_rng([self.order_seed, _MASK, int(c), draw]))
                             for c in chunk])

    def fixed_batches(self, n_sequences: int, batch_size: int) -> list[Batch]:
        """A fixed evaluation set: the same sequences and masks every time."""
        order = np.random.default_rng([self.seed, _EVAL]).permutation(self.num_sequences)[:n_sequences]
        examples = [self.example(int(c), np.random.default_rng([self.seed, _EVAL, int(c)])) for c in order]
        return [self.collate(examples[i: i + batch_size]) for i in range(0, len(examples), batch_size)]

    def collate(self, examples: list[tuple[np.ndarray, np.ndarray]]) -> Batch:
        """Pad to the longest sequence; padded positions get label -100 and attention 0."""
        T = max(len(ids) for ids, _ in examples)
        input_ids = np.full((len(examples), T), self.vocab.pad_id, np.int64)
        labels = np.full((len(examples), T), IGNORE_INDEX, np.int64)
        attention = np.zeros((len(examples), T), np.int64)
        for i, (ids, lab) in enumerate(examples):
            input_ids[i, : len(ids)], labels[i, : len(ids)], attention[i, : len(ids)] = ids, lab, 1
        return {"input_ids": torch.from_numpy(input_ids), "attention_mask": torch.from_numpy(attention),
                "labels": torch.from_numpy(labels)}
