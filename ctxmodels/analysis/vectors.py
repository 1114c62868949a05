"""Word vectors per layer: find a word in sentences and get one vector per occurrence and layer.

The pieces, in the order a caller meets them:

* :func:`parse_labelled` splits ``"text | label"`` into the sentence and its sense label.
* :func:`ctxmodels.text.inflections` expands a word to its simple English inflections (see the function for the
  rules).
* :func:`find_occurrences` splits sentences into words with the project's word tokenizer and finds every
  occurrence of a target (case-insensitive, several per sentence), with its character span.
* :func:`word_vectors` embeds the sentences with any loaded model and returns an :class:`OccurrenceVectors`.
  Sentence embeddings go through an LRU cache, so another layer or another target word in the same sentences
  does not run the model again. :func:`occurrence_vectors` does the same for occurrences already found.
"""

from __future__ import annotations

import os
import threading
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..corpus_index import fold, word_forms
from ..loading import POOLINGS
from ..text import inflections as _inflections
from ..text import tokenize_with_offsets
from ..thread_warnings import caught_warnings

if TYPE_CHECKING:
    from ..loading import LoadedModel


# ----------------------------------------------------------------------------------------------------------
# sentences with labels, words and character spans


def parse_labelled(line: str) -> tuple[str, str | None]:
    """``"The bank was closed. | money"`` -> ``("The bank was closed.", "money")``.

    The last ``|`` separates the label, so a sentence may itself contain ``|`` when it also has a label.
    A line without ``|`` (or with an empty label) has no label.
    """
    text, sep, label = line.rpartition("|")
    if not sep:
        return line.strip(), None
    label = label.strip()
    return text.strip(), (label or None)


def split_words(text: str) -> list[tuple[str, int, int]]:
    """Words of ``text`` with their character spans, cut by the project's word tokenizer (the one the models
    were trained with: punctuation split off, ``don't`` and ``drawing-room`` kept whole)."""
    return tokenize_with_offsets(text)


# ----------------------------------------------------------------------------------------------------------
# occurrences


@dataclass(frozen=True)
class Occurrence:
    """One occurrence of the target: where it is and what it is labelled."""

    sentence_index: int
    word_index: int
    word: str  # as written in the sentence
    char_span: tuple[int, int]  # in ``sentence``: sentence[start:end] == word
    sentence: str  # the sentence text without its label
    label: str | None


@dataclass
class OccurrenceSearch:
    """What :func:`find_occurrences` found: the occurrences and the sentences that lack the target."""

    target: str
    forms: frozenset[str]
    sentences: list[str]  # texts without labels
    labels: list[str | None]
    words: list[list[str]]  # each sentence split by the word tokenizer
    occurrences: list[Occurrence]
    missing: list[int]  # indices of sentences in which the target does not occur
    documents: list[str] | None = None  # the document of each sentence, where the sentences come from a corpus
    total: int | None = None  # the occurrences there were before a sample was drawn from them (None: no sample)

    @property
    def missing_sentences(self) -> list[str]:
        return [self.sentences[i] for i in self.missing]


def _as_text_and_label(s: str | tuple[str, str | None]) -> tuple[str, str | None]:
    if isinstance(s, tuple):
        text, label = s
        return text, label
    if not isinstance(s, str):
        raise ValueError(f"a sentence must be a string (optionally 'text | label'), got {type(s).__name__}")
    return parse_labelled(s)


inflections = _inflections  # part of this module's API: the analysis' callers import it from here


def _target_forms(target: str, inflect: bool | Iterable[str]) -> frozenset[str]:
    return word_forms(target, inflect)  # the corpus index's rule, so both find the same occurrences


