"""Fill in the blank: what each masked language model guesses for every [MASK], side by side, as you type; or how
likely it finds a word of the sentence that you hide.

The sentence box, the controls and the charts are one fragment: a keystroke (or any control) reruns only them,
not the page around them, and the box reports a keystroke after a short pause (``DEBOUNCE_MS``).
"""

from __future__ import annotations

from collections import Counter

import pandas as pd
import streamlit as st
from st_keyup import st_keyup

from app import figures
from app.kit import limits
from app.kit.errors import guard
from app.kit.explanations import explain, page_header
from app.kit.inputs import MAX_TEXT_CHARS, check_masks, check_text, last_good, md, quoted, remember
from app.kit.plots import plot
from app.kit.presentation import controls
from app.kit.registry import get_model, label, require_models
from app.kit.url_state import to_url, url_state, url_value
from ctxmodels.analysis import fill_in
from ctxmodels.analysis.blanks import check_comparable, rank_agreement

page_header(
    "Fill in the blank",
    "Write `[MASK]` (or `[mask]`, `<mask>`) where a word is missing: the BERT guesses it as you type (add more "
    "models under *Models*, ELMo among them, to compare their guesses side by side). Or hide a word of your "
    "sentence and see how likely the model finds it.",
)
explain(
    "BERT was trained to restore hidden words: 15% of the pieces of each training text were replaced (mostly by "
    "`[MASK]`) and the model learned to predict the originals from both sides of the context. The bars are the "
    "model's softmax probabilities over its vocabulary at the masked position; the axis runs to a little above the "
    "largest one shown. A blank may be written `[MASK]`, `[mask]` or RoBERTa's `<mask>`: all are read as BERT's "
    "`[MASK]`. *Only whole words* leaves out the guesses that are not words: word pieces (`##s`), special tokens "
    "(`[UNK]`, `[SEP]`, …) and punctuation; each guess keeps the model's own probability, so the bars then add up "
    "to less than the whole. *A word I hide* puts `[MASK]` in place of a word you pick and shows how likely the "
    "model finds the word that was there. A word the tokenizer splits into pieces is hidden whole; its "
    "probability is the product of its pieces' (each predicted independently) and its rank the worst of its "
    "pieces' ranks (among all the vocabulary's pieces). *Show which words it rests on* hides each other word of "
    "the sentence in turn (`[MASK]` in its place, so nothing else moves) and reads the answer's probability again: "
    "a bar to the left (÷) is how many times less likely the answer becomes without that word, one to the right (×) "
    "a word that was pulling towards another answer; the hover says what the model would then guess first. It "
    "explains each model's first guess, or a word you type (any word of the vocabulary), or the word you hid. "
    "*By integrated gradients* asks the same question another way (LIT's salience): it walks from the sentence with "
    "every word hidden to the sentence as written, blending their input word vectors step by step, and splits the "
    "answer's whole rise in log-probability among the words by the model's gradients (Sundararajan et al. 2017); "
    "a bar is how many times less likely the answer is without that word's share, so the bars multiply to the "
    "whole rise. Where the two methods disagree, words act together (one matters only beside another), and each "
    "method shares out their joint effect its own way. "
    "**ELMo** has no `[MASK]`: its forward language model predicts a word from the words before it, its backward "
    "one from the words after it, so it fills a blank with the product of the two, renormalised over its "
    "vocabulary of whole words (as the training text wrote them, so *Paris* and *paris* differ); to hide a word "
    "it leaves it out of the sentence. *Compare with sentence B* reads the blank of a second sentence that "
    "differs from the first in a word or two (he / she, river / sea): the words whose probability grew or fell "
    "most from A to B, by how many times, among the 100 best guesses of either sentence, show what that word "
    "changed in the model's expectations, its learnt biases included. *Show the guesses layer by layer* reads the "
    "masked-LM head (ELMo: its softmax) from every layer's vector at the blank, not only the last one's, as exBERT "
    "does: only the last layer was trained to be read this way, so an earlier row shows what that layer already "
    "holds in the head's terms, and the rank of the final answer (or of the word you hid) in each layer shows "
    "where the answer takes shape.",
    ["mlm", "integrated_gradients"],
)

