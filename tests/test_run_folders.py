"""A run folder has one writer at a time, and a run restarts cleanly however it stopped.

* Two processes writing one folder: the second is refused in one line naming the holder (pid, host, since when),
  for every command that writes a run folder (train, finetune, average, ship); a killed holder's lock is taken over.
* A run killed before its first checkpoint restarts from step 0 on ``--resume`` (train and finetune).
* ``finetune --resume`` with another ``--model`` than the run's is refused, naming both.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ctxmodels import cli
from ctxmodels.training.run_lock import LOCK_NAME, FolderInUse, hold_folder, lock_path
from tests.test_finetune import sentence_task, tiny_bert  # noqa: F401  (a fixture)
from tests.test_static import TRAIN_ARGS, write_two_group_corpus

ROOT = Path(__file__).resolve().parents[1]
HOLD = ("import sys, time\nfrom ctxmodels.training.run_lock import hold_folder\n"
        "with hold_folder(sys.argv[1], beside=sys.argv[2] == '1'):\n"
        "    print('held', flush=True)\n    time.sleep(600)\n")


def _start(args: list[str]) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, *args], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _holder(folder: Path, beside: bool = False) -> subprocess.Popen:
    """Another process holding ``folder``'s lock until it is killed."""
    proc = _start(["-c", HOLD, str(folder), "1" if beside else "0"])
    assert proc.stdout.readline().strip() == "held", proc.stderr.read()
    return proc


def _kill(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    proc.stdout.close()
    proc.stderr.close()


def _one_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith("ctxmodels: error: ") and "\n" not in err, err
    return err


@pytest.fixture
def corpus(tmp_path) -> Path:
    return write_two_group_corpus(tmp_path / "corpus.txt", docs=6, paragraphs=10)


def _tsv(tmp_path: Path) -> Path:
    data = sentence_task(60)
    tsv = tmp_path / "animals.tsv"
    tsv.write_text("".join(f"{' '.join(e.words)}\t{e.label}\n" for e in data.train + data.dev + data.test))
    return tsv


def _commands(tmp_path: Path, corpus: Path, bert: Path) -> dict[str, tuple[list[str], Path, bool]]:
    """Each command that writes a folder: (its arguments, the folder, whether its lock lies beside it)."""
    static = ["train", "static", "--corpus", str(corpus), *TRAIN_ARGS, "--steps", "4"]
    first = tmp_path / "first"
    assert cli.main([*static, "--out", str(first)]) == 0
    second = tmp_path / "second"
    shutil.copytree(first, second)
    return {
        "train": ([*static, "--out", str(tmp_path / "t")], tmp_path / "t", False),
        "train --resume": (["train", "static", "--out", str(second), "--resume", "--steps", "6", "--no-progress"],
                           second, False),
        "finetune": (["finetune", "--model", str(bert), "--task", str(_tsv(tmp_path)), "--steps", "2",
                      "--batch-size", "8", "--no-progress", "--out", str(tmp_path / "f")], tmp_path / "f", False),
        "average": (["average", str(tmp_path / "avg"), str(first), str(second)], tmp_path / "avg", True),
        "ship": (["ship", str(first), str(tmp_path / "asset")], tmp_path / "asset", True),
    }


def test_every_command_that_writes_a_folder_waits_its_turn(tmp_path, corpus, tiny_bert, capsys):  # noqa: F811
    for name, (argv, folder, beside) in _commands(tmp_path, corpus, tiny_bert).items():
        holder = _holder(folder, beside)
        try:
            assert cli.main(argv) == 2, name
            line = _one_error(capsys)
            assert f"in use by process {holder.pid} on " in line and " since " in line, (name, line)
        finally:
            _kill(holder)
        # a killed holder leaves its file behind, unlocked: the next run takes it over
        assert lock_path(folder, beside).exists(), name
        assert cli.main(argv) == 0, (name, capsys.readouterr().err)
        assert not lock_path(folder, beside).exists(), name
        capsys.readouterr()


def test_two_training_processes_into_one_folder(tmp_path, corpus, capsys):
    out = tmp_path / "run"
    common = ["train", "static", "--corpus", str(corpus), *TRAIN_ARGS, "--out", str(out)]
    first = _start(["-m", "ctxmodels.cli", *common, "--steps", "1000000", "--save-every", "0"])
    try:
        deadline = time.time() + 120
        log = out / "metrics.jsonl"
        while not log.is_file() or '"event": "start"' not in log.read_text():  # training, not a checkpoint yet
            assert first.poll() is None and time.time() < deadline, first.stderr.read()
            time.sleep(0.1)
        assert cli.main([*common, "--steps", "4"]) == 2
        assert f"in use by process {first.pid}" in _one_error(capsys)
        holder = json.loads((out / LOCK_NAME).read_text())
        assert holder["pid"] == first.pid
        assert log.read_text().count('"event": "start"') == 1  # the second run wrote nothing
        assert not (out / "checkpoint").exists()
    finally:
        _kill(first)
    # killed before its first checkpoint: --resume starts the run again from step 0, with its settings
    assert cli.main(["train", "static", "--out", str(out), "--resume", "--steps", "4"]) == 0, capsys.readouterr()
    lines = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in lines if "loss" in r] == [1, 2, 3, 4]
    assert sum(r.get("event") == "start" for r in lines) == 1
    reference = tmp_path / "reference"
    assert cli.main(["train", "static", "--corpus", str(corpus), *TRAIN_ARGS, "--out", str(reference),
                     "--steps", "4"]) == 0
    want = [json.loads(x) for x in (reference / "metrics.jsonl").read_text().splitlines()]
    assert [r["loss"] for r in lines if "loss" in r] == [r["loss"] for r in want if "loss" in r]