def find_occurrences(
    sentences: Sequence[str | tuple[str, str | None]],
    target: str,
    inflections: bool | list[str] = False,
) -> OccurrenceSearch:
    """Every occurrence of ``target`` in ``sentences``, case-insensitive, at the word level.

    A sentence may carry a sense label as ``"text | label"`` (or be given as a ``(text, label)`` tuple).
    ``inflections=True`` also finds the word's simple inflections (:func:`inflections`); a list gives the forms
    to accept explicitly. Sentences without the target are listed in ``.missing`` (for the caller to warn
    about); if no sentence has it, a ValueError lists the sentences.
    """
    forms = _target_forms(target, inflections)
    parsed = [_as_text_and_label(s) for s in sentences]
    if not parsed:
        raise ValueError("no sentences given: give at least one sentence containing the target word")
    texts = [t for t, _ in parsed]
    labels = [lab for _, lab in parsed]
    tokens = [split_words(t) for t in texts]
    words = [[w for w, _, _ in ts] for ts in tokens]
    occurrences: list[Occurrence] = []
    missing: list[int] = []
    for i, (text, label, ts) in enumerate(zip(texts, labels, tokens)):
        hits = [Occurrence(i, j, w, (a, b), text, label) for j, (w, a, b) in enumerate(ts) if fold(w) in forms]
        if not hits:
            missing.append(i)
        occurrences += hits
    if not occurrences:
        shown = "\n".join(f"  {i}: {texts[i]}" for i in missing[:20])
        more = f"\n  ... and {len(missing) - 20} more" if len(missing) > 20 else ""
        what = f"{target!r}" + (f" (or its forms {', '.join(sorted(forms - {fold(target.strip())}))})"
                                if len(forms) > 1 else "")
        raise ValueError(f"{what} occurs in none of the {len(texts)} sentences:\n{shown}{more}")
    return OccurrenceSearch(target, forms, texts, labels, words, occurrences, missing)


# ----------------------------------------------------------------------------------------------------------
# the embedding cache


class EmbeddingCache:
    """LRU over sentence embeddings, bounded by bytes; keyed by (model, pooling, words of the sentence).

    Entries hold a strong reference to the model, so the ``id`` in the key cannot be reused by another model
    while the entry lives. Cached arrays are read-only: callers get views and must copy to modify.
    """

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self._items: OrderedDict[tuple, tuple[object, np.ndarray]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()  # the app may call from several script threads
        self.hits = 0
        self.misses = 0

    @staticmethod
    def key(model: object, pooling: str, words: Sequence[str]) -> tuple:
        return (id(model), pooling, tuple(words))

    def get(self, key: tuple) -> np.ndarray | None:
        with self._lock:
            item = self._items.get(key)
            if item is None:
                self.misses += 1
                return None
            self._items.move_to_end(key)
            self.hits += 1
            return item[1]

    def put(self, key: tuple, model: object, array: np.ndarray) -> None:
        array.setflags(write=False)
        with self._lock:
            if key in self._items:
                self._bytes -= self._items.pop(key)[1].nbytes
            if array.nbytes > self.max_bytes:
                return
            self._items[key] = (model, array)
            self._bytes += array.nbytes
            while self._bytes > self.max_bytes:
                _, (_, old) = self._items.popitem(last=False)
                self._bytes -= old.nbytes

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._bytes = 0
            self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._items)

    @property
    def nbytes(self) -> int:
        return self._bytes


CACHE = EmbeddingCache(int(float(os.environ.get("CTXMODELS_EMBED_CACHE_MB", "1024")) * 2**20))


def embed_sentences(
    model: LoadedModel, sentences: Sequence[Sequence[str]], pooling: str = "mean", batch_size: int = 32,
    cache: EmbeddingCache | None = None,
) -> list[np.ndarray]:
    """``model.embed`` through the cache: only sentences not seen before (with this model and pooling) run."""
    cache = CACHE if cache is None else cache
    keys = [cache.key(model, pooling, s) for s in sentences]
    out: list[np.ndarray | None] = [cache.get(k) for k in keys]
    todo: dict[tuple, int] = {}  # a sentence given twice is embedded once
    for i, (k, a) in enumerate(zip(keys, out)):
        if a is None:
            todo.setdefault(k, i)
    if todo:
        idx = list(todo.values())
        arrays = model.embed([list(sentences[i]) for i in idx], pooling=pooling, batch_size=batch_size)
        fresh = dict(zip(todo.keys(), arrays))
        for k, a in fresh.items():
            cache.put(k, model, a)
        out = [fresh[k] if a is None else a for k, a in zip(keys, out)]
    return out  # type: ignore[return-value]


