"""Nothing a model card holds makes the visitor's browser fetch from a host other than the app's server: the
sanitiser on hostile Markdown and HTML, the Models page through AppTest, and (with Chromium) a real browser."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from app.kit.cards import card_markdown
from app.kit.inert_markdown import inert_markdown

JOINER = "\u2060"
HOSTILE = """# Evil card

Inline: ![pixel](https://evil.example/pixel.png "a title") and ![<b>](<http://evil.example/angle one.png>)

Reference: ![ref][r], ![shortcut], ![collapsed][] and ![nested ![x](http://evil.example/nested.png)](http://evil.example/outer.png)

[r]: http://evil.example/ref.png
[shortcut]: http://evil.example/short.png
[collapsed]: http://evil.example/coll.png

<img src="http://evil.example/img.png" alt="a tag">

<p align="center"><IMG SRC=http://evil.example/upper.png></p>

<picture><source srcset="http://evil.example/src.webp"><img src="http://evil.example/p.png"></picture>

<video poster="http://evil.example/poster.jpg" src="http://evil.example/v.mp4"></video>

<link rel=prefetch href="http://evil.example/prefetch">

<div style="background:url(http://evil.example/bg.png)">styled</div>

<iframe src="http://evil.example/frame"></iframe> <object data="http://evil.example/obj"></object>

<svg><image href="http://evil.example/svg.png"/></svg>

Autolinks: <http://evil.example/auto>, http://evil.example/literal and www.evil.example.

Badge: [![CI](https://evil.example/badge.svg)](https://evil.example/ci)

Math: $\\includegraphics[height=1em]{http://evil.example/katex.png}$ and $\\href{http://evil.example/h}{x}$.

Inline code stays: `<mask>` and `![not](an image)`.

```html
<img src="http://evil.example/in-code.png">
```
"""
# Every element that fetches (or embeds) something when the browser meets it, and attributes that do on any tag.
FETCHING = re.compile(r"<(img|picture|source|video|audio|link|iframe|object|embed|image|svg|input|script|style)\b"
                      r"|<[a-z][^>]*\b(style|srcset|poster|background|src|data)=", re.IGNORECASE)


def rendered(markdown: str) -> str:
    """``markdown`` as HTML by a CommonMark renderer that lets raw HTML through (the worst case: as if the app
    passed unsafe_allow_html), with GitHub-style autolinks."""
    markdown_it = pytest.importorskip("markdown_it")
    return markdown_it.MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"]).render(markdown)


def outside_code(html: str) -> str:
    return re.sub(r"<code>.*?</code>", "", html, flags=re.DOTALL)


def outside_fences(markdown: str) -> str:
    """``markdown`` without its blocks fenced from the line's start (code, shown as written)."""
    return re.sub(r"^```.*?^```$", "", markdown, flags=re.MULTILINE | re.DOTALL)


def test_no_image_or_tag_survives_and_the_addresses_are_shown_as_text():
    out = inert_markdown(HOSTILE)
    assert "![" not in outside_fences(out) and not re.search(r"<[A-Za-z/!?]", outside_fences(out))
    html = rendered(out)
    assert not FETCHING.search(outside_code(html)), html
    assert "<img" not in html and "<source" not in html  # not in code either: code is text, escaped
    # What an image was is still readable: its alt text and its address (as code, not a link).
    assert "pixel (image: <code>https://evil.example/pixel.png</code>)" in html
    assert "a tag (image: <code>http://evil.example/img.png</code>)" in html
    assert "<code>http://evil.example/angle one.png</code>" in html
    # Links stay links (one goes somewhere only when clicked); the badge is a link around its alt text.
    assert '<a href="https://evil.example/ci">CI (image: <code>https://evil.example/badge.svg</code>)</a>' in html
    assert "&lt;div style=" in html and "&lt;iframe src=" in html  # HTML is shown as text


def test_code_is_kept_as_written():
    out = inert_markdown(HOSTILE)
    assert '```html\n<img src="http://evil.example/in-code.png">\n```' in out  # a block: exactly as written
    # Inline code: as written but for invisible word joiners (the span might not be code to another renderer).
    assert "`<mask>`" in out.replace(JOINER, "") and "`![not](an image)`" in out.replace(JOINER, "")
    assert "<code>&lt;mask&gt;</code>" in rendered(inert_markdown(HOSTILE)).replace(JOINER, "")


def test_a_fence_the_renderer_closes_early_cannot_hide_an_image():
    # A fence inside a list item ends with the item; a cut that took the rest for code would let this through.
    text = "- item\n\n  ```\nan unindented line\n![x](http://evil.example/p.png)\n<img src=http://evil.example/q>\n"
    html = rendered(inert_markdown(text))
    assert not FETCHING.search(html), html


def test_card_markdown_leaves_no_image():
    html = rendered(card_markdown(HOSTILE))
    assert not FETCHING.search(outside_code(html)) and "<img" not in html


# -- the Models page -------------------------------------------------------------------------------------------------


def hostile_copy(tiny_assets: Path, folder: Path) -> Path:
    shutil.copytree(tiny_assets / "bert-eltec", folder)
    (folder / "README.md").write_text(HOSTILE, encoding="utf-8")
    return folder


@pytest.mark.usefixtures("app_env")
def test_models_page_shows_a_hostile_card_without_an_image_or_tag(tiny_assets, tmp_path, monkeypatch):
    from tests.app_fixtures import assert_clean, page

    monkeypatch.setenv("CTXMODELS_APP_MODELS", str(hostile_copy(tiny_assets, tmp_path / "evil-bert")))
    at = page("models")
    assert_clean(at)
    shown = [str(e.value) for kind in ("markdown", "caption", "info", "warning", "success", "subheader")
             for e in at.get(kind) if "<style>" not in str(e.value)]
    cards = [m for m in shown if "Evil card" in m]
    assert len(cards) == 1 and "evil.example/pixel.png" in cards[0]  # shown, as text
    for m in map(outside_fences, shown):
        assert "![" not in m and not re.search(r"<[A-Za-z/!?]", m), m
        assert not FETCHING.search(outside_code(rendered(m))), m


# -- a real browser --------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hostile_server(tmp_path_factory):
    from tests.app_fixtures import build_tiny_assets
    from tests.test_browser import start_server

    assets = build_tiny_assets(tmp_path_factory.mktemp("tiny-assets"))
    (assets / "bert-eltec" / "README.md").write_text(HOSTILE, encoding="utf-8")
    yield from start_server(tmp_path_factory, assets, CTXMODELS_CACHE=str(tmp_path_factory.mktemp("cache")))


@pytest.mark.browser
@pytest.mark.slow
def test_opening_a_hostile_card_fetches_only_from_the_server(hostile_server):
    from tests.test_browser import CHROMIUM_ARGS, chromium_path, no_traceback, settle

    path = chromium_path()
    sync_api = pytest.importorskip("playwright.sync_api")
    host = hostile_server.split("//", 1)[1]
    outside: list[str] = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.on("request", lambda r: None if r.url.split("//", 1)[-1].startswith(host) or r.url.startswith(
            ("data:", "blob:")) else outside.append(r.url))
        page.goto(f"{hostile_server}/models")
        settle(page)
        for summary in page.locator('[data-testid="stExpander"] summary').all():
            if "card and configuration" in summary.inner_text():
                summary.click()
        settle(page)
        assert page.get_by_text("Evil card").count()
        no_traceback(page)
        page.wait_for_timeout(1000)
        browser.close()
    assert not outside, outside


# A folder name is shown as the model's name on every page (labels, options, captions, figure legends).
MARKED_NAME = "evil ![x](http:HOST.png) <img src=HOST.png> [l](http:HOST) $HOST$"
PAGES = ["overview", "word_senses", "attention", "fill_in", "models"]


def shown_texts(at) -> tuple[list[str], list[str], list[str]]:
    """What the page hands to Streamlit's Markdown (bodies, labels, radio options), to Plotly's HTML (figure
    strings), and as plain text (the options of a selectbox or multiselect)."""
    import json

    markdown = [str(e.value) for kind in ("markdown", "caption", "info", "warning", "error", "success", "title",
                                          "subheader", "header") for e in at.get(kind) if "<style>" not in str(e.value)]
    plain: list[str] = []
    for kind in ("selectbox", "multiselect", "radio", "expander", "tabs", "metric", "text_input", "checkbox"):
        for w in at.get(kind):
            markdown.append(str(getattr(w, "label", None) or getattr(getattr(w, "proto", None), "label", "")))
            (markdown if kind == "radio" else plain).extend(str(o) for o in getattr(w, "options", []))
    figures: list[str] = []
    for chart in at.get("plotly_chart"):
        figures += [s for s in _strings(json.loads(chart.proto.spec)) if isinstance(s, str)]
    return markdown, plain, figures


def _strings(x) -> list:
    if isinstance(x, dict):
        return [s for v in x.values() for s in _strings(v)]
    if isinstance(x, list):
        return [s for v in x for s in _strings(v)]
    return [x]


@pytest.mark.usefixtures("app_env")
@pytest.mark.parametrize("name", PAGES)
def test_a_model_named_with_markup_and_a_hostile_card_is_shown_inert_on_every_page(name, tiny_assets, tmp_path,
                                                                                    monkeypatch):
    from tests.app_fixtures import assert_clean, page

    folder = hostile_copy(tiny_assets, tmp_path / MARKED_NAME)
    monkeypatch.setenv("CTXMODELS_APP_MODELS", str(folder))
    at = page(name, models=MARKED_NAME) if name != "models" else page(name)
    assert_clean(at)
    markdown, plain, figures = shown_texts(at)
    assert any("HOST" in s for s in markdown + plain + figures), name  # the name is on the page
    for s in markdown:
        if "HOST" in s:
            assert not re.search(r"(?<!\\)!(?<!\\)\[|(?<!\\)\]\(|(?<!\\)<(?:img|a)\b|(?<!\\)\$HOST", s), s
    for s in figures:
        if "HOST" in s:
            assert not re.search(r"<(?:img|a)\b", s, re.IGNORECASE), s
