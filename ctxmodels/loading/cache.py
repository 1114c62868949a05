"""The entry point, :func:`load`, with its per-process cache: the kind is detected by the registry
(:mod:`ctxmodels.kinds`) and the files are read by that kind's adapter."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import torch

from .. import kinds
from ..checkpoint import CheckpointError
from ..model_files import is_file, one_line
from .base import LoadedModel, folder_of
from .cards import read_card
from .names import resolve

_CACHE: dict[tuple, LoadedModel] = {}
_LOCK = threading.Lock()
#: the longest message a load error carries (a value quoted from a hostile file could be megabytes)
MAX_MESSAGE = 2000


def peek_kind(path_or_name: str | Path) -> str:
    """The kind :func:`load` would give (``"bert"``, ``"transformers"``, ``"elmo"``, ``"static"``), read from the
    files' names and config alone: nothing is loaded. Errors as :func:`load`'s."""
    path, _ = resolve(path_or_name)
    return kinds.for_layout(kinds.detect_kind(path)).name


def _reader(path: Path, backend: str | None) -> tuple[kinds.ModelKind, str]:
    """(the kind that reads the files at ``path``, their layout): the detected kind, or the ``backend`` kind when it
    reads the detected one's checkpoints."""
    layout = kinds.detect_kind(path)
    kind = kinds.for_layout(layout)
    if backend is None or backend == kind.name:
        return kind, layout
    reader = kinds.get(backend)
    if kind.name not in reader.reads:
        raise CheckpointError(f"{path}: a {kind.name} model; backend={backend!r} reads {reader.description}")
    return reader, reader.layouts[0]


def _load_uncached(path: Path, name: str, device: str | torch.device, backend: str | None = None) -> LoadedModel:
    kind, layout = _reader(path, backend)
    loaded = kind.adapter_class().from_files(path, layout, name, device, read_card(path))
    loaded.check_outputs()
    if kinds.FINETUNE in kind.capabilities:  # a fine-tuned backbone says so in finetune.json beside it
        from ..formats.finetuned import read_finetune_info

        loaded.finetune_info = read_finetune_info(folder_of(path))
    return loaded


def _stamp(path: Path) -> float:
    """Newest modification time of the files at ``path``, so a model retrained in place is loaded again."""
    if is_file(path):
        return path.stat().st_mtime
    return max((p.stat().st_mtime for p in path.iterdir() if is_file(p)), default=0.0)


def _one_line_error(e: CheckpointError) -> CheckpointError:
    """``e`` with its message on one line (a file name may hold a line break) and of bounded length."""
    text = one_line(str(e))
    if len(text) > MAX_MESSAGE:
        text = text[: MAX_MESSAGE - 200] + " ... " + text[-195:]
    if text == str(e):
        return e
    new = type(e)(text)
    new.__cause__ = e.__cause__
    return new


def load(path_or_name: str | Path, device: str | torch.device = "cpu", reload: bool = False,
         download: bool | None = None, backend: str | None = None) -> LoadedModel:
    """Load a model by path or name (see :mod:`ctxmodels.loading`); the same object is returned on later calls.

    ``backend``: None reads each kind with its own code (BERT checkpoints with ours, the other encoders through
    transformers); "transformers" reads a BERT checkpoint through transformers too (any kind whose registry entry
    ``reads`` other kinds' checkpoints: :func:`ctxmodels.kinds.backends`).

    Whatever is wrong with the files (missing, damaged, hostile, not matching each other, too large for this
    machine, a pipe or a device), the error is a :class:`~ctxmodels.checkpoint.CheckpointError` (a
    :class:`~ctxmodels.kinds.ModelNotFoundError` when nothing is there) with a one-line message naming the file.
    ``download=True`` lets a published model that is not here yet be downloaded (:mod:`ctxmodels.download`),
    ``None`` lets ``CTXMODELS_ALLOW_DOWNLOADS=1`` decide and ``False`` never downloads."""
    where: Any = path_or_name
    try:
        if backend is not None and backend not in kinds.backends():
            choices = " or ".join(repr(b) for b in kinds.backends())
            raise ValueError(f"backend must be None or {choices}, got {backend!r}")
        path, name = resolve(path_or_name, download)
        where = path
        key = (str(path), str(device), backend)
        with _LOCK:
            cached = _CACHE.get(key)
            stamp = _stamp(path)
            if cached is not None and not reload and getattr(cached, "_stamp", None) == stamp:
                return cached
            model = _load_uncached(path, name, device, backend)
            model._stamp = stamp  # type: ignore[attr-defined]
            _CACHE[key] = model
            return model
    except CheckpointError as e:
        fixed = _one_line_error(e)
        if fixed is e:
            raise
        raise fixed from e.__cause__
    except OSError as e:  # a file that cannot be read (permissions, I/O errors, a name too long)
        raise _one_line_error(CheckpointError(f"{where}: cannot read the model ({e.strerror or e})")) from e
    except MemoryError:
        raise CheckpointError(one_line(f"{where}: not enough memory to load this model")) from None
    except ValueError as e:  # a library below the formats reporting bad data; the formats name their files
        raise _one_line_error(CheckpointError(f"{where}: cannot load the model ({e})")) from e


def clear_cache() -> None:
    with _LOCK:
        _CACHE.clear()


def forget(path: str | Path) -> None:
    """Drop the cached models loaded from the folder or file ``path`` (one that was only loaded to be checked)."""
    with _LOCK:
        for key in [k for k in _CACHE if k[0] == str(path)]:
            del _CACHE[key]
