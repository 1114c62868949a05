"""What fine-tuning changes: a fine-tuned model beside the model it started from, layer by layer, on its task's
sentences: how similar each layer stays (linear CKA), how the task's classes separate before and after, the
projections coloured by label, and which attention heads changed most.

State, compute, figures: the widgets and the URL give a :class:`TuningState`; ``compute.py`` compares the models
(``ctxmodels.analysis.finetuning``, once per server); ``figures.py`` draws the comparison. The projection and the
head detail are fragments. Where the operator allows training, a model can be fine-tuned here, as a job of
``ctxmodels finetune`` (``app/kit/training.py``).
"""

from __future__ import annotations

import streamlit as st

from app.kit import background, figures, limits, scatter, training
from app.kit.errors import guard, show_warnings
from app.kit.explanations import explain, page_header
from app.kit.glossary import meaning
from app.kit.inputs import md
from app.kit.plots import plot
from app.kit.presentation import controls
from app.kit.registry import get_model, label, model_ids, no_models_message, registry
from app.kit.settings import settings
from app.kit.text import page_text
from app.kit.url_state import to_url, url_state
from app.kit.warm_up import usable_projection
from app.views.fine_tuning import compute
from app.views.fine_tuning import figures as page_figures
from app.views.fine_tuning.state import (
    AUTO,
    COMPARED_KINDS,
    DETAIL_WORDS,
    KINDS,
    MODES,
    SENTENCES,
    SPLITS,
    TASKS,
    TuningState,
)
from ctxmodels.analysis import finetuning as ft
from ctxmodels.analysis import projections

TEXT = page_text(__file__)
page_header("What fine-tuning changes", TEXT["intro"])
explain(TEXT["explain"], ["cka", "jsd"])
cfg = settings()


def finetune_here() -> None:
    """Fine-tuning from the page (a job of ``ctxmodels finetune``), when the operator allows training."""
    st.subheader("Fine-tune a model here")
    if not cfg.allow_training:
        st.info(TEXT["training_off"].format(command=compute.command_text()))
        return
    runner = background.training_runner()
    me = limits.session_id()
    job = runner.job
    busy = job is not None and job.running
    bases = compute.tunable(model_ids())
    if not bases:
        st.info("No model to fine-tune is loaded (a BERT, another encoder such as RoBERTa, a GPT or an ELMo).")
        return
    tasks = TASKS
    with guard("The built-in tasks"):
        tasks = [t if not t.startswith("wsd") else "wsd:bank" for t in ft.builtin_tasks()]
    with st.form("ft_form"):
        f1, f2, f3, f4 = st.columns(4)
        base = f1.selectbox("Model", bases, format_func=label, key="ft_train_model")
        task = f2.selectbox("Task", tasks, key="ft_train_task", help="wsd:LEMMA classifies the senses of one "
                            "lemma (edit it below)")
        lemma = f2.text_input("Lemma (for wsd)", value="bank", key="ft_train_lemma", max_chars=40)
        steps = f3.number_input("Steps", min_value=10, max_value=training.MAX_STEPS, value=200, step=10,
                                key="ft_train_steps")
        mode = f4.radio("Mode", list(training.FINETUNE_MODES), key="ft_train_mode", format_func=MODES.get)
        task_file = ""
        if cfg.allow_paths:  # the operator lets the app read server paths: a task file of their own
            task_file = st.text_input("Or a task file on the server (text<TAB>label .tsv, or CoNLL word<TAB>label)",
                                      key="ft_train_file", max_chars=500)
        start = st.form_submit_button("Start fine-tuning", type="primary", disabled=busy)
    if busy:
        st.caption("Your job is running (one at a time on this server)." if job.owned_by(me) else
                   "A job another visitor started is running (one at a time on this server); start yours when it "
                   "ends.")
    if start and not busy:
        with guard("Fine-tuning"):
            task = compute.job_task(task, lemma, task_file)
            out = compute.job_folder(cfg.runs_dir, base, task, from_file=bool(task_file.strip()))
            runner.start_finetune(base, task, out, int(steps), mode=mode, owner=me)
            st.rerun()
    polling = job is not None and job.running
    st.session_state["ft_polling"] = polling
    st.fragment(job_panel, run_every=2 if polling else None)()


