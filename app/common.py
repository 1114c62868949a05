"""What every explorer page shares: the models, the URL state, error handling, exports and explanations.

Pages stay thin: they read widgets, call the analysis core (``ctxmodels.analysis``) and draw with
``app.figures``. Everything that must exist once per *server* (the model registry, the UMAP warm-up, the
training job) lives behind ``st.cache_resource``; everything per *visitor* lives in ``st.session_state`` and,
for what a shared link must reproduce, in the URL's query parameters.

Operator settings (a student's browser must not reach the teacher's disk, so these are off by default):

* ``CTXMODELS_APP_MODELS=path1,path2`` or ``streamlit run app/Home.py -- --models path1 path2``: extra models;
* ``CTXMODELS_ALLOW_PATHS=1`` or ``--allow-paths``: the Models page may load a model from a server path;
* ``CTXMODELS_ALLOW_UPLOADS=1`` or ``--allow-uploads``: the Models page may train on an uploaded text file,
  of at most ``CTXMODELS_UPLOAD_MB`` (default 5) MB;
* ``CTXMODELS_APP_RUNS``: where models trained from the app are written (default ``runs/app``);
* ``CTXMODELS_APP_WARMUP=0``: do not warm UMAP up at start-up.
"""

from __future__ import annotations

import argparse
import html
import logging
import os
import sys
import threading
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import streamlit as st

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `streamlit run app/Home.py` puts only app/ on the path
    sys.path.insert(0, str(ROOT))

from ctxmodels.thread_warnings import CHATTER, caught_warnings  # noqa: E402 - needs the path set just above

SENSES_DIR = ROOT / "assets" / "examples" / "senses"
log = logging.getLogger("ctxmodels.app")

# Input limits: far above a classroom's needs, low enough that one visitor cannot stall the server.
MAX_SENTENCES = 400
MAX_WORDS_PER_SENTENCE = 300
MAX_TEXT_WORDS = 600  # fill-in and attention (BERT reads at most 512 pieces)


# ----------------------------------------------------------------------------------------------------------
# operator settings


@dataclass
class Settings:
    models: list[str] = field(default_factory=list)
    allow_paths: bool = False
    allow_uploads: bool = False
    upload_mb: float = 5.0
    runs_dir: Path = ROOT / "runs" / "app"
    warm_up: bool = True


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def settings(argv: Sequence[str] | None = None) -> Settings:
    """Settings from the environment and from the arguments after ``--`` in ``streamlit run app/Home.py -- ...``."""
    p = argparse.ArgumentParser(prog="app/Home.py", add_help=False)
    p.add_argument("--models", nargs="*", default=[])
    p.add_argument("--allow-paths", action="store_true")
    p.add_argument("--allow-uploads", action="store_true")
    args, _ = p.parse_known_args(list(sys.argv[1:] if argv is None else argv))
    models = [m.strip() for m in os.environ.get("CTXMODELS_APP_MODELS", "").split(",") if m.strip()]
    models += [m.strip() for chunk in args.models for m in chunk.split(",") if m.strip()]
    try:
        upload_mb = float(os.environ.get("CTXMODELS_UPLOAD_MB", "5"))
    except ValueError:
        upload_mb = 5.0
    return Settings(
        models=list(dict.fromkeys(models)),
        allow_paths=args.allow_paths or _flag("CTXMODELS_ALLOW_PATHS"),
        allow_uploads=args.allow_uploads or _flag("CTXMODELS_ALLOW_UPLOADS"),
        upload_mb=upload_mb,
        runs_dir=Path(os.environ.get("CTXMODELS_APP_RUNS") or ROOT / "runs" / "app"),
        warm_up=os.environ.get("CTXMODELS_APP_WARMUP", "1") != "0",
    )


# ----------------------------------------------------------------------------------------------------------
# models: one registry per server


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
    from ctxmodels.loading import SHORT_NAMES, assets_dir

    folder = assets_dir()
    if not folder.is_dir():
        return []
    found = [p.name for p in sorted(folder.iterdir())
             if p.is_dir() and ((p / "config.json").is_file() or any(p.glob("*options*.json")))]
    return [n for n in SHORT_NAMES if n in found] + [n for n in found if n not in SHORT_NAMES]


def model_ids() -> list[str]:
    """Every selectable model: shipped ones, the operator's, then those added in this server's lifetime."""
    return list(dict.fromkeys(shipped_models() + settings().models + registry().extra()))


def label(model_id: str) -> str:
    """A short display name: the short name, or a path's last folder."""
    p = Path(model_id)
    return p.name if len(p.parts) > 1 else model_id


@st.cache_resource(show_spinner="Loading model …", max_entries=16)
def get_model(model_id: str):
    """The loaded model (once per server: every visitor shares it)."""
    import ctxmodels

    return ctxmodels.load(model_id)


