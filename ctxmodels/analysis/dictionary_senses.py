"""Which dictionary sense one occurrence is: the nearest sense average among SemCor's tagged occurrences.

This is the ELMo paper's word-sense disambiguation (Peters et al. 2018, sec. 5.3; Reif et al. 2019 ran it on BERT
for Context Atlas), run live on any sentence: each WordNet sense of the word's lemma gets the average of its
SemCor occurrences' vectors, layer by layer, and an occurrence is read as the sense whose average is nearest by
cosine. How far to trust a layer's answer is measured on the same references: the share of SemCor's own
occurrences that the layer reads right with each one left out of its sense's average
(:func:`ctxmodels.analysis.senses.centroid_sense_accuracy`), against what reading the spelling alone gets: each
spelling's most frequent sense ("banks" is more often the money sense than "bank" is). A context-free layer (static
vectors, ELMo's character CNN) can do no better than that, whatever its averages say.

* :func:`lemma_of` finds the SemCor lemma of a word as typed ("banks" -> "bank", "ran" -> "run").
* :func:`sense_averages` embeds the lemma's SemCor occurrences with a model: a :class:`SenseAverages`.
* :func:`guess` compares one occurrence's vectors with them: a :class:`SenseGuess`. An occurrence that is itself
  one of the references (a SemCor sentence) leaves its sense's average first, so it is never compared with itself.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from ..cosine import unit_rows
from ..semcor import SemCor, load_semcor
from ..text import inflections
from . import senses as sense_measures
from .sources import OTHER, POS_NAMES, SenseInfo, semcor_search
from .vectors import occurrence_vectors
from .word_senses import LearnedMix, layer_vectors, word_forms

if TYPE_CHECKING:
    from ..loading import LoadedModel
    from ..wordnet import Sense

MIN_SENSE_COUNT = 3   # a sense needs this many SemCor occurrences for an average (fewer: one sentence decides)
LIMIT = 1000          # references per lemma at most ("be" has thousands), spread evenly over SemCor's documents
#: Cosines closer than this are one tie: a context-free layer gives every sense of one form the same average.
TIE = 1e-6

Key = tuple[str, int]  # (sentence text, word index): one occurrence, as the page and semcor_search give it


@dataclass
class SenseAverages:
    """One model's sense averages for one lemma, and how well each layer reads SemCor's own occurrences."""

    lemma: str
    senses: list[SenseInfo]   # the senses with an average, most frequent first
    layer_names: list[str]
    sums: np.ndarray          # float64 [n_layers, n_senses, dim]: the sum of each sense's vectors
    counts: np.ndarray        # int [n_senses]: how many occurrences each sum holds
    accuracy: np.ndarray      # [n_layers]: leave-one-out nearest-average accuracy on the references
    by_spelling: float        # the share right when each spelling is read as its most frequent sense
    left_out: int             # references not averaged: a rarer sense's, or without a vector
    members: dict[Key, tuple[int, int]]  # reference -> (its sense, its row of vectors)
    vectors: np.ndarray       # float32 [n, n_layers, dim]: the averaged references' vectors, to leave one out

    @property
    def n(self) -> int:
        return int(self.counts.sum())

    @property
    def nbytes(self) -> int:
        return self.sums.nbytes + self.vectors.nbytes

    def best_layer(self) -> int:
        """The layer that reads most references right (the lowest such layer on a tie)."""
        return int(np.argmax(self.accuracy))

    def beats_spelling(self, layer: int) -> bool:
        """Whether ``layer`` reads more references right than reading each spelling as its most frequent sense."""
        return bool(self.accuracy[layer] > self.by_spelling)


@dataclass
class SenseGuess:
    """How near one occurrence is to each sense average, layer by layer."""

    averages: SenseAverages
    cosines: np.ndarray         # [n_layers, n_senses]; NaN in a layer without a vector for the occurrence
    held_out: bool              # the occurrence is one of the references and left its sense's average
    tagged: int | None          # SemCor's sense for it when it is a reference (an index into senses), else None

    def sense(self, layer: int) -> int | None:
        """The nearest sense in ``layer``, or None when there is no vector or the nearest ones tie."""
        read = int(_nearest(self.cosines[layer][None])[0])
        return None if read < 0 else read


@lru_cache(maxsize=2)
def _lemmas_of_forms(semcor: SemCor) -> dict[str, Counter]:
    """Word form (lower case) -> how often SemCor's annotators gave it each lemma (named entities left out)."""
    table: dict[str, Counter] = {}
    for _, _, tag in semcor.tagged():
        if not tag.pos.startswith("NNP"):
            table.setdefault(tag.word.lower(), Counter())[tag.lemma.lower()] += 1
    return table


