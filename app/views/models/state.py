"""What the Models page does, read from its forms: a model to load from a path, a small model to train."""

from __future__ import annotations

from dataclasses import dataclass

CORPORA = {"examples": "the example sentences", "upload": "upload a text file"}


@dataclass(frozen=True)
class TrainRun:
    """A training job the visitor asked for (the form's values)."""

    kind: str  # bert, elmo or static
    steps: int
    corpus: str  # "examples" or "upload"
