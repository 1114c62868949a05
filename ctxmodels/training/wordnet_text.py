"""Modern English training text from WordNet 3.0: every synset's words, definition and example sentences.

``ctxmodels wordnet-text WORDNET_DIR OUT.txt [--exclude CLOZE.tsv ...]`` (:func:`build_text`) reads Debian's
``wordnet-base`` database (``WORDNET_DIR/data.noun``, ``data.verb``, ``data.adj``, ``data.adv``; on Debian
``/usr/share/wordnet``) and writes a corpus in the format every trainer reads: one paragraph a line, a blank line
between documents. A paragraph is one synset ("depository financial institution, bank: a financial institution
that accepts deposits and channels the money into lending activities. He cashed a check at the bank."); a
document is one lexicographer file (noun.artifact, verb.motion, ...), so that neighbouring paragraphs share a
topic for next-sentence prediction.

Why WordNet: it is present-day English prose that installs here with no network (the novels are 1840-1920, and
SemCor's Brown text is what the sense figures are measured on; :mod:`.speeches_text` reads the other source, the
State of the Union addresses). Its examples show words in their everyday senses: "bank" beside deposits and
mortgages as well as rivers.

Evaluation items stay unseen: ``--exclude`` names cloze files (``sentence<TAB>answers``, the sentence holding
``[MASK]``); a paragraph is dropped when it contains, for any item and any answer, the answer with up to three
words before it ("money in the bank", "overflowed its banks"), compared as lower-case words. The output is
deterministic (synsets in file order), so the same database gives the same bytes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ..text import read_cloze

POS_FILES = ("noun", "verb", "adj", "adv")
#: WordNet's lexicographer files by number (lexnames(5WN)); a synset line names its file by this number
LEXNAMES = (
    "adj.all", "adj.pert", "adv.all", "noun.Tops", "noun.act", "noun.animal", "noun.artifact", "noun.attribute",
    "noun.body", "noun.cognition", "noun.communication", "noun.event", "noun.feeling", "noun.food", "noun.group",
    "noun.location", "noun.motive", "noun.object", "noun.person", "noun.phenomenon", "noun.plant",
    "noun.possession", "noun.process", "noun.quantity", "noun.relation", "noun.shape", "noun.state",
    "noun.substance", "noun.time", "verb.body", "verb.change", "verb.cognition", "verb.communication",
    "verb.competition", "verb.consumption", "verb.contact", "verb.creation", "verb.emotion", "verb.motion",
    "verb.perception", "verb.possession", "verb.social", "verb.stative", "verb.weather", "adj.ppl",
)
CONTEXT_WORDS = 3  # words before a cloze answer that, with it, make the phrase a paragraph may not contain
_QUOTED = re.compile(r'"([^"]*)"')
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_MARKER = re.compile(r"\((?:a|p|ip)\)$")  # adjective position markers: "galore(ip)"


class WordnetTextError(ValueError):
    """A database file is missing or a line cannot be read; the message names the file and line."""


@dataclass(frozen=True, slots=True)
class Synset:
    lexfile: str                 # "noun.group"-style name of its lexicographer file
    words: tuple[str, ...]       # ("depository financial institution", "bank", ...)
    definition: str
    examples: tuple[str, ...]

    def paragraph(self) -> str:
        """One line of training text: the words, the definition, each example as a sentence."""
        parts = [f"{', '.join(self.words)}: {_sentence(self.definition)}"]
        parts += [_sentence(e[:1].upper() + e[1:]) for e in self.examples]
        return " ".join(parts)


def _sentence(text: str) -> str:
    text = text.strip()
    return text if text[-1:] in ".!?" else text + "."


def parse_line(line: str, where: str) -> Synset:
    """One synset of a ``data.POS`` line: ``offset lexfile ss_type w_cnt word lex_id ... | gloss``."""
    head, sep, gloss = line.partition(" | ")
    fields = head.split()
    try:
        if not sep or len(fields) < 4:
            raise ValueError("no gloss")
        lexfile = LEXNAMES[int(fields[1])]
        n_words = int(fields[3], 16)
        words = tuple(_MARKER.sub("", w).replace("_", " ") for w in fields[4:4 + 2 * n_words:2])
        if len(words) != n_words or not n_words:
            raise ValueError("fewer words than its count")
    except (ValueError, IndexError) as e:
        raise WordnetTextError(f"{where}: not a WordNet data line ({e}); is this Debian's wordnet-base "
                               "database (data.noun, data.verb, ...)?") from None
    examples = tuple(e.strip() for e in _QUOTED.findall(gloss) if e.strip())
    definition = _QUOTED.sub("", gloss).replace(";  ;", ";").strip(" ;\n")
    return Synset(lexfile, words, definition, examples)


def read_synsets(wordnet_dir: str | Path) -> Iterator[Synset]:
    """Every synset of the four data files, in file order (the licence header lines start with spaces)."""
    root = Path(wordnet_dir)
    for pos in POS_FILES:
        path = root / f"data.{pos}"
        if not path.is_file():
            raise WordnetTextError(f"{path}: not found; install Debian's wordnet-base (apt-get install "
                                   "wordnet-base) and pass /usr/share/wordnet")
        with path.open(encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if line.strip() and not line.startswith(" "):
                    yield parse_line(line, f"{path}:{n}")


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def excluded_phrases(cloze_files: Iterable[str | Path]) -> set[tuple[str, ...]]:
    """For every item of the cloze files and each of its answers: the answer with the words before it."""
    phrases = set()
    for path in cloze_files:
        for sentence, answers in read_cloze(path):
            before = words(sentence.split("[MASK]", 1)[0])[-CONTEXT_WORDS:]
            phrases |= {tuple(before + words(a)) for a in answers if words(a)}
    return phrases


def holds_any(text: str, phrases: set[tuple[str, ...]], lengths: Iterable[int] | None = None) -> bool:
    """Whether the lower-case words of ``text`` contain one of ``phrases`` as consecutive words. ``lengths``, the
    phrases' lengths, spares a caller with a large set (every 8-word run of SemCor) recounting them per text."""
    ws = words(text)
    lengths = {len(p) for p in phrases} if lengths is None else lengths
    return any(tuple(ws[i:i + n]) in phrases for n in lengths for i in range(len(ws) - n + 1))


def build_text(wordnet_dir: str | Path, exclude: Iterable[str | Path] = ()) -> tuple[str, dict[str, int]]:
    """The corpus text and its counts (synsets, paragraphs dropped as evaluation items, documents, words)."""
    phrases = excluded_phrases(exclude)
    docs: dict[str, list[str]] = {}
    dropped = total = 0
    for synset in read_synsets(wordnet_dir):
        total += 1
        text = synset.paragraph()
        if holds_any(text, phrases):
            dropped += 1
            continue
        docs.setdefault(synset.lexfile, []).append(text)
    ordered = [docs[name] for name in LEXNAMES if name in docs]
    body = "\n\n".join("\n".join(d) for d in ordered) + "\n"
    counts = {"synsets": total, "dropped": dropped, "documents": len(ordered),
              "paragraphs": total - dropped, "words": len(body.split())}
    return body, counts
