"""Word senses: the occurrences of one word, projected to 2-D per model and layer, coloured by sense or by cluster.

The sentences come from ``app/kit/occurrence_sources.py`` (a preset, the visitor's own, SemCor, a corpus); the analysis
(layers and ELMo's mix, projections, clusters, neighbours, measurements) is ``ctxmodels.analysis``; this page reads
the widgets, calls them and draws the results. Each model's row is a fragment: moving its layer slider or clicking
one of its points reruns that row only. Large views (corpus scale) project with UMAP or t-SNE in the background
(``app/kit/background.py``) and show PCA until the result is there.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import asdict
from functools import partial

import numpy as np
import pandas as pd
import streamlit as st

from app import figures
from app.kit import background, limits, occurrence_sources
from app.kit.dictionary import sense_averages, trust
from app.kit.errors import guard, record_warnings, show_warnings
from app.kit.explanations import explain, page_header
from app.kit.inputs import last_good, listing, md, quoted, remember
from app.kit.plots import plot
from app.kit.presentation import controls, is_presenting
from app.kit.registry import default_models, get_model, label, require_models
from app.kit.shared import shared
from app.kit.url_state import keep, to_url, url_pairs, url_state, url_value
from app.kit.warm_up import usable_projection
from ctxmodels.analysis import clusters, concordance, projections, vectors
from ctxmodels.analysis import dictionary_senses as ds
from ctxmodels.analysis import token_search as ts
from ctxmodels.analysis import word_senses as ws

page_header(
    "Word senses",
    "Every dot is one occurrence of the word in one sentence. A **static** model gives every occurrence the "
    "same vector; **contextual** layers move each occurrence by its sentence, and the senses can pull apart.",
)
explain(
    "Take the sentences from a preset, your own, **SemCor** (every sense-tagged occurrence of a word, each sense "
    "named by its WordNet gloss) or a **corpus** (every occurrence of any word; no labels, so colour by clusters). "
    "For each model, the left panel shows its input layer and the right panel the layer you choose, for the same "
    "occurrences. The static vectors and ELMo's character CNN are context-free: every occurrence of one form gets "
    "the same vector, so they share one point: a ring with their count marks it, and inside it their dots are "
    "spread by a few pixels, grouped by sense, so that every sense shows (the spread is drawing, not distance). "
    "BERT's input layer is not quite context-free: it adds a position (and segment) embedding to the word's, so "
    "the same word at another position in its sentence lands elsewhere, while its sense plays no part yet. With "
    "*shared axes* both are fitted in one projection, so distances compare across the two panels. *3-D* projects "
    "to three axes instead of two (drag to turn the cloud): two senses that overlap in a flat picture can come "
    "apart along the third. Click a point (in 2-D) "
    "to read its sentence and its nearest neighbours, measured with the cosine in the model's full space (not in "
    "the picture). *Ring the occurrences with these words around them* (the TensorBoard Projector's search) rings "
    "every occurrence whose sentence has one of the words you type, in every panel, and says under each panel how "
    "often the ringed occurrences' nearest neighbours in that layer are ringed too, against how many are ringed "
    "at all: a layer that reads the context keeps the sentences about rivers together. *Clusters* are found in "
    "each layer without the labels (k-means on the directions, k chosen by "
    "the silhouette unless you set it) and named by the context words most typical of each. Below, the "
    "measurements per layer: leave-one-out 1-nearest-neighbour sense accuracy against the majority sense, the "
    "silhouette of the sense clusters, how well the clusters agree with the senses (adjusted Rand index), and "
    "Ethayarajh's self-similarity (mean cosine between occurrences) raw and minus the mean cosine of random word "
    "pairs of the layer (anisotropy-adjusted). A model's senses count as separated when the 1-NN accuracy of its "
    "best layer gets at least 30% of the way from the majority sense's share to 1 (0.65 for two equal senses); "
    "the page says which models do and which do not. *Show which words shape one occurrence* hides each other word "
    "of its sentence in turn and maps, layer by layer, how far the occurrence's vector moves (1 - cosine): a BERT "
    "reads `[MASK]` in place of each piece of the hidden word, so the positions hold; ELMo and static vectors, which "
    "have no mask, read the sentence without it. *Find the nearest words in SemCor* compares the occurrence's "
    "vector, layer by layer, with those of the tagged words of 2,000 SemCor sentences (as exBERT searches by "
    "embedding) and counts the 50 nearest by part of speech: where they stop being the same word and start being "
    "words of the same part of speech or meaning, the layer reads the context. *Which dictionary sense is it?* "
    "averages, for each WordNet sense of the word, the vectors of its SemCor occurrences, layer by layer, and reads "
    "the occurrence as the sense whose average is nearest (the ELMo paper's word-sense disambiguation); each "
    "layer is scored by how many of SemCor's own occurrences it reads right, each left out of its sense's average, "
    "against reading the spelling alone (each spelling's most frequent sense). *Colour by the dictionary sense "
    "each layer reads* colours every point by the sense whose SemCor average is nearest to it in that panel's "
    "layer, as Context Atlas does: a corpus has no labels, but each layer then says how it reads them.",
    ["cosine", "self_similarity", "scalar_mix"],
)

ids = require_models()
METHOD_NAMES = projections.DISPLAY
MIX = ws.MIX  # the layer option for ELMo's learned scalar mix
LARGE = 600  # occurrences from which UMAP and t-SNE run in the background, with PCA drawn meanwhile
BASELINE_SENTENCES = 300  # sentences embedded for the anisotropy baseline of a large view
K_CHOICES = ["auto"] + list(range(2, 9))
NEIGHBOURS_SHOWN = 5  # a clicked point's nearest occurrences, and those a search counts
# The widgets' ranges, for the widgets and for the values a link may give them.
SEED = dict(min_value=0, max_value=10_000)
NEIGHBORS = dict(min_value=2, max_value=100)
MIN_DIST = dict(min_value=0.0, max_value=0.99)
PERPLEXITY = dict(min_value=2.0, max_value=100.0)


url_state("models", default_models(ids), options=ids, many=True, names=label)
url_state("projection", "umap", options=list(projections.METHODS))
url_state("seed", 0, kind=int, **SEED)
url_state("neighbors", 15, kind=int, **NEIGHBORS)
url_state("min_dist", 0.1, kind=float, **MIN_DIST)
url_state("perplexity", 30.0, kind=float, **PERPLEXITY)
url_state("joint", True, kind=bool)
url_state("dims", 2, options=[2, 3])
url_state("colour", "sense", options=["sense", "cluster", "dictionary"])
url_state("clusters", "auto", options=K_CHOICES)
url_state("find", "", max_chars=200)

# -- inputs -------------------------------------------------------------------------------------------------
box = controls()  # a collapsed expander in presentation mode: the first screen shows the figures
left, right = box.columns([2, 3], gap="large")
with left:
    spec = occurrence_sources.source_inputs()
with right:
    chosen_models = st.multiselect("Models", ids, key="models", persist_state="session", format_func=label,
                                   help="Each model gets a row of panels; all see the same occurrences.")
    c1, c4, c2, c3 = st.columns([3, 2, 3, 3])
    method = c1.selectbox("Projection", list(projections.METHODS), key="projection",
                          persist_state="session", format_func=METHOD_NAMES.get)
    dims = c4.radio("View", [2, 3], key="dims", persist_state="session", format_func=lambda d: f"{d}-D",
                    horizontal=True,
                    help="3-D: three axes of the projection, as the TensorBoard Projector shows them; drag to turn "
                         "the cloud, scroll to zoom. A click picks a point in 2-D only: in 3-D pick an occurrence "
                         "with the switches below the panels.")
    seed = int(c2.number_input("Seed", **SEED, step=1, key="seed", persist_state="session"))
    joint = c3.checkbox("Shared axes", key="joint",
                        persist_state="session", help="Fit the context-free and the chosen layer in one projection "
                        "(each layer centred first), so both panels use the same axes and scale.")
    with st.expander("Projection parameters"):
        p1, p2, p3 = st.columns(3)
        neighbors = p1.slider("UMAP neighbours", **NEIGHBORS, key="neighbors", persist_state="session")
        min_dist = p2.slider("UMAP min. distance", **MIN_DIST, step=0.01, key="min_dist", persist_state="session")
        perplexity = p3.slider("t-SNE perplexity", **PERPLEXITY, step=1.0, key="perplexity", persist_state="session")
to_url("models", "projection", "dims", "seed", "neighbors", "min_dist", "perplexity", "joint")

# -- the occurrences (found once; every model and measurement below uses them) ---------------------------------
if spec is None:
    st.stop()
chosen = None
with guard("Finding the occurrences"), limits.heavy("Finding the occurrences"):
    chosen = occurrence_sources.find(spec)
    remember("word_senses", chosen)
if chosen is None:  # keep showing what this visitor had until the input is fixed
    chosen = last_good("word_senses")
    if chosen is None:
        st.stop()
    st.info(f"Below: the last occurrences that worked, of {quoted(chosen.target)}.")
found = chosen.found
target = chosen.target
if found.missing:
    st.warning(f"**{md(target)}** does not occur in {len(found.missing)} of the {len(found.sentences)} sentences; "
               f"they are left out:\n{listing(found.missing_sentences)}")
st.caption(chosen.caption)
if not chosen_models:
    st.info("Choose at least one model above.")
    st.stop()

n_occ = len(found.occurrences)
large = n_occ > LARGE
labels = [o.label for o in found.occurrences]
has_senses = len(ws.sense_names(labels)) >= 2

# How to colour the points: by the sense labels when there are two or more, by the clusters of each layer, or by
# the dictionary sense each layer reads (the nearest SemCor sense average).
c4, c5 = box.columns([2, 1])
COLOURINGS = {"sense": "sense labels", "cluster": "clusters found in each layer",
              "dictionary": "the dictionary sense each layer reads"}
colourings = (["sense"] if has_senses else []) + ["cluster", "dictionary"]
if st.session_state.get("colour") not in colourings:  # "sense" kept from occurrences that had labels
    st.session_state["colour"] = colourings[0]
colour_by = c4.radio("Colour by", colourings, key="colour", persist_state="session", horizontal=True,
                     format_func=COLOURINGS.get)
if not has_senses:
    c4.caption("These occurrences have no sense labels (or only one) to colour by.")
to_url("colour")
k_choice = c5.selectbox("Clusters", K_CHOICES, key="clusters",
                        persist_state="session", format_func=lambda k: "k by silhouette" if k == "auto"
                        else f"k = {k}", help="How many clusters: chosen by the silhouette (2 to 8), or set.")
to_url("clusters")
k = None if k_choice == "auto" else int(k_choice)
query = box.text_input(
    "Ring the occurrences with these words around them (optional)", key="find", persist_state="session",
    max_chars=200, placeholder="river, water",
    help="Like the TensorBoard Projector's search: every occurrence whose sentence has one of these words, in any "
         "simple form (river finds rivers, rivers finds river), is ringed in every panel, and under each panel a "
         "figure says how often their nearest occurrences in that layer have one of the words too.").strip()
to_url("find")
marked, marked_name, find_words = np.zeros(n_occ, dtype=bool), "", ()
if query:
    with guard("The search"):
        words = ws.context_query(query)
        marked = ws.containing(found.occurrences, words)
        find_words = tuple(words)
        marked_name = "with " + " / ".join(words)
        named = ", ".join(f"*{md(w)}*" for w in words)
        if marked.any():
            st.caption(f"Ringed: the {int(marked.sum()):,} of {n_occ:,} occurrences ({marked.mean():.0%}) whose "
                       f"sentence has {named} (in any form).")
        else:
            st.caption(f"No occurrence's sentence has {named} (in any form); nothing is ringed.")
sense_colours = figures.sense_colours(labels)
NO_READING = "(no sense nearer than another)"


def lemma_of(word: str) -> str | None:
    """SemCor's lemma for ``word``: SemCor's occurrences are of the lemma the page names (a multi-word one, such as
    take_place, included), any other word's is found from how it is written."""
    return spec.word if spec.kind == "semcor" else ds.lemma_of(word)


