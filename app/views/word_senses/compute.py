"""What the Word senses page computes, without Streamlit: the occurrences' vectors in each model, their projections,
clusters and measurements, a search's rings, one occurrence's nearest words and context.

Everything slow is computed once per server and kept in the shared store (``app/kit/shared.py``), keyed by the model's
name, the occurrences' key and the page's state (:class:`SensesState`), never by an object's id: the registry may
drop a model and load it again. Large projections run in the background (``app/kit/background.py``); the caller
draws :attr:`Projected.result` (PCA meanwhile) and reruns when :attr:`Projected.pending` is done.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import asdict, dataclass, field
from functools import partial

import numpy as np
import pandas as pd

from app.kit import background
from app.kit.budget import OverBudget
from app.kit.cache import memo, shared
from app.kit.dictionary import trust
from app.kit.errors import record_warnings
from app.kit.figures import UNLABELLED, highlight
from app.kit.inputs import md
from app.kit.occurrence_sources import Chosen, Spec
from app.kit.registry import get_model, label
from app.kit.scatter import RING_MARGIN_PX, shared_ranges
from app.views.word_senses.state import (
    LARGE,
    MAX_LABELS,
    METHOD_NAMES,
    MIX,
    NEIGHBOURS_SHOWN,
    NO_READING,
    SensesState,
)
from ctxmodels.analysis import clusters, projector, vectors
from ctxmodels.analysis import dictionary_senses as ds
from ctxmodels.analysis import token_search as ts
from ctxmodels.analysis import word_senses as ws
from ctxmodels.loading import CONTEXTUAL, declares
from ctxmodels.viz import senses as senses_view

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class Search:
    """A search's rings: which occurrences' sentences have one of ``words`` (in any form)."""

    marked: np.ndarray  # [n_occ] bool
    words: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return "with " + " / ".join(self.words) if self.words else ""


@dataclass(frozen=True)
class Scene:
    """The occurrences every row and measurement of one run draws, and what is said about each."""

    chosen: Chosen
    search: Search
    labels: list[str | None] = field(default_factory=list)
    hover: list[str] = field(default_factory=list)  # each occurrence's sentence, its word in bold

    @property
    def found(self) -> vectors.OccurrenceSearch:
        return self.chosen.found

    @property
    def n(self) -> int:
        return len(self.found.occurrences)

    @property
    def large(self) -> bool:
        return self.n > LARGE

    @property
    def has_senses(self) -> bool:
        return len(ws.sense_names(self.labels)) >= 2

    @property
    def keys(self) -> list[tuple[str, int]]:
        """Each occurrence as (sentence, word index): how the SemCor readings know an occurrence of their own."""
        return [(o.sentence, o.word_index) for o in self.found.occurrences]


def search(found: vectors.OccurrenceSearch, query: str) -> Search:
    """The occurrences whose sentence has one of the words of ``query`` (ValueError for a query without words)."""
    if not query:
        return Search(np.zeros(len(found.occurrences), dtype=bool))
    words = ws.context_query(query)
    return Search(ws.containing(found.occurrences, words), tuple(words))


def scene(chosen: Chosen, found_search: Search) -> Scene:
    found = chosen.found
    return Scene(chosen, found_search, [o.label for o in found.occurrences],
                 [highlight(o.sentence, o.char_span) for o in found.occurrences])


def lemma_of(spec: Spec, word: str) -> str | None:
    """SemCor's lemma for ``word``: SemCor's occurrences are of the lemma the page names (a multi-word one, such as
    take_place, included), any other word's is found from how it is written."""
    return spec.word if spec.kind == "semcor" else ds.lemma_of(word)


# -- the vectors and what is computed from them ----------------------------------------------------------------


def _vectors_key(model_id: str, chosen: Chosen) -> tuple:
    return ("vectors", model_id, chosen.key)


def ready_vectors(model_id: str, chosen: Chosen) -> tuple[vectors.OccurrenceVectors, list[str]] | None:
    """The occurrences' vectors in the model and the warnings embedding them gave, if already computed."""
    return shared().peek(_vectors_key(model_id, chosen))


def embed(model_id: str, chosen: Chosen, large: bool, progress: Progress | None = None
          ) -> tuple[vectors.OccurrenceVectors, list[str]]:
    """The occurrences' vectors in the model (once per server; every later view reuses them) and the warnings."""
    def compute():
        with record_warnings() as warned:
            ov = vectors.occurrence_vectors(get_model(model_id), chosen.found, progress=progress, cache=not large)
        return ov, warned

    return shared().get(_vectors_key(model_id, chosen), compute)


