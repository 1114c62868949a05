"""Presentation mode (``?present=1``): larger text, no sidebar and a denser page, for a projector.

At 1280×720 the first screen of a page must show its main figure, so in presentation mode

- the text grows (everything Streamlit sizes in rem) while the page's chrome shrinks: less padding above the title,
  a smaller title, tighter gaps between elements (:data:`PRESENTATION_CSS`);
- a page's inputs fold into a collapsed "Controls" expander (:func:`controls`; a plain container otherwise);
- the introduction under the title is cut to its first sentence (``app/kit/explanations.py``); the rest moves into
  the "What am I looking at?" box;
- a "Leave presentation" button sits in the top bar of every page (:func:`leave_button`), next to the
  navigation, and takes ``present`` off the URL.

Some styles hold in both modes (:data:`APP_CSS`): formulas scroll sideways rather than being cut off, wide tables
in a model card scroll, long code lines wrap. So does the figure-first layout: a page starts close under the top
bar, its inputs sit in a collapsed "Controls" expander that names the current settings (:func:`controls`), columns of
inputs wrap onto a new line rather than squeezing a label to a letter a line, and columns holding figures stack
when a window is too narrow for them side by side (at 900 px, a laptop's half screen).
"""

from __future__ import annotations

import streamlit as st

from app.kit.inputs import md
from app.kit.url_state import url_state, write

LEAVE_KEY = "leave_present"

# Both modes: nothing runs off the edge of the page.
APP_CSS = """
<style>
/* formulas: a wide one scrolls sideways instead of being cut off */
.katex-display { overflow-x: auto; overflow-y: hidden; padding: 0.1em 0; }
/* a model card: wide tables scroll inside the card, code wraps */
[class*="st-key-model_card"] table { display: block; overflow-x: auto; max-width: 100%; }
[class*="st-key-model_card"] pre, [class*="st-key-model_card"] pre code {
  white-space: pre-wrap !important; overflow-wrap: anywhere; word-break: break-word; }
[class*="st-key-model_card"] code { overflow-wrap: anywhere; }
/* a page link's label wraps instead of ending in an ellipsis */
[data-testid="stPageLink-NavLink"] span:not([data-testid="stIconMaterial"]),
[data-testid="stPageLink-NavLink"] [data-testid="stMarkdownContainer"],
[data-testid="stPageLink-NavLink"] [data-testid="stMarkdownContainer"] * {
  white-space: normal !important; overflow: visible !important; text-overflow: clip !important; }
/* the page starts close under the top bar (Streamlit's 6rem above the title pushed figures below the fold) */
[data-testid="stMainBlockContainer"] { padding-top: 3.2rem !important; padding-bottom: 3rem !important; }
h1 { font-size: 2.3rem !important; padding-top: 0.2rem !important; padding-bottom: 0.4rem !important; }
/* a narrow window (half a laptop's screen) keeps its width for the page */
@media (max-width: 1100px) { [data-testid="stMainBlockContainer"] {
  padding-left: 1.25rem !important; padding-right: 1.25rem !important; } }
/* inputs side by side wrap onto a new line rather than squeezing a label to a letter a line */
[class*="st-key-controls"] [data-testid="stHorizontalBlock"] { flex-wrap: wrap; }
[class*="st-key-controls"] [data-testid="stColumn"] { min-width: min(9.5rem, 100%); }
/* a divider between sections takes a line's height, not three */
hr { margin-top: 0.6rem !important; margin-bottom: 0.6rem !important; }
/* figures side by side stack when each would be narrower than a readable plot */
[data-testid="stHorizontalBlock"]:has(> [data-testid="stColumn"] .js-plotly-plot) { flex-wrap: wrap; }
[data-testid="stHorizontalBlock"]:has(> [data-testid="stColumn"] .js-plotly-plot) > [data-testid="stColumn"] {
  min-width: min(300px, 100%); }
/* a checkbox's or a toggle's label wraps in a narrow column, inside it rather than over the next one */
[data-testid="stCheckbox"] .stMarkdownEllipsis, [data-testid="stCheckbox"] .stMarkdownEllipsis p {
  white-space: normal !important; overflow: visible !important; text-overflow: clip !important; }
[data-testid="stCheckbox"] label { max-width: 100%; }
[data-testid="stCheckbox"] [data-testid="stWidgetLabel"] { min-width: 0; }
/* a glossary word: hover help (app/kit/glossary.py) */
abbr.gloss { text-decoration: underline dotted; text-underline-offset: 0.2em; cursor: help; }
</style>
"""

