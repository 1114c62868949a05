"""BERT pre-training data from plain text: sentences, masking, next-sentence pairs, batches, the data cache.

The pipeline, run once per output directory and cached in ``out/data/``:

1. read the corpus (:func:`ctxmodels.text.read_documents`), hold out whole documents (:mod:`.corpus`);
2. train a WordPiece tokenizer on the training documents (or load ``--tokenizer``);
3. split paragraphs into sentences and tokenise them with the tokenizer's batch API into flat numpy arrays;
4. pack each document's consecutive sentences into chunks of up to ``max_seq_len - 3`` tokens.

Every batch is then made on the fly from ``(seed, epoch, index)`` alone, as the trainer requires: the epoch's
chunk order, where each chunk is split into segments A and B, whether B is the true continuation or a segment
of another document (50/50), and which tokens are masked. Masks are therefore drawn afresh every epoch, and a
resumed or distributed run sees exactly the batches an uninterrupted single-process run would.
"""

from __future__ import annotations

import math
import re
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from ..checkpoint import CheckpointError, atomic_file, file_sha256, read_json, write_json
from ..text import CorpusError, Document, read_documents
from .corpus import default_heldout, heldout_documents
from .trainer import Batch

if TYPE_CHECKING:
    from ..tokenization import WordPieceTokenizer

MLM_PROBABILITY = 0.15
SHORT_SEQ_PROB = 0.1  # as in the original BERT: some chunks get a shorter target so short inputs are seen too
IGNORE_INDEX = -100
DATA_FORMAT = 1  # bump when the cached arrays change meaning

# Stream tags for numpy's SeedSequence, so that no two uses of the seed share random numbers.
_TRAIN, _EVAL, _ORDER, _PACK = 0, 1, 2, 3


# ----------------------------------------------------------------------------------------------------------
# sentences and tokenised documents

# A sentence ends at . ! or ? (optionally followed by a closing quote or bracket) before whitespace and an
# upper-case letter or digit (optionally after an opening quote). Common titles ("Mr. Smith") do not end one.
# (One pattern with look-behinds for the titles is five times slower on a 60 MB corpus.)
_SENTENCE_END = re.compile(r"[.!?][\"'”’)\]]?(\s+)(?=[\"'“‘(\[]*[A-Z0-9])")
_TITLE = re.compile(r"(?:^|\W)(?:Mr|Mrs|Ms|Dr|St|Messrs|Mt)\.$")


def split_sentences(paragraph: str) -> list[str]:
    """Split a paragraph into sentences with a light rule (a wrong split only makes segments shorter)."""
    sentences, start = [], 0
    for m in _SENTENCE_END.finditer(paragraph):
        end = m.start(1)
        if paragraph[end - 1] == "." and _TITLE.search(paragraph[max(start, end - 8) : end]):
            continue
        sentences.append(paragraph[start:end])
        start = m.end(1)
    sentences.append(paragraph[start:])
    return [s for s in sentences if s.strip()]


