"""A model card (its README.md) as the Models page shows it: Markdown that Streamlit renders cleanly.

A card is written for GitHub, where an HTML comment (``<!-- measured: begin -->``) is hidden and a table may
have an empty header row. Streamlit's Markdown shows the comment as text (it escapes HTML) and draws the empty
header as a blank bar, so :func:`card_markdown` takes the comments out and turns a table whose header is empty
(a list of "name | value" rows) into a list of "**name**: value" lines, which wrap like text. Its headings move
two levels down (the card's title is not the page's). Code blocks are left as they are. Wide tables and long
code lines are the CSS's business (``app/kit/presentation.py``: they scroll or wrap inside the card). Images and
HTML are made inert last (``app/kit/inert_markdown.py``): showing a card makes the browser fetch nothing.
"""

from __future__ import annotations

import re

from app.kit.inert_markdown import inert_markdown

_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_CELL_SPLIT = re.compile(r"(?<!\\)\|")
_HEADING = re.compile(r"^(#{1,6})(?=\s)", re.MULTILINE)
_DELIMITER = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")


_FRONT_MATTER = re.compile(r"\A---[ \t]*\n.*?\n---[ \t]*(\n|\Z)", re.DOTALL)


def card_markdown(text: str) -> str:
    """``text`` (a model card) without its YAML front matter (the Hugging Face hub's metadata block: the Models page
    shows its licence itself) and HTML comments, with headerless tables as lists; code blocks kept; no image or
    HTML tag left (:func:`~app.kit.inert_markdown.inert_markdown`)."""
    text = _FRONT_MATTER.sub("", text, count=1)
    out: list[str] = []
    for fenced, chunk in _chunks(text):
        out.append(chunk if fenced else _HEADING.sub(_lower, _tables_without_empty_headers(_COMMENT.sub("", chunk))))
    return inert_markdown(re.sub(r"\n{3,}", "\n\n", "".join(out)).strip() + "\n")


def _lower(m: re.Match) -> str:
    return "#" * min(len(m.group(1)) + 2, 6)


def _chunks(text: str) -> list[tuple[bool, str]]:
    """``text`` cut into (inside a fenced code block?, text) pieces, each with its line ends."""
    chunks: list[tuple[bool, str]] = []
    fence, current = None, []
    for line in text.splitlines(keepends=True):
        m = _FENCE.match(line)
        if fence is None and m:
            chunks.append((False, "".join(current)))
            fence, current = m.group(1), [line]
        elif fence is not None and m and m.group(1) == fence:
            current.append(line)
            chunks.append((True, "".join(current)))
            fence, current = None, []
        else:
            current.append(line)
    chunks.append((fence is not None, "".join(current)))
    return [c for c in chunks if c[1]]


def _cells(line: str) -> list[str]:
    inner = line.strip()
    if inner.startswith("|"):
        inner = inner[1:]
    if inner.endswith("|") and not inner.endswith("\\|"):
        inner = inner[:-1]
    return [c.strip() for c in _CELL_SPLIT.split(inner)]


def _is_row(line: str) -> bool:
    return line.strip().startswith("|")


def _tables_without_empty_headers(text: str) -> str:
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        header_is_empty = (_is_row(line) and i + 1 < len(lines) and _DELIMITER.match(lines[i + 1])
                           and not any(_cells(line)))
        if not header_is_empty:
            out.append(line)
            i += 1
            continue
        i += 2
        rows = []
        while i < len(lines) and _is_row(lines[i]):
            rows.append(_cells(lines[i]))
            i += 1
        if out and out[-1].strip():
            out.append("")
        for cells in rows:
            name, rest = cells[0], [c for c in cells[1:] if c]
            out.append(f"- **{name}**: " + " · ".join(rest) if name else "- " + " · ".join(rest))
        if i < len(lines) and lines[i].strip():
            out.append("")
    return "\n".join(out)
