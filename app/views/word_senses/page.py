"""Word senses: the occurrences of one word, projected to 2-D per model and layer, coloured by sense or by cluster.

The page reads top to bottom as state, compute, figures: the widgets and the URL give a :class:`SensesState` (and
the occurrence source's spec, ``app/kit/occurrence_sources.py``); ``compute.py`` turns them into vectors,
projections, clusters and measurements (``ctxmodels.analysis`` does the analysis); ``figures.py`` and the shared
scatter (``app/kit/scatter.py``) draw them. Each model's row is a fragment: moving its layer slider or clicking one
of its points reruns that row only. Large views (corpus scale) project with UMAP or t-SNE in the background and show
PCA until the result is there.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from app.kit import background, clicked, figures, limits, occurrence_sources, projector_tools, scatter
from app.kit.budget import Stopwatch
from app.kit.dictionary import sense_averages, trust
from app.kit.errors import guard, show_warnings
from app.kit.explanations import explain, page_header
from app.kit.inputs import last_good, listing, md, quoted, remember
from app.kit.layer_links import LayerLinks
from app.kit.plots import plot
from app.kit.presentation import controls
from app.kit.registry import default_models, get_model, label, require_models
from app.kit.text import page_text
from app.kit.url_state import to_url, url_state
from app.kit.warm_up import usable_projection
from app.views.word_senses import compute, state
from app.views.word_senses import figures as page_figures
from app.views.word_senses.state import MIX, NO_READING, SensesState
from ctxmodels.analysis import clusters, concordance, projections
from ctxmodels.analysis import dictionary_senses as ds
from ctxmodels.analysis import token_search as ts
from ctxmodels.analysis import word_senses as ws

TEXT = page_text(__file__)
page_header("Word senses", TEXT["intro"])
explain(TEXT["explain"], ["cosine", "self_similarity", "scalar_mix"])

ids = require_models()
url_state("models", default_models(ids), options=ids, many=True, names=label)
url_state("projection", "umap", options=list(projections.METHODS))
url_state("seed", 0, kind=int, **state.SEED)
url_state("neighbors", 15, kind=int, **state.NEIGHBORS)
url_state("min_dist", 0.1, kind=float, **state.MIN_DIST)
url_state("perplexity", 30.0, kind=float, **state.PERPLEXITY)
url_state("joint", True, kind=bool)
url_state("dims", 2, options=[2, 3])
url_state("colour", "sense", options=["sense", "cluster", "dictionary"])
url_state("clusters", "auto", options=state.K_CHOICES)
url_state("find", "", max_chars=200)

# -- state: the inputs --------------------------------------------------------------------------------------------
occurrence_sources.register_state(occurrence_sources.preset_words())  # read before the summary
box = controls(summary=state.summary(st.session_state, label))  # folded: the figures come first
left, right = box.columns([2, 3], gap="large")
with left:
    spec = occurrence_sources.source_inputs()
with right:
    chosen_models = st.multiselect("Models", ids, key="models", persist_state="session", format_func=label,
                                   help="Each model gets a row of panels; all see the same occurrences.")
    c1, c4, c2, c3 = st.columns([3, 2, 3, 3])
    method = c1.selectbox("Projection", list(projections.METHODS), key="projection",
                          persist_state="session", format_func=state.METHOD_NAMES.get)
    dims = c4.radio("View", [2, 3], key="dims", persist_state="session", format_func=lambda d: f"{d}-D",
                    horizontal=True,
                    help="3-D: three axes of the projection, as the TensorBoard Projector shows them; drag to turn "
                         "the cloud, scroll to zoom. A click picks a point in 2-D only: in 3-D pick an occurrence "
                         "with the switches below the panels.")
    seed = int(c2.number_input("Seed", **state.SEED, step=1, key="seed", persist_state="session"))
    joint = c3.checkbox("Shared axes", key="joint",
                        persist_state="session", help="Fit the context-free and the chosen layer in one projection "
                        "(each layer centred first), so both panels use the same axes and scale.")
    with st.expander("Projection parameters"):
        p1, p2, p3 = st.columns(3)
        neighbors = p1.slider("UMAP neighbours", **state.NEIGHBORS, key="neighbors", persist_state="session")
        min_dist = p2.slider("UMAP min. distance", **state.MIN_DIST, step=0.01, key="min_dist",
                             persist_state="session")
        perplexity = p3.slider("t-SNE perplexity", **state.PERPLEXITY, step=1.0, key="perplexity",
                               persist_state="session")
to_url("models", "projection", "dims", "seed", "neighbors", "min_dist", "perplexity", "joint")

# The occurrences, found once: every model and measurement below uses them.
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
found, target = chosen.found, chosen.target
if found.missing:
    st.warning(f"**{md(target)}** does not occur in {len(found.missing)} of the {len(found.sentences)} sentences; "
               f"they are left out:\n{listing(found.missing_sentences)}")
st.caption(chosen.caption)
if not chosen_models:
    st.info("Choose at least one model above.")
    st.stop()

n_occ = len(found.occurrences)
has_senses = len(ws.sense_names([o.label for o in found.occurrences])) >= 2
# How to colour the points: by the sense labels when there are two or more, by the clusters of each layer, or by
# the dictionary sense each layer reads (the nearest SemCor sense average).
c4, c5 = box.columns([2, 1])
allowed = state.colourings(has_senses)
if st.session_state.get("colour") not in allowed:  # "sense" kept from occurrences that had labels
    st.session_state["colour"] = allowed[0]
colour_by = c4.radio("Colour by", allowed, key="colour", persist_state="session", horizontal=True,
                     format_func=state.COLOURINGS.get)
if not has_senses:
    c4.caption("These occurrences have no sense labels (or only one) to colour by.")
to_url("colour")
k_choice = c5.selectbox("Clusters", state.K_CHOICES, key="clusters",
                        persist_state="session", format_func=lambda k: "k by silhouette" if k == "auto"
                        else f"k = {k}", help="How many clusters: chosen by the silhouette (2 to 8), or set.")
to_url("clusters")
query = box.text_input(
    "Ring the occurrences with these words around them (optional)", key="find", persist_state="session",
    max_chars=200, placeholder="river, water",
    help="Like the TensorBoard Projector's search: every occurrence whose sentence has one of these words, in any "
         "simple form (river finds rivers, rivers finds river), is ringed in every panel, and under each panel a "
         "figure says how often their nearest occurrences in that layer have one of the words too.").strip()
to_url("find")
found_search = compute.search(found, "")
if query:
    with guard("The search"):
        found_search = compute.search(found, query)
        marked = found_search.marked
        named = ", ".join(f"*{md(w)}*" for w in found_search.words)
        if marked.any():
            st.caption(f"Ringed: the {int(marked.sum()):,} of {n_occ:,} occurrences ({marked.mean():.0%}) whose "
                       f"sentence has {named} (in any form).")
        else:
            st.caption(f"No occurrence's sentence has {named} (in any form); nothing is ringed.")
tools = projector_tools.tool_inputs(box, [o.sentence for o in found.occurrences], state.FOCUS_K, state.AXIS_CHARS,
                                   state.MAX_LABELS)
sc = compute.scene(chosen, found_search)
marked = found_search.marked
labels = sc.labels
sense_colours = figures.sense_colours(labels)

reading_lemma = None
if colour_by == "dictionary":
    with guard(f"The dictionary senses of {target}"):
        reading_lemma = compute.lemma_of(spec, target)
        if reading_lemma is None:
            raise ValueError(f"SemCor tags no sense of “{target}” (it tags nouns, verbs, adjectives and adverbs), so "
                             "there is no dictionary sense to colour by; the points are coloured by clusters")
    if reading_lemma is None:
        colour_by = "cluster"
s = SensesState(models=tuple(chosen_models), method=usable_projection(method), dims=dims, seed=seed, joint=joint,
                neighbors=neighbors, min_dist=min_dist, perplexity=perplexity, colour=colour_by,
                k=state.clusters_k(k_choice), find=found_search.words, lemma=reading_lemma, labels=tools.labels,
                focus=tools.focus, focus_k=tools.focus_k, axis=tools.axis)


# -- compute, with what the visitor sees while it runs -----------------------------------------------------------
def embedded(model_id: str, sc: compute.Scene):
    """The occurrences' vectors in the model, with a progress bar the first time."""
    chosen = sc.chosen
    ready = compute.ready_vectors(model_id, chosen)
    if ready is not None:
        show_warnings(ready[1])
        return ready[0]
    bar = st.progress(0.0, text=f"Embedding {len(sc.found.sentences):,} sentences with {md(label(model_id))} …")
    clock = Stopwatch(f"Embedding {len(sc.found.sentences):,} sentences")  # the warning names the model first

    def progress(done: int, total: int) -> None:
        clock.check(done, total)  # over budget: stop (the bar below is where a visitor who left stops the run)
        bar.progress(done / max(total, 1), text=f"Embedding with {md(label(model_id))}: {done:,} of {total:,} "
                     "sentences (once per server; every later view reuses the vectors)")

    try:  # over the budget once: not tried again for this visitor (the other sections of the row skip it)
        with limits.heavy(f"Embedding with {label(model_id)}"), limits.within_budget(("embed", model_id, chosen.key)):
            ov, warned = compute.embed(model_id, chosen, sc.large, progress)
    finally:
        bar.empty()
    show_warnings(warned)
    return ov


