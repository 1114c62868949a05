"""One word's occurrences across a model's layers: the analysis behind the explorer's *Word senses* page.

Where :mod:`~ctxmodels.analysis.senses` measures arrays, this module puts the pieces together for one word in
one set of sentences, so the app, the command line and the tests share it:

* :func:`layer_vectors` picks one layer of the occurrence vectors, or ELMo's learned :class:`LearnedMix` of all
  of them (:func:`mix_from_probe`, :func:`learned_mix` read it from a word-sense probe result).
* :func:`centred_directions` and :func:`project_layers` project several layers of the same occurrences to 2-D,
  one by one or jointly on shared axes (:class:`LayerProjection`, whose ``path`` follows one occurrence).
* :func:`nearest_occurrences` lists an occurrence's nearest other occurrences by cosine in the full space.
* :func:`containing` finds the occurrences with given words around them (:func:`context_query` reads a search as
  typed), and :func:`neighbour_share` says how far a layer keeps them together.
* :func:`context_shifts` says which words of its sentence shape one occurrence's vector, layer by layer
  (:class:`ContextShifts`).
* :func:`measure_layers` (arrays in) and :func:`measure_word` (a model in) give the per-layer table of sense
  accuracy, silhouette and self-similarity (:class:`LayerMeasurements`); :func:`majority_baseline` the line
  to compare the accuracy with, and :func:`sense_separation` whether the best layer is clearly above it.

Occurrences are found once, with :func:`~ctxmodels.analysis.vectors.find_occurrences`, and passed in.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import pandas as pd

from ..cosine import unit_rows
from ..text import inflections, tokenize_with_offsets
from ..tokenization import MASK
from . import projections, senses
from .vectors import (
    Occurrence,
    OccurrenceSearch,
    OccurrenceVectors,
    embed_sentences,
    find_occurrences,
    occurrence_vectors,
)

if TYPE_CHECKING:
    from ..loading import LoadedModel
    from .probes import ProbeResult

MIX = "mix"  # the layer choice for a learned scalar mix of all layers


# ----------------------------------------------------------------------------------------------------------
# layers and ELMo's scalar mix


class LearnedMix(NamedTuple):
    """The weights a probe's :class:`ctxmodels.scalar_mix.ScalarMix` learned, ``v = gamma * sum_j s_j h_j``, as plain
    numbers (a tuple, so it can key a cache)."""

    weights: tuple[float, ...]  # s_j, one per layer (softmax-normalised: they sum to 1)
    gamma: float

    def apply(self, vectors: np.ndarray) -> np.ndarray:
        """``vectors`` [n, n_layers, dim] -> the mixed vectors [n, dim]."""
        if vectors.ndim != 3 or vectors.shape[1] != len(self.weights):
            raise ValueError(f"a mix of {len(self.weights)} layers needs vectors [n, {len(self.weights)}, dim], "
                             f"got shape {vectors.shape}")
        s = np.asarray(self.weights, dtype=vectors.dtype)
        return self.gamma * np.tensordot(vectors, s, axes=([1], [0]))


def mix_from_probe(result: ProbeResult | None, n_layers: int) -> LearnedMix | None:
    """The scalar mix a probe learned, if there is a result and it has one weight per layer of the model."""
    if result is None or len(result.mix_weights) != n_layers:
        return None
    return LearnedMix(tuple(float(w) for w in result.mix_weights), float(result.gamma))


def learned_mix(model: LoadedModel) -> LearnedMix | None:
    """The mix of the newest cached word-sense probe on ``model`` (never trains one); None without one."""
    from .probes import latest_cached_result

    return mix_from_probe(latest_cached_result(model, "wsd"), model.n_layers)


def layer_vectors(vectors: np.ndarray, layer: int | str, mix: LearnedMix | None = None) -> np.ndarray:
    """The [n, dim] vectors of one layer of ``vectors`` [n, n_layers, dim]; ``layer=MIX`` applies ``mix``."""
    if layer == MIX:
        if mix is None:
            raise ValueError("the scalar-mix layer needs a mix (run a word-sense probe on this model first)")
        return mix.apply(vectors)
    return vectors[:, layer]


# ----------------------------------------------------------------------------------------------------------
# projections of several layers


def centred_directions(X: np.ndarray) -> np.ndarray:
    """Rows of ``X`` [n, dim] scaled to unit length (cosine geometry), minus the mean of the finite ones; rows
    with NaN (no vector) keep it.

    For layers fitted jointly: layers sit in different regions of the space, and fitted as they are the first
    axis would only say "this is layer 0, that is layer 2". Centring each layer keeps one scale for all and
    shows the spread within it."""
    U = unit_rows(X)
    ok = np.isfinite(U).all(axis=1)
    if ok.any():
        U = U - U[ok].mean(axis=0)
    return U


@dataclass
class LayerProjection:
    """2-D (or 3-D) coordinates of the same occurrences at several layers."""

    coords: list[np.ndarray]  # one [n, 2 or 3] per layer asked for, in that order; NaN for rows without a vector
    method: str  # the method used ("pca" when a small input fell back from UMAP / t-SNE)
    joint: bool  # fitted together on shared axes (each layer centred) rather than one by one
    notes: list[str] = field(default_factory=list)  # remarks for the reader (clipping, fallbacks, dropped rows)

    def path(self, index: int) -> np.ndarray:
        """[n_layers, 2 or 3]: where occurrence ``index`` sits in each layer's coordinates."""
        return np.stack([c[index] for c in self.coords])


