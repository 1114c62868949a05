"""BERT's corpus, tokenised once per output directory and cached in ``out/data/``:

1. read the corpus (:func:`ctxmodels.text.read_documents`), hold out whole documents (:mod:`.corpus`);
2. train a WordPiece tokenizer on the training documents (or load ``--tokenizer``);
3. split paragraphs into sentences and tokenise them with the tokenizer's batch API into flat numpy arrays
   (:class:`TokenizedDocuments`).

:mod:`.bert_data` makes the pre-training examples and batches of them.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..checkpoint import CheckpointError, atomic_file, file_sha256, read_json, write_json
from ..text import Document, read_documents
from .corpus import default_heldout, heldout_documents

if TYPE_CHECKING:
    from ..tokenization import WordPieceTokenizer

DATA_FORMAT = 1  # bump when the cached arrays change meaning

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
# preparing (and caching) the tokenised corpus


@dataclass
class PreparedData:
    tokenizer: WordPieceTokenizer
    train: TokenizedDocuments
    heldout: TokenizedDocuments
    meta: dict[str, Any]  # corpus name, document counts, held-out indices, tokenizer source, timings

    def save(self, data_dir: Path) -> None:
        """Write the cache; ``meta.json`` last, as its key marks the cache complete."""
        data_dir.mkdir(parents=True, exist_ok=True)
        self.tokenizer.save(data_dir / "tokenizer")
        self.train.save(data_dir / "train.npz")
        self.heldout.save(data_dir / "heldout.npz")
        write_json(data_dir / "meta.json", self.meta)


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
    data_dir = out / "data"
    corpus = Path(corpus)
    add_text = Path(add_text) if add_text is not None else None
    key = _cache_key(corpus, tokenizer, vocab_size, seed, add_text)
    cached = _cached(data_dir, key, heldout_docs, resume, corpus, add_text)
    if cached is not None:
        return cached

    t0 = time.perf_counter()
    train_docs, held_docs, held_idx, n_corpus, n_added = _documents(corpus, heldout_docs, seed, add_text)
    t_read = time.perf_counter() - t0

    t0 = time.perf_counter()
    tok, tok_source = _tokenizer(out, tokenizer, vocab_size, resume, train_docs, log)
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
        "added_documents": n_added,
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
    prepared = PreparedData(tok, train, heldout, meta)
    prepared.save(data_dir)
    log(f"pre-training data: {train.n_tokens:,} training tokens in {train.n_sentences:,} sentences, "
        f"{heldout.n_tokens:,} held-out tokens; tokenizer {t_tok_train:.1f} s, tokenisation {t_tokenise:.1f} s")
    return prepared


def _documents(corpus: Path, heldout_docs: int | None, seed: int, add_text: Path | None
               ) -> tuple[list[Document], list[Document], list[int], int, int]:
    """The training documents (the corpus's own, then those of ``add_text``), the held-out ones, their indices in
    the corpus, the number of corpus documents and the number added."""
    docs, held_idx = heldout_documents(corpus, heldout_docs, seed)
    held_set = set(held_idx)
    train_docs = [d for i, d in enumerate(docs) if i not in held_set]
    held_docs = [d for i, d in enumerate(docs) if i in held_set]
    added = read_documents(add_text) if add_text is not None else []
    return train_docs + added, held_docs, held_idx, len(docs), len(added)


def _cache_key(corpus: Path, tokenizer: str | Path | None, vocab_size: int, seed: int,
               add_text: Path | None) -> dict[str, Any]:
    """What the cached data was made from: the corpus's and added text's hashes, the seed and the tokenizer (a
    file's hash, or the vocabulary size to train). Missing input files raise their clear errors here."""
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
        if not add_text.is_file():
            read_documents(add_text)  # the clear "not found" / "not a file" error, naming --add-text's file
        key["add_text_sha256"] = file_sha256(add_text)
    return key


def _cached(data_dir: Path, key: dict[str, Any], heldout_docs: int | None, resume: bool, corpus: Path,
            add_text: Path | None) -> PreparedData | None:
    """The data cached in ``data_dir`` when it was made from ``key`` with the same held-out count, else None; on
    ``--resume``, a ValueError when the inputs changed since the run started."""
    from ..tokenization import WordPieceTokenizer

    meta_path = data_dir / "meta.json"
    if not meta_path.is_file():
        return None
    meta = read_json(meta_path)
    documents, cached_held = meta.get("documents"), meta.get("heldout_indices")
    if not isinstance(documents, int) or not isinstance(cached_held, list):
        meta = {}  # damaged: rebuilt
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
    return None


def _tokenizer(out: Path, tokenizer: str | Path | None, vocab_size: int, resume: bool,
               train_docs: Sequence[Document], log: Callable[[str], None]) -> tuple[WordPieceTokenizer, str]:
    """The run's tokenizer and where it came from: the run's own checkpoint when a resumed run lost its data
    cache, else ``tokenizer``, else one trained on the training documents."""
    from ..tokenization import WordPieceTokenizer

    if resume and (out / "checkpoint" / "vocab.txt").is_file():
        tok = WordPieceTokenizer.load(out / "checkpoint")  # the cache was deleted: keep the run's own vocabulary
        return tok, f"the run's checkpoint ({out / 'checkpoint'})"
    if tokenizer is not None:
        return WordPieceTokenizer.load(tokenizer), f"loaded from {tokenizer}"
    log(f"training a WordPiece tokenizer (vocabulary {vocab_size}) on {len(train_docs)} training documents")
    tok = WordPieceTokenizer.train((p for d in train_docs for p in d), vocab_size=vocab_size)
    return tok, f"WordPiece trained on the {len(train_docs)} training documents"


def prepare_on_every_rank(out: Path, settings: Any, resume: bool, info: Any) -> PreparedData:
    """:func:`prepare_data` for a run (``settings``: a BERT-family run's settings): rank 0 tokenises and writes the
    run's settings with the held-out count it chose, the other ranks load what it prepared once it is done."""
    data_settings = dict(tokenizer=settings.tokenizer, vocab_size=settings.vocab_size, seed=settings.seed,
                         heldout_docs=settings.heldout_docs, add_text=settings.add_text, resume=resume)
    if info.is_main:
        data = prepare_data(out, settings.corpus, **data_settings)
        settings.heldout_docs = len(data.meta["heldout_indices"])
        settings.save(out)
    if info.world_size > 1:
        import torch.distributed as dist

        dist.barrier()  # the other ranks load what rank 0 prepared
    if not info.is_main:
        data = prepare_data(out, settings.corpus, **data_settings)
    return data