def projection(model_id: str, sc: compute.Scene, s: SensesState, ov, layers: tuple, joint: bool, mix,
               n_dims: int = 2) -> tuple[ws.LayerProjection, bool]:
    """The layers' coordinates, and whether they are PCA standing in for a projection still running."""
    with limits.heavy(f"Projecting {label(model_id)}"):
        done = compute.project(model_id, sc, s, ov, layers, joint, mix, n_dims, owner=background.visitor())
    if done.stopped:
        st.warning(f"{md(done.stopped)} Showing PCA instead.")
    if done.pending is not None:
        background.rerun_when_done([done.pending])
    return done.result, done.pending is not None


def clustered(model_id: str, sc: compute.Scene, s: SensesState, ov, layer, mix) -> clusters.Clustering:
    with limits.heavy(f"Clustering {label(model_id)}"):
        return compute.clustered(model_id, sc.chosen, s, ov, layer, mix)


layer_links = LayerLinks(chosen_models, label)


def show_point(index: int, model, X: np.ndarray, layer_name: str, groups: list[str], s: SensesState,
               sc: compute.Scene, panel_key: str) -> None:
    occ, chosen, labels = sc.found.occurrences[index], sc.chosen, sc.labels
    where = f" — {md(chosen.documents[index])}" if chosen.documents else ""
    sense = f" · sense: *{md(labels[index])}*" if labels[index] else ""
    st.markdown(f"**Occurrence {index + 1}**{where}{sense}")
    st.markdown(compute.emphasised(occ.sentence, occ.char_span))
    info = chosen.senses.get(labels[index] or "")
    if info is not None and info.gloss:
        st.caption(f"WordNet: {md(info.gloss)}")
    st.markdown(f"**Nearest neighbours** ({md(layer_name)}, cosine in {model.dim} dimensions):")
    st.table(compute.neighbour_table(sc, X, index, groups, s.colour), hide_index=True)  # whole sentences, wrapped
    projector_tools.point_buttons(index, panel_key)


