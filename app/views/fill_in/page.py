"""Fill in the blank: what each masked language model guesses for every [MASK], side by side, as you type; or how
likely it finds a word of the sentence that you hide.

State, compute, figures: the widgets and the URL give a :class:`FillState`; ``compute.py`` runs the models;
``figures.py`` draws their guesses. The sentence box, the controls and the charts are one fragment: a keystroke (or
any control) reruns only them, not the page around them, and the box reports a keystroke after a short pause
(``DEBOUNCE_MS``).
"""

from __future__ import annotations

import pandas as pd
import streamlit as st
from st_keyup import st_keyup

from app.kit import limits
from app.kit.errors import guard
from app.kit.explanations import explain, page_header
from app.kit.inputs import MAX_TEXT_CHARS, last_good, md, quoted, remember
from app.kit.model_limits import published_offer, read_line
from app.kit.plots import plot
from app.kit.presentation import controls
from app.kit.registry import label, require_models
from app.kit.text import page_text
from app.kit.url_state import from_history, to_url, url_state, url_value
from app.views.fill_in import compute
from app.views.fill_in import figures as page_figures
from app.views.fill_in.state import BY, DEBOUNCE_MS, GUESS_CHARS, MODES, SENTENCE, TOP_K, FillState, summary
from ctxmodels.analysis import fill_in

TEXT = page_text(__file__)
page_header("Fill in the blank", TEXT["intro"])
explain(TEXT["explain"], ["mlm", "integrated_gradients"])

ids = require_models(what="filling in blanks")
fill_ids, gpt_ids = compute.offered(ids)  # from the files: nothing loaded
mlm_ids, no_head = compute.fillers(fill_ids)
choices = mlm_ids + gpt_ids  # a GPT guesses a blank from the words before it
if not choices:
    st.warning("None of the available models can fill in blanks"
               + "".join(f"; {md(label(m))}: {md(why)}" for m, why in no_head.items())
               + ". Load a checkpoint saved with its MLM head (ours always are; BERT, RoBERTa, DistilBERT, ALBERT, "
               "an ELECTRA generator, DeBERTa), an ELMo trained with `ctxmodels train elmo` or a GPT trained with "
               "`ctxmodels train gpt` on the **Models** page.")
    st.stop()

url_state("text", SENTENCE, max_chars=MAX_TEXT_CHARS)
# One model by default (the first: the default BERT): every model shown is run again on every keystroke, and one
# keeps a keystroke within the 150 ms a person reads as instant (bench/bench_fill_in.py: 145-149 ms with
# minilm-eltec alone; 163-178 ms with bert-eltec beside it). "Which words it rests on" is off for the same reason.
url_state("fill_models", choices[:1], options=choices, many=True, names=label)
url_state("k", 5, kind=int, **TOP_K)
url_state("whole_words", True, kind=bool)
url_state("why", False, kind=bool)
url_state("why_guess", "", max_chars=GUESS_CHARS)
url_state("why_by", "hiding", options=list(BY))
url_state("compare", "", max_chars=MAX_TEXT_CHARS)
url_state("lens", False, kind=bool)
# A link that names a word to hide opens in that mode even without fill_mode.
url_state("fill_mode", "word" if "blank" in st.query_params else "masks", options=list(MODES))


# -- state: the controls ------------------------------------------------------------------------------------------
def compare_control(box, mode: str) -> str | None:
    """A second sentence to set beside the first (a minimal pair), or None."""
    if mode != "masks":
        return None
    text = box.text_input("Compare with sentence B (optional; one [MASK], Enter to apply)", key="compare",
                          persist_state="session", placeholder="The boat drifted slowly towards the near [MASK].",
                          help="A minimal pair: change one word of the sentence (he / she, river / sea) and see which "
                               "guesses gain and which lose. Each sentence needs one [MASK].")
    to_url("compare")
    return text.strip() or None


