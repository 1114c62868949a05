"""How the models learn, drawn: BERT's corruption of a sentence as a strip of its pieces, the model's probability
of each original piece where the draw struck (and with nothing hidden), the attention masks of a left-to-right and
a both-ways model, each word's probability as each model predicts it, and a run's training curves per loss part.
Pure: data in (the dicts of :mod:`ctxmodels.analysis.objectives` and :mod:`ctxmodels.analysis.training_curves`),
figure out; the functions at the end start from a model, for a notebook."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict

import numpy as np
import plotly.graph_objects as go
from plotly.colors import sample_colorscale
from plotly.subplots import make_subplots

from ctxmodels.viz.models import Model, as_model, label_of
from ctxmodels.viz.style import PALETTE, model_colours, plain, wrapped_title

# What happened to a piece, and its colour: the three outcomes of a chosen piece, and the rest in greys.
FATE_COLOURS = {"[MASK]": "#c62828", "random word": "#ef6c00", "kept": "#1565c0", "not chosen": "#eeeeee",
                "special": "#ffffff"}
FATE_TEXT = {"[MASK]": "white", "random word": "white", "kept": "white", "not chosen": "#222222",
             "special": "#888888"}
FATE_WORDS = {"[MASK]": "became [MASK]", "random word": "became a random word", "kept": "chosen, left the same",
              "not chosen": "not chosen", "special": "special piece, never chosen"}
REPLACED_SCALE = [[0.0, "#ffffff"], [0.5, "#f4a582"], [1.0, "#b2182b"]]  # P(replaced): white to dark red
LINE_UNITS = 58  # a line of the strip, in character widths
ROW = 1.75  # a line's height, in box heights (the box and the guess under it)


def _layout_strip(texts: Sequence[str]) -> list[tuple[float, int, float]]:
    """(left, line, width) of each piece's box: boxes as wide as their text, wrapped into lines."""
    out, x, line = [], 0.0, 0
    for t in texts:
        w = max(len(t), 2) + 1.6
        if x > 0 and x + w > LINE_UNITS:
            x, line = 0.0, line + 1
        out.append((x, line, w))
        x += w + 0.5
    return out


def corruption_strip(c: dict, title: str = "") -> go.Figure:
    """The sentence as the model reads it after the draw (``c``: :class:`ctxmodels.analysis.objectives.Corruption`
    as a dict): a box per piece, coloured by what happened to it; under each chosen piece the model's first guess
    there (green when it is the original)."""
    shown = [r if f in ("[MASK]", "random word") else p for p, r, f in zip(c["pieces"], c["reads"], c["fates"])]
    boxes = _layout_strip(shown)
    lines = (boxes[-1][1] + 1) if boxes else 1
    chosen = {p: j for j, p in enumerate(c["positions"])}
    shapes, notes = [], []
    hx, hy, htext = [], [], []
    for i, ((x, line, w), text, fate) in enumerate(zip(boxes, shown, c["fates"])):
        y = -line * ROW
        shapes.append(dict(type="rect", x0=x, x1=x + w, y0=y - 0.5, y1=y + 0.5, fillcolor=FATE_COLOURS[fate],
                           line=dict(color="#bdbdbd" if fate in ("not chosen", "special") else FATE_COLOURS[fate],
                                     width=1), layer="below"))
        notes.append(dict(x=x + w / 2, y=y, text=plain(text), showarrow=False,
                          font=dict(color=FATE_TEXT[fate], size=14)))
        hover = f"piece {i}: “{plain(c['pieces'][i])}”<br>{FATE_WORDS[fate]}"
        if i in chosen:
            j = chosen[i]
            first = c["guesses"][j][0]["token"] if c["guesses"][j] else ""
            right = first == c["pieces"][i]
            notes.append(dict(x=x + w / 2, y=y - 0.82, text=plain(first), showarrow=False,
                              font=dict(size=12, color="#2e7d32" if right else "#616161")))
            hover += (f"<br>the model read “{plain(c['reads'][i])}”<br>first guess: “{plain(first)}”"
                      f"<br>P(“{plain(c['pieces'][i])}”) = {c['prob'][j]:.1%} · loss {c['loss'][j]:.2f}")
        hx.append(x + w / 2)
        hy.append(y)
        htext.append(hover)
    data = [go.Scatter(x=hx, y=hy, mode="markers", marker=dict(size=18, opacity=0), hovertext=htext,
                       hoverinfo="text", showlegend=False)]
    counts = {f: c["fates"].count(f) for f in ("[MASK]", "random word", "kept", "not chosen")}
    for fate, n in counts.items():  # the legend: one square per outcome, with how many pieces had it
        data.append(go.Scatter(x=[None], y=[None], mode="markers", name=f"{FATE_WORDS[fate]} ({n})",
                               marker=dict(symbol="square", size=13, color=FATE_COLOURS[fate],
                                           line=dict(color="#9e9e9e", width=1))))
    fig = go.Figure(data)
    fig.update_layout(
        title=dict(text=plain(title)), shapes=shapes, annotations=notes, height=int(120 + 62 * lines),
        margin=dict(l=5, r=5, t=40 if title else 10, b=45), plot_bgcolor="rgba(0,0,0,0)",
        xaxis=dict(visible=False, range=[-0.3, LINE_UNITS + 0.3], fixedrange=True),
        yaxis=dict(visible=False, range=[-(lines - 1) * ROW - 1.25, 0.65], fixedrange=True),
        legend=dict(orientation="h", y=0, yanchor="top", x=0, font=dict(size=12)))
    return fig