# -- figures: one row of panels per model -------------------------------------------------------------------------
def panel(col, model_id: str, model, ov, lay, layer_name: str, xy: np.ndarray, title: str, mix, ranges,
          s: SensesState, sc: compute.Scene) -> None:
    """One panel of a row, in ``col``: the scatter of one layer, its captions, and the occurrence a click picks (what
    goes wrong computing its colours is said under the row)."""
    name, marked = label(model_id), sc.search.marked
    groups, colours, legend = sc.labels, figures.sense_colours(sc.labels), "sense"
    cluster_of: list[str] = [""] * sc.n
    read_as: list[str] = [""] * sc.n
    av = None
    if s.colour == "dictionary":
        with guard(f"The dictionary senses in {name} · {layer_name}"):
            av = sense_averages(model_id, s.lemma)
            names_of, read_as = compute.dictionary_readings(sc, av, ov, lay, mix)
            groups, colours, legend = read_as, figures.sense_colours(names_of + [NO_READING]), "dictionary sense"
    if s.colour == "cluster":
        c = None
        with guard(f"Clusters of {name} · {layer_name}"):
            c = clustered(model_id, sc, s, ov, lay, mix)
        if c is not None:
            cluster_of, legend = clusters.display_names(c, [o.word for o in sc.found.occurrences])  # or spellings
            groups, colours = cluster_of, figures.sense_colours(cluster_of)
            title += f" · {c.k} {legend}s" if s.k is None or legend == "spelling" else ""
    X = ws.layer_vectors(ov.vectors, lay, mix)
    key = f"scatter::{model_id}::{lay}::{s.dims}d"
    point = None  # the clicked point, read before drawing so that it is ringed
    if s.dims == 2:
        point = clicked.linked_point(compute.selected_point(clicked.clicked_in(key), sc.n), sc.n, f"{name}:{lay}")
    near = compute.focused(X, s)
    fig = scatter.sense_scatter(xy, groups, sc.hover, title=title, colours=colours, stacks=compute.same_vector(X),
                                ranges=ranges, legend_title=legend, marked=np.flatnonzero(marked),
                                marked_name=sc.search.name, point_labels=compute.point_labels(sc, s.labels, near),
                                focus=near, focus_name=f"occurrence {near[0] + 1}" if near else "", picked=point)
    if s.axis:
        scatter.word_axis(fig, *s.axis)

    def data(xy=xy, cluster_of=cluster_of, read_as=read_as) -> pd.DataFrame:
        return compute.points_frame(sc, xy, name, layer_name, cluster_of, read_as)

    with col:
        plot(fig, f"{name}-{layer_name}-{sc.chosen.target}", key=key, data=data, selectable=s.dims == 2)
        if near:
            st.caption(compute.focus_note(sc, near, X, model.dim))
        if s.colour == "dictionary" and lay != MIX and any(read_as):
            st.caption(f"Each point coloured by the SemCor sense average nearest to it in this layer: "
                       f"{trust(av, lay)}.")
        if marked.any():
            with limits.heavy(f"Searching {name}"):
                together = compute.ringed_together(model_id, sc.chosen, sc.search, X, lay, mix)
            if together is not None:
                st.caption(f"Of the ringed occurrences' {state.NEIGHBOURS_SHOWN} nearest (cosine in {model.dim} "
                           f"dimensions), {together:.0%} are ringed too ({marked.mean():.0%} of all are).")
        if point is not None:
            show_point(point, model, X, layer_name, cluster_of, s, sc, key)


