"""The fill-in views: the guesses at a blank, the guesses read from every layer, and the words
an answer rests on (hiding them, or their gradients), on a shared logarithmic scale of factors. Pure (no
Streamlit).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

from ctxmodels.analysis import fill_in
from ctxmodels.viz.models import Model, as_model
from ctxmodels.viz.style import PALETTE, percent, plain, plain_all, short_layer_name


def fill_bars(predictions: Sequence[dict], title: str = "", truth: str | None = None,
              x_max: float | None = None) -> go.Figure:
    """Top-k predictions of one mask as horizontal bars, best on top; the true word (if any) highlighted.

    The x axis runs from 0 to a little above the largest probability shown, or ``x_max`` where that is larger (the
    largest of several models drawn side by side): not a fixed 0-1, where a 3% guess would be a sliver. Every guess
    keeps its label (one tick per bar, the left margin grows to the longest word) and its probability is written at
    its bar's end at the figure's font size, never shrunk or clipped: the right margin leaves room for it and rows
    are tall enough, also when the app's presentation mode enlarges the fonts. Of the plotting template only
    its colour cycle travels with the figure (Streamlit styles the chart in the browser; the rest is colour scales
    and per-trace defaults for other kinds of chart): a seventh of the bytes for every keystroke."""
    toks = [p["token"] for p in predictions][::-1]
    probs = [float(p["prob"]) for p in predictions][::-1]
    colours = [PALETTE[1] if truth is not None and t == truth else PALETTE[0] for t in toks]
    top = max(probs + [x_max or 0.0], default=0.0)
    top = top if top > 0 else 1.0
    # ticks with as many decimals as the scale needs: 0-40% by 10%, 0-0.2% by 0.05%
    decimals = max(0, 1 - int(np.floor(np.log10(top * 100))))
    default = pio.templates[pio.templates.default] if pio.templates.default else None
    colorway = list(default.layout.colorway or []) if default is not None else []
    # One constructor with plain dicts: Plotly validates the figure once (a quarter of the time of building it
    # with update_layout; this runs on every keystroke).
    return go.Figure(
        data=[dict(type="bar", x=probs, y=plain_all(toks), orientation="h", marker=dict(color=colours),
                   text=[percent(p) for p in probs], textposition="outside", cliponaxis=False, constraintext="none",
                   hovertemplate="%{y}: %{text}<extra></extra>")],
        layout=dict(
            template=dict(layout=dict(colorway=colorway)) if colorway else {},
            title=dict(text=plain(title)), height=80 + 34 * len(toks), margin=dict(l=10, r=70, t=40, b=10),
            xaxis=dict(title=dict(text="probability"), range=[0, top * 1.12], tickformat=f".{decimals}~%",
                       fixedrange=True, rangemode="tozero", automargin=True),  # the title below the ticks
            yaxis=dict(type="category", dtick=1, automargin=True, fixedrange=True),
        ),
    )


def layer_guess_grid(result: dict, title: str = "") -> go.Figure:
    """What the masked-LM head reads from every layer at one blank (``result``: :class:`ctxmodels.analysis.blanks.
    LayerGuesses` as a dict): a row per layer (the first at the top), its best guesses left to right, each cell
    the guess and its probability, shaded by it; the model's own answer (the last layer's first guess) is
    outlined wherever it appears, and its rank in each layer is written at the row's end."""
    layers = plain_all(short_layer_name(n) for n in result["layer_names"])
    n = max((len(row) for row in result["top"]), default=0)
    columns = [f"guess {j + 1}" for j in range(n)]
    probs = [[row[j]["prob"] if j < len(row) else None for j in range(n)] for row in result["top"]]
    text = [[f"{plain(row[j]['token'])}<br>{percent(row[j]['prob'])}" if j < len(row) else "" for j in range(n)]
            for row in result["top"]]
    answer = result["answer"]
    hits = [(columns[j], layers[i]) for i, row in enumerate(result["top"]) for j, g in enumerate(row)
            if g["token"] == answer]
    top = max((p for row in probs for p in row if p is not None), default=0.0) or 1.0
    ranks = [dict(x=1.0, y=name, xref="paper", yref="y", xanchor="left", showarrow=False, text=f"#{rank:,}",
                  font=dict(size=11)) for name, rank in zip(layers, result["answer_ranks"])]
    return go.Figure(dict(
        data=[dict(type="heatmap", z=probs, x=columns, y=layers, text=text, texttemplate="%{text}",
                   textfont=dict(size=10), colorscale="Blues", zmin=0, zmax=top, showscale=False, hoverongaps=False,
                   hovertemplate="%{y}, guess %{x} %{text}<extra></extra>"),
              dict(type="scatter", mode="markers", x=[c for c, _ in hits], y=[r for _, r in hits], hoverinfo="skip",
                   showlegend=False, marker=dict(symbol="square-open", size=34, color=PALETTE[1], line=dict(width=2)))],
        layout=dict(
            title=dict(text=f"{plain(title)}<br><sup>best first; at the right, the rank of “{plain(answer)}”</sup>"),
            height=90 + 40 * len(layers), margin=dict(l=10, r=60, t=56, b=10),
            # the guesses run best first from the left: the columns need no labels
            xaxis=dict(type="category", showticklabels=False, ticks="", fixedrange=True, showgrid=False,
                       zeroline=False),
            yaxis=dict(type="category", autorange="reversed", automargin=True, fixedrange=True, showgrid=False,
                       zeroline=False),
            annotations=ranks,
        ),
    ))