# Presentation mode only. Streamlit sizes its text in rem, so one font size on <html> grows everything together;
# Plotly sizes its text in px and grows in app/kit/plots.py. A component that draws in its own shadow root in px (the
# sentence box of Fill in the blank, st_keyup) cannot be reached by these styles: it grows by zoom.
PRESENTATION_CSS = """
<style>
html { font-size: 125%; }
section[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"] { display: none !important; }
/* the page starts right under the top bar, and the title is a heading, not a banner */
[data-testid="stMainBlockContainer"] { padding-top: 3.4rem !important; padding-bottom: 2rem !important;
  padding-left: 2rem !important; padding-right: 2rem !important; max-width: 100% !important; }
h1 { font-size: 1.9rem !important; padding-top: 0.2rem !important; padding-bottom: 0.35rem !important; }
h2 { font-size: 1.4rem !important; }
h3 { font-size: 1.2rem !important; }
[data-testid="stVerticalBlock"] { gap: 0.55rem; }
[data-testid="stMarkdownContainer"] p { margin-bottom: 0.3rem; }
[data-testid="stExpander"] summary { padding-top: 0.35rem; padding-bottom: 0.35rem; }
hr { margin-top: 0.4rem !important; margin-bottom: 0.4rem !important; }
/* a text box grows with the rest; a component drawing in px grows by zoom */
.stTextInput input, .stTextArea textarea { font-size: 1rem; }
[data-testid="stBidiComponentIsolated"] { zoom: 1.25; }
/* "Leave presentation": in the top bar, on every page, whatever the scroll */
.st-key-leave_present { position: fixed; top: 0.7rem; right: 3.2rem; z-index: 999991; width: auto !important; }
.st-key-leave_present button { font-size: 0.8rem; min-height: 2rem; padding: 0.15rem 0.7rem; }
/* a narrower window: the top bar needs its width for the pages (at 1280 they end 4 px before the button), so the
   button opens the page instead */
@media (max-width: 1279px) { .st-key-leave_present { position: static; } }
</style>
"""


def presenting() -> bool:
    """Presentation mode: on from ``?present=1`` for the whole session (page switches clear the URL)."""
    url_state("present", False, kind=bool)
    return bool(st.session_state["present"])


def is_presenting() -> bool:
    """Whether this session is in presentation mode (for code that runs after Home.py has read the URL)."""
    return bool(st.session_state.get("present"))


PRESENT_SCALE = 1.25  # the font size on <html> in PRESENTATION_CSS
TABLE_ROW_PX = 35  # a data grid's header and each of its rows at the normal font size (they grow with it)


def table_height(rows: int) -> int:
    """The height, in px, of a data grid that shows a header and ``rows`` rows without scrolling, in this mode."""
    scale = PRESENT_SCALE if is_presenting() else 1.0
    return round(TABLE_ROW_PX * scale * (rows + 1)) + 3


def start_presenting() -> None:
    st.session_state["present"] = bool(st.session_state.get("present_toggle"))


def stop_presenting() -> None:
    """Leave presentation mode: the session's state, the sidebar toggle and the URL."""
    st.session_state["present"] = False
    st.session_state["present_toggle"] = False
    st.query_params.pop("present", None)


def present_to_url() -> None:
    """``present=1`` in the URL while presenting (a copied link opens in the same mode); no parameter otherwise."""
    write("present", "1" if is_presenting() else None)


def leave_button() -> None:
    """The way out, on every page in presentation mode: a button pinned to the top bar (CSS above)."""
    with st.container(key=LEAVE_KEY):
        st.button("Leave presentation", key="leave_present_button", on_click=stop_presenting,
                  icon=":material/fullscreen_exit:", help="Leave presentation mode: back to the normal page, with the "
                                                          "sidebar.")


def controls(label: str = "Controls", summary: str = "", key: str = "controls"):
    """Where a page puts its inputs: a collapsed expander, in both modes, so the first screen shows the figure;
    ``summary``, the current settings in a few words, is written on it, so what is shown is said without opening
    it. Use as ``with controls(): ...`` or ``box = controls()``; the widgets inside keep their keys, values and URL
    parameters. ``key`` (starting with "controls") names the box for the styles that let its columns wrap."""
    title = f"{label}: {md(summary)}" if summary else label  # a visitor's words in it show as typed
    return st.expander(title, expanded=False, icon=":material/tune:", key=key)
