"""A full disk at any point of a save: the last good checkpoint stays loadable and resumable, no temporary is left
behind, and the message is one line saying how much space was needed where. Also: temporaries of killed runs are
removed when a run starts, and a checkpoint swap that a kill interrupted is completed."""

from __future__ import annotations

import errno
import os
import shutil
import stat
from pathlib import Path

import pytest
import torch

from ctxmodels import checkpoint, cli
from ctxmodels.checkpoint import DiskFullError, is_temp_name, load_tensors, replace_dir_atomic
from ctxmodels.training import run_log
from ctxmodels.training.trainer import Trainer
from tests.test_static import TRAIN_ARGS, write_two_group_corpus
from tests.test_trainer import ToyTask, _cfg, _losses


class DiskFills:
    """Makes the ``fail_at``-th write-like call fail with ENOSPC (None: count only). A file writer first writes
    part of its data, as a disk that fills up mid-file does."""

    def __init__(self, monkeypatch, fail_at: int | None):
        self.fail_at, self.calls, self.failed = fail_at, 0, False
        real_save_file, real_torch_save = checkpoint.save_file, torch.save
        real_write = checkpoint.write_bytes_to

        def due() -> bool:
            self.calls += 1
            if self.fail_at is not None and self.calls == self.fail_at:
                self.failed = True
                return True
            return False

        def enospc(path=None):
            return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path) if path else None)

        def half_written(writer):
            def wrapped(obj, path, *args, **kwargs):
                fail = due()
                writer(obj, path, *args, **kwargs)
                if fail:
                    size = Path(path).stat().st_size
                    with open(path, "r+b") as f:
                        f.truncate(size // 2)
                    raise enospc(path)
            return wrapped

        def write_bytes(f, data):
            if due():
                real_write(f, bytes(data[: len(data) // 2]))
                raise enospc()
            real_write(f, data)

        def failing(fn):
            def wrapped(*args, **kwargs):
                # (a folder that exists fails with EEXIST, whatever the space: not a write)
                creates = fn.__name__ != "mkdir" or not os.path.exists(args[0])
                if creates and due():
                    raise enospc(args[0] if args else None)
                return fn(*args, **kwargs)
            return wrapped

        monkeypatch.setattr(checkpoint, "save_file", half_written(real_save_file))
        monkeypatch.setattr(torch, "save", half_written(real_torch_save))
        monkeypatch.setattr(checkpoint, "write_bytes_to", write_bytes)
        monkeypatch.setattr(run_log, "write_bytes_to", write_bytes)
        for module, name in ((os, "replace"), (os, "link"), (os, "fsync"), (os, "mkdir"), (shutil, "copyfile")):
            monkeypatch.setattr(module, name, failing(getattr(module, name)))


def leftovers(out: Path) -> list[str]:
    """Temporaries and half-swapped folders anywhere in a run's folder."""
    return sorted(str(p.relative_to(out)) for p in out.rglob("*")
                  if is_temp_name(p.name) or p.name.endswith(".old"))


@pytest.fixture(scope="module")
def half_run(tmp_path_factory) -> Path:
    """A run of 10 steps with a good checkpoint at its end, to be continued to 20."""
    out = tmp_path_factory.mktemp("toy") / "half"
    torch.manual_seed(0)
    Trainer(ToyTask(), _cfg(max_steps=10, save_every=5), out).train()
    return out


def _second_half(out: Path) -> None:
    Trainer(ToyTask(), _cfg(max_steps=20, save_every=5), out).train(resume=True)


def test_a_full_disk_at_every_write_of_a_save_keeps_the_last_good_checkpoint(tmp_path, monkeypatch, half_run):
    half, probe = half_run, tmp_path / "count"
    shutil.copytree(half, probe)
    with monkeypatch.context() as m:
        counter = DiskFills(m, None)
        _second_half(probe)
    n_calls, full = counter.calls, _losses(probe)
    assert n_calls >= 20, n_calls  # the second half saves twice (steps 15, 20) and logs every step

    for k in range(1, n_calls + 1):
        out = tmp_path / f"k{k}"
        shutil.copytree(half, out)
        with monkeypatch.context() as m:
            fills = DiskFills(m, k)
            with pytest.raises(DiskFullError) as e:
                _second_half(out)
        assert fills.failed, k
        message = str(e.value)
        assert "\n" not in message and message.startswith("disk full: ") and " MB needed at " in message, message
        assert "--resume" in message or "no checkpoint" in message, message
        assert leftovers(out) == [], (k, leftovers(out))
        state = torch.load(out / "checkpoint" / "trainer_state.pt", weights_only=True)
        assert state["step"] in (10, 15, 20), k
        load_tensors(out / "model.safetensors")  # the top-level model loads too
        # resuming after the disk is freed finishes the run exactly as if nothing had happened
        if state["step"] < 20:
            _second_half(out)
        resumed = _losses(out)
        assert sorted(resumed) == sorted(full), k
        assert all(resumed[s] == pytest.approx(full[s], abs=1e-6) for s in full), k
        assert leftovers(out) == [], k


def _cli_disk_full(tmp_path, monkeypatch, capsys, ks) -> int:
    """Train static vectors through the command line with the disk filling up at the k-th write, for each k in
    ``ks`` (None: every write of the run); the number of writes of a whole run."""
    corpus = write_two_group_corpus(tmp_path / "corpus.txt", docs=6, paragraphs=10)
    common = ["train", "static", "--corpus", str(corpus), *TRAIN_ARGS, "--steps", "12", "--save-every", "4"]
    with monkeypatch.context() as m:
        counter = DiskFills(m, None)
        assert cli.main([*common, "--out", str(tmp_path / "full")]) == 0
    reference = _losses(tmp_path / "full")
    for k in ks or range(1, counter.calls + 1):
        out = tmp_path / f"k{k}"
        with monkeypatch.context() as m:
            fills = DiskFills(m, k)
            rc = cli.main([*common, "--out", str(out)])
        err = capsys.readouterr().err
        if not fills.failed:
            assert rc == 0
            continue
        lines = [line for line in err.splitlines() if line.startswith("ctxmodels:")]
        assert rc == 2 and lines[-1].startswith("ctxmodels: error: disk full: ") and " MB needed at " in lines[-1]
        assert "Traceback" not in err and leftovers(out) == [], (k, err, leftovers(out))
        state = out / "checkpoint" / "trainer_state.pt"
        if state.is_file() and torch.load(state, weights_only=True)["step"] == 12:
            pass  # the disk filled up after the last checkpoint (the end's log line): the run is complete
        elif state.is_file():
            assert cli.main(["train", "static", "--out", str(out), "--resume", "--no-progress"]) == 0, k
        else:  # the disk filled before the first checkpoint: start again
            assert cli.main([*common, "--out", str(out)]) == 0, capsys.readouterr().err
        assert _losses(out) == pytest.approx(reference), k
        assert leftovers(out) == []
    return counter.calls


def test_a_full_disk_through_the_command_line_is_one_line_and_resumable(tmp_path, monkeypatch, capsys):
    assert _cli_disk_full(tmp_path, monkeypatch, capsys, (1, 4, 9, 17, 30, 45, 60, 100)) > 100


@pytest.mark.slow
def test_a_full_disk_at_every_write_of_a_command_line_run(tmp_path, monkeypatch, capsys):
    _cli_disk_full(tmp_path, monkeypatch, capsys, None)


def test_stale_temporaries_of_a_killed_run_are_removed_when_it_resumes(tmp_path):
    out = tmp_path / "run"
    Trainer(ToyTask(), _cfg(max_steps=10, save_every=5), out).train()
    # what kills leave: a half-written checkpoint folder, half-written files, an old checkpoint mid-swap
    (out / ".checkpoint.abc123.tmp").mkdir()
    (out / ".checkpoint.abc123.tmp" / "model.safetensors").write_bytes(b"\0" * 1000)
    (out / ".model.safetensors.xyz.tmp").write_bytes(b"\0" * 100)
    (out / "data").mkdir()
    (out / "data" / "train.npz.tmp.npz").write_bytes(b"\0")
    (out / "notes.txt").write_text("mine")
    os.replace(out / "checkpoint", out / "checkpoint.old")  # killed between the two renames of a swap
    Trainer(ToyTask(), _cfg(max_steps=15, save_every=5), out).train(resume=True)
    assert leftovers(out) == []
    assert (out / "notes.txt").read_text() == "mine"
    assert torch.load(out / "checkpoint" / "trainer_state.pt", weights_only=True)["step"] == 15


def test_a_swap_interrupted_after_the_new_folder_is_in_place_keeps_the_new_one(tmp_path):
    final = tmp_path / "checkpoint"
    final.mkdir()
    (final / "a").write_text("old")
    new = checkpoint.new_tmp_dir(final)
    (new / "a").write_text("new")
    replace_dir_atomic(new, final)
    assert (final / "a").read_text() == "new" and not (tmp_path / "checkpoint.old").exists()
    # killed after the new folder went in, before the old one was removed
    (tmp_path / "checkpoint.old").mkdir()
    (tmp_path / "checkpoint.old" / "a").write_text("older")
    checkpoint.recover_dir(final)
    assert (final / "a").read_text() == "new" and not (tmp_path / "checkpoint.old").exists()


def test_writing_over_a_pipe_or_folder_is_refused(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    for target in (tmp_path / "pipe", tmp_path):
        with pytest.raises(OSError, match="give the name of a file to write"):
            checkpoint.write_text_atomic(target, "x")
    assert (tmp_path / "pipe").exists() and not (tmp_path / "pipe").is_file()
    (tmp_path / "file").write_text("")
    with pytest.raises(NotADirectoryError, match="is a file, not a folder"):
        checkpoint.write_json(tmp_path / "file" / "x.json", {})


def test_a_rewritten_file_keeps_its_mode_and_a_new_one_gets_the_umasks(tmp_path):
    """A file written whole and swapped in must not turn 0600 (a shipped result would vanish for other users)."""
    shared = tmp_path / "shared.json"
    shared.write_text("{}")
    for mode in (0o644, 0o640):
        shared.chmod(mode)
        with checkpoint.atomic_file(shared) as tmp:
            tmp.write_text('{"a": 1}')
        assert stat.S_IMODE(shared.stat().st_mode) == mode
    assert shared.read_text() == '{"a": 1}'

    with checkpoint.atomic_file(tmp_path / "new.json") as tmp:
        tmp.write_text("{}")
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE((tmp_path / "new.json").stat().st_mode) == 0o666 & ~umask
