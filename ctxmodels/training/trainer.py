"""One trainer for every model in the project (BERT, ELMo, static vectors).

A model plugs in through a :class:`TrainTask`. The trainer owns everything else: AdamW with no weight decay
on biases and norms, linear warm-up then linear decay, gradient clipping, optional bf16 autocast, a progress
bar, metrics appended to ``metrics.jsonl``, atomic checkpoints every N steps and on Ctrl-C, exact ``--resume``,
a NaN/inf guard, and DistributedDataParallel when started by ``torchrun``.

Exact resume rests on one rule a task must keep: ``get_batch(epoch, index)`` is a pure function of the task's
seed, ``epoch`` and ``index``. The trainer maps a global step to (epoch, index) by arithmetic, so resuming
needs no data to be replayed, and under DDP rank r of W simply takes every W-th batch.

Layout of ``out/``::

    config.json, model.safetensors, ...   the latest model, loadable as it is (the checkpoint's model files)
    README.md                             model card
    run.json                              the run's settings (:mod:`.settings`), so --resume needs no options
    metrics.jsonl                         one JSON object a line: training logs and evaluations
    checkpoint/                           everything --resume needs, swapped in atomically as one directory

A checkpoint is written whole into a hidden temporary folder, flushed to disk, and only then swapped in for the
previous one (:func:`ctxmodels.checkpoint.replace_dir_atomic`); the model files at the top are then replaced one
by one by links to (or copies of) the new checkpoint's. A kill, a crash or a full disk at any point of a save
leaves the last complete checkpoint loadable and resumable; a full disk stops training with
``disk full: N MB needed at PATH`` (:class:`ctxmodels.checkpoint.DiskFullError`). Temporaries that a killed run
left behind are removed when a run starts or resumes (:func:`clean_run_dir`).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import platform
import shutil
import signal
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from tqdm.auto import tqdm

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
    write_bytes_to,
    write_json,
    write_text_atomic,
)

Batch = dict[str, Any]


class TrainingDiverged(RuntimeError):
    """The loss or the gradient became NaN/inf; the last good checkpoint is kept."""


class TrainingInterrupted(RuntimeError):
    """Ctrl-C (SIGINT/SIGTERM) stopped training after a checkpoint was written."""


@dataclass
class TrainConfig:
    max_steps: int = 1000
    lr: float = 5e-4
    warmup_steps: int = 100
    weight_decay: float = 0.01
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-6
    grad_clip: float = 1.0
    bf16: bool = False
    save_every: int = 500
    eval_every: int = 500
    log_every: int = 10
    seed: int = 0
    # Stop cleanly (with a checkpoint) after this many seconds; continue later with resume.
    time_limit_s: float | None = None
    # Stop cleanly (with a checkpoint) on reaching this step, the schedule still running to max_steps: with a
    # resume that moves the end, it replays a run that was stopped there by hand and given a new end.
    stop_at: int | None = None
    progress: bool = True
    # Processes that build batches ahead of the training step (0 = built in the training process). Batches are
    # pure functions of their position, so the run is the same either way; on a GPU the step is faster than
    # building its batch in Python, and workers keep it fed.
    data_workers: int = 0


class TrainTask(ABC):
    """What a model must provide to be trained. See the module docstring for the determinism rule."""

    #: short name used in logs and cards ("bert", "elmo", "static")
    name: str = "model"
    model: nn.Module

    @abstractmethod
    def num_batches(self, epoch: int) -> int:
        """Number of batches in an epoch (may differ between epochs)."""

    @abstractmethod
    def get_batch(self, epoch: int, index: int) -> Batch:
        """The index-th batch of an epoch: a pure function of (seed, epoch, index); tensors on the CPU."""

    @abstractmethod
    def loss(self, model: nn.Module, batch: Batch) -> tuple[torch.Tensor, dict[str, float]]:
        """Forward ``model`` (possibly DDP-wrapped: call it, do not reach into it) and return the loss and
        scalar stats. The stats must include ``tokens``: the number of input tokens in the batch."""

    @abstractmethod
    def evaluate(self, model: nn.Module) -> dict[str, float]:
        """Held-out metrics of the bare (unwrapped) model."""

    @abstractmethod
    def save_model(self, directory: Path) -> None:
        """Write the loadable model files (config.json, model.safetensors, tokenizer/vocabulary)."""

    def load_weights(self, directory: Path) -> None:
        """Restore the model from what ``save_model`` wrote (for --resume); override if that format is not the
        plain ``state_dict`` (e.g. tied weights written once)."""
        load_model_weights(self.model, Path(directory) / "model.safetensors")

    def model_card(self, info: dict[str, Any]) -> str:
        """Markdown model card; ``info`` holds the command, wall time, tokens seen, hardware and metrics."""
        return default_model_card(self.name, info)

    def no_decay(self, name: str, param: nn.Parameter) -> bool:
        """Parameters excluded from weight decay: biases, norms and other 1-D tensors."""
        return param.ndim < 2 or "LayerNorm" in name or "layer_norm" in name or name.endswith(".bias")


# ----------------------------------------------------------------------------------------------------------
# distributed helpers


@dataclass
class DistInfo:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def setup_distributed(device: str | None = None) -> DistInfo:
    """Read torchrun's environment; start a process group when there is more than one process."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    use_cuda = torch.cuda.is_available() if device is None else device.startswith("cuda")
    dev = torch.device(f"cuda:{local}" if use_cuda else "cpu")
    if use_cuda:
        torch.cuda.set_device(dev)
    if world > 1 and not dist.is_initialized():
        dist.init_process_group(backend="nccl" if use_cuda else "gloo")
    return DistInfo(rank, world, local, dev)


