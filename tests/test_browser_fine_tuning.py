"""The What fine-tuning changes page in a real browser (issue 17): a tiny BERT fine-tuned for a few steps with
``ctxmodels finetune``, named with ``--models`` as an operator does; the page draws its CKA curve, the projections
and the heads' heatmap, and a copied link with a chosen layer and head reproduces the head's maps."""

from __future__ import annotations

import re

import pytest

from tests import test_browser
from tests.app_fixtures import build_tiny_assets, finetune_tiny, write_tag_task
from tests.test_browser import no_traceback, screenshot, settle, start_server

pytestmark = [pytest.mark.browser, pytest.mark.slow]

browser = test_browser.browser  # the one Chromium fixture of the browser tests


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    assets = build_tiny_assets(tmp_path_factory.mktemp("tiny-assets"))
    root = tmp_path_factory.mktemp("finetuned")
    tuned = finetune_tiny(assets / "bert-eltec", write_tag_task(root / "tags.conll"), root / "bert-tags")
    yield from start_server(tmp_path_factory, assets, CTXMODELS_APP_MODELS=str(tuned),
                            CTXMODELS_CACHE=str(tmp_path_factory.mktemp("cache")))


def figure_titles(page) -> list[str]:
    """Each figure's title as drawn (Streamlit's theme wraps it in <b>)."""
    drawn = page.evaluate("() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(p => "
                          "(p._fullLayout.title && p._fullLayout.title.text) || '')")
    return [re.sub(r"<[^>]+>", "", t) for t in drawn]


def test_the_fine_tuning_page_draws_its_figures(server, browser):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(f"{server}/fine_tuning?ft_att_layer=2&ft_att_head=2")
    settle(page)
    no_traceback(page)
    assert page.locator("h1").first.inner_text().strip() == "What fine-tuning changes"
    assert page.locator('[data-testid="stAlert"]').filter(has_text="failed").count() == 0
    # the main figure: CKA per layer, with the layers named on its axis
    cka = page.evaluate("() => { const p = Array.from(document.querySelectorAll('.js-plotly-plot')).find(p => "
                        "p._fullData.some(t => (t.name || '').includes('→'))); return p ? "
                        "{ticks: p._fullLayout.xaxis.ticktext, y: p._fullData.map(t => Array.from(t.y))} : null }")
    assert cka is not None, "no CKA figure"
    assert list(cka["ticks"]) == ["embeddings", "layer 1", "layer 2"]
    assert all(0 < y <= 1.0 + 1e-9 for ys in cka["y"] for y in ys)
    titles = figure_titles(page)
    assert any(t.startswith("mean Jensen") for t in titles), titles
    assert "before: bert-eltec, layer 2, head 2" in titles and "after: bert-tags, layer 2, head 2" in titles
    assert any(t.startswith("after: bert-tags, layer 2, PCA") for t in titles), titles
    screenshot(page, "page-fine_tuning.png")
    page.close()
