"""``ctxmodels ship RUN ASSET`` over an earlier shipped model never leaves ASSET without a model: the new folder is
built aside, checked (it loads, every weight is finite) and only then swapped in. Damaged or NaN weights are refused
in one line, a full disk at any write and a kill at any step of the swap leave the earlier model or the new one,
whole."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import torch

from ctxmodels import checkpoint, cli, load
from ctxmodels.checkpoint import DiskFullError, file_sha256, is_temp_name, load_tensors, save_tensors
from ctxmodels.release.shipping import WEIGHTS, ship
from tests.test_disk_full import DiskFills


@pytest.fixture
def runs(tmp_path, tiny_assets) -> tuple[Path, Path, Path]:
    """(an earlier shipped model, a new run to ship over it, another run) in ``tmp_path``."""
    first, second = tmp_path / "run1", tmp_path / "run2"
    shutil.copytree(tiny_assets / "static-eltec", first)
    shutil.copytree(first, second)
    state = load_tensors(second / WEIGHTS)
    save_tensors(second / WEIGHTS, {k: v * 0.5 for k, v in state.items()})
    asset = tmp_path / "assets" / "static-eltec"
    ship(first, asset)
    return asset, second, first


def _spoiled(run: Path, tmp_path: Path, how: str) -> Path:
    bad = tmp_path / f"bad-{how}"
    shutil.copytree(run, bad)
    state = load_tensors(bad / WEIGHTS)
    name = next(iter(state))
    if how == "nan":
        state[name][0, 0] = float("nan")
    elif how == "inf":
        state[name][0, 0] = float("inf")
    elif how == "fp16-overflow":
        state[name][0, 0] = 1e6
    if how == "truncated":
        data = (bad / WEIGHTS).read_bytes()
        (bad / WEIGHTS).write_bytes(data[: len(data) // 2])
    elif how == "garbage":
        (bad / WEIGHTS).write_bytes(b"\0" * 4096)
    else:
        save_tensors(bad / WEIGHTS, state)
    return bad


def _leftovers(asset: Path) -> list[str]:
    return sorted(p.name for p in asset.parent.iterdir() if is_temp_name(p.name) or p.name.endswith(".old"))


@pytest.mark.parametrize("how", ["nan", "inf", "fp16-overflow", "truncated", "garbage"])
def test_damaged_weights_are_refused_in_one_line_and_the_earlier_model_stays(runs, tmp_path, capsys, how):
    asset, _, first = runs
    before, bad = file_sha256(asset / WEIGHTS), _spoiled(first, tmp_path, how)
    rc = cli.main(["ship", str(bad), str(asset)])
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert rc == 2 and len(lines) == 1 and lines[0].startswith("ctxmodels: error: "), err
    assert "is unchanged" in lines[0], err
    assert file_sha256(asset / WEIGHTS) == before and _leftovers(asset) == []
    load(asset, reload=True)
    if how == "fp16-overflow":  # fp32 holds it
        assert cli.main(["ship", "--fp32", str(bad), str(asset)]) == 0


def _weights(folder: Path) -> dict[str, torch.Tensor]:
    return load_tensors(folder / WEIGHTS)


def _is_one_of(asset: Path, old: dict, new: dict) -> str:
    """"old" or "new": which whole model ``asset`` holds (it loads, and its weights are one set's)."""
    load(asset, reload=True)
    got = _weights(asset)
    for name, want in (("old", old), ("new", new)):
        if got.keys() == want.keys() and all(torch.equal(got[k], want[k]) for k in got):
            return name
    raise AssertionError(f"{asset} holds neither model")


def test_a_full_disk_at_every_write_of_a_ship_keeps_the_earlier_model(runs, tmp_path, monkeypatch, capsys):
    asset, second, _ = runs
    old = _weights(asset)
    probe = tmp_path / "probe" / "static-eltec"
    shutil.copytree(asset, probe)
    with monkeypatch.context() as m:
        counter = DiskFills(m, None)
        ship(second, probe)
    new = _weights(probe)
    assert counter.calls >= 5, counter.calls
    for k in range(1, counter.calls + 1):
        target = tmp_path / f"k{k}" / "static-eltec"
        shutil.copytree(asset, target)
        with monkeypatch.context() as m:
            fills = DiskFills(m, k)
            rc = cli.main(["ship", str(second), str(target)])
        err = capsys.readouterr().err
        assert fills.failed, k
        held = _is_one_of(target, old, new)
        if rc == 0:  # the disk filled after the swap (removing the old copy): the new model is whole
            assert held == "new", k
        else:
            assert rc == 2 and err.startswith("ctxmodels: error: disk full: ") and err.count("\n") == 1, (k, err)
            assert (held, "is unchanged" in err) in (("old", True), ("new", False)), (k, err)
        assert _leftovers(target) == [], (k, _leftovers(target))
        assert cli.main(["ship", str(second), str(target)]) == 0  # once space is freed
        assert _is_one_of(target, old, new) == "new"
        capsys.readouterr()


def test_a_kill_at_any_step_of_a_ship_leaves_a_whole_model(runs, tmp_path, monkeypatch):
    """What a kill leaves is the folder as it stands between two file-system steps: each such state is copied
    aside, and the next ship (or its first step, recovering an interrupted swap) must find a whole model."""
    asset, second, _ = runs
    old = _weights(asset)
    states: list[Path] = []

    def snapshot() -> None:
        copy = tmp_path / "kills" / str(len(states))
        shutil.copytree(asset.parent, copy, symlinks=True)
        states.append(copy)

    def stepping(fn):
        def wrapped(*args, **kwargs):
            snapshot()
            try:
                return fn(*args, **kwargs)
            finally:
                snapshot()
        return wrapped

    with monkeypatch.context() as m:
        for module, name in ((os, "replace"), (os, "rename"), (shutil, "rmtree"), (shutil, "copy2"),
                             (checkpoint, "save_file")):
            m.setattr(module, name, stepping(getattr(module, name)))
        ship(second, asset)
    new = _weights(asset)
    assert len(states) >= 8
    seen = set()
    for state in states:
        killed = state / asset.name
        checkpoint.recover_dir(killed)  # what the next ship does first
        seen.add(_is_one_of(killed, old, new))
        ship(second, killed)  # and shipping again succeeds, leaving nothing behind
        assert _is_one_of(killed, old, new) == "new" and _leftovers(killed) == []
    assert seen == {"old", "new"}


def test_a_disk_full_error_of_a_ship_names_the_space_and_the_place(runs, monkeypatch):
    asset, second, _ = runs
    with monkeypatch.context() as m:
        DiskFills(m, 1)
        with pytest.raises(DiskFullError, match=r"MB needed at .*assets.*is unchanged"):
            ship(second, asset)
