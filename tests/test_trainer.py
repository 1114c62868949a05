"""The shared trainer on a toy task: learning, exact resume, the NaN guard, time limits, refusing to overwrite."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from torch import nn

from ctxmodels.checkpoint import CheckpointError, save_tensors
from ctxmodels.training.trainer import TrainConfig, Trainer, TrainingDiverged, TrainTask, lr_factor


class ToyTask(TrainTask):
    """Regress y = x·w* with dropout, so exact resume also depends on the restored RNG state."""

    name = "toy"

    def __init__(self, seed: int = 0, poison_step: int | None = None):
        self.seed = seed
        self.model = nn.Sequential(nn.Linear(8, 16), nn.Dropout(0.1), nn.Linear(16, 1))
        g = torch.Generator().manual_seed(123)
        self.w = torch.randn(8, 1, generator=g)
        self.poison_step = poison_step
        self.calls = 0

    def num_batches(self, epoch: int) -> int:
        return 7

    def get_batch(self, epoch: int, index: int):
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + epoch * 1009 + index)
        x = torch.randn(16, 8, generator=g)
        return {"x": x, "y": x @ self.w}

    def loss(self, model, batch):
        self.calls += 1
        out = model(batch["x"])
        loss = ((out - batch["y"]) ** 2).mean()
        if self.poison_step is not None and self.calls > self.poison_step:
            loss = loss * float("nan")
        return loss, {"tokens": batch["x"].shape[0]}

    def evaluate(self, model):
        batch = self.get_batch(10_000, 0)
        return {"mse": ((model(batch["x"]) - batch["y"]) ** 2).mean().item()}

    def save_model(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        save_tensors(directory / "model.safetensors", self.model.state_dict())
        (directory / "config.json").write_text("{}")


def _losses(out: Path) -> dict[int, float]:
    recs = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    return {r["step"]: r["loss"] for r in recs if "loss" in r}


def _cfg(**kw) -> TrainConfig:
    base = dict(max_steps=30, lr=1e-2, warmup_steps=3, save_every=10, eval_every=0, log_every=1, progress=False)
    base.update(kw)
    return TrainConfig(**base)


def test_learns_and_writes_loadable_model(tmp_path):
    torch.manual_seed(0)
    task = ToyTask()
    before = task.evaluate(task.model)["mse"]
    after = Trainer(task, _cfg(max_steps=60), tmp_path, command="toy").train()["mse"]
    assert after < 0.5 * before
    assert (tmp_path / "model.safetensors").is_file()
    assert (tmp_path / "checkpoint" / "trainer_state.pt").is_file()
    assert "toy" in (tmp_path / "README.md").read_text()


def test_resume_gives_identical_losses(tmp_path):
    torch.manual_seed(0)
    Trainer(ToyTask(), _cfg(), tmp_path / "full").train()
    full = _losses(tmp_path / "full")

    torch.manual_seed(0)
    Trainer(ToyTask(), _cfg(max_steps=30, time_limit_s=0.0), tmp_path / "part").train()  # stops after step 1
    assert max(_losses(tmp_path / "part")) == 1
    # a second partial session, then resume to the end
    Trainer(ToyTask(), _cfg(), tmp_path / "part").train(resume=True)
    resumed = _losses(tmp_path / "part")
    assert sorted(resumed) == sorted(full)
    for step in full:
        assert resumed[step] == pytest.approx(full[step], abs=1e-6), step


def test_nan_guard_keeps_last_good_checkpoint(tmp_path):
    task = ToyTask(poison_step=15)
    with pytest.raises(TrainingDiverged, match="last good checkpoint \\(step 10\\)"):
        Trainer(task, _cfg(), tmp_path).train()
    state = torch.load(tmp_path / "checkpoint" / "trainer_state.pt", weights_only=True)
    assert state["step"] == 10


def test_refuses_to_overwrite_a_run_without_resume(tmp_path):
    Trainer(ToyTask(), _cfg(max_steps=10), tmp_path).train()
    with pytest.raises(CheckpointError, match="--resume"):
        Trainer(ToyTask(), _cfg(max_steps=10), tmp_path).train()


def test_resume_without_checkpoint_is_a_clear_error(tmp_path):
    with pytest.raises(CheckpointError, match="no checkpoint"):
        Trainer(ToyTask(), _cfg(), tmp_path).train(resume=True)


def test_lr_schedule_warms_up_then_decays():
    assert lr_factor(0, 10, 100) == pytest.approx(0.1)
    assert lr_factor(9, 10, 100) == pytest.approx(1.0)
    assert lr_factor(55, 10, 100) == pytest.approx(0.5)
    assert lr_factor(100, 10, 100) == 0.0