ids = require_models(need=lambda m: m.has_attention or m.kind == "elmo", what="filling in blanks")
mlm_ids = [m for m in ids if fill_in.fills_blanks(get_model(m))]
no_head = [m for m in ids if m not in mlm_ids]
if no_head:
    st.caption("Not offered here (they cannot fill in blanks; their vectors still work): "
               + "; ".join(f"**{md(label(m))}**: {md(fill_in.why_no_fill(get_model(m)))}" for m in no_head))
if not mlm_ids:
    st.warning("None of the available models can fill in blanks: "
               + "; ".join(f"{md(label(m))}: {md(fill_in.why_no_fill(get_model(m)))}" for m in no_head)
               + ". Load a checkpoint saved with its MLM head (ours always are; BERT, RoBERTa, DistilBERT, ALBERT, "
               "an ELECTRA generator, DeBERTa) or an ELMo trained with `ctxmodels train elmo` on the **Models** "
               "page.")
    st.stop()

LENS_GUESSES = 5  # the guesses per layer in "the guesses layer by layer" (a row of cells each)
DEBOUNCE_MS = 20  # the keystroke box waits this long after a key before it reports (keys closer together: one run)
TOP_K = dict(min_value=1, max_value=20)
MODES = {"masks": "the blanks I write", "word": "a word I hide"}

url_state("text", "The boat drifted slowly towards the far [MASK] of the river.", max_chars=MAX_TEXT_CHARS)
# One model by default (the first: the default BERT): every model shown is run again on every keystroke, and one
# keeps a keystroke within the 150 ms a person reads as instant (bench/bench_fill_in.py: 145-149 ms with
# minilm-eltec alone; 163-178 ms with bert-eltec beside it). "Which words it rests on" is off for the same reason.
url_state("fill_models", mlm_ids[:1], options=mlm_ids, many=True, names=label)
url_state("k", 5, kind=int, **TOP_K)
url_state("whole_words", True, kind=bool)
url_state("why", False, kind=bool)
url_state("why_guess", "", max_chars=40)
BY = {"hiding": "hiding each word", "gradients": "integrated gradients", "both": "both ways"}
url_state("why_by", "hiding", options=list(BY))
url_state("compare", "", max_chars=MAX_TEXT_CHARS)
url_state("lens", False, kind=bool)
# A link that names a word to hide opens in that mode even without fill_mode.
url_state("fill_mode", "word" if "blank" in st.query_params else "masks", options=list(MODES))


@st.cache_data(max_entries=512, show_spinner=False)
def guesses(model_id: str, text: str, k: int, whole_words: bool) -> list:
    m = get_model(model_id)
    return fill_in.fill_mask(m, m.tokenizer, text, top_k=k, whole_words=whole_words)


@st.cache_data(max_entries=512, show_spinner=False)
def score(model_id: str, text: str, word: str, occurrence: int, k: int, whole_words: bool) -> dict:
    m = get_model(model_id)
    return fill_in.mask_word(m, m.tokenizer, text, word, occurrence=occurrence, top_k=k,
                             whole_words=whole_words).to_dict()


@st.cache_data(max_entries=256, show_spinner=False)
def rests_on(model_id: str, text: str, blank: int, guess: str | None, whole_words: bool) -> dict:
    m = get_model(model_id)
    return fill_in.guess_effects(m, m.tokenizer, text, blank=blank, guess=guess, whole_words=whole_words).to_dict()


@st.cache_data(max_entries=256, show_spinner=False)
def hidden_rests_on(model_id: str, text: str, word: str, occurrence: int, whole_words: bool) -> dict:
    m = get_model(model_id)
    return fill_in.word_effects(m, m.tokenizer, text, word, occurrence=occurrence,
                                whole_words=whole_words).to_dict()