@dataclass(frozen=True)
class Projected:
    result: ws.LayerProjection
    pending: Future | None = None  # the projection still running in the background (``result`` is PCA meanwhile)
    stopped: str | None = None  # why the projection went over the visitor's budget (``result`` is PCA instead)


def project(model_id: str, sc: Scene, s: SensesState, ov: vectors.OccurrenceVectors, layers: tuple, joint: bool,
            mix: ws.LearnedMix | None, n_dims: int = 2, owner: str = "") -> Projected:
    """The layers' coordinates in ``n_dims`` dimensions by ``s.method``; a large view's UMAP or t-SNE runs in the
    worker process on ``owner``'s budget, with PCA standing in until it is done (a failure, or the budget's
    :class:`~app.kit.budget.OverBudget`, raises when the job is asked for its result)."""
    def run(method: str) -> ws.LayerProjection:
        return ws.project_layers(ov.vectors, layers, method=method, seed=s.seed, joint=joint, mix=mix,
                                 n_components=n_dims, **dict(s.params))

    key = ("projection", model_id, sc.chosen.key, layers, s.seed, s.params, joint, mix, n_dims)
    how = s.method
    if how == "pca" or not sc.large:
        return Projected(shared().get(key + (how,), lambda: run(how)))
    what = f"The {METHOD_NAMES.get(how, how)} of {sc.n:,} occurrences in {label(model_id)}"
    sent, named = ov.vectors, layers
    if MIX not in layers:  # only the layers shown go to the worker (a 12-layer model's 5,000 rows are 200 MB)
        sent, named = ov.vectors[:, list(layers)], tuple(range(len(layers)))
    instead = {"tsne": "Choose fewer occurrences, a lower perplexity, UMAP or PCA.",
               "umap": "Choose fewer occurrences, fewer UMAP neighbours, or PCA."}.get(how)
    job = background.workers().submit(key + (how,), owner, ws.project_layers, sent, named, what=what,
                                      instead=instead or "Choose fewer occurrences, or PCA.", method=how,
                                      seed=s.seed, joint=joint, mix=mix, n_components=n_dims, **dict(s.params))
    if job.done() and not isinstance(job.exception(), OverBudget):
        return Projected(job.result())
    stand_in = shared().get(key + ("pca",), lambda: run("pca"))
    if job.done():
        return Projected(stand_in, stopped=str(job.exception()))
    return Projected(stand_in, job)


def clustered(model_id: str, chosen: Chosen, s: SensesState, ov: vectors.OccurrenceVectors, layer,
              mix: ws.LearnedMix | None) -> clusters.Clustering:
    """The occurrences' clusters in one layer (k-means on the directions), named by their typical context words."""
    key = ("clusters", model_id, chosen.key, layer, s.k, s.seed, mix if layer == MIX else None)

    def compute() -> clusters.Clustering:
        c = clusters.cluster_vectors(ws.layer_vectors(ov.vectors, layer, mix), k=s.k, seed=s.seed)
        c.names = clusters.name_clusters(chosen.found, c.labels)
        return c

    return shared().get(key, compute)


def ringed_together(model_id: str, chosen: Chosen, found_search: Search, X: np.ndarray, layer,
                    mix: ws.LearnedMix | None) -> float | None:
    """How often the ringed occurrences' nearest are ringed too in this layer: once per server for each search
    (5,000 occurrences, half of them ringed, take 0.2 s a panel, and a layer switch reruns the row)."""
    key = ("ringed together", model_id, chosen.key, layer, mix if layer == MIX else None, found_search.words)
    return shared().get(key, lambda: ws.neighbour_share(X, found_search.marked, k=NEIGHBOURS_SHOWN))


def measured(model_id: str, sc: Scene, s: SensesState, ov: vectors.OccurrenceVectors
             ) -> tuple[pd.DataFrame, list[str]]:
    """Per-layer sense, cluster and contextuality measurements of one model on these occurrences."""
    def compute() -> tuple[pd.DataFrame, list[str]]:
        with record_warnings() as warned:  # measured as ctxmodels.viz.layer_measurements measures
            table, notes = senses_view.measurements_table(get_model(model_id), sc.found, label(model_id), k=s.k,
                                                          seed=s.seed, ov=ov)
        return table, notes + warned

    return shared().get(("measurements", model_id, sc.chosen.key, s.k, s.seed), compute)


