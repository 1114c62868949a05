"""Every model this package finds without being told a path (:func:`found_models`): the shipped models, the
installed model packages, the Hugging Face cache and the project's cache. Nothing is loaded; each folder's kind is
what :func:`ctxmodels.kinds.detect_kind` makes of it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..checkpoint import CheckpointError
from ..formats.huggingface import hf_repo_name, hf_snapshot
from ..kinds import detect_kind, for_layout
from ..model_files import is_dir, read_json
from ..paths import assets_dir, cache_dir, hf_cache_dirs
from .names import PACKAGED_MODELS, packaged_models


def hf_cache_models() -> list[dict[str, str]]:
    """Models in the Hugging Face cache that this package can read: ``{"name", "model_type", "path"}`` for each
    ``models--ORG--NAME`` entry whose snapshot holds a ``config.json`` (BERT-family encoders load; others are
    listed with their type so a user sees why they do not)."""
    found, seen = [], set()
    for cache in hf_cache_dirs():
        if not cache.is_dir():
            continue
        for repo_dir in sorted(cache.glob("models--*")):
            name = hf_repo_name(repo_dir)
            if name in seen:
                continue
            try:
                snap = hf_snapshot(repo_dir)
                model_type = str(read_json(snap / "config.json").get("model_type", "?"))
            except (CheckpointError, OSError, ValueError):
                continue  # an interrupted download or a non-model repository
            seen.add(name)
            found.append({"name": name, "model_type": model_type, "path": str(snap)})
    return found


def _model_folder_kind(folder: Path) -> str | None:
    """What :func:`detect_kind` makes of ``folder`` ("bert", "transformers", "elmo-published", …), or None when it
    holds no model this package reads (or cannot be read)."""
    try:
        return detect_kind(folder)
    except (CheckpointError, OSError, ValueError):
        return None


def project_cache_models(max_depth: int = 2) -> list[dict[str, str]]:
    """Model folders in the project's cache (:func:`ctxmodels.paths.cache_dir`, where downloaded published ELMos
    go), up to ``max_depth`` folders down: ``{"name", "kind", "path"}``; the name is the path to load."""
    root = cache_dir()
    found: list[dict[str, str]] = []

    def walk(folder: Path, depth: int) -> None:
        try:
            children = sorted(p for p in folder.iterdir() if is_dir(p))
        except OSError:
            return
        for child in children:
            kind = _model_folder_kind(child)
            if kind is not None and kind in for_layout(kind).loose:  # one text file in a folder of results is
                kind = None  # no evidence of word vectors
            if kind is not None:
                found.append({"name": str(child), "kind": kind, "path": str(child)})
            elif depth < max_depth:
                walk(child, depth + 1)

    if is_dir(root):
        walk(root, 1)
    return found


def found_models() -> list[dict[str, Any]]:
    """Every model this package finds without being told a path, for a listing: the shipped models, the installed
    model packages (``minilm``), the Hugging Face cache (encoders marked loadable, other types listed with the
    reason) and the project's cache. Each: ``{"name"`` (what :func:`load` takes), ``"source"``, ``"type"``,
    ``"loadable"``, ``"note"``, ``"path"}``. Nothing is loaded."""
    rows: list[dict[str, Any]] = []
    assets = assets_dir()
    if is_dir(assets):
        for folder in sorted(p for p in assets.iterdir() if is_dir(p)):
            kind = _model_folder_kind(folder)
            if kind is not None:
                rows.append({"name": folder.name, "source": "shipped", "type": kind, "loadable": True, "note": "",
                             "path": str(folder)})
    for name, folder in packaged_models().items():
        kind = _model_folder_kind(folder)
        rows.append({"name": name, "source": f"package {PACKAGED_MODELS[name][2]}", "type": kind or "?",
                     "loadable": kind is not None, "note": "", "path": str(folder)})
    for entry in hf_cache_models():
        model_type = entry["model_type"]
        ok = _model_folder_kind(Path(entry["path"])) is not None
        rows.append({"name": entry["name"], "source": "Hugging Face cache", "type": model_type, "loadable": ok,
                     "note": "" if ok else "not a model ctxmodels reads", "path": entry["path"]})
    for entry in project_cache_models():
        rows.append({"name": entry["name"], "source": "project cache", "type": entry["kind"], "loadable": True,
                     "note": "", "path": entry["path"]})
    return rows