reading_lemma = None
if colour_by == "dictionary":
    with guard(f"The dictionary senses of {target}"):
        reading_lemma = lemma_of(target)
        if reading_lemma is None:
            raise ValueError(f"SemCor tags no sense of “{target}” (it tags nouns, verbs, adjectives and adverbs), so "
                             "there is no dictionary sense to colour by; the points are coloured by clusters")
    if reading_lemma is None:
        colour_by = "cluster"
occurrence_keys = [(o.sentence, o.word_index) for o in found.occurrences]
hover = [figures.highlight(o.sentence, o.char_span) for o in found.occurrences]

use_method = usable_projection(method)
params = (("n_neighbors", neighbors), ("min_dist", min_dist), ("perplexity", perplexity))


# -- shared computations (one per server for each key; see app/kit/shared.py) -------------------------------------
def embedded(model_id: str, model) -> vectors.OccurrenceVectors:
    """The occurrences' vectors in ``model``, with a progress bar the first time."""
    key = ("vectors", model_id, id(model), chosen.key)
    ready = shared().peek(key)
    if ready is not None:
        show_warnings(ready[1])
        return ready[0]
    bar = st.progress(0.0, text=f"Embedding {len(found.sentences):,} sentences with {md(label(model_id))} …")

    def progress(done: int, total: int) -> None:
        bar.progress(done / max(total, 1), text=f"Embedding with {md(label(model_id))}: {done:,} of {total:,} "
                     "sentences (once per server; every later view reuses the vectors)")

    def compute():
        with record_warnings() as warned:
            ov = vectors.occurrence_vectors(model, found, progress=progress, cache=not large)
        return ov, warned

    with limits.heavy(f"Embedding with {label(model_id)}"):
        ov, warned = shared().get(key, compute)
    bar.empty()
    show_warnings(warned)
    return ov


