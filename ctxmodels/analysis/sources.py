"""Real sense-labelled sentences from SemCor, their senses named by WordNet glosses.

The app and the CLI call these functions:

* :func:`semcor_lemmas` lists the polysemous lemmas (one entry per WordNet part of speech), for a picker.
* :func:`semcor_search` gives the tagged occurrences of one lemma as an :class:`~ctxmodels.analysis.vectors.
  OccurrenceSearch` (what :func:`~ctxmodels.analysis.vectors.find_occurrences` gives for typed sentences, so
  every measurement and view takes it as it is), each labelled with its sense's name, and a
  :class:`SenseInfo` per label.
* :func:`open_corpus` and :func:`corpus_search` do the same for any word of a plain-text corpus, through its
  full-text index (:mod:`ctxmodels.corpus_index`); a corpus has no sense labels.

A sense is named by its WordNet gloss shortened for a legend ("sloping land (especially the slope beside a body
of water)"); a sense key missing from the glosses table is named by the key itself. Both tables come from the
shared data folder when it is there, else from the compact copy shipped in ``assets/semcor``
(:func:`ctxmodels.semcor.default_semcor_dir`, :func:`ctxmodels.wordnet.default_senses_path`).
"""

from __future__ import annotations

import difflib
import random
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .. import corpus_index
from ..bounds import MAX_SEED, int_range
from ..semcor import Occurrence as TaggedOccurrence
from ..semcor import SemCor, load_semcor
from ..wordnet import Sense, load_senses, shorten
from .vectors import Occurrence, OccurrenceSearch, split_words

OTHER = "other"
LABEL_CHARS = 60
POS_NAMES = {"n": "noun", "v": "verb", "a": "adjective", "r": "adverb"}
_TYPE_OF = {"1": "n", "2": "v", "3": "a", "4": "r", "5": "a"}   # sense key ss_type -> pos (5: satellite adj.)

MIN_SENSE_COUNT = int_range(1, 1_000_000)
LIMIT = int_range(1, 1_000_000_000)
SEED = int_range(0, MAX_SEED)


@dataclass(frozen=True)
class SenseInfo:
    """One sense label of a search: its name, the sense keys behind it and how many occurrences carry it."""

    label: str                  # the gloss shortened (<= 60 characters, unique in the search), or "other"
    sense_keys: tuple[str, ...]  # one key; for "other", every folded key (most frequent first)
    gloss: str                  # the full gloss ("" for "other" and for a key without a gloss)
    examples: tuple[str, ...]   # WordNet's example phrases
    count: int                  # occurrences with this label in the search

    @property
    def pos(self) -> str | None:
        """The WordNet part of speech (n, v, a, r) of the sense; None for "other"."""
        return _pos_of(self.sense_keys[0]) if self.label != OTHER and self.sense_keys else None


@dataclass
class SemcorLemma:
    """A lemma with several senses in SemCor, for a picker (one entry per part of speech)."""

    lemma: str          # lower case; multi-word lemmas keep their "_" ("take_place")
    pos: str | None     # WordNet part of speech: n, v, a or r
    n_occurrences: int  # tagged occurrences, named entities left out
    n_senses: int       # distinct sense keys among them


def _pos_of(sense_key: str) -> str | None:
    try:
        return _TYPE_OF.get(sense_key.split("%", 1)[1][0])
    except IndexError:
        return None


@lru_cache(maxsize=2)
def _lemma_table(semcor: SemCor) -> dict[tuple[str, str], Counter]:
    """(lemma, pos) -> sense key counts over all tags but named entities; built once per loaded SemCor (the
    picker asks on every page run)."""
    table: dict[tuple[str, str], Counter] = {}
    for lemma, entries in semcor.lemma_index().items():
        for _, tag in entries:
            pos = _pos_of(tag.sense_key)
            if pos is None or tag.pos.startswith("NNP"):
                continue
            table.setdefault((lemma, pos), Counter())[tag.sense_key] += 1
    return table