def why_controls(box, mode: str) -> tuple[bool, str, str | None]:
    """The "which words it rests on" switch, the method, and (for the blanks) the guess to explain: None for each
    model's first guess."""
    c1, c2, c3 = box.columns(3, vertical_alignment="bottom")
    why = c1.toggle("Show which words it rests on", key="why", persist_state="session",
                    help="Hides each other word of the sentence in turn ([MASK] in its place) and shows how many "
                         "times less (÷) or more (×) likely the answer becomes: a long bar to the left is a word "
                         "the answer rests on. One model run per word. Or, chosen beside it once on, by integrated "
                         "gradients, or both ways at once.")
    by, guess = "hiding", None
    if why:
        by = c2.radio("by", list(BY), key="why_by", persist_state="session", format_func=BY.get, horizontal=True,
                      help="Hiding each word asks what the answer loses without that word alone. Integrated "
                           "gradients walks from the sentence with every word hidden to the sentence as written and "
                           "splits the answer's whole rise in log-probability among the words (Sundararajan et al. "
                           "2017): the bars then multiply to that rise. 17 to 33 runs with gradients (as many as it "
                           "takes for the bars to add up), whatever the length. Both ways: two bars per word.")
    if why and mode == "masks":
        guess = c3.text_input("for the guess", key="why_guess", max_chars=GUESS_CHARS,
                              placeholder="each model's first guess",
                              help="A word to explain at every blank (bank, say), whether or not it is among the "
                                   "guesses shown; empty: each model's own first guess.").strip() or None
    to_url("why", "why_by", "why_guess")
    return why, by, guess


def checked_sentence(text: str) -> str | None:
    """The sentence, blanks normalised and checked; the last sentence that worked while this one is not fixed."""
    checked = None
    with guard("The sentence"):
        checked = compute.checked(text)
        remember("fill_in", checked)
    if checked is None and last_good("fill_in") is not None:  # keep the last sentence on screen until it is fixed
        checked = last_good("fill_in")
        st.info(f"Below: the last sentence that worked, {quoted(checked)}.")
    return checked


def word_to_hide(checked: str, model_id: str) -> compute.Hidden | None:
    """The "Word to hide" list (this sentence's words), in the link as ``blank``; None until one is picked."""
    words = {}
    with guard("The sentence"):
        words = compute.hideable(checked, model_id)
    # first time drawn, or Back: the link's word, checked against this sentence
    if "blank" not in st.session_state or from_history():
        st.session_state["blank"] = url_value("blank", None, options=list(words))
    position = {name: i for name, (_, _, i) in words.items()}
    pick = st.selectbox("Word to hide", list(words), index=None, key="blank", persist_state="session",
                        placeholder="Pick a word of the sentence",
                        format_func=lambda name: f"{name}  · word {position.get(name, 0) + 1}",
                        help="The model sees the sentence with this word replaced by [MASK] (all its pieces, if "
                             "the tokenizer splits it) and gives the probability and rank of the word that was there.")
    to_url("blank")
    if not words:
        st.info("The sentence has no word to hide (only blanks or punctuation).")
    elif pick is None:
        st.info("Pick a word of the sentence to hide.")
    return None if pick is None or pick not in words else words[pick][:2]


# -- figures ----------------------------------------------------------------------------------------------------
def compare_charts(cols: list, chosen: list[str], text_a: str, text_b: str, s: FillState) -> None:
    """Under each model's guesses: its guesses for sentence B, and the words that gained and lost most from A to B
    (one scale for the models' bars of B, one for their changes)."""
    found: dict[str, tuple[list, dict]] = {}
    with guard("Sentence B"):
        checked_b = compute.checked_pair(text_a, text_b)  # once for the page, not once per model
        for model_id in chosen:
            with guard(label(model_id)), limits.heavy(f"{label(model_id)}: sentence B"):
                found[model_id] = (compute.guesses(model_id, checked_b, s.k, s.whole_words),
                                   compute.changed(model_id, text_a, checked_b, s.k, s.whole_words))
    if not found:
        return
    scale = page_figures.shared_bar_scale([preds for preds, _ in found.values()])
    span = max((abs(page_figures.effect_log2(b, a)) for _, c in found.values()
                for a, b in zip(c["prob_a"], c["prob_b"])), default=1.0)
    for col, model_id in zip(cols, chosen):
        if model_id not in found:
            continue
        preds, change = found[model_id]
        name = label(model_id)
        with col:
            plot(page_figures.fill_bars(preds[0], title="sentence B: [MASK]", x_max=scale[0]), f"fill-B-{name}",
                 key=f"fillB::{model_id}", data=pd.DataFrame(preds[0]).assign(model=name))
            plot(page_figures.blank_change_bars(change, title="from A to B: gained and lost", x_max=span),
                 f"change-{name}", key=f"change::{model_id}", data=pd.DataFrame(change).assign(model=name))
    st.caption(TEXT["compared"].format(pool=fill_in.COMPARE_POOL))