@dataclass
class TokenizedDocuments:
    """Token ids of documents, sentence after sentence, in three flat arrays (compact for large corpora)."""

    ids: np.ndarray  # [n_tokens] uint16 or int32
    sent_offsets: np.ndarray  # [n_sentences + 1] int64: sentence s is ids[sent_offsets[s]:sent_offsets[s+1]]
    doc_offsets: np.ndarray  # [n_docs + 1] int64: document d holds sentences doc_offsets[d]:doc_offsets[d+1]

    @property
    def n_docs(self) -> int:
        return len(self.doc_offsets) - 1

    @property
    def n_sentences(self) -> int:
        return len(self.sent_offsets) - 1

    @property
    def n_tokens(self) -> int:
        return int(self.sent_offsets[-1])

    def sentence_lengths(self) -> np.ndarray:
        return np.diff(self.sent_offsets)

    def sentence(self, s: int) -> np.ndarray:
        return self.ids[self.sent_offsets[s] : self.sent_offsets[s + 1]]

    @classmethod
    def from_lists(cls, docs: Sequence[Sequence[Sequence[int]]]) -> TokenizedDocuments:
        """From documents given as lists of sentences of token ids (empty sentences are dropped)."""
        sents = [[np.asarray(s, dtype=np.int32) for s in doc if len(s)] for doc in docs]
        lengths = [len(s) for doc in sents for s in doc]
        flat = [s for doc in sents for s in doc]
        return cls(
            ids=np.concatenate(flat) if flat else np.zeros(0, np.int32),
            sent_offsets=np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)]).astype(np.int64),
            doc_offsets=np.concatenate([[0], np.cumsum([len(d) for d in sents])]).astype(np.int64),
        )

    def save(self, path: Path) -> None:
        arrays = {"ids": self.ids, "sent_offsets": self.sent_offsets, "doc_offsets": self.doc_offsets}
        with atomic_file(path, size=sum(a.nbytes for a in arrays.values()) + 1000) as tmp, open(tmp, "wb") as f:
            np.savez(f, **arrays)

    @classmethod
    def load(cls, path: Path) -> TokenizedDocuments:
        try:
            with np.load(path) as z:
                return cls(z["ids"], z["sent_offsets"], z["doc_offsets"])
        except Exception as e:  # numpy's readers fail on a damaged file in many ways (zipfile, zlib, EOF, ...)
            raise CheckpointError(f"{path}: unreadable cached pre-training data ({e}); delete it to rebuild") from e


def tokenize_documents(
    docs: Sequence[Document], encode_batch: Callable[[list[str]], list[list[int]]], batch_sentences: int = 20_000
) -> TokenizedDocuments:
    """Split every paragraph into sentences and tokenise them in large batches (the fast path of `tokenizers`)."""
    parts: list[np.ndarray] = []
    lengths: list[np.ndarray] = []
    owners: list[np.ndarray] = []
    pending: list[str] = []
    pending_doc: list[int] = []

    def flush() -> None:
        encoded = encode_batch(pending)
        lens = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
        parts.append(np.fromiter(chain.from_iterable(encoded), dtype=np.int32, count=int(lens.sum())))
        keep = lens > 0
        lengths.append(lens[keep])
        owners.append(np.asarray(pending_doc, dtype=np.int64)[keep])
        pending.clear()
        pending_doc.clear()

    for d, doc in enumerate(docs):
        for paragraph in doc:
            sents = split_sentences(paragraph)
            pending.extend(sents)
            pending_doc.extend([d] * len(sents))
        if len(pending) >= batch_sentences:
            flush()
    if pending:
        flush()
    lens = np.concatenate(lengths) if lengths else np.zeros(0, np.int64)
    owner = np.concatenate(owners) if owners else np.zeros(0, np.int64)
    per_doc = np.bincount(owner, minlength=len(docs))
    ids = np.concatenate(parts) if parts else np.zeros(0, np.int32)
    if ids.size and ids.max() < 2**16:
        ids = ids.astype(np.uint16)  # vocabularies under 65,536 pieces: half the memory
    return TokenizedDocuments(
        ids=ids,
        sent_offsets=np.concatenate([[0], np.cumsum(lens)]).astype(np.int64),
        doc_offsets=np.concatenate([[0], np.cumsum(per_doc)]).astype(np.int64),
    )


# ----------------------------------------------------------------------------------------------------------
# vocabulary facts the data needs


@dataclass
class VocabInfo:
    size: int
    pad_id: int
    cls_id: int
    sep_id: int
    mask_id: int
    continuation: np.ndarray  # [size] bool: the piece continues a word ("##ing")
    random_ids: np.ndarray  # ids a masked token may be replaced by: everything but the special tokens

    @classmethod
    def from_tokens(cls, tokens: Sequence[str], pad="[PAD]", unk="[UNK]", cls_="[CLS]", sep="[SEP]", mask="[MASK]"):
        index = {t: i for i, t in enumerate(tokens)}
        missing = [t for t in (pad, unk, cls_, sep, mask) if t not in index]
        if missing:
            raise ValueError(f"the vocabulary lacks the special tokens {missing}")
        specials = {index[t] for t in (pad, unk, cls_, sep, mask)}
        return cls(
            size=len(tokens), pad_id=index[pad], cls_id=index[cls_], sep_id=index[sep], mask_id=index[mask],
            continuation=np.array([t.startswith("##") for t in tokens], dtype=bool),
            random_ids=np.array([i for i in range(len(tokens)) if i not in specials], dtype=np.int64),
        )

    @classmethod
    def from_tokenizer(cls, tok: WordPieceTokenizer) -> VocabInfo:
        tokens = [tok.id_to_token(i) for i in range(tok.vocab_size)]
        info = cls.from_tokens(tokens)
        info.pad_id, info.cls_id, info.sep_id, info.mask_id = tok.pad_id, tok.cls_id, tok.sep_id, tok.mask_id
        specials = {tok.pad_id, tok.unk_id, tok.cls_id, tok.sep_id, tok.mask_id}
        info.random_ids = np.array([i for i in range(tok.vocab_size) if i not in specials], dtype=np.int64)
        return info