def semcor_lemmas(min_occurrences: int = 10, min_senses: int = 2, *,
                  semcor: SemCor | None = None) -> list[SemcorLemma]:
    """Lemmas with at least ``min_occurrences`` tagged occurrences and ``min_senses`` distinct senses, counted per
    WordNet part of speech (the noun "run" and the verb "run" are two entries), most occurrences first (ties by
    lemma, then part of speech). ``semcor``: default :func:`ctxmodels.semcor.load_semcor`."""
    int_range(1, 1_000_000_000).check("min_occurrences", min_occurrences)
    int_range(1, 1_000_000).check("min_senses", min_senses)
    semcor = semcor if semcor is not None else load_semcor()
    found = [SemcorLemma(lemma, pos, sum(c.values()), len(c)) for (lemma, pos), c in _lemma_table(semcor).items()
             if sum(c.values()) >= min_occurrences and len(c) >= min_senses]
    found.sort(key=lambda x: (-x.n_occurrences, x.lemma, x.pos or ""))
    return found


# ----------------------------------------------------------------------------------------------------------
# labels


def _sense_infos(counts: Counter, rank: dict[str, int], senses: Mapping[str, Sense],
                 min_sense_count: int) -> tuple[list[SenseInfo], dict[str, str]]:
    """The SenseInfo list (most frequent first, "other" last) and sense key -> label."""
    kept = sorted((k for k in counts if counts[k] >= min_sense_count), key=lambda k: (-counts[k], k))
    folded = sorted((k for k in counts if counts[k] < min_sense_count), key=lambda k: (-counts[k], k))
    glosses = {k: senses[k].gloss if k in senses else "" for k in kept}
    labels = {k: shorten(glosses[k]) if glosses[k] else k for k in kept}
    # Two glosses that shorten alike (or one that reads "other") get the sense's frequency rank for this lemma,
    # so a legend never merges two senses.
    seen = Counter(labels.values())
    if folded:
        seen[OTHER] += 1
    for k in kept:
        if seen[labels[k]] > 1 and glosses[k]:
            suffix = f" ({rank[k]})"
            labels[k] = shorten(glosses[k], LABEL_CHARS - len(suffix)) + suffix
    if len(set(labels.values()) | ({OTHER} if folded else set())) < len(labels) + bool(folded):
        # still alike (a gloss that itself ends in "(2)"): the sense key is unique by definition
        labels = {k: (f"{shorten(glosses[k], LABEL_CHARS - len(k) - 3)} [{k}]" if glosses[k] else k)
                  for k in kept}
    infos = [SenseInfo(labels[k], (k,), glosses[k], senses[k].examples if k in senses else (), counts[k])
             for k in kept]
    if folded:
        infos.append(SenseInfo(OTHER, tuple(folded), "", (), sum(counts[k] for k in folded)))
    label_of = {k: labels.get(k, OTHER) for k in counts}
    return infos, label_of


# ----------------------------------------------------------------------------------------------------------
# sampling


def _spread_sample(found: list[TaggedOccurrence], semcor: SemCor, limit: int, seed: int) -> list[TaggedOccurrence]:
    """At most ``limit`` occurrences, as evenly spread over SemCor's documents as they allow (each document gives
    one in turn, in a seeded random order, until ``limit`` are taken; those within a document are seeded random
    too), back in corpus order. A lemma frequent in one text then does not fill the sample from that text."""
    if len(found) <= limit:
        return found
    rng = random.Random(seed)
    by_doc: dict[str, list[TaggedOccurrence]] = {}
    for o in found:
        by_doc.setdefault(semcor.sentences[o.sentence_index].document, []).append(o)
    pools = [rng.sample(items, len(items)) for items in by_doc.values()]
    rng.shuffle(pools)
    chosen: list[TaggedOccurrence] = []
    depth = 0
    while len(chosen) < limit:
        for pool in pools:
            if depth < len(pool):
                chosen.append(pool[depth])
                if len(chosen) == limit:
                    break
        depth += 1
    return sorted(chosen, key=lambda o: (o.sentence_index, o.token_index))