def load_models(ids: Sequence[str]) -> list:
    """Load ``ids``; a model that fails to load gets an error box and is left out."""
    models = []
    for mid in ids:
        with guard(f"Loading {label(mid)}"):
            models.append(get_model(mid))
    return models


def no_models_message() -> None:
    from ctxmodels.loading import assets_dir

    st.warning(
        "**No model is available yet.** The shipped models (`bert-eltec`, `elmo-eltec`, `static-eltec`) are not "
        f"in `{assets_dir()}`. Either train them into that folder (`ctxmodels train bert --corpus FILE --out "
        f"{assets_dir() / 'bert-eltec'}`, and likewise `elmo`, `static`), or start the app with your own models: "
        "`CTXMODELS_APP_MODELS=/path/a,/path/b streamlit run app/Home.py` (or `-- --models /path/a`), "
        "or train a small one on the **Models** page."
    )


def require_models(kinds: Sequence[str] | None = None, need: Callable[[Any], bool] | None = None,
                   what: str = "this page") -> list[str]:
    """Ids of available models (of ``kinds``); if there are none, say what to do and stop the page."""
    ids = model_ids()
    if not ids:
        no_models_message()
        st.stop()
    if kinds is None and need is None:
        return ids
    ok = []
    for mid in ids:
        try:
            m = get_model(mid)
        except Exception:  # noqa: BLE001 - reported where the model is used; here it is just not offered
            continue
        if (kinds is None or m.kind in kinds) and (need is None or need(m)):
            ok.append(mid)
    if not ok:
        kinds_text = " or ".join(kinds) if kinds else "suitable"
        st.warning(f"None of the available models ({', '.join(label(i) for i in ids)}) works for {what}: it needs "
                   f"a {kinds_text} model. Add one on the **Models** page or with `CTXMODELS_APP_MODELS`.")
        st.stop()
    return ok


# ----------------------------------------------------------------------------------------------------------
# probe results (ELMo's learned scalar mix)


def cached_probe_results(model) -> dict:
    """The newest cached probe result of each task for this model's files (whatever its settings), if any."""
    from ctxmodels.analysis import probes

    found = {task: probes.latest_cached_result(model, task) for task in probes.TASKS}
    return {task: r for task, r in found.items() if r is not None}


# ----------------------------------------------------------------------------------------------------------
# URL state: the widgets that matter start from the query parameters and write back to them


def _parse(raw: str, kind: type) -> Any:
    if kind is bool:
        return raw.lower() in ("1", "true", "yes", "on")
    return kind(raw)


def url_state(key: str, default: Any, options: Sequence[Any] | None = None, kind: type | None = None,
              many: bool = False) -> None:
    """Put the URL's value of ``key`` (else ``default``) into ``st.session_state[key]`` on a session's first run,
    so the widget with that key starts from it. Values not among ``options`` fall back to the default."""
    if key in st.session_state:
        return
    st.session_state[key] = url_value(key, default, options, kind, many)


def url_value(key: str, default: Any, options: Sequence[Any] | None = None, kind: type | None = None,
              many: bool = False) -> Any:
    """The URL's value of ``key``, else the value this session last had, else ``default``.

    For a widget's ``value=`` argument: a widget that starts from its own ``value`` keeps it even if the browser
    re-creates it (as can happen when a rerun from every keystroke interrupts another), where one that starts
    from session state falls back to its built-in default.
    """
    kind = kind or (type(default) if default is not None and not many else str)
    # Not in the URL: the value this session last had (page switches drop the other page's widget state).
    value = st.session_state.get(f"_keep::{key}", default)
    try:
        if many:
            raw = [r for chunk in st.query_params.get_all(key) for r in chunk.split(",") if r]
            if raw:
                parsed = [_parse(r, kind) for r in raw]
                value = [v for v in parsed if options is None or v in options]
        elif key in st.query_params:
            parsed = _parse(st.query_params[key], kind)
            value = parsed if options is None or parsed in options else default
    except (ValueError, TypeError):
        value = default
    return value


def to_url(*keys: str) -> None:
    """Write the current values of ``keys`` into the URL (lists as repeated parameters)."""
    for key in keys:
        if key not in st.session_state:
            continue
        value = st.session_state[key]
        st.session_state[f"_keep::{key}"] = value
        if isinstance(value, (list, tuple)):
            st.query_params[key] = [str(v) for v in value]
        elif isinstance(value, bool):
            st.query_params[key] = "1" if value else "0"
        elif value is None:
            st.query_params.pop(key, None)
        else:
            st.query_params[key] = str(value)


# ----------------------------------------------------------------------------------------------------------
# errors and warnings: nothing a user types may end in a traceback