# ----------------------------------------------------------------------------------------------------------
# vectors per occurrence and layer


@dataclass
class OccurrenceVectors:
    """One vector per occurrence and layer. ``vectors[k, l]`` is occurrence k at layer ``layer_names[l]``."""

    vectors: np.ndarray  # float32 [n_occurrences, n_layers, dim]
    layer_names: list[str]
    occurrences: list[Occurrence]
    target: str
    forms: frozenset[str]
    model_name: str
    pooling: str
    missing: list[int] = field(default_factory=list)  # sentences without the target
    missing_sentences: list[str] = field(default_factory=list)

    def layer_index(self, layer: int | str) -> int:
        return _layer_index(self.layer_names, layer)

    def layer(self, layer: int | str) -> np.ndarray:
        """[n_occurrences, dim] vectors of one layer, by index or by name."""
        return self.vectors[:, self.layer_index(layer)]

    @property
    def finite(self) -> np.ndarray:
        """bool [n_occurrences]: the occurrence has a vector at every layer (no NaN: known word, within length)."""
        return np.isfinite(self.vectors).all(axis=(1, 2))

    @property
    def labels(self) -> list[str | None]:
        return [o.label for o in self.occurrences]

    @property
    def sentences(self) -> list[str]:
        return [o.sentence for o in self.occurrences]

    def __len__(self) -> int:
        return len(self.occurrences)


PROGRESS_CHUNK = 128  # sentences embedded between two progress reports


def _in_chunks(items: Sequence, progress: Callable[[int, int], None] | None, run: Callable[[list], list]) -> list:
    """``run(items)`` in chunks, reporting ``progress(done, total)`` after each (one call when no progress)."""
    if progress is None:
        return run(list(items))
    out: list = []
    progress(0, len(items))
    for start in range(0, len(items), PROGRESS_CHUNK):
        out += run(list(items[start : start + PROGRESS_CHUNK]))
        progress(len(out), len(items))
    return out


def _occurrence_rows(model: LoadedModel, found: OccurrenceSearch, chosen: list[int], pooling: str, batch_size: int,
                     progress: Callable[[int, int], None] | None) -> np.ndarray:
    """[n_occ, len(chosen), dim]: the occurrences' rows, embedding each sentence with an occurrence once."""
    by_sentence: dict[int, list[int]] = {}
    for k, o in enumerate(found.occurrences):
        by_sentence.setdefault(o.sentence_index, []).append(k)
    order = list(by_sentence)
    out = np.empty((len(found.occurrences), len(chosen), model.dim), np.float32)

    def run(part: list[int]) -> list[None]:
        # The model warns about any word of a sentence it has no vector for; only the occurrences matter here, and
        # the check after this function says how many of them are missing.
        with caught_warnings():
            arrays = model.embed([found.words[i] for i in part], pooling=pooling, batch_size=batch_size)
        for i, a in zip(part, arrays):
            for k in by_sentence[i]:
                out[k] = a[chosen, found.occurrences[k].word_index]
        return [None] * len(part)

    _in_chunks(order, progress, run)
    return out


def _layer_index(layer_names: list[str], layer: int | str) -> int:
    if isinstance(layer, str):
        if layer not in layer_names:
            raise ValueError(f"no layer named {layer!r}; layers are {layer_names}")
        return layer_names.index(layer)
    n = len(layer_names)
    if not isinstance(layer, (int, np.integer)) or not -n <= layer < n:
        raise ValueError(f"layer {layer!r} out of range: there are {n} layers {layer_names}")
    return int(layer) % n