def project_layers(
    vectors: np.ndarray,
    layers: Sequence[int | str],
    method: str = "umap",
    seed: int = 0,
    joint: bool = True,
    mix: LearnedMix | None = None,
    n_neighbors: int = 15,
    min_dist: float = 0.1,
    perplexity: float = 30.0,
    n_components: int = 2,
) -> LayerProjection:
    """Project ``vectors`` [n, n_layers, dim] at each of ``layers`` (indices, or :data:`MIX`) to ``n_components``
    (2 or 3) dimensions.

    ``joint`` (with two layers or more): one projection of all of them, each layer's directions centred first
    (:func:`centred_directions`), so the panels share axes and scale. Otherwise each layer is projected on its
    own with the cosine metric."""
    sets = [layer_vectors(vectors, layer, mix) for layer in layers]
    params = dict(method=method, seed=seed, n_neighbors=n_neighbors, min_dist=min_dist, perplexity=perplexity,
                  n_components=n_components)
    if joint and len(sets) > 1:
        proj = projections.project([centred_directions(s) for s in sets], metric="euclidean", **params)
        return LayerProjection(list(proj.coords), proj.method, True, list(proj.notes))
    coords: list[np.ndarray] = []
    notes: list[str] = []
    used = method
    for s in sets:
        proj = projections.project(s, **params)
        coords.append(proj.coords)
        notes += [n for n in proj.notes if n not in notes]
        used = proj.method
    return LayerProjection(coords, used, False, notes)


# ----------------------------------------------------------------------------------------------------------
# neighbours


class Neighbour(NamedTuple):
    index: int  # the occurrence
    cosine: float  # to the occurrence asked about, in the full space


def nearest_occurrences(X: np.ndarray, index: int, n: int = 5) -> list[Neighbour]:
    """The ``n`` occurrences nearest to occurrence ``index`` by cosine in ``X`` [n_occ, dim], nearest first.

    The occurrence itself and rows without a vector (NaN) are left out; equal cosines keep the input order."""
    if not 0 <= index < len(X):
        raise ValueError(f"occurrence {index} out of range: there are {len(X)}")
    U = unit_rows(X)
    sims = U @ U[index]  # [n_occ]
    sims[index] = -np.inf
    sims[~np.isfinite(sims)] = -np.inf
    order = [int(i) for i in np.argsort(-sims, kind="stable") if np.isfinite(sims[i])][:n]
    return [Neighbour(i, float(sims[i])) for i in order]