def lemma_of(word: str, semcor: SemCor | None = None) -> str | None:
    """The SemCor lemma of ``word`` as written: the one SemCor's annotators gave that form most often ("ran" ->
    "run"), else the most frequent lemma among its simple inflections' stems ("banks" -> "bank"); None when SemCor
    tags none of them."""
    semcor = semcor if semcor is not None else load_semcor()
    w = word.strip().casefold()
    found = _lemmas_of_forms(semcor).get(w)
    if found:
        return found.most_common(1)[0][0]
    index = semcor.lemma_index()
    # A stem the word is an inflection of, never the word's own inflections ("the" must not find "thing").
    candidates = [f for f in word_forms(w) | {w} if f in index and (f == w or w in inflections(f))]
    if not candidates:
        return None
    return max(candidates, key=lambda f: (len(index[f]), f == w, f))


def averages_from(lemma: str, vectors: np.ndarray, labels: Sequence[str | None], spellings: Sequence[str],
                  infos: Sequence[SenseInfo], layer_names: Sequence[str], keys: Sequence[Key]) -> SenseAverages:
    """The sense averages of references already embedded: ``vectors`` [n, n_layers, dim], and for each reference
    its label (a SenseInfo's; "other" and None are not averaged), its spelling and its key."""
    X = np.asarray(vectors, dtype=np.float64)
    if X.ndim != 3 or not len(X) == len(labels) == len(spellings) == len(keys):
        raise ValueError(f"expected vectors [n, layers, dim] with one label, spelling and key each, got {X.shape}, "
                         f"{len(labels)} labels, {len(spellings)} spellings, {len(keys)} keys")
    kept = [i for i in infos if i.label != OTHER]
    code = {info.label: c for c, info in enumerate(kept)}
    rows = [r for r, lab in enumerate(labels) if lab in code and np.isfinite(X[r]).all()]
    if len(kept) < 2 or len({labels[r] for r in rows}) < 2:
        raise ValueError(f"SemCor has fewer than two senses of {lemma!r} with {MIN_SENSE_COUNT} or more occurrences "
                         "this model has vectors for, so there is nothing to choose between")
    codes = np.array([code[labels[r]] for r in rows])
    sums = np.zeros((X.shape[1], len(kept), X.shape[2]))
    for layer in range(X.shape[1]):
        np.add.at(sums[layer], codes, X[rows, layer])
    counts = np.bincount(codes, minlength=len(kept))
    accuracy = np.array([sense_measures.centroid_sense_accuracy(X[rows, layer], codes)
                         for layer in range(X.shape[1])])
    per_spelling: dict[str, Counter] = {}
    for r, c in zip(rows, codes):
        per_spelling.setdefault(spellings[r].casefold(), Counter())[c] += 1
    by_spelling = sum(max(c.values()) for c in per_spelling.values()) / len(rows)
    members = {keys[r]: (int(c), n) for n, (r, c) in enumerate(zip(rows, codes))}
    return SenseAverages(lemma, kept, list(layer_names), sums, counts, accuracy, by_spelling, len(X) - len(rows),
                         members, X[rows].astype(np.float32))


def sense_averages(model: LoadedModel, lemma: str, pos: str | None = None, *, min_sense_count: int = MIN_SENSE_COUNT,
                   limit: int = LIMIT, semcor: SemCor | None = None, senses: Mapping[str, Sense] | None = None,
                   progress: Callable[[int, int], None] | None = None) -> SenseAverages:
    """Embed SemCor's occurrences of ``lemma`` (every part of speech, or ``pos``: n, v, a, r) with ``model`` and
    average each sense with at least ``min_sense_count`` of them. ValueError (what to do) for a lemma SemCor
    does not tag, or one with fewer than two such senses."""
    found, infos = semcor_search(lemma, pos, min_sense_count=min_sense_count, limit=limit, semcor=semcor,
                                 senses=senses)
    ov = occurrence_vectors(model, found, progress=progress, cache=False)
    keys = [(o.sentence, o.word_index) for o in found.occurrences]
    return averages_from(found.target, ov.vectors, found.labels, [o.word for o in found.occurrences], infos,
                         ov.layer_names, keys)


