"""What the ELMo layers page shows, read from its widgets and the URL: the model whose probes are shown, and the
settings of a probe to run."""

from __future__ import annotations

from dataclasses import dataclass

TASK_NAMES = {"pos": "part of speech", "wsd": "word sense"}
MIN_TEST_ITEMS = 50  # fewer: an accuracy's 95% interval is wider than ±14 points, more than layers usually differ
SENTENCES = dict(min_value=20, max_value=20_000, value=300, step=50)  # SemCor sentences a probe reads
EPOCHS = dict(min_value=1, max_value=50, value=10)


@dataclass(frozen=True)
class ProbeRun:
    """A probe the visitor asked for (the form's values)."""

    model: str
    task: str
    n_sentences: int
    epochs: int
    again: bool  # recompute even when a result with these settings is cached