# ----------------------------------------------------------------------------------------------------------
# occurrences by the words around them (the Projector's search)

#: The most words one search names; a search is for a handful of context words, not a text.
MAX_CONTEXT_QUERY_WORDS = 10


def context_query(query: str) -> list[str]:
    """The words of a search for context words, as typed: separated by spaces, commas, semicolons or "|", each a
    word with a letter or digit, lower-cased, in order, without repeats. ValueError for none, or too many."""
    parts = [p.strip().casefold() for p in re.split(r"[\s,;|]+", query) if p.strip()]
    words = list(dict.fromkeys(p for p in parts if any(c.isalnum() for c in p)))
    if not words:
        raise ValueError("type one or more words to look for around the occurrences (river, money), separated by "
                         "spaces or commas")
    if len(words) > MAX_CONTEXT_QUERY_WORDS:
        raise ValueError(f"the search names {len(words)} words; name at most {MAX_CONTEXT_QUERY_WORDS}")
    return words


def word_forms(word: str) -> set[str]:
    """``word`` and its simple inflections, whichever form it is typed in: rivers finds river, running finds ran
    (the forms of every shorter stem that has ``word`` among its own inflections)."""
    w = word.casefold()
    forms = inflections(w)
    for end in range(3, len(w)):
        if w in inflections(w[:end]):
            forms |= inflections(w[:end])
    return forms


def containing(occurrences: Sequence[Occurrence], words: Sequence[str], inflect: bool = True) -> np.ndarray:
    """Bool [n]: which occurrences' sentences contain one of ``words`` elsewhere than at the occurrence (words as
    the project's tokenizer reads them, in any case; with ``inflect``, their simple inflections too
    (:func:`word_forms`)."""
    forms: set[str] = set()
    for w in words:
        forms |= word_forms(w) if inflect else {w.casefold()}
    found = np.zeros(len(occurrences), dtype=bool)
    for i, occ in enumerate(occurrences):
        found[i] = any(start != occ.char_span[0] and token.casefold() in forms
                       for token, start, _ in tokenize_with_offsets(occ.sentence))
    return found


#: Cosines closer than this are one tie (identical vectors give cosines equal up to the matmul's rounding).
TIE = 1e-6


def neighbour_share(X: np.ndarray, marked: np.ndarray, k: int = 5) -> float | None:
    """How often the ``k`` nearest other occurrences (cosine in ``X`` [n, dim]) of a marked occurrence are marked
    too, over the marked occurrences with a vector: near the share of marked occurrences overall where a layer does
    not group them, near 1 where it does. None with fewer than two marked occurrences with a vector.

    Ties at the k-th place share its remaining places by their marked share (the expectation over every way of
    breaking the tie): a context-free layer gives every occurrence of one form the same vector, and which of them
    counted as nearest would otherwise be an accident of their order."""
    ok = np.isfinite(X).all(axis=1)
    rows = np.flatnonzero(marked & ok)
    if len(rows) < 2 or ok.sum() <= k:
        return None
    U = unit_rows(X[ok])
    mark = marked[ok].astype(float)
    position = np.cumsum(ok) - 1  # an occurrence's row in U
    shares = []
    for start in range(0, len(rows), 256):  # [256, n] similarities at a time: 5,000 occurrences stay small
        chunk = position[rows[start:start + 256]]
        sims = U[chunk] @ U.T
        sims[np.arange(len(chunk)), chunk] = -np.inf  # not itself
        kth = -np.partition(-sims, k - 1, axis=1)[:, k - 1:k]  # the k-th largest cosine, [c, 1]
        above, tied = sims > kth + TIE, np.abs(sims - kth) <= TIE
        places_left = k - above.sum(axis=1)
        shares.append((above @ mark + places_left * (tied @ mark) / tied.sum(axis=1)) / k)
    return float(np.concatenate(shares).mean())