def _cosines(averages: SenseAverages, X: np.ndarray, sums: np.ndarray, keys: Sequence[Key | None],
             own: Callable[[int], np.ndarray]) -> np.ndarray:
    """Cosine of each row of ``X`` [n, dim] to each sense's average (``sums`` [n_senses, dim], in the same layer as
    ``X``): [n, n_senses]. A row that ``keys`` names as one of the references is compared with its own sense's
    average without it (``own(row)``: that reference's vector in this layer); NaN where that leaves none."""
    counts = averages.counts.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):  # a sense without vectors: NaN, never the nearest
        cosines = unit_rows(X) @ unit_rows(sums / counts[:, None]).T
    for i, key in enumerate(keys):
        member = averages.members.get(key) if key is not None else None
        if member is None:
            continue
        sense, row = member
        rest = unit_rows((sums[sense] - own(row))[None])[0]
        cosines[i, sense] = float(unit_rows(X[i][None])[0] @ rest) if counts[sense] > 1 else np.nan
    return cosines


def _nearest(cosines: np.ndarray) -> np.ndarray:
    """The nearest sense of each row of ``cosines`` [n, n_senses]: -1 where no sense has a cosine (no vector) or
    the nearest ones tie."""
    c = np.where(np.isfinite(cosines), cosines, -np.inf)
    order = np.argsort(-c, axis=1, kind="stable")
    rows = np.arange(len(c))
    best, second = c[rows, order[:, 0]], c[rows, order[:, 1]]
    read = order[:, 0].copy()
    read[~np.isfinite(best) | (best - second < TIE)] = -1
    return read


def guess(averages: SenseAverages, vectors: np.ndarray, key: Key | None = None) -> SenseGuess:
    """Cosine of one occurrence's ``vectors`` [n_layers, dim] to each sense average, per layer. When ``key`` names
    one of the references, that reference leaves its sense's average first (as in the accuracy's leave-one-out)."""
    V = np.asarray(vectors, dtype=np.float64)
    if V.shape != (averages.sums.shape[0], averages.sums.shape[2]):
        raise ValueError(f"expected the occurrence's vectors as [layers, dim] = {averages.sums.shape[::2]}, got "
                         f"{V.shape}: were the averages made with another model?")
    cosines = np.stack([_cosines(averages, V[layer][None], averages.sums[layer], [key],
                                 lambda row, layer=layer: averages.vectors[row, layer])[0]
                        for layer in range(len(V))])
    member = averages.members.get(key) if key is not None else None
    return SenseGuess(averages, cosines, member is not None, None if member is None else member[0])


def read_each(averages: SenseAverages, vectors: np.ndarray, layer: int | str, keys: Sequence[Key] | None = None,
              mix: LearnedMix | None = None) -> np.ndarray:
    """The nearest sense of each of many occurrences in one layer (Context Atlas's colouring by sense):
    ``vectors`` [n, n_layers, dim] as :func:`~ctxmodels.analysis.vectors.occurrence_vectors` gives them, ``layer``
    an index or ``MIX`` with ``mix`` (a mix of averages is the average of the mixed vectors, the mix being
    linear). Returns an index into ``averages.senses`` per occurrence, -1 where it has no vector or its nearest
    senses tie. An occurrence that ``keys`` names as one of the references leaves its sense's average first."""
    X = layer_vectors(np.asarray(vectors, dtype=np.float64), layer, mix)
    sums = layer_vectors(averages.sums.transpose(1, 0, 2), layer, mix)  # [n_senses, dim]

    def own(row: int) -> np.ndarray:
        return layer_vectors(averages.vectors[row][None].astype(np.float64), layer, mix)[0]

    return _nearest(_cosines(averages, X, sums, list(keys) if keys else [None] * len(X), own))


def sense_name(info: SenseInfo) -> str:
    """A sense's legend name with its part of speech: "sloping land (…) (noun)"."""
    return f"{info.label} ({POS_NAMES[info.pos]})" if info.pos in POS_NAMES else info.label
