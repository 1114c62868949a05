"""Text handling shared by every model, trainer and analysis: words, sentences, inflections, corpus files.

* :func:`tokenize` / :func:`tokenize_with_offsets` — the project's one word tokenizer (punctuation split off,
  ``don't`` and ``drawing-room`` kept whole). The ELMo and static trainers cut their corpus with it and the
  analysis code cuts every sentence it feeds a model with it, so training and analysis see the same words.
* :func:`split_sentences` / :func:`sentences` / :func:`sentence_spans` — a sentence splitter good enough for
  novels.
* :func:`inflections` — a word's simple English inflections (bank -> banks, run -> ran, running).
* :func:`read_documents` / :func:`iter_paragraphs` — the plain-text corpus format (one paragraph a line, blank
  lines between documents), read whole or streamed.
"""

from __future__ import annotations

import hashlib
import os
import re
import select
import stat
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

# ----------------------------------------------------------------------------------------------------------
# tokenisation

# Letters, digits and underscore (\w), plus combining accents so that a decomposed "é" stays inside its word.
_WORD_CHAR = r"[\w\u0300-\u036F\u1AB0-\u1AFF\u1DC0-\u1DFF\u20D0-\u20FF\uFE20-\uFE2F]"
# Titles that end in a period but rarely end a sentence; keeping the period on them stops the sentence
# splitter from cutting "Mr. Dowling" in two.
_ABBREVIATIONS = ("Mr", "Mrs", "Ms", "Messrs", "Mme", "Mlle", "Dr", "St", "Jr", "Sr", "Prof", "Rev", "Capt", "Col",
                  "Gen", "Lt", "Hon")
TOKEN_PATTERN = re.compile(
    rf"(?:{'|'.join(_ABBREVIATIONS)})\.(?!{_WORD_CHAR})"  # Mr.  Mrs.  St.
    r"|\d+(?:[.,:]\d+)+"  # 1,000  3.14  10:30
    rf"|{_WORD_CHAR}+(?:['’\-]{_WORD_CHAR}+)*"  # words, with inner apostrophes and hyphens: don't, drawing-room
    r"|\S"  # anything else is a token of its own: punctuation, dashes, quotes, symbols, each emoji code point
)

_TERMINALS = frozenset(".!?")
_CLOSERS = frozenset("”’»)]}\"'")  # may follow the terminal inside the sentence: ."  ?)
_OPENERS = frozenset("“‘«([\"'")


def tokenize_with_offsets(text: str) -> list[tuple[str, int, int]]:
    """Words of ``text`` with their character spans ``(word, start, end)``; see :func:`tokenize`."""
    if not isinstance(text, str):
        raise ValueError(f"text must be a str, got {type(text).__name__}")
    return [(m.group(), m.start(), m.end()) for m in TOKEN_PATTERN.finditer(text)]


# the first character of a token that is a word (a title, a number, letters): after a space or at the start
_WORD_STARTS = re.compile(rf"(?<![^ ]){_WORD_CHAR}")


def word_count(tokens: Sequence[str]) -> int:
    """How many of ``tokens`` (words of :func:`tokenize`) are words, not punctuation marks or symbols."""
    return len(_WORD_STARTS.findall(" ".join(tokens)))


def tokenize(text: str) -> list[str]:
    """Split text into words the way the ELMo models of this project were trained.

    Rules, in order: a title with its period (``Mr.``, ``Mrs.``, ``St.``) is one token; a number with inner
    separators (``1,000``, ``3.14``) is one token; a run of letters/digits, joined by inner apostrophes or
    hyphens (``don't``, ``o’clock``, ``drawing-room``) is one token; every other non-space character
    (punctuation, dashes, quotes, symbols, each code point of an emoji) is a token of its own. Case is kept.
    """
    return [w for w, _, _ in tokenize_with_offsets(text)]


def split_sentences(tokens: Sequence[tuple[str, int, int]]) -> list[list[str]]:
    """Group the output of :func:`tokenize_with_offsets` into sentences.

    A sentence ends after ``.``, ``!`` or ``?`` (and any closing quotes or brackets right after them) when the
    next token starts with a capital letter or an opening quote. Good enough for novels; never loses a token.
    """
    return [[w for w, _, _ in tokens[a:b]] for a, b in sentence_token_ranges(tokens)]