def shared_bar_scale(bar_sets: Sequence[Sequence[Sequence[dict]]]) -> list[float]:
    """For each blank (or hidden piece), the largest probability any model gives it (``bar_sets``: per model, per
    blank, the guesses with their "prob"): as ``x_max`` of :func:`fill_bars`, the models' bars side by side share
    one scale, so a 2% guess is not drawn as long as another model's 8% one."""
    blanks = max((len(bars) for bars in bar_sets), default=0)
    return [max((float(p["prob"]) for bars in bar_sets if i < len(bars) for p in bars[i]), default=0.0)
            for i in range(blanks)]


SUPERSCRIPTS = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def times(ratio: float) -> str:
    """A ratio of probabilities as a reader says it: ×2.5 (more likely), ÷3.1 (less likely), ×1."""
    if not np.isfinite(ratio) or ratio <= 0:
        return "÷∞" if ratio == 0 else "×∞"
    if abs(np.log2(ratio)) < 0.01:
        return "×1"
    factor = ratio if ratio > 1 else 1 / ratio
    whole = abs(factor - round(factor)) < 1e-9  # the axis' ticks: ÷2, ÷4
    shown = f"{factor:,.0f}" if whole or factor >= 9.95 else f"{factor:.1f}"
    if factor >= 1e5:  # ×270,000,000 is read digit by digit; ×2.7·10⁸ at a glance
        mantissa, exponent = f"{factor:.1e}".split("e")
        shown = f"{mantissa}·10{str(int(exponent)).translate(SUPERSCRIPTS)}"
    return ("×" if ratio > 1 else "÷") + shown


EFFECT_MAX_LOG2 = 10  # bars are cut at ×1024 / ÷1024 (their labels keep the true factor)


def effect_log2(p: float, prob: float) -> float:
    """log2 of how many times more likely an answer is with a word hidden (``p``) than with all in view (``prob``),
    cut at ±:data:`EFFECT_MAX_LOG2`."""
    ratio = p / prob if prob > 0 else float("inf")
    return float(np.clip(np.log2(max(ratio, 1e-300)), -EFFECT_MAX_LOG2, EFFECT_MAX_LOG2))


def _effect_logs(result: dict) -> list[float | None]:
    """The bars of :func:`word_effect_bars` (a :class:`~ctxmodels.analysis.blanks.WordEffects` dict) or of
    :func:`attribution_bars` (a :class:`~ctxmodels.analysis.blanks.WordAttributions` dict): the log2 of the factor
    by which the answer is more likely without the word (hidden, or without its share), None where no bar."""
    if "scores" in result:  # a share of log P in nats: without it, P is divided by e^score
        return [None if s is None else float(np.clip(-s / np.log(2), -EFFECT_MAX_LOG2, EFFECT_MAX_LOG2))
                for s in result["scores"]]
    return [None if p is None else effect_log2(p, float(result["prob"])) for p in result["hidden_probs"]]


def shared_effect_scale(effect_sets: Sequence[dict]) -> float:
    """The longest bar (in powers of two) that any of ``effect_sets`` (the models' answers at one blank, by either
    method) draws: as ``x_max`` of :func:`word_effect_bars` or :func:`attribution_bars`, the models' charts side by
    side share one scale."""
    return max((abs(v) for e in effect_sets for v in _effect_logs(e) if v is not None), default=0.0)


