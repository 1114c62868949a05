"""The novels' task (``period``): in which of ELTeC's time slots a paragraph's novel appeared."""

from __future__ import annotations

import random
import re
from collections import Counter
from functools import lru_cache
from pathlib import Path

from ..paths import data_dir
from ..text import (
    CorpusError,
    iter_paragraphs,
    read_text_file,
    sentence_token_ranges,
    tokenize_with_offsets,
    word_count,
)
from .data import SPLIT_SEED, Example, TaskData, TaskError
from .splits import assemble

ELTEC_SOURCE = "English Novel Corpus (ELTeC-eng), ed. Lou Burnard, v1.0.1, DOI 10.5281/zenodo.3533868"
PERIODS = (("1840-1859", 1840, 1859), ("1860-1879", 1860, 1879), ("1880-1899", 1880, 1899),
           ("1900-1920", 1900, 1920))
PARAGRAPH_MIN_WORDS = 20
PARAGRAPH_MAX_TOKENS = 120
PER_PERIOD = 3000            # paragraphs per period, spread evenly over its novels: balanced classes
_NOVEL_FILE = re.compile(r"ENG(\d{4})\d*_[^/]*?(?:\.xml)?$")


def default_corpus() -> Path:
    return data_dir() / "corpus" / "eltec-eng.txt"


def metadata_path(corpus: str | Path) -> Path:
    """``eltec-eng.txt`` -> ``eltec-eng-metadata.tsv`` beside it."""
    corpus = Path(corpus)
    return corpus.with_name(corpus.stem + "-metadata.tsv")


def period_of(year: int) -> str | None:
    for name, lo, hi in PERIODS:
        if lo <= year <= hi:
            return name
    return None


def _read_metadata(path: Path) -> list[tuple[str, int, str]]:
    """(novel id, year, author) per line of the metadata table, in corpus order."""
    if not path.exists():
        raise TaskError(f"{path}: the novels' metadata table is missing; the period task needs it beside the corpus "
                        "(file<TAB>blob<TAB>title<TAB>author<TAB>chars, one line per novel, as in the shared data)")
    novels = []
    try:
        text = read_text_file(path, "metadata table", pipes=False)
    except CorpusError as e:
        raise TaskError(str(e)) from None
    for n, line in enumerate(text.splitlines(), start=1):
        fields = line.split("\t")
        if n == 1 and fields[0] == "file" or not line.strip():
            continue
        m = _NOVEL_FILE.search(fields[0])
        if not m or len(fields) < 4:
            raise TaskError(f"{path}, line {n}: expected a novel's file name like level1/ENG18400_Trollope.xml and "
                            f"its author in the 4th column, found {line[:80]!r}")
        year = int(m.group(1))
        if period_of(year) is None:
            raise TaskError(f"{path}, line {n}: year {year} is outside ELTeC's time slots (1840-1920)")
        novels.append((Path(fields[0]).stem, year, " ".join(fields[3].split()) or Path(fields[0]).stem))
    if not novels:
        raise TaskError(f"{path}: no novels listed")
    return novels


def _paragraph_words(text: str) -> list[str]:
    """The paragraph's tokens, cut to whole sentences within PARAGRAPH_MAX_TOKENS (or the first
    PARAGRAPH_MAX_TOKENS tokens when its first sentence is longer)."""
    tokens = tokenize_with_offsets(text)
    if len(tokens) <= PARAGRAPH_MAX_TOKENS:
        return [w for w, _, _ in tokens]
    end = 0
    for _, b in sentence_token_ranges(tokens):
        if b > PARAGRAPH_MAX_TOKENS:
            break
        end = b
    return [w for w, _, _ in tokens[: end or PARAGRAPH_MAX_TOKENS]]


def _candidates(path: Path, n_novels: int) -> list[list[str]]:
    """Each novel's paragraphs that may be long enough (a cheap first cut; words are counted properly later)."""
    candidates: list[list[str]] = [[] for _ in range(n_novels)]
    try:
        for doc, _, text in iter_paragraphs(path):
            if doc >= n_novels:
                raise TaskError(f"{path} has more novels (blank-line separated) than {metadata_path(path).name} "
                                f"lists ({n_novels}); the two must be in the same order")
            if len(text.split()) >= PARAGRAPH_MIN_WORDS:
                candidates[doc].append(text)
    except CorpusError as e:
        raise TaskError(str(e)) from e
    return candidates


def _sample_paragraphs(novel: str, texts: list[str], quota: int) -> list[list[str]]:
    """Up to ``quota`` of one novel's paragraphs (as words, long enough), a seeded sample kept in novel order."""
    order = random.Random(f"{SPLIT_SEED}:{novel}").sample(range(len(texts)), len(texts))
    chosen = []
    for j in order:
        words = _paragraph_words(texts[j])
        if word_count(words) >= PARAGRAPH_MIN_WORDS:
            chosen.append((j, words))
            if len(chosen) == quota:
                break
    return [words for _, words in sorted(chosen)]


@lru_cache(maxsize=2)
def period_task(corpus: str, stamp: tuple) -> TaskData:
    """The period task of the novels in ``corpus`` (``stamp``: the files' mtimes and sizes, so a changed file
    builds the task again)."""
    path = Path(corpus)
    if not path.is_file():
        raise TaskError(f"{path}: the novels corpus is not there; the period task reads it (one paragraph a line, "
                        "a blank line between novels) with its metadata table beside it: put the shared data in "
                        "../shared/data (corpus/eltec-eng.txt) or set CTXMODELS_DATA to its folder")
    novels = _read_metadata(metadata_path(path))
    candidates = _candidates(path, len(novels))
    periods = [period_of(year) for _, year, _ in novels]
    per_period = Counter(periods)
    examples, groups = [], []
    for (novel, _, author), period, texts in zip(novels, periods, candidates, strict=True):
        for words in _sample_paragraphs(novel, texts, quota=-(-PER_PERIOD // per_period[period])):
            examples.append(Example(tuple(words), period, novel))
            groups.append(author)
    if len({ex.label for ex in examples}) < 2:
        raise TaskError(f"{path}: paragraphs of only one period found; the period task needs novels from two or more")
    by_author: dict[str, Counter] = {}
    for ex, g in zip(examples, groups, strict=True):
        by_author.setdefault(g, Counter())[ex.label] += 1
    strata = {g: c.most_common(1)[0][0] for g, c in by_author.items()}
    labels = [name for name, _, _ in PERIODS if name in set(periods)]
    return assemble("period", "sentence", labels, examples, groups, _description(), ELTEC_SOURCE, "author",
                    strata=strata)


def _description() -> str:
    return (
        "Period classification: from one paragraph of a novel, predict in which of ELTeC's time slots the novel "
        "appeared (1840-59, 1860-79, 1880-99, 1900-20). Vocabulary, spelling and subjects drift over eighty "
        "years (railways, telegrams, motor-cars; 'shall' and 'whilst'), so one paragraph carries some signal, "
        "but many paragraphs could be from any decade: expect well above chance, far from perfect. The author "
        "would be impossible to learn with a split by novel, so the split keeps each author's novels together "
        "(no style carries over from training to test), stratified by period. Paragraphs of at least "
        f"{PARAGRAPH_MIN_WORDS} words, cut to whole sentences within {PARAGRAPH_MAX_TOKENS} tokens; each period "
        f"gets about {PER_PERIOD} paragraphs spread evenly over its novels (a seeded sample), so the classes are "
        "balanced and no novel dominates.")
