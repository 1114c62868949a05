"""What every view that starts from a model shares: the model itself (a loaded one, or a name for
:func:`ctxmodels.load`) and the short name the figures show for it, as the app shows it."""

from __future__ import annotations

from pathlib import Path

from ctxmodels.loading import LoadedModel, load

Model = LoadedModel | str | Path  # what a view takes: a loaded model, or anything ctxmodels.load takes


def as_model(model: Model) -> LoadedModel:
    """``model`` itself, or the model :func:`ctxmodels.load` loads by that name or path (once: later calls reuse
    it)."""
    return model if isinstance(model, LoadedModel) else load(model)


def short_name(name: str | Path) -> str:
    """A model's name as the figures show it: a short name as it is, a path by its last folder (as the app
    labels its models)."""
    p = Path(name)
    return p.name if len(p.parts) > 1 else str(name)


def label_of(model: LoadedModel, name: str | None = None) -> str:
    return short_name(name if name is not None else model.name)
