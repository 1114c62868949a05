"""What every task is made of: examples, a task's three splits and its classes, and the error a task raises."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


class TaskError(ValueError):
    """A task that cannot be built: unknown name, missing data, a malformed file. The message says what to do."""


KINDS = ("sentence", "token", "word", "pair", "qa")
SPLITS = ("train", "dev", "test")
FRACTIONS = (0.8, 0.1, 0.1)
SPLIT_SEED = 0  # built-in splits never move: scores from different runs are on the same test documents


@dataclass(frozen=True)
class Example:
    """One example: a sentence (or paragraph) as words, and what is to be predicted from it."""

    words: tuple[str, ...]
    label: str | tuple[str, ...]    # sentence/word kind: one label; token kind: one per word, "" = not labelled
    doc: str                        # the document it comes from; a split never cuts through one
    target: int | None = None       # word kind: index in ``words`` of the word to classify
    pair: tuple[str, ...] | None = None  # pair kind: the second text's words (``words`` is the first)


@dataclass
class TaskData:
    """A task's examples in three splits, its classes (a class id is its index in ``labels``) and its story."""

    name: str
    kind: str                       # "sentence" | "token" | "word" | "pair" | "qa" (examples: QaExample)
    labels: tuple[str, ...]
    train: list[Example]
    dev: list[Example]
    test: list[Example]
    description: str                # what is predicted from what, and why, for a student
    source: str                     # credit line for model cards
    split_by: str = "document"      # what the split keeps together: "document", "author", "sentence", "example"
    documents: dict[str, tuple[str, ...]] = field(default_factory=dict)   # split -> its documents, sorted

    def split(self, split: str) -> list[Example]:
        if split not in SPLITS:
            raise TaskError(f"unknown split {split!r}: choose one of {', '.join(SPLITS)}")
        return getattr(self, split)

    def label_counts(self, split: str) -> dict[str, int]:
        """How often each class is the answer in ``split`` (per labelled word for token tasks), every class
        listed, in the order of ``labels``."""
        counts: Counter = Counter()
        if self.kind == "qa":  # answers are spans of text, not classes
            return {}
        for ex in self.split(split):
            if self.kind == "token":
                counts.update(x for x in ex.label if x)
            else:
                counts[ex.label] += 1
        return {label: counts.get(label, 0) for label in self.labels}

    def summary(self) -> dict:
        """Sizes, classes and how the split was made, as plain JSON values (for model cards and the CLI)."""
        out: dict = {"name": self.name, "kind": self.kind, "labels": list(self.labels),
                     "examples": {s: len(self.split(s)) for s in SPLITS}}
        if self.kind == "token":
            out["labelled_words"] = {s: sum(self.label_counts(s).values()) for s in SPLITS}
        out["label_counts"] = {s: self.label_counts(s) for s in SPLITS}
        out["split_by"] = self.split_by
        out["documents"] = {s: len(self.documents.get(s, ())) for s in SPLITS}
        out["source"] = self.source
        out["description"] = self.description
        return out

