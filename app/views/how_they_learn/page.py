"""How they learn: the objectives that teach a model language from plain text, watched on a visitor's sentence.
BERT's corruption draw (training's own masking function, seeded from the link) and the model's guesses and loss
where it struck; a left-to-right model (GPT) beside a both-ways one (BERT): their attention masks, each word's
guess, and a word's two vectors when only the words after it differ; a run's training curves per part of its loss;
the objectives compared per unit of compute (the bench's results as shipped beside the successors). Each part loads
only the models it shows.

State, compute, figures: the widgets and the URL give a :class:`LearnState`; ``compute.py`` runs the models;
``figures.py`` names the drawing in ``ctxmodels.viz.objectives``.
"""

from __future__ import annotations

import random

import numpy as np
import streamlit as st

from app.kit import limits
from app.kit.errors import guard
from app.kit.explanations import explain, page_header
from app.kit.inputs import MAX_TEXT_CHARS, MAX_WORD_CHARS, md
from app.kit.plots import plot
from app.kit.presentation import controls
from app.kit.registry import label, require_models
from app.kit.text import page_text
from app.kit.url_state import to_url, url_state
from app.views.how_they_learn import compute
from app.views.how_they_learn import figures as page_figures
from app.views.how_they_learn.state import (
    COMPUTE_MEASURES,
    DEFAULT_MODELS,
    HELD_OUT,
    HELD_OUT_DEFAULT,
    PAIR_A,
    PAIR_B,
    PAIR_FIRST,
    PAIR_NEXT,
    PAIR_OTHER,
    PAIR_WORD,
    PARTS,
    PRESETS,
    SEED,
    SENTENCE,
    DrawState,
    summary,
)

TEXT = page_text(__file__)
page_header("How they learn", TEXT["intro"])
explain(TEXT["explain"], ["mlm", "nsp", "causal_lm", "electra"])

ids = compute.with_successors(require_models())
url_state("learn_part", "corruption", options=list(PARTS))
url_state("learn_text", SENTENCE, max_chars=MAX_TEXT_CHARS)
url_state("learn_seed", 0, kind=int, **SEED)
url_state("learn_wwm", False, kind=bool)
url_state("learn_a", PAIR_A, max_chars=MAX_TEXT_CHARS)
url_state("learn_b", PAIR_B, max_chars=MAX_TEXT_CHARS)
url_state("learn_word", PAIR_WORD, max_chars=MAX_WORD_CHARS)


def new_draw() -> None:
    st.session_state["learn_seed"] = random.randint(SEED["min_value"], SEED["max_value"])


def take_preset() -> None:
    if st.session_state.get("learn_preset"):
        st.session_state["learn_text"] = st.session_state["learn_preset"]


def sentence_row(with_draw: bool) -> str:
    """The sentence box (and the "New draw" button beside it), in the link as ``learn_text``."""
    c1, c2 = st.columns([3, 1], vertical_alignment="bottom") if with_draw else (st.container(), None)
    text = c1.text_input("Your sentence (Enter to apply)", key="learn_text", persist_state="session",
                         placeholder=SENTENCE)
    if c2 is not None:
        c2.button("New draw", on_click=new_draw, icon=":material/casino:", width="stretch",
                  help="Draw again with a new seed, as training does each time it meets the same text.")
    to_url("learn_text")
    return text


def preset_box(box) -> None:
    box.selectbox("Or take a sentence that makes a point", list(PRESETS), index=None, key="learn_preset",
                  format_func=lambda s: f"{PRESETS[s]}: {s}", on_change=take_preset,
                  placeholder="Sentences that make a point")


def first_choice(options: list[str]) -> str:
    return next((m for m in DEFAULT_MODELS if m in options), options[0])


def model_choice(box, key: str, options: list[str], what: str, help: str) -> str:
    """A model among ``options`` (the shipped BERT first where it is one), in the link as ``key``."""
    url_state(key, first_choice(options), options=options, names=label)
    chosen = box.selectbox(what, options, key=key, format_func=label, persist_state="session", help=help)
    to_url(key)
    return chosen