# ----------------------------------------------------------------------------------------------------------
# which words shape one occurrence

#: Hiding words one at a time costs one sentence per word; past this many the question is for a shorter sentence.
MAX_CONTEXT_WORDS = 80


@dataclass
class ContextShifts:
    """How far one occurrence's vector moves, in each layer, when each other word of its sentence is hidden.

    ``shifts[l, j]`` is the cosine distance (1 - cosine) between the word's vector in layer ``l`` with the whole
    sentence and with word ``j`` hidden: 0 where that word does not reach it (every word, in a context-free layer).
    NaN in the word's own column, and where a vector is missing."""

    words: list[str]
    index: int  # the occurrence's word
    layer_names: list[str]
    shifts: np.ndarray  # [n_layers, n_words]
    hidden_as: str  # what a hidden word became: the model's mask token, or "left out"


def _mask_word_for(model: LoadedModel) -> str | None:
    """What a BERT-family model reads as a hidden word: its mask token, typed as [MASK] (an encoder read through
    transformers maps it to its own); None for a model without one (ELMo, static vectors, an encoder without a
    mask token), whose hidden words are left out of the sentence instead."""
    if not model.has_attention:
        return None
    tokenizer = model.tokenizer
    return MASK if getattr(tokenizer, "mask_id", None) is not None else None


def context_shifts(model: LoadedModel, words: Sequence[str], index: int, pooling: str = "mean") -> ContextShifts:
    """Which words of a sentence (``words``, already split) shape the vector of word ``index``, in every layer.

    Each other word is hidden in turn and the sentence run again (one batch): a BERT-family model reads one mask
    token in place of each of its pieces, so every other piece keeps its position (and the input embeddings of the
    word do not change); ELMo and static vectors, which have no mask, read the sentence without it (ELMo's LSTMs
    see no positions, only order). The answer is :class:`ContextShifts`."""
    words = list(words)
    if not 0 <= index < len(words):
        raise ValueError(f"word {index} is out of range: the sentence has {len(words)} words")
    if len(words) - 1 > MAX_CONTEXT_WORDS:
        raise ValueError(f"the sentence has {len(words) - 1} other words to hide one at a time; which words shape "
                         f"an occurrence is shown for sentences of up to {MAX_CONTEXT_WORDS + 1} words")
    mask = _mask_word_for(model)
    others = [j for j in range(len(words)) if j != index]
    variants, where = [words], [index]
    if mask is not None:  # one mask per piece of the hidden word, so every other piece keeps its position
        enc = model.tokenizer.encode(words)
        pieces = [max(1, len(enc.word_pieces(j))) for j in range(len(words))]
    for j in others:
        if mask is not None:
            variants.append(words[:j] + [mask] * pieces[j] + words[j + 1:])
            where.append(index + (pieces[j] - 1 if j < index else 0))
        else:
            variants.append(words[:j] + words[j + 1:])
            where.append(index - (j < index))
    arrays = model.embed(variants, pooling=pooling)
    base = unit_rows(arrays[0][:, index])  # [L, H]
    shifts = np.full((model.n_layers, len(words)), np.nan)
    for j, array, w in zip(others, arrays[1:], where[1:]):
        moved = unit_rows(array[:, w])
        shifts[:, j] = 1.0 - np.sum(base * moved, axis=1)
    return ContextShifts(words, index, list(model.layer_names), np.clip(shifts, 0.0, 2.0),
                         mask if mask is not None else "left out")


@dataclass
class SameWord:
    """One word in two sentences: how alike its two vectors are in each layer, beside how alike any two words of
    the two sentences are there (the layer's anisotropy: in some layers every pair of words is close)."""

    layer_names: list[str]
    cosine: list[float]  # the word's two vectors, per layer (NaN where one is missing)
    baseline: list[float]  # mean cosine of the other words' pairs across the two sentences (NaN if none)
    words: tuple[list[str], list[str]]  # the two sentences, split
    index: tuple[int, int]  # the word's first occurrence in each


