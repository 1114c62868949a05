"""The Embedding Projector's and BertViz's gestures in a real Chromium: hovering a word on Attention's line view says
where it looks and a click on it draws its lines in orange; a point clicked on Word senses is ringed and can be
shown with only its nearest. On the tiny models (tests/test_browser.py's server)."""

from __future__ import annotations

import pytest

from tests import test_browser
from tests.test_browser import no_traceback, settle

pytestmark = [pytest.mark.browser, pytest.mark.slow]

browser = test_browser.browser
server = test_browser.server
shipped_server = test_browser.shipped_server  # the shipped models' names (minilm-eltec broke in two at 900 px)

# Where a point of a trace is on the screen: the figure that has such a trace, then Plotly's own axis mapping.
POINT_JS = """([mode, k]) => {
  for (const gd of document.querySelectorAll('.js-plotly-plot')) {
    const t = gd._fullData.find(t => t.mode === mode);
    if (!t) continue;
    const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, r = gd.getBoundingClientRect();
    gd.scrollIntoView({block: 'center'});
    const r2 = gd.getBoundingClientRect();
    return [r2.left + xa._offset + xa.l2p(t.x[k]), r2.top + ya._offset + ya.l2p(t.y[k])];
  }
  return null; }"""
ORANGE_JS = """() => { let n = 0; for (const gd of document.querySelectorAll('.js-plotly-plot'))
  for (const t of gd._fullData) if (t.mode === 'lines' && String(t.line.color).startsWith('rgba(230,120,20'))
    n += Math.floor((t.x || []).length / 3);
  return n; }"""