@st.cache_data(max_entries=256, show_spinner=False)
def gradients(model_id: str, text: str, blank: int, guess: str | None, whole_words: bool) -> dict:
    m = get_model(model_id)
    return fill_in.guess_attributions(m, m.tokenizer, text, blank=blank, guess=guess,
                                      whole_words=whole_words).to_dict()


@st.cache_data(max_entries=256, show_spinner=False)
def hidden_gradients(model_id: str, text: str, word: str, occurrence: int) -> dict:
    m = get_model(model_id)
    return fill_in.word_attributions(m, m.tokenizer, text, word, occurrence=occurrence).to_dict()


@st.cache_data(max_entries=256, show_spinner=False)
def by_layer(model_id: str, text: str, blank: int, whole_words: bool) -> dict:
    m = get_model(model_id)
    return fill_in.guesses_by_layer(m, getattr(m, "tokenizer", None), text, blank=blank, top_k=LENS_GUESSES,
                                    whole_words=whole_words).to_dict()


@st.cache_data(max_entries=256, show_spinner=False)
def hidden_by_layer(model_id: str, text: str, word: str, occurrence: int, whole_words: bool) -> dict:
    m = get_model(model_id)
    return fill_in.hidden_by_layer(m, getattr(m, "tokenizer", None), text, word, occurrence=occurrence,
                                   top_k=LENS_GUESSES, whole_words=whole_words).to_dict()


@st.cache_data(max_entries=256, show_spinner=False)
def changed(model_id: str, text_a: str, text_b: str, k: int, whole_words: bool) -> dict:
    return fill_in.compare_blanks(get_model(model_id), text_a, text_b, top_k=k, whole_words=whole_words).to_dict()


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


def compare_charts(cols: list, chosen: list[str], text_a: str, text_b: str, top_k: int, whole_words: bool) -> None:
    """Under each model's guesses: its guesses for sentence B, and the words that gained and lost most from A to B
    (one scale for the models' bars of B, one for their changes)."""
    found: dict[str, tuple[list, dict]] = {}
    with guard("Sentence B"):
        checked_b = check_masks(check_text(text_b, "sentence B"))
        check_comparable(text_a, checked_b)  # once for the page, not once per model
        for model_id in chosen:
            with guard(label(model_id)), limits.heavy(f"{label(model_id)}: sentence B"):
                found[model_id] = (guesses(model_id, checked_b, top_k, whole_words),
                                   changed(model_id, text_a, checked_b, top_k, whole_words))
    if not found:
        return
    scale = figures.shared_bar_scale([preds for preds, _ in found.values()])
    span = max((abs(figures.effect_log2(b, a)) for _, c in found.values() for a, b in zip(c["prob_a"], c["prob_b"])),
               default=1.0)
    for col, model_id in zip(cols, chosen):
        if model_id not in found:
            continue
        preds, change = found[model_id]
        name = label(model_id)
        with col:
            plot(figures.fill_bars(preds[0], title="sentence B: [MASK]", x_max=scale[0]), f"fill-B-{name}",
                 key=f"fillB::{model_id}", data=pd.DataFrame(preds[0]).assign(model=name))
            plot(figures.blank_change_bars(change, title="from A to B: gained and lost", x_max=span),
                 f"change-{name}", key=f"change::{model_id}", data=pd.DataFrame(change).assign(model=name))
    st.caption(f"From A to B: among the {fill_in.COMPARE_POOL} best guesses of either sentence, the words whose "
               "probability at the blank grew most (×, to the right) and fell most (÷, to the left) when A became B.")


