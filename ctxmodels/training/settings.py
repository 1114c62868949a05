"""A training run's settings, and the one rule every kind of model (BERT, ELMo, static vectors) follows for them.

A run's settings are everything that decides its numbers: the corpus, the model's size, the data and the
schedule. Each kind declares them as a subclass of :class:`RunSettings`, with its defaults. The rule:

* A new run takes the settings given, fills in the defaults for the rest, checks them, and stores them in its
  output folder (``OUT/run.json``); it refuses to start in a folder that already holds a run (a checkpoint).
* A resumed run reads the stored settings, so no option needs repeating. A setting given again must equal the
  run's own, except those in :attr:`RunSettings.CHANGEABLE`: ``steps`` (a new end for the run; the learning-rate
  decay stretches from where it stands to it) and the bookkeeping that does not change the numbers (how often
  to save, evaluate and log). The corpus (and the ``--add-text`` file) must still have the content (sha256) the
  run started with; its path may change.

:meth:`RunSettings.resolve` applies the rule; a kind's ``build_task(settings, out, ...)`` fills in what only the
data can tell (the number of held-out documents, the static vectors' one-epoch default) and calls
:meth:`RunSettings.save`. A setting the stored run lacks (a run started before that setting existed) takes the
given value or the default. Runs started before ``run.json`` existed are read from their kind's older files
(:meth:`RunSettings.legacy`).
"""

from __future__ import annotations