def _hiding_bars(effects: dict) -> dict:
    """The bars of :func:`word_effect_bars`: x (log2 factors), text, hover and colour per word."""
    words, prob = effects["words"], float(effects["prob"])
    tops = effects.get("top_when_hidden") or [None] * len(words)
    answer = plain(effects["answer"])
    bars: dict = dict(x=_effect_logs(effects), text=[], hover=[], colour=[])
    for word, p, top in zip(words, effects["hidden_probs"], tops):
        if p is None:
            bars["text"].append("")
            bars["hover"].append(f"{plain(word)}: not hidden")
            bars["colour"].append(PALETTE[9])
            continue
        ratio = p / prob if prob > 0 else float("inf")
        then = f"<br>first guess then: {plain(top)}" if top is not None else ""
        bars["text"].append(times(ratio))
        bars["hover"].append(f"with “{plain(word)}” hidden: P({answer}) {percent(prob)} → {percent(p)} "
                             f"({times(ratio)}){then}")
        bars["colour"].append(PALETTE[0] if ratio < 1 else PALETTE[3])
    return bars


def _gradient_bars(result: dict) -> dict:
    """The bars of :func:`attribution_bars`: x (log2 factors), text, hover and colour per word."""
    answer = plain(result["answer"])
    bars: dict = dict(x=_effect_logs(result), text=[], hover=[], colour=[])
    for word, score, v in zip(result["words"], result["scores"], bars["x"]):
        if score is None:
            bars["text"].append("")
            bars["hover"].append(f"{plain(word)}: not scored")
            bars["colour"].append(PALETTE[9])
            continue
        ratio = float(np.exp(np.clip(-score, -700.0, 700.0)))  # P without the word's share, against P
        bars["text"].append(times(ratio))
        bars["hover"].append(f"“{plain(word)}”: {score:+.2f} nats of log P({answer}), a factor of {times(1 / ratio)}")
        bars["colour"].append(PALETTE[0] if v < 0 else PALETTE[3])
    return bars


def _word_rows(words: Sequence[str], scored: Sequence) -> list[str]:
    """The rows' names: each word as typed, in italics where it has no bar (a blank, the hidden word)."""
    return [plain(w) if v is not None else f"<i>{plain(w)}</i>" for w, v in zip(words, scored)]


def word_effect_bars(effects: dict, title: str = "", x_max: float | None = None) -> go.Figure:
    """Which words an answer rests on (``effects``: :class:`ctxmodels.analysis.fill_in.WordEffects` as a dict), one
    bar per word in the sentence's order, top to bottom: how many times less (÷, to the left) or more (×, to the
    right) likely the answer becomes when that word is hidden. The axis is logarithmic in the factor, so ÷4 is as
    long as ×4; it is symmetric, at least ÷2 to ×2, or ±``x_max`` (in powers of two) to share a scale with other
    models. A word not hidden (a blank, the hidden word itself) keeps its row without a bar."""
    return _factor_bars([_hiding_bars(effects)], _word_rows(effects["words"], effects["hidden_probs"]),
                        f"P({plain(effects['answer'])}) with the word hidden", title, x_max)


def attribution_bars(result: dict, title: str = "", x_max: float | None = None) -> go.Figure:
    """Which words an answer rests on by integrated gradients (``result``: :class:`ctxmodels.analysis.blanks.
    WordAttributions` as a dict), drawn as :func:`word_effect_bars` draws hiding, so the two methods compare: one bar
    per word, how many times less (÷, to the left) or more (×, to the right) likely the answer is without the
    word's share of its log-probability (e^-score). A word without a score (a blank, the hidden word) keeps its row
    without a bar."""
    return _factor_bars([_gradient_bars(result)], _word_rows(result["words"], result["scores"]),
                        f"P({plain(result['answer'])}) without the word's share", title, x_max)


def both_methods_bars(effects: dict, result: dict, title: str = "", x_max: float | None = None) -> go.Figure:
    """:func:`word_effect_bars` and :func:`attribution_bars` of one answer in one chart, two bars per word (hiding
    plain, gradients hatched, with a legend): where they differ, the words act together."""
    hiding = dict(_hiding_bars(effects), name="hiding the word")
    gradients = dict(_gradient_bars(result), name="its share (gradients)", pattern="/")
    return _factor_bars([hiding, gradients], _word_rows(effects["words"], effects["hidden_probs"]),
                        f"P({plain(effects['answer'])}) without the word", title, x_max)


