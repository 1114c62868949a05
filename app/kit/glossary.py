"""The words a student meets on the pages, explained once, in ``glossary.md`` beside this module.

- :func:`gloss` gives the jargon in a page's own text hover help: the first time a word of the glossary appears in a
  text, it is underlined with dots and its explanation shows when the pointer rests on it;
- :func:`words_box` lists the glossary's words a text uses, with their explanations (in each page's "What am I
  looking at?" box, so a projector and a touch screen have them too);
- :func:`glossary_panel` is the whole glossary, in the sidebar.

Only the app's own words are glossed, never what a visitor typed (their text is shown escaped, as it is).
"""

from __future__ import annotations

import functools
import html
import re
from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from app.kit.text import unwrap

GLOSSARY = Path(__file__).with_name("glossary.md")
# Words so common on every page that underlining them would underline half the text: listed, not underlined.
LISTED_ONLY = {"vector", "layer", "sense", "attention", "accuracy", "contextual", "context-free", "seed", "cluster",
               "token", "attention head"}
# What is never glossed inside: code, formulas, links, HTML tags, bold labels of a list.
_KEEP = re.compile(r"(`[^`]*`|\$\$.*?\$\$|\$[^$\n]*\$|\[[^\]]*\]\([^)]*\)|<[^>]+>)", re.S)
_HEADING = re.compile(r"^## +(.+?)\s*$")


@dataclass(frozen=True)
class Term:
    name: str
    forms: tuple[str, ...]  # every spelling it is found under, the name first
    meaning: str


@functools.lru_cache(maxsize=1)
def terms() -> dict[str, Term]:
    """The glossary, by name, in the file's order."""
    out: dict[str, Term] = {}
    sections: list[tuple[str, list[str]]] = []
    for line in GLOSSARY.read_text(encoding="utf-8").splitlines():
        heading = _HEADING.match(line)
        if heading:
            sections.append((heading.group(1), []))
        elif sections:
            sections[-1][1].append(line)
    for name, lines in sections:
        also = [x.strip() for line in lines if line.startswith("also:") for x in line[5:].split(",") if x.strip()]
        meaning = unwrap([line for line in lines if not line.startswith("also:")])
        out[name] = Term(name, (name, *also), meaning)
    return out


@functools.lru_cache(maxsize=1)
def _pattern() -> tuple[re.Pattern, dict[str, str]]:
    """One pattern finding any form (longest first, so "scalar mix" wins over "mix"), and each form's term. A form
    with a capital (CKA, NaN) matches as written; others in any case."""
    owner: dict[str, str] = {}
    for t in terms().values():
        for form in t.forms:
            owner.setdefault(form.lower(), t.name)
    parts = []
    for form in sorted({f for t in terms().values() for f in t.forms}, key=len, reverse=True):
        body = re.escape(form)
        body = body if any(c.isupper() for c in form) else f"(?i:{body})"
        parts.append(rf"(?<![\w\-\[#]){body}(?![\w\-\]])")
    return re.compile("|".join(parts)), owner


def found(text: str) -> list[Term]:
    """The glossary's words that ``text`` uses (outside code, formulas and links), in the glossary's order."""
    pattern, owner = _pattern()
    names = {owner[m.group(0).lower()] for part in _prose(text) for m in pattern.finditer(part)}
    return [t for name, t in terms().items() if name in names]


def figure_words(fig) -> str:
    """A line naming the glossary's words a Plotly figure's titles use (its title, axis and legend titles and its
    annotations), each with hover help, as HTML; "" when it uses none. A figure's own text cannot carry a link or a
    hover of its own, so the page puts this line under it."""
    layout = fig.layout.to_plotly_json()
    texts = [str((layout.get("title") or {}).get("text") or ""),
             str(((layout.get("legend") or {}).get("title") or {}).get("text") or "")]
    for name, value in layout.items():
        if name.startswith(("xaxis", "yaxis")) and isinstance(value, dict):
            texts.append(str((value.get("title") or {}).get("text") or ""))
    texts += [str(a.get("text") or "") for a in layout.get("annotations") or ()]
    plain = re.sub(r"<[^>]+>", " ", " · ".join(texts))
    used = [t.name for t in found(plain) if t.name not in LISTED_ONLY]
    if not used:
        return ""
    return gloss("Words in this figure: " + ", ".join(used)) + " (hover one for what it means)"


def _prose(text: str) -> list[str]:
    return [part for i, part in enumerate(_KEEP.split(text)) if i % 2 == 0]


def gloss(text: str) -> str:
    """``text`` (the app's own Markdown) with the first use of each glossary word given hover help, as HTML: show
    it with ``unsafe_allow_html=True``."""
    pattern, owner = _pattern()
    done: set[str] = set()

    def mark(m: re.Match) -> str:
        name = owner[m.group(0).lower()]
        if name in done or name in LISTED_ONLY:
            return m.group(0)
        done.add(name)
        tip = html.escape(f"{name}: {_plain(terms()[name].meaning)}", quote=True)
        return f'<abbr class="gloss" title="{tip}">{m.group(0)}</abbr>'

    return "".join(part if i % 2 else pattern.sub(mark, part) for i, part in enumerate(_KEEP.split(text)))


def _plain(meaning: str) -> str:
    return re.sub(r"[*_`]", "", meaning)


def meaning(name: str) -> str:
    """What the glossary says ``name`` (any of its spellings) means; "" for a word it does not hold."""
    owner = _pattern()[1].get(name.lower())
    return terms()[owner].meaning if owner else ""


def words_lines(used: list[Term]) -> str:
    """The words, one Markdown list item each with what it means."""
    return "\n".join(f"- **{t.name}**: {t.meaning}" for t in used)


def words_box(text: str) -> None:
    """The glossary's words that ``text`` uses, under a small heading (nothing when it uses none)."""
    used = found(text)
    if used:
        st.markdown("**Words used here**\n\n" + words_lines(used))


@st.fragment
def glossary_panel() -> None:
    """The whole glossary, folded, where a visitor can look a word up from any page (the sidebar). Written only
    when opened (a fragment: opening it reruns this box alone), so a page's run does not carry it."""
    box = st.expander("Glossary: the words explained", icon=":material/menu_book:", key="glossary_open",
                      on_change="rerun")
    if box.open:
        with box:
            st.markdown(words_lines(list(terms().values())))