def effect_chart(model_id: str, results: dict, scale: float, key: str) -> None:
    """What one answer rests on, by the methods in ``results`` ("hiding", "gradients": one or both)."""
    name = label(model_id)
    hiding, gradients = results.get("hiding"), results.get("gradients")
    answer = (hiding or gradients)["answer"]
    title = f"what “{answer}” rests on"
    if hiding is not None and gradients is not None:
        fig = page_figures.both_methods_bars(hiding, gradients, title=title + " (both ways)", x_max=scale)
    elif gradients is not None:
        fig = page_figures.attribution_bars(gradients, title=title + " (gradients)", x_max=scale)
    else:
        fig = page_figures.word_effect_bars(hiding, title=title, x_max=scale)
    plot(fig, f"rests-on-{name}-{answer}", key=key, data=compute.effects_frame(results, name))
    agreement = compute.agreement_note(hiding, gradients)
    if agreement is not None:
        st.caption(agreement)
    if gradients is not None:
        st.caption(compute.gradients_note(gradients))


BEFORE = ": from the words before it"  # a left-to-right model's bars, in their title


def guess_charts(model_id: str, results: list, scale: list[float]) -> list:
    """Each blank's guesses as bars; returns a place under each blank's bars for what its guess rests on."""
    name = label(model_id)
    places = []
    for i, preds in enumerate(results, 1):
        title = f"[MASK] {i}" if len(scale) > 1 else "[MASK]"  # a GPT guesses only the first of several
        title += BEFORE if model_id in gpt_ids else ""
        data = pd.DataFrame(preds).assign(mask=i, model=name)
        plot(page_figures.fill_bars(preds, title=title, x_max=scale[i - 1]), f"fill-{name}-{i}",
             key=f"fill::{model_id}::{i}", data=data)
        places.append(st.container())
    return places


def score_charts(model_id: str, s: dict, scale: list[float]) -> list:
    """The hidden word's probability, rank and guesses; returns a place under them for what the word rests on."""
    name = label(model_id)
    m1, m2 = st.columns(2)
    m1.metric(f"P({md(s['word'])})", f"{s['prob']:.2%}", help="product of its pieces' probabilities")
    m2.metric("rank", f"{s['rank']:,}", help="1 = the model's first guess (the worst piece's rank)")
    if len(s["pieces"]) > 1:
        st.caption("pieces: " + ", ".join(f"{md(p)} ({q:.1%}, rank {r})" for p, q, r in
                                          zip(s["pieces"], s["piece_probs"], s["piece_ranks"])))
    for j, (piece, preds) in enumerate(zip(s["pieces"], s["top"])):
        data = pd.DataFrame(preds).assign(piece=piece, model=name)
        title = f"guesses for “{piece}”" + (BEFORE if model_id in gpt_ids else "")
        plot(page_figures.fill_bars(preds, title=title, truth=piece, x_max=scale[j]),
             f"mask-{name}-{piece}", key=f"mask::{model_id}::{j}", data=data)
    return [st.container()]


def layer_charts(places: dict, computed: dict, checked: str, whole_words: bool,
                 hidden: compute.Hidden | None) -> None:
    """Under each model's guesses for each blank (or for the hidden word), the guesses its head reads from every
    layer."""
    for model_id, spots in places.items():
        answers = 1 if hidden is not None else len(computed[model_id])
        for i, spot in enumerate(spots[:answers]):
            with spot, guard(f"{label(model_id)}'s guesses layer by layer"), \
                    limits.heavy(f"{label(model_id)}'s guesses layer by layer"):
                result = compute.layers_read(model_id, checked, hidden, i, whole_words)
                plot(page_figures.layer_guess_grid(result, title="the guesses, layer by layer"),
                     f"by-layer-{label(model_id)}-{i + 1}", key=f"lens::{model_id}::{i}",
                     data=lambda result=result, name=label(model_id), blank=i + 1:
                     compute.layers_frame(result, name, blank))
                ranks = ", ".join(f"{r:,}" for r in result["answer_ranks"])
                where = "the blank" if hidden is None else "the hidden word"
                where = f"the word before {where}" if model_id in gpt_ids else where
                st.caption(TEXT["by_layer"].format(where=where,
                                                   what=compute.layers_answer(result, hidden), ranks=ranks))


