"""ELMo layers: which layers a small task head wants (learned scalar-mix weights) next to each layer's own score."""

from __future__ import annotations

import math

import pandas as pd
import streamlit as st

from app import figures
from app.kit import limits, memory
from app.kit.errors import guard
from app.kit.explanations import FORMULAS, explain, page_header
from app.kit.inputs import md
from app.kit.plots import plot
from app.kit.presentation import controls, is_presenting
from app.kit.registry import get_model, label, require_models
from app.kit.url_state import to_url, url_state
from ctxmodels.analysis import probes

TASK_NAMES = {"pos": "part of speech", "wsd": "word sense"}
MIN_TEST_ITEMS = 50  # fewer: an accuracy's 95% interval is wider than ±14 points, more than layers usually differ

page_header(
    "ELMo layers",
    "ELMo hands a task not one layer but a learned mix of all of them. Train a small probe on top of the frozen "
    "model and read off which layers it wants.",
)
READING = (
    "The bars are the weights $s_j$ a probe learned for each layer $\\mathbf{h}_j$ (they sum to 1; $\\gamma$ "
    "scales the mix); the line is the accuracy of the same probe given one layer alone. **In the ELMo paper, "
    "part of speech is read best from the first LSTM layer and word sense from the top one: the layers carry "
    "different kinds of information, and the mix lets each task take what it needs.**"
)
if not is_presenting():  # in presentation mode the formula and how to read the bars wait in the box below
    st.latex(FORMULAS["scalar_mix"])
    st.markdown(READING)
explain(
    (READING + "\n\n" if is_presenting() else "") +
    "The probe (on SemCor sentences, split by sentence into train and test) is a scalar mix followed by one "
    "linear layer, trained with cross-entropy; the model itself is frozen. Each layer is standardised first, "
    "so the weights compare what the layers carry rather than their scales. The baseline is the majority tag "
    "(part of speech) or each lemma's most frequent sense among the training items (word sense; those items are "
    "sense-balanced, so this baseline is near chance: see the note under its figure). The "
    "model was trained as a bidirectional language model; layer 0 is the character CNN, layer j ≥ 1 the "
    "concatenated forward and backward LSTM states.",
    ["bilm", "scalar_mix"],
)


def margin(accuracy: float, n: int) -> float:
    """Half the width of the 95% interval of an accuracy measured on ``n`` items (normal approximation)."""
    return 1.96 * math.sqrt(max(accuracy * (1 - accuracy), 0.0) / max(n, 1))


def too_small(r: probes.ProbeResult) -> str | None:
    """Why a probe's result means little (its test set is too small), or None."""
    reasons = []
    if r.n_test < MIN_TEST_ITEMS:
        reasons.append(f"only {r.n_test} test items (fewer than {MIN_TEST_ITEMS}): an accuracy measured on so few "
                       f"is uncertain by about ±{100 * margin(0.5, r.n_test):.0f} points (95% interval), more than "
                       "the layers usually differ")
    if r.n_test < len(r.labels):
        reasons.append(f"fewer test items ({r.n_test}) than classes ({len(r.labels)}): some "
                       f"{'senses' if r.task == 'wsd' else 'tags'} are never tested")
    if not reasons:
        return None
    return ("**Too small to mean much**: " + "; ".join(reasons) + ". Run it again below with more SemCor "
            "sentences.")


def balance_note(r: probes.ProbeResult) -> str:
    """What the word-sense baseline is here: the items are sense-balanced, so it is near (or below) chance."""
    n_lemmas, n_senses = len(r.lemmas), len(r.labels)
    per_sense = r.settings.get("max_per_sense")
    cap = f"at most {per_sense} each, " if per_sense else ""
    chance = f" (about {n_lemmas / n_senses:.0%} here: {n_lemmas} lemmas, {n_senses} senses)" if n_lemmas and \
        n_senses else ""
    return ("The word-sense items are **sense-balanced**: each lemma's senses contribute about the same number of "
            f"occurrences ({cap}taken in turn until the sentence budget is spent). So the most frequent sense is "
            f"near chance, one guess among a lemma's senses{chance}, and it can fall below chance: when a lemma's "
            "senses have equal totals, the one commonest among the training items is left with the fewest test "
            "items. In running text the most frequent sense is a strong baseline; here the probe is compared with "
            "guessing.")


