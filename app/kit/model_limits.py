"""What a model read, said where its answers are: a model that learned English from novels of 1840–1920 fills
"Paris is the capital of [MASK]" from those novels, and a class should see why next to the guess, not only on the
Models page. And, where the operator allows downloads, the published models that read present-day English, by name,
a click away (downloads stay the operator's choice: ``app/kit/downloads.py``)."""

from __future__ import annotations

import re

import streamlit as st

from app.kit.downloads import check_name, downloads
from app.kit.inputs import md
from app.kit.registry import get_model, registry
from app.kit.settings import settings
from ctxmodels.download import offline_reason

# "trained with ctxmodels on ELTeC-eng novels", "continued as a masked language model on ...", "pretrained on ..."
_READ = re.compile(r"\b(?:pre-?trained|trained|continued)\b[^.\n]{0,60}?\bon\s+([^.\n;:(,]{3,140})", re.IGNORECASE)
# The shipped cards' names for what they read, in a student's words.
PLAIN = {
    "ELTeC-eng novels": "English novels of 1840–1920 (ELTeC-eng)",
    "WordNet's English": "some present-day English",
}

# Published models that read present-day English, with what their cards say they read (offered by name when the
# operator allows downloads).
PUBLISHED = {
    "google-bert/bert-base-uncased": "BERT (2018): English Wikipedia and 11,000 books",
    "distilbert/distilbert-base-uncased": "a smaller BERT, read the same text",
    "FacebookAI/roberta-base": "RoBERTa (2019): 160 GB of English books, Wikipedia, news and web pages",
}


def what_it_read(card: str) -> str | None:
    """What a model card says its model learned from, in plain words (None: the card does not say)."""
    text = re.sub(r"[`*_#>\[\]]", "", card[:20_000])
    # not the objective ("pretrained model on English language using a masked language modeling objective")
    found = next((m for m in _READ.finditer(text) if not re.search(r"\busing\b|objective", m.group(1))), None)
    if found is None:
        return None
    said = " ".join(found.group(1).split()).rstrip(" ,")
    for name, plain in PLAIN.items():
        said = said.replace(name, plain)
    return said


def read_line(model_id: str) -> str:
    """One Markdown line for under a model's answers: what it read, so its guesses are read in that light."""
    try:
        card = get_model(model_id).card or ""
    except Exception:  # noqa: BLE001 - the page reports a model that does not load where it uses it
        card = ""
    said = what_it_read(card)
    if said is None:
        return "What it read is not said in its card (Models page); its guesses come from that text."
    return f"Read {md(said)}: it guesses as they would."


def published_offer(key: str) -> None:
    """Published models that read present-day English, by name: a button each where the operator allows downloads
    (the download then shows on the Models page and the model joins every page's list), else a line saying how."""
    names = ", ".join(f"`{name}` ({what})" for name, what in PUBLISHED.items())
    if not settings().allow_downloads:
        st.caption(f"Models that read present-day English can be added by the operator: {names}, with "
                   "`ctxmodels get NAME` before the class or from the Models page when downloads are on.")
        return
    reason = offline_reason(hub=True)
    st.caption("Add a model that read present-day English (a download to this server; its progress is on the "
               "Models page, and it then joins every page's list):")
    cols = st.columns(len(PUBLISHED))
    for col, (name, what) in zip(cols, PUBLISHED.items()):
        if col.button(name.split("/")[-1], key=f"{key}::{name}", help=what, disabled=bool(reason)):
            downloads().start(check_name(name), registry())
            st.session_state["download_polling"] = True
            st.success(f"Downloading {md(name)}: see its progress on the Models page.")
    if reason:
        st.caption(f"Downloads are allowed, but {md(reason)}.")