def projection(model_id: str, model, ov, layers: tuple, how: str, joint: bool, mix, n_dims: int = 2
               ) -> tuple[ws.LayerProjection, bool]:
    """The layers' coordinates in ``n_dims`` dimensions, and whether they are PCA standing in for a projection
    still running."""
    def run(method: str) -> ws.LayerProjection:
        return ws.project_layers(ov.vectors, layers, method=method, seed=seed, joint=joint, mix=mix,
                                 n_components=n_dims, **dict(params))

    key: Hashable = ("projection", model_id, id(model), chosen.key, layers, seed, params, joint, mix, n_dims)
    if how == "pca" or not large:
        with limits.heavy(f"Projecting {label(model_id)}"):
            return shared().get(key + (how,), lambda: run(how)), False
    job = background.jobs().submit(key + (how,), run, how)
    if job.done():
        return job.result(), False  # a failure raises here, inside the caller's guard
    stand_in = shared().get(key + ("pca",), lambda: run("pca"))
    background.rerun_when_done([job])
    return stand_in, True


def clustered(model_id: str, model, ov, layer, mix) -> clusters.Clustering:
    key = ("clusters", model_id, id(model), chosen.key, layer, k, seed, mix if layer == MIX else None)

    def compute() -> clusters.Clustering:
        c = clusters.cluster_vectors(ws.layer_vectors(ov.vectors, layer, mix), k=k, seed=seed)
        c.names = clusters.name_clusters(found, c.labels)
        return c

    with limits.heavy(f"Clustering {label(model_id)}"):
        return shared().get(key, compute)


def ringed_together(model_id: str, model, X: np.ndarray, layer, mix) -> float | None:
    """How often the ringed occurrences' nearest are ringed too in this layer: once per server for each search
    (5,000 occurrences, half of them ringed, take 0.2 s a panel, and a layer switch reruns the row)."""
    key = ("ringed together", model_id, id(model), chosen.key, layer, mix if layer == MIX else None, find_words)
    with limits.heavy(f"Searching {label(model_id)}"):
        return shared().get(key, lambda: ws.neighbour_share(X, marked, k=NEIGHBOURS_SHOWN))