def dictionary_readings(sc: Scene, av: ds.SenseAverages, ov: vectors.OccurrenceVectors, layer,
                        mix: ws.LearnedMix | None) -> tuple[list[str], list[str]]:
    """The sense names of ``av`` and the one each occurrence reads as in ``layer`` (the nearest sense average)."""
    names_of = [ds.sense_name(info) for info in av.senses]
    read = ds.read_each(av, ov.vectors, layer, keys=sc.keys, mix=mix if layer == MIX else None)
    return names_of, [names_of[r] if r >= 0 else NO_READING for r in read]


# -- the Embedding Projector's tools -------------------------------------------------------------------------------


def focused(X: np.ndarray, s: SensesState) -> list[int]:
    """The occurrence ``s.focus`` and its ``s.focus_k`` nearest in ``X`` (the layer's own vectors), or []."""
    if s.focus is None or not 0 <= s.focus < len(X) or not np.isfinite(X[s.focus]).all():
        return []
    return projector.isolated(X, s.focus, s.focus_k)


def focus_note(sc: Scene, near: list[int], X: np.ndarray, dim: int) -> str:
    """What a focus shows, in Markdown: the star, its nearest, where they were found, how many share its sense, and
    when more occurrences are as near as the last one shown (a context-free layer: every one is)."""
    share = projector.same_label_share(sc.labels, near)
    same = (f"; {round(share * (len(near) - 1))} of them have its sense, *{md(sc.labels[near[0]] or '')}*"
            if share is not None else "")
    note = (f"The star: occurrence {near[0] + 1}; in full colour, its {len(near) - 1} nearest in this layer (cosine "
            f"in all {dim} dimensions of the layer's vectors, not the distance on this picture){same}.")
    tied = projector.tied_with_last(X, near)
    if tied:
        note += (f" {tied} more are exactly as near as the last of them (the same cosine), so which are shown is only "
                 "the order of the sentences.")
    return note


def point_labels(sc: Scene, how: str, shown: list[int]) -> dict[int, str]:
    """Short labels for at most :data:`MAX_LABELS` points: ``shown`` (a focus) if any, else the ringed occurrences,
    else all of them or, beyond that many, an even spread by number. ``how``: "number" or "words" (two words
    either side of the word); "off": none."""
    if how == "off":
        return {}
    if shown:
        picked = shown[:MAX_LABELS]
    elif sc.search.marked.any():
        picked = np.flatnonzero(sc.search.marked)[:MAX_LABELS].tolist()
    else:
        picked = sorted(set(np.linspace(0, sc.n - 1, min(sc.n, MAX_LABELS)).round().astype(int).tolist()))
    if how == "number":
        return {i: str(i + 1) for i in picked}
    return {i: _snippet(sc, i) for i in picked}


def _snippet(sc: Scene, i: int) -> str:
    occ = sc.found.occurrences[i]
    words, j = sc.found.words[occ.sentence_index], occ.word_index
    short = [w if len(w) <= 12 else w[:11] + "…" for w in words[max(0, j - 2): j + 3]]
    return " ".join(short)


def anchor(model_id: str, word: str) -> np.ndarray:
    """The model's vector of ``word`` at every layer, as an axis' end (``projector.word_anchor``), once per server."""
    return shared().get(("anchor", model_id, word.casefold()),
                        lambda: projector.word_anchor(get_model(model_id), word.casefold()))


def on_axis(model_id: str, ov: vectors.OccurrenceVectors, layers: tuple, mix: ws.LearnedMix | None,
            s: SensesState) -> ws.LayerProjection:
    """Each layer's occurrences placed on the axis from ``s.axis[0]`` (0) to ``s.axis[1]`` (1) across and the rest of
    their spread up (``s.dims`` coordinates), as the projection's result is (ValueError: a word without a vector)."""
    ends = [anchor(model_id, w) for w in s.axis]
    coords = []
    for layer in layers:
        a, b = (ws.layer_vectors(e[None], layer, mix)[0] for e in ends)
        coords.append(projector.axis_coords(ws.layer_vectors(ov.vectors, layer, mix), a, b, n_dims=s.dims))
    return ws.LayerProjection(coords, "axis", True)