def effect_chart(model_id: str, results: dict, scale: float, key: str) -> None:
    """What one answer rests on, by the methods in ``results`` ("hiding", "gradients": one or both)."""
    name = label(model_id)
    hiding, gradients = results.get("hiding"), results.get("gradients")
    answer = (hiding or gradients)["answer"]
    title = f"what “{answer}” rests on"
    data = pd.DataFrame({"word": (hiding or gradients)["words"]}).assign(answer=answer, model=name)
    if hiding is not None:
        data = data.assign(p_hidden=hiding["hidden_probs"], first_guess_then=hiding["top_when_hidden"],
                           p_all_words=hiding["prob"])
    if gradients is not None:
        data = data.assign(nats=gradients["scores"], p_every_word_hidden=gradients["baseline_prob"])
    if hiding is not None and gradients is not None:
        fig = figures.both_methods_bars(hiding, gradients, title=title + " (both ways)", x_max=scale)
    elif gradients is not None:
        fig = figures.attribution_bars(gradients, title=title + " (gradients)", x_max=scale)
    else:
        fig = figures.word_effect_bars(hiding, title=title, x_max=scale)
    plot(fig, f"rests-on-{name}-{answer}", key=key, data=data)
    rho = rank_agreement(hiding, gradients) if hiding is not None and gradients is not None else None
    if rho is not None:
        alike = "alike" if rho >= 0.7 else "partly alike" if rho >= 0.3 else "differently"
        st.caption(f"The two methods rank these words {alike} (Spearman ρ = {rho:.2f}, 1: the same order). Where "
                   "they differ, words act together, and each method shares out their joint effect its own way.")
    if gradients is not None:
        rise = gradients["prob"] / gradients["baseline_prob"] if gradients["baseline_prob"] > 0 else float("inf")
        st.caption(f"Together the scored words account for a factor of {figures.times(rise)}: "
                   f"P({md(answer)}) is {figures.percent(gradients['baseline_prob'])} with every scored word hidden "
                   f"and {figures.percent(gradients['prob'])} as written ({gradients['steps']} steps of the "
                   f"integral; the scores add up to within {abs(gradients['gap']):.2g} nats).")


def hideable(text: str, model_id: str) -> dict[str, tuple[str, int, int]]:
    """The words of ``text`` one can hide (with a letter or digit; not a blank already there), by their name in the
    list and the link: the word as written, then " (2)", " (3)" for its later occurrences. Values: (word, its
    occurrence as the model finds it, its position in the sentence)."""
    model = get_model(model_id)
    norm = str.lower if getattr(model.tokenizer, "lowercase", False) else str
    seen: Counter[str] = Counter()
    out = {}
    for i, word in enumerate(fill_in.sentence_words(model, text)):
        n = seen[norm(word)]
        seen[norm(word)] += 1
        if word == fill_in.MASK or not any(c.isalnum() for c in word):
            continue
        out[word if n == 0 else f"{word} ({n + 1})"] = (word, n, i)
    return out


def checked_sentence(text: str) -> str | None:
    """The sentence, blanks normalised and checked; the last sentence that worked while this one is not fixed."""
    checked = None
    with guard("The sentence"):
        checked = check_masks(check_text(fill_in.normalize_masks(text), "sentence"))
        remember("fill_in", checked)
    if checked is None and last_good("fill_in") is not None:  # keep the last sentence on screen until it is fixed
        checked = last_good("fill_in")
        st.info(f"Below: the last sentence that worked, {quoted(checked)}.")
    return checked


def word_to_hide(checked: str, model_id: str) -> tuple[str, int] | None:
    """The "Word to hide" list (this sentence's words), in the link as ``blank``; None until one is picked."""
    words = {}
    with guard("The sentence"):
        words = hideable(checked, model_id)
    if "blank" not in st.session_state:  # first time drawn: the link's word, checked against this sentence
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