def _any_rank(flag: bool, info: DistInfo) -> bool:
    if info.world_size == 1:
        return flag
    t = torch.tensor([1.0 if flag else 0.0], device=info.device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return bool(t.item() > 0)


# ----------------------------------------------------------------------------------------------------------
# optimisation


def make_optimizer(task: TrainTask, cfg: TrainConfig) -> torch.optim.AdamW:
    decay, no_decay = [], []
    for name, p in task.model.named_parameters():
        if p.requires_grad:
            (no_decay if task.no_decay(name, p) else decay).append(p)
    groups = [
        {"params": decay, "weight_decay": cfg.weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]
    # The fused kernel updates all parameters in one pass: about 2x faster steps for the big embedding tables
    # of the static model on CPU, and never slower for BERT/ELMo.
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=cfg.betas, eps=cfg.eps, fused=True)


def lr_factor(step: int, warmup: int, total: int) -> float:
    """Linear warm-up to 1 over ``warmup`` steps, then linear decay to 0 at ``total``."""
    if warmup > 0 and step < warmup:
        return (step + 1) / warmup
    return max(0.0, (total - step) / max(1, total - warmup))


# ----------------------------------------------------------------------------------------------------------
# the trainer


class Trainer:
    def __init__(self, task: TrainTask, cfg: TrainConfig, out: str | Path, command: str | None = None):
        self.task, self.cfg, self.out = task, cfg, Path(out)
        self.command = command or "(not recorded: the trainer was called from Python)"
        self.info = setup_distributed()
        self.step = 0
        self.tokens_seen = 0
        self.train_seconds = 0.0
        self.last_eval: dict[str, float] = {}
        self._stop_signal: int | None = None
        self.saved_step: int | None = None  # step of the last complete checkpoint, once known

    # -- data position ------------------------------------------------------------------------------------

    def _position(self, global_batch: int) -> tuple[int, int]:
        """Map a global batch number to (epoch, index) across epochs of possibly different lengths."""
        epoch = 0
        while True:
            n = self.task.num_batches(epoch)
            if n <= 0:
                raise ValueError("the training data yields no batches: the corpus is too small")
            if global_batch < n:
                return epoch, global_batch
            global_batch -= n
            epoch += 1

    def _positions(self, start_step: int) -> Iterator[tuple[int, int, int]]:
        """(step, epoch, index) of this rank's batches from ``start_step`` on."""
        # Walk positions incrementally instead of recomputing from zero every step.
        W, r = self.info.world_size, self.info.rank
        epoch, index = self._position(start_step * W + r)
        n = self.task.num_batches(epoch)
        for step in range(start_step, self.cfg.max_steps):
            yield step, epoch, index
            index += W
            while index >= n:
                index -= n
                epoch += 1
                n = self.task.num_batches(epoch)

    def _batches(self, start_step: int) -> Iterator[tuple[int, Batch]]:
        if self.cfg.data_workers <= 0:
            for step, epoch, index in self._positions(start_step):
                yield step, self.task.get_batch(epoch, index)
            return
        loader = torch.utils.data.DataLoader(
            _AheadBatches(self, start_step), batch_size=None, num_workers=self.cfg.data_workers,
            prefetch_factor=4, pin_memory=self.info.device.type == "cuda",
        )
        yield from loader

    # -- checkpoints ----------------------------------------------------------------------------------------

    @property
    def checkpoint_dir(self) -> Path:
        return self.out / "checkpoint"

    def _rng_state(self) -> dict[str, torch.Tensor]:
        state = {"torch": torch.get_rng_state()}
        if torch.cuda.is_available():
            state["cuda"] = torch.cuda.get_rng_state(self.info.device)
        return state

    def _gather_rng(self) -> list[dict[str, torch.Tensor]]:
        mine = self._rng_state()
        if self.info.world_size == 1:
            return [mine]
        gathered: list[Any] = [None] * self.info.world_size
        dist.all_gather_object(gathered, {k: v.cpu() for k, v in mine.items()})
        return gathered

    def save_checkpoint(self, optimizer, scheduler) -> None:
        """Write a complete checkpoint beside the current one, swap it in, then point the top-level model files
        at it. A failure at any point (a full disk included) leaves the last complete checkpoint in place and no
        temporary behind; a full disk raises :class:`DiskFullError` with the space the checkpoint needs."""
        rng = self._gather_rng()  # collective: every rank must call save_checkpoint
        if not self.info.is_main:
            return
        state = {
            "step": self.step,
            "tokens_seen": self.tokens_seen,
            "train_seconds": self.train_seconds,
            "world_size": self.info.world_size,
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
            "rng": rng,
        }
        # what the new checkpoint takes while the old one is still there: the model files and the trainer state
        needed = _nbytes(self.task.model.state_dict()) + _nbytes(state) + 64 * 1024
        tmp: Path | None = None
        try:
            tmp = new_tmp_dir(self.checkpoint_dir)
            self.task.save_model(tmp)
            with atomic_file(tmp / STATE_FILE) as path:
                torch.save(state, path)
            # the schedule, and the step it had reached (read by RunSettings.resolve before a --resume starts)
            write_json(tmp / "train_config.json", {**_jsonable(dataclasses.asdict(self.cfg)), "step": self.step})
            needed = max(needed, tree_bytes(tmp))
            replace_dir_atomic(tmp, self.checkpoint_dir)
            tmp = None
            self.saved_step = self.step
            # The top-level copy is what users load: the new checkpoint's model files, linked where possible.
            publish_files(self.checkpoint_dir, self.out, skip=CHECKPOINT_ONLY)
            self._write_card()
        except OSError as e:
            if tmp is not None and not tmp.exists():  # the swap went through; what failed came after it
                tmp, self.saved_step = None, self.step
            if not is_disk_full(e):
                raise
            where = e.filename if isinstance(e, DiskFullError) and tmp is None else self.checkpoint_dir
            amount = e.needed if isinstance(e, DiskFullError) and tmp is None else needed
            raise DiskFullError(amount, where, note=self._kept_note()) from e
        finally:
            if tmp is not None:
                shutil.rmtree(tmp, ignore_errors=True)

    def _kept_note(self) -> str:
        if self.saved_step is None:
            return "no checkpoint was written yet; free some space and start again"
        return (f"the last good checkpoint (step {self.saved_step}) is kept in {self.checkpoint_dir}; free some "
                "space and continue with --resume")

    def load_checkpoint(self, optimizer, scheduler) -> None:
        recover_dir(self.checkpoint_dir)
        path = self.checkpoint_dir / STATE_FILE
        if not path.is_file():
            raise CheckpointError(f"{path}: no checkpoint to resume from (train without --resume first)")
        try:
            state = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as e:  # a damaged pickle fails in many ways; weights_only keeps it from running code
            raise CheckpointError(f"{path}: damaged or not a trainer state ({type(e).__name__}: "
                                  f"{_first_line(e)}); resume from a copy of the run, or start a new one") from e
        missing = {"step", "tokens_seen", "train_seconds", "world_size", "optimizer", "scheduler", "rng"}
        missing -= set(state) if isinstance(state, dict) else set()
        if missing:
            raise CheckpointError(f"{path}: damaged trainer state (missing {', '.join(sorted(missing))})")
        if state["world_size"] != self.info.world_size:
            raise CheckpointError(
                f"{path}: saved with {state['world_size']} processes, resuming with {self.info.world_size}; "
                "exact resume needs the same number"
            )
        self.task.load_weights(self.checkpoint_dir)
        _check_finite_state(self.task.model.state_dict(), state["optimizer"], self.checkpoint_dir)
        try:
            optimizer.load_state_dict(state["optimizer"])
            scheduler.load_state_dict(state["scheduler"])
            rng = state["rng"][self.info.rank]
            torch.set_rng_state(rng["torch"])
            if "cuda" in rng and torch.cuda.is_available():
                torch.cuda.set_rng_state(rng["cuda"], self.info.device)
            step, tokens, seconds = int(state["step"]), int(state["tokens_seen"]), float(state["train_seconds"])
        except (KeyError, IndexError, TypeError, ValueError, RuntimeError) as e:
            raise CheckpointError(f"{path}: the trainer state does not fit this run ({type(e).__name__}: "
                                  f"{_first_line(e)})") from e
        if step < 0:
            raise CheckpointError(f"{path}: damaged trainer state (step {step})")
        self.step, self.tokens_seen, self.train_seconds = step, tokens, seconds
        self.saved_step = step
        if self.info.is_main:
            _truncate_metrics(self.out / "metrics.jsonl", self.step)

    def _write_card(self) -> None:
        info = {
            "command": self.command,
            "steps": self.step,
            "max_steps": self.cfg.max_steps,
            "tokens_seen": self.tokens_seen,
            "wall_time_s": round(self.train_seconds, 1),
            "hardware": hardware_description(self.info),
            "metrics": self.last_eval,
            "train_config": _jsonable(dataclasses.asdict(self.cfg)),
        }
        write_text_atomic(self.out / "README.md", self.task.model_card(info))

    # -- logging --------------------------------------------------------------------------------------------

    def log(self, record: dict[str, Any]) -> None:
        """Append ``record`` to metrics.jsonl; a line that a full disk cut short is taken back out."""
        if not self.info.is_main:
            return
        path = self.out / "metrics.jsonl"
        line = (json.dumps(_jsonable(record)) + "\n").encode("utf-8")
        try:
            self.out.mkdir(parents=True, exist_ok=True)
            with open(path, "ab", buffering=0) as f:  # unbuffered: what failed to be written can be taken back
                start = f.seek(0, os.SEEK_END)
                try:
                    write_bytes_to(f, line)
                except OSError:
                    f.truncate(start)
                    raise
        except OSError as e:
            if is_disk_full(e):
                raise DiskFullError(len(line), path, note=self._kept_note()) from e
            raise

    @contextmanager
    def _signals(self):
        def handler(signum, frame):
            self._stop_signal = signum

        old = {}
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                old[sig] = signal.signal(sig, handler)
            except ValueError:  # not the main thread (e.g. inside a web app): no handler, no harm
                pass
        try:
            yield
        finally:
            for sig, h in old.items():
                signal.signal(sig, h)

    # -- main loop ------------------------------------------------------------------------------------------

    def train(self, resume: bool = False) -> dict[str, float]:
        """Train to ``cfg.max_steps`` (from the checkpoint in ``out`` when resuming); the held-out metrics."""
        try:
            return self._train(resume)
        except DiskFullError as e:
            if not e.note:
                e.note = self._kept_note()
            raise

    def _train(self, resume: bool) -> dict[str, float]:
        cfg, info, task = self.cfg, self.info, self.task
        if info.is_main:
            clean_run_dir(self.out)
        if not resume and (self.checkpoint_dir / STATE_FILE).exists():
            raise CheckpointError(
                f"{self.out} already holds a training run; pass --resume to continue it or choose another --out"
            )
        torch.manual_seed(cfg.seed + info.rank)
        task.model.to(info.device)
        optimizer = make_optimizer(task, cfg)
        scheduler = torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda s: lr_factor(s, cfg.warmup_steps, cfg.max_steps)
        )
        if resume:
            self.load_checkpoint(optimizer, scheduler)
            if self.step >= cfg.max_steps:
                raise ValueError(
                    f"{self.out}: the run already took its {self.step} steps (--steps {cfg.max_steps}); to train "
                    f"longer, resume with --steps above {self.step}"
                )
            if cfg.stop_at is not None and self.step >= cfg.stop_at:
                raise ValueError(f"{self.out}: the run is already at step {self.step}; give --stop-at above it")
        model: nn.Module = task.model
        if info.world_size > 1:
            model = nn.parallel.DistributedDataParallel(
                task.model, device_ids=[info.device.index] if info.device.type == "cuda" else None
            )
        if info.is_main:
            self.out.mkdir(parents=True, exist_ok=True)
            if not resume:
                self.log({"event": "start", "command": self.command, "config": dataclasses.asdict(cfg)})

        autocast = torch.autocast(device_type=info.device.type, dtype=torch.bfloat16, enabled=cfg.bf16)
        bar = tqdm(
            total=cfg.max_steps, initial=self.step, disable=not (cfg.progress and info.is_main),
            desc=f"train {task.name}", unit="step", dynamic_ncols=True,
        )
        window_tokens, window_start = 0, time.perf_counter()
        session_start = time.perf_counter()
        seconds_before = self.train_seconds
        with self._signals():
            model.train()
            for step, batch in self._batches(self.step):
                batch = _to_device(batch, info.device)
                with autocast:
                    loss, stats = task.loss(model, batch)
                bad = _any_rank(not torch.isfinite(loss).item(), info)
                if not bad:
                    loss.backward()
                    gnorm = torch.nn.utils.clip_grad_norm_(task.model.parameters(), cfg.grad_clip)
                    bad = _any_rank(not torch.isfinite(gnorm).item(), info)
                if bad:
                    optimizer.zero_grad(set_to_none=True)
                    bar.close()
                    msg = (
                        f"training stopped at step {step}: the loss or gradient became NaN/inf. "
                        f"The last good checkpoint (step {self.saved_step or 0}) is kept in {self.checkpoint_dir}. "
                        "Try a lower --lr, a longer warm-up, or fp32 instead of --bf16."
                    )
                    self.log({"event": "diverged", "step": step})
                    raise TrainingDiverged(msg)
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad(set_to_none=True)

                self.step = step + 1
                tokens = int(stats.get("tokens", 0)) * info.world_size
                self.tokens_seen += tokens
                window_tokens += tokens
                self.train_seconds = seconds_before + time.perf_counter() - session_start
                if self.step % cfg.log_every == 0 or self.step == cfg.max_steps:
                    now = time.perf_counter()
                    tps = window_tokens / max(now - window_start, 1e-9)
                    window_tokens, window_start = 0, now
                    rec = {"step": self.step, "loss": loss.item(), "lr": scheduler.get_last_lr()[0],
                           "grad_norm": gnorm.item(), "tokens_per_s": tps, "tokens_seen": self.tokens_seen,
                           "elapsed_s": self.train_seconds}
                    rec.update({k: v for k, v in stats.items() if k != "tokens"})
                    self.log(rec)
                    bar.set_postfix(loss=f"{loss.item():.3f}", tok_s=f"{tps:,.0f}")
                bar.update(1)

                if cfg.eval_every and self.step % cfg.eval_every == 0 and self.step < cfg.max_steps:
                    self._evaluate(model)
                out_of_time = (cfg.time_limit_s is not None
                               and time.perf_counter() - session_start >= cfg.time_limit_s)
                at_stop_step = cfg.stop_at is not None and self.step >= cfg.stop_at
                # on the last step the run ends as a finished run does: final evaluation, card, "done"
                stop = (_any_rank(self._stop_signal is not None or out_of_time or at_stop_step, info)
                        and self.step < cfg.max_steps)
                if stop or (cfg.save_every and self.step % cfg.save_every == 0):
                    self.save_checkpoint(optimizer, scheduler)
                if stop:
                    bar.close()
                    if self._stop_signal is not None:
                        self.log({"event": "interrupted", "step": self.step})
                        raise TrainingInterrupted(
                            f"stopped at step {self.step}; checkpoint saved in {self.checkpoint_dir}. "
                            "Continue with the same command plus --resume."
                        )
                    self.log({"event": "stop_at" if at_stop_step else "time_limit", "step": self.step})
                    return self.last_eval
        bar.close()
        self._evaluate(model)
        if self.saved_step != self.step:
            self.save_checkpoint(optimizer, scheduler)
        else:
            self._write_card()
        if info.is_main:
            self.log({"event": "done", "step": self.step, "eval": self.last_eval})
        return self.last_eval

    def _evaluate(self, model: nn.Module) -> None:
        if self.info.is_main:
            self.task.model.eval()
            with torch.no_grad():
                self.last_eval = self.task.evaluate(self.task.model)
            self.task.model.train()
            self.log({"step": self.step, "eval": self.last_eval})
            shown = ", ".join(f"{k}={v:.4g}" for k, v in self.last_eval.items())
            tqdm.write(f"[step {self.step}] eval: {shown}")
        model.train()


