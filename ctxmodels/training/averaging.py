"""Average the weights of models that continued one another: a weight-space ensemble.

Several continuations of one model (the stages of a run, or fine-tunings on different text from one start) end at
nearby points of the same basin of the loss. Their element-wise mean is one model of the same size, as fast as
each, and often better on held-out text than any of them: a stochastic weight average (Izmailov et al. 2018) over
the ends of learning-rate cycles, or a uniform "model soup" (Wortsman et al. 2022). Models trained apart, from
different random starts, do not share a basin; their mean is usually worse than either, so :func:`average_models`
reports how far apart the inputs are and :func:`far_apart` flags the case.

Only models with identical architectures and inputs can be averaged: the same ``config.json`` and the same
vocabulary and tokenizer files, byte for byte, and the same tensor names and shapes. Every floating-point tensor is
averaged in float32 (fp16 inputs are widened first); any other tensor must be equal in every input.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from ..checkpoint import (
    CheckpointError,
    DiskFullError,
    file_sha256,
    is_disk_full,
    load_tensors,
    new_tmp_dir,
    replace_dir_atomic,
    save_tensors,
    write_json,
    write_text_atomic,
)
from ..model_files import (
    MAX_JSON_BYTES,
    MAX_TOKENIZER_BYTES,
    MAX_VOCAB_BYTES,
    check_weights,
    read_bytes,
    read_json,
)
from .run_lock import hold_folder

WEIGHTS = "model.safetensors"
RECORD = "average.json"
#: the files besides the weights that define what a model reads and predicts (they must match in every input), with
#: the size each may have
INPUT_LIMITS = {"vocab.txt": MAX_VOCAB_BYTES, "tokenizer.json": MAX_TOKENIZER_BYTES,
                "tokenizer_config.json": MAX_JSON_BYTES, "special_tokens_map.json": MAX_JSON_BYTES}
#: relative distance (|a - b| / |a|) beyond which two inputs look like separate trainings rather than continuations;
#: the stages of one run here lie 0.07-0.21 apart, independently initialised models about 1.4 (sqrt 2)
FAR_APART = 0.5


def average_models(sources: Sequence[str | Path], out: str | Path) -> dict[str, Any]:
    """Write the mean of ``sources``' weights, with their config and vocabulary, to the folder ``out``.

    Returns the record also saved as ``out/average.json``: each source's folder name and weights sha256, and the
    largest relative distance between two inputs. ``out`` is written whole or not at all; it may replace an earlier
    average, never another folder.
    """
    folders = [Path(s) for s in sources]
    if len(folders) < 2:
        raise ValueError("give at least two models to average")
    if len({f.resolve() for f in folders}) < len(folders):
        raise ValueError("a model is named twice; to weight one model more, that is not what this command does")
    out = Path(out)
    with hold_folder(out, beside=True):  # the folder is replaced whole: its lock lies beside it
        return _average(folders, out)


def _average(folders: list[Path], out: Path) -> dict[str, Any]:
    _check_output(out, folders)
    config, inputs = _common_inputs(folders)
    states = [_weights(f) for f in folders]
    averaged = _mean(states, folders)
    distance = _largest_distance(states)

    record = {
        "sources": [{"name": f.name, "weights_sha256": file_sha256(f / WEIGHTS)} for f in folders],
        "method": "uniform mean of every floating-point tensor, in float32",
        "largest_relative_distance": round(distance, 4),
    }
    tmp = new_tmp_dir(out)
    try:
        save_tensors(tmp / WEIGHTS, averaged, metadata=_metadata(folders[0] / WEIGHTS))
        write_json(tmp / "config.json", config)
        for name in inputs:
            shutil.copyfile(folders[0] / name, tmp / name)
        write_json(tmp / RECORD, record)
        write_text_atomic(tmp / "README.md", _card(folders, record, config))
        replace_dir_atomic(tmp, out)
    except OSError as e:
        if not is_disk_full(e) or not tmp.exists():
            raise
        needed = sum(t.numel() * t.element_size() for t in averaged.values())
        raise DiskFullError(needed, out, note=f"nothing was written to {out}", code=e.errno) from e
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return record


def far_apart(record: dict[str, Any]) -> bool:
    """Whether the averaged models look like separate trainings (see :data:`FAR_APART`)."""
    return record["largest_relative_distance"] > FAR_APART


def _check_output(out: Path, folders: list[Path]) -> None:
    if out.resolve() in {f.resolve() for f in folders}:
        raise ValueError(f"{out}: is one of the models to average; give a new folder")
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not (out / RECORD).is_file())):
        raise ValueError(f"{out}: exists and is not an earlier average; give a new folder (nothing was written)")


def _common_inputs(folders: list[Path]) -> tuple[dict[str, Any], list[str]]:
    """The shared config, and the names of the vocabulary/tokenizer files every folder has, byte for byte."""
    for f in folders:
        if not f.is_dir():
            raise CheckpointError(f"{f}: not a model folder")
        for name in ("config.json", WEIGHTS):
            if not (f / name).is_file():
                raise CheckpointError(f"{f}: no {name}; give a trained model's folder (a run of `ctxmodels train` "
                                      "or a shipped model)")
    config = read_json(folders[0] / "config.json", "config.json")
    for f in folders[1:]:
        if read_json(f / "config.json", "config.json") != config:
            raise ValueError(f"{f}: its config.json differs from {folders[0]}'s; only models of one architecture "
                             "can be averaged")
    inputs = [name for name in INPUT_LIMITS if (folders[0] / name).is_file()]
    for name in inputs:
        first = read_bytes(folders[0] / name, INPUT_LIMITS[name], name)
        for f in folders[1:]:
            if not (f / name).is_file() or read_bytes(f / name, INPUT_LIMITS[name], name) != first:
                raise ValueError(f"{f}: its {name} differs from {folders[0]}'s; only models with the same "
                                 "vocabulary can be averaged")
    return config, inputs


def _weights(folder: Path) -> dict[str, torch.Tensor]:
    state = load_tensors(folder / WEIGHTS)
    check_weights(state.items(), folder / WEIGHTS)
    return state


def _metadata(path: Path) -> dict[str, str]:
    """The first model's safetensors metadata (format, model type), kept so the average reads like its inputs."""
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as f:
        return dict(f.metadata() or {})