import dataclasses
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from ..bounds import MAX_SEED, MAX_STEPS, Bound, float_range, int_range
from ..checkpoint import CheckpointError, file_sha256, read_json, recover_dir, write_json
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
    PATHS: ClassVar[tuple[str, ...]] = ("corpus", "add_text")
    #: the digests measured from the files of these settings, not given: the content a --resume must find again
    DIGESTS: ClassVar[dict[str, str]] = {"corpus_sha256": "corpus", "add_text_sha256": "add_text"}
    #: the allowed range of each numeric setting, checked by :meth:`check` and, through the same Bound, by the
    #: command line while parsing (commands/train.py); a subclass adds its own (see :meth:`bounds`)
    BOUNDS: ClassVar[dict[str, Bound]] = {
        "heldout_docs": int_range(0, 100_000),
        "seed": int_range(0, MAX_SEED),
        "data_seed": int_range(0, MAX_SEED),
        "steps": int_range(1, MAX_STEPS),
        "lr": float_range(0, 10, lo_open=True),
        "warmup": int_range(0, MAX_STEPS),
        "weight_decay": float_range(0, 1),
        "save_every": int_range(0, MAX_STEPS),
        "eval_every": int_range(0, MAX_STEPS),
        "log_every": int_range(1, MAX_STEPS),
    }

    corpus: str = ""
    corpus_sha256: str = ""
    # more training documents, none held out: the held-out split (and so every held-out figure) is --corpus's
    add_text: str | None = None
    add_text_sha256: str = ""
    heldout_docs: int | None = None  # None: 2, or 1 for corpora under 10 documents
    seed: int = 0
    # The order of the training examples (and their masks, samples and dropout); None: seed's. The held-out split
    # and the initial weights stay seed's, so a continuation (--init-from) can take a new order and keep its
    # held-out figures comparable with its start's.
    data_seed: int | None = None
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
        """The settings that can be given (everything but the files' digests, which are measured)."""
        return [f.name for f in dataclasses.fields(cls) if f.name not in cls.DIGESTS]

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
        given = {k: _absolute(k, v) if k in cls.PATHS else v for k, v in given.items() if v is not None}
        check_out_dir(out, resume, given.get("corpus"))
        if out.is_dir():
            recover_dir(out / "checkpoint")  # a checkpoint swap that a kill interrupted
        if not resume:
            if (out / "checkpoint" / "trainer_state.pt").exists():
                raise CheckpointError(f"{out} already holds a training run; pass --resume to continue it or "
                                      "choose another --out")
            if "corpus" not in given:
                raise ValueError("--corpus is needed to start a run (only --resume reads it from the run)")
            settings = cls(**given)
        else:
            stored = cls._stored(out)
            # A file's path may change (its content is checked below), but not whether there is one.
            conflicts = [_conflict(k, v, stored[k]) for k, v in given.items()
                         if k in stored and v != stored[k] and k not in cls.CHANGEABLE
                         and not (k in cls.DIGESTS.values() and stored[k] is not None)]
            if conflicts:
                raise ValueError(
                    f"{out}: --resume continues the run with its stored settings ({RUN_FILE}), but these options "
                    f"differ: {'; '.join(conflicts)}. Leave them out to resume, or train into a new --out"
                )
            reached = _checkpoint_step(out)
            if reached is not None and given.get("steps") is not None and given["steps"] <= reached:
                raise ValueError(f"{out}: the run is at step {reached} already, so --steps {given['steps']} leaves "
                                 f"nothing to train; give --steps above {reached} to train longer")
            # No conflict left: a given value equals the run's, may change, is one the run lacks, or names a
            # file (checked by its content below).
            known = {k: v for k, v in stored.items() if k in cls.names() or k in cls.DIGESTS}
            settings = cls(**{**known, **given})
            if not settings.corpus:
                raise ValueError(f"{out}: the run does not record its corpus; pass --corpus")
        for digest, name in cls.DIGESTS.items():
            path = getattr(settings, name)
            if path is None:
                continue
            if not Path(path).is_file():
                read_documents(path)  # the corpus module's clear "not found" / "not a file" error
            sha = file_sha256(path)
            if resume and getattr(settings, digest) and getattr(settings, digest) != sha:
                what = "corpus" if name == "corpus" else "added text"
                raise ValueError(f"{path}: the {what} changed since this run started (sha256 differs), so it cannot "
                                 f"be resumed exactly; restore {Path(path).name} or train into a new --out")
            setattr(settings, digest, sha)
        settings.check()
        return settings

    def check(self) -> None:
        """Refuse values out of their declared range (:meth:`bounds`) or of the wrong type, then fill in the
        defaults that follow from other settings (ValueError naming the option). Subclasses extend it; it must
        leave complete settings as they are."""
        for name, value in dataclasses.asdict(self).items():
            if value is None or name in self.DIGESTS:
                continue
            if name in self.bounds():
                self.bounds()[name].check(option_name(name), value)
            elif not isinstance(value, _field_type(type(self), name)):
                raise ValueError(f"{option_name(name)} must be a {_field_type(type(self), name).__name__}, "
                                 f"got {value!r}")

    @classmethod
    def bounds(cls) -> dict[str, Bound]:
        """The range of every numeric setting: :attr:`BOUNDS` of the class and of every class it extends."""
        merged: dict[str, Bound] = {}
        for klass in reversed(cls.__mro__):
            merged.update(vars(klass).get("BOUNDS", {}))
        return merged

    @classmethod
    def _stored(cls, out: Path) -> dict[str, Any]:
        """The stored run's settings, each checked like a given one (CheckpointError naming the file when one
        was damaged or edited out of range)."""
        path = out / RUN_FILE
        if path.is_file():
            stored = read_json(path)
            if stored.get("kind") != cls.KIND or not isinstance(stored.get("settings"), dict):
                raise CheckpointError(f"{path}: not the settings of a {cls.TITLE} run (kind {stored.get('kind')!r})")
            settings = stored["settings"]
        else:
            try:
                settings = cls.legacy(out)
            except (KeyError, TypeError, AttributeError) as e:
                raise CheckpointError(f"{out}: the older settings files of this run are incomplete ({e!r})") from e
            if settings is None:
                raise CheckpointError(f"{path}: not found, so there is no {cls.TITLE} run to resume in {out}; start "
                                      "one without --resume")
            path = out
        return check_stored(path, settings, cls, cls.bounds(), set(cls.names()) | set(cls.DIGESTS))

    @classmethod
    def legacy(cls, out: Path) -> dict[str, Any] | None:
        """The settings of a run started before run.json existed, from the kind's older files; None if none."""
        return None

    def save(self, out: str | Path) -> None:
        """Store the settings in ``out/run.json`` (only the first process writes under torchrun)."""
        if int(os.environ.get("RANK", "0")) == 0:
            write_json(Path(out) / RUN_FILE, {"kind": self.KIND, "settings": dataclasses.asdict(self)})

    @property
    def order_seed(self) -> int:
        """The seed of the training order: ``data_seed``, else ``seed``."""
        return self.seed if self.data_seed is None else self.data_seed

    def train_config(self) -> TrainConfig:
        """The trainer's settings (the steps, learning rate and warm-up must be known by now)."""
        if self.steps is None or self.lr is None or self.warmup is None:
            raise ValueError("the schedule is not complete: steps, lr and warmup must be set")
        return TrainConfig(max_steps=self.steps, lr=self.lr, warmup_steps=self.warmup,
                           weight_decay=self.weight_decay, bf16=self.bf16, save_every=self.save_every,
                           eval_every=self.eval_every, log_every=self.log_every, seed=self.order_seed)


