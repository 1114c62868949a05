"""Running as one of several processes started by ``torchrun``: which process this is, on which device, and the
few collective calls the trainer makes (one flag from every rank, every rank's random state)."""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.distributed as dist


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


def any_rank(flag: bool, info: DistInfo) -> bool:
    """True on every rank when ``flag`` is true on any (a collective call: every rank must make it)."""
    if info.world_size == 1:
        return flag
    t = torch.tensor([1.0 if flag else 0.0], device=info.device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return bool(t.item() > 0)


def rng_state(info: DistInfo) -> dict[str, torch.Tensor]:
    state = {"torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state(info.device)
    return state


def gather_rng_states(info: DistInfo) -> list[dict[str, torch.Tensor]]:
    """Every rank's random state, in rank order (a collective call: every rank must make it)."""
    mine = rng_state(info)
    if info.world_size == 1:
        return [mine]
    gathered: list[Any] = [None] * info.world_size
    dist.all_gather_object(gathered, {k: v.cpu() for k, v in mine.items()})
    return gathered


def hardware_description(info: DistInfo | None = None) -> str:
    if info is not None and info.device.type == "cuda":
        dev = torch.cuda.get_device_name(info.device)
    else:
        dev = f"CPU ({platform.processor() or platform.machine()}, {os.cpu_count()} cores)"
    world = info.world_size if info else 1
    return f"{world} x {dev}, torch {torch.__version__}"