# ----------------------------------------------------------------------------------------------------------
# small helpers

STATE_FILE = "trainer_state.pt"
#: files of a checkpoint that are not part of the loadable model
CHECKPOINT_ONLY = frozenset({STATE_FILE, "train_config.json", "README.md"})


def clean_run_dir(out: str | Path) -> None:
    """Finish a checkpoint swap a kill interrupted, and remove the temporaries killed writes left in a run's
    folder and its data caches (``data/``, ``data_cache/``). A shared ELMo ``--data-cache`` elsewhere is left
    alone."""
    out = Path(out)
    recover_dir(out / "checkpoint")
    for folder in (out, out / "data", out / "data_cache"):
        remove_stale_temps(folder)


def publish_files(source: Path, target: Path, skip: frozenset[str] = frozenset()) -> None:
    """Replace ``target``'s copies of the files in ``source`` (but ``skip``), one atomic rename each: hard links
    where the file system allows (no extra space: checkpoint files are never changed in place), else copies."""
    for f in sorted(source.iterdir()):
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


def load_model_weights(model: nn.Module, path: str | Path) -> None:
    """Load our own safetensors weights into ``model``, strictly, with a clear error on mismatch."""
    from ..checkpoint import load_tensors

    state = load_tensors(path)
    own = model.state_dict()
    missing = [k for k in own if k not in state]
    unexpected = [k for k in state if k not in own]
    wrong = [f"{k}: file {tuple(state[k].shape)} vs model {tuple(own[k].shape)}"
             for k in own if k in state and state[k].shape != own[k].shape]
    if missing or unexpected or wrong:
        parts = []
        if missing:
            parts.append(f"missing keys {missing[:5]}")
        if unexpected:
            parts.append(f"unexpected keys {unexpected[:5]}")
        if wrong:
            parts.append(f"shape mismatches {wrong[:5]}")
        raise CheckpointError(f"{path}: does not fit this model: " + "; ".join(parts))
    model.load_state_dict({k: v.to(own[k].dtype) for k, v in state.items()})


