"""One trainer for every model in the project (BERT, ELMo, static vectors): the training loop.

A model plugs in through a :class:`TrainTask` (:mod:`.task`). The trainer owns everything else: AdamW with no
weight decay on biases and norms, linear warm-up then linear decay, gradient clipping, optional bf16 autocast, a
NaN/inf guard, stops on Ctrl-C, a time limit or a step, and DistributedDataParallel when started by ``torchrun``
(:mod:`.distributed`). Checkpoints every N steps and exact ``--resume`` are :mod:`.checkpoints`; the progress
bar, ``metrics.jsonl`` and the model card are :mod:`.run_log`.

Layout of ``out/``::

    config.json, model.safetensors, ...   the latest model, loadable as it is (the checkpoint's model files)
    README.md                             model card
    run.json                              the run's settings (:mod:`.settings`), so --resume needs no options
    metrics.jsonl                         one JSON object a line: training logs and evaluations
    checkpoint/                           everything --resume needs, swapped in atomically as one directory
"""

from __future__ import annotations

import dataclasses
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
from torch import nn
from tqdm.auto import tqdm

from ..checkpoint import CheckpointError, DiskFullError, write_text_atomic
from .checkpoints import CHECKPOINT_ONLY, STATE_FILE, Checkpoints, clean_run_dir, publish_files
from .distributed import DistInfo, any_rank, gather_rng_states, hardware_description, setup_distributed
from .run_lock import hold_folder
from .run_log import METRICS_FILE, Progress, append_record, default_model_card, jsonable, truncate_metrics
from .task import Batch, TrainConfig, TrainTask, load_model_weights

# what the tasks and commands import from here (the trainer's public names, wherever they live)
__all__ = ["CHECKPOINT_ONLY", "STATE_FILE", "Batch", "DistInfo", "TrainConfig", "TrainTask", "Trainer",
           "TrainingDiverged", "TrainingInterrupted", "clean_run_dir", "default_model_card", "hardware_description",
           "load_model_weights", "lr_factor", "make_optimizer", "publish_files", "setup_distributed"]


class TrainingDiverged(RuntimeError):
    """The loss or the gradient became NaN/inf; the last good checkpoint is kept."""


