"""Training data for static vectors: skip-gram with negative sampling on the shared trainer.

The corpus is read once, split into train and held-out documents (the convention of :mod:`ctxmodels.training.corpus`),
tokenised like the other models, counted on the training documents only, and stored as integer arrays in
``out/static-data.npz`` so that ``--resume`` and later runs skip that work.

Each epoch draws word2vec's frequent-word subsampling (seeded by the data seed and epoch) and shuffles the
surviving tokens; batch i takes the next slice of those shuffled centre words, draws a window 1..W for each (seeded
by the data seed, epoch and i), pairs it with every surviving word within that distance in the same paragraph, and
adds K noise words per pair from the unigram distribution raised to 3/4. Everything is a pure function of (data
seed, epoch, index), as the trainer's exact resume needs; the data seed is ``--data-seed``, else ``--seed``.
"""

from __future__ import annotations

import json
import math
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch

from ..bounds import Bound, float_range, int_range
from ..checkpoint import atomic_file, file_sha256, read_json
from ..static import StaticConfig, StaticVectors, model_card, sgns_loss
from ..text import read_documents
from ..text import tokenize as word_tokenize
from .corpus import default_heldout, split_documents
from .settings import RunSettings
from .trainer import TrainConfig, TrainTask

CACHE_NAME = "static-data.npz"
CACHE_VERSION = 1
MAX_EVAL_PAIRS = 50_000  # held-out pairs scored at each evaluation
EVAL_CHUNK = 16_384
NOISE_POWER = 0.75

# Stream tags, so that the random numbers of different purposes never coincide.
_SUBSAMPLE, _BATCH, _HELDOUT = 1, 2, 3


def tokenize(text: str, lowercase: bool = True) -> list[str]:
    """The project's word tokenizer (the one ELMo uses), lower-cased unless asked not to."""
    tokens = word_tokenize(text)
    return [t.lower() for t in tokens] if lowercase else tokens


# ----------------------------------------------------------------------------------------------------------
# the encoded corpus


@dataclass
class EncodedText:
    """In-vocabulary tokens of a set of documents, in order, with the paragraph each one belongs to."""

    ids: np.ndarray  # int32 [n]
    para: np.ndarray  # int32 [n]; context windows never cross paragraphs

    def __len__(self) -> int:
        return len(self.ids)


@dataclass
class StaticData:
    words: list[str]
    counts: np.ndarray  # int64 [V], counts in the training documents
    train: EncodedText
    heldout: EncodedText
    info: dict[str, Any]  # corpus name, document and token counts, for the model card


def _encode_documents(docs, types: dict[str, int], lowercase: bool) -> tuple[np.ndarray, np.ndarray]:
    """Type ids of every token (a type index that grows as new words appear) and the paragraph of each."""
    ids: list[int] = []
    lengths: list[int] = []
    for doc in docs:
        for paragraph in doc:
            tokens = tokenize(paragraph, lowercase)
            ids.extend(types.setdefault(t, len(types)) for t in tokens)
            lengths.append(len(tokens))
    para = np.repeat(np.arange(len(lengths), dtype=np.int32), np.asarray(lengths, dtype=np.int64))
    return np.asarray(ids, dtype=np.int32), para


