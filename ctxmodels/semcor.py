"""SemCor 3.0 (sense-tagged Brown corpus text) as two small tables.

The folder holds ``sentences.tsv`` (``sent_uid<TAB>tokens``, tokens separated by spaces, multi-word expressions
joined with ``_``) and ``tags.tsv`` (``sent_uid, tok_idx, word, lemma, pos, sense_keys, synsets``). ``tok_idx``
counts the space-separated tokens of the sentence from 0 (the shared data README says 1-based, but in the files
the word at ``tokens[tok_idx]`` is the tagged word; this reader checks that on every line).

The models read words, not multi-word expressions, so each token is split at ``_`` into words and every
sentence keeps ``spans``: token i covers ``words[start:end]``. A tagged multi-word expression is therefore a span
of several words; :attr:`Occurrence.word_index` names one word of it (the one that looks like the lemma, else the
last one, the head of most English compounds) for tools that need a single position.

SemCor tags only content words, and their part-of-speech tags are Penn tags from a small set (NN, NNP, VB, JJ,
RB, plus a handful of VBN/VBD/VBG/NNS). ``NNP`` marks named entities, whose "lemma" is the entity class
(person, group, location) rather than the word, so :meth:`SemCor.occurrences` leaves them out by default.
"""

from __future__ import annotations

import gzip
import zlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path


class SemcorError(ValueError):
    """The SemCor files are missing or malformed; the message names the file and line."""


# Penn tag -> coarse tag used by the part-of-speech probe (SemCor's Penn tags are nearly coarse already).
COARSE_POS = {"NN": "NOUN", "NNS": "NOUN", "NNP": "PROPN", "NNPS": "PROPN", "JJ": "ADJ", "JJR": "ADJ", "JJS": "ADJ",
              "RB": "ADV", "RBR": "ADV", "RBS": "ADV"}


def coarse_pos(penn: str) -> str:
    """NOUN, PROPN, VERB, ADJ or ADV for SemCor's Penn tags; any other tag is returned unchanged."""
    if penn.startswith("VB"):
        return "VERB"
    return COARSE_POS.get(penn, penn)


@dataclass(slots=True)
class Tag:
    """One sense-tagged token."""

    token_index: int
    word: str
    lemma: str
    pos: str                       # Penn tag as in the file
    sense_keys: tuple[str, ...]    # WordNet 3.0 sense keys, each complete ("lemma%ss_type:...")
    synsets: tuple[str, ...] = ()

    @property
    def sense_key(self) -> str:
        """The first sense key: SemCor lists several only where the annotators could not choose."""
        return self.sense_keys[0]


@dataclass(slots=True)
class Sentence:
    uid: str
    tokens: list[str]                      # as in the file; multi-word expressions joined with "_"
    words: list[str]                       # tokens split at "_": what the models read
    spans: list[tuple[int, int]]           # token i covers words[start:end]
    tags: dict[int, Tag] = field(default_factory=dict)   # token index -> tag

    @property
    def document(self) -> str:
        """The Brown file the sentence comes from, e.g. ``brown1/br-a01``."""
        return self.uid.rsplit(".s", 1)[0]

    @property
    def text(self) -> str:
        return " ".join(self.words)


@dataclass(frozen=True)
class Occurrence:
    """One tagged occurrence of a lemma, located in the sentence's ``words``."""

    sentence_index: int          # index into SemCor.sentences
    uid: str
    token_index: int
    word_start: int              # the tagged token covers words[word_start:word_end]
    word_end: int
    word_index: int              # one representative word of that span
    word: str
    lemma: str
    pos: str
    sense_key: str


def split_token(token: str) -> list[str]:
    """Split a multi-word expression at ``_``; a token made only of underscores stays whole."""
    parts = [p for p in token.split("_") if p]
    return parts or [token]


def _representative_word(words: list[str], lemma: str) -> int:
    """Index (within ``words``) of the word that stands for a multi-word span."""
    if len(words) == 1:
        return 0
    first = lemma.split("_")[-1].lower()
    for i in range(len(words) - 1, -1, -1):
        if words[i].lower().startswith(first[: max(3, len(first) - 2)]):
            return i
    return len(words) - 1