def sentence_token_ranges(tokens: Sequence[tuple[str, int, int]]) -> list[tuple[int, int]]:
    """The sentences of :func:`split_sentences` as ``(first, end)`` token indices: ``tokens[first:end]``."""
    ranges: list[tuple[int, int]] = []
    first = 0
    i, n = 0, len(tokens)
    while i < n:
        word, _, end = tokens[i]
        i += 1
        if word not in _TERMINALS:
            continue
        while i < n and tokens[i][0] in _TERMINALS:  # "?!" and "..."
            end = tokens[i][2]
            i += 1
        # Closers belong to the sentence when they touch it: ."  but not the opening quote in ". "Go
        while i < n and tokens[i][0] in _CLOSERS and tokens[i][1] == end:
            end = tokens[i][2]
            i += 1
        if i == n or tokens[i][0][0].isupper() or tokens[i][0] in _OPENERS:
            ranges.append((first, i))
            first = i
    if first < n:
        ranges.append((first, n))
    return ranges


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Character spans ``(start, end)`` of the sentences of ``text`` (the rule of :func:`split_sentences`); each
    ``text[start:end]`` begins with its first word and ends with its last, so it needs no stripping."""
    tokens = tokenize_with_offsets(text)
    return [(tokens[a][1], tokens[b - 1][2]) for a, b in sentence_token_ranges(tokens)]


def sentences(text: str) -> list[list[str]]:
    """Tokenise ``text`` and split it into sentences (lists of words)."""
    return split_sentences(tokenize_with_offsets(text))


def tokenizer_fingerprint() -> str:
    """Changes whenever the tokenisation rules change, so a cache made with other rules is not reused."""
    rules = "\n".join([TOKEN_PATTERN.pattern, *("".join(sorted(chars)) for chars in (_TERMINALS, _CLOSERS, _OPENERS))])
    return hashlib.sha256(rules.encode()).hexdigest()[:16]


# ----------------------------------------------------------------------------------------------------------
# inflections
#
# A deliberately small rule set, not a morphological analyser: for a base form it adds the -s, -ed and -ing
# forms by the regular spelling rules, plus the forms of a short list of irregular verbs and nouns. It does
# not lemmatise regular forms ("banks" finds "banks" and its own regular forms, not "bank"), does not add
# comparatives (-er/-est would turn "play" into "player"). corpus_index.word_forms (the forms that the corpus
# index and find_occurrences look for) adds the possessive 's, which the word tokenizer keeps on the word ("bank's"
# is one word). A caller who needs more passes the forms explicitly:
# ``inflections=["run", "ran", ...]``.

_IRREGULAR_TABLE = """
be am is are was were been being | have has had having | do does did done doing | go goes went gone going
run ran | come came | become became | bear bore borne born | begin began begun | break broke broken
bring brought | buy bought | catch caught | choose chose chosen | draw drew drawn | drink drank drunk
drive drove driven | eat ate eaten | fall fell fallen | feel felt | fight fought | find found | fly flew flown
forget forgot forgotten | get got gotten | give gave given | grow grew grown | hang hung hanged | hear heard
hide hid hidden | hold held | keep kept | know knew known | lay laid | lead led | leave left | lend lent
lie lay lain lying lied | light lit lighted | lose lost | make made | mean meant | meet met | pay paid
ride rode ridden | ring rang rung | rise rose risen | say said | see saw seen | sell sold | send sent
shake shook shaken | shine shone | shoot shot | sing sang sung | sink sank sunk | sit sat | sleep slept
speak spoke spoken | spend spent | spring sprang sprung | stand stood | steal stole stolen | strike struck
swim swam swum | take took taken | teach taught | tear tore torn | tell told | think thought | throw threw thrown
wake woke woken | wear wore worn | win won | write wrote written | man men | woman women | child children
foot feet | tooth teeth | mouse mice | goose geese | person people | leaf leaves | life lives | knife knives
wife wives | wolf wolves | half halves
"""


def _irregular_groups() -> dict[str, list[tuple[str, ...]]]:
    """Every listed form -> the groups (lemma first) it belongs to; "lay" belongs to both lie and lay."""
    index: dict[str, list[tuple[str, ...]]] = {}
    for chunk in re.split(r"[|\n]", _IRREGULAR_TABLE):
        group = tuple(chunk.split())
        for form in group:
            index.setdefault(form, []).append(group)
    return index


_IRREGULAR = _irregular_groups()
_VOWELS = set("aeiou")


def _doubles_final_consonant(w: str) -> bool | None:
    """True: double (run -> running); False: do not; None: unsure (both spellings are generated)."""
    if len(w) < 3 or w[-1] in _VOWELS or w[-1] in "wxy" or w[-2] not in _VOWELS or w[-3] in _VOWELS:
        return False
    vowel_groups = len(re.findall(r"[aeiouy]+", w[:-1]))
    return True if vowel_groups == 1 else None  # one syllable: stop -> stopped; admit/visit: cannot tell


def _regular_forms(w: str, with_past: bool = True) -> set[str]:
    forms: set[str] = set()
    consonant_y = len(w) > 1 and w.endswith("y") and w[-2] not in _VOWELS
    # -s (plural / third person)
    if w.endswith(("s", "x", "z", "ch", "sh")):
        forms.add(w + "es")
    elif consonant_y:
        forms.add(w[:-1] + "ies")
    else:
        forms.add(w + "s")
        if w.endswith("o"):
            forms.add(w + "es")  # go -> goes, potato -> potatoes (pianos is covered by the line above)
    # -ing and -ed
    double = _doubles_final_consonant(w)
    stems = {w + w[-1]} if double else ({w, w + w[-1]} if double is None else {w})
    if w.endswith("ie"):
        forms.add(w[:-2] + "ying")
    elif w.endswith("e") and not w.endswith(("ee", "ye", "oe")):
        forms.add(w[:-1] + "ing")
    else:
        forms.update(s + "ing" for s in stems)
    if with_past:
        if w.endswith("e"):
            forms.add(w + "d")
        elif consonant_y:
            forms.add(w[:-1] + "ied")
        else:
            forms.update(s + "ed" for s in stems)
    return forms


def inflections(word: str) -> set[str]:
    """Simple English inflections of ``word`` (lower case), the word itself included.

    ``run`` -> {run, runs, ran, running}; ``bank`` -> {bank, banks, banked, banking}; ``ran`` -> the run group.
    A listed irregular form brings its whole group; "lay" brings both lie and lay, "saw" the forms of see.
    """
    w = word.strip().casefold()
    forms = {w}
    groups = _IRREGULAR.get(w, [])
    for group in groups:
        forms.update(group)
        # The table lists the past forms of an irregular lemma (and any irregular -s or -ing form); add the
        # regular -s and -ing forms only where it lists none.
        regular = _regular_forms(group[0], with_past=False)
        if not any(f.endswith("s") for f in group[1:]):
            forms.update(f for f in regular if f.endswith("s"))
        if not any(f.endswith("ing") for f in group[1:]):
            forms.update(f for f in regular if f.endswith("ing"))
    if not groups and w.isalpha():
        forms.update(_regular_forms(w))
    return forms


# ----------------------------------------------------------------------------------------------------------
# corpus files

Document = list[str]  # the paragraphs of one document, in order


class CorpusError(ValueError):
    """A corpus that cannot be used; the message names the file and says what to do."""


def read_cloze(path: str | Path) -> list[tuple[str, list[str]]]:
    """Cloze items, ``sentence<TAB>answer|answer…`` a line: the sentence has a [MASK]; any listed answer (lower-cased)
    counts. Blank lines are skipped; a malformed line is a CorpusError naming the file and line."""
    items = []
    for n, line in enumerate(read_text_file(path, "cloze file", pipes=False).splitlines(), 1):
        if not line.strip():
            continue
        sentence, _, answers = line.partition("\t")
        if "[MASK]" not in sentence or not answers.strip():
            raise CorpusError(f"{path}:{n}: expected 'sentence with [MASK]<TAB>answer|answer', got {line!r}")
        items.append((sentence, [a.strip().lower() for a in answers.split("|") if a.strip()]))
    return items


def read_documents(path: str | Path) -> list[Document]:
    """Read a corpus into documents: lists of paragraph lines, split at blank lines.

    Lines are stripped; runs of blank lines count as one separator. The file is decoded line by line, so a
    non-UTF-8 byte is reported with its line number, and memory stays close to the size of the text itself.
    """
    docs: list[Document] = []
    for document, _, paragraph in iter_paragraphs(path):
        if document == len(docs):
            docs.append([])
        docs[document].append(paragraph)
    return docs


def iter_paragraphs(path: str | Path, on_line: Callable[[bytes], None] | None = None) -> Iterator[tuple[int, int, str]]:
    """The paragraphs of a corpus one at a time, as ``(document, line, text)``: the 0-based document number,
    the 1-based line number in the file and the stripped line; the rules and errors of :func:`read_documents`.

    ``on_line`` sees every raw line (blank ones too) as read, for a caller that hashes the file or shows progress
    without reading it twice. The "empty corpus" error comes at the end, after the whole file was read.
    """
    path = Path(path)
    if not path.exists():
        raise CorpusError(f"{path}: corpus file not found")
    if not path.is_file():
        raise CorpusError(f"{path}: not a file (pass a plain-text corpus file with --corpus)")
    document, in_document = 0, False
    try:
        with open(path, "rb") as f:
            for lineno, raw in enumerate(f, start=1):
                if on_line is not None:
                    on_line(raw)
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as e:
                    raise CorpusError(
                        f"{path}: line {lineno} is not UTF-8 ({e.reason} at byte {e.start} of the line); "
                        "convert the file to UTF-8 first, e.g. `iconv -f latin1 -t utf-8`"
                    ) from None
                if lineno == 1:
                    line = line.lstrip("\ufeff")  # byte-order mark written by some editors
                if "\x00" in line:
                    raise CorpusError(f"{path}: line {lineno} holds a NUL byte: a binary file, not plain text")
                line = line.strip()
                if line:
                    in_document = True
                    yield document, lineno, line
                elif in_document:
                    document += 1
                    in_document = False
    except OSError as e:
        raise CorpusError(f"{path}: cannot read the corpus ({e.strerror or e})") from e
    if document == 0 and not in_document:
        raise CorpusError(f"{path}: the corpus is empty (no text lines); expected one paragraph a line")


MAX_TEXT_BYTES = 512 * 2**20  # a text file given to a command (sentences to embed): far more than anyone embeds
PIPE_WAIT_S = 60.0  # how long a named pipe may stay silent before it counts as having no writer


def read_text_file(path: str | Path, what: str = "input file", max_bytes: int = MAX_TEXT_BYTES,
                   pipes: bool = True) -> str:
    """The UTF-8 text of a file a user named: a regular file, or a pipe (``<(...)`` in a shell; refused with
    ``pipes=False``, for files a command finds by name or reads beside others).

    Anything else is refused with a :class:`CorpusError` naming the file and what is wrong: missing, a folder, a
    device (``/dev/zero`` would never end), larger than ``max_bytes``, not UTF-8 (with the line and the byte
    offset in the file), or binary (a NUL byte). A named pipe that nothing writes to is given up after
    :data:`PIPE_WAIT_S` seconds.
    """
    path = Path(path)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise CorpusError(f"{path}: {what} not found") from None
    except (OSError, ValueError) as e:
        raise CorpusError(f"{path}: cannot read the {what} ({getattr(e, 'strerror', None) or e})") from None
    if stat.S_ISDIR(mode):
        raise CorpusError(f"{path}: a folder, not a file; give the {what} itself")
    if stat.S_ISFIFO(mode) and not pipes:
        raise CorpusError(f"{path}: a named pipe (FIFO), not a file; give the {what} as a regular file")
    if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
        raise CorpusError(f"{path}: a device or socket, not a text file; give a plain-text {what}")
    try:
        data = _read_pipe(path, max_bytes) if stat.S_ISFIFO(mode) else _read_regular(path, max_bytes)
    except OSError as e:
        raise CorpusError(f"{path}: cannot read the {what} ({e.strerror or e})") from None
    if data is None:
        raise CorpusError(f"{path}: more than {max_bytes / 2**20:,.0f} MiB; too big for a {what}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise CorpusError(f"{path}: line {line} is not UTF-8 ({e.reason} at byte offset {e.start:,} of the file); "
                          "save the file as UTF-8") from None
    if "\x00" in text:
        line = text.count("\n", 0, text.index("\x00")) + 1
        raise CorpusError(f"{path}: line {line} holds a NUL byte: a binary file, not plain text")
    return text.removeprefix("\ufeff")


def _read_regular(path: Path, max_bytes: int) -> bytes | None:
    with open(path, "rb") as f:
        data = f.read(max_bytes + 1)
    return None if len(data) > max_bytes else data


def _read_pipe(path: Path, max_bytes: int) -> bytes | None:
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # does not wait for a writer
    try:
        ready, _, _ = select.select([fd], [], [], PIPE_WAIT_S)
        if not ready:
            raise CorpusError(f"{path}: a named pipe that nothing wrote to in {PIPE_WAIT_S:g} s")
        os.set_blocking(fd, True)
        chunks, total = [], 0
        while chunk := os.read(fd, 1 << 20):
            total += len(chunk)
            if total > max_bytes:
                return None
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)