def corruption_bars(c: dict, title: str = "") -> go.Figure:
    """At each chosen piece, the probability the model gave the original piece as the draw left the sentence (the
    loss in nats beside it), and with nothing hidden, where it can read the piece itself."""
    labels = [f"{j + 1}. {plain(c['pieces'][p])} ("
              + ("kept" if c["fates"][p] == "kept" else f"read as {plain(c['reads'][p])}") + ")"
              for j, p in enumerate(c["positions"])]
    guesses = [", ".join(f"{plain(g['token'])} {g['prob']:.0%}" for g in row) for row in c["guesses"]]
    colour = [FATE_COLOURS[c["fates"][p]] for p in c["positions"]]
    fig = go.Figure([
        go.Bar(y=labels, x=c["prob"], orientation="h", name="as the draw left it (training)",
               marker=dict(color=colour), text=[f"{p:.0%} · loss {loss:.1f}" for p, loss in zip(c["prob"], c["loss"])],
               textposition="outside", cliponaxis=False, customdata=guesses,
               hovertemplate="%{y}<br>P(original) %{x:.1%}<br>first guesses: %{customdata}<extra></extra>"),
        go.Bar(y=labels, x=c["plain_prob"], orientation="h", name="nothing hidden (as after fine-tuning)",
               marker=dict(color="#9e9e9e"), text=[f"{p:.0%}" for p in c["plain_prob"]], textposition="outside",
               cliponaxis=False, customdata=[plain(g) for g in c["plain_guess"]],
               hovertemplate="%{y}<br>nothing hidden: P(original) %{x:.1%}<br>first guess: %{customdata}"
                             "<extra></extra>"),
    ])
    text, lines = wrapped_title(title, 70)
    fig.update_layout(
        title=dict(text=text), barmode="group", height=int(120 + 20 * lines + 46 * max(1, len(labels))),
        margin=dict(l=10, r=70, t=20 + 20 * lines if title else 10, b=50),
        xaxis=dict(range=[0, 1.12], tickformat=".0%", fixedrange=True),
        yaxis=dict(autorange="reversed", automargin=True, fixedrange=True),
        legend=dict(orientation="h", y=0, yanchor="bottom", x=0, yref="container"))
    return fig


