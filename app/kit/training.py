"""Training a small model from the app: one job at a time, in its own process, cancellable by the session that started
it.

The job runs ``python -m ctxmodels.cli train KIND --corpus FILE --out DIR ...`` (the same trainer as the command
line), or ``python -m ctxmodels.cli finetune --model M --task T --out DIR ...`` (the What fine-tuning changes page),
in a new session so that a Ctrl-C on the server does not reach it and its SIGINT reaches only it. The app follows it
through the files the trainer writes: ``metrics.jsonl`` for the loss, the model files (rewritten at every
checkpoint) for the live word-senses preview. Cancelling sends SIGINT: the trainer saves a checkpoint and stops, and
the model trained so far stays usable. A job belongs to its ``owner`` (the id of the session that started it,
``app/limits.session_id``): everyone sees it, only its owner may cancel it. Whether the app may train at all is the
operator's choice (``app/kit/settings.py``). No Streamlit here, so it can be tested on its own.
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KINDS = ("static", "bert", "elmo")
MAX_STEPS = 5000
MIN_CORPUS_WORDS = 200

# Small, CPU-friendly sizes: a class should see the loss fall within minutes on a laptop.
KIND_ARGS = {
    "static": ["--dim", "50", "--min-count", "1", "--window", "4", "--batch-size", "1024"],
    "bert": ["--preset", "tiny", "--vocab-size", "4000", "--max-seq-len", "64", "--batch-size", "16"],
    "elmo": ["--preset", "tiny", "--vocab-size", "4000", "--seq-len", "20", "--batch-size", "16"],
}


def train_command(kind: str, corpus: Path, out: Path, steps: int, threads: int = 1) -> list[str]:
    if kind not in KINDS:
        raise ValueError(f"unknown model kind {kind!r}; choose one of {', '.join(KINDS)}")
    if not 1 <= steps <= MAX_STEPS:
        raise ValueError(f"steps must be between 1 and {MAX_STEPS}, got {steps}")
    save_every = max(5, steps // 10)  # about ten checkpoints: the preview refreshes at each
    return [sys.executable, "-m", "ctxmodels.cli", "train", kind, "--corpus", str(corpus), "--out", str(out),
            "--steps", str(steps), "--save-every", str(save_every), "--eval-every", str(steps),
            "--log-every", str(max(1, min(10, steps // 50))), "--threads", str(threads), "--no-progress",
            *KIND_ARGS[kind]]


FINETUNE_MODES = ("finetune", "feature")


def finetune_command(model: str, task: str, out: Path, steps: int, mode: str = "finetune", threads: int = 1
                     ) -> list[str]:
    """``ctxmodels finetune`` as a job: the model (a path or short name), the task (``pos``, ``wsd:LEMMA``, …)."""
    if not str(model).strip() or not str(task).strip():
        raise ValueError("choose a model and a task to fine-tune on")
    if mode not in FINETUNE_MODES:
        raise ValueError(f"unknown mode {mode!r}; choose one of {', '.join(FINETUNE_MODES)}")
    if not 1 <= steps <= MAX_STEPS:
        raise ValueError(f"steps must be between 1 and {MAX_STEPS}, got {steps}")
    return [sys.executable, "-m", "ctxmodels.cli", "finetune", "--model", str(model), "--task", str(task),
            "--out", str(out), "--steps", str(steps), "--mode", mode, "--no-progress", "--threads", str(threads)]


def check_corpus(text: str, name: str = "the file") -> str:
    """The text of an uploaded corpus, checked: UTF-8 was decoded by the caller; not empty, not too small."""
    n = len(text.split())
    if n == 0:
        raise ValueError(f"{name} is empty: upload a plain-text file, one paragraph a line")
    if n < MIN_CORPUS_WORDS:
        raise ValueError(f"{name} has only {n} words; a model needs at least {MIN_CORPUS_WORDS} to learn anything")
    return text


def read_metrics(path: Path) -> list[dict]:
    """Records of a metrics.jsonl that may be being written (a partial last line is skipped)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return []
    out = []
    for line in lines:
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict):
            out.append(rec)
    return out