def checked_text(text: str, what: str = "The sentence") -> str | None:
    checked = None
    with guard(what):
        checked = compute.checked(text)
    return checked


# -- BERT's corruption ---------------------------------------------------------------------------------------------
def draw_controls(key: str, models: list[str], model_help: str, seed_help: str, done: str) -> DrawState | None:
    """The sentence, a model among ``models`` (in ``key``), the draw's seed and the whole-word switch, as BERT's
    corruption and ELECTRA share them; None when the sentence is not usable (said on the page)."""
    text = sentence_row(with_draw=True)
    box = controls(summary=summary("corruption", st.session_state["learn_seed"], st.session_state["learn_wwm"],
                                   label(st.session_state.get(key) or first_choice(models))))
    c1, c2, c3 = box.columns([2, 2, 2], vertical_alignment="bottom")
    model = model_choice(c1, key, models, "Model", model_help)
    seed = int(c2.number_input("Seed of the draw", **SEED, step=1, key="learn_seed", persist_state="session",
                               help=seed_help))
    wwm = c3.toggle("Whole-word masking", key="learn_wwm", persist_state="session",
                    help=f"Choose whole words: all pieces of a word are {done} together.")
    preset_box(box)
    to_url("learn_seed", "learn_wwm")
    checked = checked_text(text)
    return None if checked is None else DrawState(model, checked, seed, wwm)


def corruption_part(mlms: list[str]) -> None:
    s = draw_controls("learn_bert", mlms, "A model with a masked-LM head: it guesses hidden pieces.",
                      "The same seed gives the same draw: the link keeps it.", "hidden")
    if s is None:
        return
    seed = s.seed
    name = label(s.model)
    c = None
    with guard(name), limits.heavy(f"{name}'s guesses"):
        c = compute.corruption(s.model, s.text, s.seed, s.whole_words)
    if c is None:
        return
    data = compute.corruption_frame(c, name)
    plot(page_figures.corruption_strip(c, title=f"What {name} reads after the draw (seed {seed})"),
         f"corruption-{name}-{seed}", key="learn::strip", data=data)
    fates = c["fates"]
    pieces = sum(f != "special" for f in fates)
    st.caption(TEXT["draw"].format(chosen=len(c["positions"]), pieces=pieces, share=len(c["positions"]) / pieces,
                                   masks=fates.count("[MASK]"), randoms=fates.count("random word"),
                                   kept=fates.count("kept"), loss=c["mean_loss"]))
    plot(page_figures.corruption_bars(c, title="The model's probability of the original piece: as training hides "
                                                "it, and with nothing hidden"),
         f"corruption-guesses-{name}-{seed}", key="learn::bars", data=data)
    st.caption(TEXT["mismatch"])


# -- left to right or both ways -----------------------------------------------------------------------------------
def direction_models(mlms: list[str], gpts: list[str]) -> tuple[str | None, str | None]:
    shown = [st.session_state.get(key) or first_choice(models) for key, models in (("learn_gpt", gpts),
                                                                                     ("learn_bert", mlms)) if models]
    box = controls(summary=" and ".join(label(m) for m in shown))
    c1, c2 = box.columns(2)
    gpt = model_choice(c1, "learn_gpt", gpts, "Left-to-right model", "A GPT: it reads only the words before each "
                                                                     "word.") if gpts else None
    bert = model_choice(c2, "learn_bert", mlms, "Both-ways model", "A model with a masked-LM head (BERT): it reads "
                                                                   "the whole sentence.") if mlms else None
    preset_box(box)
    return bert, gpt