def make_sentence(uid: str, tokens: list[str]) -> Sentence:
    words: list[str] = []
    spans: list[tuple[int, int]] = []
    for token in tokens:
        parts = split_token(token) if "_" in token else [token]
        spans.append((len(words), len(words) + len(parts)))
        words.extend(parts)
    return Sentence(uid=uid, tokens=tokens, words=words, spans=spans)


def _expand_keys(field_: str) -> tuple[str, ...]:
    # "year%1:28:02::;1:28:01::" -> the second key lacks its lemma; give it the first key's.
    if ";" not in field_:
        return (field_,) if field_ else ()
    keys = [k for k in field_.split(";") if k]
    if not keys:
        return ()
    lemma = keys[0].split("%", 1)[0]
    return tuple(k if "%" in k else f"{lemma}%{k}" for k in keys)


def table_file(directory: str | Path, name: str) -> Path:
    """``directory/name.tsv``, else ``directory/name.tsv.gz`` when only that exists (the plain file wins, so an
    unpacked copy beside the packed one is what is read). Neither: the ``.tsv`` path, for the error message."""
    plain = Path(directory) / f"{name}.tsv"
    packed = plain.with_name(plain.name + ".gz")
    return packed if not plain.exists() and packed.exists() else plain


def table_size(path: str | Path) -> int | None:
    """The size of a table's text: the file's size, or for ``.gz`` the uncompressed size in its trailer, so a
    packed copy of a file has the same size as the file itself (probe caches use it). None if it is missing."""
    path = Path(path)
    if not path.is_file():
        return None
    size = path.stat().st_size
    if path.suffix != ".gz" or size < 18:  # 18: a gzip header and trailer, nothing inside
        return size
    with path.open("rb") as f:
        f.seek(-4, 2)
        return int.from_bytes(f.read(4), "little")  # ISIZE: the length mod 2**32; these tables are far smaller


def read_table(path: Path, header_first: str, error: type[ValueError], what: str) -> Iterator[tuple[int, list[str]]]:
    """Yield (line number, fields) of a TSV file, plain or gzipped (by its ``.gz`` suffix), skipping its header
    line (a first line whose first field is ``header_first``) and blank lines.

    Problems reading the file raise ``error`` naming the file; ``what`` says what the file belongs with, for the
    message when it is missing. Both kinds of file are read as text with universal newlines, so a table and its
    gzipped copy give the same lines.
    """
    try:
        f = gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else path.open(encoding="utf-8")
    except FileNotFoundError:
        raise error(f"{path}: file not found ({what})") from None
    except IsADirectoryError:
        raise error(f"{path}: a folder, not a file ({what})") from None
    with f:
        n = 0
        try:
            for n, line in enumerate(f, start=1):
                line = line.rstrip("\n").rstrip("\r")
                if not line.strip() or (n == 1 and line.split("\t", 1)[0] == header_first):
                    continue
                yield n, line.split("\t")
        except UnicodeDecodeError as e:
            raise error(f"{path}: not UTF-8 text ({e})") from e
        except (gzip.BadGzipFile, EOFError, zlib.error) as e:
            # a damaged or truncated download; the lines before it were fine
            raise error(f"{path}, after line {n}: not a readable gzip file ({e or type(e).__name__}); "
                        "replace it with a fresh copy") from e


def _lines(path: Path, header_first: str) -> Iterator[tuple[int, list[str]]]:
    return read_table(path, header_first, SemcorError, "a SemCor folder holds sentences.tsv and tags.tsv, "
                      "plain or gzipped")


