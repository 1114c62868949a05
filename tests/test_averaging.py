"""``ctxmodels average``: the mean of several continuations of one model, and what it refuses to average."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file

from ctxmodels import cli
from ctxmodels.checkpoint import CheckpointError
from ctxmodels.elmo import ElmoConfig, ElmoLanguageModel
from ctxmodels.formats.allennlp import save_elmo
from ctxmodels.loading import clear_cache, load
from ctxmodels.training.averaging import average_models, far_apart

VOCAB = ["<S>", "</S>", "<UNK>", "the", "bank", "river", "money"]


def elmo_dir(root: Path, name: str, seed: int = 0) -> Path:
    torch.manual_seed(seed)
    save_elmo(ElmoLanguageModel(ElmoConfig.preset("tiny", n_tokens_vocab=len(VOCAB))).eval(), root / name,
              vocab=VOCAB)
    return root / name


def continued(source: Path, out: Path, shift: float, half: bool = False) -> Path:
    """A copy of ``source`` whose every weight moved by ``shift`` times a fixed random direction: a continuation."""
    shutil.copytree(source, out)
    g = torch.Generator().manual_seed(1)
    state = load_file(str(source / "model.safetensors"))
    moved = {k: v + shift * torch.randn(v.shape, generator=g) if v.is_floating_point() else v for k, v in state.items()}
    if half:
        moved = {k: v.half() if v.is_floating_point() else v for k, v in moved.items()}
    save_file(moved, str(out / "model.safetensors"), metadata={"format": "pt", "model_type": "elmo"})
    return out


@pytest.fixture(autouse=True)
def _fresh_cache():
    clear_cache()  # the loader caches by path, and these tests write different models to the same paths
    yield
    clear_cache()


@pytest.fixture
def stages(tmp_path):
    a = elmo_dir(tmp_path, "a")
    return [a, continued(a, tmp_path / "b", 0.01), continued(a, tmp_path / "c", -0.02, half=True)]


def test_the_average_is_the_mean_of_every_weight_and_loads_as_a_model(stages, tmp_path):
    record = average_models(stages, tmp_path / "avg")
    out = tmp_path / "avg"
    states = [{k: v.float() for k, v in load_file(str(s / "model.safetensors")).items()} for s in stages]
    mean = load_file(str(out / "model.safetensors"))
    assert mean.keys() == states[0].keys()
    for k, v in mean.items():
        assert v.dtype == torch.float32  # the fp16 input was widened, not the output narrowed
        torch.testing.assert_close(v, (states[0][k] + states[1][k] + states[2][k]) / 3)
    with safe_open(str(out / "model.safetensors"), framework="pt") as f:
        assert f.metadata()["model_type"] == "elmo"
    assert (out / "vocab.txt").read_bytes() == (stages[0] / "vocab.txt").read_bytes()
    assert json.loads((out / "config.json").read_text()) == json.loads((stages[0] / "config.json").read_text())

    assert [s["name"] for s in record["sources"]] == ["a", "b", "c"]
    assert json.loads((out / "average.json").read_text()) == record
    assert 0 < record["largest_relative_distance"] < 0.5 and not far_apart(record)
    card = (out / "README.md").read_text()
    assert "the average of 3 models' weights" in card and record["sources"][2]["weights_sha256"][:12] in card

    vectors = [load(d).embed([["the", "bank", "river"]])[0] for d in (*stages, out)]  # it loads like its inputs
    assert vectors[-1].shape == vectors[0].shape and np.isfinite(vectors[-1]).all()
    assert np.abs(vectors[-1] - vectors[0]).max() > 0  # and computes something of its own


def test_the_command_writes_the_average_and_warns_of_models_trained_apart(stages, tmp_path, capsys):
    assert cli.main(["average", str(tmp_path / "avg"), *map(str, stages)]) == 0
    out = capsys.readouterr().out
    assert "the mean of 3 models' weights (a, b, c)" in out and "warning" not in out

    apart = elmo_dir(tmp_path, "apart", seed=7)  # the same architecture, trained from another random start
    assert cli.main(["average", str(tmp_path / "avg2"), str(stages[0]), str(apart)]) == 0
    out = capsys.readouterr().out
    assert "warning: models more than 0.5 apart look like separate trainings" in out
    assert far_apart(json.loads((tmp_path / "avg2" / "average.json").read_text()))


def test_a_shipped_model_is_named_by_its_short_name(stages, tmp_path, monkeypatch, capsys):
    assets = tmp_path / "assets"
    shutil.copytree(stages[0], assets / "elmo-tiny")
    monkeypatch.setenv("CTXMODELS_ASSETS", str(assets))
    assert cli.main(["average", str(tmp_path / "avg"), "elmo-tiny", str(stages[1])]) == 0
    assert "(elmo-tiny, b)" in capsys.readouterr().out


def test_an_earlier_average_is_replaced_but_no_other_folder(stages, tmp_path, capsys):
    out = tmp_path / "avg"
    average_models(stages[:2], out)
    average_models(stages, out)  # an earlier average: replaced whole
    assert len(json.loads((out / "average.json").read_text())["sources"]) == 3

    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "keep.txt").write_text("mine")
    assert cli.main(["average", str(notes), *map(str, stages)]) == 2
    assert "not an earlier average" in capsys.readouterr().err
    assert [p.name for p in notes.iterdir()] == ["keep.txt"]  # nothing written
    with pytest.raises(ValueError, match="one of the models to average"):
        average_models(stages, stages[1])
    assert load_file(str(stages[1] / "model.safetensors")).keys()  # the source stays whole


def test_models_that_cannot_be_averaged_are_refused_with_the_reason(stages, tmp_path, capsys):
    a = stages[0]
    with pytest.raises(ValueError, match="at least two"):
        average_models([a], tmp_path / "x")
    with pytest.raises(ValueError, match="named twice"):
        average_models([a, a], tmp_path / "x")

    other_vocab = continued(a, tmp_path / "v", 0.01)
    (other_vocab / "vocab.txt").write_text("\n".join(reversed(VOCAB)) + "\n")
    with pytest.raises(ValueError, match="vocab.txt differs"):
        average_models([a, other_vocab], tmp_path / "x")

    bigger = tmp_path / "big"
    torch.manual_seed(0)
    save_elmo(ElmoLanguageModel(ElmoConfig.preset("tiny", n_tokens_vocab=len(VOCAB) + 1)).eval(), bigger,
              vocab=[*VOCAB, "more"])
    with pytest.raises(ValueError, match="config.json differs"):
        average_models([a, bigger], tmp_path / "x")

    no_weights = tmp_path / "empty"
    no_weights.mkdir()
    (no_weights / "config.json").write_text((a / "config.json").read_text())
    with pytest.raises(CheckpointError, match="no model.safetensors"):
        average_models([a, no_weights], tmp_path / "x")

    renamed = continued(a, tmp_path / "r", 0.01)
    state = load_file(str(renamed / "model.safetensors"))
    state["extra.weight"] = torch.zeros(2)
    save_file(state, str(renamed / "model.safetensors"))
    with pytest.raises(ValueError, match="other tensors"):
        average_models([a, renamed], tmp_path / "x")

    broken = continued(a, tmp_path / "nan", 0.01)
    state = load_file(str(broken / "model.safetensors"))
    name = next(k for k, v in state.items() if v.is_floating_point())
    state[name] = torch.full_like(state[name], float("nan"))
    save_file(state, str(broken / "model.safetensors"))
    with pytest.raises(CheckpointError, match="NaN"):
        average_models([a, broken], tmp_path / "x")

    assert cli.main(["average", str(tmp_path / "x"), str(a), str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert "nowhere" in err and "Traceback" not in err
    assert cli.main(["average", str(tmp_path / "x"), str(a), "elmo-nowhere"]) == 2
    assert "cannot find a model 'elmo-nowhere'" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()  # nothing half-written is left behind