@st.fragment
def model_row(model_id: str, s: SensesState, sc: compute.Scene) -> None:
    model = None
    with guard(f"Loading {label(model_id)}"):
        model = get_model(model_id)
    if model is None:
        return
    name = label(model_id)
    st.divider()
    head, slider = st.columns([2, 3])  # at 900 px a quarter of the row broke a model's name in two
    head.subheader(md(name))
    kind = f"{model.model_type} (transformers)" if model.kind == "transformers" else model.kind
    head.caption(f"{kind}, {model.n_layers} layer(s) × {model.dim}")
    static = model.static_layer
    # ELMo's learned scalar mix joins the layers when a word-sense probe has been run on this model.
    mix = ws.learned_mix(model) if model.kind == "elmo" else None
    names = {i: n for i, n in enumerate(model.layer_names)} | {MIX: "scalar mix (word-sense probe)"}
    layer = layer_links.slider(model_id, model, slider, names, mix) if model.n_layers > 1 else static
    layers = (static,) if layer == static else (static, layer)
    result = ov = None
    with guard(name), st.spinner(f"Projecting {name} …"):
        ov = embedded(model_id, sc)
        result, standing_in = projector_tools.on_axis(compute.on_axis, model_id, ov, layers, mix, s), False
        if result is None:
            result, standing_in = projection(model_id, sc, s, ov, layers, s.joint, mix if layer == MIX else None,
                                             s.dims)
    if result is None or ov is None:
        return
    if standing_in:
        st.info(f"{state.METHOD_NAMES.get(s.method, s.method)} of {sc.n:,} points is running in the background; "
                "showing PCA until it is ready (the panels switch by themselves).")
    ranges = (compute.axis_ranges(result.coords) if result.method == "axis" else
              scatter.shared_ranges(result.coords, margin_px=scatter.RING_MARGIN_PX) if result.joint else None)
    cols = st.columns(2)
    for col, lay, xy in zip(cols, layers, result.coords):
        title = f"{name} · {names[lay]}" + (compute.context_free_note(model) if lay == static else "")
        panel(col, model_id, model, ov, lay, names[lay], xy, title, mix, ranges, s, sc)
    if len(layers) == 1:
        cols[1].info("This model has only its context-free layer." if model.n_layers == 1 else
                     "Move the slider to a contextual layer to compare it with the context-free one.")
    if result.method == "axis":
        st.caption(TEXT["axis"].format(a=md(s.axis[0]), b=md(s.axis[1]), name=md(name)))
        return
    shown_method = state.METHOD_NAMES.get(result.method, result.method)
    notes = "; ".join(result.notes)
    fitted = ", fitted jointly (each layer centred)" if result.joint else ""
    st.caption(f"{shown_method}, seed {s.seed}{', in 3-D (drag to turn)' if s.dims == 3 else ''}{fitted}"
               + (f". {md(notes)}" if notes else ""))