def measured(model_id: str, model, ov) -> tuple[pd.DataFrame, list[str]]:
    """Per-layer sense, cluster and contextuality measurements of one model on these occurrences."""
    def compute() -> tuple[pd.DataFrame, list[str]]:
        with record_warnings() as warned:
            m = ws.measure_word(model, found, vectors=ov, baseline_sentences=BASELINE_SENTENCES if large else None)
            table, notes = m.table, list(m.notes)
            if has_senses:
                agreement = clusters.cluster_layers(ov.vectors, found, layers=list(range(model.n_layers)), k=k,
                                                    seed=seed, gold=labels, layer_names=model.layer_names)
                table = table.merge(agreement.table[["layer_index", "ari"]], on="layer_index", how="left")
        table.insert(0, "model", label(model_id))
        return table, notes + warned

    key = ("measurements", model_id, id(model), chosen.key, k, seed)
    with limits.heavy(f"Measuring {label(model_id)}"):
        return shared().get(key, compute)


# -- one row of panels per model -----------------------------------------------------------------------------
def neighbour_table(X: np.ndarray, index: int, groups: list[str]) -> pd.DataFrame:
    """The occurrences nearest to occurrence ``index`` in ``X`` [n_occ, dim], as the page lists them."""
    near = ws.nearest_occurrences(X, index, n=NEIGHBOURS_SHOWN)
    table = {"cosine": [round(nb.cosine, 4) for nb in near]}
    if has_senses:
        table["sense"] = [labels[nb.index] or figures.UNLABELLED for nb in near]
    if colour_by == "cluster":
        table["cluster"] = [groups[nb.index] for nb in near]
    table["sentence"] = [found.occurrences[nb.index].sentence for nb in near]
    return pd.DataFrame(table)


def selected_point(event) -> int | None:
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


url_layers = url_pairs("layer") if not any(k.startswith("layer::") for k in st.session_state) else {}


def sync_layers_to_url() -> None:
    """The layer of every shown model, in the link (``layer=2:bert-eltec``)."""
    entries = [f"{st.session_state[f'layer::{m}']}:{label(m)}" for m in chosen_models
               if f"layer::{m}" in st.session_state]
    if entries:
        st.query_params["layer"] = entries
    else:
        st.query_params.pop("layer", None)


def same_vector(X: np.ndarray) -> list[list[int]]:
    """Groups of occurrences whose vectors are identical (a static vector, ELMo's character layer for one form):
    they share one point, which the figure marks with their count and senses."""
    ok = np.isfinite(X).all(axis=1)
    if not ok.any():
        return []
    idx = np.flatnonzero(ok)
    _, inverse, counts = np.unique(X[ok].round(6), axis=0, return_inverse=True, return_counts=True)
    if counts.max() < 2:
        return []
    return [idx[inverse.ravel() == g].tolist() for g in np.flatnonzero(counts > 1)]


def context_free_note(model) -> str:
    """What the left panel's layer is: context-free, except BERT's, which adds position (and segment) embeddings."""
    if model.has_attention:  # a BERT-family encoder: its layer 0 is the input embeddings
        return " (input embeddings: word + position + segment)"
    return " (context-free)"


def emphasised(sentence: str, span: tuple[int, int]) -> str:
    """The sentence as Markdown with the word in bold (``md`` trims the pieces, so the spaces are put back)."""
    before, word, after = sentence[:span[0]], sentence[span[0]:span[1]], sentence[span[1]:]
    return (md(before) + (" " if before[-1:].isspace() else "") + f"**{md(word)}**"
            + (" " if after[:1].isspace() else "") + md(after))


def show_point(index: int, model, X: np.ndarray, layer_name: str, groups: list[str]) -> None:
    occ = found.occurrences[index]
    where = f" — {md(chosen.documents[index])}" if chosen.documents else ""
    sense = f" · sense: *{md(labels[index])}*" if labels[index] else ""
    st.markdown(f"**Occurrence {index + 1}**{where}{sense}")
    st.markdown(emphasised(occ.sentence, occ.char_span))
    info = chosen.senses.get(labels[index] or "")
    if info is not None and info.gloss:
        st.caption(f"WordNet: {md(info.gloss)}")
    st.markdown(f"**Nearest neighbours** ({md(layer_name)}, cosine in {model.dim} dimensions):")
    st.dataframe(neighbour_table(X, index, groups), hide_index=True, width="stretch")