def find_in_both(sentence_a: str, sentence_b: str, word: str) -> OccurrenceSearch:
    """``word`` in the two sentences (any case), or a ValueError saying which sentence lacks it: what
    :func:`same_word` needs of its input, whatever the model."""
    found = find_occurrences([(sentence_a, None), (sentence_b, None)], word)
    if found.missing:
        which = " and ".join("A" if i == 0 else "B" for i in found.missing)
        raise ValueError(f"{word!r} does not occur in sentence {which}: type a word that both sentences contain")
    return found


def same_word(model: LoadedModel, sentence_a: str, sentence_b: str, word: str, pooling: str = "mean") -> SameWord:
    """The cosine between the vectors of ``word`` in ``sentence_a`` and in ``sentence_b`` (its first occurrence in
    each, any case), layer by layer, with the anisotropy baseline of the two sentences' other words (every pair
    of one word from each; :func:`~ctxmodels.analysis.senses.anisotropy_baseline`). A static layer gives 1."""
    found = find_in_both(sentence_a, sentence_b, word)
    first: dict[int, int] = {}
    for o in found.occurrences:
        first.setdefault(o.sentence_index, o.word_index)
    arrays = embed_sentences(model, found.words, pooling=pooling)  # two [n_layers, n_words, dim]
    context = np.array([0] * len(found.words[0]) + [1] * len(found.words[1]))
    others = np.ones(len(context), dtype=bool)
    others[[first[0], len(found.words[0]) + first[1]]] = False
    cosine, baseline = [], []
    for layer in range(model.n_layers):
        pair = unit_rows(np.stack([arrays[0][layer, first[0]], arrays[1][layer, first[1]]]))
        cosine.append(float(pair[0] @ pair[1]))
        X = np.concatenate([arrays[0][layer], arrays[1][layer]])[others]
        try:
            baseline.append(senses.anisotropy_baseline(X, context[others]))
        except ValueError:  # one of the sentences is the word alone: no other pairs to compare
            baseline.append(float("nan"))
    return SameWord(list(model.layer_names), cosine, baseline, (found.words[0], found.words[1]), (first[0], first[1]))


# ----------------------------------------------------------------------------------------------------------
# measurements per layer


def sense_names(labels: Sequence[str | None]) -> set[str]:
    """The distinct sense labels (an empty or missing label is no sense)."""
    return {lab for lab in labels if lab}


def majority_baseline(labels: Sequence[str | None]) -> float | None:
    """Share of the most frequent sense among the labelled occurrences; None with fewer than two senses."""
    labelled = [lab for lab in labels if lab]
    return senses.majority_share(labelled) if len(set(labelled)) >= 2 else None


@dataclass
class LayerMeasurements:
    """One row per layer: ``layer_index``, ``layer``, Ethayarajh's self-similarity raw and adjusted (and the other
    columns of :func:`~ctxmodels.analysis.senses.contextuality_table`), and with two senses or more the columns of
    :func:`~ctxmodels.analysis.senses.sense_table` (``knn1_accuracy``, ``silhouette``, ...)."""

    table: pd.DataFrame
    notes: list[str] = field(default_factory=list)  # why a measurement is missing


def measure_layers(
    occurrences: np.ndarray,
    labels: Sequence[str | None],
    sentence_vectors: Sequence[np.ndarray],
    layer_names: Sequence[str],
    k: Sequence[int] = (1,),
) -> LayerMeasurements:
    """Sense and contextuality measurements of one word at every layer.

    occurrences: [n_occ, n_layers, dim] vectors of the word; labels: one sense (or None) per occurrence;
    sentence_vectors: one [n_layers, n_words, dim] per sentence (for the anisotropy baseline). A measurement that
    cannot be made (too few occurrences, a single sense) is left out and a note says why."""
    table = pd.DataFrame({"layer_index": range(len(layer_names)), "layer": list(layer_names)})
    notes: list[str] = []
    try:
        ctx = senses.contextuality_table(sentence_vectors, list(layer_names), occurrences=occurrences)
        table = table.merge(ctx.drop(columns=["layer"]), on="layer_index")
    except ValueError as e:
        notes.append(f"self-similarity: {e}")
    if len(sense_names(labels)) >= 2:
        try:
            by_sense = senses.sense_table(occurrences, list(labels), list(layer_names), k=k)
            table = table.merge(by_sense.drop(columns=["layer"]), on="layer_index")
        except ValueError as e:
            notes.append(f"sense accuracy: {e}")
    return LayerMeasurements(table, notes)