def directions_part(mlms: list[str], gpts: list[str]) -> None:
    text = sentence_row(with_draw=False)
    bert, gpt = direction_models(mlms, gpts)
    if bert is None and gpt is None:
        st.warning("None of the models here reads text this way: this part needs a BERT with its masked-LM head "
                   "(bert-eltec ships with one) or a GPT.")
        return
    checked = checked_text(text)
    if checked is None:
        return
    masks = {}
    with guard("The attention masks"):
        if gpt is not None:
            masks[label(gpt)] = compute.reading_mask(gpt, checked)
        if bert is not None:
            bert_mask = compute.reading_mask(bert, checked)
            if gpt is None:
                masks["any GPT"] = compute.any_gpt_mask(bert_mask["pieces"])
            masks[label(bert)] = bert_mask
    if masks:
        plot(page_figures.reading_masks(masks, title="Which pieces each piece may look at"),
             "attention-masks", key="learn::masks")
    if gpt is None:
        st.info(TEXT["no_gpt"])
    results = {}
    for model_id in [m for m in (gpt, bert) if m is not None]:
        with guard(label(model_id)), limits.heavy(f"{label(model_id)}'s guesses"):
            results[label(model_id)] = compute.guesses(model_id, checked)
    if results:
        plot(page_figures.word_guess_lines(results, title="How likely each model found each word"),
             "word-guesses", key="learn::guesses", data=compute.guesses_frame(results))
        st.caption(TEXT["guesses"])
    pair_section([m for m in (gpt, bert) if m is not None], gpt)


def pair_section(models: list[str], gpt: str | None) -> None:
    st.subheader("The bank by the river, the bank for wages")
    c1, c2, c3 = st.columns([3, 3, 1])
    a = c1.text_input("Sentence A", key="learn_a", persist_state="session")
    b = c2.text_input("Sentence B", key="learn_b", persist_state="session")
    word = c3.text_input("The word", key="learn_word", persist_state="session")
    to_url("learn_a", "learn_b", "learn_word")
    checked = None
    with guard("The two sentences"):
        checked = compute.checked_pair(a, b, word)
    if checked is None:
        return
    results = {}
    for model_id in models:
        with guard(label(model_id)), limits.heavy(f"{label(model_id)}'s vectors"):
            results[label(model_id)] = compute.same_word_in(model_id, *checked)
    if not results:
        return
    plot(page_figures.same_word_lines(results, checked[2], title=f"“{checked[2]}” in sentence A and in sentence B"),
         f"same-word-{checked[2]}", key="learn::pair")
    st.caption(TEXT["pair"])
    if gpt is not None and label(gpt) in results and np.allclose(results[label(gpt)]["cosine"], 1.0, atol=1e-4):
        st.caption(TEXT["pair_gpt"].format(gpt=md(label(gpt)), word=md(checked[2])))


# -- ELECTRA ---------------------------------------------------------------------------------------------------------
def electra_part(found: list[str]) -> None:
    if not found:
        st.info(TEXT["no_electra"])
        return
    s = draw_controls("learn_electra", found, "An ELECTRA discriminator with its generator.",
                      "The same seed gives the same draw and the same samples: the link keeps it.", "replaced")
    if s is None:
        return
    seed = s.seed
    name = label(s.model)
    r = None
    with guard(name), limits.heavy(f"{name}'s replacements"):
        r = compute.replacements(s.model, s.text, s.seed, s.whole_words)
    if r is None:
        return
    plot(page_figures.replaced_strip(r, title=f"What {name}'s discriminator reads, and how sure it is of each piece"),
         f"electra-{name}-{seed}", key="learn::electra", data=compute.replacements_frame(r, name))
    pieces = sum(not s for s in r["special"])
    st.caption(TEXT["electra"].format(replaced=sum(r["replaced"]), chosen=sum(r["chosen"]), pieces=pieces,
                                      loss=r["loss"]))


# -- NSP or SOP ----------------------------------------------------------------------------------------------------
HEADS = {"nsp": "next sentence (NSP)", "sop": "sentence order (SOP)"}


