"""Models: what is loaded, loading another (when the operator allows), training a small one with a live view (when
the operator allows; a job belongs to the session that started it).

State, compute, figures: the forms give what to load or train; ``compute.py`` finds, describes, loads and previews
the models; ``figures.py`` draws the model in training."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from app.kit import background, figures, limits, training
from app.kit.cards import card_markdown
from app.kit.downloads import download_panel
from app.kit.errors import guard
from app.kit.explanations import explain, page_header
from app.kit.inputs import md
from app.kit.places import home_short
from app.kit.plots import plot
from app.kit.presets import preset_words
from app.kit.registry import get_model, label, model_ids, no_models_message, registry
from app.kit.settings import settings
from app.kit.text import page_text
from app.views.models import compute
from app.views.models import figures as page_figures
from app.views.models.state import CORPORA, TrainRun
from ctxmodels.paths import assets_dir, cache_dir, hf_cache_dirs

TEXT = page_text(__file__)
page_header("Models", TEXT["intro"])
explain(TEXT["explain"], ["mlm", "bilm", "skipgram"])
cfg = settings()


def found_listing(known: list[str]) -> None:
    """The models found on this server (shipped, installed packages, the Hugging Face cache, the project's cache);
    where the operator allows it (``--allow-paths``), a loadable one that no page offers yet can be added for every
    visitor. Nothing is downloaded here."""
    found = compute.found_here()
    with st.expander(f"Found on this server: {len(found)} model(s)", expanded=False):
        st.caption("Shipped models (`" + home_short(assets_dir()) + "`), installed model packages (`minilm`), the "
                   "Hugging Face cache (" + ", ".join(f"`{home_short(d)}`" for d in hf_cache_dirs()) + ") and the "
                   f"project's cache (`{home_short(cache_dir())}`). BERT, RoBERTa, DistilBERT, ALBERT, ELECTRA and "
                   "DeBERTa-v2 encoders load; this page downloads nothing.")
        if not found:
            st.write("*Nothing found.*")
            return
        table = pd.DataFrame(found)
        table["offered"] = [row["name"] in known or row["path"] in known for row in found]
        st.dataframe(table[["name", "source", "type", "loadable", "offered", "note"]], hide_index=True,
                     width="stretch")
        addable = compute.addable(found, known)
        if addable and not settings().allow_paths:
            # Loading one offers it to every visitor and holds its memory for the server's life: in a room that is
            # the operator's call, like loading from a path.
            st.caption(f"{len(addable)} of these can be offered on every page: the operator names them when "
                       "starting the app (`--models NAME`), or allows loading them from here with "
                       "`--allow-paths` / `CTXMODELS_ALLOW_PATHS=1`.")
        elif addable:
            c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
            pick = c1.selectbox("Offer on every page", addable, index=None, key="found_pick",
                                placeholder="a model found here")
            if c2.button("Load it", disabled=pick is None, key="found_load") and pick is not None:
                with guard(f"Loading {pick}"), limits.heavy("Loading"):
                    model = get_model(pick)
                    registry().add(pick)
                    st.success(f"Loaded {md(pick)} ({model.kind}, {model.n_layers} layers); it is now selectable "
                               "on every page.")


runner = background.training_runner  # one job on the server, shared with the fine-tuning page


# -- what is loaded -----------------------------------------------------------------------------------------
st.subheader("Available models")
ids = model_ids()
if not ids:
    no_models_message()
rows = []
found = compute.found_here() if ids else []
for mid in ids:
    with guard(f"Loading {label(mid)}"):
        rows.append(compute.summary_row(mid, found))
if rows:
    # The yes/no columns are narrow so that "from" (a package or a path) is read whole.
    ticks = {c: st.column_config.CheckboxColumn(c, width="small" if len(c) < 10 else 115)
             for c in ("fill in", "attention", "language model")}
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch",
                 column_config={**ticks, "from": st.column_config.TextColumn("from", width="large")})
    for i, mid in enumerate(ids):
        try:
            m = get_model(mid)
        except Exception:  # noqa: BLE001 - already reported above
            continue
        with st.expander(f"{md(label(mid))}: card and configuration"):
            st.markdown(md(compute.facts(m)))
            # the CSS that keeps a card inside the page: app/kit/presentation.py
            with st.container(key=f"model_card_{i}"):
                st.markdown(card_markdown(m.card) if m.card else "*This model has no card (README.md).*")
            st.json(m.config, expanded=False)
            st.json(m.describe(), expanded=False)

# -- found on this server ----------------------------------------------------------------------------------
found_listing(ids)

# -- load from a path ---------------------------------------------------------------------------------------
st.subheader("Load a model from the server")
if not cfg.allow_paths:
    st.info(TEXT["paths_off"])
else:
    with st.form("load_form"):
        source = st.text_input("Path or name", placeholder="/models/bert-base-uncased, ORG/NAME in the Hugging Face "
                               "cache, a published ELMo folder, a word-vector .txt file")
        go = st.form_submit_button("Load")
    if go:
        with guard("Loading"), limits.heavy("Loading"):
            same, model = compute.load_path(source)
            if same is not None:
                st.info(f"That is **{md(label(same))}**, already selectable on every page.")
            else:
                st.success(f"Loaded {md(model.name)} ({model.kind}, {model.n_layers} layers); it is now selectable "
                           "on every page.")

# -- download (only with --allow-downloads): app/kit/downloads.py ----------------------------------------------------
download_panel()

# -- train --------------------------------------------------------------------------------------------------
st.subheader("Train a small model")
if not cfg.allow_training:
    st.info(TEXT["training_off"])
    st.stop()
me = limits.session_id()
job = runner().job
busy = job is not None and job.running
sources = ["examples"] + (["upload"] if cfg.allow_uploads else [])
with st.form("train_form"):
    t1, t2, t3 = st.columns(3)
    kind = t1.selectbox("Kind", list(training.KINDS), key="train_kind")
    steps = t2.number_input("Steps", min_value=10, max_value=training.MAX_STEPS, value=200, step=10,
                            key="train_steps")
    corpus_source = t3.radio("Corpus", sources, key="train_corpus", format_func=CORPORA.get)
    upload = None
    if cfg.allow_uploads:
        upload = st.file_uploader(f"Plain text, UTF-8, one paragraph a line, blank lines between documents "
                                  f"(at most {cfg.upload_mb:g} MB)", type=["txt"], key="train_upload")
    else:
        st.caption("Uploads are off; the operator can allow them with `CTXMODELS_ALLOW_UPLOADS=1` or "
                   "`-- --allow-uploads`.")
    start = st.form_submit_button("Start training", type="primary", disabled=busy)
if busy:
    st.caption("Your training job is running (one at a time on this server)." if job.owned_by(me) else
               "A training job another visitor started is running (one at a time on this server); you can follow "
               "it below, and start yours when it ends.")

if start and not busy:
    with guard("Training"):
        run = TrainRun(kind, int(steps), corpus_source)
        out = compute.run_folder(cfg.runs_dir, run)
        runner().start(run.kind, compute.corpus_for(out, run, upload, cfg.upload_mb), out, run.steps, owner=me)
        st.rerun()


def job_panel() -> None:
    job = runner().job
    if job is None:
        return
    if not job.running and st.session_state.pop("train_polling", False):
        st.rerun()  # the job ended during a timed fragment run: one full run stops the timer
    records = job.metrics()
    step = job.step()
    status = job.status
    mine = job.owned_by(me)
    whose = "yours" if mine else "started by another visitor"
    st.markdown(f"**{md(job.label or job.kind)}** in `{job.out.name}` ({whose}): {status}, step {step} of {job.steps}")
    st.progress(min(step / job.steps, 1.0))
    if job.running and mine and st.button("Cancel (saves a checkpoint first)", key="train_cancel"):
        with guard("Cancelling"):
            runner().cancel(me)
        st.rerun()  # a full run: a click can arrive in a full run as well as in the fragment's own
    c1, c2 = st.columns(2)
    with c1:
        if any("loss" in r for r in records):
            plot(figures.loss_chart(records), f"loss-{job.out.name}", key="train::loss",
                 data=pd.DataFrame([r for r in records if "loss" in r]))
        else:
            st.caption("Waiting for the first loss (preparing the data) …")
    with c2:
        word = st.selectbox("Word to watch", preset_words(), key="train_word")
        if job.has_model():
            with guard("Preview"), limits.heavy("The preview"):
                p = compute.preview(str(job.out), compute.model_stamp(job.out), word)
                if np.isfinite(p["coords"]).any():
                    plot(page_figures.preview_scatter(p, word), f"preview-{word}", key="train::preview")
        else:
            st.caption("The preview appears at the first checkpoint.")
    if not job.running:
        if job.has_model() and status in ("finished", "cancelled"):
            registry().add(str(job.out))
            st.success(f"The model in `{job.out}` is now selectable on every page as `{job.out.name}`.")
        elif status == "failed":
            st.error("Training failed; the end of its log:")
    with st.expander("Log"):
        st.code(job.log_tail() or "(empty)")


polling = job is not None and job.running
st.session_state["train_polling"] = polling
st.fragment(job_panel, run_every=2 if polling else None)()
