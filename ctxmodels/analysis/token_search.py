"""Search by vector (exBERT's "search by embedding"): which words of a tagged reference text sit nearest to one
occurrence's vector, layer by layer, and what part of speech they are.

The reference text is a fixed sample of SemCor's sentences; its sense-tagged one-word tokens (nouns, proper nouns,
verbs, adjectives, adverbs) are the candidates, each with its lemma and part of speech. A model embeds them once
(:func:`build_index`; the app and the command line keep the result in the project cache, keyed by the model's files
and the sample), and a search is then one matrix-vector product per layer. What it shows: in a context-free layer
an occurrence's nearest words are its own word form; in the contextual layers, other words that play the same part
in their sentence (a "run" read as a verb lands among verbs).

Typical use::

    index = build_index(model, reference_sentences(load_semcor()))
    layers = nearest(index, occurrence_vectors[k], k=50)      # [n_layers] lists of Neighbour, nearest first
    kinds = neighbour_kinds(layers, index.layer_names, forms={"bank", "banks"})   # parts of speech per layer
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import paths
from ..semcor import SemCor, Sentence, coarse_pos, default_semcor_dir, load_semcor, semcor_files, table_size
from ..thread_warnings import caught_warnings

REFERENCE_SENTENCES = 2000  # about 13,000 candidate words: seconds to embed for a small model, one product to search
PARTS_OF_SPEECH = ("NOUN", "VERB", "ADJ", "ADV", "PROPN")
INDEX_VERSION = 1


@dataclass
class TokenIndex:
    """The candidate words of a reference text, embedded by one model at every layer.

    vectors: float16 ``[n_words, n_layers, dim]``, each row of unit length (a word the model has no vector for is
    all zeros: its cosine with anything is 0). words, lemmas, pos (coarse: NOUN, VERB, ADJ, ADV, PROPN), sentence
    (index into ``sentences``) and position (the word's index in its sentence) describe each row.
    """

    vectors: np.ndarray
    layer_names: list[str]
    words: list[str]
    lemmas: list[str]
    pos: list[str]
    sentence: np.ndarray
    position: np.ndarray
    sentences: list[list[str]]

    def __len__(self) -> int:
        return len(self.words)


@dataclass(frozen=True)
class Neighbour:
    """One reference word near the searched vector in one layer."""

    word: str
    lemma: str
    pos: str
    cosine: float
    sentence: str  # its words joined by spaces
    position: int  # the word's index among the sentence's words

    def in_context(self, width: int = 6) -> str:
        """The word in brackets with up to ``width`` words on either side."""
        words = self.sentence.split(" ")
        left, right = words[max(0, self.position - width):self.position], words[self.position + 1:][:width]
        return " ".join(["…"] * (self.position > width) + left + [f"[{words[self.position]}]"] + right
                        + ["…"] * (self.position + 1 + width < len(words)))


def reference_sentences(semcor: SemCor, n: int = REFERENCE_SENTENCES) -> list[Sentence]:
    """``n`` sentences spread evenly over SemCor (every k-th one that has a tag), the same ones every time."""
    tagged = [s for s in semcor.sentences if s.tags]
    if not tagged:
        raise ValueError("this SemCor has no tagged sentences to search")
    step = max(1, len(tagged) // n)
    return tagged[::step][:n]


def build_index(model: Any, sentences: Sequence[Sentence], batch_size: int = 32,
                progress: Callable[[int, int], None] | None = None, chunk: int = 200) -> TokenIndex:
    """Embed ``sentences`` with ``model`` (a loaded model) and keep the vector of every tagged one-word token.
    ``progress(done, total)`` is told after every ``chunk`` sentences."""
    rows: list[tuple[int, int, str, str, str]] = []  # sentence, word position, word, lemma, pos
    for si, s in enumerate(sentences):
        for ti, tag in sorted(s.tags.items()):
            start, end = s.spans[ti]
            if end - start == 1:  # multi-word expressions ("took_place") have no one word to stand for them
                rows.append((si, start, s.words[start], tag.lemma, coarse_pos(tag.pos)))
    if not rows:
        raise ValueError("the reference sentences have no tagged one-word tokens")
    layers: list[np.ndarray] = []
    for at in range(0, len(sentences), chunk):
        # A word the model has no vector for (static vectors lack rare words) becomes a zero row, near nothing:
        # not news to whoever searches, so its warning is kept from them.
        with caught_warnings():
            layers += model.embed([s.words for s in sentences[at:at + chunk]], batch_size=batch_size)
        if progress is not None:
            progress(min(at + chunk, len(sentences)), len(sentences))
    vectors = np.stack([layers[si][:, wi] for si, wi, *_ in rows]).astype(np.float32)  # [n, n_layers, dim]
    vectors = np.nan_to_num(vectors, nan=0.0)
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    vectors = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0).astype(np.float16)
    return TokenIndex(vectors, list(model.layer_names), [r[2] for r in rows], [r[3] for r in rows],
                      [r[4] for r in rows], np.array([r[0] for r in rows]), np.array([r[1] for r in rows]),
                      [list(s.words) for s in sentences])


def nearest(index: TokenIndex, vector: np.ndarray, k: int = 50, exclude: str | None = None) -> list[list[Neighbour]]:
    """The ``k`` reference words nearest (cosine) to ``vector`` ``[n_layers, dim]`` in each layer of ``index``,
    nearest first (all of them when the index holds fewer). ``exclude``: a sentence (its words joined by spaces)
    whose words are left out, so that an occurrence taken from the reference text does not find itself. A layer
    where ``vector`` is not finite or zero gets no neighbours."""
    vector = np.asarray(vector, dtype=np.float32)
    if vector.shape != index.vectors.shape[1:]:
        raise ValueError(f"a vector of shape {vector.shape} cannot be searched in an index of "
                         f"{index.vectors.shape[1]} layers x {index.vectors.shape[2]} dimensions (another model?)")
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    k = min(k, len(index))
    keep = np.ones(len(index), dtype=bool)
    if exclude is not None:
        skip = {i for i, words in enumerate(index.sentences) if " ".join(words) == exclude}
        keep = ~np.isin(index.sentence, list(skip))
    out: list[list[Neighbour]] = []
    for layer in range(vector.shape[0]):
        v = vector[layer]
        norm = float(np.linalg.norm(v))
        if not np.isfinite(norm) or norm == 0:
            out.append([])
            continue
        cos = index.vectors[:, layer].astype(np.float32) @ (v / norm)
        cos[~keep] = -np.inf
        top = np.argsort(-cos, kind="stable")[:k]
        out.append([Neighbour(index.words[i], index.lemmas[i], index.pos[i], float(cos[i]),
                              " ".join(index.sentences[index.sentence[i]]), int(index.position[i]))
                    for i in top if np.isfinite(cos[i])])
    return out


def neighbour_kinds(layers: Sequence[Sequence[Neighbour]], layer_names: Sequence[str],
                    forms: set[str] | frozenset[str]) -> pd.DataFrame:
    """What the neighbours of each layer are: one row per layer and part of speech (NOUN, VERB, ADJ, ADV, PROPN,
    in that order) with how many of the neighbours are the searched word itself (``same``: their form or lemma
    among ``forms``, any case) and how many are other words (``other``)."""
    forms = {f.lower() for f in forms}
    rows = []
    for name, found in zip(layer_names, layers):
        for pos in PARTS_OF_SPEECH:
            mine = [n for n in found if n.pos == pos]
            same = sum(n.word.lower() in forms or n.lemma.lower() in forms for n in mine)
            rows.append({"layer": name, "pos": pos, "same": same, "other": len(mine) - same})
    return pd.DataFrame(rows, columns=["layer", "pos", "same", "other"])


# -- the index on disk ---------------------------------------------------------------------------------------------


def index_key(fingerprint: str, semcor_dir: Path, n: int) -> str:
    """Which model files, which SemCor (its files' sizes: told without reading it, so a kept index comes at once)
    and how many reference sentences an index was built from."""
    sizes = [table_size(p) for p in semcor_files(semcor_dir)]
    blob = json.dumps({"model": fingerprint, "semcor": sizes, "n": n, "version": INDEX_VERSION})
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


def index_path(key: str, cache: str | Path | None = None) -> Path:
    return Path(cache if cache is not None else paths.cache_dir() / "token-index") / f"{key}.npz"


def save_index(index: TokenIndex, path: Path) -> bool:
    """Write ``index`` whole and rename it into place (two servers building one at once are safe); False if the
    place cannot be written (the index is still usable, only not kept)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".npz.tmp")
        with os.fdopen(fd, "wb") as f:
            np.savez(f, vectors=index.vectors, sentence=index.sentence, position=index.position,
                     meta=np.array(json.dumps({"layer_names": index.layer_names, "words": index.words,
                                               "lemmas": index.lemmas, "pos": index.pos,
                                               "sentences": index.sentences})))
        os.replace(tmp, path)
        return True
    except OSError:
        return False


def load_index(path: Path) -> TokenIndex | None:
    """The index saved at ``path``, or None when there is none or it cannot be read (it is then built again)."""
    try:
        with np.load(path, allow_pickle=False) as f:
            meta = json.loads(str(f["meta"]))
            index = TokenIndex(f["vectors"], meta["layer_names"], meta["words"], meta["lemmas"], meta["pos"],
                               f["sentence"], f["position"], meta["sentences"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    n = len(index.words)
    if not (index.vectors.ndim == 3 and index.vectors.shape[0] == n == len(index.sentence) == len(index.position)
            and len(index.lemmas) == len(index.pos) == n):
        return None
    return index


def cached_index(model: Any, semcor_dir: str | Path | None = None, n: int = REFERENCE_SENTENCES,
                 progress: Callable[[int, int], None] | None = None, cache: str | Path | None = None) -> TokenIndex:
    """:func:`build_index` on :func:`reference_sentences` of SemCor (``semcor_dir``, default
    :func:`~ctxmodels.semcor.default_semcor_dir`), kept in the project cache for a model with files (a model in
    memory is embedded each time). SemCor is read only to build an index."""
    from .probes import model_fingerprint

    semcor_dir = Path(semcor_dir) if semcor_dir is not None else default_semcor_dir()
    fingerprint = model_fingerprint(model)
    path = index_path(index_key(fingerprint, semcor_dir, n), cache) if fingerprint else None
    if path is not None:
        index = load_index(path)
        if index is not None and index.layer_names == list(model.layer_names):
            return index
    index = build_index(model, reference_sentences(load_semcor(semcor_dir), n), progress=progress)
    if path is not None:
        save_index(index, path)
    return index
