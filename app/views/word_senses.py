"""Word senses: the occurrences of one word, projected to 2-D per model and layer, coloured by sense."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from app import common, figures
from ctxmodels.analysis import projections, senses, vectors

common.page_header(
    "Word senses",
    "Every dot is one occurrence of the word in one sentence. A **static** model gives every occurrence the "
    "same vector; **contextual** layers move each occurrence by its sentence, and the senses can pull apart.",
)
common.explain(
    "For each model, the left panel shows its context-free layer (BERT's input embeddings, ELMo's character "
    "CNN, or the static vectors) and the right panel the layer you choose, for the same occurrences. With "
    "*shared axes* both are fitted in one projection, so distances compare across the two panels. Click a point "
    "to list its nearest neighbours, measured with the cosine in the model's full space (not in the picture). "
    "Below, the measurements per layer: leave-one-out 1-nearest-neighbour sense accuracy against the majority "
    "sense, the silhouette of the sense clusters, and Ethayarajh's self-similarity (mean cosine between "
    "occurrences) raw and minus the mean cosine of random word pairs of the layer (anisotropy-adjusted).",
    ["cosine", "self_similarity", "scalar_mix"],
)

ids = common.require_models()
presets = common.preset_words()
METHOD_NAMES = {"umap": "UMAP", "pca": "PCA", "tsne": "t-SNE"}
MIX = "mix"  # the layer option for ELMo's learned scalar mix


def default_models() -> list[str]:
    shipped = [m for m in ("static-eltec", "elmo-eltec", "bert-eltec") if m in ids]
    return shipped or ids[:3]


common.url_state("source", "preset", options=["preset", "own"])
common.url_state("preset", "bank" if "bank" in presets else presets[0], options=presets)
common.url_state("word", "")
common.url_state("sentences", "")
common.url_state("inflect", True, kind=bool)
common.url_state("models", default_models(), options=ids, many=True)
common.url_state("projection", "umap", options=list(projections.METHODS))
common.url_state("seed", 0, kind=int)
common.url_state("neighbors", 15, kind=int)
common.url_state("min_dist", 0.1, kind=float)
common.url_state("perplexity", 30.0, kind=float)
common.url_state("joint", True, kind=bool)

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
    chosen = st.multiselect("Models", ids, key="models", format_func=common.label,
                            help="Each model gets a row of panels; all see the same occurrences.")
    c1, c2, c3 = st.columns(3)
    method = c1.selectbox("Projection", list(projections.METHODS), key="projection", format_func=METHOD_NAMES.get)
    seed = c2.number_input("Seed", min_value=0, max_value=10_000, step=1, key="seed")
    joint = c3.checkbox("Shared axes", key="joint", help="Fit the context-free and the chosen layer in one projection "
                        "(each layer centred first), so both panels use the same axes and scale.")
    with st.expander("Projection parameters"):
        p1, p2, p3 = st.columns(3)
        neighbors = p1.slider("UMAP neighbours", 2, 100, key="neighbors")
        min_dist = p2.slider("UMAP min. distance", 0.0, 0.99, step=0.01, key="min_dist")
        perplexity = p3.slider("t-SNE perplexity", 2.0, 100.0, step=1.0, key="perplexity")
common.to_url("source", "preset" if source == "preset" else "word", "inflect", "models", "projection", "seed",
              "neighbors", "min_dist", "perplexity", "joint")
if source == "own":
    common.to_url("sentences")

# -- the sentences and the occurrences ------------------------------------------------------------------------
lines: list[str] | None = None
found = None
with common.guard("Your sentences"):
    lines = common.preset_sentences(target) if source == "preset" else common.own_sentences(st.session_state.sentences)
    if not (target or "").strip():
        raise ValueError("no target word: type the word to look for")
    found = vectors.find_occurrences(lines, target, inflections=inflect)
if found is None:
    st.stop()
if found.missing:
    shown = "\n".join(f"- {s}" for s in found.missing_sentences[:15])
    more = f"\n- … and {len(found.missing) - 15} more" if len(found.missing) > 15 else ""
    st.warning(f"**{target}** does not occur in {len(found.missing)} of the {len(lines)} sentences; they are left "
               f"out:\n{shown}{more}")
if not chosen:
    st.info("Choose at least one model above.")
    st.stop()

key_lines = tuple(lines)
n_occ = len(found.occurrences)
labels = [o.label for o in found.occurrences]
colours = figures.sense_colours(labels)
hover = [figures.highlight(o.sentence, o.char_span) for o in found.occurrences]
st.caption(f"{n_occ} occurrences of **{target}** in {len(lines) - len(found.missing)} sentences; "
           f"{len({lab for lab in labels if lab})} sense label(s).")

use_method = method
if method == "umap" and not common.umap_ready():
    use_method = "pca"
    st.info("UMAP is warming up (its first use compiles code, about half a minute once per server); showing PCA "
            "until it is ready. The page switches by itself.")

    @st.fragment(run_every=2)
    def _switch_when_ready() -> None:
        if common.umap_ready():
            st.rerun()

    _switch_when_ready()
params = (("n_neighbors", neighbors), ("min_dist", min_dist), ("perplexity", perplexity))


def layer_vectors(V: np.ndarray, layer: int | str, mix: tuple | None) -> np.ndarray:
    """[n, dim] vectors of one layer of ``V`` [n, layers, dim]; "mix" is ELMo's v = gamma * sum_j s_j h_j."""
    if layer == MIX:
        weights, gamma = mix
        return gamma * np.tensordot(V, np.asarray(weights, dtype=V.dtype), axes=([1], [0]))
    return V[:, layer]