def job_panel() -> None:
    runner = background.training_runner()
    job = runner.job
    if job is None or job.kind != "finetune":
        return
    if not job.running and st.session_state.pop("ft_polling", False):
        if job.has_model():
            registry().add(str(job.out))
        st.rerun()  # the job ended during a timed fragment run: a full run shows the new model and stops the timer
    me = limits.session_id()
    records = job.metrics()
    step = job.step()
    whose = "yours" if job.owned_by(me) else "started by another visitor"
    st.markdown(f"**{md(job.label)}** in `{md(job.out.name)}` ({whose}): {job.status}, step {step} of {job.steps}")
    st.progress(min(step / max(job.steps, 1), 1.0))
    if job.running and job.owned_by(me) and st.button("Cancel (saves a checkpoint first)", key="ft_cancel"):
        with guard("Cancelling"):
            runner.cancel(me)
        st.rerun()
    if any("loss" in r for r in records):
        plot(figures.loss_chart(records, title="fine-tuning loss"), f"loss-{job.out.name}", key="ft::loss")
    if not job.running:
        if job.has_model():
            registry().add(str(job.out))
            st.success(f"The fine-tuned model in `{md(job.out)}` is now selectable above as `{md(job.out.name)}` "
                       "(reload the page if it is not).")
        elif job.status == "failed":
            st.error("Fine-tuning failed; the end of its log:")
    with st.expander("Log"):
        st.code(job.log_tail() or "(empty)")


# -- state: which models --------------------------------------------------------------------------------------------
ids = model_ids()
if not ids:
    no_models_message()
    st.stop()
tuned = compute.finetuned(ids)
if not tuned:
    st.info(TEXT["no_tuned"].format(command=compute.command_text()))
    finetune_here()
    st.stop()

url_state("ft_model", tuned[0], options=tuned, names=label)
url_state("ft_split", "dev", options=SPLITS)
url_state("ft_sentences", 200, kind=int, **SENTENCES)
box = controls(summary=f"{label(st.session_state['ft_model'])} before and after, on "
                       f"{st.session_state['ft_sentences']} {st.session_state['ft_split']} sentences")
c1, c2, c3, c4 = box.columns([2, 2, 1, 1])
model_id = c1.selectbox("Fine-tuned model", tuned, key="ft_model", format_func=label, persist_state="session")
after = get_model(model_id)
info = ft.finetune_info(after) or {}
same_kind = compute.same_kind(ids, model_id)
url_state("ft_base", AUTO, options=[AUTO] + same_kind, names=label)
if st.session_state["ft_base"] not in [AUTO] + same_kind:
    st.session_state["ft_base"] = AUTO
base_id = c2.selectbox("Compared with", [AUTO] + same_kind, key="ft_base", persist_state="session",
                       format_func=lambda m: "the model it was fine-tuned from" if m == AUTO else label(m),
                       help="The model it was fine-tuned from (its settings name it), or another model of the "
                            "same architecture, chosen by hand.")
split = c3.selectbox("Sentences from", SPLITS, key="ft_split", persist_state="session",
                     help="The task's split the sentences come from (the model was trained on neither).")
n_sentences = c4.number_input("Sentences (at most)", **SENTENCES, step=20, key="ft_sentences",
                              persist_state="session")
to_url("ft_model", "ft_base", "ft_split", "ft_sentences")
s = TuningState(model_id, base_id, split, int(n_sentences))

task = info.get("task")
first = st.container()  # the first chart, drawn here once computed: above the scores, on the first screen
# -- what the fine-tuning reached -------------------------------------------------------------------------------
metrics = info.get("metrics") if isinstance(info.get("metrics"), dict) else {}
cols = st.columns(4)
shown = ("exact_match", "f1") if info.get("task_kind") == "qa" else ("accuracy", "macro_f1")
for col, (where, what) in zip(cols, [(sp, m) for sp in ("test", "dev") for m in shown]):
    value = (metrics.get(where) or {}).get(what) if isinstance(metrics.get(where), dict) else None
    name = {"macro_f1": "macro-F1", "exact_match": "exact match", "f1": "F1"}.get(what, what)
    col.metric(f"{where} {name}", f"{value:.1%}" if isinstance(value, (int, float)) else "—",
               help=f"{meaning(f'{where} split')} {TEXT.get(what) or meaning(name)}")
