"""Word senses, besides the scatter (:mod:`ctxmodels.viz.scatter`): one occurrence's path through the layers,
which words shape it, its nearest words in SemCor by part of speech, and which dictionary sense each layer reads.
Pure (no Streamlit).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ctxmodels.analysis import clusters, vectors
from ctxmodels.analysis import word_senses as ws
from ctxmodels.loading import ATTENTION, CONTEXTUAL, LEFT_TO_RIGHT, LoadedModel, declares
from ctxmodels.paths import examples_dir
from ctxmodels.viz.models import Model, as_model, label_of
from ctxmodels.viz.scatter import RING_MARGIN_PX, sense_scatter, shared_ranges
from ctxmodels.viz.style import (
    PALETTE,
    highlight,
    layer_panels,
    model_colours,
    plain,
    plain_all,
    sense_colours,
    short_layer_name,
    wrapped_title,
)


def add_layer_path(fig: go.Figure, path: np.ndarray, layer_names: Sequence[str], colour: str = "#444") -> go.Figure:
    """Draw one occurrence's path through the layers (points fitted in the same projection)."""
    path = np.asarray(path, dtype=float)
    fig.add_trace(go.Scatter(
        x=path[:, 0], y=path[:, 1], mode="lines+markers+text", name="path through layers",
        text=[str(i) for i in range(len(path))], textposition="top center", hovertext=plain_all(layer_names),
        hoverinfo="text", line=dict(color=colour, width=2, dash="dot"), marker=dict(size=6, symbol="diamond"),
    ))
    return fig


def context_shift_heatmap(shifts: dict, title: str = "", z_max: float | None = None) -> go.Figure:
    """Which words shape one occurrence (``shifts``: :class:`ctxmodels.analysis.word_senses.ContextShifts` as a
    dict): layers down (the first at the top), the sentence's words across in their order, each cell the cosine
    distance the occurrence's vector moves in that layer when that word is hidden. The occurrence's own column is
    empty and its label bold. The scale starts at 0 and runs to the largest shift, or ``z_max`` (shared with other
    models' maps)."""
    words, index = shifts["words"], int(shifts["index"])
    z = np.asarray(shifts["shifts"], dtype=float)
    finite = z[np.isfinite(z)]
    top = max(float(finite.max()) if finite.size else 0.0, z_max or 0.0) or 1e-3  # an all-zero map stays pale
    xs = list(range(len(words)))
    names = [f"<b>{plain(w)}</b>" if i == index else plain(w) for i, w in enumerate(words)]
    layers = plain_all(shifts["layer_names"])
    target, hidden_as = plain(words[index]), plain(shifts["hidden_as"])
    how = "left out" if hidden_as == "left out" else f"read as {hidden_as}"
    hover = [[f"{layers[lay]}: with “{plain(w)}” {how}, “{target}” moves by" for w in words]
             for lay in range(len(layers))]
    return go.Figure(dict(
        data=[dict(type="heatmap", z=np.where(np.isfinite(z), z, None).tolist(), x=xs, y=layers,
                   colorscale="Blues", zmin=0, zmax=top, customdata=hover, hoverongaps=False,
                   hovertemplate="%{customdata} %{z:.3f}<extra></extra>",
                   colorbar=dict(title=dict(text="cosine<br>distance"), thickness=12))],
        layout=dict(
            title=dict(text=plain(title)), height=150 + 34 * len(layers) + 6 * min(max(map(len, words)), 20),
            margin=dict(l=10, r=10, t=40, b=10),
            # no grid: its lines would cross the occurrence's empty column
            xaxis=dict(tickvals=xs, ticktext=names, tickangle=-45 if len(words) > 8 else 0, fixedrange=True,
                       automargin=True, showgrid=False, zeroline=False),
            yaxis=dict(autorange="reversed", type="category", fixedrange=True, automargin=True, showgrid=False),
        ),
    ))