def measure_word(model: LoadedModel, found: OccurrenceSearch, k: Sequence[int] = (1,),
                 vectors: OccurrenceVectors | None = None, baseline_sentences: int | None = None) -> LayerMeasurements:
    """:func:`measure_layers` for the occurrences ``found`` in ``model`` (the sentences are embedded once).

    ``vectors``: the occurrences' vectors when the caller has them already. ``baseline_sentences``: embed only that
    many sentences, evenly spread, for the anisotropy baseline (random word pairs need a sample of the text, not
    all of it: at corpus scale the whole set would cost as much as the occurrences themselves)."""
    ov = vectors if vectors is not None else occurrence_vectors(model, found)
    words = found.words
    if baseline_sentences is not None and len(words) > baseline_sentences:
        picked = np.unique(np.linspace(0, len(words) - 1, baseline_sentences).round().astype(int))
        words = [words[i] for i in picked]
    by_sentence = embed_sentences(model, words)  # from the embedding cache when the sentences were just embedded
    return measure_layers(ov.vectors, ov.labels, by_sentence, model.layer_names, k=k)


# How far above the majority share the best layer's 1-NN accuracy must be, as a share of the way from the majority
# share to 1: with two equal senses (majority 0.5) the bar is 0.65. For 30 occurrences that is about what chance
# alone exceeds one time in twenty (0.5 + 1.645 * sqrt(0.25 / 30) = 0.65); as a share of the gap it stays
# reachable when one sense is common (majority 0.9: 0.93).
SEPARATION_SHARE = 0.3


class Separation(NamedTuple):
    """Whether one model separates a word's senses: its best layer's leave-one-out 1-NN accuracy against the
    majority share (the accuracy of always answering the most frequent sense)."""

    layer_index: int
    layer: str
    accuracy: float  # LOO 1-NN sense accuracy of the best layer
    majority: float  # the majority share of the same occurrences
    bar: float  # the accuracy it needs to count as separating: majority + share * (1 - majority)

    @property
    def separates(self) -> bool:
        return self.accuracy + 1e-9 >= self.bar


def sense_separation(table: pd.DataFrame, share: float = SEPARATION_SHARE) -> Separation | None:
    """The best layer of a :class:`LayerMeasurements` table (highest ``knn1_accuracy``; ties: higher
    ``knn1_macro_f1``, then the lower layer) and the bar it must reach to count as separating the senses:
    ``majority + share * (1 - majority)``. None when the table has no sense accuracy (fewer than two senses, too
    few occurrences).

    Why a bar above the majority share: with a few dozen occurrences, a 1-NN accuracy a little above it can come
    from chance or the sentences' shared words, and a student looking at the plot sees no separation."""
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"share must be between 0 and 1, got {share}")
    if "knn1_accuracy" not in table or "majority_share" not in table:
        return None
    rows = [r for r in table.to_dict("records")
            if np.isfinite(r["knn1_accuracy"]) and np.isfinite(r["majority_share"])]
    if not rows:
        return None
    top = max(rows, key=lambda r: (r["knn1_accuracy"], np.nan_to_num(r.get("knn1_macro_f1", 0.0), nan=0.0),
                                   -r["layer_index"]))
    majority = float(top["majority_share"])
    return Separation(int(top["layer_index"]), str(top["layer"]), float(top["knn1_accuracy"]), majority,
                      majority + share * (1.0 - majority))