def _factor_bars(series: Sequence[dict], names: Sequence[str], axis_title: str, title: str,
                 x_max: float | None) -> go.Figure:
    """Horizontal bars, one per row (``names``, already escaped, top to bottom) for each of ``series`` (x: a factor's
    log2, None for no bar; text, hover, colour per row; name and pattern where there are several), on a symmetric
    axis labelled ÷4 … ×4: at least ÷2 to ×2, or ±``x_max``."""
    span = max([abs(v) for bars in series for v in bars["x"] if v is not None] + [1.0, x_max or 0.0])
    ticks = list(range(-int(np.ceil(span)), int(np.ceil(span)) + 1))
    step = max(1, int(np.ceil(len(ticks) / 9)))  # at most about nine labels on the axis
    ticks = [t for t in ticks if t % step == 0]
    rows = list(range(len(names)))
    several = len(series) > 1
    return go.Figure(
        data=[dict(type="bar", x=list(bars["x"]), y=rows, orientation="h", name=bars.get("name", ""),
                   marker=dict(color=list(bars["colour"]), pattern=dict(shape=bars.get("pattern", ""))),
                   text=list(bars["text"]), textposition="outside", cliponaxis=False, constraintext="none",
                   customdata=list(bars["hover"]), hovertemplate="%{customdata}<extra></extra>")
              for bars in series],
        layout=dict(
            title=dict(text=plain(title)), height=90 + (40 if several else 26) * len(names) + (30 if several else 0),
            margin=dict(l=10, r=50, t=40, b=10), barmode="group",
            xaxis=dict(title=dict(text=axis_title), range=[-span * 1.2, span * 1.2], tickvals=ticks,
                       ticktext=[times(2.0 ** t) for t in ticks], zeroline=True, zerolinecolor="#888",
                       zerolinewidth=1, fixedrange=True),
            yaxis=dict(tickvals=rows, ticktext=list(names), autorange="reversed", automargin=True, fixedrange=True),
            showlegend=several, legend=dict(orientation="h", y=-0.25 if several else None, x=0),
        ),
    )


def blank_change_bars(change: dict, title: str = "", x_max: float | None = None) -> go.Figure:
    """How the guesses at a blank move from sentence A to sentence B (``change``: :class:`ctxmodels.analysis.
    blanks.BlankChange` as a dict), one bar per word, those that gained most in B at the top: how many times more
    (×, to the right) or less (÷, to the left) likely the word is in B. The axis is logarithmic in the factor and
    symmetric, at least ÷2 to ×2, or ±``x_max`` (in powers of two) to share a scale with other models."""
    words = change["words"]
    logs = [effect_log2(b, a) for a, b in zip(change["prob_a"], change["prob_b"])]
    texts = [times(b / a) if a > 0 else "" for a, b in zip(change["prob_a"], change["prob_b"])]
    hovers = [f"{plain(w)}: {percent(a)} in A → {percent(b)} in B ({t})"
              for w, a, b, t in zip(words, change["prob_a"], change["prob_b"], texts)]
    colours = [PALETTE[3] if v > 0 else PALETTE[0] for v in logs]
    return _factor_bars([dict(x=logs, text=texts, hover=hovers, colour=colours)], plain_all(words),
                        "P(word) in B against A", title, x_max)


# -- from a model: the Fill in the blank page's views ---------------------------------------------------------

LAYER_GUESSES = 5  # the guesses per layer in "the guesses, layer by layer"


def _blank(results: Sequence, blank: int) -> None:
    if not 1 <= blank <= len(results):
        raise ValueError(f"blank {blank} is not one of the sentence's {len(results)} [MASK]s (counted from 1)")


def fill_in_guesses(model: Model, sentence: str, k: int = 5, whole_words: bool = True, blank: int = 1) -> go.Figure:
    """The model's ``k`` best guesses for [MASK] number ``blank`` of ``sentence`` (from 1), best on top (a masked
    language model: BERT, or ELMo, which reads the words on both sides). ``whole_words``: only guesses that are
    whole words, not pieces."""
    m = as_model(model)
    results = fill_in.fill_mask(m, getattr(m, "tokenizer", None), fill_in.normalize_masks(sentence.strip()),
                                top_k=k, whole_words=whole_words)
    _blank(results, blank)
    title = f"[MASK] {blank}" if len(results) > 1 else "[MASK]"
    return fill_bars(results[blank - 1], title=title, x_max=shared_bar_scale([results])[blank - 1])


def guesses_by_layer(model: Model, sentence: str, blank: int = 1, whole_words: bool = True) -> go.Figure:
    """What the model's masked-LM head reads from every layer at [MASK] number ``blank`` (from 1): each layer's
    best guesses, the model's own answer outlined wherever it appears and its rank in each layer."""
    m = as_model(model)
    text = fill_in.normalize_masks(sentence.strip())
    _blank(range(text.count(fill_in.MASK)), blank)
    result = fill_in.guesses_by_layer(m, getattr(m, "tokenizer", None), text, blank=blank - 1, top_k=LAYER_GUESSES,
                                      whole_words=whole_words).to_dict()
    return layer_guess_grid(result, title="the guesses, layer by layer")