@st.fragment
def model_row(model_id: str) -> None:
    model = None
    with guard(f"Loading {label(model_id)}"):
        model = get_model(model_id)
    if model is None:
        return
    name = label(model_id)
    st.divider()
    head, slider = st.columns([1, 3])
    head.subheader(md(name))
    kind = f"{model.model_type} (transformers)" if model.kind == "transformers" else model.kind
    head.caption(f"{kind}, {model.n_layers} layer(s) × {model.dim}")
    static = model.static_layer
    layer: int | str = static
    # ELMo's learned scalar mix joins the layers when a word-sense probe has been run on this model.
    mix = ws.learned_mix(model) if model.kind == "elmo" else None
    names = {i: n for i, n in enumerate(model.layer_names)} | {MIX: "scalar mix (word-sense probe)"}
    if model.n_layers > 1:
        key = f"layer::{model_id}"
        options = list(range(model.n_layers)) + ([MIX] if mix else [])
        if key not in st.session_state:  # a session's first run: the link's layer for this model, checked
            st.session_state[key] = url_value(key, model.n_layers - 1, options=options, raw=url_layers.get(name),
                                              param="layer", names=names.get)
        layer = slider.select_slider("Layer", options=options, key=key, persist_state="session",
                                     format_func=lambda o, names=names: md(names[o]))
        keep(key, layer)  # kept across page switches, like the other settings
        if layer == MIX:
            slider.caption("v = γ Σ s_j h_j with " + ", ".join(f"s_{j} = {w:.2f}" for j, w in enumerate(mix.weights))
                           + f", γ = {mix.gamma:.2f} (see *ELMo layers*)")
        sync_layers_to_url()
    layers = (static,) if layer == static else (static, layer)
    result = ov = None
    with guard(name), st.spinner(f"Projecting {name} …"):
        ov = embedded(model_id, model)
        result, standing_in = projection(model_id, model, ov, layers, use_method, joint,
                                         mix if layer == MIX else None, dims)
    if result is None or ov is None:
        return
    if standing_in:
        st.info(f"{METHOD_NAMES.get(use_method, use_method)} of {n_occ:,} points is running in the background; "
                "showing PCA until it is ready (the panels switch by themselves).")
    ranges = figures.shared_ranges(result.coords, margin_px=figures.RING_MARGIN_PX) if result.joint else None
    cols = st.columns(2)
    for col, lay, xy in zip(cols, layers, result.coords):
        title = f"{name} · {names[lay]}" + (context_free_note(model) if lay == static else "")
        groups, colours, legend = labels, sense_colours, "sense"
        cluster_of: list[str] = [""] * n_occ
        read_as: list[str] = [""] * n_occ
        if colour_by == "dictionary":
            with guard(f"The dictionary senses in {name} · {names[lay]}"):
                av = sense_averages(model_id, model, reading_lemma)
                names_of = [ds.sense_name(info) for info in av.senses]
                read = ds.read_each(av, ov.vectors, lay, keys=occurrence_keys, mix=mix if lay == MIX else None)
                read_as = [names_of[r] if r >= 0 else NO_READING for r in read]
                groups, colours, legend = read_as, figures.sense_colours(names_of + [NO_READING]), "dictionary sense"
        if colour_by == "cluster":
            c = None
            with guard(f"Clusters of {name} · {names[lay]}"):
                c = clustered(model_id, model, ov, lay, mix)
            if c is not None:
                cluster_of = clusters.cluster_label_names(c)
                groups, colours, legend = cluster_of, figures.sense_colours(cluster_of), "cluster"
                title += f" · {c.k} clusters" if k is None else ""
        X = ws.layer_vectors(ov.vectors, lay, mix)
        fig = figures.sense_scatter(xy, groups, hover, title=title, colours=colours, stacks=same_vector(X),
                                    ranges=ranges, legend_title=legend, marked=np.flatnonzero(marked),
                                    marked_name=marked_name)
        def data(xy=xy, layer_name=names[lay], cluster_of=cluster_of, read_as=read_as) -> pd.DataFrame:
            return pd.DataFrame({"model": name, "layer": layer_name, "occurrence": range(n_occ),
                                 "word": [o.word for o in found.occurrences], "sense": labels, "cluster": cluster_of,
                                 "dictionary_sense": read_as, "sentence": [o.sentence for o in found.occurrences],
                                 **dict(zip("xyz", xy.T))})

        with col:
            event = plot(fig, f"{name}-{names[lay]}-{target}", key=f"scatter::{model_id}::{lay}::{dims}d",
                         data=data, selectable=dims == 2)
            if colour_by == "dictionary" and lay != MIX and any(read_as):
                st.caption(f"Each point coloured by the SemCor sense average nearest to it in this layer: "
                           f"{trust(av, lay)}.")
            if marked.any():
                together = ringed_together(model_id, model, X, lay, mix)
                if together is not None:
                    st.caption(f"Of the ringed occurrences' {NEIGHBOURS_SHOWN} nearest (cosine in {model.dim} "
                               f"dimensions), {together:.0%} are ringed too ({marked.mean():.0%} of all are).")
            picked = selected_point(event) if dims == 2 else None
            if picked is not None:
                show_point(picked, model, X, names[lay], cluster_of)
    if len(layers) == 1:
        cols[1].info("This model has only its context-free layer." if model.n_layers == 1 else
                     "Move the slider to a contextual layer to compare it with the context-free one.")
    shown_method = METHOD_NAMES.get(result.method, result.method)
    notes = "; ".join(result.notes)
    fitted = ", fitted jointly (each layer centred)" if result.joint else ""
    st.caption(f"{shown_method}, seed {seed}{', in 3-D (drag to turn)' if dims == 3 else ''}{fitted}"
               + (f". {md(notes)}" if notes else ""))


models: dict[str, object] = {}
# On a projector the first screen should show a contextual layer: the static model's single point goes last.
def is_static(model_id: str) -> bool:
    try:
        return get_model(model_id).kind == "static"
    except Exception:  # noqa: BLE001 - its row says what went wrong
        return False


ordered = sorted(chosen_models, key=is_static) if is_presenting() else chosen_models
for model_id in ordered:
    model_row(model_id)
    try:
        models[model_id] = get_model(model_id)
    except Exception:  # noqa: BLE001 - the row above said what went wrong
        continue
sync_layers_to_url()

# -- one occurrence: its path through the layers, and the words that shape it ---------------------------------
st.divider()
deep = [m for m in chosen_models if m in models and models[m].n_layers > 1]
left, right = st.columns(2)
show_path = bool(deep) and left.toggle("Draw one occurrence's path through the layers", key="path",
                                       persist_state="session")
show_shape = bool(models) and right.toggle(
    "Show which words shape one occurrence", key="shape", persist_state="session",
    help="Hides each other word of the occurrence's sentence in turn (BERT reads it as [MASK]; ELMo and static "
         "vectors, which have no mask, read the sentence without it) and shows, layer by layer, how far the "
         "occurrence's vector moves: a cosine distance (0: that word does not reach it).")
