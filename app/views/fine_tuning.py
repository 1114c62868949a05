"""What fine-tuning changes: a fine-tuned model beside the model it started from, layer by layer, on its task's
sentences: how similar each layer stays (linear CKA), how the task's classes separate before and after, the
projections coloured by label, and which attention heads changed most.

The measurements are ``ctxmodels.analysis.finetuning``; the figures ``app/figures.py``. A comparison is computed
once per server (``app/kit/shared.py``); the projection and the head detail are fragments. Where the operator allows
training, a model can be fine-tuned here, as a job of ``ctxmodels finetune`` (``app/kit/training.py``).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st

from app import figures
from app.kit import background, limits, training
from app.kit.errors import guard, record_warnings, show_warnings
from app.kit.explanations import explain, page_header
from app.kit.inputs import md
from app.kit.plots import plot
from app.kit.presentation import controls
from app.kit.registry import get_model, label, model_ids, no_models_message, registry
from app.kit.settings import settings
from app.kit.shared import shared
from app.kit.url_state import to_url, url_state
from app.kit.warm_up import usable_projection
from ctxmodels.analysis import attention as att
from ctxmodels.analysis import finetuning as ft
from ctxmodels.analysis import projections

page_header(
    "What fine-tuning changes",
    "A fine-tuned model next to the model it started from, on the sentences of its task: which layers "
    "fine-tuning moved, whether the task's classes pulled apart, and which attention heads changed.",
)
explain(
    "Fine-tuning (BERT's way of using a pre-trained model) adds a small task layer on top and then adjusts "
    "**every** weight for the task; ELMo's feature-based mode freezes the biLM and learns only a mix of its "
    "layers and the task layer. Both models run on the same sentences from the task's dev or test split. "
    "**Linear CKA** (Kornblith et al. 2019) compares a layer before and after as a whole: the same words, as "
    "rows, in both; 1 means the same representation up to a rotation and a scale. The **cosine** of a word's "
    "vector before and after is stricter (a rotated layer has CKA 1 and a lower cosine). **Class separation**: "
    "how often a word's (or a sentence's) nearest neighbour, leaving itself out, has its label (the dashed line "
    "is the share of the most frequent label), and the silhouette of the labels. **Heads**: for each head, how "
    "different a token's attention is after fine-tuning (Jensen–Shannon divergence of the two rows, 0 = same, "
    "1 = nothing in common), averaged over the tokens. What the literature finds for BERT (Merchant et al. "
    "2020; Kovaleva et al. 2019): the lower layers barely move, the top layers change most, and mostly the last "
    "layers' attention changes. Below, the page says what these models show.",
    ["cka", "jsd"],
)
cfg = settings()
AUTO = "(its base, from finetune.json)"
SPLITS = ["dev", "test"]
SENTENCES = dict(min_value=20, max_value=500)
DETAIL_WORDS = 30  # the head detail runs on one sentence of at most this many words


def loaded(mid: str):
    try:
        return get_model(mid)
    except Exception:  # noqa: BLE001 - a model that does not load is reported on the Models page
        return None


def finetune_command_text(model: str = "bert-eltec", task: str = "pos") -> str:
    return (f"ctxmodels finetune --model {model} --task {task} --out runs/{model}-{task.replace(':', '-')} "
            "--steps 300")


def finetune_here() -> None:
    """Fine-tuning from the page (a job of ``ctxmodels finetune``), when the operator allows training."""
    st.subheader("Fine-tune a model here")
    if not cfg.allow_training:
        st.info("Training from the app is off, so visitors cannot start jobs on this server. Fine-tune on the "
                f"command line, `{finetune_command_text()}`, then start the app with the folder: "
                "`streamlit run app/Home.py -- --models runs/bert-eltec-pos` (or `CTXMODELS_APP_MODELS`). The "
                "operator can allow training with `--allow-training` / `CTXMODELS_ALLOW_TRAINING=1`.")
        return
    runner = background.training_runner()
    me = limits.session_id()
    job = runner.job
    busy = job is not None and job.running
    bases = [m for m in model_ids() if (lm := loaded(m)) is not None and lm.kind in ("bert", "transformers", "elmo")
             and ft.finetune_info(lm) is None]
    if not bases:
        st.info("No model to fine-tune is loaded (a BERT, another encoder such as RoBERTa, or an ELMo).")
        return
    tasks = ["pos", "ner", "wsd:bank", "period"]
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
        mode = f4.radio("Mode", list(training.FINETUNE_MODES), key="ft_train_mode",
                        format_func={"finetune": "fine-tune every weight",
                                     "feature": "feature-based (frozen model)"}.get)
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
            if task_file.strip():
                path = Path(task_file.strip()).expanduser()
                if not path.is_file():
                    raise ValueError(f"no task file at {task_file.strip()!r}; give the path of a .tsv or CoNLL file "
                                     "on the server")
                task = str(path)
            elif task.startswith("wsd"):
                word = lemma.strip().lower()
                if not word.isalpha():
                    raise ValueError("the lemma for wsd must be one word of letters, such as bank")
                task = f"wsd:{word}"
            name = Path(task).stem if task_file.strip() else task.replace(":", "-")
            out = cfg.runs_dir / f"{label(base)}-{name}-{time.strftime('%Y%m%d-%H%M%S')}"
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


# -- which models -----------------------------------------------------------------------------------------------
ids = model_ids()
if not ids:
    no_models_message()
    st.stop()
tuned = [m for m in ids if (lm := loaded(m)) is not None and ft.finetune_info(lm) is not None]
if not tuned:
    st.info("**No fine-tuned model is loaded.** This page compares a fine-tuned model with the model it started "
            f"from. Make one with `{finetune_command_text()}` (tasks: `pos`, `ner`, `wsd:LEMMA`, `period`, or a "
            "TSV/CoNLL file), then name its folder when starting the app: `streamlit run app/Home.py -- --models "
            "runs/bert-eltec-pos` (or `CTXMODELS_APP_MODELS=runs/bert-eltec-pos`).")
    finetune_here()
    st.stop()

url_state("ft_model", tuned[0], options=tuned, names=label)
box = controls()
c1, c2, c3, c4 = box.columns([2, 2, 1, 1])
model_id = c1.selectbox("Fine-tuned model", tuned, key="ft_model", format_func=label, persist_state="session")
after = get_model(model_id)
info = ft.finetune_info(after) or {}
same_kind = [m for m in ids if m != model_id and (lm := loaded(m)) is not None and lm.kind == after.kind]
url_state("ft_base", AUTO, options=[AUTO] + same_kind, names=label)
if st.session_state["ft_base"] not in [AUTO] + same_kind:
    st.session_state["ft_base"] = AUTO
base_id = c2.selectbox("Compared with", [AUTO] + same_kind, key="ft_base", persist_state="session",
                       format_func=lambda m: m if m == AUTO else label(m),
                       help="The model it was fine-tuned from (named in its finetune.json), or another model of the "
                            "same architecture, chosen by hand.")
url_state("ft_split", "dev", options=SPLITS)
split = c3.selectbox("Sentences from", SPLITS, key="ft_split", persist_state="session",
                     help="The task's split the sentences come from (the model was trained on neither).")
url_state("ft_sentences", 200, kind=int, **SENTENCES)
n_sentences = c4.number_input("Sentences (at most)", **SENTENCES, step=20, key="ft_sentences",
                              persist_state="session")
to_url("ft_model", "ft_base", "ft_split", "ft_sentences")

task = info.get("task")
# -- what the fine-tuning reached -------------------------------------------------------------------------------
metrics = info.get("metrics") if isinstance(info.get("metrics"), dict) else {}
cols = st.columns(4)
for col, (where, what) in zip(cols, [(s, m) for s in ("test", "dev") for m in ("accuracy", "macro_f1")]):
    value = (metrics.get(where) or {}).get(what) if isinstance(metrics.get(where), dict) else None
    col.metric(f"{where} {what.replace('_', '-')}", f"{value:.1%}" if isinstance(value, (int, float)) else "—")
st.caption(f"{md(label(model_id))}: task {md(task or '?')} ({md(info.get('task_kind', '?'))}), mode "
           f"{md(info.get('mode', '?'))}, {md(info.get('steps', '?'))} steps, from "
           f"{md(info.get('base_model') or info.get('base_path') or '?')}. The scores are the model's own, measured "
           "when it was fine-tuned.")

before = None
with guard("The model to compare with"):
    candidate = ft.base_model(after) if base_id == AUTO else get_model(base_id)
    ft.check_comparable(candidate, after)
    before = candidate
if before is None:
    st.warning("Choose the model it started from by hand under *Compared with* (a model of the same architecture), "
               "or name it when starting the app (`--models`).")
    st.stop()
if not isinstance(task, str) or not task.strip():
    st.warning(f"{md(label(model_id))}'s finetune.json names no task, so there are no sentences to compare on; "
               "fine-tune again with `ctxmodels finetune --task ...`.")
    st.stop()


def compute() -> tuple[ft.FinetuneComparison, list[str]]:
    with record_warnings() as warned:
        result = ft.compare_on_task(before, after, task, split=split, max_sentences=int(n_sentences))
    return result, warned


comparison = None
with guard(f"Comparing on the task {task}"), limits.heavy("Comparing the models"):
    with st.spinner("Running both models on the task's sentences …"):
        key = ("finetuning", model_id, id(after), id(before), task, split, int(n_sentences))
        comparison, warned = shared().get(key, compute)
    show_warnings(warned)
if comparison is None:
    st.warning(f"No comparison: the task {md(task)}'s data may be missing on this server (the built-in tasks read "
               "the shared data: SemCor, the corpus), or its file has moved. Put the data back, or choose another "
               "fine-tuned model.")
    st.stop()
result: ft.FinetuneComparison = comparison
b_name, a_name = label(before.name), label(model_id)
notes = "".join(f" {md(n[:1].upper() + n[1:])}." for n in result.notes)
st.caption(f"{result.n_sentences} sentences of the {md(split)} split, {result.n_words:,} words, "
           f"{len(result.point_labels):,} labelled points." + notes)

# -- how similar each layer stays -------------------------------------------------------------------------------
st.subheader("How much each layer changed")
table = result.layers
plot(figures.representation_change(table, b_name, a_name), f"cka-{a_name}", key="ft::cka", data=table)


def reading(table: pd.DataFrame) -> str:
    """What the curve shows, in words (measured here, not assumed)."""
    cka = table["cka"].to_numpy(dtype=float)
    names = list(table["layer_name"])
    if not np.isfinite(cka).any():
        return "No layer has a CKA to read (constant vectors)."
    if np.nanmin(cka) >= 0.999:
        return (f"No layer changed (the lowest CKA is {np.nanmin(cka):.3f}). That is what a **feature-based** "
                "fine-tuning does, which leaves the model's own weights as they were and trains only the mix and "
                "the task layer; a fine-tuning of every weight that looks like this was too short to move them.")
    low = int(np.nanargmin(cka))
    drop = np.diff(cka[np.isfinite(cka)])
    steady = bool((drop <= 1e-3).all())
    text = (f"Here the layer that changed most is **{md(names[low])}** (CKA {cka[low]:.3f}); "
            f"{md(names[0])} stays at {cka[0]:.3f} and {md(names[-1])} is at {cka[-1]:.3f}. ")
    if steady and low == len(cka) - 1:
        return text + "CKA falls layer by layer: the picture the literature expects."
    if low == len(cka) - 1:
        return text + "The top layer moved most, as expected, though not every step down is smaller."
    return text + ("Unlike the usual picture, the top layer is not the one that moved most: a short or "
                   "feature-based fine-tuning, or a small model, can look like this.")


st.markdown(reading(table))

# -- how the classes separate -----------------------------------------------------------------------------------
st.subheader("How the task's classes separate, before and after")
if table["knn_before"].notna().any():
    plot(figures.class_separation(table, b_name, a_name, result.majority), f"separation-{a_name}",
         key="ft::separation", data=table)
    gain = table["knn_after"] - table["knn_before"]
    top = int(np.nanargmax(gain.to_numpy(dtype=float))) if gain.notna().any() else None
    if top is not None and not np.nanmax(np.abs(gain.to_numpy(dtype=float))) >= 5e-4:
        st.markdown("The 1-NN accuracy is the same before and after in every layer.")
    elif top is not None:
        st.markdown(f"The 1-NN accuracy gained most in **{md(table['layer_name'][top])}** "
                    f"({table['knn_before'][top]:.1%} → {table['knn_after'][top]:.1%}; the most frequent label is "
                    f"{result.majority:.1%} of the points).")
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
        Xb, Xa = result.layer_points(layer)
        pkey = ("ft-projection", id(result), layer, how)
        coords = shared().get(pkey, lambda: tuple(projections.project(X, method=how, seed=0).coords
                                                  for X in (Xb, Xa)))
        colours = figures.sense_colours(result.point_labels)
        hover = [figures.highlight(t, s) for t, s in zip(result.point_text, result.point_spans)]
        q1, q2 = st.columns(2)
        for col, xy, who, side in ((q1, coords[0], b_name, "before"), (q2, coords[1], a_name, "after")):
            with col:
                fig = figures.sense_scatter(xy, result.point_labels, hover, colours=colours, legend_title="label",
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
        plot(figures.head_change_heatmap(result.heads, title="mean Jensen–Shannon divergence, before vs after"),
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
    by_layer = result.heads.mean(axis=1)
    if by_layer.max() < 1e-6:
        st.markdown("No head's attention changed.")
    else:
        st.markdown(f"The attention changed most in **layer {int(np.argmax(by_layer)) + 1}** (mean over its heads "
                    f"{by_layer.max():.4f}) and least in layer {int(np.argmin(by_layer)) + 1} "
                    f"({by_layer.min():.4f}).")

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
        words = next((s for s in result.sentences if 3 <= len(s) <= DETAIL_WORDS), None)
        if words is None:
            st.caption(f"No sentence of 3 to {DETAIL_WORDS} words to show the maps on.")
            return
        with guard("The maps"), limits.heavy("Running the models"):
            maps = [att.merge_word_pieces(att.compute_attention(m, None, words)) for m in (before, after)]
            d = float(ft.js_divergence(maps[0].attentions[layer - 1, head - 1],
                                       maps[1].attentions[layer - 1, head - 1]).mean())
            st.caption(f"Layer {layer}, head {head} on one sentence of the split (Jensen–Shannon divergence on it "
                       f"{d:.4f}).")
            m1, m2 = st.columns(2)
            for col, m, who, side in ((m1, maps[0], b_name, "before"), (m2, maps[1], a_name, "after")):
                with col:
                    plot(figures.attention_heatmap(m.attentions[layer - 1, head - 1], m.tokens,
                                                   title=f"{side}: {who}, layer {layer}, head {head}"),
                         f"attention-{side}-{who}-{layer}-{head}", key=f"ft::att::{side}")

    head_detail()

st.divider()
finetune_here()
