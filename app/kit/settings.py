"""Operator settings: what the person who starts the server allows (off by default, since a student's browser must
not reach the teacher's disk).

* ``CTXMODELS_APP_MODELS=path1,path2`` or ``streamlit run app/Home.py -- --models path1 path2``: extra models;
* ``CTXMODELS_APP_CORPORA=a.txt,b.txt`` or ``--corpus a.txt b.txt``: plain-text corpora the Word senses page may
  search (besides the training novels when the shared data is present);
* ``CTXMODELS_ALLOW_PATHS=1`` or ``--allow-paths``: the Models page may load a model from a server path, or one
  found in the server's caches, and offer it to every visitor;
* ``CTXMODELS_ALLOW_UPLOADS=1`` or ``--allow-uploads``: the Models page may train on an uploaded text file,
  of at most ``CTXMODELS_UPLOAD_MB`` (default 5) MB;
* ``CTXMODELS_ALLOW_DOWNLOADS=1`` or ``--allow-downloads``: the Models page may download a model from the Hugging
  Face hub or a published ELMo (``app/kit/downloads.py``; the variable also lets ``ctxmodels.load`` download on
  first use);
* ``CTXMODELS_ALLOW_TRAINING=1`` or ``--allow-training``: the Models page may start training a small model (on the
  example sentences, or on an upload when uploads are allowed too); a job belongs to the session that started it;
* ``CTXMODELS_HEAVY_PER_SESSION=N`` or ``--heavy-per-session N`` (default 1): heavy computations one session may
  run at once (``app/kit/limits.py``);
* ``CTXMODELS_VISITOR_SECONDS`` (default 60) and ``CTXMODELS_VISITOR_MB`` (default an eighth of the machine's
  memory, 512 MB to 4 GB): one visitor's computation may take this long and its worker process this much memory
  (``app/kit/budget.py``);
* ``CTXMODELS_APP_RUNS``: where models trained from the app are written (default ``runs/app`` of the checkout;
  for the app installed from a wheel, ``app-runs`` in the cache folder, ``ctxmodels.paths.cache_dir()``);
* ``CTXMODELS_APP_WARMUP=0``: do not warm UMAP up at start-up;
* ``CTXMODELS_WARM_LESSON=1`` or ``--warm-lesson``: warm the lesson once per server, in the background from the
  first visit on (what ``python -m app.warm`` does from outside: ``app/kit/warm_up.py``);
* ``CTXMODELS_APP_PACKAGED=0``: leave the installed model packages (``minilm``) out of the model lists;
* ``CTXMODELS_TORCH_THREADS=N`` (default 1): torch threads per model call while serving (``app/kit/warm_up.py``).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ctxmodels.paths import cache_dir

ROOT = Path(__file__).resolve().parents[2]


def default_runs_dir() -> Path:
    """``runs/app`` of the checkout; the app installed from a wheel sits in site-packages, where nothing is written:
    its runs go to the cache folder instead."""
    return ROOT / "runs" / "app" if (ROOT / "pyproject.toml").is_file() else cache_dir() / "app-runs"


@dataclass
class Settings:
    models: list[str] = field(default_factory=list)
    corpora: list[str] = field(default_factory=list)
    allow_paths: bool = False
    allow_uploads: bool = False
    allow_training: bool = False
    allow_downloads: bool = False
    heavy_per_session: int = 1
    upload_mb: float = 5.0
    runs_dir: Path = ROOT / "runs" / "app"
    warm_up: bool = True
    warm_lesson: bool = False
    packaged: bool = True


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def _count(raw: str, default: int, most: int = 16) -> int:
    """A small positive count from an operator setting; anything else (empty, 0, junk) is ``default``."""
    try:
        n = int(str(raw).strip())
    except ValueError:
        return default
    return min(n, most) if n >= 1 else default


def settings(argv: Sequence[str] | None = None) -> Settings:
    """Settings from the environment and from the arguments after ``--`` in ``streamlit run app/Home.py -- ...``."""
    p = argparse.ArgumentParser(prog="app/Home.py", add_help=False)
    p.add_argument("--models", nargs="*", default=[])
    p.add_argument("--corpus", nargs="*", default=[])
    p.add_argument("--allow-paths", action="store_true")
    p.add_argument("--allow-uploads", action="store_true")
    p.add_argument("--allow-training", action="store_true")
    p.add_argument("--allow-downloads", action="store_true")
    p.add_argument("--heavy-per-session", default=None)
    p.add_argument("--warm-lesson", action="store_true")
    args, _ = p.parse_known_args(list(sys.argv[1:] if argv is None else argv))
    models = [m.strip() for m in os.environ.get("CTXMODELS_APP_MODELS", "").split(",") if m.strip()]
    models += [m.strip() for chunk in args.models for m in chunk.split(",") if m.strip()]
    corpora = [c.strip() for c in os.environ.get("CTXMODELS_APP_CORPORA", "").split(",") if c.strip()]
    corpora += [c.strip() for chunk in args.corpus for c in chunk.split(",") if c.strip()]
    try:
        upload_mb = float(os.environ.get("CTXMODELS_UPLOAD_MB", "5"))
    except ValueError:
        upload_mb = 5.0
    if not 0 < upload_mb < float("inf"):  # nan, inf, 0 or negative: the default
        upload_mb = 5.0
    heavy = _count(args.heavy_per_session or os.environ.get("CTXMODELS_HEAVY_PER_SESSION", ""), default=1)
    return Settings(
        models=list(dict.fromkeys(models)),
        corpora=list(dict.fromkeys(corpora)),
        allow_paths=args.allow_paths or _flag("CTXMODELS_ALLOW_PATHS"),
        allow_uploads=args.allow_uploads or _flag("CTXMODELS_ALLOW_UPLOADS"),
        allow_training=args.allow_training or _flag("CTXMODELS_ALLOW_TRAINING"),
        allow_downloads=args.allow_downloads or _flag("CTXMODELS_ALLOW_DOWNLOADS"),
        heavy_per_session=heavy,
        upload_mb=upload_mb,
        runs_dir=Path(os.environ.get("CTXMODELS_APP_RUNS") or default_runs_dir()),
        warm_up=os.environ.get("CTXMODELS_APP_WARMUP", "1") != "0",
        warm_lesson=args.warm_lesson or _flag("CTXMODELS_WARM_LESSON"),
        packaged=os.environ.get("CTXMODELS_APP_PACKAGED", "1") != "0",
    )