st.caption(f"{md(label(model_id))}: task {md(task or '?')} ({md(KINDS.get(info.get('task_kind'), '?'))}), "
           f"{md(MODES.get(info.get('mode'), info.get('mode', '?')))}, {md(info.get('steps', '?'))} steps, from "
           f"{md(info.get('base_model') or info.get('base_path') or '?')}. The scores are the model's own, measured "
           "when it was fine-tuned.")

# -- compute: the comparison ----------------------------------------------------------------------------------------
if info.get("task_kind") not in COMPARED_KINDS:
    st.info(TEXT["not_compared"].format(kind=md(KINDS.get(info.get("task_kind"), "another kind of task"))))
    st.stop()
before = None
with guard("The model to compare with"):
    before = compute.base_of(s)
if before is None:
    st.warning("Choose the model it started from by hand under *Compared with* (a model of the same architecture), "
               "or name it when starting the app (`--models`).")
    st.stop()
if not isinstance(task, str) or not task.strip():
    st.warning(f"{md(label(model_id))}'s saved settings name no task, so there are no sentences to compare on; "
               "fine-tune again with `ctxmodels finetune --task ...`.")
    st.stop()

comparison = None
with guard(f"Comparing on the task {task}"), limits.heavy("Comparing the models"):
    with st.spinner("Running both models on the task's sentences …"):
        comparison, warned = compute.comparison(s, before, task)
    show_warnings(warned)
if comparison is None:
    st.warning(TEXT["no_comparison"].format(task=md(task)))
    st.stop()
result: ft.FinetuneComparison = comparison
b_name, a_name = label(before.name), label(model_id)
notes = "".join(f" {md(n[:1].upper() + n[1:])}." for n in result.notes)
st.caption(f"{result.n_sentences} sentences of the {md(split)} split, {result.n_words:,} words, "
           f"{len(result.point_labels):,} labelled points." + notes)

# -- figures: how similar each layer stays --------------------------------------------------------------------------
table = result.layers
with first:
    st.subheader("How much each layer changed")
    plot(page_figures.representation_change(table, b_name, a_name), f"cka-{a_name}", key="ft::cka", data=table)
    st.markdown(compute.reading(table))

# -- how the classes separate -----------------------------------------------------------------------------------
st.subheader("How the task's classes separate, before and after")
if table["knn_before"].notna().any():
    plot(page_figures.class_separation(table, b_name, a_name, result.majority), f"separation-{a_name}",
         key="ft::separation", data=table)
    said = compute.separation_reading(table, result.majority)
    if said is not None:
        st.markdown(said)
else:
    st.info("Too few labelled points to measure how the classes separate (at least two labels with two points "
            "each are needed): raise the number of sentences.")


@st.fragment
def projection_view() -> None:
    if not result.point_labels:
        return
    st.subheader("The labelled points, before and after")
    names = result.layer_names
    url_state("ft_layer", len(names) - 1, options=list(range(len(names))))
    url_state("ft_projection", "pca", options=["pca", "umap"])
    p1, p2 = st.columns(2)
    layer = p1.selectbox("Layer", list(range(len(names))), key="ft_layer", format_func=lambda i: names[i],
                         persist_state="session")
    how = p2.radio("Projection", ["pca", "umap"], key="ft_projection", horizontal=True, persist_state="session",
                   format_func=projections.DISPLAY.get)
    to_url("ft_layer", "ft_projection")
    how = usable_projection(how)
    with guard("Projecting"), limits.heavy("Projecting"):
        coords = compute.projected(s, task, result, layer, how)
        colours = figures.sense_colours(result.point_labels)
        hover = [figures.highlight(t, span) for t, span in zip(result.point_text, result.point_spans)]
        q1, q2 = st.columns(2)
        for col, xy, who, side in ((q1, coords[0], b_name, "before"), (q2, coords[1], a_name, "after")):
            with col:
                fig = scatter.sense_scatter(xy, result.point_labels, hover, colours=colours, legend_title="label",
                                            title=f"{side}: {who}, {names[layer]}, {projections.DISPLAY[how]}")
                plot(fig, f"points-{side}-{who}-{names[layer]}", key=f"ft::points::{side}")