class _AheadBatches(torch.utils.data.IterableDataset):
    """The trainer's batches built in DataLoader workers: worker k builds steps k, k + K, ... and the loader
    hands them back in turn, so the order is the single-process order."""

    def __init__(self, trainer: Trainer, start_step: int):
        self.trainer, self.start_step = trainer, start_step

    def __iter__(self) -> Iterator[tuple[int, Batch]]:
        worker = torch.utils.data.get_worker_info()
        k, K = (worker.id, worker.num_workers) if worker is not None else (0, 1)
        for i, (step, epoch, index) in enumerate(self.trainer._positions(self.start_step)):
            if i % K == k:
                yield step, self.trainer.task.get_batch(epoch, index)


def _to_device(batch: Batch, device: torch.device) -> Batch:
    if device.type == "cpu":
        return batch
    return {k: v.to(device, non_blocking=True) if isinstance(v, torch.Tensor) else v for k, v in batch.items()}


def _truncate_metrics(path: Path, step: int) -> None:
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


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, float) and not math.isfinite(obj):
        return str(obj)
    if isinstance(obj, (str, int, float, bool)) or obj is None:
        return obj
    if isinstance(obj, torch.Tensor) and obj.numel() == 1:
        return obj.item()
    return str(obj)


def hardware_description(info: DistInfo | None = None) -> str:
    if info is not None and info.device.type == "cuda":
        dev = torch.cuda.get_device_name(info.device)
    else:
        dev = f"CPU ({platform.processor() or platform.machine()}, {os.cpu_count()} cores)"
    world = info.world_size if info else 1
    return f"{world} x {dev}, torch {torch.__version__}"


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

