"""Static word vectors: one vector per word, whatever its context.

Two sources, one class (:class:`StaticVectors`):

* our own skip-gram with negative sampling (word2vec, Mikolov et al. 2013), trained by
  ``ctxmodels train static`` (the data side lives in :mod:`ctxmodels.training.static_task`);
* vectors people bring along in the common text format of word2vec and GloVe
  (``word v1 v2 ...``, optionally a first line ``N D``), read by :func:`load_text_vectors`.

Saved layout (a directory, like the other checkpoints)::

    config.json          StaticConfig plus "model_type": "static"
    model.safetensors    input_embeddings.weight [V, D] (the word vectors); output_embeddings.weight (optional)
    vocab.txt            one word a line, in row order; "word<TAB>count" when counts are known
    README.md            model card

The command ``ctxmodels neighbours --model DIR_OR_FILE WORD ...`` prints nearest neighbours by cosine.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from .bounds import float_range, int_range
from .checkpoint import CheckpointError, load_tensors, save_tensors, write_json, write_text_atomic
from .cosine import unit_rows
from .model_files import (
    MAX_VOCAB_BYTES,
    check_model_bytes,
    check_number,
    check_weights,
    check_weights_file_size,
    is_dir,
    read_json,
    read_text,
    safetensors_shapes,
    shown,
)
from .static_text import read_text_vectors

MODEL_TYPE = "static"
INPUT_KEY = "input_embeddings.weight"
OUTPUT_KEY = "output_embeddings.weight"


class UnknownWordError(ValueError, KeyError):
    """A word that is not in the vocabulary. A ValueError (the CLI reports it) and a KeyError (dict-like use)."""

    def __str__(self) -> str:  # KeyError would quote the message; print it as written
        return str(self.args[0]) if self.args else ""


#: the range of every numeric field of :class:`StaticConfig` (the largest published vector sets have a few million
#: words of 300 dimensions; memory is checked too)
LIMITS = {
    "vocab_size": int_range(1, 100_000_000),
    "dim": int_range(1, 100_000),
    "window": int_range(1, 10_000),
    "negatives": int_range(1, 10_000),
    "min_count": int_range(1, 2**62),
    "subsample": float_range(0, 1, hi_open=True),
}
#: what a static model's config.json must state
REQUIRED = ("vocab_size", "dim")


@dataclass
class StaticConfig:
    vocab_size: int = 30000  # rows of the tables (the training vocabulary, after --min-count and --vocab-size)
    dim: int = 100
    window: int = 5  # largest distance of a context word; each centre draws its own window in 1..window
    negatives: int = 5  # noise words per (centre, context) pair
    min_count: int = 5
    subsample: float = 1e-4  # word2vec's frequent-word subsampling threshold t; 0 turns it off
    lowercase: bool = True  # words are lower-cased before lookup (training and queries alike)

    def __post_init__(self) -> None:
        """Every field checked against :data:`LIMITS` (type, range, NaN) before a table is allocated."""
        for name, bound in LIMITS.items():
            try:
                check_number(bound, name, getattr(self, name))
            except ValueError as e:
                raise ValueError(f"StaticConfig.{e}") from None
        if not isinstance(self.lowercase, bool):
            raise ValueError(f"StaticConfig.lowercase must be true or false, got {shown(self.lowercase)}")
        # the word table is what any model of this config holds (training adds a second one of the same size)
        check_model_bytes(self.vocab_size * self.dim, "this static-vector configuration")

    def to_dict(self) -> dict:
        return {"model_type": MODEL_TYPE, **asdict(self)}

    @classmethod
    def from_dict(cls, d: dict, source: str = "config") -> StaticConfig:
        kind = d.get("model_type", MODEL_TYPE)
        if kind != MODEL_TYPE:
            raise CheckpointError(f"{source}: model_type is {shown(kind)}, not a static-vector model ({MODEL_TYPE!r})")
        missing = [k for k in REQUIRED if k not in d]
        if missing:
            raise CheckpointError(f"{source}: the required field(s) {', '.join(missing)} are missing")
        known = {f.name for f in fields(cls)}
        try:
            return cls(**{k: v for k, v in d.items() if k in known})
        except (TypeError, ValueError) as e:
            raise CheckpointError(f"{source}: invalid static-vector config ({e})") from e


class StaticVectors(nn.Module):
    """A vocabulary with an input (word) table and, when trained by us, an output (context) table.

    ``forward(center, context, negatives)`` gives the skip-gram scores; everything else is for using the
    vectors: :meth:`vector`, :meth:`vectors`, :meth:`most_similar`, :meth:`similarity`, :meth:`save`, :meth:`load`.
    """

    def __init__(self, config: StaticConfig, words: Sequence[str], counts: Sequence[int] | None = None,
                 with_output: bool = True):
        super().__init__()
        words = list(words)
        if len(words) != config.vocab_size:
            raise ValueError(f"{len(words)} words given for a config with vocab_size={config.vocab_size}")
        if counts is not None and len(counts) != len(words):
            raise ValueError(f"{len(counts)} counts given for {len(words)} words")
        self.config = config
        self.words = words
        self.counts = None if counts is None else [int(c) for c in counts]
        self._index = _build_index(words)
        self.input_embeddings = nn.Embedding(config.vocab_size, config.dim)
        self.output_embeddings = nn.Embedding(config.vocab_size, config.dim) if with_output else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        # word2vec's initialisation: small random input vectors, zero output vectors.
        bound = 0.5 / self.config.dim
        nn.init.uniform_(self.input_embeddings.weight, -bound, bound)
        if self.output_embeddings is not None:
            nn.init.zeros_(self.output_embeddings.weight)

    # -- training -------------------------------------------------------------------------------------------

    def forward(self, center: torch.Tensor, context: torch.Tensor, negatives: torch.Tensor):
        """Scores of the true context word [N] and of the noise words [N, K] for each centre word [N]."""
        if self.output_embeddings is None:
            raise ValueError("this model has no output (context) vectors, so it cannot be trained further")
        v = self.input_embeddings(center)  # [N, D]
        # One lookup for the true and the noise words: one gradient scatter into the output table, not two.
        targets = torch.cat([context.unsqueeze(-1), negatives], dim=-1)  # [N, 1 + K]
        # multiply-and-sum: on CPU, bmm over thousands of 1-row matrices is about twice as slow
        scores = (self.output_embeddings(targets) * v.unsqueeze(1)).sum(-1)
        return scores[:, 0], scores[:, 1:]

    # -- lookups --------------------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word: object) -> bool:
        return isinstance(word, str) and self._normalize(word) in self._index

    @property
    def dim(self) -> int:
        return self.config.dim

    def _normalize(self, word: str) -> str:
        return word.lower() if self.config.lowercase else word

    def index(self, word: str) -> int:
        """Row of ``word`` (lower-cased first when the model is); UnknownWordError if it is not there."""
        i = self._index.get(self._normalize(word))
        if i is None:
            raise UnknownWordError(self._unknown_message([word]))
        return i

    def _unknown_message(self, unknown: list[str]) -> str:
        parts = []
        for w in unknown:
            close = self.close_matches(w)
            parts.append(f"{w!r}" + (f" (close: {', '.join(close)})" if close else ""))
        what = "is" if len(unknown) == 1 else "are"
        return (f"{'; '.join(parts)} {what} not in the vocabulary of this static model ({len(self):,} words"
                f"{', lower-cased' if self.config.lowercase else ''})")

    def close_matches(self, word: str, n: int = 3) -> list[str]:
        """A few vocabulary words spelled like ``word`` (cheap: only words with the same first letter)."""
        w = self._normalize(word)
        if not w:
            return []
        found = [w.lower()] if w.lower() != w and w.lower() in self._index else []
        same_start = [v for v in self.words if v[:1].lower() == w[:1].lower()]
        found += [v for v in difflib.get_close_matches(w, same_start, n=n, cutoff=0.75) if v not in found]
        return found[:n]

    def _matrix(self) -> np.ndarray:
        return self.input_embeddings.weight.detach().cpu().float().numpy()

    def vector(self, word: str) -> np.ndarray:
        """The word's vector, float32 [dim] (a copy)."""
        return self._matrix()[self.index(word)].copy()

    def vectors(self, words: Iterable[str]) -> np.ndarray:
        """Vectors of several words, float32 [n, dim]; one error lists every unknown word."""
        words = list(words)
        rows = [self._index.get(self._normalize(w)) for w in words]
        unknown = [w for w, r in zip(words, rows) if r is None]
        if unknown:
            raise UnknownWordError(self._unknown_message(unknown))
        return self._matrix()[np.asarray(rows, dtype=np.int64)].reshape(len(words), self.dim)  # indexing copies

    def similarity(self, a: str, b: str) -> float:
        """Cosine similarity of two words."""
        ua, ub = unit_rows(self.vectors([a, b]))
        return float(ua @ ub)

    def most_similar(self, word: str, k: int = 10) -> list[tuple[str, float]]:
        """The ``k`` nearest other words by cosine similarity, best first."""
        i = self.index(word)
        return self.nearest(self._matrix()[i], k=k, exclude=[i])

    def nearest(self, vector: np.ndarray | torch.Tensor, k: int = 10,
                exclude: Iterable[int | str] = ()) -> list[tuple[str, float]]:
        """The ``k`` words nearest to any vector (cosine), leaving out ``exclude`` (rows or words)."""
        if k < 1:
            raise ValueError(f"k must be at least 1, got {k}")
        q = np.asarray(vector.detach().cpu() if isinstance(vector, torch.Tensor) else vector, dtype=np.float32)
        if q.shape != (self.dim,):
            raise ValueError(f"expected a vector of shape ({self.dim},), got {q.shape}")
        sims = unit_rows(self._matrix()) @ unit_rows(q)
        for e in exclude:
            sims[e if isinstance(e, int) else self.index(e)] = -np.inf
        k = min(k, int(np.isfinite(sims).sum()))
        if k == 0:
            return []
        top = np.argpartition(-sims, k - 1)[:k] if k < len(sims) else np.arange(len(sims))
        top = top[np.argsort(-sims[top], kind="stable")][:k]
        return [(self.words[j], float(sims[j])) for j in top]

    # -- construction, saving, loading ----------------------------------------------------------------------

    @classmethod
    def from_vectors(cls, words: Sequence[str], vectors: np.ndarray | torch.Tensor,
                     counts: Sequence[int] | None = None, lowercase: bool = False) -> StaticVectors:
        """Wrap any word list and [V, D] table (e.g. BERT's input token embeddings) as a static model."""
        table = torch.as_tensor(np.asarray(vectors, dtype=np.float32) if not isinstance(vectors, torch.Tensor)
                                else vectors.detach().float().cpu())
        if table.ndim != 2 or table.shape[0] != len(words) or table.shape[0] == 0:
            raise ValueError(f"expected a [{len(words)}, dim] table for {len(words)} words, got {tuple(table.shape)}")
        config = StaticConfig(vocab_size=len(words), dim=int(table.shape[1]), lowercase=lowercase)
        model = cls(config, words, counts, with_output=False)
        with torch.no_grad():
            model.input_embeddings.weight.copy_(table)
        return model

    def save(self, directory: str | Path, card: str | None = None) -> None:
        """Write config.json, model.safetensors, vocab.txt and README.md (a short card unless ``card`` is given)."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        write_json(directory / "config.json", self.config.to_dict())
        save_tensors(directory / "model.safetensors", self.state_dict(), metadata={"format": "pt"})
        if self.counts is None:
            vocab = "".join(w + "\n" for w in self.words)
        else:
            vocab = "".join(f"{w}\t{c}\n" for w, c in zip(self.words, self.counts))
        write_text_atomic(directory / "vocab.txt", vocab)
        write_text_atomic(directory / "README.md", card if card is not None else model_card(self))

    @classmethod
    def load(cls, directory: str | Path) -> StaticVectors:
        """Load a directory written by :meth:`save` (or by ``ctxmodels train static``).

        The config is checked first, then the weights' shapes from the safetensors header and the word list, and
        only then are the weights read; anything wrong is a CheckpointError naming the file."""
        directory = Path(directory)
        if not is_dir(directory):
            raise CheckpointError(f"{directory}: not a directory (for a word2vec/GloVe text file use "
                                  "load_text_vectors)")
        config_path = directory / "config.json"
        config = StaticConfig.from_dict(read_json(config_path, "config.json"), source=str(config_path))
        weights = directory / "model.safetensors"
        expected = (config.vocab_size, config.dim)
        shapes = safetensors_shapes(weights)
        if INPUT_KEY not in shapes:
            raise CheckpointError(f"{weights}: no {INPUT_KEY!r} tensor (found {sorted(shapes)[:5]})")
        for key in (INPUT_KEY, OUTPUT_KEY):
            if key in shapes and shapes[key] != expected:
                raise CheckpointError(f"{weights}: {key} has shape {shapes[key]}, but config.json says "
                                      f"vocab_size={config.vocab_size}, dim={config.dim}")
        check_weights_file_size(weights, 2 * config.vocab_size * config.dim)
        vocab_path = directory / "vocab.txt"
        words, counts = _read_vocab(vocab_path, config.vocab_size)
        if len(words) != config.vocab_size:
            raise CheckpointError(f"{vocab_path}: {len(words)} words, but config.json says "
                                  f"vocab_size={config.vocab_size}")
        if config.lowercase:
            upper = [w for w in words if w.lower() != w]
            if upper:
                raise CheckpointError(
                    f"{vocab_path}: {len(upper)} word(s) hold capitals (e.g. {shown(upper[0])}), but config.json says "
                    "the model is lower-cased (lowercase: true), so they could never be looked up; lower-case "
                    "the words, or set lowercase to false")
        tensors = load_tensors(weights)
        table, out = tensors.get(INPUT_KEY), tensors.get(OUTPUT_KEY)
        if table is None or tuple(table.shape) != expected or (out is not None and tuple(out.shape) != expected):
            raise CheckpointError(f"{weights}: the tensors do not match the file's own header")
        try:
            model = cls(config, words, counts, with_output=out is not None)
        except ValueError as e:
            raise CheckpointError(f"{vocab_path}: {e}") from None
        with torch.no_grad():
            model.input_embeddings.weight.copy_(table.float())
            if out is not None:
                model.output_embeddings.weight.copy_(out.float())
        check_weights(model.named_parameters(), weights)
        return model


def _build_index(words: list[str]) -> dict[str, int]:
    index: dict[str, int] = {}
    for i, w in enumerate(words):
        if not w or any(c in w for c in "\t\n\r"):
            raise ValueError(f"word {i} ({shown(w)}) is empty or holds a tab or line break")
        if w in index:
            raise ValueError(f"word {shown(w)} appears twice (rows {index[w]} and {i})")
        index[w] = i
    return index


def _read_vocab(path: Path, expected: int) -> tuple[list[str], list[int] | None]:
    text = read_text(path, MAX_VOCAB_BYTES, "vocabulary")
    if text.count("\n") > expected + 1:  # counted before anything is split
        raise CheckpointError(f"{path}: more than {expected + 1:,} lines, but config.json says vocab_size={expected}")
    # split("\n"), not splitlines(): a word may hold U+2028 or other characters splitlines() breaks at
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    words, counts = [], []
    for n, line in enumerate(lines, 1):
        word, tab, count = line.partition("\t")
        if not word:
            raise CheckpointError(f"{path}: line {n} is empty; expected one word a line")
        if tab:
            try:
                counts.append(int(count))
            except ValueError:
                raise CheckpointError(f"{path}: line {n}: count {shown(count)} is not an integer") from None
        words.append(word)
    if counts and len(counts) != len(words):
        raise CheckpointError(f"{path}: some lines have a count and some do not")
    if len(set(words)) != len(words):
        seen: set[str] = set()
        dup = next(w for w in words if w in seen or seen.add(w))
        raise CheckpointError(f"{path}: word {shown(dup)} appears more than once")
    return words, (counts or None)


def sgns_loss(pos: torch.Tensor, neg: torch.Tensor, neg_mask: torch.Tensor | None = None) -> torch.Tensor:
    """Mean over pairs of -log σ(pos) - Σ_k log σ(-neg_k): the skip-gram negative-sampling objective.

    ``neg_mask`` [N, K] (True = keep) drops noise words that happen to be the true context word.
    """
    if pos.numel() == 0:
        raise ValueError("no (centre, context) pairs to score")
    # log σ(x) = -softplus(-x); softplus because torch's CPU logsigmoid is far slower on small tensors
    neg_term = F.softplus(neg)
    if neg_mask is not None:
        neg_term = neg_term * neg_mask.to(neg_term.dtype)
    return (F.softplus(-pos) + neg_term.sum(-1)).mean()


# ----------------------------------------------------------------------------------------------------------
# word2vec / GloVe text files (read by .static_text)


def load_text_vectors(path: str | Path, lowercase: bool = False, max_words: int | None = None) -> StaticVectors:
    """Read ``word v1 v2 ... vD`` lines (word2vec text output or GloVe; gzip-compressed too, recognised by its
    first bytes whatever the name).

    A first line of two integers ``N D`` (word2vec's header) is optional. A repeated word keeps its first vector,
    with a warning. ``lowercase=True`` makes lookups case-insensitive (only sensible for lower-cased vectors).
    Anything that is not such a file (a malformed line, a line longer than
    :data:`~ctxmodels.static_text.MAX_LINE_BYTES`, a value that is not a finite number within
    ±:data:`~ctxmodels.static_text.MAX_VECTOR_VALUE`, a damaged or truncated gzip stream, more vectors than fit in
    memory) raises a :class:`~ctxmodels.checkpoint.CheckpointError` naming the file and the line.
    """
    words, table = read_text_vectors(path, dim_bound=LIMITS["dim"], max_words=max_words)
    try:
        return StaticVectors.from_vectors(words, table, lowercase=lowercase)
    except ValueError as e:
        raise CheckpointError(f"{path}: {e}") from None


def load_static(path: str | Path) -> StaticVectors:
    """A saved directory (:meth:`StaticVectors.load`) or a word2vec/GloVe text file (:func:`load_text_vectors`)."""
    path = Path(path)
    if path.is_dir():
        return StaticVectors.load(path)
    if path.is_file():
        return load_text_vectors(path)
    raise ValueError(f"{path}: no such file or directory")


# ----------------------------------------------------------------------------------------------------------
# model card

PROBE_WORDS = ["man", "woman", "house", "money", "river", "light", "good", "king", "mother", "eyes",
               "bank", "run", "day", "love", "water", "horse", "church", "door", "black", "ship"]


def probe_words(model: StaticVectors, n: int = 10) -> list[str]:
    """Ten familiar words to show neighbours of: a fixed list first, then frequent longer words."""
    chosen = [w for w in PROBE_WORDS if w in model._index][:n]
    for w in model.words:  # trained vocabularies are sorted by frequency
        if len(chosen) >= n:
            break
        if len(w) >= 4 and w.isalpha() and w not in chosen:
            chosen.append(w)
    return chosen


def neighbours_table(model: StaticVectors, words: list[str], k: int = 8) -> str:
    rows = [f"| {w} | {', '.join(f'{n} ({s:.2f})' for n, s in model.most_similar(w, k))} |" for w in words]
    return "| word | nearest neighbours (cosine) |\n|---|---|\n" + "\n".join(rows)


def model_card(model: StaticVectors, extra: str = "") -> str:
    c = model.config
    words = probe_words(model)
    return f"""# Static word vectors (ctxmodels)

One {c.dim}-dimensional vector per word for {len(model):,} words{' (lower-cased)' if c.lowercase else ''}.
Skip-gram with negative sampling: window {c.window}, {c.negatives} negatives, min count {c.min_count},
subsampling t={c.subsample:g}. Output (context) vectors {'included' if model.output_embeddings is not None
else 'not included'}.

{extra}
## Nearest neighbours

{neighbours_table(model, words) if words else '(no words to show)'}

## Use

```python
from ctxmodels.static import StaticVectors
m = StaticVectors.load("this/folder")
m.most_similar("{words[0] if words else 'word'}")
```

or `ctxmodels neighbours --model this/folder WORD`.
"""
