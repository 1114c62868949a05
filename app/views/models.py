"""Models: what is loaded, loading another (when the operator allows), training a small one with a live view (when
the operator allows; a job belongs to the session that started it)."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st

from app import figures
from app.kit import background, limits, training
from app.kit.cards import card_markdown
from app.kit.downloads import download_panel
from app.kit.errors import guard
from app.kit.explanations import explain, page_header
from app.kit.inputs import md
from app.kit.places import home_short, source_of
from app.kit.plots import plot
from app.kit.presets import preset_sentences, preset_words
from app.kit.registry import get_model, label, model_ids, no_models_message, offered_as, registry
from app.kit.settings import settings
from ctxmodels.analysis import fill_in, projections, vectors
from ctxmodels.loading import found_models
from ctxmodels.paths import assets_dir, cache_dir, hf_cache_dirs

page_header("Models", "The models this server knows, their cards and configurations; train a small one and "
                   "watch it learn.")
explain(
    "**BERT** is trained to restore masked words (and to tell whether sentence B followed A); **ELMo** as two "
    "language models, one reading forward and one backward; **static vectors** (skip-gram) so that a word's "
    "vector predicts the words around it. The models trained here are tiny and see a tiny corpus: they are for "
    "watching training happen, not for good vectors.",
    ["mlm", "bilm", r"\log \sigma(u_c^\top v_w) + \sum_{n=1}^{k} \log \sigma(-u_n^\top v_w)"],
)
cfg = settings()


@st.cache_data(ttl=60, show_spinner=False)
def found_entries(places: tuple[str, ...]) -> list[dict]:
    """Everything found on this server without a path: shipped, packaged, Hugging Face cache, project cache.
    ``places`` (the folders searched) is only the cache key: a listing made for other folders is not reused."""
    return found_models()


def found_here() -> list[dict]:
    """The models found on this server, listed for the folders searched now."""
    return found_entries(tuple(str(d) for d in (assets_dir(), cache_dir(), *hf_cache_dirs())))


def facts(model) -> str:
    """One line of what a model is: parameters, layers x heads, width, vocabulary, licence, which code reads it."""
    d = model.describe()
    parts = [f"{d['parameters'] / 1e6:,.1f} M parameters" if d["parameters"] >= 1e5 else f"{d['parameters']:,} "
             "parameters"]
    n = len(d["layers"]) - 1 if d["kind"] in ("bert", "transformers") else len(d["layers"])
    parts.append(f"{n} layers × {d['heads']} heads" if d["heads"] else f"{len(d['layers'])} layer(s)")
    parts.append(f"width {d['dim']}")
    if d.get("vocab_size"):
        parts.append(f"vocabulary {d['vocab_size']:,}")
    parts.append(f"licence {d['licence']}" if d.get("licence") else "licence not stated in the files")
    if d["kind"] == "transformers":
        parts.append(f"read by transformers ({d.get('model_type')})")
    if d["has_attention"] and not d["can_fill_mask"]:
        parts.append("no fill-in: " + (model.no_fill_reason or "no masked-LM head"))
    return " · ".join(parts)


def found_listing(known: list[str]) -> None:
    """The models found on this server (shipped, installed packages, the Hugging Face cache, the project's cache);
    where the operator allows it (``--allow-paths``), a loadable one that no page offers yet can be added for every
    visitor. Nothing is downloaded here."""
    found = found_here()
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
        addable = [row["name"] for row in found if row["loadable"] and row["name"] not in known
                   and row["path"] not in known]
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
found = found_here() if ids else []
for mid in ids:
    with guard(f"Loading {label(mid)}"):
        m = get_model(mid)
        d = m.describe()
        kind = f"{d['model_type']} (transformers)" if d["kind"] == "transformers" else d["kind"]
        rows.append({"model": label(mid), "kind": kind, "layers": len(d["layers"]), "dim": d["dim"],
                     "parameters": f"{d['parameters']:,}", "fill in": fill_in.fills_blanks(m),
                     "attention": d["has_attention"], "language model": d["has_lm"],
                     "from": source_of(d["path"], found)})
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
            st.markdown(md(facts(m)))
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
    st.info("Loading from a server path is off, so a visitor cannot read the server's disk. The operator can turn "
            "it on with `CTXMODELS_ALLOW_PATHS=1` or `streamlit run app/Home.py -- --allow-paths` (or list models "
            "at start-up with `CTXMODELS_APP_MODELS`).")
else:
    with st.form("load_form"):
        source = st.text_input("Path or name", placeholder="/models/bert-base-uncased, ORG/NAME in the Hugging Face "
                               "cache, a published ELMo folder, a word-vector .txt file")
        go = st.form_submit_button("Load")
    if go:
        with guard("Loading"), limits.heavy("Loading"):
            import ctxmodels
            from ctxmodels.loading import resolve

            path, _ = resolve(source)
            same = offered_as(path)
            if same is not None:
                st.info(f"That is **{md(label(same))}**, already selectable on every page.")
            else:
                model = ctxmodels.load(str(path), download=False)
                registry().add(str(path))
                st.success(f"Loaded {md(model.name)} ({model.kind}, {model.n_layers} layers); it is now selectable "
                           "on every page.")

# -- download (only with --allow-downloads): app/kit/downloads.py ----------------------------------------------------
download_panel()

# -- train --------------------------------------------------------------------------------------------------
st.subheader("Train a small model")
if not cfg.allow_training:
    st.info("Training from the app is off, so visitors cannot start jobs on this server. The operator can turn it "
            "on with `CTXMODELS_ALLOW_TRAINING=1` or `streamlit run app/Home.py -- --allow-training` (add "
            "`--allow-uploads` to let visitors train on an uploaded text file); a job then belongs to the visitor "
            "who started it, and only they can cancel it. The command line trains too: `ctxmodels train`.")
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
    corpus_source = t3.radio("Corpus", sources, key="train_corpus",
                             format_func={"examples": "the example sentences", "upload": "upload a text file"}.get)
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


def corpus_for(out: Path) -> Path:
    """Write the chosen corpus into the run folder and return its path (ValueError with what is wrong)."""
    from ctxmodels.text import read_documents

    path = out / "corpus.txt"
    if corpus_source == "upload":
        if upload is None:
            raise ValueError("choose a text file to upload first")
        if upload.size > cfg.upload_mb * 2**20:
            raise ValueError(f"{upload.name} is {upload.size / 2**20:.1f} MB; the limit is {cfg.upload_mb:g} MB")
        try:
            text = upload.getvalue().decode("utf-8")
        except UnicodeDecodeError as e:
            raise ValueError(f"{upload.name} is not UTF-8 text ({e}); save it as UTF-8 plain text") from e
        text = training.check_corpus(text, upload.name)
    else:
        docs = ["\n".join(vectors.parse_labelled(s)[0] for s in preset_sentences(w))
                for w in preset_words()]
        text = "\n\n".join(docs) + "\n"
    out.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    read_documents(path)  # the trainers' own check: empty documents, unreadable text
    return path


if start and not busy:
    with guard("Training"):
        out = cfg.runs_dir / f"{kind}-{time.strftime('%Y%m%d-%H%M%S')}"
        runner().start(kind, corpus_for(out), out, int(steps), owner=me)
        st.rerun()


@st.cache_data(max_entries=32, show_spinner=False)
def preview(out: str, stamp: float, word: str) -> dict:
    """PCA of the top layer of the model in training, for one preset word (recomputed when the files change)."""
    import ctxmodels

    model = ctxmodels.load(out, download=False)
    ov = vectors.word_vectors(model, preset_sentences(word), word, inflections=True)
    proj = projections.project(ov.layer(-1), method="pca", seed=0)
    return {"coords": proj.coords, "labels": ov.labels,
            "hover": [figures.highlight(o.sentence, o.char_span) for o in ov.occurrences],
            "layer": model.layer_names[-1]}


def model_stamp(out: Path) -> float:
    files = [p for p in out.glob("*") if p.is_file() and p.name not in ("metrics.jsonl", "train.log")]
    return max((p.stat().st_mtime for p in files), default=0.0)


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
                p = preview(str(job.out), model_stamp(job.out), word)
                if np.isfinite(p["coords"]).any():
                    fig = figures.sense_scatter(p["coords"], p["labels"], p["hover"], marker_size=7,
                                                title=f"{word}: {p['layer']}, PCA, at the last checkpoint")
                    plot(fig, f"preview-{word}", key="train::preview")
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