def replaced_strip(r: dict, title: str = "") -> go.Figure:
    """ELECTRA on a sentence (``r``: :class:`ctxmodels.analysis.replaced_tokens.Replacements` as a dict): a box per
    piece as the discriminator read it, coloured by its probability that the piece was replaced (white: surely
    the original, dark red: surely replaced); a piece the generator really replaced has a thick black frame and the
    original under it."""
    boxes = _layout_strip(r["reads"])
    lines = (boxes[-1][1] + 1) if boxes else 1
    colours = sample_colorscale(REPLACED_SCALE, [min(max(p, 0.0), 1.0) for p in r["p_replaced"]])
    shapes, notes, hx, hy, htext = [], [], [], [], []
    for i, ((x, line, w), text) in enumerate(zip(boxes, r["reads"])):
        y = -line * ROW
        p, replaced = r["p_replaced"][i], r["replaced"][i]
        shapes.append(dict(type="rect", x0=x, x1=x + w, y0=y - 0.5, y1=y + 0.5, fillcolor=colours[i], layer="below",
                           line=dict(color="#111111" if replaced else "#bdbdbd", width=3 if replaced else 1)))
        notes.append(dict(x=x + w / 2, y=y, text=plain(text), showarrow=False,
                          font=dict(size=14, color="white" if p > 0.6 else "#222222")))
        hover = f"“{plain(text)}”: replaced? {p:.0%}"
        if replaced:
            notes.append(dict(x=x + w / 2, y=y - 0.82, text=f"was {plain(r['pieces'][i])}", showarrow=False,
                              font=dict(size=12, color="#616161")))
            hover += f"<br>the generator put it in place of “{plain(r['pieces'][i])}”"
        elif r["chosen"][i]:
            hover += "<br>chosen, and the generator guessed the original"
        hx.append(x + w / 2)
        hy.append(y)
        htext.append(hover)
    data = [go.Scatter(x=hx, y=hy, mode="markers", hovertext=htext, hoverinfo="text", showlegend=False,
                       marker=dict(size=18, opacity=0, color=r["p_replaced"], cmin=0, cmax=1,
                                   colorscale=REPLACED_SCALE, showscale=True,
                                   colorbar=dict(title=dict(text="replaced?", side="right"), tickformat=".0%",
                                                 thickness=12, len=0.9)))]
    fig = go.Figure(data)
    fig.update_layout(
        title=dict(text=plain(title)), shapes=shapes, annotations=notes, height=int(90 + 62 * lines),
        margin=dict(l=5, r=5, t=40 if title else 10, b=10), plot_bgcolor="rgba(0,0,0,0)",
        xaxis=dict(visible=False, range=[-0.3, LINE_UNITS + 0.3], fixedrange=True),
        yaxis=dict(visible=False, range=[-(lines - 1) * ROW - 1.25, 0.65], fixedrange=True))
    return fig


def reading_masks(masks: dict[str, dict], title: str = "") -> go.Figure:
    """Side by side, which pieces each piece may look at in each model (``masks``: name ->
    :func:`ctxmodels.analysis.objectives.reading_mask`'s dict): a row per piece reading, a column per piece read."""
    names = list(masks)
    fig = make_subplots(rows=1, cols=len(names), horizontal_spacing=0.12, subplot_titles=[
        f"{plain(n)}: {'left to right' if masks[n]['left_to_right'] else 'both ways'}" for n in names])
    for k, name in enumerate(names, 1):
        m = masks[name]
        pieces = [f"{i}·{plain(p)}" for i, p in enumerate(m["pieces"])]  # numbered: a piece may come twice
        allowed = np.asarray(m["allowed"], dtype=float)
        fig.add_trace(go.Heatmap(
            z=allowed, x=pieces, y=pieces, zmin=0, zmax=1, showscale=False, xgap=1, ygap=1,
            colorscale=[[0, "#f5f5f5"], [1, PALETTE[0] if m["left_to_right"] else PALETTE[2]]],
            hovertemplate="%{y} may look at %{x}: %{z}<extra></extra>"), row=1, col=k)
        fig.update_yaxes(autorange="reversed", row=1, col=k, tickfont=dict(size=11), fixedrange=True,
                         title=dict(text="the piece reading") if k == 1 else None)
        fig.update_xaxes(tickangle=-60, tickfont=dict(size=11), row=1, col=k, fixedrange=True,
                         title=dict(text="the piece it may look at"))
    longest = max((len(m["pieces"]) for m in masks.values()), default=1)
    fig.update_layout(title=dict(text=plain(title)), height=int(min(900, max(440, 160 + 15 * longest))),
                      margin=dict(l=10, r=10, t=60, b=10))
    fig.update_yaxes(dtick=1)  # every piece named
    return fig


