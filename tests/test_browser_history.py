"""The Back button in a real browser: one history entry per step a visitor would name (a page, a chosen word or
model), none for a slider or for the settings a page writes into its address on arrival, and Back restores the
step it returns to (its address and its widgets), including back from a page a Lesson link opened."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pytest

from tests import test_browser
from tests.app_fixtures import build_tiny_assets
from tests.test_browser import no_traceback, settle, start_server

pytestmark = [pytest.mark.browser, pytest.mark.slow]

browser = test_browser.browser  # the one Chromium fixture of the browser tests


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    assets = build_tiny_assets(tmp_path_factory.mktemp("tiny-assets"))
    yield from start_server(tmp_path_factory, assets, CTXMODELS_CACHE=str(tmp_path_factory.mktemp("cache")))


# Every address the page writes, in order (push or replace), for the failure messages.
RECORD = """
window.historyCalls = [];
for (const kind of ["pushState", "replaceState"]) {
  const original = history[kind].bind(history);
  history[kind] = (state, title, url) => {
    window.historyCalls.push(kind + " " + url);
    return original(state, title, url);
  };
}
"""


def calls(page) -> str:
    return "\n".join(page.evaluate("() => window.historyCalls"))


def where(page) -> tuple[str, dict[str, list[str]]]:
    url = urlparse(page.url)
    return url.path, parse_qs(url.query, keep_blank_values=True)


def entries(page) -> int:
    return page.evaluate("() => history.length")


def pick(page, label: str, option: str) -> None:
    """Choose ``option`` in the select box labelled ``label``, as a visitor does (opening the folded controls
    first where the page keeps them folded)."""
    box = page.locator('[data-testid="stSelectbox"]').filter(has_text=label).first
    if not box.is_visible():
        page.locator('[data-testid="stExpander"] summary').filter(has_text="Controls").first.click()
        box.wait_for(state="visible")
    box.click()
    page.locator('[role="option"]').filter(has_text=option).first.click()
    settle(page)


def shown_in(page, label: str) -> str:
    """The value a select box shows (its text is in the page whether or not its controls are folded)."""
    return page.locator('[data-testid="stSelectbox"]').filter(has_text=label).first.locator("input").input_value()


def test_one_history_entry_per_step_and_back_restores_it(server, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    page.add_init_script(RECORD)
    page.goto(f"{server}/word_senses?projection=pca")
    settle(page)
    start = entries(page)
    path, query = where(page)
    assert path == "/word_senses" and query["preset"] == ["bank"] and "layer" in query, page.url

    pick(page, "Preset word", "light")  # a step: one entry
    assert entries(page) == start + 1, page.url
    assert where(page)[1]["preset"] == ["light"]

    layers = where(page)[1]["layer"]
    slider = page.locator('[data-testid="stSlider"]').filter(has_text="Layer").last.locator("input").first
    slider.focus()
    slider.press("ArrowLeft")  # a detail: the address follows, the history does not grow
    settle(page)
    assert where(page)[1]["layer"] != layers, page.url
    assert entries(page) == start + 1, page.url

    page.locator('[data-testid="stSidebarNav"] a').filter(has_text="Attention").click()  # a page: one entry
    settle(page)
    assert where(page)[0] == "/attention" and entries(page) == start + 2, calls(page)

    page.go_back()  # back to the word chosen, with its address and its select box
    settle(page)
    path, query = where(page)
    assert path == "/word_senses" and query["preset"] == ["light"], page.url
    assert not any(key.startswith("att_") for key in query), page.url  # not a mix of the two pages' addresses
    assert shown_in(page, "Preset word") == "light"

    page.go_back()  # and the step before it
    settle(page)
    assert where(page)[1]["preset"] == ["bank"], page.url
    assert shown_in(page, "Preset word") == "bank"
    no_traceback(page)

    page.goto(f"{server}/lesson")
    settle(page)
    before = entries(page)
    page.get_by_text("Open it on the").first.click()
    settle(page)
    assert where(page)[0] != "/lesson" and entries(page) == before + 1, page.url
    page.go_back()  # a Lesson link is one step: Back returns to the lesson
    settle(page)
    assert where(page)[0] == "/lesson", page.url
    no_traceback(page)
    page.close()