@dataclass
class Job:
    kind: str
    out: Path
    steps: int
    proc: subprocess.Popen
    log_path: Path
    owner: str = ""
    started: float = field(default_factory=time.time)
    cancelled: bool = False
    done_file: str = "config.json"  # the file whose presence means the model can be loaded
    label: str = ""  # what the job makes, in words (shown instead of the kind)

    @property
    def running(self) -> bool:
        return self.proc.poll() is None

    @property
    def status(self) -> str:
        code = self.proc.poll()
        if code is None:
            return "cancelling" if self.cancelled else "running"
        if code == 0:
            return "finished"
        return "cancelled" if self.cancelled or code == 130 else "failed"

    def metrics(self) -> list[dict]:
        return read_metrics(self.out / "metrics.jsonl")

    def step(self) -> int:
        return max((int(r["step"]) for r in self.metrics() if "step" in r and "loss" in r), default=0)

    def has_model(self) -> bool:
        return (self.out / self.done_file).is_file()

    def log_tail(self, n: int = 12) -> str:
        try:
            return "\n".join(self.log_path.read_text(encoding="utf-8", errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    def owned_by(self, owner: str) -> bool:
        return bool(owner) and owner == self.owner

    def cancel(self) -> None:
        if self.running:
            self.cancelled = True
            self.proc.send_signal(signal.SIGINT)


class JobRunner:
    """Holds at most one job; ``start`` refuses while one runs, ``cancel`` refuses anyone but the job's owner."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.job: Job | None = None
        atexit.register(self.stop)

    def start(self, kind: str, corpus: Path, out: Path, steps: int, owner: str = "") -> Job:
        return self._start(kind, train_command(kind, corpus, out, steps), out, steps, owner, "train.log")

    def start_finetune(self, model: str, task: str, out: Path, steps: int, mode: str = "finetune",
                       owner: str = "") -> Job:
        """Fine-tune ``model`` on ``task`` into ``out``: the same one-job rule and cancelling as training."""
        cmd = finetune_command(model, task, out, steps, mode)
        # ctxmodels finetune wants a new folder: its log goes beside it
        return self._start("finetune", cmd, out, steps, owner, out.parent / f"{out.name}.log",
                           done_file="finetune.json", label=f"{Path(model).name} fine-tuned on {Path(task).name}")

    def _start(self, kind: str, cmd: list[str], out: Path, steps: int, owner: str, log_path: Path | str,
               done_file: str = "config.json", label: str = "") -> Job:
        with self._lock:
            if self.job is not None and self.job.running:
                raise ValueError("a training job is already running (one at a time on this server); wait for it "
                                 "to finish")
            if isinstance(log_path, str):  # a name inside the run's folder
                out.mkdir(parents=True, exist_ok=True)
                log_path = out / log_path
            log_path.parent.mkdir(parents=True, exist_ok=True)
            env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
            with open(log_path, "w", encoding="utf-8") as log:
                proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, env=env,
                                        start_new_session=True)
            self.job = Job(kind, out, steps, proc, log_path, owner=owner, done_file=done_file, label=label or kind)
            return self.job

    def cancel(self, owner: str) -> None:
        """Cancel the running job on behalf of ``owner``; ValueError unless ``owner`` started it."""
        with self._lock:
            job = self.job
            if job is None or not job.running:
                return
            if not job.owned_by(owner):
                raise ValueError("this training job was started by another visitor; only they can cancel it")
            job.cancel()

    def stop(self) -> None:
        """Cancel a running job and give it a moment to save (at server exit)."""
        job = self.job
        if job is not None and job.running:
            job.cancel()
            try:
                job.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                job.proc.kill()
