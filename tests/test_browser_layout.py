"""The figure first: every page, as the shipped models draw it, opens with its main figure on the first screen of a
1280×720 window, in normal and in presentation mode; at 900 px wide (half a laptop's screen) its figures stay wide
enough to read and its controls' labels are not squeezed to a letter a line. Screenshots of each view go to
``test-artifacts/`` for a person to look at."""

from __future__ import annotations

import pytest

from tests import test_browser
from tests.test_browser import ARTIFACTS, no_traceback, settle

pytestmark = [pytest.mark.browser, pytest.mark.slow]

browser = test_browser.browser  # the one Chromium fixture of the browser tests
shipped_server = test_browser.shipped_server  # the app as the README's run command starts it

# Each page as a teacher opens it (the Overview with its Try it on, a Lesson step with its answer shown), and what
# its main figure is: the first Plotly figure, or the Models page's table of models.
VIEWS = {"overview": "try=1", "lesson": "step=1&reveal=1", "word_senses": "projection=pca", "elmo_layers": "",
         "attention": "", "fine_tuning": "", "fill_in": "", "how_they_learn": "", "models": ""}
MAIN = {"models": '[data-testid="stDataFrame"]'}
FIGURE = ".js-plotly-plot"
# The main figure starts in the upper part of the first screen: 30% of the screen or more shows it unscrolled.
TOP_SHARE = 0.7

FIRST_TOP = """(sel) => { const tops = Array.from(document.querySelectorAll(sel)).filter(e => e.offsetParent !== null)
  .map(e => e.getBoundingClientRect().top); return tops.length ? Math.min(...tops) : null; }"""


def open_view(page, server: str, name: str, present: bool) -> None:
    query = "&".join(q for q in (VIEWS[name], "present=1" if present else "") if q)
    page.goto(f"{server}/{name}" + (f"?{query}" if query else ""))
    page.wait_for_selector(MAIN.get(name, FIGURE), timeout=240_000)
    settle(page, 240)
    no_traceback(page)


@pytest.mark.parametrize("present", [False, True], ids=["normal", "present"])
def test_every_page_opens_on_its_main_figure_at_1280x720(shipped_server, browser, present):
    mode = "present" if present else "normal"
    tops = {}
    for name in VIEWS:
        context = browser.new_context(viewport={"width": 1280, "height": 720})  # a fresh visitor per page
        page = context.new_page()
        open_view(page, shipped_server, name, present)
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"first-screen-{name}-{mode}-1280.png"))
        tops[name] = page.evaluate(FIRST_TOP, MAIN.get(name, FIGURE))
        context.close()
    low = {name: top for name, top in tops.items() if top is None or not 0 <= top <= TOP_SHARE * 720}
    assert not low, f"main figure not on the first screen ({mode}, top in px): {low} of {tops}"


NARROW = ["word_senses", "attention", "fill_in", "fine_tuning", "overview", "lesson", "how_they_learn"]
# each shown widget label and the number of lines it wraps to (a label squeezed to a letter a line takes as many
# lines as it has letters)
LABELS = """() => Array.from(document.querySelectorAll('[data-testid="stWidgetLabel"]'))
  .filter(e => e.offsetParent !== null && (e.innerText || '').trim().length > 3)
  .map(e => [e.innerText.trim().slice(0, 30), Math.round(e.getBoundingClientRect().height
                                                           / (parseFloat(getComputedStyle(e).lineHeight) || 20))])"""
PLOTS = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).filter(p => p.offsetParent !== null)
  .map(p => [Math.round(p.getBoundingClientRect().width), Math.round(p._fullLayout._size.w)])"""


def test_at_900_px_wide_the_figures_and_controls_stay_readable(shipped_server, browser):
    context = browser.new_context(viewport={"width": 900, "height": 700})
    page = context.new_page()
    for name in NARROW:
        open_view(page, shipped_server, name, present=False)
        controls = page.locator('[data-testid="stExpander"] summary').filter(has_text="Controls")
        if controls.count():
            controls.first.click()  # the folded controls, opened: their labels must not wrap a letter a line
            settle(page, 60)
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"first-screen-{name}-900.png"))
        plots = page.evaluate(PLOTS)
        assert plots, name
        narrow = [p for p in plots if p[0] < 300 or p[1] < 200]  # the figure's width, its plot area's width
        assert not narrow, (name, plots)
        squeezed = [lab for lab in page.evaluate(LABELS) if lab[1] > 3]
        assert not squeezed, (name, squeezed)
    context.close()