def explain_each(places: dict, computed: dict, checked: str, hidden: compute.Hidden | None, s: FillState) -> None:
    """Under each model's answers (``places``: per model, a place per blank, or one for the hidden word), which words
    they rest on, by ``s.by`` ("hiding", "gradients" or "both"), drawn once every model's are computed, on one scale
    per blank. Called after the guesses are drawn, so they show while this runs (one model run per word of the
    sentence, or 17 to 33 runs with gradients)."""
    methods = ["hiding", "gradients"] if s.by == "both" else [s.by]
    effects: dict[str, list[dict]] = {}  # per model, per blank: {method: result}
    for model_id, spots in places.items():
        with spots[0], guard(f"What {label(model_id)}'s answer rests on"), \
                limits.heavy(f"{label(model_id)}'s explanation"):
            answers = 1 if hidden is not None else len(computed[model_id])
            effects[model_id] = [{m: compute.explanation(model_id, checked, hidden, i, s.guess, s.whole_words, m)
                                  for m in methods} for i in range(answers)]
    blanks = max((len(per_blank) for per_blank in effects.values()), default=0)
    scales = [page_figures.shared_effect_scale([r for e in effects.values() if i < len(e) for r in e[i].values()])
              for i in range(blanks)]
    for model_id, per_blank in effects.items():
        for i, (spot, e) in enumerate(zip(places[model_id], per_blank)):
            with spot, guard(label(model_id)):
                effect_chart(model_id, e, scales[i], key=f"why::{model_id}::{i}")


def left_to_right_line(checked: str, hidden: compute.Hidden | None) -> str:
    """What a left-to-right model's answers here are, in one line (and that it guesses only the first blank)."""
    if hidden is not None:
        return TEXT["left_to_right_word"]
    extra = TEXT["first_blank_only"] if checked.count(fill_in.MASK) > 1 else ""
    return TEXT["left_to_right"] + (" " + extra if extra else "")


def next_word_view(checked: str, s: FillState) -> None:
    """With no blank: each left-to-right model's guesses for the word after the sentence, then every word of the
    sentence as each model predicts it (a GPT from the words before it, a masked LM with the word hidden)."""
    gpts = [m for m in s.models if m in gpt_ids]
    st.info(TEXT["no_mask_next"].format(word_mode=MODES["word"]))
    cols, found = st.columns(len(gpts)), {}
    for col, model_id in zip(cols, gpts):
        with col, guard(label(model_id)), limits.heavy(f"{label(model_id)}'s guesses"):
            st.subheader(md(label(model_id)))
            found[model_id] = compute.after_sentence(model_id, checked, s.k, s.whole_words)
    scale = page_figures.shared_bar_scale([[r] for r in found.values()])
    for col, model_id in zip(cols, gpts):
        if model_id in found:
            with col:
                plot(page_figures.fill_bars(found[model_id], title="the next word", x_max=scale[0]),
                     f"next-{label(model_id)}", key=f"next::{model_id}",
                     data=pd.DataFrame(found[model_id]).assign(model=label(model_id)))
    lines = {}
    for model_id in s.models:
        with guard(label(model_id)), limits.heavy(f"{label(model_id)}: every word"):
            if compute.predicts_each_word(model_id):
                lines[label(model_id)] = compute.each_word(model_id, checked)
    if lines:
        plot(page_figures.word_guess_lines(lines, title="How likely each model finds each word of the sentence"),
             "each-word", key="fill::each_word",
             data=pd.concat([pd.DataFrame(r).assign(model=name) for name, r in lines.items()]))
        st.caption(TEXT["each_word"])