class SemCor:
    """Sentences with their tagged tokens. Build with :meth:`load` (or :func:`load_semcor`, which caches)."""

    def __init__(self, sentences: list[Sentence], path: Path | None = None):
        self.sentences = sentences
        self.path = path
        self.index = {s.uid: i for i, s in enumerate(sentences)}
        self._by_lemma: dict[str, list[tuple[int, Tag]]] | None = None

    def __len__(self) -> int:
        return len(self.sentences)

    def __getitem__(self, uid: str) -> Sentence:
        return self.sentences[self.index[uid]]

    @classmethod
    def load(cls, directory: str | Path) -> SemCor:
        directory = Path(directory)
        if not directory.is_dir():
            raise SemcorError(f"{directory}: SemCor folder not found (expected sentences.tsv and tags.tsv in it, "
                              "or their .tsv.gz; the shared data has it at shared/data/semcor (or set "
                              "CTXMODELS_DATA), a compact copy ships in assets/semcor)")
        sentences = _read_sentences(table_file(directory, "sentences"))
        semcor = cls(sentences, directory)
        _read_tags(table_file(directory, "tags"), semcor)
        return semcor

    def tagged(self):
        """Yield (sentence index, sentence, tag) for every tagged token, in file order of the sentences."""
        for i, s in enumerate(self.sentences):
            for t in sorted(s.tags):
                yield i, s, s.tags[t]

    def lemma_index(self) -> dict[str, list[tuple[int, Tag]]]:
        """Lower-cased lemma -> [(sentence index, tag)] in corpus order; built once, on first use."""
        if self._by_lemma is None:
            self._by_lemma = {}
            for i, _, tag in self.tagged():
                self._by_lemma.setdefault(tag.lemma.lower(), []).append((i, tag))
        return self._by_lemma

    def occurrences(self, lemma: str, pos: str | None = None, include_named_entities: bool = False) -> list[Occurrence]:
        """Every tagged occurrence of ``lemma`` (case-insensitive) with its first sense key.

        ``pos`` filters by the sense key's WordNet type: "n", "v", "a" (adjectives, satellites included) or "r".
        """
        if pos is not None and pos not in ("n", "v", "a", "r"):
            raise ValueError(f"pos must be one of n, v, a, r (WordNet types), not {pos!r}")
        out = []
        for i, tag in self.lemma_index().get(lemma.lower(), []):
            s = self.sentences[i]
            if tag.pos.startswith("NNP") and not include_named_entities:
                continue
            if pos is not None and _wordnet_type(tag.sense_key) != pos:
                continue
            start, end = s.spans[tag.token_index]
            rep = start + _representative_word(s.words[start:end], tag.lemma)
            out.append(Occurrence(i, s.uid, tag.token_index, start, end, rep, tag.word, tag.lemma, tag.pos,
                                  tag.sense_key))
        return out

    def sense_counts(self, lemma: str, pos: str | None = None) -> Counter:
        return Counter(o.sense_key for o in self.occurrences(lemma, pos))

    def polysemous_lemmas(self, min_per_sense: int = 5, min_senses: int = 2, max_lemmas: int | None = None,
                          pos: str | None = None) -> list[tuple[str, dict[str, int]]]:
        """Lemmas with at least ``min_senses`` senses that each have ``min_per_sense`` tagged examples.

        Returns ``[(lemma, {sense_key: count})]`` with only the senses that pass, most examples first (ties by
        lemma). Named-entity tags are not counted.
        """
        if min_per_sense < 1 or min_senses < 1:
            raise ValueError("min_per_sense and min_senses must be at least 1")
        picked = []
        for lemma, entries in self.lemma_index().items():
            c = Counter(tag.sense_key for _, tag in entries if not tag.pos.startswith("NNP")
                        and (pos is None or _wordnet_type(tag.sense_key) == pos))
            kept = {k: n for k, n in c.most_common() if n >= min_per_sense}
            if len(kept) >= min_senses:
                picked.append((lemma, kept))
        picked.sort(key=lambda x: (-sum(x[1].values()), x[0]))
        return picked[:max_lemmas] if max_lemmas is not None else picked


def _wordnet_type(sense_key: str) -> str:
    # lemma%S:... with S = 1 noun, 2 verb, 3 adjective, 4 adverb, 5 adjective satellite
    try:
        return {"1": "n", "2": "v", "3": "a", "4": "r", "5": "a"}[sense_key.split("%", 1)[1][0]]
    except (IndexError, KeyError):
        return "?"