def pairs_part(found: list[str]) -> None:
    if not found:
        st.warning("None of the models here has a next-sentence or a sentence-order head: bert-eltec ships with "
                   "one (NSP); an ALBERT trained with `ctxmodels train albert --corpus FILE --out DIR` has the other.")
        return
    url_state("learn_pa", PAIR_FIRST, max_chars=MAX_TEXT_CHARS)
    url_state("learn_pb", PAIR_NEXT, max_chars=MAX_TEXT_CHARS)
    url_state("learn_pc", PAIR_OTHER, max_chars=MAX_TEXT_CHARS)
    url_state("learn_measure", False, kind=bool)
    url_state("learn_n", HELD_OUT_DEFAULT, kind=int, **HELD_OUT)
    c1, c2, c3 = st.columns(3)
    a = c1.text_input("Sentence A", key="learn_pa", persist_state="session")
    b = c2.text_input("Sentence B, which follows it", key="learn_pb", persist_state="session")
    other = c3.text_input("A sentence from another book", key="learn_pc", persist_state="session")
    to_url("learn_pa", "learn_pb", "learn_pc")
    checked = None
    with guard("The sentences"):
        checked = tuple(compute.checked(t, what) for t, what in ((a, "sentence A"), (b, "sentence B"),
                                                                 (other, "third sentence")))
    if checked is None:
        return
    typed = {}
    for model_id in found:
        name = f"{label(model_id)}: {HEADS[compute.head_of(model_id)]}"
        with guard(label(model_id)), limits.heavy(f"{label(model_id)}'s answer"):
            typed[name] = compute.typed_pairs(model_id, *checked)
    if typed:
        plot(page_figures.pair_bars(typed, title="Does B follow A? Each model's answer for your sentences",
                                    models=list(typed)),
             "sentence-pairs", key="learn::pairs", data=compute.pairs_frame(typed))
    if "sop" not in {compute.head_of(m) for m in found}:
        st.info(TEXT["no_albert"])
    measure_heldout(found, list(typed))


def measure_heldout(found: list[str], names: list[str]) -> None:
    c1, c2 = st.columns([2, 1], vertical_alignment="bottom")
    on = c1.toggle("Measure on pairs from text the models never trained on", key="learn_measure",
                   persist_state="session", help="Pairs drawn from the books each model's training held out: "
                                                 "consecutive, swapped and from another book.")
    n = int(c2.number_input("Pairs of each kind", **HELD_OUT, step=20, key="learn_n", persist_state="session"))
    to_url("learn_measure", "learn_n")
    if not on:
        return
    results, lines = {}, []
    for model_id in found:
        name = f"{label(model_id)}: {HEADS[compute.head_of(model_id)]}"
        problem = compute.heldout_problem(model_id)
        if problem:
            st.info(f"Not measured: {md(problem)}.")
            continue
        with guard(label(model_id)), limits.heavy(f"{label(model_id)} on held-out pairs"):
            measured = compute.heldout_pairs(model_id, n, 0)
            results[name] = measured["groups"]
            g = {k: v["mean"] for k, v in measured["groups"].items()}
            lines.append(TEXT["measured"].format(name=md(name), source=md(measured["source"]), n=n, **g,
                                                 random_gap=g["consecutive"] - g["random"],
                                                 swap_gap=g["consecutive"] - g["swapped"]))
    if results:
        plot(page_figures.pair_bars(results, title=f"{n} held-out pairs of each kind: the mean probability that B "
                                                   "follows A", models=names),
             "held-out-pairs", key="learn::heldout", data=compute.pairs_frame(results))
        st.caption(" ".join(lines) + " " + TEXT["pairs_point"])


