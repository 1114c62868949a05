"""``ctxmodels average``: one model whose weights are the mean of several continuations of one model
(:mod:`ctxmodels.training.averaging`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..loading import resolve
from ..training.averaging import FAR_APART, average_models, far_apart


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("out", metavar="OUT", help="folder to write the averaged model to (new, or an earlier average)")
    p.add_argument("models", nargs="+", metavar="MODEL",
                   help="two or more model folders (or shipped models' short names) of one architecture and "
                        "vocabulary: stages of one run, or continuations of one model on different text")
    p.epilog = ("Measure the result with `ctxmodels quality --model OUT` beside its inputs; ship it with "
                "`ctxmodels ship OUT assets/NAME`.")


def run(args: argparse.Namespace) -> int:
    record = average_models([_folder(m) for m in args.models], args.out)
    names = ", ".join(s["name"] for s in record["sources"])
    print(f"{args.out}: the mean of {len(record['sources'])} models' weights ({names}); largest relative distance "
          f"between two of them {record['largest_relative_distance']:.3f}")
    if far_apart(record):
        print(f"warning: models more than {FAR_APART} apart look like separate trainings, not continuations of one "
              "model; their average is usually worse than each. Measure it with `ctxmodels quality` before using it.")
    return 0


def _folder(model: str) -> Path:
    """A model folder as given (its name is what the record keeps), else a shipped model's short name."""
    path = Path(model)
    return path if path.exists() else resolve(model)[0]
