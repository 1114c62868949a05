"""What a visitor types: checked against limits (far above a classroom's needs, low enough that one visitor
cannot stall the server), and made inert wherever it is shown.

Anything a visitor controls (sentences, words, labels, model names, file names, query parameters, error
messages that quote them) goes through :func:`md` before it reaches an element that renders Markdown
(``st.markdown``, ``st.caption``, ``st.info``/``warning``/``error``, widget labels, radio and select-slider
options, ``st.metric`` labels, expander and tab labels, subheaders). Plotly renders a subset of HTML in its
text; the figure modules (``app/kit/figures.py``, each page's ``figures.py``) escape what they are given.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from typing import Any

import streamlit as st

from ctxmodels.analysis.vectors import parse_labelled
from ctxmodels.text import tokenize

MAX_SENTENCES = 400
MAX_WORDS_PER_SENTENCE = 300
MAX_CHARS_PER_SENTENCE = 3_000
MAX_TEXT_WORDS = 600  # fill-in and attention (BERT reads at most 512 pieces)
MAX_TEXT_CHARS = 6_000
MAX_MASKS = 20  # fill-in draws a figure per blank and model
MAX_WORD_CHARS = 100
MAX_SENTENCES_CHARS = MAX_SENTENCES * MAX_CHARS_PER_SENTENCE // 4  # the whole text area

# Every character that can start or close a Markdown construct anywhere in a line (CommonMark, GitHub's tables,
# strikethrough and autolinks, Streamlit's $math$ and :directives[...] / :material/icons:), and HTML's < > &.
# A backslash before ASCII punctuation always means the character itself.
_INLINE = re.compile(r"([\\`*_\[\]<>&~$:|#@/{}])")
# What makes a line a list item, quote, heading underline or ordered list when it starts one.
_LINE_START = re.compile(r"^([-+=>]|\d{1,9}(?=[.)](?:\s|$)))")
# GitHub-style autolinks (http://…, www.…, name@host) are found in the parsed text, after escapes are read: an
# invisible word joiner inside the address keeps them from forming.
_AUTOLINK = re.compile(r"(https?(?=://)|www(?=\.)|@)", re.IGNORECASE)
_JOINER = "\u2060"
_BREAKS = re.compile(r"\r\n|[\r\n\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")


def md(text: Any) -> str:
    """``text`` as Markdown that shows exactly these characters: no emphasis, link, image, HTML, math, directive,
    heading or list. Line breaks are kept as hard breaks (blank lines dropped), so the result fits in a line of
    a message or after a list bullet. Web and e-mail addresses get an invisible word joiner (U+2060) so they
    are not turned into links."""
    lines = []
    for line in _BREAKS.split(str(text)):
        line = line.strip()
        if not line:
            continue
        line = _INLINE.sub(r"\\\1", _AUTOLINK.sub(lambda m: m.group(1) + _JOINER, line))
        line = _LINE_START.sub(lambda m: m.group(1) + "\\" if m.group(1)[0].isdigit() else "\\" + m.group(1), line)
        lines.append(line)
    return "\\\n".join(lines)


def shorten(text: Any, limit: int = 60) -> str:
    """``text`` cut to ``limit`` characters (with …), control and invisible characters shown as their code: for
    quoting a visitor's input in a message."""
    s = str(text)
    s = s[:limit] + "…" if len(s) > limit else s
    return "".join(c if unicodedata.category(c)[0] != "C" else _code(c) for c in s)


def _code(c: str) -> str:
    n = ord(c)
    return f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}"


def quoted(text: Any, limit: int = 60) -> str:
    """A visitor's value quoted inside a message: shortened, control characters visible, Markdown inert."""
    return "“" + md(shorten(text, limit)) + "”"


def listing(items: Iterable[Any], limit: int = 15, total: int | None = None) -> str:
    """Markdown bullet lines of visitors' texts (inert), at most ``limit`` of them."""
    items = list(items)
    total = len(items) if total is None else total
    out = [f"- {md(shorten(s, 200)) or '(empty)'}" for s in items[:limit]]
    if total > limit:
        out.append(f"- … and {total - limit} more")
    return "\n".join(out)