#: what a run writes into its folder (any kind, older runs included); a new run refuses a folder holding anything
#: else, besides hidden files, logs (*.log) and its own corpus, so that it never overwrites someone's files
RUN_OUTPUTS = frozenset({
    RUN_FILE, "checkpoint", "metrics.jsonl", "README.md", "config.json", "model.safetensors", "vocab.txt",
    "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "data", "data_cache", "static-data.npz",
    "train_args.json", "elmo_run.json", "generator",
})


def check_out_dir(out: Path, resume: bool, corpus: str | None = None) -> None:
    """Refuse an ``--out`` that is a file, lies under a file, or (for a new run) is a folder holding files that are
    not a run's (ValueError saying what to do)."""
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} is a file, not a folder; give a folder for the run")
    for parent in out.parents:
        if parent.exists():
            if not parent.is_dir():
                raise ValueError(f"--out {out}: {parent} is a file, not a folder")
            if not os.access(parent, os.W_OK | os.X_OK) and not out.exists():
                raise ValueError(f"--out {out}: cannot create the folder in {parent} (no permission to write there)")
            break
    if resume or not out.is_dir():
        return
    corpus_name = Path(corpus).name if corpus and Path(corpus).parent == out.resolve() else None
    foreign = sorted(p.name for p in out.iterdir() if p.name not in RUN_OUTPUTS and not p.name.startswith(".")
                     and p.suffix != ".log" and p.name != corpus_name)
    if foreign:
        shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
        raise ValueError(f"--out {out} holds files that are not a training run's ({shown}); a run would write "
                         "its model files there: give an empty or new folder")


def check_stored(path: Path, settings: dict[str, Any], cls: type, bounds: dict[str, Bound],
                 names: set[str]) -> dict[str, Any]:
    """The settings a run stored in ``path`` (its run.json, or its older files), each checked like a given one:
    numbers in their declared ``bounds``, the others of their field's type, null only where the field allows it.
    CheckpointError naming the file and the field when one was damaged or edited by hand. A name that is not a
    setting (a typo such as "lerning_rate", or one an older version wrote) is left out with a warning naming it,
    so that nobody believes it took effect."""
    unknown = sorted(str(k) for k in settings if k not in names)
    if unknown and path.is_file():  # (an older run's files hold more than its settings)
        warnings.warn(f"{path}: ignoring {', '.join(map(repr, unknown))}: not a setting of this run (the settings "
                      f"are {', '.join(sorted(names))})", stacklevel=3)
    nullable = {f.name for f in dataclasses.fields(cls) if "None" in str(f.type)}
    for name in sorted(names):
        value = settings.get(name)
        try:
            if value is None:
                if name in settings and name not in nullable:
                    raise ValueError(f"{name} must be set, got null")
                continue
            if name in bounds:
                bounds[name].check(name, value)
            elif not isinstance(value, _field_type(cls, name)):
                raise ValueError(f"{name} must be a {_field_type(cls, name).__name__}, got {value!r}")
        except ValueError as e:
            raise CheckpointError(f"{path}: damaged run settings: {e}") from None
    return settings


def _absolute(name: str, value: Any) -> str:
    """A path setting as an absolute path (ValueError naming the option for a value that is not a path)."""
    try:
        if not isinstance(value, (str, os.PathLike)) or not str(value).strip():
            raise ValueError("empty")
        return str(Path(value).resolve())
    except (ValueError, OSError) as e:
        raise ValueError(f"{option_name(name)} {value!r} is not a usable path ({e})") from None


def _checkpoint_step(out: Path) -> int | None:
    """The step of the run's last checkpoint, from its small schedule file (None when unknown)."""
    try:
        step = read_json(out / "checkpoint" / "train_config.json").get("step")
    except CheckpointError:
        return None
    return step if isinstance(step, int) and not isinstance(step, bool) else None


def option_name(setting: str) -> str:
    """``max_seq_len`` -> ``--max-seq-len``."""
    return "--" + setting.replace("_", "-")


def _field_type(cls: type, name: str) -> type | tuple[type, ...]:
    """The type a non-numeric setting holds, read from its default (str for paths and names, bool for flags)."""
    default = next(f.default for f in dataclasses.fields(cls) if f.name == name)
    return str if default is None else type(default)


def _conflict(name: str, given: Any, stored: Any) -> str:
    """``--name VALUE (the run used OTHER)``; flags read ``--name`` / ``no --name``."""
    flag = option_name(name)
    if isinstance(given, bool):
        return f"{flag} (the run was without it)" if given else f"no {flag} (the run used it)"
    return f"{flag} {given} (the run used {'the default' if stored is None else stored})"