POS_NAMES = {"NOUN": "noun", "VERB": "verb", "ADJ": "adjective", "ADV": "adverb", "PROPN": "proper noun"}


def neighbour_pos_bars(kinds: Sequence[dict], nearest: dict[str, str], k: int, title: str = "") -> go.Figure:
    """What one occurrence's nearest reference words are, layer by layer (``kinds``: the rows of
    :func:`ctxmodels.analysis.token_search.neighbour_kinds`): a stacked bar per layer (the first at the top) of the
    ``k`` nearest by part of speech; the part that is the searched word itself hatched. ``nearest``: per layer
    name, the nearest words as text, for the hover."""
    layers = list(dict.fromkeys(r["layer"] for r in kinds))
    names = plain_all(layers)
    data = []
    for i, pos in enumerate(POS_NAMES):
        colour = PALETTE[i]
        for part, pattern in (("other", ""), ("same", "/")):
            counts = {r["layer"]: int(r[part]) for r in kinds if r["pos"] == pos}
            if not any(counts.values()):
                continue
            what = "the word itself" if part == "same" else "other words"
            hover = [f"{name}: {counts.get(layer, 0)} of {k} are {what}, as a {POS_NAMES[pos]}<br>nearest: "
                     f"{plain(nearest.get(layer, ''))}" for layer, name in zip(layers, names)]
            data.append(dict(type="bar", orientation="h", x=[counts.get(layer, 0) for layer in layers], y=names,
                             name=POS_NAMES[pos], legendgroup=pos, showlegend=part == "other" or not any(
                                 r["other"] for r in kinds if r["pos"] == pos),
                             marker=dict(color=colour, pattern=dict(shape=pattern, fgcolor="white", size=6)),
                             customdata=hover, hovertemplate="%{customdata}<extra></extra>"))
    return go.Figure(dict(
        data=data,
        layout=dict(
            title=dict(text=plain(title)), barmode="stack", height=140 + 34 * len(layers),
            margin=dict(l=10, r=10, t=40, b=10),
            xaxis=dict(title=dict(text=f"the {k} nearest words (hatched: the word itself)"), range=[0, k],
                       fixedrange=True),
            yaxis=dict(autorange="reversed", automargin=True, fixedrange=True),
            legend=dict(orientation="h", y=1.0, yanchor="bottom", x=1.0, xanchor="right"), showlegend=True,
        ),
    ))