def _has_words(text: str) -> bool:
    return bool(tokenize(text))


def _no_control_characters(text: str, what: str) -> None:
    """Refuse control characters (NUL, escape, …; tabs and line breaks are fine): they are not text, and the
    models' tokenizers would drop them silently."""
    bad = [c for c in text if unicodedata.category(c) == "Cc" and c not in "\t\n\r"]
    if bad:
        raise ValueError(f"{what} contains {len(bad)} control character(s) such as {shorten(bad[0])} (not text); "
                         "remove them")


def own_sentences(text: str) -> list[str]:
    """Lines of a text area as sentences (optionally ``sentence | label``), checked against the limits."""
    text = text or ""
    if len(text) > MAX_SENTENCES_CHARS:
        raise ValueError(f"the sentences have {len(text):,} characters; this page takes at most "
                         f"{MAX_SENTENCES_CHARS:,}")
    lines = [line.strip() for line in _BREAKS.split(text) if line.strip()]
    if not lines:
        raise ValueError("no sentences: type one sentence per line, each containing the target word "
                         "(optionally followed by | and a sense label)")
    if len(lines) > MAX_SENTENCES:
        raise ValueError(f"{len(lines)} sentences is more than this page takes ({MAX_SENTENCES}); use fewer")
    for i, line in enumerate(lines, 1):
        n = len(parse_labelled(line)[0].split())
        if n > MAX_WORDS_PER_SENTENCE:
            raise ValueError(f"sentence {i} has {n:,} words; sentences may have at most {MAX_WORDS_PER_SENTENCE} "
                             "(one sentence per line)")
        if len(line) > MAX_CHARS_PER_SENTENCE:
            raise ValueError(f"sentence {i} has {len(line):,} characters; sentences may have at most "
                             f"{MAX_CHARS_PER_SENTENCE:,} (one sentence per line)")
        _no_control_characters(line, f"sentence {i}")
    return lines


def check_word(word: str) -> str:
    """The target word of the Word senses page: one word, not too long."""
    word = (word or "").strip()
    if not word:
        raise ValueError("no target word: type the word to look for")
    if len(word) > MAX_WORD_CHARS:
        raise ValueError(f"the target word has {len(word):,} characters; at most {MAX_WORD_CHARS}")
    if len(word.split()) > 1:
        raise ValueError(f"the target must be one word, got {shorten(word)!r}")
    _no_control_characters(word, "the target word")
    if not _has_words(word):
        raise ValueError(f"the target {shorten(word)!r} has no letters or digits to look for")
    return word


def check_text(text: str, what: str = "text") -> str:
    """A single text for fill-in or attention: not empty, not too long, no control characters, some words."""
    text = (text or "").strip()
    if not text:
        raise ValueError(f"the {what} is empty: type a sentence")
    n = len(text.split())
    if n > MAX_TEXT_WORDS:
        raise ValueError(f"the {what} has {n:,} words; this page takes at most {MAX_TEXT_WORDS}")
    if len(text) > MAX_TEXT_CHARS:
        raise ValueError(f"the {what} has {len(text):,} characters; this page takes at most {MAX_TEXT_CHARS:,}")
    _no_control_characters(text, f"the {what}")
    if "[MASK]" not in text and not _has_words(text):
        raise ValueError(f"the {what} has no words (only spaces or invisible characters): type a sentence")
    return text


def check_masks(text: str) -> str:
    """A fill-in text: at most ``MAX_MASKS`` blanks (each one is a figure per model)."""
    n = text.count("[MASK]")
    if n > MAX_MASKS:
        raise ValueError(f"the sentence has {n:,} [MASK]s; this page fills in at most {MAX_MASKS} at once")
    return text


def remember(key: str, value: Any) -> None:
    """Keep ``value`` as this session's last input of ``key`` that worked (see :func:`last_good`)."""
    st.session_state[f"_good::{key}"] = value


def last_good(key: str) -> Any:
    """The last input of ``key`` that worked in this session, or None: a page shows its result under the message
    about the new input, so a typo does not wipe what was already computed."""
    return st.session_state.get(f"_good::{key}")