@st.fragment
def fill_in_view() -> None:
    # st_keyup reports every keystroke (after DEBOUNCE_MS), so the guesses follow the typing; st.text_input would
    # wait for Enter. Its own state lives under another key; "text" mirrors it for the URL.
    text = st_keyup("Sentence (updates as you type)", value=st.session_state["text"], key="text_live",
                    debounce=DEBOUNCE_MS, placeholder="The boat drifted towards the far [MASK] of the river.")
    st.session_state["text"] = text
    # A collapsed expander in presentation mode (the sentence box stays open): the first screen shows the bars.
    box = controls(summary=summary(st.session_state["fill_mode"], st.session_state["k"],
                                   st.session_state["whole_words"], st.session_state["why"],
                                   st.session_state["why_by"]))
    c1, c2, c3, c4 = box.columns([2, 3, 2, 2], vertical_alignment="bottom")
    mode = c1.radio("Guess", list(MODES), key="fill_mode", persist_state="session", format_func=MODES.get,
                    help="Fill in the blanks you write ([MASK]), or hide one word of the sentence and see how the "
                         "model rates it.")
    chosen = c2.multiselect("Models", choices, key="fill_models", persist_state="session", format_func=label)
    top_k = c3.slider("Guesses per blank", **TOP_K, key="k", persist_state="session")
    whole_words = c4.checkbox("Only whole words", key="whole_words", persist_state="session",
                              help="Leave word pieces (##s), special tokens and punctuation out of the guesses.")
    why, by, guess = why_controls(box, mode)
    lens = box.toggle(
        "Show the guesses layer by layer", key="lens", persist_state="session",
        help="Reads the masked-LM head from every layer's vector at the blank, not only the last one's (exBERT's "
             "guesses per layer, the “logit lens”), and gives the rank in each layer of the final answer, or of "
             "the word you hid.")
    to_url("lens")
    compare = compare_control(box, mode)
    to_url("text", "k", "fill_models", "whole_words", "fill_mode")
    s = FillState(tuple(chosen), mode, int(top_k), whole_words, why, by, guess, lens, compare)
    checked = checked_sentence(text)
    if checked is None:
        return
    if not s.models:
        st.info("Choose at least one model.")
        return
    hidden = None
    if s.mode == "word":
        hidden = word_to_hide(checked, s.models[0])
        if hidden is None:
            return
    elif fill_in.MASK not in checked:
        if any(m in gpt_ids for m in s.models):
            next_word_view(checked, s)
        else:
            st.info(TEXT["no_mask"].format(word_mode=MODES["word"]))
        return
    # Every model's guesses first (each in its column, where a failure is reported), then the bars on one scale.
    cols, computed = st.columns(len(s.models)), {}
    for col, model_id in zip(cols, s.models):
        name = label(model_id)
        with col:
            st.subheader(md(name))
            st.caption(read_line(model_id))  # what it read, where its guesses show it
            with guard(name), limits.heavy(f"{name}'s guesses"):
                computed[model_id] = compute.answers(model_id, checked, hidden, s.k, s.whole_words)
    scale = page_figures.shared_bar_scale([r if hidden is None else r["top"] for r in computed.values()])
    if hidden is not None:  # each tokenizer splits the word its own way: piece j of one is not piece j of another
        scale = [max(scale, default=0.0)] * len(scale)
    places = {}
    for col, model_id in zip(cols, s.models):
        if model_id not in computed:
            continue
        with col, guard(label(model_id)):
            charts = guess_charts if hidden is None else score_charts
            places[model_id] = charts(model_id, computed[model_id], scale)
            if model_id in gpt_ids:
                st.caption(left_to_right_line(checked, hidden))  # under its bars: both columns' bars start level
                if s.why or (s.compare is not None and hidden is None):
                    st.caption(TEXT["left_to_right_extras"])
    if len(computed) > 1:
        st.caption("The models' bars for a blank share one scale, so their lengths compare across the columns.")
    published_offer("fill")  # models that read today's English, where the operator allows downloads
    if s.compare is not None:
        compare_charts(cols, [m for m in s.models if m in places and m not in gpt_ids], checked, s.compare, s)
    if s.lens:
        layer_charts(places, computed, checked, s.whole_words, hidden)
    if s.why:
        explain_each({m: p for m, p in places.items() if m not in gpt_ids}, computed, checked, hidden, s)


fill_in_view()
if no_head:  # under the guesses, which come first
    st.caption("Not offered here (they cannot fill in blanks; their vectors still work): "
               + "; ".join(f"**{md(label(m))}**: {md(why)}" for m, why in no_head.items()))
