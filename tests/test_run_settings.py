"""The one rule for a run's settings (ctxmodels.training.settings), on a toy kind: nothing is trained here."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from ctxmodels.checkpoint import CheckpointError
from ctxmodels.training.settings import RUN_FILE, RunSettings


@dataclass
class ToySettings(RunSettings):
    KIND = "toy"
    TITLE = "toy"

    steps: int | None = 10
    lr: float | None = 0.1
    warmup: int | None = 2
    width: int = 4
    wide: bool = False


@pytest.fixture
def corpus(tmp_path) -> Path:
    path = tmp_path / "corpus.txt"
    path.write_text("One document.\n\nAnother one.\n", encoding="utf-8")
    return path


def started(out: Path, corpus: Path, **given) -> ToySettings:
    """A run in ``out`` as far as the settings go: resolved, stored, and a checkpoint there."""
    settings = ToySettings.resolve({"corpus": corpus, **given}, out)
    settings.save(out)
    (out / "checkpoint").mkdir()
    (out / "checkpoint" / "trainer_state.pt").write_bytes(b"")
    return settings


def test_a_new_run_takes_the_defaults_and_stores_its_settings(tmp_path, corpus):
    settings = started(tmp_path / "run", corpus, width=8)
    assert (settings.width, settings.steps, settings.wide, settings.seed) == (8, 10, False, 0)
    stored = json.loads((tmp_path / "run" / RUN_FILE).read_text())
    assert stored["kind"] == "toy" and stored["settings"]["width"] == 8
    assert stored["settings"]["corpus"] == str(corpus.resolve()) and len(stored["settings"]["corpus_sha256"]) == 64
    with pytest.raises(CheckpointError, match="already holds a training run; pass --resume"):
        ToySettings.resolve({"corpus": corpus}, tmp_path / "run")
    with pytest.raises(ValueError, match="--corpus is needed"):
        ToySettings.resolve({}, tmp_path / "other")
    with pytest.raises(ValueError, match="--steps must be a whole number between 1 and 1000000000, got 0"):
        ToySettings.resolve({"corpus": corpus, "steps": 0}, tmp_path / "other")
    with pytest.raises(TypeError, match="heigth"):
        ToySettings.resolve({"corpus": corpus, "heigth": 3}, tmp_path / "other")


def test_resume_needs_no_options_and_refuses_conflicting_ones(tmp_path, corpus):
    out = tmp_path / "run"
    first = started(out, corpus, width=8, log_every=1)
    assert ToySettings.resolve({}, out, resume=True) == first
    assert ToySettings.resolve({"width": 8, "corpus": corpus}, out, resume=True) == first  # the same values: fine
    with pytest.raises(ValueError) as e:
        ToySettings.resolve({"width": 3, "lr": 0.5, "wide": True, "seed": None}, out, resume=True)
    message = str(e.value)
    assert "--width 3 (the run used 8)" in message and "--lr 0.5 (the run used 0.1)" in message
    assert "--wide (the run was without it)" in message and "--seed" not in message
    assert "Leave them out to resume, or train into a new --out" in message
    # the end of the run and the bookkeeping may change
    moved = ToySettings.resolve({"steps": 30, "log_every": 5, "save_every": 7}, out, resume=True)
    assert (moved.steps, moved.log_every, moved.save_every, moved.width) == (30, 5, 7, 8)


def test_resume_checks_the_corpus_content_not_its_path(tmp_path, corpus):
    out = tmp_path / "run"
    started(out, corpus)
    moved = tmp_path / "moved.txt"
    shutil.copy(corpus, moved)
    assert ToySettings.resolve({"corpus": moved}, out, resume=True).corpus == str(moved.resolve())
    corpus.write_text("One document, changed.\n\nAnother one.\n", encoding="utf-8")
    with pytest.raises(ValueError, match="the corpus changed since this run started"):
        ToySettings.resolve({}, out, resume=True)


def test_stored_settings_of_another_kind_or_none_are_refused(tmp_path, corpus):
    with pytest.raises(CheckpointError, match="run.json: not found, so there is no toy run to resume"):
        ToySettings.resolve({}, tmp_path / "none", resume=True)
    out = tmp_path / "run"
    started(out, corpus)
    (out / RUN_FILE).write_text(json.dumps({"kind": "bert", "settings": {}}))
    with pytest.raises(CheckpointError, match="not the settings of a toy run"):
        ToySettings.resolve({}, out, resume=True)


def test_a_setting_the_stored_run_lacks_takes_the_given_value_or_the_default(tmp_path, corpus):
    out = tmp_path / "run"
    started(out, corpus, width=8)
    stored = json.loads((out / RUN_FILE).read_text())
    del stored["settings"]["width"], stored["settings"]["wide"]  # a run from before these settings existed
    (out / RUN_FILE).write_text(json.dumps(stored))
    assert ToySettings.resolve({}, out, resume=True).width == 4
    resumed = ToySettings.resolve({"width": 8, "wide": True}, out, resume=True)
    assert resumed.width == 8 and resumed.wide is True