url_state("near", False, kind=bool)
show_near = bool(models) and left.toggle(
    "Find the nearest words in SemCor", key="near", persist_state="session",
    help=f"Searches about {ts.REFERENCE_SENTENCES:,} SemCor sentences for the tagged words whose vectors sit nearest "
         "to the occurrence's, in every layer (exBERT's search by embedding), and says what part of speech they are.")
to_url("near")
url_state("wsd", False, kind=bool)
show_wsd = bool(models) and right.toggle(
    "Which dictionary sense is it?", key="wsd", persist_state="session",
    help="Compares the occurrence's vector, layer by layer, with the average vector of each WordNet sense of its "
         "word over SemCor's sense-tagged occurrences, and reads it as the nearest (the ELMo paper's word-sense "
         "disambiguation).")
to_url("wsd")
occ_index = 0
if show_path or show_shape or show_near or show_wsd:
    # In the link as its number (from 1), so a shared link shows the occurrence being discussed.
    url_state("occ", 1, kind=int, min_value=1, max_value=n_occ)
    if not 1 <= st.session_state.get("occ", 1) <= n_occ:  # kept from a word with more occurrences
        st.session_state["occ"] = 1
    occ_index = st.selectbox("Occurrence", list(range(1, n_occ + 1)), key="occ", persist_state="session",
                             format_func=lambda i: f"{i}. {found.occurrences[i - 1].sentence[:90]}") - 1
    to_url("occ")


@st.cache_data(max_entries=128, show_spinner=False)
def shaped_by(model_id: str, words: tuple[str, ...], index: int) -> dict:
    return asdict(ws.context_shifts(get_model(model_id), list(words), index))


if show_shape:
    occ = found.occurrences[occ_index]
    words = tuple(found.words[occ.sentence_index])
    shapes = {}
    for model_id in chosen_models:
        if model_id in models:
            with guard(f"Which words shape {occ.word} in {label(model_id)}"), \
                    limits.heavy(f"{label(model_id)}: which words shape it"):
                shapes[model_id] = shaped_by(model_id, words, occ.word_index)
    st.markdown(f"**Which words shape {md(occ.word)}** in “{emphasised(occ.sentence, occ.char_span)}”: each cell "
                "is how far its vector moves in that layer when that word is hidden (cosine distance; darker: "
                "the word matters more). A context-free layer does not move at all.")
    top = max((float(np.nanmax(v["shifts"])) for v in shapes.values() if np.isfinite(v["shifts"]).any()),
              default=0.0)
    cols = st.columns(min(max(len(shapes), 1), 2))
    for i, (model_id, shift) in enumerate(shapes.items()):
        name = label(model_id)
        hidden_note = (" (hidden words left out)" if shift["hidden_as"] == "left out" else
                       f" (hidden words read as {shift['hidden_as']})")
        data = pd.DataFrame(shift["shifts"], index=shift["layer_names"], columns=shift["words"]).rename_axis(
            "layer").reset_index().assign(model=name)
        with cols[i % len(cols)]:
            plot(figures.context_shift_heatmap(shift, title=f"{name}{hidden_note}", z_max=top),
                 f"shaped-{name}-{occ.word}", key=f"shape::{model_id}", data=data)
    if len(shapes) > 1:
        st.caption("The maps share one colour scale, so their shades compare across models.")

NEAREST_K = 50


def token_index(model_id: str, model) -> ts.TokenIndex | None:
    """The SemCor reference words embedded by ``model``, or None while they are being embedded: a background job
    (kept on disk for later starts), so a visitor who leaves does not stop it, with a progress bar until then."""
    key = ("token-index", model_id, id(model))
    queue = background.jobs()
    job = queue.submit(key, ts.cached_index, model, progress=queue.reporter(key))
    if job.done():
        return job.result()  # a failure raises here, inside the caller's guard

    @st.fragment(run_every=1.0)
    def waiting() -> None:
        if job.done():
            st.rerun()
        done, total = queue.progress.get(key, (0, ts.REFERENCE_SENTENCES))
        st.progress(done / max(total, 1), text=f"{md(label(model_id))}: embedding {done:,} of {total:,} SemCor "
                    "sentences to search (once: the result is kept for later visits)")

    waiting()
    return None