def axis_ranges(coords: list[np.ndarray]) -> tuple[list[float], ...] | None:
    """Axes shared by a row's panels on a custom axis, wide enough to show both words' ends (0 and 1)."""
    ends = np.zeros((2, coords[0].shape[1]))
    ends[1, 0] = 1.0
    return shared_ranges(coords + [ends], margin_px=RING_MARGIN_PX)


# -- one occurrence ----------------------------------------------------------------------------------------------


def neighbour_table(sc: Scene, X: np.ndarray, index: int, groups: list[str], colour: str) -> pd.DataFrame:
    """The occurrences nearest to occurrence ``index`` in ``X`` [n_occ, dim], as the page lists them."""
    near = ws.nearest_occurrences(X, index, n=NEIGHBOURS_SHOWN)
    table = {"cosine": [round(nb.cosine, 4) for nb in near]}
    if sc.has_senses:
        table["sense"] = [sc.labels[nb.index] or UNLABELLED for nb in near]
    if colour == "cluster":
        table["cluster"] = [groups[nb.index] for nb in near]
    table["sentence"] = [sc.found.occurrences[nb.index].sentence for nb in near]
    return pd.DataFrame(table)


def selected_point(event, n_occ: int) -> int | None:
    """The occurrence a click on a scatter picked (its ``customdata``), or None."""
    try:
        points = event.selection["points"]
    except (AttributeError, KeyError, TypeError):
        return None
    for p in points or []:
        cd = p.get("customdata")
        cd = cd[0] if isinstance(cd, (list, tuple)) and cd else cd
        if isinstance(cd, (int, float)) and 0 <= int(cd) < n_occ:
            return int(cd)
    return None


# which occurrences share one point: the rule ctxmodels.viz.word_senses draws by
same_vector = senses_view.same_vector


def points_frame(sc: Scene, xy: np.ndarray, name: str, layer_name: str, cluster_of: list[str],
                 read_as: list[str]) -> pd.DataFrame:
    """One panel's points as a table (its CSV download)."""
    occurrences = sc.found.occurrences
    return pd.DataFrame({"model": name, "layer": layer_name, "occurrence": range(sc.n),
                         "word": [o.word for o in occurrences], "sense": sc.labels, "cluster": cluster_of,
                         "dictionary_sense": read_as, "sentence": [o.sentence for o in occurrences],
                         **dict(zip("xyz", xy.T))})


@memo(max_entries=128)
def shaped_by(model_id: str, words: tuple[str, ...], index: int) -> dict:
    """How far the occurrence's vector moves, layer by layer, when each other word of its sentence is hidden."""
    return asdict(ws.context_shifts(get_model(model_id), list(words), index))


def token_index_job(model_id: str) -> tuple[Future, Callable[[], tuple[int, int]]]:
    """The SemCor reference words embedded by the model: a background job (kept on disk for later starts), so a
    visitor who leaves does not stop it; and how far it has got, as (done, total)."""
    key = ("token-index", model_id)
    queue = background.jobs()
    job = queue.submit(key, ts.cached_index, get_model(model_id), progress=queue.reporter(key))
    return job, lambda: queue.progress.get(key, (0, ts.REFERENCE_SENTENCES))


def nearest_words(model_id: str, chosen: Chosen, index: ts.TokenIndex, ov: vectors.OccurrenceVectors,
                  occ_index: int, k: int) -> list:
    """The ``k`` nearest reference words to the occurrence, per layer; once per server (a search reads every layer's
    12,000 fp16 vectors: 70 ms for minilm-eltec), kept for the next rerun."""
    occ = chosen.found.occurrences[occ_index]
    sentence_words = " ".join(chosen.found.words[occ.sentence_index])
    return shared().get(("nearest", model_id, chosen.key, occ_index), partial(
        ts.nearest, index, ov.vectors[occ_index], k=k, exclude=sentence_words))


def nearest_table(index: ts.TokenIndex, layers: list, forms) -> tuple[pd.DataFrame, dict[str, str]]:
    """The nearest words' parts of speech per layer, and the ten nearest of each layer as text."""
    kinds = ts.neighbour_kinds(layers, index.layer_names, forms)
    nearest = {name: ", ".join(n.word for n in near[:10]) for name, near in zip(index.layer_names, layers)}
    return kinds, nearest