models: dict[str, object] = {}
for model_id in sorted(chosen_models, key=compute.is_static):  # the first screen shows a contextual layer
    model_row(model_id, s, sc)
    try:
        models[model_id] = get_model(model_id)
    except Exception:  # noqa: BLE001 - the row above said what went wrong
        continue
layer_links.sync()

# -- one occurrence: its path through the layers, and the words that shape it -------------------------------------
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
occ = found.occurrences[occ_index]
shown_models = [m for m in chosen_models if m in models]

if show_shape:
    words = tuple(found.words[occ.sentence_index])
    shapes = {}
    for model_id in shown_models:
        with guard(f"Which words shape {occ.word} in {label(model_id)}"), \
                limits.heavy(f"{label(model_id)}: which words shape it"):
            shapes[model_id] = compute.shaped_by(model_id, words, occ.word_index)
    st.markdown(TEXT["shape"].format(word=md(occ.word), sentence=compute.emphasised(occ.sentence, occ.char_span)))
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
            plot(page_figures.context_shift_heatmap(shift, title=f"{name}{hidden_note}", z_max=top),
                 f"shaped-{name}-{occ.word}", key=f"shape::{model_id}", data=data)
    if len(shapes) > 1:
        st.caption("The maps share one colour scale, so their shades compare across models.")


def token_index(model_id: str) -> ts.TokenIndex | None:
    """The SemCor reference words embedded by the model, or None while a background job embeds them (a progress bar
    until then)."""
    job, progress = compute.token_index_job(model_id)
    if job.done():
        return job.result()  # a failure raises here, inside the caller's guard

    @st.fragment(run_every=1.0)
    def waiting() -> None:
        if job.done():
            st.rerun()
        done, total = progress()
        st.progress(done / max(total, 1), text=f"{md(label(model_id))}: embedding {done:,} of {total:,} SemCor "
                    "sentences to search (once: the result is kept for later visits)")

    waiting()
    return None


if show_near:
    st.markdown(TEXT["near"].format(word=md(occ.word), sentence=compute.emphasised(occ.sentence, occ.char_span),
                                    n_sentences=f"{ts.REFERENCE_SENTENCES:,}", k=state.NEAREST_K))
    cols = st.columns(min(max(len(models), 1), 2))
    for i, model_id in enumerate(shown_models):
        with cols[i % len(cols)], guard(f"The nearest words in {label(model_id)}"):
            index = token_index(model_id)
            if index is None:
                continue
            ov = embedded(model_id, sc)
            with limits.heavy(f"{label(model_id)}: searching"):
                layers = compute.nearest_words(model_id, chosen, index, ov, occ_index, state.NEAREST_K)
            if not any(layers):
                st.info(f"{md(label(model_id))} has no vector for “{md(occ.word)}” here (a word its vocabulary "
                        "lacks, or one past its length), so there is nothing to search with.")
                continue
            kinds, nearest = compute.nearest_table(index, layers, ov.forms)
            fig = page_figures.neighbour_pos_bars(kinds.to_dict("records"), nearest, state.NEAREST_K,
                                                  title=label(model_id))
            plot(fig, f"nearest-{label(model_id)}-{occ.word}", key=f"near::{model_id}", data=kinds)
            st.dataframe(pd.DataFrame({"layer": list(nearest), "the 10 nearest": list(nearest.values())}),
                         hide_index=True, width="stretch")
            with st.expander("The 10 nearest in their sentences"):
                pick = st.selectbox("Layer", range(len(layers)), index=len(layers) - 1, key=f"near_layer::{model_id}",
                                    format_func=index.layer_names.__getitem__)
                st.dataframe(compute.in_their_sentences(layers[pick]), hide_index=True, width="stretch")