@contextmanager
def guard(what: str = "That") -> Iterator[None]:
    """Run a block; a ValueError (bad input) becomes an error box with its message, any other exception an error
    box that says it is a bug (with the exception), and warnings raised inside become warning boxes."""
    from ctxmodels.checkpoint import CheckpointError

    try:
        with caught_warnings() as caught:
            yield
        show_warnings(str(message) for message, category in caught if _shown(category))
    except (ValueError, KeyError, CheckpointError, FileNotFoundError, UnicodeError) as e:
        st.error(f"{what}: {_message(e)}")
    except MemoryError:
        st.error(f"{what}: not enough memory for this input; use fewer or shorter sentences.")
    except Exception as e:  # noqa: BLE001 - the page must survive anything; the log keeps the traceback
        log.error("%s failed:\n%s", what, traceback.format_exc())
        st.error(f"{what} failed unexpectedly ({type(e).__name__}: {_message(e)}). This is a bug in the explorer; "
                 "the server log has the details.")


def _message(e: BaseException) -> str:
    text = str(e.args[0]) if isinstance(e, KeyError) and e.args else str(e)
    return text or type(e).__name__


def _shown(category: type[Warning]) -> bool:
    """Warnings meant for the user (the core's), not library deprecation chatter."""
    return issubclass(category, UserWarning) and not issubclass(category, CHATTER)


def show_warnings(messages: Iterator[str] | Sequence[str]) -> None:
    for msg in dict.fromkeys(messages):
        st.warning(msg)


@contextmanager
def record_warnings() -> Iterator[list[str]]:
    """Collect the user-facing warnings of a block as strings (for results cached with ``st.cache_data``)."""
    out: list[str] = []
    with caught_warnings() as caught:
        yield out
    out.extend(dict.fromkeys(str(message) for message, category in caught if _shown(category)))


# ----------------------------------------------------------------------------------------------------------
# UMAP warm-up: importing umap and its first fit take half a minute; pay that once, in the background


@st.cache_resource
def umap_warm_up() -> threading.Thread | None:
    if not settings().warm_up:
        return None
    from ctxmodels.analysis.projections import start_umap_warm_up

    return start_umap_warm_up()


def umap_ready() -> bool:
    thread = umap_warm_up()
    return thread is None or not thread.is_alive()


# ----------------------------------------------------------------------------------------------------------
# presentation mode and page chrome


def presenting() -> bool:
    """Presentation mode: on from ``?present=1`` for the whole session (page switches clear the URL)."""
    url_state("present", False, kind=bool)
    return bool(st.session_state["present"])


def start_presenting() -> None:
    st.session_state["present"] = bool(st.session_state.get("present_toggle"))


PRESENTATION_CSS = """
<style>
html { font-size: 125%; }  /* Streamlit sizes its text in rem: everything grows together */
section[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"] { display: none !important; }
</style>
"""


def page_header(title: str, intro: str) -> None:
    st.title(title)
    st.markdown(intro)


def explain(text: str, formulas: Sequence[str] = ()) -> None:
    """The page's "what am I looking at": a few sentences and the formulas it illustrates."""
    with st.expander("What am I looking at?", expanded=False):
        st.markdown(text)
        for f in formulas:
            st.latex(FORMULAS.get(f, f))


FORMULAS = {
    "mlm": r"\mathcal{L}_{\text{MLM}} = -\sum_{i \in M} \log p_\theta\big(x_i \mid x_{\setminus M}\big), \qquad "
           r"p_\theta(x_i = w \mid \cdot) = \operatorname{softmax}(W\,h_i + b)_w",
    "attention": r"\operatorname{Attention}(Q, K, V) = \operatorname{softmax}\!\Big(\frac{Q K^\top}{\sqrt{d_k}}\Big) V",
    "multihead": r"\operatorname{MultiHead}(X) = [\,\text{head}_1; \dots; \text{head}_h\,]\,W^O, \quad "
                 r"\text{head}_j = \operatorname{Attention}(X W_j^Q, X W_j^K, X W_j^V)",
    "bilm": r"\max \sum_{k=1}^{N} \Big( \log p(t_k \mid t_1, \dots, t_{k-1}; \overrightarrow{\Theta}) + "
            r"\log p(t_k \mid t_{k+1}, \dots, t_N; \overleftarrow{\Theta}) \Big)",
    "scalar_mix": r"\mathbf{v}_k = \gamma \sum_{j=0}^{L} s_j\, \mathbf{h}_{k,j}, \qquad "
                  r"s = \operatorname{softmax}(w)",
    "cosine": r"\cos(u, v) = \frac{u \cdot v}{\lVert u \rVert\, \lVert v \rVert}",
    "self_similarity": r"\text{SelfSim}_\ell(w) = \frac{1}{n(n-1)} \sum_{i \ne j} \cos\big(f_\ell(s_i, w), "
                       r"f_\ell(s_j, w)\big) \;-\; \text{(mean cosine of random word pairs in layer } \ell)",
    "rollout": r"\tilde{A}_\ell = \tfrac12 \bar{A}_\ell + \tfrac12 I, \qquad R_\ell = \tilde{A}_\ell\, R_{\ell-1}",
}