def dictionary_sense_map(guesses: dict[str, dict]) -> go.Figure:
    """Which dictionary sense one occurrence is nearest in each model and layer (``guesses``: model name -> a dict
    with ``senses``, the sense names, most frequent first; ``layer_names``; ``cosines`` [layers, senses], the
    occurrence's cosine to each sense's average; ``accuracy`` [layers], the share of the references each layer
    reads right; ``nearest`` [layers], the nearest sense's index or None for a tie; ``tagged``, the annotators'
    sense or None).

    The senses are rows (long glosses read best as row labels), shared by the models side by side, each model a
    panel of its layers, each layer under how often it is right. A cell's shade is how far its sense is behind
    the layer's nearest (the nearest darkest); its text is the cosine; the nearest is outlined; the annotators'
    sense is named in bold with a tick. The cells' text gives the values, so there is no colour bar."""
    senses = list(dict.fromkeys(s for g in guesses.values() for s in g["senses"]))
    tagged = {g["senses"][g["tagged"]] for g in guesses.values() if g.get("tagged") is not None}
    # glosses on lines of 40 characters: on one line a long gloss took most of a narrow figure's width
    wrapped = [wrapped_title(s, 40) for s in senses]
    rows = [f"<b>✓ {text}</b>" if s in tagged else text for s, (text, _) in zip(senses, wrapped)]
    widths = [len(g["layer_names"]) for g in guesses.values()]
    gap = 0.03
    unit = (1.0 - gap * (len(widths) - 1)) / max(sum(widths), 1)
    data, layout, x0 = [], {}, 0.0
    lows = []
    for n, (name, g) in enumerate(guesses.items(), start=1):
        where = [senses.index(s) for s in g["senses"]]
        cos = np.full((len(g["layer_names"]), len(senses)), np.nan)
        cos[:, where] = np.asarray(g["cosines"], dtype=float)
        with np.errstate(invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a layer without a vector: an all-NaN row
            behind = cos - np.nanmax(cos, axis=1, keepdims=True)
        lows.append(float(np.nanmin(behind)) if np.isfinite(behind).any() else 0.0)
        # a word a line ("char<br>CNN"): side by side, narrow columns' names ran together ("char CNNLSTM 1LSTM 2")
        layers = [f"{'<br>'.join(plain(short_layer_name(layer)).split())}<br>{100 * acc:.0f}%"
                  for layer, acc in zip(g["layer_names"], g["accuracy"])]
        suffix = str(n) if n > 1 else ""
        hover = [[f"{plain(name)}, {plain(g['layer_names'][j])}: cosine {cos[j, i]:.3f} to the average of "
                  f"“{plain(senses[i])}”" for j in range(len(layers))] for i in range(len(senses))]
        data.append(dict(type="heatmap", z=np.where(np.isfinite(behind.T), behind.T, None).tolist(), x=layers,
                         y=rows, text=[[f"{c:.3f}" if np.isfinite(c) else "" for c in row] for row in cos.T],
                         texttemplate="%{text}", textfont=dict(size=10), coloraxis="coloraxis",
                         customdata=hover, hoverongaps=False,
                         hovertemplate="%{customdata}<extra></extra>", xaxis=f"x{suffix}", yaxis="y"))
        nearest = [(j, g["senses"][s]) for j, s in enumerate(g["nearest"]) if s is not None]
        data.append(dict(type="scatter", mode="markers", x=[layers[j] for j, _ in nearest],
                         y=[rows[senses.index(s)] for _, s in nearest], hoverinfo="skip", showlegend=False,
                         marker=dict(symbol="square-open", size=28, color="#d62728", line=dict(width=2)),
                         xaxis=f"x{suffix}", yaxis="y"))
        width = unit * len(layers)
        layout[f"xaxis{suffix}"] = dict(domain=[x0, x0 + width], anchor="y", type="category", side="top",
                                        fixedrange=True, showgrid=False, zeroline=False, tickangle=0,
                                        title=dict(text=f"<b>{plain(name)}</b>", standoff=4))
        x0 += width + gap
    low = min(min(lows, default=0.0), -1e-3)  # a scale of some width even if every layer ties (all cells 0)
    return go.Figure(dict(data=data, layout=dict(
        **layout, height=130 + sum(max(40, 17 * lines) for _, lines in wrapped), margin=dict(l=10, r=10, t=10, b=10),
        yaxis=dict(type="category", autorange="reversed", automargin=True, fixedrange=True, showgrid=False,
                   zeroline=False),
        coloraxis=dict(colorscale="Blues", cmin=low, cmax=0, showscale=False),
    )))


# -- from a model: the Word senses page's views -----------------------------------------------------------------

LARGE = 600  # occurrences from which the app projects in the background and measures anisotropy on a sample
BASELINE_SENTENCES = 300  # sentences embedded for the anisotropy baseline of a large view


def preset_sentences(word: str) -> list[str]:
    """The shipped example sentences of ``word`` (``sentence | sense`` lines; the app's preset words)."""
    path = examples_dir() / "senses" / f"{word}.txt"
    if not path.is_file():
        words = sorted(p.stem for p in (examples_dir() / "senses").glob("*.txt"))
        raise ValueError(f"no preset sentences for {word!r} in {path.parent}; presets: {', '.join(words) or 'none'}")
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def occurrences(sentences: str | Sequence[str], word: str, inflect: bool = True) -> vectors.OccurrenceSearch:
    """Every occurrence of ``word`` (in any simple form when ``inflect``) in ``sentences``: a list, or one text of a
    sentence a line; each may end with ``| sense`` to name its sense."""
    lines = re.split(r"[\r\n]+", sentences) if isinstance(sentences, str) else list(sentences)
    return vectors.find_occurrences([line.strip() for line in lines if line.strip()], word, inflections=inflect)


def same_vector(X: np.ndarray) -> list[list[int]]:
    """Groups of occurrences whose vectors are identical (a static vector, ELMo's character layer for one form):
    they share one point, which the scatter marks with their count and senses."""
    ok = np.isfinite(X).all(axis=1)
    if not ok.any():
        return []
    idx = np.flatnonzero(ok)
    _, inverse, counts = np.unique(X[ok].round(6), axis=0, return_inverse=True, return_counts=True)
    if counts.max() < 2:
        return []
    return [idx[inverse.ravel() == g].tolist() for g in np.flatnonzero(counts > 1)]


def context_free_note(model: LoadedModel) -> str:
    """What the first panel's layer is: context-free, except BERT's, which adds position (and segment) embeddings."""
    if declares(model, LEFT_TO_RIGHT):  # a GPT: word and position, no segments
        return " (input embeddings: word + position)"
    if declares(model, ATTENTION):  # a BERT-family encoder: its layer 0 is the input embeddings
        return " (input embeddings: word + position + segment)"
    return " (context-free)"


def ringed(found: vectors.OccurrenceSearch, query: str) -> tuple[np.ndarray, str]:
    """The occurrences whose sentence has one of the words of ``query`` (any simple form), and the legend's name
    for their rings ("with river / water")."""
    if not query:
        return np.zeros(0, dtype=int), ""
    words = ws.context_query(query)
    return np.flatnonzero(ws.containing(found.occurrences, words)), "with " + " / ".join(words)


def word_senses_row(model: Model, sentences: str | Sequence[str], word: str, layer: int | None = None,
                    method: str = "umap", seed: int = 0, joint: bool = True, dims: int = 2, n_neighbors: int = 15,
                    min_dist: float = 0.1, perplexity: float = 30.0, find: str = "", name: str | None = None
                    ) -> list[go.Figure]:
    """One model's row of the Word senses page: every occurrence of ``word`` in ``sentences`` as a point, coloured
    by its sense, in the context-free layer and in ``layer`` (default: the top one), projected together by
    ``method`` (umap, tsne or pca) as the app projects them. Occurrences that share one vector are drawn inside a
    ring with their count; ``find`` rings those whose sentence has one of its words. One figure per layer."""
    m = as_model(model)
    name = label_of(m, name)
    found = occurrences(sentences, word)
    labels = [o.label for o in found.occurrences]
    hover = [highlight(o.sentence, o.char_span) for o in found.occurrences]
    ov = vectors.occurrence_vectors(m, found, cache=len(found.occurrences) <= LARGE)
    static = m.static_layer
    layer = m.n_layers - 1 if layer is None else int(layer)
    if not 0 <= layer < m.n_layers:
        raise ValueError(f"layer {layer} is not one of {name}'s layers (0 to {m.n_layers - 1})")
    layers = (static,) if layer == static else (static, layer)
    result = ws.project_layers(ov.vectors, layers, method=method, seed=seed, joint=joint, n_components=dims,
                               n_neighbors=n_neighbors, min_dist=min_dist, perplexity=perplexity)
    ranges = shared_ranges(result.coords, margin_px=RING_MARGIN_PX) if result.joint else None
    marked, marked_name = ringed(found, find)
    figures = []
    for lay, xy in zip(layers, result.coords):
        title = f"{name} · {m.layer_names[lay]}" + (context_free_note(m) if lay == static else "")
        figures.append(sense_scatter(xy, labels, hover, title=title, colours=sense_colours(labels),
                                     stacks=same_vector(ws.layer_vectors(ov.vectors, lay)), ranges=ranges,
                                     legend_title="sense", marked=marked, marked_name=marked_name))
    return figures


def word_senses(model: Model, sentences: str | Sequence[str], word: str, layer: int | None = None,
                **options) -> go.Figure:
    """The Word senses scatter of ``layer`` (default: the top one): :func:`word_senses_row`'s panel of that layer
    (the context-free one when ``layer`` is the model's context-free layer)."""
    return word_senses_row(model, sentences, word, layer, **options)[-1]


def measurement_panels(majority: float | None) -> list[tuple[str, str, str, dict[str, float] | None]]:
    """The panels of :func:`layer_measurements` (what the app's *Across the layers* draws)."""
    baseline = {"majority sense": majority} if majority is not None else None
    return [("knn1_accuracy", "1-NN sense accuracy (leave one out)", "accuracy", baseline),
            ("silhouette", "silhouette of the senses (cosine)", "silhouette", None),
            ("ari", "clusters vs senses (adjusted Rand index)", "agreement (ARI)", None),
            ("self_similarity", "self-similarity (mean cosine between occurrences)", "mean cosine", None),
            ("self_similarity_adjusted", "self-similarity − anisotropy baseline", "mean cosine − baseline", None)]


def measurements_table(model: LoadedModel, found: vectors.OccurrenceSearch, name: str, k: int | None = None,
                       seed: int = 0, ov: vectors.OccurrenceVectors | None = None) -> tuple[pd.DataFrame, list[str]]:
    """One model's per-layer sense, cluster and contextuality measurements of ``found`` (its vectors ``ov`` when
    already embedded), and its notes."""
    labels = [o.label for o in found.occurrences]
    large = len(found.occurrences) > LARGE
    ov = ov if ov is not None else vectors.occurrence_vectors(model, found, cache=not large)
    m = ws.measure_word(model, found, vectors=ov, baseline_sentences=BASELINE_SENTENCES if large else None)
    table = m.table
    if len(ws.sense_names(labels)) >= 2:
        agreement = clusters.cluster_layers(ov.vectors, found, layers=list(range(model.n_layers)), k=k, seed=seed,
                                            gold=labels, layer_names=model.layer_names)
        table = table.merge(agreement.table[["layer_index", "ari"]], on="layer_index", how="left")
    table.insert(0, "model", name)
    return table, list(m.notes)


def measurements_figure(table: pd.DataFrame, labels: Sequence[str | None], models: Sequence[str]) -> go.Figure:
    """:func:`layer_measurements` from the models' tables (``models``: their names, in the order of colours)."""
    rows = table.rename(columns={"layer": "layer_name", "layer_index": "layer"}).to_dict("records")
    return layer_panels(rows, measurement_panels(ws.majority_baseline(labels)), colours=model_colours(models))


def layer_measurements(models: Model | Sequence[Model], sentences: str | Sequence[str], word: str,
                       k: int | None = None, seed: int = 0) -> go.Figure:
    """How each layer of each model tells the senses of ``word`` apart: 1-NN sense accuracy (with the majority
    sense's share as the line to beat), the senses' silhouette, clusters against senses (ARI), and self-similarity
    raw and less the anisotropy baseline. ``k``: clusters (None: chosen by the silhouette)."""
    loaded = [as_model(m) for m in ([models] if isinstance(models, (LoadedModel, str)) else models)]
    found = occurrences(sentences, word)
    names = [label_of(m) for m in loaded]
    # measured in the order the app draws its rows (static models last), coloured in the order given
    tables = [measurements_table(m, found, name, k=k, seed=seed)[0]
              for m, name in sorted(zip(loaded, names), key=lambda pair: is_static(pair[0]))]
    return measurements_figure(pd.concat(tables, ignore_index=True), [o.label for o in found.occurrences], names)


def is_static(model: LoadedModel) -> bool:
    """Whether the model gives a word one vector whatever its sentence (its rows go last: a static model's one
    point says least)."""
    return not declares(model, CONTEXTUAL)