# ----------------------------------------------------------------------------------------------------------
# the search


def _unknown_lemma(lemma: str, semcor: SemCor) -> ValueError:
    index = semcor.lemma_index()
    forms = Counter(tag.lemma.lower() for _, _, tag in semcor.tagged()
                    if tag.word.lower() == lemma and not tag.pos.startswith("NNP"))
    hints = []
    if forms:
        hints.append(f"SemCor tags {lemma!r} as a form of {', '.join(repr(x) for x, _ in forms.most_common(3))}: "
                     "give the lemma (the dictionary form)")
    close = [x for x in difflib.get_close_matches(lemma, list(index), n=6, cutoff=0.75) if x not in forms][:5]
    if close:
        hints.append(f"close lemmas: {', '.join(close)}")
    if not hints:
        hints.append("pick one from semcor_lemmas() (SemCor tags nouns, verbs, adjectives and adverbs)")
    return ValueError(f"{lemma!r} is not a sense-tagged lemma in SemCor; " + "; ".join(hints))


def _pos_counts(lemma: str, semcor: SemCor) -> Counter:
    return Counter(_pos_of(tag.sense_key) for _, tag in semcor.lemma_index().get(lemma, [])
                   if not tag.pos.startswith("NNP"))


def semcor_search(lemma: str, pos: str | None = None, min_sense_count: int = 3, limit: int | None = 1000,
                  seed: int = 0, *, semcor: SemCor | None = None,
                  senses: Mapping[str, Sense] | None = None) -> tuple[OccurrenceSearch, list[SenseInfo]]:
    """SemCor's tagged occurrences of ``lemma``, each labelled with the name of its sense, and those senses.

    ``lemma`` is SemCor's lemma (case-insensitive; "take place" and "take_place" are the same);
    ``pos`` keeps one WordNet part of speech: "n", "v", "a" (adjectives, satellites included) or "r"; None
    keeps all. Named entities are left out (their "lemma" is an entity class), as
    :meth:`ctxmodels.semcor.SemCor.occurrences` does.

    The search has one sentence per occurrence (SemCor's words joined by spaces; a sentence holding the lemma
    twice appears twice), ``words`` are SemCor's words (multi-word expressions split at ``_``), and the
    occurrence is the tagged token's representative word. When there are more than ``limit`` occurrences
    (None: no limit), a seeded sample spread evenly over SemCor's documents is kept, in corpus order; the
    search's ``total`` is how many there were. Senses with
    fewer than ``min_sense_count`` of the kept occurrences are folded into one "other" label (1 keeps every
    sense). The SenseInfo list is in the order of their counts, "other" last.

    ``semcor`` and ``senses`` default to :func:`ctxmodels.semcor.load_semcor` and
    :func:`ctxmodels.wordnet.load_senses` (the shared data, else the copy in ``assets/semcor``).
    Raises ValueError with what to do for an unknown lemma, a ``pos`` outside n/v/a/r, or a lemma without
    occurrences for that ``pos``.
    """
    if not isinstance(lemma, str) or not lemma.strip():
        raise ValueError("no lemma given: give a word's dictionary form, e.g. 'bank'")
    key = "_".join(lemma.strip().lower().split())
    if pos is not None and pos not in POS_NAMES:
        raise ValueError(f"pos must be one of n, v, a, r (noun, verb, adjective, adverb) or None for all, "
                         f"not {pos!r}")
    MIN_SENSE_COUNT.check("min_sense_count", min_sense_count)
    if limit is not None:
        LIMIT.check("limit", limit)
    SEED.check("seed", seed)
    semcor = semcor if semcor is not None else load_semcor()
    senses = senses if senses is not None else load_senses()

    by_pos = _pos_counts(key, semcor)
    if not by_pos:
        if key in semcor.lemma_index():
            raise ValueError(f"{key!r} is tagged in SemCor only as a named entity class (NNP: person, group, "
                             "location), which is left out; give a common noun, verb, adjective or adverb")
        raise _unknown_lemma(key, semcor)
    if pos is not None and not by_pos.get(pos):
        has = ", ".join(f"{POS_NAMES[p]} ({p}): {n}" for p, n in by_pos.most_common() if p in POS_NAMES)
        raise ValueError(f"{key!r} has no {POS_NAMES[pos]} occurrences in SemCor; it has {has}. "
                         "Choose one of those (or pos=None for all)")

    found = semcor.occurrences(key, pos)
    total = len(found)
    # Ranks come from every occurrence, not the sample: the "(n)" of a sense stays the same whatever the limit.
    all_counts = Counter(o.sense_key for o in found)
    rank = {k: i for i, (k, _) in enumerate(sorted(all_counts.items(), key=lambda x: (-x[1], x[0])), start=1)}
    if limit is not None:
        found = _spread_sample(found, semcor, limit, seed)
    infos, label_of = _sense_infos(Counter(o.sense_key for o in found), rank, senses, min_sense_count)

    texts: list[str] = []
    labels: list[str | None] = []
    words: list[list[str]] = []
    occurrences: list[Occurrence] = []
    for i, o in enumerate(found):
        s = semcor.sentences[o.sentence_index]
        text = s.text
        start = sum(len(w) + 1 for w in s.words[: o.word_index])   # the text is the words joined by one space
        word = s.words[o.word_index]
        label = label_of[o.sense_key]
        texts.append(text)
        labels.append(label)
        words.append(list(s.words))
        occurrences.append(Occurrence(i, o.word_index, word, (start, start + len(word)), text, label))
    forms = frozenset(o.word.casefold() for o in occurrences)
    documents = [semcor.sentences[o.sentence_index].document for o in found]
    return OccurrenceSearch(key, forms, texts, labels, words, occurrences, missing=[], documents=documents,
                            total=total), infos