def test_attention_hovering_a_word_says_where_it_looks_and_a_click_makes_its_lines_stand_out(server, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(f"{server}/attention?att_threshold=0.05")
    page.wait_for_selector(".js-plotly-plot", timeout=120_000)
    settle(page)
    at = page.evaluate(POINT_JS, ["markers+text", 2])
    assert at is not None, "the line view has no word points"
    page.mouse.move(*at)
    page.wait_for_selector(".hoverlayer .hovertext", timeout=10_000)
    assert "looks at" in page.locator(".hoverlayer .hovertext").first.text_content()
    assert page.evaluate(ORANGE_JS) == 0
    page.mouse.click(*at)
    page.wait_for_function(f"() => ({ORANGE_JS})() > 0", timeout=60_000)
    settle(page)
    no_traceback(page)
    assert "att_token=3" in page.url, page.url
    page.get_by_role("button", name="Show every word's lines").click()
    page.wait_for_function(f"() => ({ORANGE_JS})() === 0", timeout=60_000)
    page.close()


RING_JS = """(name) => [...document.querySelectorAll('.js-plotly-plot')]
  .filter(p => p.data.some(t => t.name === name)).length"""


def test_word_senses_a_clicked_point_is_ringed_and_can_be_shown_with_only_its_nearest(server, browser):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(f"{server}/word_senses?projection=pca&models=bert-eltec")
    page.wait_for_selector(".js-plotly-plot", timeout=120_000)
    settle(page)
    at = page.evaluate("""() => { const gd = document.querySelectorAll('.js-plotly-plot')[1];
      gd.scrollIntoView({block: 'center'}); const t = gd._fullData[0], r = gd.getBoundingClientRect();
      const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
      return [r.left + xa._offset + xa.l2p(t.x[0]), r.top + ya._offset + ya.l2p(t.y[0])]; }""")
    page.mouse.click(*at)
    page.wait_for_function(f"() => ({RING_JS})('the clicked occurrence') === 1", timeout=60_000)
    settle(page)
    no_traceback(page)
    assert "point=" in page.url, page.url
    page.get_by_role("button", name="Show only it and its nearest").first.click()
    page.wait_for_function("() => [...document.querySelectorAll('.js-plotly-plot')].some(p => p.data.some("
                           "t => (t.name || '').startsWith('occurrence ')))", timeout=60_000)
    settle(page)
    assert "focus=" in page.url, page.url
    page.close()


OPTIONS_JS = """() => Array.from(document.querySelectorAll('[role="option"]')).map(o => o.innerText.trim())"""


def test_typing_run_in_the_semcor_lemma_search_lists_run_first(server, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(f"{server}/word_senses?projection=pca&source=semcor&lemma=bank.n&models=static-eltec")
    page.wait_for_selector(".js-plotly-plot", timeout=240_000)
    settle(page, 240)
    test_browser.open_controls(page)
    box = page.get_by_role("combobox", name="Lemma (type to search)")
    box.click()
    page.keyboard.type("run")
    page.wait_for_selector('[role="option"]', timeout=10_000)
    shown = page.evaluate(OPTIONS_JS)
    assert shown and all(o.startswith("run") for o in shown), shown
    assert shown[0].startswith("run ("), shown
    page.keyboard.press("Escape")
    page.close()


HEADINGS_JS = """() => Array.from(document.querySelectorAll('[data-testid="stColumn"] h3'))
  .filter(e => e.offsetParent !== null).map(e => {
    const walk = document.createTreeWalker(e, NodeFilter.SHOW_TEXT), tops = new Set();
    for (let t = walk.nextNode(); t; t = walk.nextNode()) {
      if (!t.textContent.trim()) continue;
      const r = document.createRange(); r.selectNodeContents(t);
      for (const q of r.getClientRects()) if (q.width > 0) tops.add(Math.round(q.top));
    }
    return [e.innerText.trim(), tops.size]; })"""
CUT_JS = """() => Array.from(document.querySelectorAll('[data-testid="stBaseButton-secondary"]'))
  .filter(b => b.offsetParent !== null).map(b => [b.innerText.replace(/\\s+/g, ' ').trim(),
    Array.from(b.querySelectorAll('*')).some(e => e.scrollWidth > e.clientWidth + 1)])"""


def test_at_900_px_a_rows_model_name_is_one_line_and_the_lessons_buttons_are_whole(shipped_server, browser):
    server = shipped_server
    page = browser.new_page(viewport={"width": 900, "height": 700})
    page.goto(f"{server}/word_senses?projection=pca")
    page.wait_for_selector(".js-plotly-plot", timeout=240_000)
    settle(page, 240)
    names = page.evaluate(HEADINGS_JS)
    assert "minilm-eltec" in dict(names) and all(lines == 1 for _, lines in names), names
    page.goto(f"{server}/lesson?step=2")
    settle(page)
    buttons = dict(page.evaluate(CUT_JS))
    previous = [b for b in buttons if b.startswith("arrow_back") or "Previous" in b]
    assert previous and not any(buttons[b] for b in previous), buttons
    page.close()


def test_back_after_showing_one_occurrence_returns_to_the_whole_cloud(server, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(f"{server}/word_senses?projection=pca&models=bert-eltec")
    page.wait_for_selector(".js-plotly-plot", timeout=120_000)
    settle(page)
    test_browser.open_controls(page)
    box = page.get_by_role("combobox", name="Show only one occurrence and its nearest")
    box.scroll_into_view_if_needed()
    box.click()
    page.keyboard.type("2. ")  # the picker filters the sentences: "2. " first matches occurrence 2
    page.wait_for_selector('[role="option"]', timeout=30_000)
    page.keyboard.press("Enter")
    page.wait_for_function("() => [...document.querySelectorAll('.js-plotly-plot')].some(p => p.data.some("
                           "t => t.name === 'occurrence 2'))", timeout=60_000)
    settle(page)
    assert "focus=2" in page.url, page.url
    page.go_back()
    page.wait_for_function("() => !location.search.includes('focus=2')", timeout=30_000)
    settle(page)
    assert not page.evaluate("() => [...document.querySelectorAll('.js-plotly-plot')].some(p => p.data.some("
                             "t => (t.name || '').startsWith('occurrence ')))")
    assert "/word_senses" in page.url, page.url
    page.close()