def build_vocab(type_counts: np.ndarray, type_words: list[str], min_count: int,
                max_size: int) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Words counted at least ``min_count`` times, most frequent first (ties alphabetical), at most ``max_size``.

    Returns the words, their counts, and a lookup table from type id to vocabulary row (-1 = dropped).
    """
    candidates = [i for i in np.flatnonzero(type_counts >= min_count)]
    candidates.sort(key=lambda i: (-int(type_counts[i]), type_words[i]))
    chosen = np.asarray(candidates[:max_size], dtype=np.int64)
    lut = np.full(len(type_words), -1, dtype=np.int32)
    lut[chosen] = np.arange(len(chosen), dtype=np.int32)
    return [type_words[i] for i in chosen], type_counts[chosen].astype(np.int64), lut


def prepare_data(corpus: str | Path, heldout_docs: int | None, seed: int, lowercase: bool, min_count: int,
                 vocab_size: int, add_text: str | Path | None = None) -> StaticData:
    """The vocabulary and the encoded training and held-out text; the documents of ``add_text`` join the
    training side (none of them held out, so the held-out split is the corpus's alone)."""
    docs = read_documents(corpus)
    train_docs, heldout = split_documents(docs, heldout_docs, seed)
    added = read_documents(add_text) if add_text is not None else []
    train_docs += added
    types: dict[str, int] = {}
    train_types, train_para = _encode_documents(train_docs, types, lowercase)
    n_train_types = len(types)
    held_types, held_para = _encode_documents(heldout, types, lowercase)
    type_words = list(types)
    type_counts = np.bincount(train_types, minlength=len(type_words))
    words, counts, lut = build_vocab(type_counts, type_words, min_count, vocab_size)
    if not words:
        raise ValueError(
            f"{corpus}: no word occurs {min_count} times or more in the {len(train_docs)} training document(s) "
            f"({len(train_types)} tokens); lower --min-count or use a bigger corpus"
        )

    def encode(type_ids: np.ndarray, para: np.ndarray) -> EncodedText:
        rows = lut[type_ids]
        keep = rows >= 0  # out-of-vocabulary words leave the stream, as in word2vec
        return EncodedText(rows[keep], para[keep])

    train, held = encode(train_types, train_para), encode(held_types, held_para)
    info = {
        "corpus": Path(corpus).name,
        "add_text": Path(add_text).name if add_text is not None else None,
        "added_documents": len(added),
        "documents": len(docs),
        "train_documents": len(train_docs),
        "heldout_documents": len(heldout),
        "train_tokens": int(len(train_types)),
        "train_types": n_train_types,
        "train_tokens_in_vocab": int(len(train)),
        "heldout_tokens": int(len(held_types)),
        "heldout_tokens_in_vocab": int(len(held)),
    }
    return StaticData(words, counts, train, held, info)


def load_or_prepare(out: str | Path, corpus: str | Path, heldout_docs: int | None = None,
                    add_text: str | Path | None = None, **settings: Any) -> StaticData:
    """:func:`prepare_data`, cached in ``out/static-data.npz`` under a key of the corpus digest and settings.

    The held-out count is compared resolved (None: the default for the corpus), so a run that stored the count
    it started with finds its cache.
    """
    corpus = Path(corpus)
    if not corpus.is_file():
        read_documents(corpus)  # raises the corpus module's clear error
    digests = {"corpus_sha256": file_sha256(corpus)}
    if add_text is not None:
        digests["add_text_sha256"] = file_sha256(add_text)
    key = json.dumps({"version": CACHE_VERSION, **digests, **settings}, sort_keys=True)
    path = Path(out) / CACHE_NAME
    if path.is_file():
        try:
            with np.load(path, allow_pickle=False) as z:
                info = json.loads(str(z["info"]))
                held = default_heldout(info["documents"]) if heldout_docs is None else heldout_docs
                if str(z["key"]) == key and info["heldout_documents"] == held:
                    data = StaticData(
                        words=[str(w) for w in z["words"]], counts=z["counts"],
                        train=EncodedText(z["train_ids"], z["train_para"]),
                        heldout=EncodedText(z["heldout_ids"], z["heldout_para"]), info=info,
                    )
                    _check_cache(data)
                    return data
        except Exception as e:  # damaged (numpy fails in many ways: zipfile, zlib, EOF, ...): rebuilt, not fatal
            warnings.warn(f"{path}: unreadable cache ({e}); rebuilding it", stacklevel=2)
    data = prepare_data(corpus, heldout_docs=heldout_docs, add_text=add_text, **settings)
    arrays = dict(key=np.array(key), words=np.array(data.words, dtype=str), counts=data.counts,
                  train_ids=data.train.ids, train_para=data.train.para,
                  heldout_ids=data.heldout.ids, heldout_para=data.heldout.para, info=np.array(json.dumps(data.info)))
    with atomic_file(path, size=sum(a.nbytes for a in arrays.values()) + 2000) as tmp, open(tmp, "wb") as f:
        np.savez(f, **arrays)
    return data


def _check_cache(data: StaticData) -> None:
    """ValueError for a cache whose arrays do not fit together (damaged): ids out of the vocabulary, lengths."""
    n = len(data.words)
    if len(data.counts) != n or (data.counts < 0).any():
        raise ValueError("counts do not fit the vocabulary")
    for text in (data.train, data.heldout):
        if text.ids.ndim != 1 or text.ids.shape != text.para.shape:
            raise ValueError("token and paragraph arrays differ in shape")
        if len(text) and (text.ids.min() < 0 or text.ids.max() >= n):
            raise ValueError("token ids outside the vocabulary")


# ----------------------------------------------------------------------------------------------------------
# sampling


def keep_probabilities(counts: np.ndarray, t: float) -> np.ndarray:
    """word2vec's chance of keeping a token of each word: (sqrt(f/t) + 1) t/f, at most 1 (f = relative count)."""
    if t <= 0:
        return np.ones(len(counts), dtype=np.float32)
    f = counts / max(int(counts.sum()), 1)
    return np.minimum(1.0, (np.sqrt(f / t) + 1.0) * t / np.maximum(f, 1e-12)).astype(np.float32)


def noise_cdf(counts: np.ndarray, power: float = NOISE_POWER) -> np.ndarray:
    weights = counts.astype(np.float64) ** power
    return np.cumsum(weights) / weights.sum()


def draw_negatives(cdf: np.ndarray, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    return np.minimum(np.searchsorted(cdf, rng.random(shape), side="right"), len(cdf) - 1)


def context_pairs(ids: np.ndarray, para: np.ndarray, centers: np.ndarray, window: int,
                  rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(centre word, context word) for each centre position, with a window of 1..``window`` drawn per centre."""
    spans = rng.integers(1, window + 1, size=len(centers))
    offsets = np.concatenate([np.arange(-window, 0), np.arange(1, window + 1)])
    pos = centers[:, None].astype(np.int64) + offsets[None, :]
    valid = (np.abs(offsets)[None, :] <= spans[:, None]) & (pos >= 0) & (pos < len(ids))
    pos = np.clip(pos, 0, len(ids) - 1)
    valid &= para[pos] == para[centers][:, None]
    rows, cols = np.nonzero(valid)
    return ids[centers[rows]], ids[pos[rows, cols]]


# ----------------------------------------------------------------------------------------------------------
# the task


class StaticTask(TrainTask):
    name = "static"

    def __init__(self, model: StaticVectors, data: StaticData, batch_size: int = 4096, seed: int = 0,
                 data_seed: int | None = None):
        if batch_size < 1:
            raise ValueError(f"--batch-size must be at least 1, got {batch_size}")
        self.model, self.data, self.seed = model, data, seed
        self.order_seed = seed if data_seed is None else data_seed  # subsampling and batches; held-out pairs: seed
        cfg = model.config
        self.window, self.negatives = cfg.window, cfg.negatives
        # A centre word yields window+1 pairs on average (its window is uniform in 1..W on each side).
        self.centers_per_batch = max(1, round(batch_size / (cfg.window + 1)))
        self.keep_prob = keep_probabilities(data.counts, cfg.subsample)
        self.cdf = noise_cdf(data.counts)
        self._epoch_sizes: dict[int, int] = {}
        self._epoch_data: tuple[int, np.ndarray, np.ndarray, np.ndarray] | None = None
        self._eval_batch: dict[str, torch.Tensor] | None = None

    # -- training batches -----------------------------------------------------------------------------------

    def _epoch(self, epoch: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The epoch's surviving tokens (ids, paragraphs) and their shuffled order; only the latest is kept."""
        if self._epoch_data is not None and self._epoch_data[0] == epoch:
            return self._epoch_data[1:]
        text = self.data.train
        rng = np.random.default_rng([self.order_seed, _SUBSAMPLE, epoch])
        kept = np.flatnonzero(rng.random(len(text), dtype=np.float32) < self.keep_prob[text.ids])
        order = rng.permutation(len(kept)).astype(np.int32)
        self._epoch_data = (epoch, text.ids[kept], text.para[kept], order)
        self._epoch_sizes[epoch] = len(kept)
        return self._epoch_data[1:]

    def num_batches(self, epoch: int) -> int:
        if epoch not in self._epoch_sizes:
            self._epoch(epoch)
        return math.ceil(self._epoch_sizes[epoch] / self.centers_per_batch)

    def get_batch(self, epoch: int, index: int) -> dict[str, torch.Tensor]:
        ids, para, order = self._epoch(epoch)
        centers = order[index * self.centers_per_batch:(index + 1) * self.centers_per_batch]
        rng = np.random.default_rng([self.order_seed, _BATCH, epoch, index])
        return self._pairs_batch(ids, para, centers, rng)

    def _pairs_batch(self, ids, para, centers, rng) -> dict[str, torch.Tensor]:
        center, context = context_pairs(ids, para, centers, self.window, rng)
        negatives = draw_negatives(self.cdf, (len(center), self.negatives), rng)
        return {
            "center": torch.from_numpy(center.astype(np.int64)),
            "context": torch.from_numpy(context.astype(np.int64)),
            "negatives": torch.from_numpy(negatives.astype(np.int64)),
            # a noise word that is the true context word would push against the pair itself; word2vec skips it
            "neg_mask": torch.from_numpy(negatives != context[:, None]),
            "n_centers": torch.tensor(len(centers)),
        }

    def loss(self, model, batch):
        pos, neg = model(batch["center"], batch["context"], batch["negatives"])
        if pos.numel() == 0:  # a few lone centre words without neighbours (tiny corpora): nothing to learn
            loss = (pos.sum() + neg.sum()) * 0.0
        else:
            loss = sgns_loss(pos, neg, batch["neg_mask"])
        return loss, {"tokens": int(batch["n_centers"]), "pairs": float(pos.numel())}

    # -- evaluation -----------------------------------------------------------------------------------------

    def _heldout_batch(self) -> dict[str, torch.Tensor] | None:
        """A fixed sample of held-out pairs (subsampled like training), drawn once."""
        if self._eval_batch is None:
            text = self.data.heldout
            rng = np.random.default_rng([self.seed, _HELDOUT])
            kept = np.flatnonzero(rng.random(len(text), dtype=np.float32) < self.keep_prob[text.ids])
            ids, para = text.ids[kept], text.para[kept]
            centers = rng.permutation(len(kept))[: MAX_EVAL_PAIRS // (self.window + 1) + 1].astype(np.int64)
            batch = self._pairs_batch(ids, para, centers, rng)
            self._eval_batch = {k: v[:MAX_EVAL_PAIRS] for k, v in batch.items() if k != "n_centers"}
        return self._eval_batch if len(self._eval_batch["center"]) else None

    def evaluate(self, model) -> dict[str, float]:
        batch = self._heldout_batch()
        if batch is None:
            return {}
        total_loss, correct, n = 0.0, 0, len(batch["center"])
        device = next(model.parameters()).device
        for start in range(0, n, EVAL_CHUNK):
            part = {k: v[start:start + EVAL_CHUNK].to(device) for k, v in batch.items()}
            pos, neg = model(part["center"], part["context"], part["negatives"])
            total_loss += sgns_loss(pos, neg, part["neg_mask"]).item() * len(pos)
            # the true context word outscores every one of its noise words
            correct += int((pos > neg.masked_fill(~part["neg_mask"], -math.inf).amax(-1)).sum())
        return {"heldout_loss": total_loss / n, "heldout_accuracy": correct / n}

    # -- saving ---------------------------------------------------------------------------------------------

    def save_model(self, directory: Path) -> None:
        self.model.save(directory)

    def model_card(self, info: dict[str, Any]) -> str:
        d = self.data.info
        metrics = info.get("metrics") or {}
        rows = "".join(f"| held-out {k.removeprefix('heldout_')} | {v:.4g} |\n" for k, v in metrics.items())
        credit = ""
        if "eltec" in d["corpus"].lower():
            credit = ("\nCorpus credit: English Novel Corpus (ELTeC-eng), ed. Lou Burnard, v1.0.1, "
                      "DOI 10.5281/zenodo.3533868.\n")
        added = (f" plus the {d['added_documents']} documents of `{d['add_text']}` (`--add-text`: trained on, none "
                 "held out)" if d.get("add_text") else "")
        training = f"""## Training

| | |
|---|---|
| command | `{info.get('command', '')}` |
| corpus | {d['corpus']}{added}: {d['train_documents']} training documents, {d['train_tokens']:,} tokens \
({d['train_tokens_in_vocab']:,} in the vocabulary); {d['heldout_documents']} held-out documents |
| steps | {info.get('steps')} of {info.get('max_steps')} |
| centre tokens seen | {info.get('tokens_seen', 0):,} (after subsampling) |
| wall time | {info.get('wall_time_s', 0):.0f} s |
| hardware | {info.get('hardware', '')} |
{rows}{credit}
Held-out loss is the skip-gram negative-sampling loss on pairs from the held-out documents; held-out
accuracy is the share of those pairs whose true context word outscores all of its noise words.
"""
        return model_card(self.model, extra=training)


# ----------------------------------------------------------------------------------------------------------
# the run: its settings (stored in out/run.json, see .settings) and the task


@dataclass
class StaticSettings(RunSettings):
    """A static-vector run: the common settings plus the vectors, the vocabulary and the sampling."""

    KIND: ClassVar[str] = "static"
    TITLE: ClassVar[str] = "static-vector"
    BOUNDS: ClassVar[dict[str, Bound]] = {
        "dim": int_range(1, 2048),
        "window": int_range(1, 100),
        "negatives": int_range(1, 100),
        "min_count": int_range(1, 1_000_000_000),
        "vocab_size": int_range(1, 100_000_000),  # a ceiling: the table has the corpus's words at most
        "subsample": float_range(0, 1, hi_open=True),
        "batch_size": int_range(1, 1_048_576),
    }

    steps: int | None = None  # one pass over the training text
    lr: float | None = 5e-3
    warmup: int | None = None  # 10% of the steps, at most 100
    # Word2vec has no weight decay: it would shrink rare words, which are seldom in a batch, at every step.
    weight_decay: float = 0.0
    dim: int = StaticConfig.dim
    window: int = StaticConfig.window
    negatives: int = StaticConfig.negatives
    min_count: int = StaticConfig.min_count
    vocab_size: int = StaticConfig.vocab_size
    subsample: float = StaticConfig.subsample
    cased: bool = False
    batch_size: int = 4096  # about this many (centre, context) pairs a step

    def check(self) -> None:
        super().check()
        StaticConfig(vocab_size=self.vocab_size, dim=self.dim, window=self.window, negatives=self.negatives,
                     min_count=self.min_count, subsample=self.subsample)  # its own checks

    @classmethod
    def legacy(cls, out: Path) -> dict[str, Any] | None:
        """Runs started before run.json kept their schedule and vectors' settings in the checkpoint only (not
        the corpus, --vocab-size, --batch-size or --heldout-docs: those are taken as given, or the defaults)."""
        schedule, config = out / "checkpoint" / "train_config.json", out / "checkpoint" / "config.json"
        if not (schedule.is_file() and config.is_file()):
            return None
        t, c = read_json(schedule), read_json(config)
        return {"steps": t["max_steps"], "lr": t["lr"], "warmup": t["warmup_steps"],
                **{k: t[k] for k in ("weight_decay", "bf16", "seed", "save_every", "eval_every", "log_every")},
                **{k: c[k] for k in ("dim", "window", "negatives", "min_count", "subsample")},
                "cased": not c["lowercase"]}


def build_task(settings: StaticSettings, out: str | Path) -> tuple[StaticTask, TrainConfig]:
    """The task and trainer settings of a static-vector run in ``out``, from :meth:`StaticSettings.resolve`'s
    settings; the steps and warm-up left to the data are filled in here."""
    s = settings
    data = load_or_prepare(out, s.corpus, heldout_docs=s.heldout_docs, add_text=s.add_text, seed=s.seed,
                           lowercase=not s.cased, min_count=s.min_count, vocab_size=s.vocab_size)
    s.heldout_docs = data.info["heldout_documents"]
    config = StaticConfig(vocab_size=len(data.words), dim=s.dim, window=s.window, negatives=s.negatives,
                          min_count=s.min_count, subsample=s.subsample, lowercase=not s.cased)
    if len(data.heldout) == 0 and data.info["heldout_documents"]:
        warnings.warn("the held-out documents hold no vocabulary words: no held-out evaluation", stacklevel=2)
    torch.manual_seed(s.seed)
    model = StaticVectors(config, data.words, data.counts.tolist())
    task = StaticTask(model, data, batch_size=s.batch_size, seed=s.seed, data_seed=s.data_seed)
    if task.num_batches(0) == 0:
        raise ValueError(f"{s.corpus}: the training documents yield no batches; use a bigger corpus")
    if s.steps is None:
        s.steps = task.num_batches(0)  # one epoch
    if s.warmup is None:
        s.warmup = min(100, s.steps // 10)
    s.save(out)
    return task, s.train_config()