@st.cache_data(max_entries=256, show_spinner=False)
def projected(model_id: str, lines: tuple, target: str, inflect: bool, layers: tuple, method: str, seed: int,
              params: tuple, joint: bool, mix: tuple | None = None) -> dict:
    """2-D coordinates of the occurrences at ``layers`` (fitted jointly or one by one), with the notes."""
    model = common.get_model(model_id)
    with common.record_warnings() as warned:
        ov = vectors.word_vectors(model, list(lines), target, inflections=inflect)
    sets = [layer_vectors(ov.vectors, layer, mix) for layer in layers]
    kw = dict(params)
    if joint and len(sets) > 1:
        # Layers sit in different regions of the space; fitted as they are, the first axis would only say "this is
        # layer 0, that is layer 2". Centring each layer's directions keeps one scale for all and shows the spread.
        proj = projections.project([common.centred_directions(s) for s in sets], method=method, seed=seed,
                                   metric="euclidean", **kw)
        coords, notes, used = proj.coords, proj.notes, proj.method
    else:
        coords, notes, used = [], [], method
        for s in sets:
            proj = projections.project(s, method=method, seed=seed, **kw)
            coords.append(proj.coords)
            notes += [n for n in proj.notes if n not in notes]
            used = proj.method
    return {"coords": coords, "notes": notes + warned, "method": used}


@st.cache_data(max_entries=64, show_spinner=False)
def measurements(model_id: str, lines: tuple, target: str, inflect: bool) -> tuple[pd.DataFrame, list[str]]:
    """Per-layer sense and contextuality measurements of one model on these occurrences."""
    model = common.get_model(model_id)
    notes: list[str] = []
    with common.record_warnings() as warned:
        ov = vectors.word_vectors(model, list(lines), target, inflections=inflect)
        found = vectors.find_occurrences(list(lines), target, inflections=inflect)
        sentence_vectors = vectors.embed_sentences(model, found.words)
    table = pd.DataFrame({"layer_index": range(model.n_layers), "layer": model.layer_names})
    try:
        ctx = senses.contextuality_table(sentence_vectors, model.layer_names, occurrences=ov.vectors)
        table = table.merge(ctx.drop(columns=["layer"]), on="layer_index")
    except ValueError as e:
        notes.append(f"self-similarity: {e}")
    if len({lab for lab in ov.labels if lab}) >= 2:
        try:
            st_table = senses.sense_table(ov.vectors, ov.labels, model.layer_names, k=(1,))
            table = table.merge(st_table.drop(columns=["layer"]), on="layer_index")
        except ValueError as e:
            notes.append(f"sense accuracy: {e}")
    table.insert(0, "model", common.label(model_id))
    return table, notes + warned


def nearest_neighbours(X: np.ndarray, k: int, n: int = 5) -> pd.DataFrame:
    U = X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-12)
    sims = U @ U[k]
    sims[k] = -np.inf
    sims[~np.isfinite(sims)] = -np.inf
    order = [int(i) for i in np.argsort(-sims) if np.isfinite(sims[i])][:n]
    return pd.DataFrame({
        "cosine": [round(float(sims[i]), 4) for i in order],
        "sense": [labels[i] or figures.UNLABELLED for i in order],
        "sentence": [found.occurrences[i].sentence for i in order],
    })