def _read_sentences(path: Path) -> list[Sentence]:
    sentences: list[Sentence] = []
    seen: dict[str, int] = {}
    for n, fields in _lines(path, "sent_uid"):
        if len(fields) != 2 or not fields[0] or not fields[1].strip():
            raise SemcorError(f"{path}, line {n}: expected 'sent_uid<TAB>tokens', found {len(fields)} field(s)")
        uid = fields[0]
        if uid in seen:
            raise SemcorError(f"{path}, line {n}: sentence {uid!r} already appeared on line {seen[uid]}")
        seen[uid] = n
        sentences.append(make_sentence(uid, fields[1].split()))
    if not sentences:
        raise SemcorError(f"{path}: no sentences")
    return sentences


def _read_tags(path: Path, semcor: SemCor) -> None:
    for n, fields in _lines(path, "sent_uid"):
        if len(fields) == 6:  # synsets column left off at the end of a line
            fields.append("")
        if len(fields) != 7:
            raise SemcorError(f"{path}, line {n}: expected 7 tab-separated fields (sent_uid, tok_idx, word, lemma, "
                              f"pos, sense_keys, synsets), found {len(fields)}")
        uid, idx, word, lemma, pos, keys, synsets = fields
        if uid not in semcor.index:
            raise SemcorError(f"{path}, line {n}: sentence {uid!r} is not in sentences.tsv")
        sentence = semcor[uid]
        try:
            i = int(idx)
        except ValueError:
            raise SemcorError(f"{path}, line {n}: tok_idx {idx!r} is not an integer") from None
        if not 0 <= i < len(sentence.tokens):
            raise SemcorError(f"{path}, line {n}: tok_idx {i} is outside sentence {uid!r} "
                              f"({len(sentence.tokens)} tokens, counted from 0)")
        if sentence.tokens[i] != word:
            raise SemcorError(f"{path}, line {n}: token {i} of {uid!r} is {sentence.tokens[i]!r}, "
                              f"but the tag is for {word!r} (tok_idx counts tokens from 0)")
        sense_keys = _expand_keys(keys)
        if not sense_keys or not lemma or not pos:
            raise SemcorError(f"{path}, line {n}: empty lemma, pos or sense_keys")
        if i in sentence.tags:
            raise SemcorError(f"{path}, line {n}: token {i} of {uid!r} is tagged twice")
        sentence.tags[i] = Tag(i, word, lemma, pos, sense_keys, tuple(s for s in synsets.split(";") if s))


def shipped_semcor_dir() -> Path:
    """The compact copy shipped with the project: ``assets/semcor`` (``$CTXMODELS_ASSETS/semcor``)."""
    from .paths import assets_dir

    return assets_dir() / "semcor"


def default_semcor_dir() -> Path:
    """``$CTXMODELS_DATA/semcor`` (by default ``../shared/data/semcor`` beside the checkout) when it holds SemCor,
    else the shipped copy :func:`shipped_semcor_dir` (same sentences and tags, gzipped), so the app and the
    probes work without the shared data."""
    from .paths import data_dir

    shared = data_dir() / "semcor"
    if table_file(shared, "sentences").is_file():
        return shared
    return shipped_semcor_dir()


def semcor_files(directory: str | Path) -> tuple[Path, Path]:
    """The sentences and tags files that :meth:`SemCor.load` reads in ``directory`` (plain, else gzipped)."""
    return table_file(directory, "sentences"), table_file(directory, "tags")


@lru_cache(maxsize=2)
def _load_cached(directory: str, stamp: tuple) -> SemCor:
    return SemCor.load(directory)


def load_semcor(directory: str | Path | None = None) -> SemCor:
    """Load SemCor once per process (reloaded if the files change). ``None``: :func:`default_semcor_dir`."""
    directory = Path(directory) if directory is not None else default_semcor_dir()
    stamp = tuple((str(p), p.stat().st_mtime_ns, p.stat().st_size) if p.is_file() else None
                  for p in semcor_files(directory))
    return _load_cached(str(directory.resolve()), stamp)
