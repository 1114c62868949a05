"""The SemCor task of one lemma (``wsd:LEMMA``): which WordNet sense a word has, each class named by its gloss."""

from __future__ import annotations

import difflib
import re
from collections import Counter
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path

from ..semcor import SemCor
from ..wordnet import Sense, shorten
from .data import Example, TaskData, TaskError
from .semcor_tags import SEMCOR_SOURCE, WORDNET_SOURCE, open_semcor
from .splits import assemble

WSD_MIN_PER_SENSE = 5        # a sense with fewer occurrences is folded into "other": too few to learn or test
WSD_MIN_OCCURRENCES = 20
WSD_MIN_DOCUMENTS = 10       # fewer documents: split by sentence instead (said in the description)
OTHER = "other"
SENSE_LABEL_CHARS = 60
_WORDNET_POS = {"n": "noun", "v": "verb", "a": "adjective", "r": "adverb"}
_TYPE_OF = {"1": "n", "2": "v", "3": "a", "4": "r", "5": "a"}


def _sense_names(counts: Counter, senses: Mapping[str, Sense]) -> dict[str, str]:
    """Sense key -> a readable class name: its WordNet gloss shortened, made unique with the sense's frequency
    rank ("(2)") or, failing that, the key; a key without a gloss is named by itself."""
    ranked = sorted(counts, key=lambda k: (-counts[k], k))
    names = {k: shorten(senses[k].gloss) if k in senses else k for k in ranked}
    seen = Counter(names.values())
    seen[OTHER] += 1
    for rank, k in enumerate(ranked, start=1):
        if seen[names[k]] > 1 and k in senses:
            suffix = f" ({rank})"
            names[k] = shorten(senses[k].gloss, SENSE_LABEL_CHARS - len(suffix)) + suffix
    if len(set(names.values()) | {OTHER}) < len(names) + 1:
        names = {k: f"{names[k]} [{k}]" for k in ranked}
    return names


def parse_wsd_spec(spec: str) -> tuple[str, str | None]:
    lemma = spec.split(":", 1)[1].strip().lower()
    pos = None
    m = re.fullmatch(r"(.+)[.%]([nvar])", lemma)
    if m:
        lemma, pos = m.group(1), m.group(2)
    lemma = "_".join(lemma.split())
    if not lemma:
        raise TaskError("wsd: needs a lemma after the colon, e.g. wsd:bank or wsd:run.v (a verb)")
    return lemma, pos


def wsd_lemmas(n: int = 10, *, semcor_dir: str | Path | None = None) -> list[str]:
    """The ``n`` lemmas with the most occurrences that make a ``wsd:`` task split by document (two or more
    senses with enough examples each, spread over enough documents), as specs: ``["say.v", "make.v", ...]``."""
    return list(_good_wsd_lemmas(open_semcor(semcor_dir)))[:n]


@lru_cache(maxsize=4)
def _good_wsd_lemmas(semcor: SemCor) -> tuple[str, ...]:
    by: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for lemma, entries in semcor.lemma_index().items():
        for i, tag in entries:
            if tag.pos.startswith("NNP"):
                continue
            pos = _TYPE_OF.get(tag.sense_key.split("%", 1)[-1][:1])
            if pos:
                by.setdefault((lemma, pos), []).append((tag.sense_key, semcor.sentences[i].document))
    good = []
    for (lemma, pos), items in by.items():
        counts = Counter(k for k, _ in items)
        if (len(items) >= WSD_MIN_OCCURRENCES and sum(c >= WSD_MIN_PER_SENSE for c in counts.values()) >= 2
                and len({d for _, d in items}) >= WSD_MIN_DOCUMENTS):
            good.append((len(items), f"{lemma}.{pos}"))
    good.sort(key=lambda x: (-x[0], x[1]))
    return tuple(spec for _, spec in good)