def scatter_data(coords: np.ndarray, model_id: str, layer_name: str) -> pd.DataFrame:
    return pd.DataFrame({
        "model": common.label(model_id), "layer": layer_name, "occurrence": range(n_occ),
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
url_layers = dict(v.split(":", 1)[::-1] for v in st.query_params.get_all("layer") if ":" in v)
layer_state: list[str] = []
models: dict[str, object] = {}
for model_id in chosen:
    with common.guard(f"Loading {common.label(model_id)}"):
        models[model_id] = common.get_model(model_id)
    if model_id not in models:
        continue
    model = models[model_id]
    name = common.label(model_id)
    st.divider()
    head, slider = st.columns([1, 3])
    head.subheader(name)
    head.caption(f"{model.kind}, {model.n_layers} layer(s) × {model.dim}")
    static = model.static_layer
    layer: int | str = static
    # ELMo's learned scalar mix joins the layers when a word-sense probe has been run on this model.
    wsd = common.cached_probe_results(model).get("wsd") if model.kind == "elmo" else None
    mix = (tuple(wsd.mix_weights), float(wsd.gamma)) if wsd and len(wsd.mix_weights) == model.n_layers else None
    names = {i: n for i, n in enumerate(model.layer_names)} | {MIX: "scalar mix (word-sense probe)"}
    if model.n_layers > 1:
        key = f"layer::{model_id}"
        options = list(range(model.n_layers)) + ([MIX] if mix else [])
        raw = url_layers.get(name, str(model.n_layers - 1))
        wanted = MIX if raw == MIX else (int(raw) if raw.isdigit() else model.n_layers - 1)
        common.url_state(key, wanted if wanted in options else model.n_layers - 1, options=options)
        layer = slider.select_slider("Layer", options=options, key=key, format_func=names.get)
        layer_state.append(f"{layer}:{name}")
        st.session_state[f"_keep::{key}"] = layer  # kept across page switches, like the other settings
        if layer == MIX:
            slider.caption("v = γ Σ s_j h_j with " + ", ".join(f"s_{j} = {w:.2f}" for j, w in enumerate(mix[0]))
                           + f", γ = {mix[1]:.2f} (see *ELMo layers*)")
    layers = (static,) if layer == static else (static, layer)
    result = None
    with common.guard(f"{name}"), st.spinner(f"Projecting {name} …"):
        result = projected(model_id, key_lines, target, inflect, layers, use_method, int(seed), params, joint,
                           mix if layer == MIX else None)
    if result is None:
        continue
    coords = result["coords"]
    ranges = figures.shared_ranges(coords) if joint and len(coords) > 1 else None
    cols = st.columns(2)
    for col, lay, xy in zip(cols, layers, coords):
        title = f"{name} · {names[lay]}" + (" (context-free)" if lay == static else "")
        fig = figures.sense_scatter(xy, labels, hover, title=title, colours=colours)
        figures.set_ranges(fig, ranges)
        with col:
            event = common.plot(fig, f"{name}-{names[lay]}-{target}", key=f"scatter::{model_id}::{lay}",
                                data=scatter_data(xy, model_id, names[lay]), selectable=True)
            picked = selected_point(event)
            if picked is not None:
                occ = found.occurrences[picked]
                V = vectors.word_vectors(model, list(key_lines), target, inflections=inflect).vectors
                X = layer_vectors(V, lay, mix)
                st.markdown(f"**Nearest neighbours** of *{common.escape(occ.sentence)}* "
                            f"({names[lay]}, cosine in {model.dim} dimensions):")
                st.dataframe(nearest_neighbours(X, picked), hide_index=True, width="stretch")
    if len(layers) == 1:
        cols[1].info("This model has only its context-free layer." if model.n_layers == 1 else
                     "Move the slider to a contextual layer to compare it with the context-free one.")
    shown_method = METHOD_NAMES.get(result["method"], result["method"])
    notes = "; ".join(result["notes"])
    fitted = ", fitted jointly (each layer centred)" if joint and len(layers) > 1 else ""
    st.caption(f"{shown_method}, seed {seed}{fitted}" + (f". {notes}" if notes else ""))
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
        with common.guard(common.label(model_id)):
            res = projected(model_id, key_lines, target, inflect, tuple(range(model.n_layers)), use_method,
                            int(seed), params, True)
            top = res["coords"][-1]
            fig = figures.sense_scatter(top, labels, hover, title=f"{common.label(model_id)}: all layers fitted "
                                        "together (each centred); points at the top layer", colours=colours)
            path = np.stack([c[occ_index] for c in res["coords"]])
            figures.add_layer_path(fig, path, model.layer_names)
            with cols[i % len(cols)]:
                data = pd.DataFrame({"layer": model.layer_names, "x": path[:, 0], "y": path[:, 1]})
                common.plot(fig, f"path-{common.label(model_id)}-{target}", key=f"path::{model_id}", data=data)

# -- measurements across layers ------------------------------------------------------------------------------
st.subheader("Across the layers")
tables, notes = [], []
for model_id in chosen:
    if model_id not in models:
        continue
    with common.guard(f"Measurements for {common.label(model_id)}"), st.spinner("Measuring the layers …"):
        table, extra = measurements(model_id, key_lines, target, inflect)
        tables.append(table)
        notes += [f"{common.label(model_id)}: {n}" for n in extra]
if tables:
    all_rows = pd.concat(tables, ignore_index=True)
    rows = all_rows.rename(columns={"layer": "layer_name", "layer_index": "layer"}).to_dict("records")
    labelled = [lab for lab in labels if lab]
    baseline = ({"majority sense": senses.majority_share(labelled)} if len({*labelled}) >= 2 else None)
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
            common.plot(figures.layer_lines(metric_rows, metric, title=title, baseline=base),
                        f"{metric}-{target}", key=f"lines::{metric}", data=all_rows)
        i += 1
    if i == 0 or "knn1_accuracy" not in all_rows.columns:
        st.info("Sense accuracy and silhouette need sense labels (at least two senses): use a preset, or add "
                "`| label` to your sentences.")
    for n in dict.fromkeys(notes):
        st.caption(n)