ids = require_models(need=lambda m: m.n_layers >= 2, what="layer probes")
elmo_first = sorted(ids, key=lambda m: get_model(m).kind != "elmo")
url_state("probe_model", elmo_first[0], options=ids, names=label)
with controls(summary=label(st.session_state["probe_model"])):
    model_id = st.selectbox("Model", elmo_first, key="probe_model", format_func=label,
                            help="ELMo first; a probe works on any model with several layers (BERT too).")
to_url("probe_model")
model = get_model(model_id)


found = {task: probes.latest_cached_result(model, task) for task in probes.TASKS}
results = {task: r for task, r in found.items() if r is not None}  # the newest of each task
for task in probes.TASKS:  # a result computed in this session (e.g. recomputed without caching) wins
    fresh = st.session_state.get(f"probe::{model_id}::{task}")
    if fresh is not None:
        results[task] = fresh

cols = st.columns(2)
for col, task in zip(cols, probes.TASKS):
    with col:
        st.subheader(TASK_NAMES[task])
        r = results.get(task)
        if r is None:
            st.info(f"No {TASK_NAMES[task]} probe has been run on {md(label(model_id))} yet. Run one below "
                    f"(or `ctxmodels probe --model ... --task {task}`); results are cached beside the model.")
            continue
        fig = figures.mix_weights_bars(r.layer_names, r.mix_weights, r.gamma, r.layer_accuracies,
                                       title=f"{TASK_NAMES[task]} probe")
        data = pd.DataFrame(r.rows()).assign(task=task, gamma=r.gamma, mix_accuracy=r.mix_accuracy,
                                             baseline=r.baseline_accuracy)
        plot(fig, f"probe-{task}-{label(model_id)}", key=f"probe::{task}", data=data)
        base = "majority tag" if task == "pos" else "most frequent sense"
        st.markdown(f"Accuracy with the mix: **{r.mix_accuracy:.1%}** · best single layer "
                    f"({md(r.layer_names[r.best_layer])}): **{max(r.layer_accuracies):.1%}** · {base}: "
                    f"{r.baseline_accuracy:.1%}")
        st.caption(f"{r.n_train} training / {r.n_test} test items from {r.n_sentences} SemCor sentences"
                   + (f" ({len(r.lemmas)} lemmas, {len(r.labels)} senses)" if task == "wsd" and r.lemmas else "")
                   + f", {md(r.settings.get('epochs', '?'))} epochs, seed {md(r.settings.get('seed', '?'))}"
                   + (" (cached)" if r.cached else "")
                   + f"; on {r.n_test} test items an accuracy is uncertain by about "
                     f"±{100 * margin(r.mix_accuracy, r.n_test):.0f} points (95%).")
        warning = too_small(r)
        if warning:
            st.warning(warning, icon=":material/warning:")
        if task == "wsd":
            st.caption(balance_note(r))

st.divider()
st.subheader("Run a probe")
with st.form("probe_form"):
    f1, f2, f3 = st.columns(3)
    task = f1.selectbox("Task", list(probes.TASKS), format_func=TASK_NAMES.get, key="probe_task")
    n_sentences = f2.number_input("SemCor sentences", min_value=20, max_value=20_000, value=300, step=50,
                                  key="probe_sentences", help="Embedding them is most of the time.")
    epochs = f3.number_input("Epochs", min_value=1, max_value=50, value=10, key="probe_epochs")
    again = st.checkbox("Recompute even if a result with these settings is cached", key="probe_again")
    go = st.form_submit_button("Run probe", type="primary")
if go:
    bar = st.progress(0.0, text="starting …")

    def progress(fraction: float, message: str) -> None:
        bar.progress(min(max(float(fraction), 0.0), 1.0), text=message)

    with guard("The probe"), limits.heavy("The probe"):
        settings = probes.ProbeSettings(n_sentences=int(n_sentences), epochs=int(epochs))
        result = probes.run_probe(model, task, settings, progress=progress, cache=not again)
        memory.settle()  # SemCor, now loaded for good: out of the garbage collector's way (app/kit/memory.py)
        st.session_state[f"probe::{model_id}::{task}"] = result
        bar.progress(1.0, text="done")
        st.rerun()
