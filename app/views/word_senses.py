"""Word senses: the occurrences of one word, projected to 2-D per model and layer, coloured by sense.

The analysis (layers and ELMo's mix, projections, neighbours, measurements) is ``ctxmodels.analysis.word_senses``;
this page reads the widgets, calls it and draws the results.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app import figures, limits
from app.errors import guard, record_warnings
from app.explanations import explain, page_header
from app.inputs import (
    MAX_SENTENCES_CHARS,
    MAX_WORD_CHARS,
    check_word,
    last_good,
    listing,
    md,
    own_sentences,
    quoted,
    remember,
)
from app.plots import plot
from app.presets import preset_sentences, preset_words
from app.registry import get_model, label, require_models
from app.url_state import keep, to_url, url_pairs, url_state, url_value
from app.warm_up import umap_ready
from ctxmodels.analysis import projections, vectors
from ctxmodels.analysis import word_senses as ws

page_header(
    "Word senses",
    "Every dot is one occurrence of the word in one sentence. A **static** model gives every occurrence the "
    "same vector; **contextual** layers move each occurrence by its sentence, and the senses can pull apart.",
)
explain(
    "For each model, the left panel shows its context-free layer (BERT's input embeddings, ELMo's character "
    "CNN, or the static vectors) and the right panel the layer you choose, for the same occurrences. With "
    "*shared axes* both are fitted in one projection, so distances compare across the two panels. Click a point "
    "to list its nearest neighbours, measured with the cosine in the model's full space (not in the picture). "
    "Below, the measurements per layer: leave-one-out 1-nearest-neighbour sense accuracy against the majority "
    "sense, the silhouette of the sense clusters, and Ethayarajh's self-similarity (mean cosine between "
    "occurrences) raw and minus the mean cosine of random word pairs of the layer (anisotropy-adjusted).",
    ["cosine", "self_similarity", "scalar_mix"],
)

ids = require_models()
presets = preset_words()
METHOD_NAMES = projections.DISPLAY
MIX = ws.MIX  # the layer option for ELMo's learned scalar mix
# The widgets' ranges, for the widgets and for the values a link may give them.
SEED = dict(min_value=0, max_value=10_000)
NEIGHBORS = dict(min_value=2, max_value=100)
MIN_DIST = dict(min_value=0.0, max_value=0.99)
PERPLEXITY = dict(min_value=2.0, max_value=100.0)


def default_models() -> list[str]:
    shipped = [m for m in ("static-eltec", "elmo-eltec", "bert-eltec") if m in ids]
    return shipped or ids[:3]


url_state("source", "preset", options=["preset", "own"])
url_state("preset", "bank" if "bank" in presets else next(iter(presets), None), options=presets)
url_state("word", "", max_chars=MAX_WORD_CHARS)
url_state("sentences", "", max_chars=MAX_SENTENCES_CHARS)
url_state("inflect", True, kind=bool)
url_state("models", default_models(), options=ids, many=True, names=label)
url_state("projection", "umap", options=list(projections.METHODS))
url_state("seed", 0, kind=int, **SEED)
url_state("neighbors", 15, kind=int, **NEIGHBORS)
url_state("min_dist", 0.1, kind=float, **MIN_DIST)
url_state("perplexity", 30.0, kind=float, **PERPLEXITY)
url_state("joint", True, kind=bool)

# -- inputs -------------------------------------------------------------------------------------------------
left, right = st.columns([2, 3], gap="large")
with left:
    source = st.radio("Sentences", ["preset", "own"], key="source", horizontal=True,
                      format_func={"preset": "a preset word", "own": "my own sentences"}.get)
    if source == "preset":
        preset = st.selectbox("Preset word", presets, key="preset")
        target = preset
    else:
        st.text_area("Sentences, one per line; add `| label` to give a sense label",
                     key="sentences", height=160,
                     placeholder="We sat on the bank of the river. | river\nThe bank lent her the money. | money")
        target = st.text_input("Target word", key="word", placeholder="bank")
    inflect = st.checkbox("Also find its inflections (bank → banks, run → ran, running)", key="inflect")
with right:
    chosen = st.multiselect("Models", ids, key="models", format_func=label,
                            help="Each model gets a row of panels; all see the same occurrences.")
    c1, c2, c3 = st.columns(3)
    method = c1.selectbox("Projection", list(projections.METHODS), key="projection", format_func=METHOD_NAMES.get)
    seed = c2.number_input("Seed", **SEED, step=1, key="seed")
    joint = c3.checkbox("Shared axes", key="joint", help="Fit the context-free and the chosen layer in one projection "
                        "(each layer centred first), so both panels use the same axes and scale.")
    with st.expander("Projection parameters"):
        p1, p2, p3 = st.columns(3)
        neighbors = p1.slider("UMAP neighbours", **NEIGHBORS, key="neighbors")
        min_dist = p2.slider("UMAP min. distance", **MIN_DIST, step=0.01, key="min_dist")
        perplexity = p3.slider("t-SNE perplexity", **PERPLEXITY, step=1.0, key="perplexity")
to_url("source", "preset" if source == "preset" else "word", "inflect", "models", "projection", "seed",
       "neighbors", "min_dist", "perplexity", "joint")
if source == "own":
    to_url("sentences")

# -- the sentences and the occurrences (found once; every model and measurement below uses them) --------------
lines: list[str] | None = None
found: vectors.OccurrenceSearch | None = None
with guard("Your sentences"):
    if source == "preset":
        lines = preset_sentences(target)
    else:
        lines = own_sentences(st.session_state.sentences)
        target = check_word(target)
    found = vectors.find_occurrences(lines, target, inflections=inflect)
    remember("word_senses", (lines, target, inflect))
if found is None:  # keep showing what this visitor had until the input is fixed
    previous = last_good("word_senses")
    if previous is None:
        st.stop()
    lines, target, inflect = previous
    found = vectors.find_occurrences(lines, target, inflections=inflect)
    st.info(f"Below: the last sentences that worked, for {quoted(target)}.")
if found.missing:
    st.warning(f"**{md(target)}** does not occur in {len(found.missing)} of the {len(lines)} sentences; they are "
               f"left out:\n{listing(found.missing_sentences)}")
if not chosen:
    st.info("Choose at least one model above.")
    st.stop()

key_lines = tuple(lines)
n_occ = len(found.occurrences)
labels = [o.label for o in found.occurrences]
colours = figures.sense_colours(labels)
hover = [figures.highlight(o.sentence, o.char_span) for o in found.occurrences]
st.caption(f"{n_occ} occurrences of **{md(target)}** in {len(lines) - len(found.missing)} sentences; "
           f"{len(ws.sense_names(labels))} sense label(s).")

use_method = method
if method == "umap" and not umap_ready():
    use_method = "pca"
    st.info("UMAP is warming up (its first use compiles code, about half a minute once per server); showing PCA "
            "until it is ready. The page switches by itself.")

    @st.fragment(run_every=2)
    def _switch_when_ready() -> None:
        if umap_ready():
            st.rerun()

    _switch_when_ready()
params = (("n_neighbors", neighbors), ("min_dist", min_dist), ("perplexity", perplexity))


# The cached functions are keyed by (lines, target, inflect), which decide the occurrences; ``_found`` (not
# hashed) hands them the occurrences this run already found.
@st.cache_data(max_entries=256, show_spinner=False)
def projected(_found: vectors.OccurrenceSearch, model_id: str, lines: tuple, target: str, inflect: bool, layers: tuple,
              method: str, seed: int, params: tuple, joint: bool,
              mix: ws.LearnedMix | None = None) -> ws.LayerProjection:
    """2-D coordinates of the occurrences at ``layers`` (fitted jointly or one by one), with the notes."""
    model = get_model(model_id)
    with record_warnings() as warned:
        ov = vectors.occurrence_vectors(model, _found)
    proj = ws.project_layers(ov.vectors, layers, method=method, seed=seed, joint=joint, mix=mix, **dict(params))
    proj.notes = proj.notes + warned
    return proj


@st.cache_data(max_entries=64, show_spinner=False)
def measurements(_found: vectors.OccurrenceSearch, model_id: str, lines: tuple, target: str,
                 inflect: bool) -> tuple[pd.DataFrame, list[str]]:
    """Per-layer sense and contextuality measurements of one model on these occurrences."""
    with record_warnings() as warned:
        measured = ws.measure_word(get_model(model_id), _found)
    table = measured.table
    table.insert(0, "model", label(model_id))
    return table, measured.notes + warned


def neighbour_table(X, k: int) -> pd.DataFrame:
    """The occurrences nearest to occurrence ``k`` in ``X`` [n_occ, dim], as the page lists them."""
    near = ws.nearest_occurrences(X, k)
    return pd.DataFrame({
        "cosine": [round(nb.cosine, 4) for nb in near],
        "sense": [labels[nb.index] or figures.UNLABELLED for nb in near],
        "sentence": [found.occurrences[nb.index].sentence for nb in near],
    })


def scatter_data(coords, model_id: str, layer_name: str) -> pd.DataFrame:
    return pd.DataFrame({
        "model": label(model_id), "layer": layer_name, "occurrence": range(n_occ),
        "word": [o.word for o in found.occurrences], "sense": labels,
        "sentence": [o.sentence for o in found.occurrences], "x": coords[:, 0], "y": coords[:, 1],
    })


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


# -- one row of panels per model -----------------------------------------------------------------------------
url_layers = url_pairs("layer") if not any(k.startswith("layer::") for k in st.session_state) else {}
layer_state: list[str] = []
models: dict[str, object] = {}
for model_id in chosen:
    with guard(f"Loading {label(model_id)}"):
        models[model_id] = get_model(model_id)
    if model_id not in models:
        continue
    model = models[model_id]
    name = label(model_id)
    st.divider()
    head, slider = st.columns([1, 3])
    head.subheader(md(name))
    head.caption(f"{model.kind}, {model.n_layers} layer(s) × {model.dim}")
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
        layer = slider.select_slider("Layer", options=options, key=key,
                                     format_func=lambda o, names=names: md(names[o]))
        layer_state.append(f"{layer}:{name}")
        keep(key, layer)  # kept across page switches, like the other settings
        if layer == MIX:
            slider.caption("v = γ Σ s_j h_j with " + ", ".join(f"s_{j} = {w:.2f}" for j, w in enumerate(mix.weights))
                           + f", γ = {mix.gamma:.2f} (see *ELMo layers*)")
    layers = (static,) if layer == static else (static, layer)
    result = None
    with guard(f"{name}"), st.spinner(f"Projecting {name} …"), limits.heavy(f"Projecting {name}"):
        result = projected(found, model_id, key_lines, target, inflect, layers, use_method, int(seed), params, joint,
                           mix if layer == MIX else None)
    if result is None:
        continue
    coords = result.coords
    ranges = figures.shared_ranges(coords) if result.joint else None
    cols = st.columns(2)
    for col, lay, xy in zip(cols, layers, coords):
        title = f"{name} · {names[lay]}" + (" (context-free)" if lay == static else "")
        fig = figures.sense_scatter(xy, labels, hover, title=title, colours=colours)
        figures.set_ranges(fig, ranges)
        with col:
            event = plot(fig, f"{name}-{names[lay]}-{target}", key=f"scatter::{model_id}::{lay}",
                         data=scatter_data(xy, model_id, names[lay]), selectable=True)
            picked = selected_point(event)
            if picked is not None:
                occ = found.occurrences[picked]
                X = ws.layer_vectors(vectors.occurrence_vectors(model, found).vectors, lay, mix)
                st.markdown(f"**Nearest neighbours** of *{md(occ.sentence)}* "
                            f"({md(names[lay])}, cosine in {model.dim} dimensions):")
                st.dataframe(neighbour_table(X, picked), hide_index=True, width="stretch")
    if len(layers) == 1:
        cols[1].info("This model has only its context-free layer." if model.n_layers == 1 else
                     "Move the slider to a contextual layer to compare it with the context-free one.")
    shown_method = METHOD_NAMES.get(result.method, result.method)
    notes = "; ".join(result.notes)
    fitted = ", fitted jointly (each layer centred)" if result.joint else ""
    st.caption(f"{shown_method}, seed {seed}{fitted}" + (f". {md(notes)}" if notes else ""))
if layer_state:
    st.query_params["layer"] = layer_state
else:
    st.query_params.pop("layer", None)

# -- an occurrence's path through the layers -----------------------------------------------------------------
st.divider()
deep = [m for m in chosen if m in models and models[m].n_layers > 1]
if deep and st.toggle("Draw one occurrence's path through the layers", key="path"):
    options = list(range(n_occ))
    occ_index = st.selectbox("Occurrence", options, key="path_occurrence",
                             format_func=lambda i: f"{i + 1}. {found.occurrences[i].sentence[:90]}")
    cols = st.columns(min(len(deep), 3))
    for i, model_id in enumerate(deep):
        model = models[model_id]
        with guard(label(model_id)), limits.heavy(f"Projecting {label(model_id)}"):
            res = projected(found, model_id, key_lines, target, inflect, tuple(range(model.n_layers)), use_method,
                            int(seed), params, True)
            fig = figures.sense_scatter(res.coords[-1], labels, hover, title=f"{label(model_id)}: all layers "
                                        "fitted together (each centred); points at the top layer", colours=colours)
            path = res.path(occ_index)  # [n_layers, 2]
            figures.add_layer_path(fig, path, model.layer_names)
            with cols[i % len(cols)]:
                data = pd.DataFrame({"layer": model.layer_names, "x": path[:, 0], "y": path[:, 1]})
                plot(fig, f"path-{label(model_id)}-{target}", key=f"path::{model_id}", data=data)

# -- measurements across layers ------------------------------------------------------------------------------
st.subheader("Across the layers")
tables, notes = [], []
for model_id in chosen:
    if model_id not in models:
        continue
    with (guard(f"Measurements for {label(model_id)}"), st.spinner("Measuring the layers …"),
          limits.heavy(f"Measuring {label(model_id)}")):
        table, extra = measurements(found, model_id, key_lines, target, inflect)
        tables.append(table)
        notes += [f"{label(model_id)}: {n}" for n in extra]
if tables:
    all_rows = pd.concat(tables, ignore_index=True)
    rows = all_rows.rename(columns={"layer": "layer_name", "layer_index": "layer"}).to_dict("records")
    majority = ws.majority_baseline(labels)
    baseline = {"majority sense": majority} if majority is not None else None
    panels = [("knn1_accuracy", "1-NN sense accuracy (leave one out)", baseline),
              ("silhouette", "silhouette of the senses (cosine)", None),
              ("self_similarity", "self-similarity (mean cosine between occurrences)", None),
              ("self_similarity_adjusted", "self-similarity − anisotropy baseline", None)]
    cols = st.columns(2)
    i = 0
    for metric, title, base in panels:
        if metric not in all_rows.columns:
            continue
        metric_rows = [r for r in rows if pd.notna(r.get(metric))]
        if not metric_rows:
            continue
        with cols[i % 2]:
            plot(figures.layer_lines(metric_rows, metric, title=title, baseline=base),
                 f"{metric}-{target}", key=f"lines::{metric}", data=all_rows)
        i += 1
    if i == 0 or "knn1_accuracy" not in all_rows.columns:
        st.info("Sense accuracy and silhouette need sense labels (at least two senses): use a preset, or add "
                "`| label` to your sentences.")
    for n in dict.fromkeys(notes):
        st.caption(md(n))
