"""Task datasets for fine-tuning: what a task head learns to predict, with fixed train/dev/test splits.

Four built-in tasks come from the data at hand, and a user's own task from a file:

* ``pos``: the coarse part of speech (NOUN, PROPN, VERB, ADJ, ADV) of every content word of a SemCor sentence.
* ``ner``: proper-name types (person, location, organisation) as BIO tags on every word of a SemCor sentence.
* ``wsd:LEMMA`` (``wsd:bank``, ``wsd:run.v``): which WordNet sense one word of a SemCor sentence has.
* ``period``: in which of ELTeC's four time slots a paragraph's novel was published.
* a ``.tsv`` file (``text<TAB>label``) for sentence classification or a CoNLL-style file (``word<TAB>label``)
  for token labelling.

Every split is by document (a Brown file, a novel's author, a user's ``# doc:`` block): no document gives examples
to two splits, so a test score says how well the task carries over to texts the model has not seen, not how well it
remembers a text's names and topics. Documents go to the splits in a fixed seeded order, each to the split that is
furthest below its share of the examples (80/10/10), so the same spec always gives the same split, whatever seed a
run uses; ``max_examples`` only samples inside the splits. :attr:`TaskData.documents` records them.

Everything here reads local files and is cached per process; the core's heads (``training``) and the app's
analysis read :class:`TaskData` and never parse these files themselves.
"""

from __future__ import annotations

import difflib
import random
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path

from .paths import data_dir
from .semcor import SemCor, SemcorError, coarse_pos, load_semcor, table_file
from .text import CorpusError, iter_paragraphs, sentence_token_ranges, tokenize, tokenize_with_offsets, word_count
from .wordnet import Sense, WordnetError, default_senses_path, load_senses, shorten


class TaskError(ValueError):
    """A task that cannot be built: unknown name, missing data, a malformed file. The message says what to do."""


KINDS = ("sentence", "token", "word")
SPLITS = ("train", "dev", "test")
FRACTIONS = (0.8, 0.1, 0.1)
SPLIT_SEED = 0  # built-in splits never move: scores from different runs are on the same test documents

SEMCOR_SOURCE = ("SemCor 3.0, sense-tagged Brown Corpus text (Princeton University; WordNet 3.0 licence), "
                 "converted from rubenIzquierdo/wsd_corpora")
WORDNET_SOURCE = "WordNet 3.0 glosses (Princeton University; WordNet 3.0 licence)"
ELTEC_SOURCE = "English Novel Corpus (ELTeC-eng), ed. Lou Burnard, v1.0.1, DOI 10.5281/zenodo.3533868"

BUILTIN_TASKS: dict[str, str] = {
    "pos": "part of speech (NOUN, PROPN, VERB, ADJ, ADV) of each content word, from SemCor (token labelling)",
    "ner": "proper-name type (person, location, organisation) of each word as BIO tags, from SemCor "
           "(token labelling)",
    "wsd:LEMMA": "which WordNet sense one word has, for one SemCor lemma, e.g. wsd:bank or wsd:run.v "
                 "(word classification)",
    "period": "in which time slot (1840-59, 1860-79, 1880-99, 1900-20) a paragraph's novel appeared, from the "
              "ELTeC novels (sentence classification)",
}


@dataclass(frozen=True)
class Example:
    """One example: a sentence (or paragraph) as words, and what is to be predicted from it."""

    words: tuple[str, ...]
    label: str | tuple[str, ...]    # sentence/word kind: one label; token kind: one per word, "" = not labelled
    doc: str                        # the document it comes from; a split never cuts through one
    target: int | None = None       # word kind: index in ``words`` of the word to classify


@dataclass
class TaskData:
    """A task's examples in three splits, its classes (a class id is its index in ``labels``) and its story."""

    name: str
    kind: str                       # "sentence" | "token" | "word"
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


# ----------------------------------------------------------------------------------------------------------
# splitting


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


