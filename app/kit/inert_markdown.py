"""Markdown from a file (a model card) made safe to show to a room: nothing in it makes the browser fetch.

A card written for GitHub or the Hugging Face hub may hold images (``![alt](https://…)``, reference-style
``![alt][r]``, ``<img>``, ``<picture>``, badges) and other HTML (``<iframe>``, ``style="…url(…)"``). Shown as
written, each image is a request from every visitor's browser to a host outside the server (which learns who
opened the page, and when). :func:`inert_markdown` keeps the Markdown (headings, emphasis, lists, tables, links,
code) and takes out everything that fetches:

- an inline image or ``<img>`` becomes its alt text and its address as code (shown, never fetched);
- any other ``![`` (a reference-style or shortcut image, one the pattern above did not read) gets an invisible
  word joiner (U+2060) between ``!`` and ``[``, so it is at most a link, which goes somewhere only when clicked;
- HTML is escaped (``<`` as ``&lt;``), so a tag is shown as text; inside code, where ``<`` is already text, a word
  joiner after a ``<`` that could open a tag keeps it text even where HTML would be rendered.

Code is otherwise left as written: a block fenced from the line's start exactly, while inline spans and indented
fences (which a list item around them may end early) get the last two, invisible, steps, so the result is safe
even where a renderer would not read them as code. Text a visitor typed
is not Markdown at all: it goes through ``app.kit.inputs.md``, which makes every character inert.
"""

from __future__ import annotations

import html
import re

_JOINER = "\u2060"
_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}(?=[^`]*$)|~{3,})")
# An inline image: alt text with at most one level of brackets, an address (<…> or without spaces, with balanced
# parentheses) and an optional title.
_IMAGE = re.compile(r"""!\[((?:[^\[\]\\]|\\.|\[[^\[\]]*\])*)\]\(\s*(<[^<>\n]*>|(?:[^\s()]|\([^\s()]*\))*)"""
                    r"""(?:\s+(?:"[^"]*"|'[^']*'|\([^()]*\)))?\s*\)""")
_IMG_TAG = re.compile(r"<img\b[^>]*>", re.IGNORECASE)
_ATTRIBUTE = re.compile(r"""\b(src|alt)\s*=\s*("[^"]*"|'[^']*'|[^\s>]+)""", re.IGNORECASE)
_CODE_SPAN = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)", re.DOTALL)
_TAG_START = re.compile(r"<(?=[A-Za-z/!?])")


def inert_markdown(text: str) -> str:
    """``text`` (Markdown from a file) with no image, HTML tag or other fetch left in it: see the module's
    docstring. Links stay links; code stays code."""
    out = []
    for fenced, chunk in _fenced_chunks(text):
        # A fence at the line's start is code whatever comes before it; one indented may be inside a list item,
        # which can end before the fence does, so its lines get the (invisible) joiners in case they are prose.
        certain = fenced and not chunk.startswith(" ")
        out.append(chunk if certain else _joined(chunk if fenced else _outside_code_blocks(chunk)))
    return "".join(out)


def _joined(text: str) -> str:
    return _TAG_START.sub("<" + _JOINER, text.replace("![", "!" + _JOINER + "["))


def _outside_code_blocks(text: str) -> str:
    pieces, last = [], 0
    for span in _CODE_SPAN.finditer(text):
        pieces += [_prose(text[last:span.start()]), span.group(0)]
        last = span.end()
    return "".join(pieces + [_prose(text[last:])])


def _prose(text: str) -> str:
    text = _IMAGE.sub(lambda m: _shown(m.group(1), m.group(2).strip("<>")), text)
    text = _IMG_TAG.sub(_img_tag, text)
    return text.replace("<", "&lt;")


def _img_tag(m: re.Match) -> str:
    attributes = {k.lower(): html.unescape(v.strip("\"'")) for k, v in _ATTRIBUTE.findall(m.group(0))}
    return _shown(attributes.get("alt", ""), attributes.get("src", ""))


def _shown(alt: str, address: str) -> str:
    """An image as text: its alt text (or "image") and its address as code, which no renderer links."""
    alt = " ".join(alt.split()) or "image"
    if not address:
        return alt
    ticks = "`" * (max((len(r) for r in re.findall(r"`+", address)), default=0) + 1)
    return f"{alt} (image: {ticks} {address} {ticks})"


def _fenced_chunks(text: str) -> list[tuple[bool, str]]:
    """``text`` cut into (inside a fenced code block?, text) pieces, each with its line ends."""
    chunks: list[tuple[bool, str]] = []
    fence, current = "", []
    for line in text.splitlines(keepends=True):
        m = _FENCE_OPEN.match(line)
        if not fence and m:
            chunks.append((False, "".join(current)))
            fence, current = m.group(1), [line]
        elif fence and m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) \
                and not line.strip().strip(fence[0]):
            chunks.append((True, "".join(current + [line])))
            fence, current = "", []
        else:
            current.append(line)
    chunks.append((bool(fence), "".join(current)))
    return [c for c in chunks if c[1]]
