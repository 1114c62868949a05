"""Keyword in context: each occurrence of a word as a row (left context, the word, right context, its label), and
a CSV of such a table that is safe to open in a spreadsheet.

A spreadsheet runs a cell that starts with ``=``, ``+``, ``-`` or ``@`` as a formula, and sentences are whatever
a visitor typed or a corpus held: :func:`csv_bytes` defuses such cells as the OWASP advice on CSV injection says,
with a single quote in front.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from .vectors import OccurrenceSearch

ELLIPSIS = "…"
COLUMNS = ("occurrence", "left", "word", "right", "label")
FORMULA_STARTS = ("=", "+", "-", "@")  # what a spreadsheet reads as the start of a formula
CONTROL_STARTS = ("\t", "\r", "\n")  # a cell starting with these can carry one past a naive check

# Line breaks and tabs inside a sentence would break the one-line rows; each becomes one space, so the lengths
# (and the character spans of the occurrences) stay as they are.
_FLATTEN = str.maketrans({"\n": " ", "\r": " ", "\t": " ", "\v": " ", "\f": " "})


def _left(text: str, width: int) -> str:
    """The end of ``text`` nearest the word: at most ``width`` characters, cut at the start with "…"."""
    return text if len(text) <= width else ELLIPSIS + text[len(text) - width + 1:]


def _right(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + ELLIPSIS


def concordance(
    found: OccurrenceSearch,
    labels: Sequence[str | None] | None = None,
    width: int = 60,
    extra: dict[str, Sequence] | None = None,
    first: int = 0,
) -> pd.DataFrame:
    """One row per occurrence in ``found``: ``occurrence`` (its index, counted from ``first``: 1 where people
    read the numbers), ``left`` (the text before the word, its
    last ``width`` characters, "…" where cut), ``word`` (as written), ``right`` (the text after it, cut the same
    way at its end), ``label`` (``labels``, default the occurrences' own) and the ``extra`` columns (a document, a
    cluster: one value per occurrence).

    Nothing is padded or stripped: when nothing is cut, ``left + word + right`` is the sentence (with line breaks
    and tabs as spaces). Show ``left`` right-aligned so the words line up."""
    if not isinstance(width, (int, np.integer)) or isinstance(width, bool) or width < 1:
        raise ValueError(f"width must be a whole number of characters, at least 1, got {width!r}")
    n = len(found.occurrences)
    if labels is None:
        labels = [o.label for o in found.occurrences]
    elif len(labels) != n:
        raise ValueError(f"{len(labels)} labels for {n} occurrences: give one each (None: no label)")
    extra = dict(extra or {})
    for name, values in extra.items():
        if name in COLUMNS:
            raise ValueError(f"extra column {name!r} would replace a concordance column ({', '.join(COLUMNS)})")
        if len(values) != n:
            raise ValueError(f"extra column {name!r} has {len(values)} values for {n} occurrences")
    rows: dict[str, list] = {c: [] for c in COLUMNS}
    for i, o in enumerate(found.occurrences):
        text = o.sentence.translate(_FLATTEN)
        start, end = o.char_span
        rows["occurrence"].append(i + first)
        rows["left"].append(_left(text[:start], width))
        rows["word"].append(text[start:end])
        rows["right"].append(_right(text[end:], width))
        rows["label"].append(labels[i])
    table = pd.DataFrame(rows)
    table["label"] = pd.Series(rows["label"], dtype=object)  # a missing label stays None, not NaN
    for name, values in extra.items():
        table[name] = list(values)
    return table


def _defuse(cell: object) -> object:
    if isinstance(cell, str) and (cell.startswith(CONTROL_STARTS) or cell.lstrip(" ").startswith(FORMULA_STARTS)):
        return "'" + cell
    return cell


def csv_bytes(df: pd.DataFrame) -> bytes:
    """``df`` as UTF-8 CSV (with a byte-order mark, so that spreadsheets read it as UTF-8; CRLF line ends, as in
    RFC 4180), without its index.

    Text cells (and column names) that begin with ``= + - @``, also after spaces, or with a tab, carriage return
    or line feed get a ``'`` in front, so that a spreadsheet shows them instead of running them. Numbers are left
    alone: a negative number is not a formula."""
    safe = df.copy()
    for j in range(safe.shape[1]):  # by position: column names may repeat
        column = safe.iloc[:, j]
        if not pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column):
            safe.isetitem(j, column.map(_defuse))
    safe.columns = [_defuse(str(c)) for c in safe.columns]
    # RFC 4180 line ends: with them the csv writer also quotes a cell holding a lone carriage return, which
    # readers would otherwise take for the end of the row.
    return safe.to_csv(index=False, lineterminator="\r\n").encode("utf-8-sig")