# ----------------------------------------------------------------------------------------------------------
# a plain-text corpus, through its full-text index (ctxmodels.corpus_index)

MAX_LIMIT = corpus_index.MAX_LIMIT  # occurrences one view draws at most


def open_corpus(path: str | Path, progress: Callable[[int, int], None] | None = None) -> corpus_index.CorpusIndex:
    """The corpus's index, built on first use (``progress(bytes_done, bytes_total)`` meanwhile)."""
    return corpus_index.CorpusIndex.open(path, progress=progress)


def corpus_search(index: corpus_index.CorpusIndex, word: str, inflections: bool = False, limit: int | None = 1000,
                  seed: int = 0) -> tuple[OccurrenceSearch, corpus_index.Lookup]:
    """The occurrences of ``word`` in the corpus (a seeded sample of at most ``limit``, spread across the
    documents) as an :class:`OccurrenceSearch` with one sentence per occurrence, in the order of ``lookup.hits``,
    and the lookup itself (totals, documents)."""
    lookup = index.lookup(word, inflections=inflections, limit=limit, seed=seed)
    if not lookup.hits:
        others = sorted(lookup.forms - {corpus_index.fold(word.strip())})
        forms = f" or its forms {', '.join(others)}" if len(lookup.forms) > 1 else ""
        raise ValueError(f"{word!r}{forms} does not occur in {index.path.name} ({index.n_words:,} words); "
                         "try another word, or its inflections")
    texts, words, occurrences = [], [], []
    for i, hit in enumerate(lookup.hits):
        tokens = split_words(hit.sentence)
        j = next(j for j, (_, a, _) in enumerate(tokens) if a == hit.char_span[0])
        texts.append(hit.sentence)
        words.append([w for w, _, _ in tokens])
        occurrences.append(Occurrence(i, j, hit.word, hit.char_span, hit.sentence, None))
    found = OccurrenceSearch(word, lookup.forms, texts, [None] * len(texts), words, occurrences, [],
                             documents=[hit.document_name for hit in lookup.hits])
    return found, lookup
