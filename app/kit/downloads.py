"""Adding a published model from the Models page: a Hugging Face id (``ORG/NAME``) or a published ELMo
(``elmo-small``, …), only when the operator started the app with ``--allow-downloads`` / ``CTXMODELS_ALLOW_DOWNLOADS=1``
(off by default: the app may be served to a room, and a download fills the server's disk).

The download runs in the background, one at a time on the server, in a queue of its own (a download of minutes must
not hold up the projections queued in ``app/kit/background.py``); every visitor sees it and its progress. When it ends,
the model is loaded once (so that a model this package cannot read says so here, not on another page) and added to
every visitor's model list. The files go where ``ctxmodels get`` puts them, so the next server start finds them.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

import streamlit as st

from app.kit.background import Jobs
from app.kit.inputs import md
from app.kit.registry import Registry, registry
from app.kit.settings import settings
from ctxmodels.checkpoint import CheckpointError
from ctxmodels.download import ELMO_RELEASES, HUB_ID, get_elmo, get_hub, offline_reason

RUNNING = ("queued", "downloading", "loading")


class Progress:
    """One download as every visitor sees it: its status, bytes so far and expected, and how it ended."""

    def __init__(self, name: str):
        self.name = name
        self.status = "queued"
        self.detail = ""
        self.error = ""
        self.started = time.time()
        self._lock = threading.Lock()
        self._bars: dict[int, tuple[str, float, float | None]] = {}  # id -> (unit, done, total)

    def bar(self, key: int, unit: str, done: float, total: float | None) -> None:
        with self._lock:
            self._bars[key] = (unit, done, total)

    def fraction(self) -> tuple[float | None, str]:
        """(the share done, or None while no total is known; a line saying how far): bytes when the bars count
        bytes, else files (older huggingface_hub versions hand their own bars only the files count)."""
        with self._lock:
            bars = [b for b in self._bars.values() if b[2]]
        for unit, text in (("B", "{:,.1f} of {:,.1f} MB"), ("it", "{:.0f} of {:.0f} files")):
            counted = [b for b in bars if b[0] == unit]
            if counted:
                done, total = sum(b[1] for b in counted), sum(b[2] or 0 for b in counted)
                scale = 2**20 if unit == "B" else 1
                return min(done / total, 1.0), text.format(done / scale, total / scale)
        return None, self.detail or self.status

    def tqdm_class(self) -> type:
        """A tqdm class for ``snapshot_download`` that reports into this object and prints nothing."""
        from tqdm import tqdm

        progress = self

        class Reporting(tqdm):
            def __init__(self, *args: Any, **kwargs: Any):
                kwargs.pop("name", None)  # huggingface_hub's own keyword, not tqdm's
                kwargs["file"] = open(os.devnull, "w")  # noqa: SIM115 - closed with the bar
                super().__init__(*args, **kwargs)
                self._report()

            def _report(self) -> None:
                progress.bar(id(self), "B" if self.unit == "B" else "it", float(self.n),
                             float(self.total) if self.total else None)

            def update(self, n: float | None = 1) -> bool | None:
                out = super().update(n)
                self._report()
                return out

            def refresh(self, *args: Any, **kwargs: Any) -> None:
                super().refresh(*args, **kwargs)
                self._report()

            def close(self) -> None:
                self._report()
                f = self.fp
                super().close()
                try:
                    f.close()
                except (AttributeError, OSError, ValueError):
                    pass

        return Reporting


class Downloads:
    """The server's downloads by name; at most one runs at a time."""

    def __init__(self) -> None:
        self._jobs = Jobs(workers=1)
        self._lock = threading.Lock()
        self._all: dict[str, Progress] = {}

    def start(self, name: str, models: Registry) -> Progress:
        with self._lock:
            current = self._all.get(name)
            if current is not None and current.status in RUNNING:
                return current
            progress = Progress(name)
            self._all[name] = progress
            self._jobs.submit((name, progress.started), _download, name, progress, models)
            return progress

    def all(self) -> list[Progress]:
        with self._lock:
            return list(self._all.values())


@st.cache_resource
def downloads() -> Downloads:
    return Downloads()


def _download(name: str, progress: Progress, models: Registry) -> None:
    """The job: download, load once, add to the model list; the outcome goes into ``progress``."""
    import ctxmodels

    try:
        progress.status = "downloading"
        if name in ELMO_RELEASES:
            get_elmo(name, progress=lambda file: lambda done, total: progress.bar(hash(file), "B", done, total))
        else:
            get_hub(name, tqdm_class=progress.tqdm_class())
        progress.status, progress.detail = "loading", "loading the model once to check it"
        ctxmodels.load(name, download=False)
        models.add(name)
        progress.status = "done"
    except CheckpointError as e:
        progress.status, progress.error = "failed", " ".join(str(e).split())
    except Exception as e:  # noqa: BLE001 - a visitor sees one line, never a traceback; the server log has it
        progress.status, progress.error = "failed", f"{type(e).__name__}: {' '.join(str(e).split())[:300]}"


def check_name(name: str) -> str:
    """The name to download, stripped; ValueError saying what is accepted."""
    name = name.strip()
    if name in ELMO_RELEASES or HUB_ID.fullmatch(name):
        return name
    raise ValueError(f"{name[:80]!r} is neither a Hugging Face id ORG/NAME (e.g. google-bert/bert-base-uncased) nor "
                     f"a published ELMo ({', '.join(ELMO_RELEASES)})")


def _status_panel() -> None:
    shown = downloads().all()
    running = any(p.status in RUNNING for p in shown)
    if not running and st.session_state.pop("download_polling", False):
        st.rerun()  # a download ended during a timed fragment run: a full run shows the model in the list above
    for p in sorted(shown, key=lambda p: -p.started):
        fraction, line = p.fraction()
        if p.status in RUNNING:
            st.markdown(f"**{md(p.name)}**: {p.status} …")
            st.progress(fraction if fraction is not None else 0.0, text=line)
        elif p.status == "done":
            st.success(f"{md(p.name)} is downloaded and selectable on every page.")
        else:
            st.error(f"{md(p.name)}: {md(p.error)}")
    st.session_state["download_polling"] = running


def download_panel() -> None:
    """The Models page's "Add a published model" section (a notice only, unless the operator allows downloads)."""
    st.subheader("Add a model from the Hugging Face hub")
    if not settings().allow_downloads:
        st.info("Downloading models from the app is off, so visitors cannot fill the server's disk. The operator can "
                "turn it on with `CTXMODELS_ALLOW_DOWNLOADS=1` or `streamlit run app/Home.py -- --allow-downloads`, "
                "or download before the class with `ctxmodels get ORG/NAME` (or `ctxmodels get elmo-small`): "
                "downloaded models are found at start-up.")
        return
    reason = offline_reason(hub=True)
    if reason:
        st.warning(f"Downloads are allowed, but {reason}: nothing can be downloaded until it is unset.")
    with st.form("download_form"):
        source = st.text_input("Hugging Face id or published ELMo", key="download_name",
                               placeholder="google-bert/bert-base-uncased, elmo-small")
        go = st.form_submit_button("Download", disabled=bool(reason))
    st.caption("Hub models go to the Hugging Face cache, ELMos to the ctxmodels cache; one download at a time on "
               "this server. Every visitor sees the downloads and their progress.")
    if go:
        try:
            downloads().start(check_name(source), registry())
            st.session_state["download_polling"] = True
        except ValueError as e:
            st.error(str(e))
    polling = st.session_state.get("download_polling", False) or any(p.status in RUNNING for p in downloads().all())
    st.fragment(_status_panel, run_every=1 if polling else None)()