def _wsd_error(message: str, semcor: SemCor) -> TaskError:
    good = _good_wsd_lemmas(semcor)
    # the most frequent of each part of speech: the verbs alone would fill the list with be, have, say
    picks = [g for pos in "nvar" for g in [x for x in good if x.endswith("." + pos)][:3]]
    hint = f"lemmas that work: {', '.join('wsd:' + g for g in picks)}" if picks else \
        "this SemCor has no lemma with two senses of enough examples"
    return TaskError(f"{message}; {hint}")


def wsd_task(semcor: SemCor, senses: Mapping[str, Sense], lemma: str, pos: str | None) -> TaskData:
    index = semcor.lemma_index()
    name = f"wsd:{lemma}" + (f".{pos}" if pos else "")
    if lemma not in index:
        close = difflib.get_close_matches(lemma, list(index), n=4, cutoff=0.8)
        extra = f" (close: {', '.join(close)})" if close else ""
        raise _wsd_error(f"{lemma!r} is not a sense-tagged lemma in SemCor{extra}; give a dictionary form", semcor)
    found = semcor.occurrences(lemma, pos)
    if not found:
        what = f"as a {_WORDNET_POS[pos]}" if pos else "except as a named-entity class"
        raise _wsd_error(f"{lemma!r} has no tagged occurrences {what} in SemCor", semcor)
    counts = Counter(o.sense_key for o in found)
    kept = {k: c for k, c in counts.items() if c >= WSD_MIN_PER_SENSE}
    if len(found) < WSD_MIN_OCCURRENCES or len(kept) < 2:
        raise _wsd_error(
            f"{name} has {len(found)} tagged occurrences and {len(kept)} sense(s) with {WSD_MIN_PER_SENSE} or "
            f"more; a sense task needs {WSD_MIN_OCCURRENCES} occurrences and two such senses", semcor)
    names = _sense_names(Counter(kept), senses)
    folded = len(kept) < len(counts)
    labels = [names[k] for k in sorted(kept, key=lambda k: (-kept[k], k))] + ([OTHER] if folded else [])
    examples = []
    for o in found:
        s = semcor.sentences[o.sentence_index]
        examples.append(Example(tuple(s.words), names.get(o.sense_key, OTHER), s.document, o.word_index))
    documents = {ex.doc for ex in examples}
    by_document = len(documents) >= WSD_MIN_DOCUMENTS
    groups = [ex.doc for ex in examples] if by_document else [o.uid for o in found]
    # stratified by each document's most frequent sense, so the main senses reach dev and test when they can
    majority: dict[str, Counter] = {}
    for ex, g in zip(examples, groups, strict=True):
        majority.setdefault(g, Counter())[ex.label] += 1
    strata = {g: min(c.items(), key=lambda x: (-x[1], x[0]))[0] for g, c in majority.items()}
    what = f"the {_WORDNET_POS[pos]} " if pos else ""
    description = (
        f"Word-sense classification for {what}'{lemma}': given a SemCor sentence and which word in it is "
        f"'{lemma}', predict which of its WordNet senses is meant; each class is named by its sense's gloss. "
        f"{len(found)} tagged occurrences; senses with fewer than {WSD_MIN_PER_SENSE} are folded into 'other'"
        + (f" ({sum(counts[k] for k in counts if k not in kept)} occurrences)" if folded else " (none were)")
        + ". The words around the target are all a model has to go on: a static vector is the same for every "
        "sense, a contextual one need not be. "
        + ("Split by Brown file (80/10/10 of the occurrences, stratified by each file's main sense); with few "
           "occurrences, dev and test are small and their scores noisy." if by_document else
           f"The lemma occurs in only {len(documents)} Brown files, too few to split by file, so the split is by "
           "sentence: a test sentence can come from a text seen in training, which makes the test easier."))
    return assemble(name, "word", labels, examples, groups, description, SEMCOR_SOURCE + "; " + WORDNET_SOURCE,
                    "document" if by_document else "sentence", strata=strata)

