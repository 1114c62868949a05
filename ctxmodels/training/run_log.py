"""What a run tells: ``metrics.jsonl`` (one JSON object a line, safe against a full disk and cut back to the
checkpoint on ``--resume``), the progress bar with its periodic training record, and the model card."""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path
from typing import Any

import torch
from tqdm.auto import tqdm

from ..checkpoint import DiskFullError, is_disk_full, write_bytes_to, write_text_atomic

METRICS_FILE = "metrics.jsonl"


def append_record(path: Path, record: dict[str, Any], note: str = "") -> None:
    """Append ``record`` to the log at ``path``; a line that a full disk cut short is taken back out, and the
    :class:`DiskFullError` carries ``note`` (what was kept)."""
    line = (json.dumps(jsonable(record)) + "\n").encode("utf-8")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "ab", buffering=0) as f:  # unbuffered: what failed to be written can be taken back
            start = f.seek(0, os.SEEK_END)
            try:
                write_bytes_to(f, line)
            except OSError:
                f.truncate(start)
                raise
    except OSError as e:
        if is_disk_full(e):
            raise DiskFullError(len(line), path, note=note) from e
        raise


def truncate_metrics(path: Path, step: int) -> None:
    """Drop log lines written after the checkpoint we resume from, so the log has no duplicated steps."""
    if not path.exists():
        return
    kept = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut short by a crash
        if rec.get("step", 0) <= step:
            kept.append(line)
    write_text_atomic(path, "".join(k + "\n" for k in kept))


def jsonable(obj: Any) -> Any:
    """``obj`` as plain JSON values: paths and other objects as text, NaN/inf as "nan"/"inf", 1-element tensors
    as numbers."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, float) and not math.isfinite(obj):
        return str(obj)
    if isinstance(obj, (str, int, float, bool)) or obj is None:
        return obj
    if isinstance(obj, torch.Tensor) and obj.numel() == 1:
        return obj.item()
    return str(obj)


class Progress:
    """The progress bar, and every ``log_every`` steps (and at the last) a training record: loss, learning rate,
    gradient norm, the task's stats and the tokens per second since the previous record."""

    def __init__(self, name: str, step: int, max_steps: int, log_every: int, shown: bool, log):
        self.max_steps, self.log_every, self.log = max_steps, log_every, log
        self.bar = tqdm(total=max_steps, initial=step, disable=not shown, desc=f"train {name}", unit="step",
                        dynamic_ncols=True)
        self.window_tokens, self.window_start = 0, time.perf_counter()

    def step_done(self, step: int, tokens: int, loss: torch.Tensor, lr: float, grad_norm: torch.Tensor,
                  stats: dict[str, float], tokens_seen: int, elapsed_s: float) -> None:
        """Count step ``step`` (1-based) and its ``tokens``; log a record when one is due."""
        self.window_tokens += tokens
        if step % self.log_every == 0 or step == self.max_steps:
            now = time.perf_counter()
            tps = self.window_tokens / max(now - self.window_start, 1e-9)
            self.window_tokens, self.window_start = 0, now
            rec = {"step": step, "loss": loss.item(), "lr": lr, "grad_norm": grad_norm.item(), "tokens_per_s": tps,
                   "tokens_seen": tokens_seen, "elapsed_s": elapsed_s}
            rec.update({k: v for k, v in stats.items() if k != "tokens"})
            self.log(rec)
            self.bar.set_postfix(loss=f"{loss.item():.3f}", tok_s=f"{tps:,.0f}")
        self.bar.update(1)

    def close(self) -> None:
        self.bar.close()


def default_model_card(name: str, info: dict[str, Any]) -> str:
    metrics = info.get("metrics") or {}
    rows = "\n".join(f"| {k} | {v:.4g} |" if isinstance(v, float) else f"| {k} | {v} |"
                     for k, v in metrics.items())
    return f"""# {name} model trained with ctxmodels

| | |
|---|---|
| command | `{info.get('command', '')}` |
| steps | {info.get('steps')} of {info.get('max_steps')} |
| tokens seen | {info.get('tokens_seen', 0):,} |
| wall time | {info.get('wall_time_s', 0):.0f} s |
| hardware | {info.get('hardware', '')} |

## Held-out metrics

| metric | value |
|---|---|
{rows or '| (not evaluated yet) | |'}
"""