def _mean(states: list[dict[str, torch.Tensor]], folders: list[Path]) -> dict[str, torch.Tensor]:
    first = states[0]
    for state, folder in zip(states[1:], folders[1:]):
        if state.keys() != first.keys():
            missing = sorted(first.keys() - state.keys()) or sorted(state.keys() - first.keys())
            raise ValueError(f"{folder}: its weights name other tensors than {folders[0]}'s (e.g. '{missing[0]}')")
        for name, t in state.items():
            if t.shape != first[name].shape:
                raise ValueError(f"{folder}: weight '{name}' has shape {tuple(t.shape)}, {folders[0]}'s "
                                 f"{tuple(first[name].shape)}")
    averaged = {}
    for name, t in first.items():
        if t.is_floating_point():
            averaged[name] = sum(s[name].float() for s in states) / len(states)
        elif all(torch.equal(s[name], t) for s in states):
            averaged[name] = t
        else:
            raise ValueError(f"weight '{name}' is not a floating-point tensor and differs between the models; "
                             "they cannot be averaged")
    return averaged


def _largest_distance(states: list[dict[str, torch.Tensor]]) -> float:
    flat = [torch.cat([t.float().flatten() for _, t in sorted(s.items()) if t.is_floating_point()]) for s in states]
    return max(float((a - b).norm() / a.norm().clamp_min(1e-12)) for i, a in enumerate(flat) for b in flat[i + 1:])


def _card(folders: list[Path], record: dict[str, Any], config: dict[str, Any]) -> str:
    kind = str(config.get("model_type", "model"))
    rows = "\n".join(f"| `{s['name']}` | `{s['weights_sha256'][:12]}…` |" for s in record["sources"])
    return (f"# {kind}: the average of {len(folders)} models' weights\n\n"
            "Made by `ctxmodels average` from the models below: every floating-point weight is their element-wise "
            "mean (float32). The config and vocabulary are theirs (identical in each). How each was trained, on "
            "what data and under which licence is in its own card; this one adds no training.\n\n"
            "| model | weights sha256 |\n|---|---|\n"
            f"{rows}\n\n"
            f"Largest distance between two of them, relative to the first's norm: "
            f"{record['largest_relative_distance']:.3f}.\n\n"
            "Measure it before using it (`ctxmodels quality --model FOLDER`): an average is often better than each "
            "model when they continued one another, and worse when they were trained apart.\n\n"
            f"```json\n{json.dumps(record, indent=2)}\n```\n")