def _chance_ticks(lo: float) -> tuple[list[float], list[str]]:
    """Ticks of a log axis of probabilities down to ``lo``: 100%, 10%, 1%, then "1 in 1,000", "1 in 10,000", …"""
    vals = [10.0 ** e for e in range(math.floor(math.log10(lo)), 1)]
    return vals, [f"{v:.0%}" if v >= 0.01 else f"1 in {round(1 / v):,}" for v in vals]


def word_guess_lines(results: dict[str, dict], title: str = "") -> go.Figure:
    """Each word of the sentence, how likely each model found it (``results``: name ->
    :class:`ctxmodels.analysis.objectives.WordGuesses` as a dict), on a log scale: a left-to-right model from the
    words before it, a both-ways model with the word hidden and every other word read."""
    colours = model_colours(list(results))
    data, lowest = [], 1.0
    for name, r in results.items():
        ys = [p if p is not None and p > 0 else None for p in r["prob"]]
        lowest = min([lowest] + [y for y in ys if y is not None])
        how = "from the words before it" if r["left_to_right"] else "with the word hidden, from both sides"
        data.append(go.Scatter(
            x=list(range(len(r["words"]))), y=ys, mode="lines+markers", name=f"{plain(name)}: {how}",
            line=dict(color=colours[name], width=3), marker=dict(size=9),
            customdata=[[plain(w), plain(g) if g is not None else "(nothing before it to guess from)"]
                        for w, g in zip(r["words"], r["guess"])],
            hovertemplate=f"{plain(name)}: “%{{customdata[0]}}” %{{y:.2%}}<br>first guess: %{{customdata[1]}}"
                          "<extra></extra>"))
    words = next(iter(results.values()))["words"] if results else []
    vals, texts = _chance_ticks(max(lowest, 1e-12))
    fig = go.Figure(data)
    fig.update_layout(
        title=dict(text=plain(title)), height=420, margin=dict(l=10, r=10, t=40 if title else 10, b=10),
        xaxis=dict(tickvals=list(range(len(words))), ticktext=[plain(w) for w in words], fixedrange=True),
        yaxis=dict(type="log", title=dict(text="probability of the word as written"), tickvals=vals,
                   ticktext=texts, fixedrange=True),
        legend=dict(orientation="h", y=-0.15, yanchor="top", x=0))
    return fig


PAIR_GROUPS = {"consecutive": "B follows A", "swapped": "B and A swapped", "random": "B from another book"}