projection_view()

# -- the attention heads ----------------------------------------------------------------------------------------
st.subheader("Which attention heads changed")
if result.heads is None:
    st.caption(f"{md(a_name)} is not a transformer encoder (it is {md(after.kind)}): it has no attention heads to "
               "compare.")
else:
    ranked = result.ranked_heads(top=10)
    h1, h2 = st.columns([3, 2])
    with h1:
        plot(page_figures.head_change_heatmap(result.heads, title="mean Jensen–Shannon divergence, before vs after"),
             f"heads-{a_name}", key="ft::heads", data=result.ranked_heads())
    with h2:
        event = st.dataframe(
            ranked, hide_index=True, width="stretch", on_select="rerun", selection_mode="single-row",
            key="ft_head_pick", column_config={"js_divergence": st.column_config.NumberColumn(
                "change (JS div.)", format="%.4f",
                help="Jensen–Shannon divergence between a head's attention rows before and after fine-tuning, "
                     "averaged over the rows of the sentences: 0 = unchanged.")})
        st.caption("Pick a row (the box at its left) to see that head's maps below.")
    # A selection stays in the table across reruns: act on it only when it changes, so a head chosen later with
    # the sliders is not pulled back to the picked row. The sliders are drawn below, so they can still be set.
    picked = list(event.selection.rows)
    if picked and picked != st.session_state.get("_ft_head_seen"):
        row = ranked.iloc[picked[0]]  # the selection counts rows as shown, not index labels
        st.session_state["ft_att_layer"], st.session_state["ft_att_head"] = int(row["layer"]), int(row["head"])
    st.session_state["_ft_head_seen"] = picked
    st.markdown(compute.heads_reading(result.heads))

    @st.fragment
    def head_detail() -> None:
        L, H = result.heads.shape
        best_l, best_h = int(ranked.loc[0, "layer"]), int(ranked.loc[0, "head"])
        url_state("ft_att_layer", best_l, kind=int, min_value=1, max_value=L)
        url_state("ft_att_head", best_h, kind=int, min_value=1, max_value=H)
        for k, top in (("ft_att_layer", L), ("ft_att_head", H)):
            if not 1 <= st.session_state[k] <= top:
                st.session_state[k] = min(max(st.session_state[k], 1), top)
        d1, d2 = st.columns(2)
        layer = d1.slider("Layer", 1, L, key="ft_att_layer", persist_state="session") if L > 1 else 1
        head = d2.slider("Head", 1, H, key="ft_att_head", persist_state="session") if H > 1 else 1
        to_url("ft_att_layer", "ft_att_head")
        words = next((w for w in result.sentences if 3 <= len(w) <= DETAIL_WORDS), None)
        if words is None:
            st.caption(f"No sentence of 3 to {DETAIL_WORDS} words to show the maps on.")
            return
        with guard("The maps"), limits.heavy("Running the models"):
            maps, d = compute.head_maps(before, after, words, layer, head)
            st.caption(f"Layer {layer}, head {head} on one sentence of the split (Jensen–Shannon divergence on it "
                       f"{compute.small(d)}). Both maps share one colour scale: the same shade is the same weight.")
            m1, m2 = st.columns(2)
            top = compute.shared_top([m.attentions[layer - 1, head - 1] for m in maps])  # one colour scale
            for col, m, who, side in ((m1, maps[0], b_name, "before"), (m2, maps[1], a_name, "after")):
                with col:
                    plot(figures.attention_heatmap(m.attentions[layer - 1, head - 1], m.tokens, zmax=top,
                                                   title=f"{side}: {who}, layer {layer}, head {head}"),
                         f"attention-{side}-{who}-{layer}-{head}", key=f"ft::att::{side}")

    head_detail()

st.divider()
finetune_here()
