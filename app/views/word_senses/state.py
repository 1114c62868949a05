"""What the Word senses page shows, as one frozen value read from its widgets and the URL: the models, the
projection and its parameters, how the points are coloured, the clusters and the search. The sentences' own
settings are the occurrence source's :class:`app.kit.occurrence_sources.Spec`.

The widgets' ranges live here too: the page gives them to its widgets and to the values a link may set.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ctxmodels.analysis import projections
from ctxmodels.analysis import word_senses as ws
from ctxmodels.viz import senses as senses_view

METHOD_NAMES = projections.DISPLAY
MIX = ws.MIX  # the layer option for ELMo's learned scalar mix
# occurrences from which UMAP and t-SNE run in the background (PCA drawn meanwhile), and the sentences embedded
# for a large view's anisotropy baseline: the same numbers as ctxmodels.viz's measurements
LARGE = senses_view.LARGE
BASELINE_SENTENCES = senses_view.BASELINE_SENTENCES
K_CHOICES = ["auto"] + list(range(2, 9))
NEIGHBOURS_SHOWN = 5  # a clicked point's nearest occurrences, and those a search counts
NEAREST_K = 50  # the nearest SemCor words counted per layer
# The widgets' ranges, for the widgets and for the values a link may give them.
SEED = dict(min_value=0, max_value=10_000)
NEIGHBORS = dict(min_value=2, max_value=100)
MIN_DIST = dict(min_value=0.0, max_value=0.99)
PERPLEXITY = dict(min_value=2.0, max_value=100.0)
COLOURINGS = {"sense": "sense labels", "cluster": "clusters found in each layer",
              "dictionary": "the dictionary sense each layer reads"}
NO_READING = "(no sense nearer than another)"
# The Embedding Projector's tools: labels on a few points, one occurrence and its nearest, an axis from word to word.
MAX_LABELS = 25  # points labelled at most: more is a wall of text
FOCUS_K = dict(min_value=1, max_value=50)
AXIS_CHARS = 40


@dataclass(frozen=True)
class SensesState:
    """The page's settings for one run (hashable: the shared results and background jobs are keyed by it)."""

    models: tuple[str, ...]
    method: str  # the projection drawn: the chosen one, or PCA while UMAP warms up
    dims: int
    seed: int
    joint: bool
    neighbors: int
    min_dist: float
    perplexity: float
    colour: str  # "sense", "cluster" or "dictionary"
    k: int | None  # clusters; None: chosen by the silhouette
    find: tuple[str, ...] = ()  # the words whose sentences are ringed
    lemma: str | None = None  # whose SemCor senses colour the points ("dictionary")
    labels: str = "off"  # which text labels the points: "off", "number" or "words"
    focus: int | None = None  # the occurrence shown with its nearest only (from 0), or None
    focus_k: int = 10  # how many nearest
    axis: tuple[str, str] | None = None  # a custom axis' two words: the panels place the occurrences on it

    @property
    def params(self) -> tuple[tuple[str, float], ...]:
        """The projection's parameters, as the core takes them (and as a cache key)."""
        return (("n_neighbors", self.neighbors), ("min_dist", self.min_dist), ("perplexity", self.perplexity))


def clusters_k(choice: str | int) -> int | None:
    """The clusters widget's choice as k: None for "auto" (chosen by the silhouette)."""
    return None if choice == "auto" else int(choice)


def colourings(has_senses: bool) -> list[str]:
    """How the points can be coloured: by the sense labels only when there are two or more."""
    return (["sense"] if has_senses else []) + ["cluster", "dictionary"]


SOURCE_SHORT = {"preset": "preset sentences", "own": "my own sentences", "semcor": "SemCor", "corpus": "a corpus"}


def summary(values: Mapping, name: Callable[[str], str] = str) -> str:
    """The settings in a few words, written on the folded controls (drawn before the widgets, so read from the
    session's values): the word and where its sentences come from, the models, the projection."""
    source = values.get("source", "preset")
    word = {"preset": values.get("preset"), "own": values.get("word"), "corpus": values.get("corpus_word"),
            "semcor": str(values.get("lemma") or "").rpartition(".")[0]}.get(source) or ""
    models = [name(m) for m in values.get("models") or ()]
    shown = ", ".join(models) if len(models) <= 3 else f"{len(models)} models"
    method = METHOD_NAMES.get(values.get("projection", ""), values.get("projection", ""))
    axis = [str(values.get(k) or "").strip() for k in ("axis_from", "axis_to")]
    view = f"axis {axis[0]} → {axis[1]}" if all(axis) else f"{method}"
    focus = values.get("focus") or 0
    return " · ".join(p for p in (f"“{word}” in {SOURCE_SHORT.get(source, source)}" if word else "", shown,
                                  f"{view}, {values.get('dims', 2)}-D",
                                  f"occurrence {focus} and its nearest" if focus else "") if p)