def in_their_sentences(top: list) -> pd.DataFrame:
    """The ten nearest reference words of one layer, each in its sentence."""
    top = top[:10]
    return pd.DataFrame({"word": [n.word for n in top], "part of speech": [n.pos for n in top],
                         "cosine": [round(n.cosine, 3) for n in top], "in context": [n.in_context() for n in top]})


def dictionary_guess(av: ds.SenseAverages, ov: vectors.OccurrenceVectors, occ_index: int, occ
                     ) -> tuple[ds.SenseGuess, dict]:
    """Which sense of ``av`` the occurrence reads as, layer by layer, and the figure's data for one model."""
    guess = ds.guess(av, ov.vectors[occ_index], key=(occ.sentence, occ.word_index))
    shown = dict(senses=[ds.sense_name(info) for info in av.senses], layer_names=av.layer_names,
                 cosines=guess.cosines, accuracy=av.accuracy, tagged=guess.tagged,
                 nearest=[guess.sense(j) for j in range(len(av.layer_names))])
    return guess, shown


def dictionary_frame(shown: dict[str, dict]) -> pd.DataFrame:
    """The cosines of the dictionary-sense figure as a long table (its CSV download)."""
    return pd.concat([
        pd.DataFrame(g["cosines"].T, index=g["senses"], columns=g["layer_names"]).rename_axis("sense")
        .reset_index().melt("sense", var_name="layer", value_name="cosine").assign(model=name)
        for name, g in shown.items()])


# -- what the page says about them (Markdown) --------------------------------------------------------------------


def emphasised(sentence: str, span: tuple[int, int]) -> str:
    """The sentence as Markdown with the word in bold (``md`` trims the pieces, so the spaces are put back)."""
    before, word, after = sentence[:span[0]], sentence[span[0]:span[1]], sentence[span[1]:]
    return (md(before) + (" " if before[-1:].isspace() else "") + f"**{md(word)}**"
            + (" " if after[:1].isspace() else "") + md(after))


# what the left panel's layer is, as ctxmodels.viz.word_senses names it
context_free_note = senses_view.context_free_note


def is_static(model_id: str) -> bool:
    """Whether the model gives a word one vector whatever its sentence (False where it cannot be loaded: its row
    says why)."""
    try:
        return not declares(get_model(model_id), CONTEXTUAL)
    except Exception:  # noqa: BLE001 - its row says what went wrong
        return False


def sense_verdict(name: str, guess: ds.SenseGuess, spelling: str) -> str:
    """One line, in Markdown: the sense the model's best layer on SemCor reads, and how far to trust it."""
    av = guess.averages
    best = av.best_layer()
    sense = guess.sense(best)
    if sense is None:
        said = (f"**{md(name)}** cannot tell ({trust(av, best)}): every sense's average is as near as the others.")
    elif not av.beats_spelling(best):
        said = (f"**{md(name)}** reads *{md(ds.sense_name(av.senses[sense]))}*, but no better than the spelling "
                f"alone would ({trust(av, best)}): it reads “{md(spelling)}”, not the sentence.")
    else:
        said = f"**{md(name)}** reads it as *{md(ds.sense_name(av.senses[sense]))}* ({trust(av, best)})."
    if guess.tagged is not None:
        said += (f" SemCor's annotators tagged it *{md(ds.sense_name(av.senses[guess.tagged]))}*: "
                 + ("the model is right." if sense == guess.tagged else "the model reads it otherwise."))
    return said


def separation(by_model: dict[str, pd.DataFrame], models: dict, target: str) -> tuple[list[str], list[dict]]:
    """Which models' best layer separates the senses (the rule: ``ws.sense_separation``): Markdown for each that
    does, and for each that does not the fields of the page's ``no_separation`` text."""
    separate, apart = [], []
    for model_id, table in by_model.items():
        name = label(model_id)
        sep = ws.sense_separation(table)
        if sep is None:
            continue
        if sep.separates:
            separate.append(f"**{md(name)}** {sep.accuracy:.0%} ({md(sep.layer)})")
            continue
        model = models[model_id]
        why = (" A static model gives every occurrence of a word the same vector, so its senses cannot separate."
               if not declares(model, CONTEXTUAL) else "")
        where = "in its only layer" if model.n_layers == 1 else f"even in its best layer ({md(sep.layer)})"
        apart.append(dict(name=md(name), word=md(target), where=where, accuracy=f"{sep.accuracy:.0%}",
                          majority=f"{sep.majority:.0%}", bar=f"{sep.bar:.0%}", why=why))
    return separate, apart
