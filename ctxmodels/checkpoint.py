"""Our checkpoint layout: a directory with ``config.json``, ``model.safetensors`` and friends.

Every write is atomic (written beside the target, then renamed), so a crash or Ctrl-C in the middle of a
save never leaves a half-written checkpoint behind: the previous one stays readable.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file


class CheckpointError(ValueError):
    """A checkpoint that cannot be loaded; the message names the file and the problem."""


def write_text_atomic(path: str | Path, text: str) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def write_json(path: str | Path, obj: Any) -> None:
    write_text_atomic(path, json.dumps(obj, indent=2, ensure_ascii=False) + "\n")


def read_json(path: str | Path) -> dict:
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path}: file not found")
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CheckpointError(f"{path}: not valid JSON ({e})") from e
    if not isinstance(obj, dict):
        raise CheckpointError(f"{path}: expected a JSON object, found {type(obj).__name__}")
    return obj


def save_tensors(path: str | Path, tensors: dict[str, torch.Tensor], metadata: dict[str, str] | None = None):
    """Safetensors save that handles tied (shared-storage) tensors and is atomic."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    seen: dict[int, str] = {}
    out = {}
    for name, t in tensors.items():
        t = t.detach().cpu()
        key = t.untyped_storage().data_ptr() if t.numel() else id(t)
        # safetensors refuses shared storage; tied weights are written as independent copies.
        out[name] = t.clone().contiguous() if key in seen else t.contiguous()
        seen.setdefault(key, name)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    save_file(out, tmp, metadata=metadata)
    os.replace(tmp, path)


HALF_DTYPES = (torch.float16, torch.bfloat16)


def load_tensors(path: str | Path) -> dict[str, torch.Tensor]:
    """Load a safetensors file, or a legacy ``.bin`` with ``weights_only=True`` (never arbitrary pickles).

    Half-precision tensors (the shipped models store fp16 to stay small) come back as float32, the precision
    every model here computes in.
    """
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path}: file not found")
    try:
        if path.suffix == ".safetensors":
            state = load_file(str(path))
        else:
            state = torch.load(str(path), map_location="cpu", weights_only=True)
    except Exception as e:  # unpickling errors come in many types; all mean "corrupt or unsafe"
        raise CheckpointError(f"{path}: not a readable weights file ({type(e).__name__}: {e})") from e
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise CheckpointError(f"{path}: expected a dict of tensors")
    return {k: v.float() if v.dtype in HALF_DTYPES else v for k, v in state.items()}



def replace_dir_atomic(tmp_dir: Path, final_dir: Path) -> None:
    """Move a fully written ``tmp_dir`` to ``final_dir``, keeping the old one until the new one is in place."""
    final_dir = Path(final_dir)
    old = final_dir.with_name(final_dir.name + ".old")
    if old.exists():
        shutil.rmtree(old)
    if final_dir.exists():
        os.replace(final_dir, old)
    os.replace(tmp_dir, final_dir)
    if old.exists():
        shutil.rmtree(old)


def new_tmp_dir(final_dir: str | Path) -> Path:
    final_dir = Path(final_dir)
    final_dir.parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(dir=final_dir.parent, prefix=f".{final_dir.name}.", suffix=".tmp"))


def file_sha256(path: str | Path) -> str:
    """Hex sha256 of a file, read in 1 MiB blocks (keys the training-data caches to the corpus content)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
