"""Attention: every head of a BERT on one sentence (or a pair), as small maps, one map in detail, and rankings; for a
pair, the next-sentence head's probability that B follows A.

State, compute, figures: the widgets and the URL give an :class:`AttentionState`; ``compute.py`` runs the model and
reads the maps; ``figures.py`` draws them. The detail view (layer, head, line threshold and their figures) and the
ranking are fragments: moving one of their controls reruns only that part of the page, on the maps the last
whole-page run computed. Every control is in the URL (``app/kit/url_state.py``), so a copied link shows the same head.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from app.kit import clicked, figures, limits
from app.kit.errors import guard, show_warnings
from app.kit.explanations import explain, page_header
from app.kit.inputs import MAX_TEXT_CHARS, last_good, md, quoted, remember
from app.kit.plots import plot
from app.kit.presentation import controls, table_height
from app.kit.registry import label, require_models
from app.kit.text import page_text
from app.kit.url_state import to_url, url_state
from app.views.attention import compute
from app.views.attention import figures as page_figures
from app.views.attention.state import (
    GRID_TOKENS,
    LINE_TOKENS,
    MAP_HEADS,
    OVERVIEWS,
    SENTENCE,
    SHARES,
    THRESHOLD,
    VIEWS,
    AttentionState,
    controls_summary,
)
from ctxmodels.analysis import attention as att
from ctxmodels.loading import ATTENTION

TEXT = page_text(__file__)
page_header("Attention", TEXT["intro"])
explain(TEXT["explain"], ["attention", "multihead", "rollout"])

ids = require_models(capability=ATTENTION, what="attention")  # from the files: only the model shown is loaded
url_state("att_model", ids[0], options=ids, names=label)
url_state("sentence", SENTENCE, max_chars=MAX_TEXT_CHARS)
url_state("pair", "", max_chars=MAX_TEXT_CHARS)
url_state("merge", True, kind=bool)
url_state("hide", False, kind=bool)
url_state("view", "head", options=list(VIEWS))
url_state("rank_by", "to_prev", options=list(att.SUMMARY_COLUMNS))
url_state("rank_ascending", False, kind=bool)
url_state("att_threshold", 0.05, kind=float, **THRESHOLD)
url_state("overview", "auto", options=list(OVERVIEWS))

# A head picked in the ranking table (at the end of the page) on the last run: shown in the detail as one head.
pick = st.session_state.pop("_att_pick", None)
if pick is not None:
    st.session_state["att_layer"], st.session_state["att_head"] = pick
    st.session_state["view"] = "head"

box = controls(summary=controls_summary(label(st.session_state["att_model"]), st.session_state["sentence"],
                                        st.session_state["pair"], st.session_state["view"]))  # folded: maps first
c1, c2 = box.columns([1, 3])
model_id = c1.selectbox("Model", ids, key="att_model", persist_state="session", format_func=label)
sentence = c2.text_input("Sentence A", key="sentence", persist_state="session")
pair = c2.text_input("Sentence B (optional: a pair, as BERT's next-sentence task reads it)", key="pair",
                     persist_state="session")
o1, o2, o3 = box.columns(3)
merge = o1.checkbox("Merge word pieces into words", key="merge", persist_state="session")
hide = o2.checkbox("Hide [CLS] and [SEP]", key="hide", persist_state="session")
view = o3.radio("Detail shows", list(VIEWS), key="view", horizontal=True, persist_state="session",
                format_func=VIEWS.get)
overview = box.radio("Overview", list(OVERVIEWS), key="overview", horizontal=True, persist_state="session",
                     format_func=OVERVIEWS.get,
                     help=f"Every head's map, tiled; or, lighter for big models, what each head attends to "
                          f"(previous token, [SEP], …) as small layer x head grids. Automatic: maps up to "
                          f"{MAP_HEADS} heads, summaries beyond.")
to_url("att_model", "sentence", "pair", "merge", "hide", "view", "overview")
s = AttentionState(model_id, sentence, pair, merge, hide, view, overview)

maps = None
with guard("The sentence"), limits.heavy("Running the model"):
    shown_input = compute.source(s)
    maps, warned = compute.raw_maps(*shown_input)
    show_warnings(warned)
    remember("attention", shown_input)
if maps is None:  # keep showing what this visitor had until the input is fixed
    previous = last_good("attention")
    if previous is None:
        st.stop()
    with guard("The last sentence"), limits.heavy("Running the model"):
        maps, _ = compute.raw_maps(*previous)
        shown_input = previous
        st.info(f"Below: the last input that worked, {quoted(previous[1])}"
                + (f" with {quoted(previous[2])}" if previous[2] else "") + f" on {md(label(previous[0]))}.")
    if maps is None:
        st.stop()

# -- the next-sentence head, for a pair ----------------------------------------------------------------------
if shown_input[2]:
    if maps.next_sentence is not None:
        st.metric("B follows A: the next-sentence head's probability (IsNext)", f"{maps.next_sentence:.1%}",
                  help="BERT was pre-trained on pairs in which B was the sentence after A half of the time and a "
                       "random sentence otherwise; its next-sentence (NSP) head reads the [CLS] vector of the last "
                       "layer (through the pooler) and says how likely B is the real next sentence. "
                       "A model with random weights gives a meaningless number.")
        with st.expander("What this number learned, and a pair it gets wrong", icon=":material/help:"):
            st.markdown(TEXT["nsp"])  # folded: the maps stay on the first screen
    else:
        st.caption(f"{md(label(shown_input[0]))} has no next-sentence (NSP) head, so it cannot say whether B "
                   "follows A; its attention over the pair is below.")

detail = None
with guard("Attention"):
    base, detail = compute.detail(maps, s)
if detail is None:
    st.stop()

# The detail's layer and head, from the link on a session's first run (checked against this model's size), kept
# within the model's size when another model has fewer layers or heads.
opening = compute.opening_head(base)  # without a link: the previous-token head, the clearest picture
url_state("att_layer", opening.layer, kind=int, min_value=1, max_value=maps.n_layers)
url_state("att_head", opening.head, kind=int, min_value=1, max_value=maps.n_heads)
url_state("qk", False, kind=bool)
url_state("att_token", 0, kind=int, min_value=0, max_value=maps.n_tokens)
url_state("qk_from", 1, kind=int, min_value=0, max_value=maps.n_tokens - 1)
for key, top in (("att_layer", maps.n_layers), ("att_head", maps.n_heads)):
    if not 1 <= st.session_state[key] <= top:
        st.session_state[key] = min(max(st.session_state[key], 1), top)

# -- overview -----------------------------------------------------------------------------------------------
st.subheader("All layers and heads")
if s.as_maps(base.n_layers * base.n_heads):
    if base.n_tokens > GRID_TOKENS:
        st.caption(f"The overview shows the first {GRID_TOKENS} of {base.n_tokens} positions of each map; the "
                   "detail below shows them all.")
    plot(page_figures.attention_grid(base.attentions, max_tokens=GRID_TOKENS), "attention-grid", key="att::grid")
else:
    with guard("Head summaries"):
        st.caption(f"What each of the {base.n_layers * base.n_heads} heads attends to, on average over the rows: one "
                   "small grid per measure (layers down, heads across). Choose *every head's map* above for the "
                   "maps themselves, or a layer and head below for one in detail.")
        summary = att.head_summaries(base)
        plot(page_figures.head_summary_grid(summary), "attention-summaries", key="att::grid", data=summary)
if compute.left_to_right(shown_input[0]):
    st.caption(TEXT["causal"].format(model=md(label(shown_input[0]))))
with st.expander(f"Tokens and segments ({maps.n_tokens} word pieces)"):  # under the maps, which come first
    st.dataframe(compute.tokens_table(maps), width="stretch")


# -- one map in detail --------------------------------------------------------------------------------------
def query_key_view(source: compute.Source, layer: int, head: int) -> None:
    """BertViz's neuron view: for one token, the head's query against every key, dimension by dimension, and the
    weights their dot products make. ``layer`` and ``head`` are 0-based."""
    if not st.toggle("How this head computes its weights (query · key)", key="qk", persist_state="session",
                     help="For one token: its query and every token's key in this head, their products dimension by "
                          "dimension, and the softmax that turns the sums into the weights of the map's row."):
        to_url("qk")
        return
    to_url("qk")
    with guard("How this head computes its weights"), limits.heavy("Reading the queries and keys"):
        qk = compute.raw_query_keys(*source)
        tokens = qk.tokens
        if len(tokens) > LINE_TOKENS:
            st.info(f"This view draws up to {LINE_TOKENS} word pieces; this input has {len(tokens)}. Shorten the "
                    "text to see how a head computes its weights.")
            return
        st.session_state["qk_from"] = min(max(int(st.session_state["qk_from"]), 0), len(tokens) - 1)
        row = st.columns([1, 2])[0].selectbox("From the token", range(len(tokens)), key="qk_from",
                                              persist_state="session", format_func=lambda i: f"{tokens[i]} ·{i}")
        to_url("qk_from")
        products = qk.products(layer, head, row)
        weights = qk.attentions[layer, head, row]
        st.caption(TEXT["query_key"].format(layer=layer + 1, dim=qk.head_dim, head=head + 1, me=quoted(tokens[row])))
        if qk.causal:
            st.caption(TEXT["query_key_causal"].format(me=quoted(tokens[row])))
        title = f"layer {layer + 1}, head {head + 1}: from {tokens[row]} ·{row}"
        plot(page_figures.query_key_view(tokens, row, qk.queries[layer, head, row], qk.keys[layer, head], products,
                                         weights, title=title),
             f"attention-query-key-{layer + 1}-{head + 1}", key="att::qk")
        st.caption(compute.weight_sentence(tokens, row, products, weights))


def line_token(n_tokens: int) -> int | None:
    """The word whose lines stand out (its row): one just clicked on the line view, else the link's (``att_token``,
    from 1; 0: none), until another click or the button under the figure."""
    click = compute.picked_token(clicked.clicked_in("att::lines"), n_tokens)
    if click is not None:
        st.session_state["att_token"] = click + 1
    number = st.session_state.get("att_token", 0)
    return number - 1 if 1 <= number <= n_tokens else None


@st.fragment
def detail_view(detail: att.AttentionMaps, view: str, source: compute.Source, opening: compute.OpeningHead) -> None:
    """The chosen layer and head (or the mean, or the rollout) as a heatmap and as lines: a control here reruns
    only this part of the page."""
    st.subheader("In detail")
    d1, d2 = st.columns(2)
    layer = d1.slider("Layer", 1, detail.n_layers, key="att_layer", persist_state="session")
    head = 0
    if view == "head":
        head = d2.slider("Head", 1, detail.n_heads, key="att_head", persist_state="session") - 1
        if (layer, head + 1) == opening[:2] and np.isfinite(opening.share):
            st.caption(f"Layer {layer}, head {head + 1} is the head that looks most at the previous word: "
                       f"{opening.share:.0%} of each word's attention goes to the word before it, the bright line "
                       "just below the diagonal. The page opens on it because its pattern is the easiest to see.")
    matrix = detail.attentions[layer - 1, head]
    what = {"head": f"layer {layer}, head {head + 1}", "mean": f"layer {layer}, mean over heads",
            "rollout": f"rollout up to layer {layer}"}[view]
    tokens = detail.tokens
    h1, h2 = st.columns(2)
    with h1:
        plot(figures.attention_heatmap(matrix, tokens, title=what), f"attention-{what}", key="att::heat",
             data=att.map_table(matrix, tokens))
    with h2:
        if len(tokens) <= LINE_TOKENS:
            threshold = st.slider("Hide lines below", **THRESHOLD, step=0.01, key="att_threshold",
                                  persist_state="session")
            token = line_token(len(tokens))  # read before drawing: the figure draws its lines in orange
            plot(page_figures.attention_lines(matrix, tokens, threshold=threshold, title=what, token=token),
                 f"attention-lines-{what}", key="att::lines", selectable=True)
            if token is None:
                st.caption("Hover a word on the left to read where it looks; click it to make its lines stand out.")
            else:
                st.button(f"Show every word's lines (not only {tokens[token]}'s)", key="att_token_clear",
                          icon=":material/close:", type="tertiary", on_click=st.session_state.update,
                          kwargs={"att_token": 0})
        else:
            st.info(f"The line view draws up to {LINE_TOKENS} tokens; this input has {len(tokens)}. Tick *merge "
                    "word pieces* and *hide [CLS]/[SEP]*, or shorten the text.")
    if detail.hidden_share is not None and view != "rollout":
        share = float(np.mean(detail.hidden_share[layer - 1, head]))
        st.caption(f"Before hiding, on average {share:.0%} of each row's attention went to [CLS]/[SEP].")
    to_url("att_layer", "att_head", "att_threshold", "att_token")
    if view == "head":
        query_key_view(source, layer - 1, head)


detail_view(detail, s.view, shown_input, opening)


# -- heads ranked -------------------------------------------------------------------------------------------
RANK_COLUMNS = {  # the ranking table's columns as a student reads them; shares as bars in per cent
    "layer": st.column_config.NumberColumn("layer", width="small"),
    "head": st.column_config.NumberColumn("head", width="small"),
    "entropy": st.column_config.NumberColumn(
        "spread", format="%.2f", width="small",
        help="How widely a head spreads its attention, in nats, averaged over the rows: 0 = each token looks at "
             "one token only; log(T) = evenly at all T tokens."),
    **{c: st.column_config.ProgressColumn(
        f"→ {page_figures.HEAD_MEASURES[c].removesuffix(' token')}", min_value=0, max_value=100, format="%.0f%%",
        width="small", help=f"The share of each row's attention that goes to {what}, averaged over the rows.")
       for c, what in zip(SHARES, ("[CLS]", "[SEP]", "the token itself", "the previous token", "the next token"))},
}


@st.fragment
def ranking(base: att.AttentionMaps) -> None:
    """The heads sorted by one measure; a row picked in the table opens that head in the detail above."""
    st.subheader("Heads ranked")
    r1, r2 = st.columns([1, 1], vertical_alignment="bottom")  # the table below, across the page: no column cut
    by = r1.selectbox("Rank by what a head attends to", list(att.SUMMARY_COLUMNS), key="rank_by",
                      persist_state="session", format_func=page_figures.HEAD_MEASURES.get)
    ascending = r2.checkbox("lowest first", key="rank_ascending", persist_state="session")
    to_url("rank_by", "rank_ascending")
    with guard("Ranking"):
        r = compute.ranked(base, by, ascending)
        event = st.dataframe(r.table, hide_index=True, width="stretch", height=table_height(len(r.table)),
                             column_config=RANK_COLUMNS, column_order=r.order, on_select="rerun",
                             selection_mode="single-row", key="rank_pick")
        st.caption("Pick a row (the box at its left) to see that head in detail above.")
        if r.summary[by].isna().all():
            st.caption("Nothing to rank by: the tokens it measures are hidden.")
        picked = list(event.selection.rows)
        # A selection stays in the table across reruns: act on it only when it changes, so a head chosen later
        # with the sliders is not pulled back to the picked row.
        if picked and picked != st.session_state.get("_rank_seen"):
            st.session_state["_rank_seen"] = picked
            row = r.top.iloc[picked[0]]
            st.session_state["_att_pick"] = (int(row["layer"]), int(row["head"]))
            st.rerun(scope="app")  # the detail is another fragment: the whole page redraws it
        st.session_state["_rank_seen"] = picked


ranking(base)
