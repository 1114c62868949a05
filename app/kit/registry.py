"""The models: which ones a visitor can choose, loading them once per server, and a page's "which models fit"."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import streamlit as st

from app.kit.inputs import md
from app.kit.memory import settle
from app.kit.settings import settings
from ctxmodels.loading import ATTENTION, FILL_IN, LANGUAGE_MODEL, MASKED_LM, declares
from ctxmodels.paths import assets_dir


class Registry:
    """Models added while the server runs (loaded from a path or trained on the Models page), for every visitor."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._extra: list[str] = []

    def add(self, source: str) -> None:
        with self._lock:
            if source not in self._extra:
                self._extra.append(source)

    def extra(self) -> list[str]:
        with self._lock:
            return list(self._extra)


@st.cache_resource
def registry() -> Registry:
    return Registry()


def shipped_models() -> list[str]:
    """Short names of the models in the assets folder (``$CTXMODELS_ASSETS`` or ``assets/``), defaults first."""
    from ctxmodels.loading import SHORT_NAMES

    folder = assets_dir()
    if not folder.is_dir():
        return []
    found = [p.name for p in sorted(folder.iterdir())
             if p.is_dir() and ((p / "config.json").is_file() or any(p.glob("*options*.json")))]
    return [n for n in SHORT_NAMES if n in found] + [n for n in found if n not in SHORT_NAMES]


def packaged_models() -> list[str]:
    """Short names of the installed model packages (``minilm``), unless the operator left them out."""
    from ctxmodels.loading import packaged_models as installed

    return list(installed()) if settings().packaged else []


def model_ids() -> list[str]:
    """Every selectable model: shipped ones, installed model packages, the operator's, then those added in this
    server's lifetime."""
    return list(dict.fromkeys(shipped_models() + packaged_models() + settings().models + registry().extra()))


# The default BERT: minilm-eltec where it is shipped (on the presets its best layer's 1-NN sense accuracy is 0.94 on
# average against bert-eltec's 0.86, and it separates all eight; bench/senses_presets.py), else bert-eltec.
DEFAULT_BERTS = ("minilm-eltec", "bert-eltec")


def default_models(ids: Sequence[str]) -> list[str]:
    """The models a page compares unless told otherwise: the shipped static vectors, ELMo and default BERT that are
    among ``ids``, else the first three."""
    bert = next((m for m in DEFAULT_BERTS if m in ids), None)
    shipped = [m for m in ("static-eltec", "elmo-eltec", bert) if m in ids]
    return shipped or list(ids[:3])


def offered_as(path: str | Path) -> str | None:
    """The selectable model that already is ``path`` (a shipped or packaged model, one the operator named, one added
    before), so that loading it again by its folder does not list it twice; None when it is new."""
    from ctxmodels.loading import resolve

    target = Path(path).resolve()
    for model_id in model_ids():
        try:
            if Path(resolve(model_id, download=False)[0]).resolve() == target:
                return model_id
        except Exception:  # noqa: BLE001 - a listed model that cannot be found now is not this one
            continue
    return None


def label(model_id: str) -> str:
    """A short display name: the short name, or a path's last folder."""
    p = Path(model_id)
    return p.name if len(p.parts) > 1 else model_id


@st.cache_resource(show_spinner="Loading model …", max_entries=16)
def get_model(model_id: str):
    """The loaded model (once per server: every visitor shares it)."""
    import ctxmodels

    model = ctxmodels.load(model_id, download=False)
    settle()  # its objects last as long as the server: out of the garbage collector's way (app/kit/memory.py)
    return model


def no_models_message() -> None:
    st.warning(
        "**No model is available yet.** The shipped models (`bert-eltec`, `elmo-eltec`, `static-eltec`) are not "
        f"in `{assets_dir()}`. Either train them into that folder (`ctxmodels train bert --corpus FILE --out "
        f"{assets_dir() / 'bert-eltec'}`, and likewise `elmo`, `static`), or start the app with your own models: "
        "`CTXMODELS_APP_MODELS=/path/a,/path/b streamlit run app/Home.py` (or `-- --models /path/a`), "
        "or train a small one on the **Models** page."
    )


@st.cache_data(ttl=60, show_spinner=False)
def peeked_kind(model_id: str) -> str | None:
    """The model's kind from its files alone (nothing loaded); None when they cannot be read."""
    from ctxmodels.loading import peek_kind

    try:
        return peek_kind(model_id)
    except Exception:  # noqa: BLE001 - reported where the model is used; here it is just not offered
        return None


# How the page's warning names a model with a capability ("it needs a BERT-family model").
NEEDS = {ATTENTION: "BERT-family", FILL_IN: "fill-in", LANGUAGE_MODEL: "language-model", MASKED_LM: "masked-LM"}


def require_models(capability: str | None = None, need: Callable[[Any], bool] | None = None,
                   what: str = "this page") -> list[str]:
    """Ids of available models (whose kind declares ``capability``, and passing ``need`` when given); if there are
    none, say what to do and stop the page. With ``capability`` alone nothing is loaded: the kind is read from each
    model's files."""
    ids = model_ids()
    if not ids:
        no_models_message()
        st.stop()
    if capability is None and need is None:
        return ids
    ok = []
    for mid in ids:
        if need is None:
            kind = peeked_kind(mid)
            if kind is not None and declares(kind, capability):
                ok.append(mid)
            continue
        try:
            m = get_model(mid)
        except Exception:  # noqa: BLE001 - reported where the model is used; here it is just not offered
            continue
        if (capability is None or declares(m, capability)) and need(m):
            ok.append(mid)
    if not ok:
        needed = NEEDS.get(capability, "suitable") if capability else "suitable"
        st.warning(f"None of the available models ({', '.join(md(label(i)) for i in ids)}) works for {what}: it needs "
                   f"a {needed} model. Add one on the **Models** page or with `CTXMODELS_APP_MODELS`.")
        st.stop()
    return ok