def test_the_lock_is_let_go_on_an_error_or_ctrl_c_and_is_reentrant(tmp_path):
    folder = tmp_path / "run"
    for error in (ValueError, KeyboardInterrupt):
        with pytest.raises(error):
            with hold_folder(folder):
                with hold_folder(folder):  # the command holds it, and the trainer it starts
                    assert (folder / LOCK_NAME).is_file()
                (folder / "x").write_text("x")
                raise error
        assert not (folder / LOCK_NAME).exists()
    with hold_folder(tmp_path / "unused"):
        pass
    assert not (tmp_path / "unused").exists()  # a folder made for nothing is removed again
    holder = _holder(folder)
    try:
        with pytest.raises(FolderInUse, match=f"process {holder.pid}"):
            with hold_folder(folder):
                pass
    finally:
        _kill(holder)


def test_a_finetune_killed_before_its_first_checkpoint_resumes_from_the_start(tmp_path, tiny_bert,  # noqa: F811
                                                                               capsys):
    out = tmp_path / "run"
    argv = ["finetune", "--model", str(tiny_bert), "--task", str(_tsv(tmp_path)), "--steps", "4", "--batch-size",
            "8", "--no-progress", "--out", str(out)]
    assert cli.main([*argv, "--save-every", "0"]) == 0
    reference = json.loads((out / "finetune.json").read_text())
    # what a kill before the first checkpoint leaves: the settings, the log's start, no checkpoint
    shutil.rmtree(out / "checkpoint")
    for name in ("finetune.json", "model.safetensors", "README.md"):
        (out / name).unlink()
    lines = (out / "metrics.jsonl").read_text().splitlines()
    (out / "metrics.jsonl").write_text("\n".join(lines[:2]) + "\n")
    assert cli.main(["finetune", "--out", str(out), "--resume", "--no-progress"]) == 0, capsys.readouterr().err
    again = json.loads((out / "finetune.json").read_text())
    assert again["steps"] == 4 and again["metrics"] == reference["metrics"]


def test_finetune_resume_with_another_model_is_refused(tmp_path, tiny_bert, capsys):  # noqa: F811
    out = tmp_path / "run"
    argv = ["finetune", "--task", str(_tsv(tmp_path)), "--steps", "2", "--batch-size", "8", "--no-progress",
            "--out", str(out)]
    assert cli.main([*argv, "--model", str(tiny_bert)]) == 0
    other = tmp_path / "other-bert"
    shutil.copytree(tiny_bert, other)
    capsys.readouterr()
    assert cli.main(["finetune", "--out", str(out), "--resume", "--steps", "4", "--model", str(other)]) == 2
    line = _one_error(capsys)
    assert str(other) in line and str(tiny_bert) in line, line
    # the same model by another path is the run's
    (tmp_path / "link").symlink_to(tiny_bert)
    assert cli.main(["finetune", "--out", str(out), "--resume", "--steps", "4", "--model", str(tmp_path / "link"),
                     "--no-progress"]) == 0, capsys.readouterr().err
