"""A real lack of room, not a simulated one: the file-size limit (``ulimit -f``: writes past it fail with EFBIG;
Python ignores SIGXFSZ) and, where this machine lets a test mount one, a small tmpfs that fills up (ENOSPC).

Every command that writes a model or an index (train, finetune, average, the corpus index of occurrences) must end
in one line naming the limit or the disk and the path, with no traceback (safetensors, torch's zip writer and SQLite
report such errors in their own exception types), keep the last good checkpoint, and finish once there is room:
``--resume`` for a run, the same command again otherwise.
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_finetune import sentence_task, tiny_bert  # noqa: F401  (a fixture)
from tests.test_static import TRAIN_ARGS, write_two_group_corpus

ROOT = Path(__file__).resolve().parents[1]


def ctxmodels(args: list[str], limit: int | None = None, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """``ctxmodels ARGS`` in a process whose files may grow to ``limit`` bytes."""
    def limited() -> None:
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))

    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1", "CTXMODELS_CACHE": str(cwd / "c")}
    return subprocess.run([sys.executable, "-m", "ctxmodels.cli", *map(str, args)], cwd=cwd, env=env, text=True,
                          capture_output=True, preexec_fn=limited, timeout=600)


def assert_one_line_about_room(done: subprocess.CompletedProcess, where: Path) -> str:
    err = done.stderr
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.startswith("ctxmodels: error:")]
    assert done.returncode == 2 and len(lines) == 1 and err.strip().endswith(lines[0]), err
    assert lines[0].startswith(("ctxmodels: error: file too large: ", "ctxmodels: error: disk full: ")), err
    assert str(where) in lines[0], err
    return lines[0]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory, tiny_bert):  # noqa: F811
    d = tmp_path_factory.mktemp("inputs")
    corpus = write_two_group_corpus(d / "corpus.txt", docs=6, paragraphs=10)
    data = sentence_task(60)
    tsv = d / "animals.tsv"
    tsv.write_text("".join(f"{' '.join(e.words)}\t{e.label}\n" for e in data.train + data.dev + data.test))
    static = ["train", "static", "--corpus", corpus, *TRAIN_ARGS, "--steps", "4"]
    models = [d / "m1", d / "m2"]
    for seed, model in enumerate(models):
        assert ctxmodels([*static, "--data-seed", seed, "--out", model]).returncode == 0
    return {"corpus": corpus, "tsv": tsv, "bert": tiny_bert, "models": models}


def _static_train(inputs, out: Path) -> tuple[list, list]:
    return ([*["train", "static", "--corpus", inputs["corpus"], *TRAIN_ARGS], "--steps", "6", "--save-every", "2",
             "--out", out], ["train", "static", "--out", out, "--resume", "--no-progress"])


def _finetune(inputs, out: Path) -> tuple[list, list]:
    return (["finetune", "--model", inputs["bert"], "--task", inputs["tsv"], "--steps", "4", "--save-every", "2",
             "--batch-size", "8", "--no-progress", "--out", out], ["finetune", "--out", out, "--resume",
                                                                   "--no-progress"])


def _average(inputs, out: Path) -> tuple[list, list]:
    argv = ["average", out, *inputs["models"]]
    return argv, argv


# the limit is chosen to stop each command in the middle of its work: after its small files, within its weights
CASES = {"train": (_static_train, 11_000), "finetune": (_finetune, 60_000), "average": (_average, 2_000)}


@pytest.mark.parametrize("command", CASES)
def test_the_file_size_limit_mid_run_is_one_line_and_the_run_finishes_afterwards(tmp_path, inputs, command):
    make, limit = CASES[command]
    out = tmp_path / "out"
    first, again = make(inputs, out)
    stopped = ctxmodels(first, limit=limit)
    line = assert_one_line_about_room(stopped, out)
    assert line.startswith("ctxmodels: error: file too large: "), line
    assert not [p for p in out.parent.rglob("*") if p.name.endswith(".tmp")]
    done = ctxmodels(again)
    assert done.returncode == 0, done.stderr


def test_the_file_size_limit_while_indexing_a_corpus(tmp_path, inputs):
    big = tmp_path / "big.txt"
    big.write_text(inputs["corpus"].read_text() * 20)
    stopped = ctxmodels(["occurrences", "--corpus", big, "--word", "the", "--count"], limit=50_000, cwd=tmp_path)
    assert_one_line_about_room(stopped, tmp_path / "c")
    done = ctxmodels(["occurrences", "--corpus", big, "--word", "the", "--count"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr


@pytest.fixture
def small_disk(tmp_path):
    """A 3 MB tmpfs (skipped where this sandbox may not mount one)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if shutil.which("mount") is None or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", mount],
                                                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    yield mount
    subprocess.run(["umount", "-l", mount], check=False)


@pytest.mark.parametrize("command", CASES)
def test_a_disk_that_fills_up_mid_run_is_one_line_and_the_run_finishes_once_space_is_freed(
        small_disk, inputs, command):
    make, _ = CASES[command]
    out = small_disk / "out"
    first, again = make(inputs, out)
    filler = small_disk / "filler"
    free = shutil.disk_usage(small_disk).free
    with open(filler, "wb") as f:  # leave a little room: the run's first files fit, its weights do not
        f.write(b"\0" * (free - 24_000))
    stopped = ctxmodels(first)
    assert_one_line_about_room(stopped, small_disk)
    filler.unlink()
    done = ctxmodels(again)
    assert done.returncode == 0, done.stderr
