"""What a visitor types: checked against limits (far above a classroom's needs, low enough that one visitor
cannot stall the server), and escaped where it is shown as Markdown."""

from __future__ import annotations

import html

from ctxmodels.analysis.vectors import parse_labelled

MAX_SENTENCES = 400
MAX_WORDS_PER_SENTENCE = 300
MAX_TEXT_WORDS = 600  # fill-in and attention (BERT reads at most 512 pieces)


def own_sentences(text: str) -> list[str]:
    """Lines of a text area as sentences (optionally ``sentence | label``), checked against the limits."""
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    if not lines:
        raise ValueError("no sentences: type one sentence per line, each containing the target word "
                         "(optionally followed by `| sense label`)")
    if len(lines) > MAX_SENTENCES:
        raise ValueError(f"{len(lines)} sentences is more than this page takes ({MAX_SENTENCES}); use fewer")
    for i, line in enumerate(lines, 1):
        n = len(parse_labelled(line)[0].split())
        if n > MAX_WORDS_PER_SENTENCE:
            raise ValueError(f"sentence {i} has {n:,} words; sentences may have at most {MAX_WORDS_PER_SENTENCE} "
                             "(one sentence per line)")
    return lines


def check_text(text: str, what: str = "text") -> str:
    """A single text for fill-in or attention: not empty, not too long."""
    text = (text or "").strip()
    if not text:
        raise ValueError(f"the {what} is empty: type a sentence")
    n = len(text.split())
    if n > MAX_TEXT_WORDS:
        raise ValueError(f"the {what} has {n:,} words; this page takes at most {MAX_TEXT_WORDS}")
    return text


def escape(text: str) -> str:
    """``text`` with the characters HTML gives a meaning to (``<``, ``>``, ``&``, quotes) escaped."""
    return html.escape(text)