def _select_layers(layer_names: list[str], layers: Sequence[int | str] | int | str | None) -> list[int]:
    if layers is None:
        return list(range(len(layer_names)))
    if isinstance(layers, (int, str)):
        layers = [layers]
    return [_layer_index(layer_names, layer) for layer in layers]


def word_vectors(
    model: LoadedModel | str,
    sentences: Sequence[str | tuple[str, str | None]],
    target: str,
    layers: Sequence[int | str] | int | str | None = None,
    pooling: str = "mean",
    inflections: bool | list[str] = False,
    batch_size: int = 32,
) -> OccurrenceVectors:
    """Vectors of every occurrence of ``target`` in ``sentences`` at each layer of ``model``.

    ``model`` is a :class:`~ctxmodels.loading.LoadedModel` or anything :func:`ctxmodels.load` accepts.
    ``layers`` selects layers by index or name (default: all). See :func:`find_occurrences` for the rest.
    Occurrences the model has no vector for (a word unknown to static vectors, a word beyond BERT's maximum
    length) get NaN rows and a warning; if that is every occurrence, a ValueError says so.
    """
    if isinstance(model, (str, Path)):
        from ..loading import load

        model = load(model)
    if pooling not in POOLINGS:
        raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
    found = find_occurrences(sentences, target, inflections=inflections)
    return occurrence_vectors(model, found, layers=layers, pooling=pooling, batch_size=batch_size)


def occurrence_vectors(
    model: LoadedModel,
    found: OccurrenceSearch,
    layers: Sequence[int | str] | int | str | None = None,
    pooling: str = "mean",
    batch_size: int = 32,
    progress: Callable[[int, int], None] | None = None,
    cache: bool = True,
) -> OccurrenceVectors:
    """:func:`word_vectors` for occurrences already found by :func:`find_occurrences` (found once, used for
    several models or measurements).

    ``progress(done, total)`` is called as sentences are embedded. ``cache=False`` keeps only the occurrences'
    rows and lets the sentence embeddings go: for thousands of corpus sentences the whole-sentence arrays would
    fill the embedding cache many times over, while the rows asked for are a few megabytes."""
    if pooling not in POOLINGS:
        raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
    target = found.target
    chosen = _select_layers(model.layer_names, layers)
    if cache:
        # Every sentence is embedded (and cached), not only those with the target: the next target word asked
        # for in the same sentences then costs nothing.
        # As in _occurrence_rows, the model's warnings about other words of the sentences (a static model's
        # punctuation, a long sentence cut) are not said: the check below counts the occurrences left empty. Said
        # chunk by chunk, they came twice with different counts and listed `` and .45 as words.
        with caught_warnings():
            by_sentence = _in_chunks(found.words, progress,
                                     lambda part: embed_sentences(model, part, pooling=pooling, batch_size=batch_size))
        vectors = np.stack([by_sentence[o.sentence_index][chosen, o.word_index] for o in found.occurrences])
    else:
        vectors = _occurrence_rows(model, found, chosen, pooling, batch_size, progress)
    result = OccurrenceVectors(
        vectors=vectors.astype(np.float32, copy=False),
        layer_names=[model.layer_names[i] for i in chosen],
        occurrences=found.occurrences,
        target=target,
        forms=found.forms,
        model_name=model.name,
        pooling=pooling,
        missing=found.missing,
        missing_sentences=found.missing_sentences,
    )
    finite = result.finite
    if not finite.any():
        raise ValueError(f"{model.name} has no vector for {target!r} (an unknown word for static vectors?): "
                         f"all {len(finite)} occurrences came out empty (NaN)")
    if not finite.all():
        warnings.warn(f"{int((~finite).sum())} of {len(finite)} occurrences of {target!r} have no vector in "
                      f"{model.name} (a word it does not know, or past the longest text it reads): they are left out "
                      "(their rows are NaN)", stacklevel=2)
    return result