def pair_bars(results: dict[str, dict], title: str = "", models: Sequence[str] = ()) -> go.Figure:
    """Each model's probability that B follows A, per group of pairs (``results``: name -> {group: {"mean", "sem",
    "n"}}, :func:`ctxmodels.analysis.sentence_pairs.pair_test`'s dict; one pair a group has no error bar): a bar
    per model in each group, with ±2 standard errors where there are many pairs. ``models``: every model the page
    shows, in order, so that a model keeps its colour in a figure that leaves some out."""
    colours = model_colours(list(models) + list(results))
    data = []
    for name, groups in results.items():
        keys = [g for g in PAIR_GROUPS if g in groups]
        means = [groups[g]["mean"] for g in keys]
        errors = [2 * groups[g]["sem"] if groups[g]["n"] > 1 and math.isfinite(groups[g]["sem"]) else 0
                  for g in keys]
        data.append(go.Bar(
            x=[PAIR_GROUPS[g] for g in keys], y=means, name=plain(name), marker=dict(color=colours[name]),
            error_y=dict(type="data", array=errors, visible=any(errors), color="#424242"),
            text=[f"{m:.0%}" for m in means], textposition="inside", insidetextanchor="start",
            textfont=dict(color="white"), customdata=[groups[g]["n"] for g in keys],
            hovertemplate=f"{plain(name)}, %{{x}}: %{{y:.1%}} (%{{customdata}} pairs)<extra></extra>"))
    fig = go.Figure(data)
    fig.update_layout(title=dict(text=plain(title)), barmode="group", height=380,
                      margin=dict(l=10, r=10, t=40 if title else 10, b=10),
                      yaxis=dict(title=dict(text="probability that B follows A"), range=[0, 1.05], tickformat=".0%",
                                 fixedrange=True),
                      xaxis=dict(fixedrange=True), legend=dict(orientation="h", y=-0.12, yanchor="top", x=0))
    return fig


def loss_curves(curves: dict, title: str = "") -> go.Figure:
    """A run's training curves (``curves``: :func:`ctxmodels.analysis.training_curves.loss_curves`'s dict): each
    part of the loss on the training batches (smoothed), and the held-out evaluations as dotted lines."""
    data = []
    for k, (name, part) in enumerate(curves["train"].items()):
        colour = PALETTE[k % len(PALETTE)]
        data.append(go.Scatter(x=part["steps"], y=part["values"], mode="lines", name=plain(part["label"]),
                               line=dict(color=colour, width=2), legendgroup=name,
                               hovertemplate=f"{plain(part['label'])}, step %{{x:,}}: %{{y:.3f}}<extra></extra>"))
        held = curves["eval"].get(name)
        if held:
            data.append(go.Scatter(x=held["steps"], y=held["values"], mode="lines+markers", legendgroup=name,
                                   name=plain(held["label"]), line=dict(color=colour, width=1.5, dash="dot"),
                                   marker=dict(size=5),
                                   hovertemplate=f"{plain(held['label'])}, step %{{x:,}}: %{{y:.3f}}<extra></extra>"))
    fig = go.Figure(data)
    fig.update_layout(title=dict(text=plain(title)), height=420, margin=dict(l=10, r=10, t=40 if title else 10, b=10),
                      xaxis=dict(title=dict(text="training step")),
                      yaxis=dict(title=dict(text="loss (nats, lower is better)"), rangemode="tozero"),
                      legend=dict(orientation="h", y=-0.2, yanchor="top", x=0))
    return fig


# -- from a model (a notebook's one call) -------------------------------------------------------------------------


def corruption(model: Model, sentence: str, seed: int = 0, whole_words: bool = False) -> go.Figure:
    """BERT's corruption of ``sentence`` with ``seed``, as training would draw it, and the model's guesses."""
    from ctxmodels.analysis import objectives

    m = as_model(model)
    return corruption_strip(objectives.corruption(m, sentence, seed, whole_words).to_dict(),
                            title=f"{label_of(m)}: the draw with seed {seed}")


def next_word_guesses(models: Model | Sequence[Model], sentence: str) -> go.Figure:
    """Each word of ``sentence`` as each model predicts it: a GPT from the words before it, a BERT with the word
    hidden."""
    from ctxmodels.analysis import objectives

    loaded = [as_model(m) for m in ([models] if isinstance(models, (str,)) or not isinstance(models, Sequence)
                                    else models)]
    return word_guess_lines({label_of(m): asdict(objectives.word_guesses(m, sentence)) for m in loaded})