if show_near:
    occ = found.occurrences[occ_index]
    sentence_words = " ".join(found.words[occ.sentence_index])
    st.markdown(f"**The nearest words to {md(occ.word)}** in “{emphasised(occ.sentence, occ.char_span)}”, among "
                f"the tagged words of {ts.REFERENCE_SENTENCES:,} SemCor sentences: for each layer, the "
                f"{NEAREST_K} nearest by cosine, coloured by their part of speech (hatched: {md(occ.word)} itself). "
                "A context-free layer finds words that look alike; the contextual layers, words used alike.")
    cols = st.columns(min(max(len(models), 1), 2))
    shown = [m for m in chosen_models if m in models]
    for i, model_id in enumerate(shown):
        model = models[model_id]
        with cols[i % len(cols)], guard(f"The nearest words in {label(model_id)}"):
            index = token_index(model_id, model)
            if index is None:
                continue
            ov = embedded(model_id, model)
            # a search reads every layer's 12,000 fp16 vectors (70 ms for minilm-eltec): kept for the next rerun
            with limits.heavy(f"{label(model_id)}: searching"):
                layers = shared().get(("nearest", model_id, id(model), chosen.key, occ_index), partial(
                    ts.nearest, index, ov.vectors[occ_index], k=NEAREST_K, exclude=sentence_words))
            if not any(layers):
                st.info(f"{md(label(model_id))} has no vector for “{md(occ.word)}” here (a word its vocabulary "
                        "lacks, or one past its length), so there is nothing to search with.")
                continue
            kinds = ts.neighbour_kinds(layers, index.layer_names, ov.forms)
            nearest = {name: ", ".join(n.word for n in near[:10]) for name, near in zip(index.layer_names, layers)}
            plot(figures.neighbour_pos_bars(kinds.to_dict("records"), nearest, NEAREST_K, title=label(model_id)),
                 f"nearest-{label(model_id)}-{occ.word}", key=f"near::{model_id}", data=kinds)
            st.dataframe(pd.DataFrame({"layer": list(nearest), "the 10 nearest": list(nearest.values())}),
                         hide_index=True, width="stretch")
            with st.expander("The 10 nearest in their sentences"):
                pick = st.selectbox("Layer", range(len(layers)), index=len(layers) - 1, key=f"near_layer::{model_id}",
                                    format_func=index.layer_names.__getitem__)
                top = layers[pick]
                st.dataframe(pd.DataFrame({
                    "word": [n.word for n in top[:10]], "part of speech": [n.pos for n in top[:10]],
                    "cosine": [round(n.cosine, 3) for n in top[:10]],
                    "in context": [n.in_context() for n in top[:10]]}),
                    hide_index=True, width="stretch")


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


if show_wsd:
    occ = found.occurrences[occ_index]
    with guard(f"Which dictionary sense {occ.word} is"):
        lemma = lemma_of(occ.word)
        if lemma is None:
            raise ValueError(f"SemCor tags no sense of “{occ.word}” (it tags nouns, verbs, adjectives and adverbs), "
                             "so there is no dictionary sense to compare with; pick a content word")
        st.markdown(f"**Which dictionary sense is {md(occ.word)}** in “{emphasised(occ.sentence, occ.char_span)}”? "
                    f"Each model compares its vector, layer by layer, with the average vector of each WordNet sense "
                    f"of *{md(lemma)}* over SemCor's tagged occurrences, and reads it as the nearest (outlined). "
                    "Under each layer: how many of SemCor's own occurrences that layer reads right, each left out "
                    "of its sense's average. Trust a layer by that, not by how near the nearest sense is; reading "
                    "the spelling alone (each spelling's most frequent sense) is the baseline, and all that a "
                    "context-free layer can do.")
        shown, notes, counted = {}, [], None
        for model_id in (m for m in chosen_models if m in models):
            model = models[model_id]
            with guard(f"The dictionary sense in {label(model_id)}"), \
                    limits.heavy(f"{label(model_id)}: sense averages"):
                av = sense_averages(model_id, model, lemma)
                guess = ds.guess(av, embedded(model_id, model).vectors[occ_index], key=(occ.sentence, occ.word_index))
                notes.append(sense_verdict(label(model_id), guess, occ.word))
                counted = counted or (av, guess)
                shown[label(model_id)] = dict(
                    senses=[ds.sense_name(info) for info in av.senses], layer_names=av.layer_names,
                    cosines=guess.cosines, accuracy=av.accuracy, tagged=guess.tagged,
                    nearest=[guess.sense(j) for j in range(len(av.layer_names))])
        if shown:
            av, guess = counted
            st.markdown("\n".join(f"- {note}" for note in notes))

            def data(shown=shown) -> pd.DataFrame:
                return pd.concat([
                    pd.DataFrame(g["cosines"].T, index=g["senses"], columns=g["layer_names"]).rename_axis("sense")
                    .reset_index().melt("sense", var_name="layer", value_name="cosine").assign(model=name)
                    for name, g in shown.items()])

            plot(figures.dictionary_sense_map(shown), f"dictionary-sense-{lemma}", key="wsd::figure", data=data)
            st.caption(f"{av.n} SemCor occurrences of *{md(lemma)}* in {len(av.senses)} senses with at least "
                       f"{ds.MIN_SENSE_COUNT} each" + (f" ({av.left_out} more, of rarer senses, left out)"
                                                       if av.left_out else "")
                       + ("; this occurrence is one of them, so it was taken out of its sense's average first"
                          if guess.held_out else "") + ".")


if show_path:
    cols = st.columns(min(len(deep), 3))
    for i, model_id in enumerate(deep):
        model = models[model_id]
        with guard(label(model_id)):
            ov = embedded(model_id, model)
            res, standing_in = projection(model_id, model, ov, tuple(range(model.n_layers)), use_method, True, None)
            note = " (PCA while the projection runs)" if standing_in else ""
            fig = figures.sense_scatter(res.coords[-1], labels, hover, title=f"{label(model_id)}: all layers "
                                        f"fitted together (each centred); points at the top layer{note}",
                                        colours=sense_colours)
            path = res.path(occ_index)  # [n_layers, 2]
            figures.add_layer_path(fig, path, model.layer_names)
            with cols[i % len(cols)]:
                data = pd.DataFrame({"layer": model.layer_names, "x": path[:, 0], "y": path[:, 1]})
                plot(fig, f"path-{label(model_id)}-{target}", key=f"path::{model_id}", data=data)