if show_wsd:
    with guard(f"Which dictionary sense {occ.word} is"):
        lemma = compute.lemma_of(spec, occ.word)
        if lemma is None:
            raise ValueError(f"SemCor tags no sense of “{occ.word}” (it tags nouns, verbs, adjectives and adverbs), "
                             "so there is no dictionary sense to compare with; pick a content word")
        st.markdown(TEXT["wsd"].format(word=md(occ.word), sentence=compute.emphasised(occ.sentence, occ.char_span),
                                       lemma=md(lemma)))
        shown, notes, counted = {}, [], None
        for model_id in shown_models:
            with guard(f"The dictionary sense in {label(model_id)}"), \
                    limits.heavy(f"{label(model_id)}: sense averages"):
                av = sense_averages(model_id, lemma)
                guess, drawn = compute.dictionary_guess(av, embedded(model_id, sc), occ_index, occ)
                notes.append(compute.sense_verdict(label(model_id), guess, occ.word))
                counted = counted or (av, guess)
                shown[label(model_id)] = drawn
        if shown:
            av, guess = counted
            st.markdown("\n".join(f"- {note}" for note in notes))
            plot(page_figures.dictionary_sense_map(shown), f"dictionary-sense-{lemma}", key="wsd::figure",
                 data=lambda shown=shown: compute.dictionary_frame(shown))
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
            ov = embedded(model_id, sc)
            res, standing_in = projection(model_id, sc, s, ov, tuple(range(model.n_layers)), True, None)
            note = " (PCA while the projection runs)" if standing_in else ""
            fig = scatter.sense_scatter(res.coords[-1], labels, sc.hover, title=f"{label(model_id)}: all layers "
                                        f"fitted together (each centred); points at the top layer{note}",
                                        colours=sense_colours)
            path = res.path(occ_index)  # [n_layers, 2]
            page_figures.add_layer_path(fig, path, model.layer_names)
            with cols[i % len(cols)]:
                data = pd.DataFrame({"layer": model.layer_names, "x": path[:, 0], "y": path[:, 1]})
                plot(fig, f"path-{label(model_id)}-{target}", key=f"path::{model_id}", data=data)


# -- measurements across layers -----------------------------------------------------------------------------------
def separation_notes(by_model: dict[str, pd.DataFrame], majority: float) -> None:
    """Say, per model, whether its best layer separates the senses (the rule: ``ws.sense_separation``)."""
    separate, apart = compute.separation(by_model, models, target)
    for fields in apart:
        st.info(TEXT["no_separation"].format(**fields))
    if separate:
        st.caption(TEXT["separation"].format(word=md(target), models=", ".join(separate), majority=f"{majority:.0%}"))


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
for model_id in models:
    with guard(f"Measurements for {label(model_id)}"), st.spinner("Measuring the layers …"):
        ov = embedded(model_id, sc)
        with limits.heavy(f"Measuring {label(model_id)}"):
            table, extra = compute.measured(model_id, sc, s, ov)
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
        st.info(TEXT["no_senses"])
    for n in dict.fromkeys(notes):
        st.caption(md(n))


# -- the occurrences as a concordance -----------------------------------------------------------------------------
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
    st.caption(TEXT["concordance"])
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
            c = clustered(model_id, sc, s, embedded(model_id, sc), lay, None)
        if c is None:
            return
        groups = clusters.cluster_label_names(c)
    shown = sorted({g or figures.UNLABELLED for g in groups})
    picked = st.multiselect("Show", shown, default=shown, key=f"kwic_show::{by}")
    extra: dict[str, list] = {"document": chosen.documents} if chosen.documents else {}
    only_ringed = False
    if marked.any():  # a search is on: which rows it rings, and a filter for them
        extra["ringed"] = marked.tolist()
        only_ringed = st.checkbox(f"Only the ringed occurrences ({found_search.name})", key="kwic_ringed")
    table = concordance.concordance(found, labels=groups, extra=extra or None, first=1)  # as the Occurrence list
    table = table[[(g or figures.UNLABELLED) in picked and (ringed or not only_ringed)
                   for g, ringed in zip(groups, marked)]]
    st.dataframe(table, hide_index=True, width="stretch", height=360)
    st.download_button("Concordance (CSV)", data=lambda: concordance.csv_bytes(table),
                       file_name=f"concordance-{target}.csv", mime="text/csv", on_click="ignore",
                       icon=":material/download:", type="tertiary", key="kwic_csv")


concordance_view()