def guess_charts(model_id: str, results: list, scale: list[float]) -> list:
    """Each blank's guesses as bars; returns a place under each blank's bars for what its guess rests on."""
    name = label(model_id)
    places = []
    for i, preds in enumerate(results, 1):
        title = f"[MASK] {i}" if len(results) > 1 else "[MASK]"
        data = pd.DataFrame(preds).assign(mask=i, model=name)
        plot(figures.fill_bars(preds, title=title, x_max=scale[i - 1]), f"fill-{name}-{i}",
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
        plot(figures.fill_bars(preds, title=f"guesses for “{piece}”", truth=piece, x_max=scale[j]),
             f"mask-{name}-{piece}", key=f"mask::{model_id}::{j}", data=data)
    return [st.container()]


def layer_charts(places: dict, computed: dict, checked: str, whole_words: bool,
                 hidden: tuple[str, int] | None) -> None:
    """Under each model's guesses for each blank (or for the hidden word), the guesses its head reads from every
    layer."""
    for model_id, spots in places.items():
        answers = 1 if hidden is not None else len(computed[model_id])
        for i, spot in enumerate(spots[:answers]):
            with spot, guard(f"{label(model_id)}'s guesses layer by layer"), \
                    limits.heavy(f"{label(model_id)}'s guesses layer by layer"):
                result = (hidden_by_layer(model_id, checked, *hidden, whole_words) if hidden is not None else
                          by_layer(model_id, checked, i, whole_words))
                ranks = ", ".join(f"{r:,}" for r in result["answer_ranks"])
                def data(result=result, name=label(model_id), blank=i + 1) -> pd.DataFrame:
                    return pd.DataFrame([dict(layer=layer, rank=j + 1, guess=g["token"], prob=g["prob"])
                                         for layer, row in zip(result["layer_names"], result["top"])
                                         for j, g in enumerate(row)]).assign(model=name, blank=blank)

                plot(figures.layer_guess_grid(result, title="the guesses, layer by layer"),
                     f"by-layer-{label(model_id)}-{i + 1}", key=f"lens::{model_id}::{i}", data=data)
                if hidden is None:
                    what = f"The model's answer “{md(result['answer'])}”"
                elif result["answer"].casefold() == hidden[0].casefold():
                    what = f"The hidden word “{md(result['answer'])}”"
                else:  # a word the tokenizer splits: its first piece is read at the position shown
                    what = f"The hidden word's first piece “{md(result['answer'])}”"
                where = "the blank" if hidden is None else "the hidden word"
                st.caption(f"The head read from each layer's vector at {where}; only the last layer was trained "
                           f"to be read this way. {what} ranks {ranks} from the first layer to the last: where it "
                           "climbs is where the answer takes shape.")


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
        guess = c3.text_input("for the guess", key="why_guess", max_chars=40,
                              placeholder="each model's first guess",
                              help="A word to explain at every blank (bank, say), whether or not it is among the "
                                   "guesses shown; empty: each model's own first guess.").strip() or None
    to_url("why", "why_by", "why_guess")
    return why, by, guess


def explanation(model_id: str, checked: str, hidden: tuple[str, int] | None, blank: int, guess: str | None,
                whole_words: bool, method: str) -> dict:
    """What one answer rests on by one method: the hidden word (``hidden``), or the guess at blank ``blank``."""
    if hidden is not None:
        if method == "gradients":
            return hidden_gradients(model_id, checked, *hidden)
        return hidden_rests_on(model_id, checked, *hidden, whole_words)
    return (gradients if method == "gradients" else rests_on)(model_id, checked, blank, guess, whole_words)


def explain_each(places: dict, computed: dict, checked: str, hidden: tuple[str, int] | None, guess: str | None,
                 whole_words: bool, by: str) -> None:
    """Under each model's answers (``places``: per model, a place per blank, or one for the hidden word), which words
    they rest on, by ``by`` ("hiding", "gradients" or "both"), drawn once every model's are computed, on one scale
    per blank. Called after the guesses are drawn, so they show while this runs (one model run per word of the
    sentence, or 17 to 33 runs with gradients)."""
    methods = ["hiding", "gradients"] if by == "both" else [by]
    effects: dict[str, list[dict]] = {}  # per model, per blank: {method: result}
    for model_id, spots in places.items():
        with spots[0], guard(f"What {label(model_id)}'s answer rests on"), \
                limits.heavy(f"{label(model_id)}'s explanation"):
            answers = 1 if hidden is not None else len(computed[model_id])
            effects[model_id] = [{m: explanation(model_id, checked, hidden, i, guess, whole_words, m) for m in methods}
                                 for i in range(answers)]
    blanks = max((len(per_blank) for per_blank in effects.values()), default=0)
    scales = [figures.shared_effect_scale([r for e in effects.values() if i < len(e) for r in e[i].values()])
              for i in range(blanks)]
    for model_id, per_blank in effects.items():
        for i, (spot, e) in enumerate(zip(places[model_id], per_blank)):
            with spot, guard(label(model_id)):
                effect_chart(model_id, e, scales[i], key=f"why::{model_id}::{i}")


@st.fragment
def fill_in_view() -> None:
    # st_keyup reports every keystroke (after DEBOUNCE_MS), so the guesses follow the typing; st.text_input would
    # wait for Enter. Its own state lives under another key; "text" mirrors it for the URL.
    text = st_keyup("Sentence (updates as you type)", value=st.session_state["text"], key="text_live",
                    debounce=DEBOUNCE_MS, placeholder="The boat drifted towards the far [MASK] of the river.")
    st.session_state["text"] = text
    # A collapsed expander in presentation mode (the sentence box stays open): the first screen shows the bars.
    box = controls(summary=f"{MODES[st.session_state['fill_mode']]}, {st.session_state['k']} guesses"
                           + (", whole words" if st.session_state["whole_words"] else "")
                           + (f", which words it rests on ({BY[st.session_state['why_by']]})"
                              if st.session_state["why"] else ""))
    c1, c2, c3, c4 = box.columns([2, 3, 2, 2], vertical_alignment="bottom")
    mode = c1.radio("Guess", list(MODES), key="fill_mode", persist_state="session", format_func=MODES.get,
                    help="Fill in the blanks you write ([MASK]), or hide one word of the sentence and see how the "
                         "model rates it.")
    chosen = c2.multiselect("Models", mlm_ids, key="fill_models", persist_state="session", format_func=label)
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
    checked = checked_sentence(text)
    if checked is None:
        return
    if not chosen:
        st.info("Choose at least one model.")
        return
    hidden = None
    if mode == "word":
        hidden = word_to_hide(checked, chosen[0])
        if hidden is None:
            return
    elif fill_in.MASK not in checked:
        st.info("The sentence has no `[MASK]` yet: write `[MASK]` where the model should guess a word, or choose "
                f"*{MODES['word']}* above to hide a word of the sentence.")
        return
    # Every model's guesses first (each in its column, where a failure is reported), then the bars on one scale.
    cols, computed = st.columns(len(chosen)), {}
    for col, model_id in zip(cols, chosen):
        name = label(model_id)
        with col:
            st.subheader(md(name))
            with guard(name), limits.heavy(f"{name}'s guesses"):
                computed[model_id] = (guesses(model_id, checked, int(top_k), whole_words) if hidden is None else
                                      score(model_id, checked, *hidden, int(top_k), whole_words))
    scale = figures.shared_bar_scale([r if hidden is None else r["top"] for r in computed.values()])
    if hidden is not None:  # each tokenizer splits the word its own way: piece j of one is not piece j of another
        scale = [max(scale, default=0.0)] * len(scale)
    places = {}
    for col, model_id in zip(cols, chosen):
        if model_id not in computed:
            continue
        with col, guard(label(model_id)):
            charts = guess_charts if hidden is None else score_charts
            places[model_id] = charts(model_id, computed[model_id], scale)
    if len(computed) > 1:
        st.caption("The models' bars for a blank share one scale, so their lengths compare across the columns.")
    if compare is not None:
        compare_charts(cols, [m for m in chosen if m in computed], checked, compare, int(top_k), whole_words)
    if lens:
        layer_charts(places, computed, checked, whole_words, hidden)
    if why:
        explain_each(places, computed, checked, hidden, guess, whole_words, by)


fill_in_view()
