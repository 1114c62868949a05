"""Splitting a task's examples by document, and capping the splits: the same spec always gives the same split."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace

from .data import FRACTIONS, SPLIT_SEED, SPLITS, Example, TaskData, TaskError


def split_groups(sizes: Mapping[str, int], seed: int = SPLIT_SEED, strata: Mapping[str, str] | None = None,
                 fractions: Sequence[float] = FRACTIONS) -> dict[str, str]:
    """Group (document) -> split name. Groups are taken in a seeded random order (of their sorted names, so the
    order the caller lists them in does not matter) and each goes to the split furthest below its share of the
    examples (``sizes``: examples per group); ties go to the larger split. With ``strata`` (group -> class) this
    is done per class, so every split gets groups of every class that has three or more."""
    rng = random.Random(seed)
    by_stratum: dict[str, list[str]] = {}
    for g in sorted(sizes):
        by_stratum.setdefault(strata[g] if strata is not None else "", []).append(g)
    out: dict[str, str] = {}
    for stratum in sorted(by_stratum):
        groups = by_stratum[stratum]
        rng.shuffle(groups)
        filled = [0] * len(fractions)
        for g in groups:
            i = min(range(len(fractions)), key=lambda j: (filled[j] / fractions[j], -fractions[j], j))
            filled[i] += sizes[g]
            out[g] = SPLITS[i]
    return out


def assemble(name: str, kind: str, labels: Sequence[str], examples: list[Example], groups: Sequence[str],
             description: str, source: str, split_by: str, seed: int = SPLIT_SEED,
             strata: Mapping[str, str] | None = None) -> TaskData:
    """Split ``examples`` keeping each group (``groups[i]`` is example i's) in one split."""
    sizes = Counter(groups)
    where = split_groups(sizes, seed, strata)
    parts: dict[str, list[Example]] = {s: [] for s in SPLITS}
    docs: dict[str, set[str]] = {s: set() for s in SPLITS}
    for ex, g in zip(examples, groups, strict=True):
        parts[where[g]].append(ex)
        docs[where[g]].add(ex.doc)
    return TaskData(name, kind, tuple(labels), parts["train"], parts["dev"], parts["test"], description, source,
                    split_by, {s: tuple(sorted(docs[s])) for s in SPLITS})


def capped(task: TaskData, max_examples: int | None, seed: int) -> TaskData:
    """A copy of ``task`` whose splits hold at most ``max_examples`` each (a seeded sample, order kept); the
    classes stay the same, so class ids agree with a run on the whole task."""
    if max_examples is not None and (isinstance(max_examples, bool) or not isinstance(max_examples, int)
                                     or max_examples < 1):
        raise TaskError(f"max_examples must be a whole number of at least 1 (or None for all), got {max_examples!r}")
    parts = {}
    for i, s in enumerate(SPLITS):
        items = task.split(s)
        if max_examples is not None and len(items) > max_examples:
            keep = sorted(random.Random(seed * 7919 + i).sample(range(len(items)), max_examples))
            items = [items[j] for j in keep]
        parts[s] = list(items)
    return replace(task, documents=dict(task.documents), **parts)