def _assemble(name: str, kind: str, labels: Sequence[str], examples: list[Example], groups: Sequence[str],
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


def _capped(task: TaskData, max_examples: int | None, seed: int) -> TaskData:
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


# ----------------------------------------------------------------------------------------------------------
# SemCor: part of speech and proper names

POS_LABELS = ("NOUN", "PROPN", "VERB", "ADJ", "ADV")
ENTITY_TYPES = {"person": "PER", "location": "LOC", "group": "ORG"}   # SemCor's NNP "lemmas"
# WordNet lexicographer files of nouns that name people, places and groups: a capitalised name WordNet knows
# (Atlanta, Congress) is tagged NN in SemCor, with its own sense, instead of NNP.
_NAME_LEXFILES = {"18": "PER", "15": "LOC", "14": "ORG"}
# ...but a capitalised word for a member of a people, faith or party (Americans, Catholics, Republicans) or an
# office (the President) is not a person's name: CoNLL would not tag it PER either. WordNet's gloss says which.
_NOT_A_NAME = re.compile(r"^the person who holds|\b(natives?|inhabitants?|residents?|members?|peoples?|adherents?|"
                         r"nationality|descent|person with|person belonging|offensive)\b", re.IGNORECASE)
# brownv tags only the verbs: its untagged names and nouns would teach "O" and hide the other classes.
FULLY_TAGGED = ("brown1/", "brown2/")


def _semcor(semcor_dir: str | Path | None) -> SemCor:
    try:
        return load_semcor(semcor_dir)
    except SemcorError as e:
        raise TaskError(f"cannot read SemCor for the task: {e}") from e


def _senses(semcor_dir: str | Path | None, senses_path: str | Path | None) -> Mapping[str, Sense]:
    """The WordNet glosses: ``senses_path``; else beside a given SemCor folder (``DIR/senses.tsv``, as shipped,
    or ``DIR/../wordnet/senses.tsv``, as in the shared data); else the default."""
    if senses_path is None and semcor_dir is not None:
        for candidate in (table_file(semcor_dir, "senses"), table_file(Path(semcor_dir).parent / "wordnet", "senses")):
            if candidate.is_file():
                senses_path = candidate
                break
    try:
        return load_senses(senses_path if senses_path is not None else default_senses_path())
    except WordnetError as e:
        raise TaskError(f"cannot read the WordNet glosses for the task: {e}") from e


def _entity_type(word: str, tag, senses: Mapping[str, Sense]) -> str | None:
    if tag.pos.startswith("NNP"):
        return ENTITY_TYPES.get(tag.lemma.lower(), "MISC")
    if not tag.pos.startswith("NN") or not word[:1].isupper():
        return None
    sense = senses.get(tag.sense_key)
    if sense is None:
        return None
    lexfile = tag.sense_key.split("%", 1)[1].split(":")[1] if ":" in tag.sense_key else ""
    kind = _NAME_LEXFILES.get(lexfile)
    # a proper name: WordNet writes this lemma of the synset with a capital (Atlanta, not government)
    lemma = tag.lemma.lower()
    if not kind or not any(w.lower() == lemma and w[:1].isupper() for w in sense.lemmas):
        return None
    if kind == "PER" and (_NOT_A_NAME.search(sense.gloss[:80])
                          or word.lower().endswith("s") and not lemma.endswith("s")):  # Southerners: a group
        return None
    return kind


def _head_word(words: list[str], lemma: str, pos: str) -> int:
    """The word of a multi-word expression that carries its part of speech: a verb's first word (took place,
    give up), else the last (primary election, as good as)."""
    if len(words) == 1:
        return 0
    if pos == "VERB":
        stem = lemma.split("_")[0].lower()[:3]
        return next((i for i, w in enumerate(words) if w.lower().startswith(stem)), 0)
    return len(words) - 1


def _semcor_sentences(semcor: SemCor):
    for s in semcor.sentences:
        if s.uid.startswith(FULLY_TAGGED) and s.tags:
            yield s


def _pos_task(semcor: SemCor) -> TaskData:
    examples, groups = [], []
    for s in _semcor_sentences(semcor):
        labels = [""] * len(s.words)
        for i, tag in s.tags.items():
            start, end = s.spans[i]
            pos = coarse_pos(tag.pos)
            if pos == "PROPN":  # every word of a name is a proper noun
                labels[start:end] = [pos] * (end - start)
            else:  # "took place": the verb is "took"; the other words of the expression are left unlabelled
                labels[start + _head_word(s.words[start:end], tag.lemma, pos)] = pos
        examples.append(Example(tuple(s.words), tuple(labels), s.document))
        groups.append(s.document)
    if not examples:
        raise TaskError("SemCor has no tagged sentences in brown1/ or brown2/ (the fully tagged part); the pos "
                        "task needs them")
    description = (
        "Part-of-speech tagging: for every content word of a sentence, predict its coarse word class (NOUN, "
        "PROPN for proper names, VERB, ADJ, ADV). The tags are SemCor's (brown1 and brown2, where every content "
        "word is tagged); function words and punctuation carry no tag there and are not scored, and in a "
        "multi-word expression only its head word is ('took' in 'took place', 'election' in 'primary "
        "election'). SemCor's Penn tags are nearly coarse already, so the coarse names lose little and read "
        "better. A tagger needs the context: 'run', 'light' and 'fair' change class with it. Split by Brown "
        "file (80/10/10 of the sentences), so the test files are texts the model never saw in training.")
    present = set().union(*(set(ex.label) for ex in examples)) - {""}
    labels = [p for p in POS_LABELS if p in present] + sorted(present - set(POS_LABELS))
    return _assemble("pos", "token", labels, examples, groups, description, SEMCOR_SOURCE, "document")


def _ner_task(semcor: SemCor, senses: Mapping[str, Sense]) -> TaskData:
    examples, groups = [], []
    found: set[str] = set()
    for s in _semcor_sentences(semcor):
        labels = ["O"] * len(s.words)
        for i, tag in s.tags.items():
            kind = _entity_type(s.tokens[i], tag, senses)
            if kind is None:
                continue
            found.add(kind)
            start, end = s.spans[i]
            labels[start:end] = [f"B-{kind}"] + [f"I-{kind}"] * (end - start - 1)
        examples.append(Example(tuple(s.words), tuple(labels), s.document))
        groups.append(s.document)
    if not found:
        raise TaskError("SemCor has no proper names (NNP tags) in brown1/ or brown2/; the ner task needs them")
    kinds = ["PER", "LOC", "ORG"] + (["MISC"] if "MISC" in found else [])   # the three always: stable class ids
    labels = ["O"] + [f"{p}-{k}" for k in kinds for p in ("B", "I")]
    description = (
        "Proper-name tagging (a small NER): label every word of a sentence with B-TYPE (first word of a name), "
        "I-TYPE (a later word of the same name) or O (not part of a name), where TYPE is PER (a person), LOC (a "
        "place) or ORG (SemCor's 'group': organisations, institutions, teams). SemCor tags names as NNP with "
        "person / location / group as their lemma, and names WordNet knows (Atlanta, Congress) as nouns with a "
        "proper-name sense of a person, place or group, which count too. Every word gets a label: a tagger must "
        "also say where names are not, and in brown1/brown2 SemCor's annotators tagged every content word, so an "
        "untagged word is not a name. Multi-word names are one SemCor token (Fulton_County_Grand_Jury), split "
        "into words. Split by Brown file (80/10/10 of the sentences).")
    return _assemble("ner", "token", labels, examples, groups, description, SEMCOR_SOURCE + "; " + WORDNET_SOURCE,
                     "document")


# ----------------------------------------------------------------------------------------------------------
# SemCor: the senses of one lemma

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


def _parse_wsd(spec: str) -> tuple[str, str | None]:
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
    return list(_good_wsd_lemmas(_semcor(semcor_dir)))[:n]


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


def _wsd_task(semcor: SemCor, senses: Mapping[str, Sense], lemma: str, pos: str | None) -> TaskData:
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
    return _assemble(name, "word", labels, examples, groups, description, SEMCOR_SOURCE + "; " + WORDNET_SOURCE,
                     "document" if by_document else "sentence", strata=strata)


# ----------------------------------------------------------------------------------------------------------
# the novels: the period of a paragraph

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
    if not path.is_file():
        raise TaskError(f"{path}: the novels' metadata table is missing; the period task needs it beside the corpus "
                        "(file<TAB>blob<TAB>title<TAB>author<TAB>chars, one line per novel, as in the shared data)")
    novels = []
    for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), start=1):
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


