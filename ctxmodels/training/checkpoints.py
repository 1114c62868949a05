"""A run's checkpoint: everything ``--resume`` needs, written whole and swapped in, and read back with checks.

A checkpoint is written whole into a hidden temporary folder, flushed to disk, and only then swapped in for the
previous one (:func:`ctxmodels.checkpoint.replace_dir_atomic`); the model files at the top of the run's folder
are then replaced one by one by links to (or copies of) the new checkpoint's. A kill, a crash or a full disk at
any point of a save leaves the last complete checkpoint loadable and resumable; a full disk stops training with
``disk full: N MB needed at PATH`` (:class:`ctxmodels.checkpoint.DiskFullError`). Temporaries that a killed run
left behind are removed when a run starts or resumes (:func:`clean_run_dir`).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from ..checkpoint import (
    CheckpointError,
    DiskFullError,
    atomic_file,
    is_disk_full,
    new_tmp_dir,
    recover_dir,
    remove_stale_temps,
    replace_dir_atomic,
    tree_bytes,
    write_failure,
    write_json,
)
from .distributed import DistInfo
from .task import TrainTask

STATE_FILE = "trainer_state.pt"
#: files of a checkpoint that are not part of the loadable model
CHECKPOINT_ONLY = frozenset({STATE_FILE, "train_config.json", "README.md"})
_STATE_KEYS = frozenset({"step", "tokens_seen", "train_seconds", "world_size", "optimizer", "scheduler", "rng"})


class Checkpoints:
    """The checkpoint folder of the run in ``out`` and the step of its last complete checkpoint."""

    def __init__(self, out: Path):
        self.out = out
        self.dir = out / "checkpoint"
        self.saved_step: int | None = None  # step of the last complete checkpoint, once known

    def kept_note(self) -> str:
        """What a run that stops now keeps, for the message."""
        if self.saved_step is None:
            return "no checkpoint was written yet; free some space and start again"
        return (f"the last good checkpoint (step {self.saved_step}) is kept in {self.dir}; free some "
                "space and continue with --resume")

    def save(self, task: TrainTask, state: dict[str, Any], train_config: dict[str, Any],
             after_swap: Callable[[], None]) -> None:
        """Write a complete checkpoint (the model files, the trainer ``state``, the schedule ``train_config``)
        beside the current one, swap it in, then point the top-level model files at it and call ``after_swap``
        (the card). A failure at any point (a full disk included) leaves the last complete checkpoint in place
        and no temporary behind; a full disk raises :class:`DiskFullError` with the space the checkpoint needs."""
        step = state["step"]
        # what the new checkpoint takes while the old one is still there: the model files and the trainer state
        needed = _nbytes(task.model.state_dict()) + _nbytes(state) + 64 * 1024
        tmp: Path | None = None
        try:
            tmp = new_tmp_dir(self.dir)
            task.save_model(tmp)
            with atomic_file(tmp / STATE_FILE) as path:
                _torch_save(state, path)
            # the schedule, and the step it had reached (read by RunSettings.resolve before a --resume starts)
            write_json(tmp / "train_config.json", {**train_config, "step": step})
            needed = max(needed, tree_bytes(tmp))
            replace_dir_atomic(tmp, self.dir)
            tmp = None
            self.saved_step = step
            # The top-level copy is what users load: the new checkpoint's model files, linked where possible.
            publish_files(self.dir, self.out, skip=CHECKPOINT_ONLY)
            after_swap()
        except OSError as e:
            if tmp is not None and not tmp.exists():  # the swap went through; what failed came after it
                tmp, self.saved_step = None, step
            if not is_disk_full(e):
                raise
            where = e.filename if isinstance(e, DiskFullError) and tmp is None else self.dir
            amount = e.needed if isinstance(e, DiskFullError) and tmp is None else needed
            raise DiskFullError(amount, where, note=self.kept_note(), code=e.errno) from e
        finally:
            if tmp is not None:
                shutil.rmtree(tmp, ignore_errors=True)

    def restore(self, task: TrainTask, optimizer: Any, scheduler: Any, info: DistInfo) -> tuple[int, int, float]:
        """Load the last checkpoint into ``task``'s model, the optimizer, the scheduler and this rank's random
        state; (step, tokens seen, training seconds) it had reached. :class:`CheckpointError` when it is missing,
        damaged or from a run with another number of processes."""
        recover_dir(self.dir)
        path = self.dir / STATE_FILE
        state = _read_state(path, info.world_size)
        task.load_weights(self.dir)
        _check_finite_state(task.model.state_dict(), state["optimizer"], self.dir)
        try:
            optimizer.load_state_dict(state["optimizer"])
            scheduler.load_state_dict(state["scheduler"])
            rng = state["rng"][info.rank]
            torch.set_rng_state(rng["torch"])
            if "cuda" in rng and torch.cuda.is_available():
                torch.cuda.set_rng_state(rng["cuda"], info.device)
            step, tokens, seconds = int(state["step"]), int(state["tokens_seen"]), float(state["train_seconds"])
        except (KeyError, IndexError, TypeError, ValueError, RuntimeError) as e:
            raise CheckpointError(f"{path}: the trainer state does not fit this run ({type(e).__name__}: "
                                  f"{_first_line(e)})") from e
        if step < 0:
            raise CheckpointError(f"{path}: damaged trainer state (step {step})")
        self.saved_step = step
        return step, tokens, seconds


def _read_state(path: Path, world_size: int) -> dict[str, Any]:
    """The trainer state saved at ``path``, with every key, from a run of ``world_size`` processes."""
    if not path.is_file():
        raise CheckpointError(f"{path}: no checkpoint to resume from (train without --resume first)")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # a damaged pickle fails in many ways; weights_only keeps it from running code
        raise CheckpointError(f"{path}: damaged or not a trainer state ({type(e).__name__}: "
                              f"{_first_line(e)}); resume from a copy of the run, or start a new one") from e
    missing = _STATE_KEYS - (set(state) if isinstance(state, dict) else set())
    if missing:
        raise CheckpointError(f"{path}: damaged trainer state (missing {', '.join(sorted(missing))})")
    if state["world_size"] != world_size:
        raise CheckpointError(
            f"{path}: saved with {state['world_size']} processes, resuming with {world_size}; "
            "exact resume needs the same number"
        )
    return state


def clean_run_dir(out: str | Path) -> None:
    """Finish a checkpoint swap a kill interrupted, and remove the temporaries killed writes left in a run's
    folder, its data caches (``data/``, ``data_cache/``) and the model folders published from the checkpoint's
    (ELECTRA's ``generator/``). A shared ELMo ``--data-cache`` elsewhere is left alone."""
    out = Path(out)
    recover_dir(out / "checkpoint")
    saved = (out / "checkpoint").iterdir() if (out / "checkpoint").is_dir() else ()
    published = [out / d.name for d in saved if d.is_dir()]
    for folder in (out, out / "data", out / "data_cache", *published):
        remove_stale_temps(folder)


def publish_files(source: Path, target: Path, skip: frozenset[str] = frozenset()) -> None:
    """Replace ``target``'s copies of the files in ``source`` (but ``skip``), one atomic rename each: hard links
    where the file system allows (no extra space: checkpoint files are never changed in place), else copies. A
    folder in ``source`` (a second model, as ELECTRA's generator) is published the same way into its namesake."""
    for f in sorted(source.iterdir()):
        if f.is_dir() and f.name not in skip:
            (target / f.name).mkdir(exist_ok=True)
            publish_files(f, target / f.name)
        if f.name in skip or not f.is_file():
            continue
        with atomic_file(target / f.name, size=f.stat().st_size) as tmp:
            tmp.unlink()
            try:
                os.link(f, tmp)
            except OSError as e:
                if is_disk_full(e):
                    raise
                shutil.copyfile(f, tmp)


def _check_finite_state(weights: dict[str, torch.Tensor], optimizer: Any, where: Path) -> None:
    """CheckpointError when a restored weight or optimizer moment holds NaN/inf (or a negative second moment): a
    damaged checkpoint, which would otherwise pass for a diverging run at the first step."""
    for name, t in weights.items():
        if t.is_floating_point() and not bool(torch.isfinite(t).all()):
            raise CheckpointError(f"{where}: the weight {name} holds NaN/inf; the checkpoint is damaged")
    states = optimizer.get("state", {}) if isinstance(optimizer, dict) else {}
    for index, moments in (states.items() if isinstance(states, dict) else []):
        for key, t in (moments.items() if isinstance(moments, dict) else []):
            if isinstance(t, torch.Tensor) and t.is_floating_point() and (
                    not bool(torch.isfinite(t).all()) or (key == "exp_avg_sq" and bool((t < 0).any()))):
                raise CheckpointError(f"{where / STATE_FILE}: the optimizer's {key} of parameter {index} is damaged "
                                      "(NaN, infinite or negative values)")


def _torch_save(state: dict[str, Any], path: Path) -> None:
    """``torch.save``, whose zip writer reports a full disk or the file-size limit as a RuntimeError: as the
    OSError it is."""
    try:
        torch.save(state, path)
    except RuntimeError as e:
        cause = write_failure(path, e, needed=_nbytes(state))
        if cause is None:
            raise
        raise cause from e


def _first_line(error: BaseException, limit: int = 200) -> str:
    """The first line of an exception's message (library errors can run to pages), at most ``limit`` characters."""
    text = str(error).strip()
    first = text.splitlines()[0] if text else type(error).__name__
    return first if len(first) <= limit else first[: limit - 3] + "..."


def _nbytes(obj: Any) -> int:
    """Bytes of the tensors in a (nested) state: a lower bound of its size on disk."""
    if isinstance(obj, torch.Tensor):
        return obj.numel() * obj.element_size()
    if isinstance(obj, dict):
        return sum(_nbytes(v) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return sum(_nbytes(v) for v in obj)
    return 0