# -- training curves ----------------------------------------------------------------------------------------------
def curves_part(runs: list[str]) -> None:
    if not runs:
        st.info("None of the models here has the record of its training beside it (the trainer writes one: "
                "`ctxmodels train bert --corpus FILE --out DIR`).")
        return
    run = model_choice(st, "learn_run", runs, "Model", "Each part of its loss as its training wrote it down.")
    c = None
    with guard(label(run)):
        c = compute.curves(run)
    if c is None:
        return
    if not c["train"]:
        st.info(f"{md(label(run))}'s record holds no loss yet.")
        return
    plot(page_figures.loss_curves(c, title=f"{label(run)}: the loss, part by part, over {c['steps']:,} steps"),
         f"training-curves-{label(run)}", key="learn::curves", data=lambda: compute.curves_frame(c, label(run)))
    st.caption(TEXT["curves"])


# -- per unit of compute -------------------------------------------------------------------------------------------
OBJECTIVE_NAMES = {"bert": "BERT", "roberta": "RoBERTa", "albert": "ALBERT", "electra": "ELECTRA", "gpt": "GPT"}


def compute_part() -> None:
    read, c = False, None
    with guard("The comparison per unit of compute"):
        c = compute.comparison()
        read = True
    if not read:
        return
    if c is None:
        st.info(TEXT["no_compute"])
        return
    url_state("learn_metric", "guesses", options=list(COMPUTE_MEASURES))
    box = controls(summary=COMPUTE_MEASURES[st.session_state["learn_metric"]])
    measure = box.radio("Measure", list(COMPUTE_MEASURES), key="learn_metric", format_func=COMPUTE_MEASURES.get,
                        horizontal=True, persist_state="session",
                        help="Which test of the models the lines show, against the compute spent training them.")
    to_url("learn_metric")
    unmeasured = compute.not_measured(c, measure)
    axis = compute.MEASURE_AXES[measure]
    plot(page_figures.measure_by_compute(c["rows"], measure, axis, unmeasured,
                                         title=f"{axis[0].upper()}{axis[1:]}, against the compute spent training"),
         f"per-compute-{measure}", key="learn::compute", data=compute.comparison_frame(c))
    said = ", ".join(f"{OBJECTIVE_NAMES.get(k, md(k))} {v:.1%}" + ("" if v0 is None else f" (from {v0:.1%})")
                     for k, v, v0 in compute.comparison_at_end(c, measure))
    missing = ", ".join(OBJECTIVE_NAMES.get(k, md(k)) for k in unmeasured)
    st.caption(f"At the whole budget (from its random weights): {said}."
               + (f" Not measured: {missing}." if missing else "") + " "
               + TEXT[f"compute_{measure}"].format(pos_steps=c["pos_steps"] or "a few hundred"))
    st.markdown(TEXT["compute_intro"])
    st.markdown(TEXT["compute_reading"].format(budget=max(r["tflop"] for r in c["rows"])))
    st.caption(TEXT["compute_made"].format(command=code(c["command"] or "python bench/bench_objectives.py"),
                                           machine=md(c["machine"] or "an unnamed machine")))


def code(text: str) -> str:
    """``text`` on one line as inline code (nothing in a code span is read as Markdown; a backtick would end it)."""
    return "`" + " ".join(text.replace("`", "'").split()) + "`"


part = st.radio("Show", list(PARTS), key="learn_part", format_func=PARTS.get, horizontal=True,
                persist_state="session", label_visibility="collapsed")
to_url("learn_part")
if part == "corruption":
    masked = compute.masked_lms(ids)
    if masked:
        corruption_part(masked)
    else:
        st.warning("None of the models here has a masked-LM head, so none can show the corruption: bert-eltec ships "
                   "with one, or train one with `ctxmodels train bert --corpus FILE --out DIR`.")
elif part == "directions":
    directions_part(compute.masked_lms(ids), compute.left_to_right(ids))
elif part == "electra":
    electra_part(compute.electras(ids))
elif part == "pairs":
    pairs_part(compute.pair_models(ids))
elif part == "curves":
    curves_part(compute.with_curves(ids))
else:
    compute_part()
