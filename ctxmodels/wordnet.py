"""WordNet 3.0 glosses for SemCor's sense keys: what a sense means, in words a student can read.

``senses.tsv`` (plain or gzipped) has a header line and one row per sense key:
``sense_key<TAB>synset<TAB>lemmas<TAB>gloss<TAB>examples``. ``synset`` is written like SemCor's ``synsets``
column (``eng30-OFFSET-p``), ``lemmas`` are the synset's words separated by commas, ``examples`` WordNet's
example phrases separated by `` | `` (the column may be empty). The shared data has it at
``shared/data/wordnet/senses.tsv``; a copy holding the senses SemCor uses ships in ``assets/semcor``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .semcor import read_table, table_file

COLUMNS = ("sense_key", "synset", "lemmas", "gloss", "examples")


class WordnetError(ValueError):
    """The senses file is missing or malformed; the message names the file and line."""


@dataclass(frozen=True, slots=True)
class Sense:
    """One WordNet sense key with its synset's gloss."""

    sense_key: str                 # "bank%1:17:01::"
    synset: str                    # "eng30-09213565-n"
    lemmas: tuple[str, ...]        # the synset's words ("depository_financial_institution", "bank", ...)
    gloss: str
    examples: tuple[str, ...] = ()

    @property
    def lemma(self) -> str:
        """The lemma the key belongs to (the part before ``%``)."""
        return self.sense_key.split("%", 1)[0]


def read_senses(path: str | Path) -> dict[str, Sense]:
    """All rows of a senses file, by sense key, in file order. Malformed rows raise :class:`WordnetError`."""
    path = Path(path)
    senses: dict[str, Sense] = {}
    lines: dict[str, int] = {}
    for n, fields in read_table(path, COLUMNS[0], WordnetError, "a WordNet senses table, "
                                "sense_key<TAB>synset<TAB>lemmas<TAB>gloss<TAB>examples"):
        if len(fields) == 4:  # the examples column left off at the end of a line: no examples
            fields.append("")
        if len(fields) != len(COLUMNS):
            raise WordnetError(f"{path}, line {n}: expected {len(COLUMNS)} tab-separated fields "
                               f"({', '.join(COLUMNS)}), found {len(fields)}")
        key, synset, lemmas, gloss, examples = (f.strip() for f in fields)
        if "%" not in key or not key.split("%", 1)[0]:
            raise WordnetError(f"{path}, line {n}: {key!r} is not a WordNet sense key (lemma%ss_type:...)")
        if not gloss:
            raise WordnetError(f"{path}, line {n}: sense {key!r} has an empty gloss")
        if key in senses:
            raise WordnetError(f"{path}, line {n}: sense {key!r} already appeared on line {lines[key]}")
        lines[key] = n
        senses[key] = Sense(key, synset, tuple(w for w in lemmas.split(",") if w),
                            gloss, tuple(e.strip() for e in examples.split(" | ") if e.strip()))
    if not senses:
        raise WordnetError(f"{path}: no senses")
    return senses


def shipped_senses_path() -> Path:
    """The copy shipped with the project: ``assets/semcor/senses.tsv.gz`` (``$CTXMODELS_ASSETS/semcor``)."""
    from .paths import assets_dir

    return assets_dir() / "semcor" / "senses.tsv.gz"


def default_senses_path() -> Path:
    """``$CTXMODELS_DATA/wordnet/senses.tsv`` (or ``.tsv.gz``; by default in ``../shared/data`` beside the
    checkout) when present, else the shipped copy :func:`shipped_senses_path`."""
    from .paths import data_dir

    shared = table_file(data_dir() / "wordnet", "senses")
    return shared if shared.is_file() else shipped_senses_path()


@lru_cache(maxsize=2)
def _load_cached(path: str, stamp: tuple[int, int] | None) -> dict[str, Sense]:
    return read_senses(path)


def load_senses(path: str | Path | None = None) -> dict[str, Sense]:
    """The senses file read once per process (read again when its modification time or size changes).
    ``None``: :func:`default_senses_path`. The dict is shared between callers: do not change it."""
    path = Path(path) if path is not None else default_senses_path()
    try:
        st = path.stat()
        stamp: tuple[int, int] | None = (st.st_mtime_ns, st.st_size)
    except OSError:
        stamp = None  # read_senses says what is wrong
    return _load_cached(str(path.resolve()), stamp)


def shorten(text: str, limit: int = 60) -> str:
    """``text`` if it fits in ``limit`` characters, else cut at the last word boundary that leaves room for "…"
    (mid-word only when the first word alone is too long): how a gloss becomes a legend entry or a class name."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit)   # a space at index <= limit - 1: the words before it and "…" fit
    head = text[:cut].rstrip(" ,;:-(") if cut > 0 else ""
    return (head or text[: limit - 1]) + "…"
