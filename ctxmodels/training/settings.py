"""A training run's settings, and the one rule every kind of model (BERT, ELMo, static vectors) follows for them.

A run's settings are everything that decides its numbers: the corpus, the model's size, the data and the
schedule. Each kind declares them as a subclass of :class:`RunSettings`, with its defaults. The rule:

* A new run takes the settings given, fills in the defaults for the rest, checks them, and stores them in its
  output folder (``OUT/run.json``); it refuses to start in a folder that already holds a run (a checkpoint).
* A resumed run reads the stored settings, so no option needs repeating. A setting given again must equal the
  run's own, except those in :attr:`RunSettings.CHANGEABLE`: ``steps`` (a new end for the run; the learning-rate
  decay stretches from where it stands to it) and the bookkeeping that does not change the numbers (how often
  to save, evaluate and log). The corpus must still have the content (sha256) the run started with; its path
  may change.

:meth:`RunSettings.resolve` applies the rule; a kind's ``build_task(settings, out, ...)`` fills in what only the
data can tell (the number of held-out documents, the static vectors' one-epoch default) and calls
:meth:`RunSettings.save`. A setting the stored run lacks (a run started before that setting existed) takes the
given value or the default. Runs started before ``run.json`` existed are read from their kind's older files
(:meth:`RunSettings.legacy`).
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from ..checkpoint import CheckpointError, file_sha256, read_json, write_json
from ..text import read_documents
from .trainer import TrainConfig

RUN_FILE = "run.json"
S = TypeVar("S", bound="RunSettings")


@dataclass
class RunSettings:
    """The settings every kind shares; a kind's subclass adds its own and may change the defaults.

    ``None`` in a field after :meth:`resolve` means "decided later": by another setting or by the data.
    """

    #: "bert", "elmo" or "static", as stored in run.json; and the kind's name in messages
    KIND: ClassVar[str] = "model"
    TITLE: ClassVar[str] = "training"
    #: settings that may differ from the stored run's on --resume (see the module docstring)
    CHANGEABLE: ClassVar[frozenset[str]] = frozenset({"steps", "save_every", "eval_every", "log_every"})
    #: settings holding file paths: compared and stored as absolute paths
    PATHS: ClassVar[tuple[str, ...]] = ("corpus",)

    corpus: str = ""
    corpus_sha256: str = ""
    heldout_docs: int | None = None  # None: 2, or 1 for corpora under 10 documents
    seed: int = 0
    steps: int | None = None
    lr: float | None = None
    warmup: int | None = None
    weight_decay: float = 0.01
    bf16: bool = False
    save_every: int = 500
    eval_every: int = 500
    log_every: int = 10

    @classmethod
    def names(cls) -> list[str]:
        """The settings that can be given (everything but the corpus digest, which is measured)."""
        return [f.name for f in dataclasses.fields(cls) if f.name != "corpus_sha256"]

    @classmethod
    def resolve(cls: type[S], given: dict[str, Any], out: str | Path, resume: bool = False) -> S:
        """The settings of a new run (``given`` plus defaults) or of the run in ``out`` being resumed.

        ``given`` maps setting names to values; None (or a missing name) = not given. Raises CheckpointError
        for a folder that holds a run when not resuming or none when resuming, ValueError for a conflicting
        option, a changed corpus or an invalid value.
        """
        out = Path(out)
        unknown = set(given) - set(cls.names())
        if unknown:
            raise TypeError(f"not {cls.TITLE} settings: {', '.join(sorted(unknown))}")
        given = {k: str(Path(v).resolve()) if k in cls.PATHS else v for k, v in given.items() if v is not None}
        if not resume:
            if (out / "checkpoint" / "trainer_state.pt").exists():
                raise CheckpointError(f"{out} already holds a training run; pass --resume to continue it or "
                                      "choose another --out")
            if "corpus" not in given:
                raise ValueError("--corpus is needed to start a run (only --resume reads it from the run)")
            settings = cls(**given)
        else:
            stored = cls._stored(out)
            conflicts = [_conflict(k, v, stored[k]) for k, v in given.items()
                         if k in stored and v != stored[k] and k not in cls.CHANGEABLE and k != "corpus"]
            if conflicts:
                raise ValueError(
                    f"{out}: --resume continues the run with its stored settings ({RUN_FILE}), but these options "
                    f"differ: {'; '.join(conflicts)}. Leave them out to resume, or train into a new --out"
                )
            # No conflict left: a given value equals the run's, may change, is one the run lacks, or is the
            # corpus (checked by its content below).
            known = {k: v for k, v in stored.items() if k in cls.names() or k == "corpus_sha256"}
            settings = cls(**{**known, **given})
            if not settings.corpus:
                raise ValueError(f"{out}: the run does not record its corpus; pass --corpus")
        if not Path(settings.corpus).is_file():
            read_documents(settings.corpus)  # the corpus module's clear "not found" / "not a file" error
        sha = file_sha256(settings.corpus)
        if resume and settings.corpus_sha256 and settings.corpus_sha256 != sha:
            raise ValueError(f"{settings.corpus}: the corpus changed since this run started (sha256 differs), so it "
                             "cannot be resumed exactly; restore the file or train into a new --out")
        settings.corpus_sha256 = sha
        settings.check()
        return settings

    def check(self) -> None:
        """Fill in the defaults that follow from other settings, and refuse invalid values (ValueError).
        Subclasses extend it; it must leave complete settings as they are."""
        for name in ("steps", "save_every", "eval_every", "log_every"):
            value = getattr(self, name)
            if value is not None and value < (1 if name in ("steps", "log_every") else 0):
                raise ValueError(f"--{name.replace('_', '-')} must be at least "
                                 f"{1 if name in ('steps', 'log_every') else 0}, got {value}")
        if self.heldout_docs is not None and self.heldout_docs < 0:
            raise ValueError(f"--heldout-docs must be 0 or more, got {self.heldout_docs}")
        if self.seed < 0 or (self.warmup is not None and self.warmup < 0) or (self.lr is not None and self.lr <= 0):
            raise ValueError("--seed and --warmup must be 0 or more, --lr positive")

    @classmethod
    def _stored(cls, out: Path) -> dict[str, Any]:
        path = out / RUN_FILE
        if path.is_file():
            stored = read_json(path)
            if stored.get("kind") != cls.KIND or not isinstance(stored.get("settings"), dict):
                raise CheckpointError(f"{path}: not the settings of a {cls.TITLE} run (kind {stored.get('kind')!r})")
            return stored["settings"]
        legacy = cls.legacy(out)
        if legacy is None:
            raise CheckpointError(f"{path}: not found, so there is no {cls.TITLE} run to resume in {out}; start "
                                  "one without --resume")
        return legacy

    @classmethod
    def legacy(cls, out: Path) -> dict[str, Any] | None:
        """The settings of a run started before run.json existed, from the kind's older files; None if none."""
        return None

    def save(self, out: str | Path) -> None:
        """Store the settings in ``out/run.json`` (only the first process writes under torchrun)."""
        if int(os.environ.get("RANK", "0")) == 0:
            write_json(Path(out) / RUN_FILE, {"kind": self.KIND, "settings": dataclasses.asdict(self)})

    def train_config(self) -> TrainConfig:
        """The trainer's settings (the steps, learning rate and warm-up must be known by now)."""
        if self.steps is None or self.lr is None or self.warmup is None:
            raise ValueError("the schedule is not complete: steps, lr and warmup must be set")
        return TrainConfig(max_steps=self.steps, lr=self.lr, warmup_steps=self.warmup,
                           weight_decay=self.weight_decay, bf16=self.bf16, save_every=self.save_every,
                           eval_every=self.eval_every, log_every=self.log_every, seed=self.seed)


def _conflict(name: str, given: Any, stored: Any) -> str:
    """``--name VALUE (the run used OTHER)``; flags read ``--name`` / ``no --name``."""
    flag = "--" + name.replace("_", "-")
    if isinstance(given, bool):
        return f"{flag} (the run was without it)" if given else f"no {flag} (the run used it)"
    return f"{flag} {given} (the run used {'the default' if stored is None else stored})"