# ----------------------------------------------------------------------------------------------------------
# figures with their exports


def image_format() -> str:
    return st.session_state.get("image_format", "png")


def plot(fig, name: str, key: str, data=None, selectable: bool = False):
    """Show a Plotly figure with its exports: the modebar camera saves PNG or SVG (the format chosen in the
    sidebar), the buttons below give the figure as HTML and the data behind it as CSV.

    Returns the selection event when ``selectable`` (click a point: the page reruns with it)."""
    config = {"displaylogo": False,
              "toImageButtonOptions": {"format": image_format(), "filename": _safe_name(name), "scale": 2}}
    kwargs: dict[str, Any] = {"config": config, "key": key, "width": "stretch"}
    if selectable:
        kwargs.update(on_select="rerun", selection_mode="points")
    if st.session_state.get("present"):  # Plotly sizes text in px: enlarge it for the projector too
        fig.update_layout(font=dict(size=17), title_font=dict(size=20))
    event = st.plotly_chart(fig, **kwargs)
    export_buttons(fig, name, key, data)
    return event


def export_buttons(fig, name: str, key: str, data=None) -> None:
    cols = st.columns(2 if data is not None else 1)
    cols[0].download_button("Figure (HTML)", data=lambda: fig.to_html(include_plotlyjs=True, full_html=True),
                            file_name=f"{_safe_name(name)}.html", mime="text/html", key=f"{key}::html",
                            on_click="ignore", icon=":material/download:", type="tertiary")
    if data is not None:
        cols[1].download_button("Data (CSV)", data=lambda: data.to_csv(index=False).encode("utf-8"),
                                file_name=f"{_safe_name(name)}.csv", mime="text/csv", key=f"{key}::csv",
                                on_click="ignore", icon=":material/download:", type="tertiary")


def _safe_name(name: str) -> str:
    keep = "".join(c if c.isalnum() or c in "-_." else "-" for c in name.strip())
    return keep.strip("-")[:80] or "figure"


def escape(text: str) -> str:
    return html.escape(text)


# ----------------------------------------------------------------------------------------------------------
# projections


def centred_directions(X):
    """Rows scaled to unit length (cosine geometry), minus their mean; NaN rows stay NaN.

    For panels fitted jointly: layers sit in different regions of the space, and fitted as they are the first
    axis would only say "this is layer 0, that is layer 2". Centring each layer keeps one scale for all."""
    import numpy as np

    U = X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-12)
    ok = np.isfinite(U).all(axis=1)
    if ok.any():
        U = U - U[ok].mean(axis=0)
    return U


# ----------------------------------------------------------------------------------------------------------
# inputs


def preset_words() -> list[str]:
    return sorted(p.stem for p in SENSES_DIR.glob("*.txt"))


def preset_sentences(word: str) -> list[str]:
    path = SENSES_DIR / f"{word}.txt"
    if not path.is_file():
        raise ValueError(f"no preset for {word!r}; presets: {', '.join(preset_words())}")
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def own_sentences(text: str) -> list[str]:
    """Lines of a text area as sentences (optionally ``sentence | label``), checked against the limits."""
    from ctxmodels.analysis.vectors import parse_labelled

    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    if not lines:
        raise ValueError("no sentences: type one sentence per line, each containing the target word "
                         "(optionally followed by `| sense label`)")
    if len(lines) > MAX_SENTENCES:
        raise ValueError(f"{len(lines)} sentences is more than this page takes ({MAX_SENTENCES}); use fewer")
    for i, line in enumerate(lines, 1):
        n = len(parse_labelled(line)[0].split())
        if n > MAX_WORDS_PER_SENTENCE:
            raise ValueError(f"sentence {i} has {n:,} words; sentences may have at most {MAX_WORDS_PER_SENTENCE} "
                             "(one sentence per line)")
    return lines


def check_text(text: str, what: str = "text") -> str:
    """A single text for fill-in or attention: not empty, not too long."""
    text = (text or "").strip()
    if not text:
        raise ValueError(f"the {what} is empty: type a sentence")
    n = len(text.split())
    if n > MAX_TEXT_WORDS:
        raise ValueError(f"the {what} has {n:,} words; this page takes at most {MAX_TEXT_WORDS}")
    return text