# ----------------------------------------------------------------------------------------------------------
# masking


def mask_tokens(
    tokens: np.ndarray,
    maskable: np.ndarray,
    rng: np.random.Generator,
    vocab: VocabInfo,
    max_predictions: int,
    word_start: np.ndarray | None = None,
    mlm_probability: float = MLM_PROBABILITY,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Choose tokens to predict and corrupt them as BERT does.

    ``mlm_probability`` of the maskable tokens (at least one, at most ``max_predictions``) are chosen; of those
    80% become [MASK], 10% a random token and 10% stay. With ``word_start`` (whole-word masking) whole words are
    chosen, each word's pieces together, skipping words that would overflow the budget (as the reference
    implementation does). Returns (corrupted tokens, chosen positions in increasing order, their original ids).
    """
    candidates = np.flatnonzero(maskable)
    n_pred = min(max_predictions, max(1, int(len(candidates) * mlm_probability + 0.5)))
    if len(candidates) == 0 or max_predictions <= 0:
        return tokens.copy(), np.zeros(0, np.int64), np.zeros(0, np.int64)
    if word_start is None:
        positions = rng.choice(candidates, size=min(n_pred, len(candidates)), replace=False)
    else:
        starts = word_start[candidates].copy()
        starts[0] = True
        word_of = np.cumsum(starts) - 1  # word index of every candidate
        bounds = np.concatenate([np.flatnonzero(starts), [len(candidates)]])
        chosen: list[np.ndarray] = []
        count = 0
        for w in rng.permutation(len(bounds) - 1):
            size = int(bounds[w + 1] - bounds[w])
            if count + size > n_pred:
                continue
            chosen.append(candidates[word_of == w])
            count += size
            if count == n_pred:
                break
        positions = np.concatenate(chosen) if chosen else np.zeros(0, np.int64)
    positions = np.sort(positions).astype(np.int64)
    labels = tokens[positions].astype(np.int64)
    out = tokens.copy()
    r = rng.random(len(positions))
    out[positions[r < 0.8]] = vocab.mask_id
    swap = positions[(r >= 0.8) & (r < 0.9)]
    out[swap] = vocab.random_ids[rng.integers(len(vocab.random_ids), size=len(swap))]
    return out, positions, labels


# ----------------------------------------------------------------------------------------------------------
# chunks, sentence pairs and batches


@dataclass
class Example:
    input_ids: np.ndarray  # [T] corrupted: [CLS] A [SEP] B [SEP]
    token_type_ids: np.ndarray  # [T]
    positions: np.ndarray  # [n] positions chosen for prediction
    labels: np.ndarray  # [n] original ids there
    is_random_next: bool  # NSP label: B is a segment of another document
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
    the packing into sequences and the fixed evaluation set.
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
        self.pool = docs if random_pool is None else random_pool
        self._exclude_own = random_pool is None
        self.chunks = pack_chunks(docs, self.max_tokens, np.random.default_rng([seed, _PACK]), short_seq_prob)
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
        # A random B gets the length the true B would have had, so length is no clue to the NSP label.
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
            ids, maskable, rng, v, self.max_predictions, word_start, self.mlm_probability
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
        return collate(self.examples(epoch, index), self.vocab.pad_id)

    def fixed_batches(self, n_sequences: int, batch_size: int) -> list[Batch]:
        """A fixed evaluation set: the same ``n_sequences`` examples (chunks, pairs and masks) every time."""
        order = np.random.default_rng([self.seed, _EVAL]).permutation(self.num_chunks)[:n_sequences]
        rng = np.random.default_rng([self.seed, _EVAL, 1])
        examples = [self.example(int(c), rng) for c in order]
        return [collate(examples[i : i + batch_size], self.vocab.pad_id) for i in range(0, len(examples), batch_size)]


def collate(examples: Sequence[Example], pad_id: int) -> Batch:
    """Pad examples to the longest in the batch. ``mlm_positions`` padding points at [CLS] with label -100."""
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
        "next_sentence_label": torch.tensor([int(e.is_random_next) for e in examples], dtype=torch.long),
    }


# ----------------------------------------------------------------------------------------------------------
# preparing (and caching) the tokenised corpus


@dataclass
class PreparedData:
    tokenizer: WordPieceTokenizer
    train: TokenizedDocuments
    heldout: TokenizedDocuments
    meta: dict[str, Any]  # corpus name, document counts, held-out indices, tokenizer source, timings


def batch_encoder(tok: WordPieceTokenizer) -> Callable[[list[str]], list[list[int]]]:
    backend = tok.backend
    # encode_batch_fast (tokenizers >= 0.20) skips the character offsets we do not need here.
    fast = getattr(backend, "encode_batch_fast", backend.encode_batch)
    return lambda texts: [e.ids for e in fast(texts, add_special_tokens=False)]


def _log(msg: str) -> None:
    print(f"ctxmodels: {msg}", file=sys.stderr, flush=True)


def prepare_data(out: Path, corpus: str | Path, tokenizer: str | Path | None = None, vocab_size: int = 16_000,
                 seed: int = 0, heldout_docs: int | None = None, add_text: str | Path | None = None,
                 resume: bool = False, log: Callable[[str], None] = _log) -> PreparedData:
    """Tokenise the corpus once and cache it in ``out/data``; later calls with the same inputs just load it.

    The tokenizer is loaded from ``tokenizer`` (a file or folder) or, when None, trained on the training
    documents with ``vocab_size`` pieces; ``heldout_docs`` and ``seed`` choose the held-out documents.
    ``add_text`` (a corpus file) adds documents to the training side only, after the corpus's own: the held-out
    documents stay those of ``corpus`` alone, so held-out figures compare with runs that had no added text.
    """
    from ..tokenization import WordPieceTokenizer

    data_dir = out / "data"
    corpus = Path(corpus)
    if not corpus.is_file():
        read_documents(corpus)  # raises the clear "not found" / "not a file" error
    if tokenizer is not None:
        tok_path = Path(tokenizer)
        files = [tok_path] if tok_path.is_file() else [tok_path / n for n in ("tokenizer.json", "vocab.txt")]
        files = [f for f in files if f.is_file()]
        if not files:
            raise CheckpointError(f"{tok_path}: no tokenizer.json or vocab.txt to load the tokenizer from")
        tok_spec: dict[str, Any] = {"path": str(tok_path), "sha256": file_sha256(files[0])}
    else:
        tok_spec = {"train_vocab_size": vocab_size}
    key = {"format": DATA_FORMAT, "corpus_sha256": file_sha256(corpus), "seed": seed, "tokenizer": tok_spec}
    if add_text is not None:
        add_text = Path(add_text)
        if not add_text.is_file():
            read_documents(add_text)  # the clear "not found" / "not a file" error, naming --add-text's file
        key["add_text_sha256"] = file_sha256(add_text)

    meta_path = data_dir / "meta.json"
    if meta_path.is_file():
        meta = read_json(meta_path)
        documents, cached_held = meta.get("documents"), meta.get("heldout_indices")
        if not isinstance(documents, int) or not isinstance(cached_held, list):
            meta = {}  # damaged: rebuilt below
        # The held-out count is compared resolved: "default" means what the default gives for this corpus.
        n_held = default_heldout(meta.get("documents", 0)) if heldout_docs is None else heldout_docs
        if meta.get("key") == key and len(meta.get("heldout_indices", [])) == n_held:
            cached = PreparedData(
                WordPieceTokenizer.load(data_dir / "tokenizer"),
                TokenizedDocuments.load(data_dir / "train.npz"),
                TokenizedDocuments.load(data_dir / "heldout.npz"),
                meta,
            )
            for docs, name in ((cached.train, "train.npz"), (cached.heldout, "heldout.npz")):
                if docs.ids.size and (docs.ids.min() < 0 or docs.ids.max() >= cached.tokenizer.vocab_size):
                    raise CheckpointError(f"{data_dir / name}: damaged cached pre-training data (piece ids outside "
                                          f"the vocabulary); delete {data_dir} to rebuild it")
            return cached
        if resume and isinstance(meta.get("key"), dict):
            old = meta["key"]
            what = ("corpus" if old.get("corpus_sha256") != key["corpus_sha256"]
                    else "added text" if old.get("add_text_sha256") != key.get("add_text_sha256")
                    else "tokenizer or data settings")
            raise ValueError(
                f"{meta_path}: the {what} changed since this run started; exact --resume needs the same inputs "
                f"(restore {add_text.name if what == 'added text' and add_text else corpus.name} or start a new run "
                "with another --out)"
            )

    t0 = time.perf_counter()
    docs, held_idx = heldout_documents(corpus, heldout_docs, seed)
    held_set = set(held_idx)
    train_docs = [d for i, d in enumerate(docs) if i not in held_set]
    held_docs = [d for i, d in enumerate(docs) if i in held_set]
    n_corpus = len(docs)
    del docs
    added = read_documents(add_text) if add_text is not None else []
    train_docs += added
    t_read = time.perf_counter() - t0

    t0 = time.perf_counter()
    if resume and (out / "checkpoint" / "vocab.txt").is_file():
        tok = WordPieceTokenizer.load(out / "checkpoint")  # the cache was deleted: keep the run's own vocabulary
        tok_source = f"the run's checkpoint ({out / 'checkpoint'})"
    elif tokenizer is not None:
        tok = WordPieceTokenizer.load(tokenizer)
        tok_source = f"loaded from {tokenizer}"
    else:
        log(f"training a WordPiece tokenizer (vocabulary {vocab_size}) on {len(train_docs)} training documents")
        tok = WordPieceTokenizer.train((p for d in train_docs for p in d), vocab_size=vocab_size)
        tok_source = f"WordPiece trained on the {len(train_docs)} training documents"
    t_tok_train = time.perf_counter() - t0

    log(f"tokenising {len(train_docs)} training and {len(held_docs)} held-out documents")
    t0 = time.perf_counter()
    encode = batch_encoder(tok)
    train = tokenize_documents(train_docs, encode)
    heldout = tokenize_documents(held_docs, encode)
    t_tokenise = time.perf_counter() - t0

    meta = {
        "key": key,
        "corpus": corpus.name,
        "documents": n_corpus,
        "add_text": add_text.name if add_text is not None else None,
        "added_documents": len(added),
        "heldout_indices": held_idx,
        "train_tokens": train.n_tokens,
        "train_sentences": train.n_sentences,
        "heldout_tokens": heldout.n_tokens,
        "heldout_sentences": heldout.n_sentences,
        "tokenizer": tok_source,
        "vocab_size": tok.vocab_size,
        "seconds": {"read": round(t_read, 2), "tokenizer_training": round(t_tok_train, 2),
                    "tokenisation": round(t_tokenise, 2)},
    }
    data_dir.mkdir(parents=True, exist_ok=True)
    tok.save(data_dir / "tokenizer")
    train.save(data_dir / "train.npz")
    heldout.save(data_dir / "heldout.npz")
    write_json(meta_path, meta)  # last: its key marks the cache complete
    log(f"pre-training data: {train.n_tokens:,} training tokens in {train.n_sentences:,} sentences, "
        f"{heldout.n_tokens:,} held-out tokens; tokenizer {t_tok_train:.1f} s, tokenisation {t_tokenise:.1f} s")
    return PreparedData(tok, train, heldout, meta)