# -- measurements across layers ------------------------------------------------------------------------------
def separation_notes(by_model: dict[str, pd.DataFrame], majority: float) -> None:
    """Say, per model, whether its best layer separates the senses (the rule: ``ws.sense_separation``)."""
    separate = []
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
               if model.kind == "static" else "")
        where = "in its only layer" if model.n_layers == 1 else f"even in its best layer ({md(sep.layer)})"
        st.info(f"**{md(name)}** does not separate the senses of **{md(target)}**: {where}, the nearest other "
                f"occurrence has the same sense for only {sep.accuracy:.0%} of the occurrences, where always "
                f"guessing the most common sense gets {sep.majority:.0%} (the senses count as separated from "
                f"{sep.bar:.0%}).{why}")
    if separate:
        st.caption(f"The senses of **{md(target)}** separate in " + ", ".join(separate) + ": the share of "
                   "occurrences whose nearest other occurrence has the same sense, in each model's best layer "
                   f"(always guessing the most common sense: {majority:.0%}).")


@st.fragment
def layer_figure(all_rows: pd.DataFrame, majority: float | None) -> None:
    """The measurements per layer and model, as one figure of panels. Drawn only when opened (a fragment, so
    opening it reruns this box alone): the verdicts above it say what a first look needs."""
    box = st.expander("Per layer: 1-NN sense accuracy, silhouette, clusters vs senses, self-similarity",
                      key="layers_open", on_change="rerun", icon=":material/show_chart:")
    if not box.open:
        return
    rows = all_rows.rename(columns={"layer": "layer_name", "layer_index": "layer"}).to_dict("records")
    baseline = {"majority sense": majority} if majority is not None else None
    panels = [("knn1_accuracy", "1-NN sense accuracy (leave one out)", "accuracy", baseline),
              ("silhouette", "silhouette of the senses (cosine)", "silhouette", None),
              ("ari", "clusters vs senses (adjusted Rand index)", "agreement (ARI)", None),
              ("self_similarity", "self-similarity (mean cosine between occurrences)", "mean cosine", None),
              ("self_similarity_adjusted", "self-similarity − anisotropy baseline", "mean cosine − baseline", None)]
    with box, guard("The measurements' figure"):
        fig = figures.layer_panels(rows, panels, colours=figures.model_colours([label(m) for m in chosen_models]))
        plot(fig, f"across-layers-{target}", key="lines::across", data=all_rows)


st.subheader("Across the layers")
tables, notes = [], []
by_model: dict[str, pd.DataFrame] = {}
for model_id, model in models.items():
    with guard(f"Measurements for {label(model_id)}"), st.spinner("Measuring the layers …"):
        table, extra = measured(model_id, model, embedded(model_id, model))
        tables.append(table)
        by_model[model_id] = table
        notes += [f"{label(model_id)}: {n}" for n in extra]
if tables:
    all_rows = pd.concat(tables, ignore_index=True)
    majority = ws.majority_baseline(labels)
    if majority is not None:
        separation_notes(by_model, majority)
    layer_figure(all_rows, majority)
    if not has_senses:
        st.info("Sense accuracy, silhouette and the agreement of clusters with senses need sense labels (at least "
                "two senses): use a preset or SemCor, or add `| label` to your sentences.")
    for n in dict.fromkeys(notes):
        st.caption(md(n))


# -- the occurrences as a concordance ------------------------------------------------------------------------
@st.fragment
def concordance_view() -> None:
    # Built only when opened: the table is most of what a first visit's browser draws below the figures.
    counted = f"the {n_occ:,} occurrences" if n_occ != 1 else "the one occurrence"
    box = st.expander(f"Concordance: {counted} in context", key="kwic_open", on_change="rerun",
                      icon=":material/format_list_bulleted:")
    if not box.open:
        return
    with box:
        concordance_table()


def concordance_table() -> None:
    st.caption("Every occurrence in its context (keyword in context), grouped by sense or by the clusters of one "
               "model's layer. Filter the groups, sort by a column, or download the table.")
    c1, c2, c3 = st.columns(3)
    by = c1.radio("Group by", ["sense", "cluster"] if has_senses else ["cluster"], key="kwic_by",
                  persist_state="session", horizontal=True)
    groups: list[str | None] = list(labels)
    if by == "cluster":
        model_id = c2.selectbox("Clusters of", list(models), key="kwic_model", format_func=label)
        if model_id is None:
            return
        model = models[model_id]
        names = list(model.layer_names)
        lay = c3.selectbox("Layer", list(range(model.n_layers)), index=model.n_layers - 1, key="kwic_layer",
                           format_func=lambda i: names[i])
        c = None
        with guard("Clusters"):
            c = clustered(model_id, model, embedded(model_id, model), lay, None)
        if c is None:
            return
        groups = clusters.cluster_label_names(c)
    shown = sorted({g or figures.UNLABELLED for g in groups})
    picked = st.multiselect("Show", shown, default=shown, key=f"kwic_show::{by}")
    extra: dict[str, list] = {"document": chosen.documents} if chosen.documents else {}
    only_ringed = False
    if marked.any():  # a search is on: which rows it rings, and a filter for them
        extra["ringed"] = marked.tolist()
        only_ringed = st.checkbox(f"Only the ringed occurrences ({marked_name})", key="kwic_ringed")
    table = concordance.concordance(found, labels=groups, extra=extra or None)
    table = table[[(g or figures.UNLABELLED) in picked and (ringed or not only_ringed)
                   for g, ringed in zip(groups, marked)]]
    st.dataframe(table, hide_index=True, width="stretch", height=360)
    st.download_button("Concordance (CSV)", data=lambda: concordance.csv_bytes(table),
                       file_name=f"concordance-{target}.csv", mime="text/csv", on_click="ignore",
                       icon=":material/download:", type="tertiary", key="kwic_csv")


concordance_view()
