"""Where the package finds files it does not hold itself: shipped models, shared data, caches.

Each place has an environment variable first, so an installed wheel (where no checkout surrounds the package)
works once the variable is set; the fallbacks are where those files sit in a checkout of this repository.

* ``assets_dir()``: the shipped models, example sets and the compact SemCor + WordNet copy (``semcor/``, read when
  the shared data is absent). ``$CTXMODELS_ASSETS``, else ``assets/`` of the checkout this package runs from.
* ``data_dir()``: the shared data (corpus, SemCor, WordNet glosses, the ELMo reference). ``$CTXMODELS_DATA``, else
  ``../shared/data`` beside the checkout.
* ``cache_dir()``: results worth keeping between runs (probe fits). ``$CTXMODELS_CACHE``, else
  ``$XDG_CACHE_HOME/ctxmodels``, else ``~/.cache/ctxmodels``.
* ``hf_cache_dirs()``: the Hugging Face hub caches, in the order ``huggingface_hub`` resolves them.
"""

from __future__ import annotations

import os
from pathlib import Path

# The checkout that holds this package (a wheel installed into site-packages has no assets/ beside it).
CHECKOUT = Path(__file__).resolve().parents[1]


def assets_dir() -> Path:
    """Shipped models and example sets: ``$CTXMODELS_ASSETS``, else ``assets/`` of the checkout."""
    env = os.environ.get("CTXMODELS_ASSETS")
    return Path(env).expanduser() if env else CHECKOUT / "assets"


def examples_dir() -> Path:
    """The example sets shipped with the models (preset sense sentences, the cloze list)."""
    return assets_dir() / "examples"


def data_dir() -> Path:
    """The shared data folder: ``$CTXMODELS_DATA``, else ``../shared/data`` beside the checkout."""
    env = os.environ.get("CTXMODELS_DATA")
    return Path(env).expanduser() if env else CHECKOUT.parent / "shared" / "data"


def cache_dir() -> Path:
    """``$CTXMODELS_CACHE``, else ``$XDG_CACHE_HOME/ctxmodels``, else ``~/.cache/ctxmodels``."""
    if os.environ.get("CTXMODELS_CACHE"):
        return Path(os.environ["CTXMODELS_CACHE"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "ctxmodels"


def hf_cache_dirs() -> list[Path]:
    """The Hugging Face hub cache folders to search, most specific first (as huggingface_hub resolves them):
    ``$HF_HUB_CACHE``, ``$HUGGINGFACE_HUB_CACHE``, ``$HF_HOME/hub``, ``$XDG_CACHE_HOME/huggingface/hub`` (else
    ``~/.cache/huggingface/hub``)."""
    dirs = [Path(os.environ[var]).expanduser() for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE")
            if os.environ.get(var)]
    if os.environ.get("HF_HOME"):
        dirs.append(Path(os.environ["HF_HOME"]).expanduser() / "hub")
    xdg = os.environ.get("XDG_CACHE_HOME")
    dirs.append((Path(xdg) if xdg else Path.home() / ".cache") / "huggingface" / "hub")
    return list(dict.fromkeys(dirs))
