"""What a model gives the trainer (a :class:`TrainTask`: its batches, loss, evaluation and files) and what the
trainer is told (:class:`TrainConfig`). ``bert_task.py``, ``elmo_task.py``, ``static_task.py`` and
``finetune_task.py`` each implement :class:`TrainTask`.

Exact resume rests on one rule a task must keep: ``get_batch(epoch, index)`` is a pure function of the task's
seed, ``epoch`` and ``index``. The trainer maps a global step to (epoch, index) by arithmetic, so resuming
needs no data to be replayed, and under DDP rank r of W simply takes every W-th batch.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ..checkpoint import CheckpointError, load_tensors
from .run_log import default_model_card

Batch = dict[str, Any]


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


def load_model_weights(model: nn.Module, path: str | Path) -> None:
    """Load our own safetensors weights into ``model``, strictly, with a clear error on mismatch."""
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