@lru_cache(maxsize=2)
def _period_task(corpus: str, stamp: tuple) -> TaskData:
    path = Path(corpus)
    if not path.is_file():
        raise TaskError(f"{path}: the novels corpus is not there; the period task reads it (one paragraph a line, "
                        "a blank line between novels) with its metadata table beside it: put the shared data in "
                        "../shared/data (corpus/eltec-eng.txt) or set CTXMODELS_DATA to its folder")
    novels = _read_metadata(metadata_path(path))
    candidates: list[list[str]] = [[] for _ in novels]
    try:
        for doc, _, text in iter_paragraphs(path):
            if doc >= len(novels):
                raise TaskError(f"{path} has more novels (blank-line separated) than {metadata_path(path).name} "
                                f"lists ({len(novels)}); the two must be in the same order")
            if len(text.split()) >= PARAGRAPH_MIN_WORDS:  # a cheap first cut; words are counted properly below
                candidates[doc].append(text)
    except CorpusError as e:
        raise TaskError(str(e)) from e
    periods = [period_of(year) for _, year, _ in novels]
    per_period = Counter(periods)
    examples, groups = [], []
    for (novel, _, author), period, texts in zip(novels, periods, candidates, strict=True):
        quota = -(-PER_PERIOD // per_period[period])
        rng = random.Random(f"{SPLIT_SEED}:{novel}")
        order = rng.sample(range(len(texts)), len(texts))
        chosen = []
        for j in order:
            words = _paragraph_words(texts[j])
            if word_count(words) >= PARAGRAPH_MIN_WORDS:
                chosen.append((j, words))
                if len(chosen) == quota:
                    break
        for _, words in sorted(chosen):
            examples.append(Example(tuple(words), period, novel))
            groups.append(author)
    if len({ex.label for ex in examples}) < 2:
        raise TaskError(f"{path}: paragraphs of only one period found; the period task needs novels from two or more")
    by_author: dict[str, Counter] = {}
    for ex, g in zip(examples, groups, strict=True):
        by_author.setdefault(g, Counter())[ex.label] += 1
    strata = {g: c.most_common(1)[0][0] for g, c in by_author.items()}
    labels = [name for name, _, _ in PERIODS if name in set(periods)]
    description = (
        "Period classification: from one paragraph of a novel, predict in which of ELTeC's time slots the novel "
        "appeared (1840-59, 1860-79, 1880-99, 1900-20). Vocabulary, spelling and subjects drift over eighty "
        "years (railways, telegrams, motor-cars; 'shall' and 'whilst'), so one paragraph carries some signal, "
        "but many paragraphs could be from any decade: expect well above chance, far from perfect. The author "
        "would be impossible to learn with a split by novel, so the split keeps each author's novels together "
        "(no style carries over from training to test), stratified by period. Paragraphs of at least "
        f"{PARAGRAPH_MIN_WORDS} words, cut to whole sentences within {PARAGRAPH_MAX_TOKENS} tokens; each period "
        f"gets about {PER_PERIOD} paragraphs spread evenly over its novels (a seeded sample), so the classes are "
        "balanced and no novel dominates.")
    return _assemble("period", "sentence", labels, examples, groups, description, ELTEC_SOURCE, "author",
                     strata=strata)


# ----------------------------------------------------------------------------------------------------------
# a user's file

MAX_FILE_BYTES = 256 * 2**20
MAX_LINE_CHARS = 20_000       # one example a line: a sentence or paragraph, not a book
MAX_SENTENCE_WORDS = 1_000
MIN_USER_EXAMPLES = 10
NO_LABEL = "_"                # CoNLL-style files: a word without a label (not scored)


def _user_lines(path: str | Path, what: str) -> Iterable[tuple[int, str]]:
    path = Path(path)
    if not path.exists():
        raise TaskError(f"{path}: file not found (a task is pos, ner, wsd:LEMMA, period or a .tsv / CoNLL file)")
    if not path.is_file():
        raise TaskError(f"{path}: not a regular file; give a {what}")
    size = path.stat().st_size
    if size == 0:
        raise TaskError(f"{path}: the file is empty; a {what} has one example a line")
    if size > MAX_FILE_BYTES:
        raise TaskError(f"{path}: {size / 2**20:.0f} MB is more than the {MAX_FILE_BYTES // 2**20} MB a task file "
                        "may have; sample it down first")
    with path.open("rb") as f:
        for n, raw in enumerate(f, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise TaskError(f"{path}, line {n}: not UTF-8 ({e.reason} at byte {e.start}); convert the file, e.g. "
                                "`iconv -f latin1 -t utf-8`") from None
            if n == 1:
                line = line.lstrip("\ufeff")
            if "\x00" in line:
                raise TaskError(f"{path}, line {n}: a NUL byte: a binary file, not a {what}")
            line = line.rstrip("\r\n")
            if len(line) > MAX_LINE_CHARS:
                raise TaskError(f"{path}, line {n}: {len(line):,} characters, more than {MAX_LINE_CHARS:,}; an "
                                "example is a sentence or a paragraph: split long texts first")
            yield n, line


def _check_labels(path: Path, labels: Counter, n_examples: int, what: str) -> None:
    if len(labels) < 2:
        only = next(iter(labels), "")
        raise TaskError(f"{path}: every {what} has the label {only!r}; a classifier needs two or more classes")
    if len(labels) > 50 and len(labels) > n_examples // 2:
        raise TaskError(f"{path}: {len(labels):,} different labels for {n_examples:,} examples: the labels look like "
                        "text. Are the columns in the order text<TAB>label (word<TAB>label)?")


def read_tsv_task(path: str | Path, seed: int = SPLIT_SEED) -> TaskData:
    """A sentence-classification task from ``text<TAB>label`` lines (an optional third column names the example's
    document; then the split is by document). A first line ``text<TAB>label`` is a header and skipped. Without
    documents the split is by example, seeded with ``seed``."""
    path = Path(path)
    examples, groups = [], []
    columns: tuple[int, int] | None = None    # (number of columns, line that set it)
    for n, line in _user_lines(path, "text<TAB>label file"):
        if not line.strip():
            continue
        fields = line.split("\t")
        if n == 1 and [f.strip().lower() for f in fields[:2]] == ["text", "label"]:
            continue
        if len(fields) == 1:
            raise TaskError(f"{path}, line {n}: no tab; each line is text<TAB>label (a tab, not spaces, before the "
                            "label)")
        if len(fields) > 3:
            raise TaskError(f"{path}, line {n}: {len(fields)} tab-separated columns; expected text<TAB>label or "
                            "text<TAB>label<TAB>document (a tab inside the text? replace it with a space)")
        if columns is None:
            columns = (len(fields), n)
        elif len(fields) != columns[0]:
            raise TaskError(f"{path}, line {n}: {len(fields)} columns, but line {columns[1]} has {columns[0]}; every "
                            "line needs the same columns")
        text, label = fields[0], fields[1].strip()
        words = tokenize(text)
        if not words:
            raise TaskError(f"{path}, line {n}: the text is empty")
        if not label:
            raise TaskError(f"{path}, line {n}: the label is empty")
        doc = fields[2].strip() if len(fields) == 3 else ""
        if len(fields) == 3 and not doc:
            raise TaskError(f"{path}, line {n}: the document column is empty")
        examples.append(Example(tuple(words), label, doc or f"line {n}"))
        groups.append(doc or f"line {n}")
    return _user_task(path, "sentence", examples, groups, seed, by_document=columns is not None and columns[0] == 3)


def read_conll_task(path: str | Path, seed: int = SPLIT_SEED) -> TaskData:
    """A token-labelling task from a CoNLL-style file: ``word<TAB>label`` a line (several columns: the first is
    the word, the last the label, as in CoNLL-2003), a blank line between sentences. ``-DOCSTART-`` or
    ``# doc: ID`` starts a document (then the split is by document); other lines starting ``# `` are comments.
    A label ``_`` leaves the word unlabelled (not scored). Without documents the split is by sentence, seeded
    with ``seed``."""
    path = Path(path)
    examples: list[Example] = []
    groups: list[str] = []
    words: list[str] = []
    labels: list[str] = []
    columns: tuple[int, int] | None = None
    doc: str | None = None
    n_docs = 0
    start = 0

    def close() -> None:
        if words:
            if len(words) > MAX_SENTENCE_WORDS:
                raise TaskError(f"{path}, line {start}: a sentence of {len(words):,} words (more than "
                                f"{MAX_SENTENCE_WORDS:,}); is a blank line missing between sentences?")
            d = doc if doc is not None else f"sentence {len(examples) + 1}"
            examples.append(Example(tuple(words), tuple("" if x == NO_LABEL else x for x in labels), d))
            groups.append(d)
            words.clear()
            labels.clear()

    for n, line in _user_lines(path, "CoNLL-style word<TAB>label file"):
        stripped = line.strip()
        if not stripped:
            close()
            continue
        if stripped.startswith("# ") and "\t" not in line:
            m = re.match(r"#\s*doc(?:ument)?(?:_id)?\s*[:=]\s*(\S.*)$", stripped, re.IGNORECASE)
            if m:
                close()
                n_docs += 1
                doc = m.group(1).strip()
            continue
        fields = line.split("\t") if "\t" in line else stripped.split()
        if fields[0] == "-DOCSTART-":
            close()
            n_docs += 1
            doc = f"document {n_docs}"
            continue
        if len(fields) < 2:
            raise TaskError(f"{path}, line {n}: one column; each line is word<TAB>label, with a blank line between "
                            "sentences")
        if columns is None:
            columns = (len(fields), n)
        elif len(fields) != columns[0]:
            raise TaskError(f"{path}, line {n}: {len(fields)} columns, but line {columns[1]} has {columns[0]}; the "
                            "label is the last column, so every line needs the same columns")
        word, label = fields[0].strip(), fields[-1].strip()
        if not word or not label:
            raise TaskError(f"{path}, line {n}: empty {'word' if not word else 'label'} (use {NO_LABEL} for a word "
                            "without a label)")
        if " " in word:
            raise TaskError(f"{path}, line {n}: the word {word[:40]!r} holds a space; one word a line")
        if not words:
            start = n
        words.append(word)
        labels.append(label)
    close()
    return _user_task(path, "token", examples, groups, seed, by_document=n_docs >= 3)


def _user_task(path: Path, kind: str, examples: list[Example], groups: list[str], seed: int,
               by_document: bool) -> TaskData:
    unit = "example" if kind == "sentence" else "sentence"
    if len(examples) < MIN_USER_EXAMPLES:
        raise TaskError(f"{path}: {len(examples)} {unit}(s); a task needs at least {MIN_USER_EXAMPLES} to fill a "
                        "train, dev and test split")
    counts: Counter = Counter()
    for ex in examples:
        counts.update([ex.label] if kind == "sentence" else [x for x in ex.label if x])
    if not counts:
        raise TaskError(f"{path}: no word has a label (every label is {NO_LABEL}); label the words to learn")
    _check_labels(path, counts, len(examples), "example" if kind == "sentence" else "labelled word")
    labels = sorted(counts, key=lambda x: (-counts[x], x))
    if by_document and len(set(groups)) < 3:
        by_document = False
    if not by_document:
        groups = [f"{unit} {i}" for i in range(len(examples))]
    what = "sentence classification (one label per text)" if kind == "sentence" else \
        "token labelling (one label per word)"
    split = ("Split by the documents the file names (80/10/10 of the examples)." if by_document else
             f"The file names no documents (or fewer than three), so the split is by {unit}, seeded "
             f"(80/10/10): {unit}s from one text can be in training and test, which makes the test easier.")
    description = f"A user's task from {path.name}: {what}, {len(labels)} classes. {split}"
    return _assemble(path.stem, kind, labels, examples, groups, description, f"{path.name} (user file)",
                     "document" if by_document else unit, seed=seed)


def _looks_like_tsv(path: Path) -> bool:
    """A file of whole texts (a space inside the first column) rather than one word a line."""
    for i, (_, line) in enumerate(_user_lines(path, "task file")):
        if i >= 200:
            break
        if line.strip() and not line.startswith("# ") and " " in line.split("\t", 1)[0].strip() and "\t" in line:
            return True
    return False


# ----------------------------------------------------------------------------------------------------------
# the entry point


def _stamp(path: Path) -> tuple:
    try:
        st = path.stat()
        return (st.st_mtime_ns, st.st_size)
    except OSError:
        return ()


def load_task(spec: str, *, semcor_dir: str | Path | None = None, corpus: str | Path | None = None,
              max_examples: int | None = None, seed: int = 0, senses_path: str | Path | None = None) -> TaskData:
    """The task ``spec`` names: ``pos``, ``ner``, ``wsd:LEMMA`` (``wsd:bank``; ``wsd:run.v`` for one part of
    speech: n, v, a, r), ``period``, or the path of a ``.tsv`` file (``text<TAB>label``) or a CoNLL-style file
    (``word<TAB>label``; any other suffix is read as CoNLL unless its first column holds whole texts).

    ``semcor_dir`` and ``senses_path``: SemCor and the WordNet glosses (default: the shared data, else the copy in
    assets/semcor); ``corpus``: the novels (default ``$CTXMODELS_DATA/corpus/eltec-eng.txt``, its metadata table
    beside it). ``max_examples`` keeps at most that many examples in each split, a sample drawn with ``seed``;
    the splits themselves never depend on ``seed``. Built tasks are cached per process; each call returns its own
    lists. Raises :class:`TaskError` with what to do."""
    if not isinstance(spec, str) or not spec.strip():
        raise TaskError(f"no task named; choose one of {', '.join(BUILTIN_TASKS)} or give a .tsv / CoNLL file")
    spec = spec.strip()
    low = spec.lower()
    if low == "pos":
        semcor = _semcor(semcor_dir)
        task = _memo(("pos",), (semcor,), lambda: _pos_task(semcor))
    elif low == "ner":
        semcor, senses = _semcor(semcor_dir), _senses(semcor_dir, senses_path)
        task = _memo(("ner",), (semcor, senses), lambda: _ner_task(semcor, senses))
    elif low.startswith("wsd:"):
        lemma, pos = _parse_wsd(spec)
        semcor, senses = _semcor(semcor_dir), _senses(semcor_dir, senses_path)
        task = _memo(("wsd", lemma, pos), (semcor, senses), lambda: _wsd_task(semcor, senses, lemma, pos))
    elif low == "period":
        path = Path(corpus) if corpus is not None else default_corpus()
        task = _period_task(str(path.resolve()), (_stamp(path), _stamp(metadata_path(path))))
    else:
        path = Path(spec).expanduser()
        if not path.exists():
            raise TaskError(f"unknown task {spec!r} and no such file: choose one of "
                            + "; ".join(f"{k} ({v})" for k, v in BUILTIN_TASKS.items())
                            + "; or give the path of a text<TAB>label .tsv file or a CoNLL-style word<TAB>label file")
        task = _read_file_cached(str(path.resolve()), _stamp(path))
    return _capped(task, max_examples, seed)


# Tasks built from SemCor, by (task, the SemCor and glosses objects they were built from): load_semcor and
# load_senses hand out the same objects until their files change, so a changed file builds the task again.
_MEMO: dict[tuple, tuple[tuple, TaskData]] = {}
_MEMO_SIZE = 32


def _memo(key: tuple, sources: tuple, build) -> TaskData:
    full = key + tuple(id(x) for x in sources)
    hit = _MEMO.get(full)
    if hit is not None and all(a is b for a, b in zip(hit[0], sources, strict=True)):
        return hit[1]
    task = build()
    if len(_MEMO) >= _MEMO_SIZE:
        _MEMO.pop(next(iter(_MEMO)))
    _MEMO[full] = (sources, task)
    return task


@lru_cache(maxsize=8)
def _read_file_cached(path: str, stamp: tuple) -> TaskData:
    p = Path(path)
    if p.suffix.lower() == ".tsv" or (p.suffix.lower() not in (".conll", ".conllu", ".bio", ".iob", ".iob2")
                                      and p.is_file() and _looks_like_tsv(p)):
        return read_tsv_task(p)
    return read_conll_task(p)