class TrainingInterrupted(RuntimeError):
    """Ctrl-C (SIGINT/SIGTERM) stopped training after a checkpoint was written."""


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
        self.checkpoints = Checkpoints(self.out)

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
        return self.checkpoints.dir

    @property
    def saved_step(self) -> int | None:
        """Step of the last complete checkpoint, once known."""
        return self.checkpoints.saved_step

    def save_checkpoint(self, optimizer, scheduler) -> None:
        """A complete checkpoint of the run as it stands (:meth:`Checkpoints.save`), and the card."""
        rng = gather_rng_states(self.info)  # collective: every rank must call save_checkpoint
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
        self.checkpoints.save(self.task, state, jsonable(dataclasses.asdict(self.cfg)), self._write_card)

    def load_checkpoint(self, optimizer, scheduler) -> None:
        self.step, self.tokens_seen, self.train_seconds = self.checkpoints.restore(
            self.task, optimizer, scheduler, self.info)
        if self.info.is_main:
            truncate_metrics(self.out / METRICS_FILE, self.step)

    def _write_card(self) -> None:
        info = {
            "command": self.command,
            "steps": self.step,
            "max_steps": self.cfg.max_steps,
            "tokens_seen": self.tokens_seen,
            "wall_time_s": round(self.train_seconds, 1),
            "hardware": hardware_description(self.info),
            "metrics": self.last_eval,
            "train_config": jsonable(dataclasses.asdict(self.cfg)),
        }
        write_text_atomic(self.out / "README.md", self.task.model_card(info))

    # -- logging --------------------------------------------------------------------------------------------

    def log(self, record: dict[str, Any]) -> None:
        """Append ``record`` to metrics.jsonl; a line that a full disk cut short is taken back out."""
        if self.info.is_main:
            append_record(self.out / METRICS_FILE, record, note=self.checkpoints.kept_note())

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
            with hold_folder(self.out):
                return self._train(resume)
        except DiskFullError as e:
            if not e.note:
                e.note = self.checkpoints.kept_note()
            raise

    def _train(self, resume: bool) -> dict[str, float]:
        cfg, info, task = self.cfg, self.info, self.task
        model, optimizer, scheduler = self._start(resume)
        if cfg.stop_at == 0:
            return self._stop_at_start(model, optimizer, scheduler)
        autocast = torch.autocast(device_type=info.device.type, dtype=torch.bfloat16, enabled=cfg.bf16)
        progress = Progress(task.name, self.step, cfg.max_steps, cfg.log_every, cfg.progress and info.is_main,
                            self.log)
        session_start = time.perf_counter()
        seconds_before = self.train_seconds
        with self._signals():
            model.train()
            for step, batch in self._batches(self.step):
                with autocast:
                    loss, stats = task.loss(model, _to_device(batch, info.device))
                grad_norm = self._backward(step, loss, optimizer, progress)
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad(set_to_none=True)

                self.step = step + 1
                tokens = int(stats.get("tokens", 0)) * info.world_size
                self.tokens_seen += tokens
                self.train_seconds = seconds_before + time.perf_counter() - session_start
                progress.step_done(self.step, tokens, loss, scheduler.get_last_lr()[0], grad_norm, stats,
                                   self.tokens_seen, self.train_seconds)
                if cfg.eval_every and self.step % cfg.eval_every == 0 and self.step < cfg.max_steps:
                    self._evaluate(model)
                if self._pause_if_asked(time.perf_counter() - session_start, optimizer, scheduler, progress):
                    return self.last_eval
        progress.close()
        self._evaluate(model)
        if self.saved_step != self.step:
            self.save_checkpoint(optimizer, scheduler)
        else:
            self._write_card()
        if info.is_main:
            self.log({"event": "done", "step": self.step, "eval": self.last_eval})
        return self.last_eval

    def _stop_at_start(self, model: nn.Module, optimizer, scheduler) -> dict[str, float]:
        """``stop_at`` 0: the run's untrained start (its initial weights, a control to read a trained model beside)
        saved as a checkpoint that loads and resumes like any other, with its held-out evaluation."""
        self._evaluate(model)
        self.save_checkpoint(optimizer, scheduler)
        if self.info.is_main:
            self.log({"event": "stop_at", "step": self.step})
        return self.last_eval

    def _start(self, resume: bool) -> tuple[nn.Module, torch.optim.Optimizer, Any]:
        """Get the run's folder ready, build the optimizer and schedule, restore the checkpoint when resuming;
        the model to train (DDP-wrapped under ``torchrun``), the optimizer and the scheduler."""
        cfg, info, task = self.cfg, self.info, self.task
        if info.is_main:
            clean_run_dir(self.out)
        if resume and self._killed_before_first_checkpoint():
            resume = False
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
        return model, optimizer, scheduler

    def _killed_before_first_checkpoint(self) -> bool:
        """Whether the run in ``out`` started (its settings or log are there) but wrote no checkpoint: a kill before
        the first one. Then it starts again from step 0, its log emptied; a folder that holds no run is still
        refused by --resume."""
        started = (self.out / "run.json").is_file() or (self.out / METRICS_FILE).is_file()
        if (self.checkpoint_dir / STATE_FILE).exists() or not started:
            return False
        if self.info.is_main:
            (self.out / METRICS_FILE).unlink(missing_ok=True)
            tqdm.write(f"ctxmodels: {self.out} holds no checkpoint yet (the run stopped before its first): "
                       "starting it again from step 0", file=sys.stderr)
        return True

    def _backward(self, step: int, loss: torch.Tensor, optimizer, progress: Progress) -> torch.Tensor:
        """Backpropagate ``loss`` and clip the gradient; its norm. :class:`TrainingDiverged` (on every rank) when
        the loss or the gradient is NaN/inf on any."""
        gnorm = None
        bad = any_rank(not torch.isfinite(loss).item(), self.info)
        if not bad:
            loss.backward()
            gnorm = torch.nn.utils.clip_grad_norm_(self.task.model.parameters(), self.cfg.grad_clip)
            bad = any_rank(not torch.isfinite(gnorm).item(), self.info)
        if bad:
            optimizer.zero_grad(set_to_none=True)
            progress.close()
            msg = (
                f"training stopped at step {step}: the loss or gradient became NaN/inf. "
                f"The last good checkpoint (step {self.saved_step or 0}) is kept in {self.checkpoint_dir}. "
                "Try a lower --lr, a longer warm-up, or fp32 instead of --bf16."
            )
            self.log({"event": "diverged", "step": step})
            raise TrainingDiverged(msg)
        return gnorm

    def _pause_if_asked(self, session_s: float, optimizer, scheduler, progress: Progress) -> bool:
        """Write the checkpoint when one is due. On Ctrl-C, the time limit or ``stop_at`` (before the last step:
        on it the run ends as a finished run does) also stop: True for the time limit or ``stop_at``,
        :class:`TrainingInterrupted` for a signal."""
        cfg = self.cfg
        out_of_time = cfg.time_limit_s is not None and session_s >= cfg.time_limit_s
        at_stop_step = cfg.stop_at is not None and self.step >= cfg.stop_at
        stop = (any_rank(self._stop_signal is not None or out_of_time or at_stop_step, self.info)
                and self.step < cfg.max_steps)
        if stop or (cfg.save_every and self.step % cfg.save_every == 0):
            self.save_checkpoint(optimizer, scheduler)
        if not stop:
            return False
        progress.close()
        if self._stop_signal is not None:
            self.log({"event": "interrupted", "step": self.step})
            raise TrainingInterrupted(
                f"stopped at step {self.step}; checkpoint saved in {self.checkpoint_dir}. "
                "Continue with the same command plus --resume."
            )
        self.log({"event": "stop_at" if at_stop_step else "time_limit", "step": self.step})
        return True

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
