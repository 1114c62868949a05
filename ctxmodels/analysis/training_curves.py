"""A run's training curves, per part of its loss, from the ``metrics.jsonl`` the trainer writes beside the model:
BERT's masked LM and next-sentence prediction apart, ELECTRA's generator and discriminator apart, whatever parts a
run logs (every number named ``*_loss``), and the held-out evaluations.

A resumed run logs some steps twice (from its last checkpoint on); the later record of a step wins.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from ..model_files import is_dir

METRICS = "metrics.jsonl"
MAX_POINTS = 500  # per curve: the smoothed curve is thinned to this many points
MAX_BYTES = 64 * 2**20

# The parts' names in a student's words (a part not listed is shown by its own name, "_loss" taken off).
PARTS = {"loss": "total", "mlm_loss": "masked LM", "nsp_loss": "next sentence (NSP)",
         "sop_loss": "sentence order (SOP)", "lm_loss": "next word", "generator_loss": "generator (masked LM)",
         "gen_loss": "generator (masked LM)", "discriminator_loss": "discriminator (replaced or not)",
         "disc_loss": "discriminator (replaced or not)"}


def part_label(key: str) -> str:
    return PARTS.get(key, key.removesuffix("_loss").replace("_", " "))


def metrics_file(model: Any) -> Path | None:
    """The ``metrics.jsonl`` of a loaded model's folder (or of a folder), None when it has none."""
    path = getattr(model, "path", model)
    if path is None:
        return None
    folder = Path(path)
    if not is_dir(folder):
        folder = folder.parent
    found = folder / METRICS
    return found if found.is_file() else None


def read_records(path: str | Path) -> list[dict]:
    """The JSON records of a metrics file (a line that is not a JSON object is skipped: a run cut mid-line)."""
    path = Path(path)
    if path.stat().st_size > MAX_BYTES:
        raise ValueError(f"{path.name} is larger than {MAX_BYTES // 2**20} MB; this view reads smaller runs")
    out = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict):
            out.append(record)
    return out


def _smooth(steps: list[int], values: list[float]) -> tuple[list[int], list[float]]:
    """A running mean over about 1% of the points, thinned to :data:`MAX_POINTS`."""
    v = np.asarray(values, dtype=float)
    window = max(1, len(v) // 100)
    if window > 1:
        kernel = np.ones(window) / window
        v = np.convolve(v, kernel, mode="valid")
        steps = steps[window - 1:]
    keep = np.unique(np.linspace(0, len(v) - 1, min(len(v), MAX_POINTS)).round().astype(int)) if len(v) else []
    return [int(steps[i]) for i in keep], [float(v[i]) for i in keep]


def _numbers(record: dict) -> dict[str, float]:
    return {k: float(v) for k, v in record.items()
            if (k == "loss" or k.endswith("_loss")) and isinstance(v, (int, float)) and np.isfinite(v)}


def loss_curves(records: list[dict]) -> dict:
    """{"train": {part: {"label", "steps", "values"}}, "eval": {part: ...}, "steps": the last step}: each logged
    loss part on the training batches (smoothed), and each held-out one, by step."""
    train: dict[int, dict[str, float]] = {}
    held: dict[int, dict[str, float]] = {}
    for r in records:
        step = r.get("step")
        if not isinstance(step, int):
            continue
        if isinstance(r.get("eval"), dict):
            held[step] = _numbers(r["eval"])
        elif "event" not in r:
            train[step] = _numbers(r)
    out: dict[str, Any] = {"train": {}, "eval": {}, "steps": max(list(train) + list(held), default=0)}
    for name, source, smooth in (("train", train, True), ("eval", held, False)):
        parts = sorted({k for v in source.values() for k in v}, key=lambda k: (k != "loss", k))
        for part in parts:
            steps = sorted(s for s, v in source.items() if part in v)
            values = [source[s][part] for s in steps]
            if smooth:
                steps, values = _smooth(steps, values)
            label = part_label(part) + ("" if name == "train" else " (held out)")
            out[name][part] = {"label": label, "steps": steps, "values": values}
    return out
