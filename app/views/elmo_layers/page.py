"""ELMo layers: which layers a small task head wants (learned scalar-mix weights) next to each layer's own score."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app.kit import limits, memory
from app.kit.errors import guard
from app.kit.explanations import FORMULAS, SYMBOLS, explain, page_header
from app.kit.inputs import md
from app.kit.plots import plot
from app.kit.presentation import controls, is_presenting
from app.kit.registry import get_model, label, require_models
from app.kit.text import page_text
from app.kit.url_state import to_url, url_state
from app.views.elmo_layers import compute
from app.views.elmo_layers import figures as page_figures
from app.views.elmo_layers.state import EPOCHS, SENTENCES, TASK_NAMES, ProbeRun
from ctxmodels.analysis import probes

TEXT = page_text(__file__)
page_header("ELMo layers", TEXT["intro"])
explain((TEXT["reading"] + "\n\n" if is_presenting() else "") + TEXT["explain"], ["bilm", "scalar_mix"])

ids = require_models(need=lambda m: m.n_layers >= 2, what="layer probes")
elmo_first = sorted(ids, key=lambda m: get_model(m).kind != "elmo")
url_state("probe_model", elmo_first[0], options=ids, names=label)
with controls(summary=label(st.session_state["probe_model"])):
    model_id = st.selectbox("Model", elmo_first, key="probe_model", format_func=label,
                            help="ELMo first; a probe works on any model with several layers (BERT too).")
to_url("probe_model")

stored = compute.stored(model_id)
cols = st.columns(2)
for col, task in zip(cols, probes.TASKS):
    with col:
        st.subheader(TASK_NAMES[task])
        mine_key = f"probe::{model_id}::{task}"  # this visitor's own run: theirs alone (compute.py)
        mine = st.session_state.get(mine_key)
        r = mine or stored.get(task)
        if r is None:
            st.info(f"No {TASK_NAMES[task]} probe has been run on {md(label(model_id))} yet. Run one below (the "
                    "result is yours, for this visit), or `ctxmodels probe --model ... --task "
                    f"{task}` on the server, which stores it beside the model for every visitor.")
            continue
        st.markdown(f"Showing {compute.source_of(model_id, r, mine is not None)}.")
        if mine is not None and task in stored and st.button("Show the stored measurement", key=f"{mine_key}::drop"):
            del st.session_state[mine_key]
            st.rerun()
        fig = page_figures.mix_weights_bars(r.layer_names, r.mix_weights, r.gamma, r.layer_accuracies,
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
                   + f"; on {r.n_test} test items an accuracy is uncertain by about "
                     f"±{100 * compute.margin(r.mix_accuracy, r.n_test):.0f} points (95%).")
        warning = compute.too_small(r)
        if warning:
            st.warning(warning, icon=":material/warning:")
        if task == "wsd":
            st.caption(compute.balance_note(r))

if not is_presenting():  # under the figures, which come first; in presentation mode in the box above
    st.markdown(TEXT["reading"])
    st.latex(FORMULAS["scalar_mix"])
    st.caption(SYMBOLS["scalar_mix"])
st.divider()
st.subheader("Run a probe")
with st.form("probe_form"):
    f1, f2, f3 = st.columns(3)
    task = f1.selectbox("Task", list(probes.TASKS), format_func=TASK_NAMES.get, key="probe_task")
    n_sentences = f2.number_input("SemCor sentences", **SENTENCES, key="probe_sentences",
                                  help="Embedding them is most of the time.")
    epochs = f3.number_input("Epochs", **EPOCHS, key="probe_epochs")
    again = st.checkbox("Recompute even if a result with these settings is stored", key="probe_again")
    go = st.form_submit_button("Run probe", type="primary")
if go:
    bar = st.progress(0.0, text="starting …")

    def progress(fraction: float, message: str) -> None:
        bar.progress(min(max(float(fraction), 0.0), 1.0), text=message)

    with guard("The probe"), limits.heavy("The probe"):
        run = ProbeRun(model_id, task, int(n_sentences), int(epochs), again)
        result = compute.run(run, progress)
        memory.settle()  # SemCor, now loaded for good: out of the garbage collector's way (app/kit/memory.py)
        st.session_state[f"probe::{model_id}::{task}"] = result
        bar.progress(1.0, text="done")
        st.rerun()
