"""How a model's folder on the server is shown to a visitor: by where it came from (shipped, an installed package,
the Hugging Face cache, the project's cache), not by an absolute path that is noise on a projector and tells a room
how the server's disk is laid out. A folder loaded from a path keeps its path, with the home folder as ``~``."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any


def home_short(path: str | Path) -> str:
    """``path`` with the home folder written ``~`` (as a shell shows it)."""
    p, home = Path(path), Path.home()
    try:
        rest = p.relative_to(home)
    except ValueError:
        return str(p)
    return "~" if rest == Path() else f"~/{rest}"


def source_of(path: str | Path, found: Iterable[dict[str, Any]]) -> str:
    """Where the model in ``path`` came from: the ``source`` of its row in ``found`` (rows as
    ``ctxmodels.loading.found_models`` gives them), else the path it was loaded from, home shortened."""
    resolved = Path(path).resolve()
    for row in found:
        if Path(row["path"]).resolve() == resolved:
            return str(row["source"])
    return f"path {home_short(path)}"
