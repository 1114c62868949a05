"""ctxmodels: train, load and look inside ELMo, BERT and static word vectors."""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"


def load(path_or_name: str, **kwargs: Any):
    """Load any supported model by path or short name; see :mod:`ctxmodels.loading`."""
    from .loading import load as _load

    return _load(path_or_name, **kwargs)
