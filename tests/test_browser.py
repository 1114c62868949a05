"""The explorer in a real browser: `streamlit run app/Home.py` on a free port, driven through headless Chromium.

Uses Debian's Chromium (``.ci/run`` installs it; Playwright's own browser download cannot work offline). Without
it the test is skipped on a developer machine and fails in CI (``CI`` set). Screenshots of every page go to
``test-artifacts/`` (git-ignored) for a person to look at.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.app_fixtures import build_tiny_assets, write_sense_corpus

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
PAGES = ["overview", "lesson", "word_senses", "elmo_layers", "attention", "fine_tuning", "fill_in", "how_they_learn",
         "models"]

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def chromium_path() -> str:
    path = CHROMIUM if Path(CHROMIUM).is_file() else shutil.which("chromium")
    if not path:
        if os.environ.get("CI"):
            pytest.fail("Chromium is missing; CI must install it (.ci/run does: apt-get install chromium)")
        pytest.skip("Chromium not installed (/usr/bin/chromium); CI installs it")
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(tmp_path_factory, assets: Path | None, **env_extra: str):
    """`streamlit run app/Home.py` on a free port; yields its URL. ``assets=None``: the repository's assets/."""
    port = free_port()
    env = dict(os.environ, CTXMODELS_APP_RUNS=str(tmp_path_factory.mktemp("runs")), PYTHONPATH=str(ROOT))
    env.update(env_extra)
    env.pop("CTXMODELS_ASSETS", None)
    if assets is not None:
        env["CTXMODELS_ASSETS"] = str(assets)
        if not (assets / "semcor").exists():  # as in assets/: the SemCor copy read when the shared data is absent
            (assets / "semcor").symlink_to(ROOT / "assets" / "semcor")
    log = open(tmp_path_factory.mktemp("log") / "server.log", "w+")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app/Home.py", "--server.port", str(port),
         "--server.address", "127.0.0.1", "--server.headless", "true", "--browser.gatherUsageStats", "false"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 180
    while True:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    break
        except OSError:
            pass
        if proc.poll() is not None or time.time() > deadline:
            log.seek(0)
            proc.kill()
            pytest.fail(f"the server did not start:\n{log.read()[-3000:]}")
        time.sleep(0.5)
    yield url
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    assets = build_tiny_assets(tmp_path_factory.mktemp("tiny-assets"))
    corpus = write_sense_corpus(tmp_path_factory.mktemp("corpus") / "banks.txt", 2000)
    yield from start_server(tmp_path_factory, assets, CTXMODELS_ALLOW_UPLOADS="1", CTXMODELS_ALLOW_TRAINING="1",
                            CTXMODELS_APP_CORPORA=str(corpus), CTXMODELS_CACHE=str(tmp_path_factory.mktemp("cache")))


@pytest.fixture(scope="module")
def shipped_server(tmp_path_factory):
    """The app as the README's run command starts it: on the shipped models in assets/."""
    yield from start_server(tmp_path_factory, None)


@pytest.fixture(scope="module")
def browser():
    path = chromium_path()
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
        yield b
        b.close()


def settle(page, timeout: float = 120.0) -> None:
    """Wait until the app has rendered and stopped changing: no skeleton or spinner, and the same elements and
    text for two seconds (the app runs with the toolbar in minimal mode, so there is no status widget to read)."""
    page.wait_for_selector("h1", timeout=timeout * 1000)
    busy = '[data-testid="stSkeleton"], [data-testid="stSpinner"], [data-stale="true"]'
    snapshot = "() => document.querySelectorAll('[data-testid]').length + ':' + document.body.innerText.length"
    deadline = time.time() + timeout
    last, since = None, time.time()
    while time.time() < deadline:
        state = None if page.locator(busy).count() else page.evaluate(snapshot)
        if state is None or state != last:
            last, since = state, time.time()
        elif time.time() - since > 2.0:
            return
        time.sleep(0.25)
    raise AssertionError("the page kept changing")


def screenshot(page, name: str) -> None:
    """The whole page: Streamlit scrolls inside its main section, so grow the viewport to the content first."""
    ARTIFACTS.mkdir(exist_ok=True)
    width = page.viewport_size["width"]
    height = None
    for _ in range(2):  # the taller viewport can render more (lazy widgets): measure again after it settles
        was, height = height, page.evaluate("() => Math.max(document.body.scrollHeight, ...Array.from("
                                            "document.querySelectorAll('section, [data-testid=stMain]'))"
                                            ".map(e => e.scrollHeight))")
        if height == was:
            break  # nothing more was drawn: the page has settled at this size already
        page.set_viewport_size({"width": width, "height": min(max(int(height) + 40, 800), 8000)})
        settle(page, 30)
    page.screenshot(path=str(ARTIFACTS / name))
    page.set_viewport_size({"width": width, "height": 1000})


def open_controls(page) -> None:
    """Open the page's folded *Controls* box (a page opens on its figure, its inputs folded), unless it is open."""
    summary = page.locator('[data-testid="stExpander"] summary').filter(has_text="Controls").first
    if summary.locator("xpath=..").get_attribute("open") is None:
        summary.click()
        settle(page, 60)


def no_traceback(page) -> None:
    assert page.locator('[data-testid="stException"]').count() == 0, page.locator(
        '[data-testid="stException"]').first.inner_text()


def plot_data(page, index: int) -> list:
    """The x coordinates of every trace of the index-th figure, as drawn (decoded from Plotly's typed arrays)."""
    return page.evaluate(f"() => document.querySelectorAll('.js-plotly-plot')[{index}]._fullData"
                         ".map(t => Array.from(t.x || []))")


def test_every_page_in_a_real_browser(server, browser):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    for name in PAGES:
        page.goto(f"{server}/{name}")
        settle(page)
        no_traceback(page)
        assert page.locator("h1").first.inner_text().strip()
        screenshot(page, f"page-{name}.png")
    page.goto(f"{server}/word_senses?present=1&projection=pca&models=elmo-eltec")
    settle(page)
    no_traceback(page)
    assert page.locator('[data-testid="stSidebar"]').is_hidden()
    screenshot(page, "present-word_senses.png")
    page.close()


def test_fill_in_prediction_appears_as_you_type(server, browser):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(f"{server}/fill_in?text=The+boat+reached+the+river.")
    page.get_by_text("has no").first.wait_for(timeout=60_000)  # no [MASK] yet: a warning, no prediction
    settle(page)
    assert page.locator(".js-plotly-plot").count() == 0
    box = page.locator("input.stkeyup__input")
    box.fill("")
    page.get_by_text("empty").first.wait_for(timeout=60_000)
    settle(page)
    box.press_sequentially("The boat reached the far [MASK] of the river.", delay=20)  # no Enter: as you type
    try:
        page.wait_for_selector(".js-plotly-plot", timeout=60_000)
    except Exception:
        screenshot(page, "fill_in-FAILED.png")
        raise
    settle(page)
    bars = page.evaluate("() => document.querySelectorAll('.js-plotly-plot')[0].data[0].y")
    assert box.input_value() == "The boat reached the far [MASK] of the river.", page.url
    assert len(bars) == 5 and all(isinstance(t, str) and t for t in bars), (bars, page.url)
    no_traceback(page)
    screenshot(page, "fill_in-typed.png")
    page.close()


def script_runs(page) -> list[int]:
    """The ends of the page's script runs, as its websocket reports them (0: the whole page, 2: stopped early for a
    newer run, 3: a fragment)."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    ends: list[int] = []

    def frame(payload) -> None:
        if isinstance(payload, str):
            return
        msg = ForwardMsg()
        msg.ParseFromString(payload)
        if msg.WhichOneof("type") == "script_finished":
            ends.append(int(msg.script_finished))

    page.on("websocket", lambda ws: ws.on("framereceived", frame) if ws.url.endswith("/_stcore/stream") else None)
    return ends


def test_fill_in_keystrokes_rerun_only_the_fragment_and_a_link_hides_a_word(server, browser):
    """Typing reruns the sentence box, its controls and the charts (a fragment), never the whole page, and keeps
    every letter typed; a link with the word to hide shows that word scored, with no warning."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    ends = script_runs(page)
    page.goto(f"{server}/fill_in?text=The+boat+reached+the+far+%5Bmask%5D+of+the")
    page.wait_for_selector(".js-plotly-plot", timeout=60_000)
    settle(page)
    before = page.evaluate("() => document.querySelectorAll('.js-plotly-plot')[0].data[0].x")
    box = page.locator("input.stkeyup__input")
    box.click()
    page.keyboard.press("End")
    n = len(ends)
    box.press_sequentially(" river", delay=30)
    deadline = time.time() + 60
    # While the chart is redrawn it may be gone for a moment (CI once read no chart here): keep waiting through it.
    first_x = "() => document.querySelectorAll('.js-plotly-plot')[0]?.data?.[0]?.x ?? null"
    while time.time() < deadline and page.evaluate(first_x) in (None, before):
        time.sleep(0.2)
    settle(page)
    assert box.input_value() == "The boat reached the far [mask] of the river", page.url
    assert ends[n:] and 0 not in ends[n:] and 3 in ends[n:], ends[n:]  # fragment runs only
    assert "river" in page.url
    no_traceback(page)
    page.goto(f"{server}/fill_in?text=The+boat+drifted+towards+the+bank+of+the+river.&blank=bank")
    page.get_by_text("P(bank)").first.wait_for(timeout=60_000)
    settle(page)
    assert page.locator(".js-plotly-plot").count() >= 1
    assert page.locator('[data-testid="stAlertContentWarning"]').count() == 0
    assert "fill_mode=word" in page.url and "blank=bank" in page.url, page.url
    no_traceback(page)
    screenshot(page, "fill_in-hidden-word.png")
    page.close()


def plot_titles(page) -> list[str]:
    """The figures' titles as read (the app sets them bold)."""
    return page.evaluate("() => [...document.querySelectorAll('.js-plotly-plot')]"
                         ".map(p => p.layout.title.text.replace(/<[^>]*>/g, ''))")


def test_fill_in_shows_which_words_a_guess_rests_on(server, browser):
    """The switch draws, under the guesses, one bar per word of the sentence in its order; a guess typed into the
    box beside it is explained instead of the first guess."""
    page = browser.new_page(viewport={"width": 1400, "height": 1200})
    page.goto(f"{server}/fill_in?text=The+boat+drifted+towards+the+%5BMASK%5D+of+the+river.")
    page.wait_for_selector(".js-plotly-plot", timeout=60_000)
    settle(page)
    assert page.locator(".js-plotly-plot").count() == 1
    open_controls(page)
    page.get_by_text("Show which words it rests on").click()
    page.wait_for_function("() => document.querySelectorAll('.js-plotly-plot').length == 2", timeout=60_000)
    settle(page)
    words = page.evaluate("() => document.querySelectorAll('.js-plotly-plot')[1].layout.yaxis.ticktext")
    assert [w.replace("<i>", "").replace("</i>", "") for w in words] == [
        "The", "boat", "drifted", "towards", "the", "[MASK]", "of", "the", "river", "."], words
    assert plot_titles(page)[1].startswith("what “"), plot_titles(page)
    assert "why=1" in page.url
    box = page.get_by_role("textbox", name="for the guess")
    box.fill("river")
    box.press("Enter")
    page.wait_for_function("() => ((document.querySelectorAll('.js-plotly-plot')[1] || {layout: {title: {}}})"
                           ".layout.title.text || '').includes('what “river” rests on')", timeout=60_000)
    settle(page)
    no_traceback(page)
    assert "why_guess=river" in page.url
    screenshot(page, "fill_in-rests-on.png")
    # the other method, then both: the chart is redrawn in place, two bars a word with a legend for both
    page.get_by_text("integrated gradients").click()
    page.wait_for_function("() => ((document.querySelectorAll('.js-plotly-plot')[1] || {layout: {title: {}}})"
                           ".layout.title.text || '').includes('(gradients)')", timeout=60_000)
    settle(page)
    assert page.get_by_text("Together the scored words account for a factor of").count() == 1
    page.get_by_text("both ways", exact=True).click()
    page.wait_for_function("() => ((document.querySelectorAll('.js-plotly-plot')[1] || {data: []}).data.length == 2)",
                           timeout=60_000)
    settle(page)
    no_traceback(page)
    assert "why_by=both" in page.url
    screenshot(page, "fill_in-rests-on-both.png")
    page.close()


def test_fill_in_shows_the_guesses_layer_by_layer(server, browser):
    """The switch draws, under the guesses, a grid of the head's guesses in every layer with the final answer's rank
    at each row's end; typing another sentence redraws it."""
    page = browser.new_page(viewport={"width": 1400, "height": 1200})
    page.goto(f"{server}/fill_in?text=She+deposited+the+money+in+the+%5BMASK%5D.")
    page.wait_for_selector(".js-plotly-plot", timeout=60_000)
    settle(page)
    open_controls(page)
    page.get_by_text("Show the guesses layer by layer").click()
    grid = "[...document.querySelectorAll('.js-plotly-plot')].filter(p => p.data[0].type === 'heatmap')"
    page.wait_for_function(f"() => {grid}.length === 1", timeout=60_000)
    settle(page)
    no_traceback(page)
    rows, ranks = page.evaluate(f"() => [Array.from({grid}[0].data[0].y), "
                                f"{grid}[0].layout.annotations.map(a => a.text)]")
    assert rows[0] == "emb." and len(rows) == len(ranks) >= 3 and ranks[-1] == "#1", (rows, ranks)
    assert "lens=1" in page.url
    before = page.evaluate(f"() => JSON.stringify({grid}[0].data[0].text)")
    box = page.locator("input.stkeyup__input")
    box.fill("")
    box.press_sequentially("The river overflowed its [MASK].", delay=20)
    page.wait_for_function(f"() => {grid}.length === 1 && JSON.stringify({grid}[0].data[0].text) !== "
                           f"{json.dumps(before)}", timeout=60_000)
    settle(page)
    no_traceback(page)
    screenshot(page, "fill_in-by-layer.png")
    page.close()


def test_fill_in_compares_two_sentences(server, browser):
    """Sentence B typed into its box and entered: its guesses and the words that gained and lost from A to B are
    drawn under the first sentence's guesses, and B goes into the link."""
    page = browser.new_page(viewport={"width": 1400, "height": 1200})
    page.goto(f"{server}/fill_in?text=The+boat+drifted+towards+the+%5BMASK%5D+of+the+river.")
    page.wait_for_selector(".js-plotly-plot", timeout=60_000)
    settle(page)
    open_controls(page)
    box = page.get_by_role("textbox", name="Compare with sentence B")
    box.fill("The boat drifted towards the [MASK] of the sea.")
    box.press("Enter")
    page.wait_for_function("() => document.querySelectorAll('.js-plotly-plot').length == 3", timeout=60_000)
    settle(page)
    titles = plot_titles(page)
    assert titles[1:] == ["sentence B: [MASK]", "from A to B: gained and lost"], titles
    assert "compare=The+boat" in page.url, page.url
    no_traceback(page)
    screenshot(page, "fill_in-compare.png")
    page.close()


def test_word_senses_shows_which_words_shape_one_occurrence(server, browser):
    """The switch under the panels draws one map per model: its layers by the words of the occurrence's sentence,
    the occurrence's own word bold; another occurrence picked redraws them for its sentence."""
    page = browser.new_page(viewport={"width": 1400, "height": 1200})
    page.goto(f"{server}/word_senses?projection=pca")
    page.wait_for_selector(".js-plotly-plot", timeout=60_000)
    settle(page)
    heatmaps = "[...document.querySelectorAll('.js-plotly-plot')].filter(p => p.data[0].type === 'heatmap')"
    assert page.evaluate(f"() => {heatmaps}.length") == 0
    page.get_by_text("Show which words shape one occurrence").click()
    page.wait_for_function(f"() => {heatmaps}.length >= 2", timeout=60_000)
    settle(page)
    no_traceback(page)
    first = page.evaluate(f"() => {heatmaps}.map(p => p.layout.xaxis.ticktext)")
    assert all(sum(t.startswith("<b>") for t in ticks) == 1 for ticks in first), first
    page.locator('[data-testid="stSelectbox"]').filter(has=page.get_by_text("Occurrence", exact=True)).locator(
        "input").click()  # the one labelled so (the Projector's picker says "... one occurrence and its nearest")
    page.get_by_role("option").nth(3).click()
    page.wait_for_function(f"() => JSON.stringify({heatmaps}.map(p => p.layout.xaxis.ticktext)) !== "
                           f"{json.dumps(json.dumps(first))}", timeout=60_000)
    settle(page)
    no_traceback(page)
    screenshot(page, "word_senses-shape.png")
    page.close()


def test_word_senses_rings_the_occurrences_with_the_words_typed(server, browser):
    """Words typed into the search box and entered ring the occurrences whose sentence has them, in every panel,
    with a line under each panel; the words go into the link."""
    page = browser.new_page(viewport={"width": 1400, "height": 1200})
    page.goto(f"{server}/word_senses?projection=pca")
    page.wait_for_selector(".js-plotly-plot", timeout=60_000)
    settle(page)
    rings = ("() => [...document.querySelectorAll('.js-plotly-plot')].filter(p => p.data.some(t => "
             "(t.name || '').startsWith('with '))).length")
    assert page.evaluate(rings) == 0
    open_controls(page)
    box = page.get_by_role("textbox", name="Ring the occurrences with these words around them")
    box.fill("river")
    box.press("Enter")
    page.wait_for_function(f"() => ({rings})() >= 2", timeout=60_000)
    settle(page)
    no_traceback(page)
    assert page.get_by_text("Of the ringed occurrences' 5 nearest").count() >= 2
    assert "find=river" in page.url, page.url
    screenshot(page, "word_senses-find.png")
    page.close()


def test_word_senses_finds_the_nearest_words_in_semcor(server, browser):
    """With the switch on (here from the link), each model gets, once its SemCor index is built in the background
    (a progress bar meanwhile), a stacked bar per layer of the 50 nearest words' parts of speech."""
    page = browser.new_page(viewport={"width": 1400, "height": 1200})
    page.goto(f"{server}/word_senses?projection=pca&models=bert-eltec&near=1")
    bars = ("[...document.querySelectorAll('.js-plotly-plot')].filter(p => p.data[0].type === 'bar' && "
            "p.data[0].orientation === 'h')")
    page.wait_for_function(f"() => {bars}.length >= 1", timeout=300_000)
    settle(page)
    no_traceback(page)
    layers, totals = page.evaluate(f"""() => {{
        const gd = {bars}[0];
        const sums = gd._fullData[0].y.map((_, i) => gd._fullData.reduce((s, t) => s + (+t.x[i] || 0), 0));
        return [Array.from(gd._fullData[0].y), sums];
    }}""")
    assert layers == ["embeddings", "layer 1", "layer 2"] and totals == [50, 50, 50], (layers, totals)
    assert page.get_by_text("The nearest words to").count() == 1
    screenshot(page, "word_senses-nearest-words.png")
    page.close()


def test_word_senses_names_the_dictionary_sense_of_an_occurrence(server, browser):
    """The switch, clicked, draws one figure with a panel per model (SemCor's senses of "bank" down, the layers
    across, the nearest sense outlined) and a line per model; the occurrence picked goes into the link."""
    page = browser.new_page(viewport={"width": 1400, "height": 1200})
    page.goto(f"{server}/word_senses?projection=pca&models=bert-eltec,static-eltec&occ=20")
    page.wait_for_selector(".js-plotly-plot", timeout=60_000)
    settle(page)
    page.get_by_text("Which dictionary sense is it?").click()
    maps = "[...document.querySelectorAll('.js-plotly-plot')].filter(p => p.layout.xaxis2 && " \
           "p.data[0].type === 'heatmap')"
    page.wait_for_function(f"() => {maps}.length === 1", timeout=120_000)
    settle(page)
    no_traceback(page)
    panels, rows, outlined = page.evaluate(f"""() => {{
        const gd = {maps}[0];
        return [[gd.layout.xaxis.title.text, gd.layout.xaxis2.title.text], Array.from(gd.data[0].y),
                gd.data.filter(t => t.type === 'scatter').reduce((n, t) => n + t.x.length, 0)];
    }}""")
    assert panels == ["<b>bert-eltec</b>", "<b>static-eltec</b>"], panels
    assert len(rows) == 2 and any("financial institution" in r for r in rows), rows
    assert outlined >= 1
    assert page.get_by_text("Which dictionary sense is bank").count() == 1
    assert "occ=20" in page.url and "wsd=1" in page.url
    screenshot(page, "word_senses-dictionary-sense.png")
    page.close()


def test_overview_tries_one_word_in_two_sentences(server, browser):
    """The switch on the first page draws one line per default model; another sentence B, typed and entered,
    redraws it and goes into the link."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(server)
    settle(page)
    assert page.locator(".js-plotly-plot").count() == 0
    page.get_by_text("Try it: one word in two sentences").click()
    page.wait_for_selector(".js-plotly-plot", timeout=60_000)
    settle(page)
    names = page.evaluate("() => document.querySelector('.js-plotly-plot')._fullData"
                          ".filter(t => t.showlegend).map(t => t.name)")
    assert sorted(names) == ["bert-eltec", "elmo-eltec", "static-eltec"], names
    ys_js = "() => document.querySelector('.js-plotly-plot')._fullData.map(t => Array.from(t.y))"
    before = page.evaluate(ys_js)
    box = page.get_by_label("Sentence B")
    box.fill("The boat drifted to the bank of the stream.")
    box.press("Enter")
    deadline = time.time() + 60
    while time.time() < deadline and "try_b=The" not in page.url:
        page.wait_for_timeout(200)  # not time.sleep: Playwright updates page.url only inside its own calls
    settle(page)
    assert "try=1" in page.url and "try_b=The+boat" in page.url, page.url
    ys = page.evaluate(ys_js)
    assert ys != before  # the contextual layers' cosines moved with sentence B
    assert all(y is None or -1 <= y <= 1.0001 for trace in ys for y in trace), ys
    no_traceback(page)
    screenshot(page, "overview-try.png")
    page.close()


def test_a_lesson_on_a_projector_asks_reveals_and_opens_the_page(shipped_server, browser):
    """A teacher's run on the shipped models in presentation mode: the question first, the answer on a click, the
    next step's answer hidden again (Page Down and Page Up, as a presenter's clicker sends, or the buttons), and the
    link opens the page in the step's state, still presenting."""
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    page.goto(f"{shipped_server}/lesson?present=1")
    settle(page)
    no_traceback(page)
    assert page.get_by_text("Ask the class.").is_visible()
    assert page.get_by_text("one vector per word, whatever the sentence").count() == 0
    page.get_by_text("Show what the models here answer").click()
    page.get_by_text("one vector per word, whatever the sentence").wait_for(timeout=120_000)
    settle(page)
    text = page.evaluate("() => document.body.innerText")
    assert "static-eltec: 1.00" in text and "minilm-eltec: " in text and "least alike in layer" in text
    assert "reveal=1" in page.url and "present=1" in page.url
    screenshot(page, "lesson-step1.png")
    page.keyboard.press("PageDown")  # a presenter's clicker: the answer shows, so on to the next step
    page.get_by_text("Step 2 of 8").wait_for(timeout=60_000)
    settle(page)
    assert page.get_by_text("one vector per word, whatever the sentence").count() == 0  # asked before answered
    assert "step=2" in page.url and "reveal=0" in page.url
    page.keyboard.press("PageUp")
    page.get_by_text("Step 1 of 8").wait_for(timeout=60_000)
    settle(page)
    page.keyboard.press("PageDown")  # the answer first (computed already: once per server) ...
    page.get_by_text("one vector per word, whatever the sentence").wait_for(timeout=60_000)
    settle(page)
    assert "step=1" in page.url and "reveal=1" in page.url
    page.get_by_role("button", name="Next").click()  # ... then, by mouse too, the next question
    page.get_by_text("Step 2 of 8").wait_for(timeout=60_000)
    settle(page)
    assert page.get_by_text("one vector per word, whatever the sentence").count() == 0

    with page.expect_download(timeout=180_000) as download:  # the lesson plan, every answer computed on the click
        page.get_by_text("The lesson plan (Markdown)").click()
    plan = Path(download.value.path()).read_text(encoding="utf-8")
    assert download.value.suggested_filename == "ctxmodels-lesson.md" and plan.count("\n## Step ") == 8
    assert f"<{shipped_server}/attention?att_model=minilm-eltec" in plan and "Not computed" not in plan
    # the shipped GPT, offered by no page but How they learn, answers the last step beside the BERTs
    assert "- **gpt-eltec** (left to right): 1.00 in every layer" in plan and "learn_part=directions" in plan

    page.goto(f"{shipped_server}/lesson?present=1&step=5")
    settle(page)
    page.get_by_text("Open it on the").click()
    page.locator("h1", has_text="Fill in the blank").wait_for(timeout=60_000)
    page.wait_for_selector(".js-plotly-plot", timeout=120_000)
    settle(page)
    no_traceback(page)
    # the page writes its address when its run ends, after its figures show: wait for it rather than read it early
    page.wait_for_function("() => location.search.includes('present=1') && location.search.includes('text=She')",
                           timeout=30_000)
    assert page.locator(".js-plotly-plot").count() == 3  # minilm-eltec, bert-eltec and elmo-eltec side by side
    page.close()


def test_word_senses_turns_to_three_dimensions(server, browser):
    """The 3-D view: a click on the radio redraws the row as two turnable 3-D scatters, WebGL drawn, in the link."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(f"{server}/word_senses?projection=pca&models=elmo-eltec")
    page.wait_for_selector(".js-plotly-plot", timeout=120_000)
    settle(page)
    open_controls(page)
    page.get_by_text("3-D", exact=True).click()
    page.wait_for_function("() => { const g = document.querySelectorAll('.js-plotly-plot');"
                           " return g.length >= 2 && Array.from(g).slice(0, 2).every("
                           "p => p._fullData && p._fullData.length && p._fullData[0].type === 'scatter3d'); }",
                           timeout=120_000)
    settle(page)
    no_traceback(page)
    assert "dims=3" in page.url, page.url
    scene = page.evaluate("() => { const l = document.querySelectorAll('.js-plotly-plot')[1]._fullLayout.scene;"
                          " return [l.aspectmode, l.zaxis.range.length, !!l._scene]; }")
    assert scene == ["cube", 2, True], scene
    screenshot(page, "word_senses-3d.png")
    page.close()


def test_word_senses_layer_switch_changes_the_plot(server, browser):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(f"{server}/word_senses?projection=pca&models=bert-eltec")
    settle(page)
    page.wait_for_selector(".js-plotly-plot")
    before = plot_data(page, 1)  # the chosen-layer panel (panel 0 is the context-free layer)
    slider = page.get_by_role("slider").first
    slider.focus()
    slider.press("ArrowLeft")  # layer 2 -> layer 1
    deadline = time.time() + 60
    while time.time() < deadline and plot_data(page, 1) == before:
        time.sleep(0.5)
    settle(page)
    assert plot_data(page, 1) != before
    assert "layer=1%3Abert-eltec" in page.url or "layer=1:bert-eltec" in page.url, page.url
    no_traceback(page)
    # Click the first point of the chosen-layer panel: its nearest neighbours (in the full space) are listed.
    x, y = page.evaluate("""() => {
        const gd = document.querySelectorAll('.js-plotly-plot')[1];
        gd.scrollIntoView();
        const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, pt = gd.calcdata[0][0];
        const r = gd.getBoundingClientRect();
        return [r.left + xa._offset + xa.c2p(pt.x), r.top + ya._offset + ya.c2p(pt.y)];
    }""")
    page.mouse.move(x, y)  # hover first, as a person would: Plotly picks the point under the pointer
    time.sleep(0.5)
    page.mouse.click(x, y)
    # (get_by_text would also match the collapsed explanation, which mentions nearest neighbours)
    page.locator("strong", has_text="Nearest neighbours").first.wait_for(timeout=60_000)
    settle(page)
    no_traceback(page)
    screenshot(page, "word_senses-layer1.png")
    page.close()


def layer_title(page, index: int = 1) -> str:
    """The title of the index-th figure (the chosen-layer panel of the first model is 1)."""
    return page.evaluate(f"() => document.querySelectorAll('.js-plotly-plot')[{index}]._fullLayout.title.text")


def slider_value(page) -> str:
    return page.get_by_role("slider").first.get_attribute("aria-valuetext") or ""


def test_word_senses_layer_survives_rows_that_were_not_drawn(server, browser):
    """The issue's sequence: a layer chosen, every model removed then one added back (the slider is not drawn for a
    run), own sentences before the word is typed: the slider, the URL and the panel agree all along."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(f"{server}/word_senses?projection=pca&models=bert-eltec")
    settle(page)
    slider = page.get_by_role("slider").first
    slider.focus()
    slider.press("ArrowLeft")  # layer 2 -> layer 1
    settle(page)
    assert "layer 1" in layer_title(page) and "layer 1" in slider_value(page)
    # Remove the model (no row, no slider), then add it back.
    open_controls(page)
    page.get_by_role("button", name="Clear all").first.click()
    settle(page)
    assert page.get_by_role("slider").count() == 0
    page.get_by_role("combobox", name="Models").click()
    page.get_by_role("option", name="bert-eltec").click()
    page.keyboard.press("Escape")
    settle(page)
    assert "layer 1" in slider_value(page), slider_value(page)
    assert "layer 1" in layer_title(page), layer_title(page)
    assert "layer=1%3Abert-eltec" in page.url or "layer=1:bert-eltec" in page.url, page.url
    # Another interaction must not drop the layer.
    page.get_by_text("Shared axes", exact=True).click()
    settle(page)
    assert "layer 1" in slider_value(page) and "layer 1" in layer_title(page)
    # Own sentences before the target word is typed: the rows are not drawn; then the word.
    page.get_by_text("my own sentences").click()
    settle(page)
    page.get_by_label("Sentences, one per line").fill("We sat on the bank. | river\nThe bank lent money. | money")
    page.get_by_label("Target word").fill("")
    page.keyboard.press("Tab")
    settle(page)
    page.get_by_label("Target word").fill("bank")
    page.keyboard.press("Enter")
    settle(page)
    assert "layer 1" in slider_value(page), slider_value(page)
    assert "layer 1" in layer_title(page), layer_title(page)
    no_traceback(page)
    page.close()


DETAIL_JS = """() => {
    for (const gd of document.querySelectorAll('.js-plotly-plot')) {
        const title = ((gd._fullLayout || {}).title || {}).text || '';
        const text = title.replace(/<[^>]*>/g, '');  // Streamlit's theme wraps titles in <b>
        if (gd._fullData && gd._fullData[0].type === 'heatmap' && /^(layer|rollout)/.test(text))
            return [text, Array.from(gd._fullData[0].z || []).map(row => Array.from(row))];
    }
    return [null, null];
}"""


def detail_heatmap(page) -> tuple[str | None, list | None]:
    """The Attention page's detail heatmap as drawn: its title ("layer 1, head 2") and its weights."""
    return tuple(page.evaluate(DETAIL_JS))


def test_attention_head_change_updates_the_link_and_the_figure(server, browser):
    """Issue 15: moving the detail's head redraws the heatmap and puts the head in the link; the link, opened in
    another tab, shows the same head."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(f"{server}/attention?merge=0&att_layer=1&att_head=1")  # not the previous-token head it opens on
    settle(page)
    title, before = detail_heatmap(page)
    assert title == "layer 1, head 1", title
    head = page.locator('[data-testid="stSlider"]').filter(has_text="Head").first.get_by_role("slider")
    head.focus()
    head.press("ArrowRight")  # head 1 -> head 2
    deadline = time.time() + 60
    while time.time() < deadline and detail_heatmap(page)[0] != "layer 1, head 2":
        time.sleep(0.2)
    settle(page)
    title, after = detail_heatmap(page)
    assert title == "layer 1, head 2", title
    assert after != before
    assert "att_head=2" in page.url and "att_layer=1" in page.url, page.url
    no_traceback(page)
    other = browser.new_page(viewport={"width": 1400, "height": 1000})
    other.goto(page.url)
    settle(other)
    assert detail_heatmap(other) == (title, after)
    other_head = other.locator('[data-testid="stSlider"]').filter(has_text="Head").first.get_by_role("slider")
    assert other_head.get_attribute("aria-valuetext") == "2"
    no_traceback(other)
    other.close()
    page.close()


QK_JS = """() => {
    const gd = [...document.querySelectorAll('.js-plotly-plot')].find(
        p => ((p.layout || {}).title || {}).text && p.layout.title.text.includes(': from '));
    // (Streamlit's theme wraps a title in <b>)
    return gd ? [gd.layout.title.text.replace(/<[^>]*>/g, ''), gd._fullData[2].y, Array.from(gd._fullData[2].x)]
              : [null, null, null];
}"""


def test_how_a_head_computes_its_weights(server, browser):
    """The switch under the detail draws the head's query and keys and the weights they make, for the token picked
    in "From the token"; another token redraws it and goes into the link; the bars are the map's row."""
    page = browser.new_page(viewport={"width": 1400, "height": 1200})
    page.goto(f"{server}/attention?merge=0&att_layer=1&att_head=1&sentence=The+bank+was+closed.")
    settle(page)
    assert page.evaluate(QK_JS)[0] is None  # off by default
    page.get_by_text("How this head computes its weights").click()
    page.wait_for_function(f"() => ({QK_JS})()[0] !== null", timeout=60_000)
    settle(page)
    title, rows, weights = page.evaluate(QK_JS)
    assert title.startswith("layer 1, head 1: from "), title
    assert abs(sum(weights) - 1) < 1e-4 and len(rows) == len(weights)
    assert "qk=1" in page.url
    box = page.locator('[data-testid="stSelectbox"]').filter(has_text="From the token").first
    box.click()
    page.get_by_role("option").nth(3).click()
    # while the detail redraws there is a moment with no figure (a null title): keep waiting through it
    page.wait_for_function(f"() => (({QK_JS})()[0] || '').endsWith('·3')", timeout=60_000)
    settle(page)
    title, rows, weights3 = page.evaluate(QK_JS)
    assert rows[3].startswith("<b>") and weights3 != weights  # the picked token's own row is bold
    assert "qk_from=3" in page.url, page.url
    no_traceback(page)
    screenshot(page, "attention-query-key.png")
    page.close()


def test_a_row_picked_in_the_head_ranking_opens_that_head_in_detail(server, browser):
    """A click on a row's box in "Heads ranked" shows that head in the detail and puts it in the link; moving the
    head slider afterwards is not pulled back to the picked row."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(f"{server}/attention?merge=0&view=mean&att_layer=1&att_head=1")
    settle(page)
    grid = page.locator('[data-testid="stDataFrame"]').last
    grid.scroll_into_view_if_needed()
    box = grid.bounding_box()
    row_px = 35  # Streamlit's data grid: a 35 px header, then 35 px rows; the selection box is the first column
    page.mouse.click(box["x"] + 12, box["y"] + row_px + 1.5 * row_px)  # the second row
    deadline = time.time() + 60
    while time.time() < deadline and "view=head" not in page.url:
        page.wait_for_timeout(200)  # not time.sleep: Playwright updates page.url only inside its own calls
    settle(page)
    layer, head = (int(re.search(f"att_{k}=(\\d+)", page.url).group(1)) for k in ("layer", "head"))
    assert (layer, head) != (1, 1), page.url  # the top rows of this sentence are not layer 1, head 1
    assert detail_heatmap(page)[0] == f"layer {layer}, head {head}"
    head_slider = page.locator('[data-testid="stSlider"]').filter(has_text="Head").first.get_by_role("slider")
    assert head_slider.get_attribute("aria-valuetext") == str(head)
    head_slider.focus()
    head_slider.press("ArrowLeft" if head > 1 else "ArrowRight")
    moved = head - 1 if head > 1 else head + 1
    deadline = time.time() + 60
    while time.time() < deadline and detail_heatmap(page)[0] != f"layer {layer}, head {moved}":
        time.sleep(0.2)
    open_controls(page)
    page.get_by_text("Hide [CLS] and [SEP]").click()  # a whole-page rerun with the row still ticked
    settle(page)
    assert detail_heatmap(page)[0] == f"layer {layer}, head {moved}"
    no_traceback(page)
    page.close()


def test_a_row_picked_in_the_changed_heads_table_shows_that_head(shipped_server, browser):
    """What fine-tuning changes (the shipped bert-eltec-pos against bert-eltec): a click on a row of "Which attention
    heads changed" shows that head's maps, before and after, and puts it in the link."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(f"{shipped_server}/fine_tuning")
    page.wait_for_selector(".js-plotly-plot", timeout=120_000)
    settle(page)
    caption = page.get_by_text(re.compile(r"^Layer \d+, head \d+ on one sentence"))
    first = caption.inner_text()
    grid = page.locator('[data-testid="stDataFrame"]').last
    grid.scroll_into_view_if_needed()
    box = grid.bounding_box()
    page.mouse.click(box["x"] + 12, box["y"] + 35 + 2.5 * 35)  # the third row's selection box
    deadline = time.time() + 60
    while time.time() < deadline and caption.inner_text() == first:
        time.sleep(0.2)
    settle(page)
    layer, head = (int(re.search(f"ft_att_{k}=(\\d+)", page.url).group(1)) for k in ("layer", "head"))
    assert caption.inner_text().startswith(f"Layer {layer}, head {head} on"), (caption.inner_text(), page.url)
    assert caption.inner_text() != first
    no_traceback(page)
    page.close()


def test_a_corpus_view_of_2000_points_renders_and_a_click_lists_neighbours(server, browser):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(f"{server}/word_senses?source=corpus&corpus=banks.txt&corpus_word=bank&limit=2000&projection=pca&models=bert-eltec")
    settle(page)
    page.wait_for_selector(".js-plotly-plot")
    no_traceback(page)
    points = page.evaluate("() => document.querySelectorAll('.js-plotly-plot')[1]._fullData"
                           ".filter(t => t.name !== 'shared points').reduce((n, t) => n + (t.x || []).length, 0)")
    assert points == 2000  # (a ring over points that share a vector is drawn on top; it is not counted)
    assert page.evaluate("() => document.querySelectorAll('.js-plotly-plot')[1]._fullData[0].type") == "scattergl"
    x, y = page.evaluate("""() => {
        const gd = document.querySelectorAll('.js-plotly-plot')[1];
        gd.scrollIntoView();
        const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, t = gd._fullData[0];
        const r = gd.getBoundingClientRect();
        return [r.left + xa._offset + xa.c2p(t.x[0]), r.top + ya._offset + ya.c2p(t.y[0])];
    }""")
    page.mouse.move(x, y)
    time.sleep(0.5)
    page.mouse.click(x, y)
    page.locator("strong", has_text="Nearest neighbours").first.wait_for(timeout=60_000)
    settle(page)
    no_traceback(page)
    # The concordance is built when opened: then its table lists every occurrence
    tables = page.locator('[data-testid="stDataFrame"]')
    before = tables.count()  # the clicked point's neighbours
    page.get_by_text("Concordance: the 2,000 occurrences in context").click()
    page.get_by_text("Every occurrence in its context").wait_for(timeout=60_000)
    settle(page)
    no_traceback(page)
    assert tables.count() == before + 1
    screenshot(page, "word_senses-corpus-2000.png")
    page.close()


def test_word_senses_in_an_uploaded_corpus(server, browser, tmp_path):
    """Uploads allowed: a file that is not UTF-8 gets a message, a good one is indexed and searched."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(f"{server}/word_senses?source=corpus&corpus=banks.txt&corpus_word=bank&projection=pca&models=bert-eltec")
    settle(page)
    open_controls(page)
    page.get_by_role("combobox", name="Corpus").click()
    page.get_by_role("option", name="my upload").click()
    settle(page)
    bad = tmp_path / "latin1.txt"
    bad.write_bytes("The bank of the river. Caf\xe9 au lait.\n".encode("latin-1"))
    page.locator("input[type=file]").set_input_files(str(bad))
    page.get_by_text("is not UTF-8").first.wait_for(timeout=60_000)
    no_traceback(page)
    page.locator("input[type=file]").set_input_files(str(write_sense_corpus(tmp_path / "mine.txt", 50)))
    page.get_by_text("occurs 50 times in 50 sentences of 3 documents").first.wait_for(timeout=120_000)
    settle(page)
    no_traceback(page)
    page.close()


def test_two_server_processes_share_one_cache(tmp_path_factory, browser):
    """Beyond one process's capacity the README has the operator start several servers behind a reverse proxy:
    they share the assets, the cache (the corpus index, built by both at once here) and the runs folder."""
    assets = build_tiny_assets(tmp_path_factory.mktemp("tiny-assets"))
    corpus = write_sense_corpus(tmp_path_factory.mktemp("corpus") / "banks.txt", 300)
    shared = dict(CTXMODELS_APP_CORPORA=str(corpus), CTXMODELS_CACHE=str(tmp_path_factory.mktemp("cache")),
                  CTXMODELS_APP_RUNS=str(tmp_path_factory.mktemp("runs")))
    servers = [start_server(tmp_path_factory, assets, **shared) for _ in range(2)]
    urls = [next(s) for s in servers]
    pages = [browser.new_page(viewport={"width": 1400, "height": 1000}) for _ in urls]
    for page, url in zip(pages, urls):  # both ask for the index before either has it
        page.goto(f"{url}/word_senses?source=corpus&corpus=banks.txt&corpus_word=bank&projection=pca"
                  "&models=bert-eltec")
    for page in pages:
        settle(page)
        no_traceback(page)
        page.get_by_text("occurs 300 times in 300 sentences of 3 documents").first.wait_for(timeout=60_000)
        page.close()
    for s in servers:
        next(s, None)  # stops the server


def test_training_on_an_uploaded_file(server, browser, tmp_path):
    """The operator allowed uploads: a file that is not UTF-8 gets a clear message, a good one trains a model
    that then appears among the models."""
    from tests.app_fixtures import write_corpus

    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(f"{server}/models")
    settle(page)
    page.get_by_text("upload a text file").click()
    bad = tmp_path / "latin1.txt"
    bad.write_bytes("Caf\xe9 au lait, na\xefve r\xe9sum\xe9.\n".encode("latin-1"))
    page.locator("input[type=file]").set_input_files(str(bad))
    settle(page)
    page.get_by_role("button", name="Start training").click()
    page.get_by_text("is not UTF-8 text").first.wait_for(timeout=60_000)
    no_traceback(page)

    good = write_corpus(tmp_path / "novels.txt")
    page.locator("input[type=file]").set_input_files(str(good))
    settle(page)
    page.get_by_label("Steps").fill("20")
    page.get_by_role("button", name="Start training").click()
    try:
        page.get_by_text("is now selectable on every page").first.wait_for(timeout=240_000)
    except Exception:
        screenshot(page, "models-upload-FAILED.png")
        raise
    settle(page)
    no_traceback(page)
    screenshot(page, "models-trained-from-upload.png")
    page.close()


def test_the_app_opens_on_the_shipped_models(shipped_server, browser):
    """What a user sees first: the shipped minilm-eltec (the default BERT), elmo-eltec and static-eltec, on the
    polysemy page and in fill-in, and bert-eltec-pos on the fine-tuning page (screenshots for a person to look at)."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(f"{shipped_server}/word_senses?projection=pca")
    page.wait_for_selector(".js-plotly-plot", timeout=120_000)
    settle(page)
    no_traceback(page)
    text = page.evaluate("() => document.body.innerText")
    for name in ("minilm-eltec", "elmo-eltec", "static-eltec"):
        assert name in text, name
    # the measurements per layer are drawn when their box is opened: one more figure
    plots = page.locator(".js-plotly-plot")
    before = plots.count()
    page.get_by_text("Per layer: 1-NN sense accuracy").click()
    page.wait_for_function(f"() => document.querySelectorAll('.js-plotly-plot').length > {before}", timeout=60_000)
    settle(page)
    no_traceback(page)
    assert plots.count() == before + 1
    screenshot(page, "shipped-word_senses.png")
    page.goto(f"{shipped_server}/fill_in")
    page.wait_for_selector(".js-plotly-plot", timeout=120_000)
    settle(page)
    no_traceback(page)
    screenshot(page, "shipped-fill_in.png")
    # the shipped ELMo fills the blank beside the default BERT, from both sides of it
    page.goto(f"{shipped_server}/fill_in?fill_models=minilm-eltec&fill_models=elmo-eltec"
              "&text=The+boat+drifted+slowly+towards+the+far+%5BMASK%5D+of+the+river.")
    page.wait_for_function("() => document.querySelectorAll('.js-plotly-plot').length == 2", timeout=120_000)
    settle(page)
    no_traceback(page)
    guesses = page.evaluate("() => [...document.querySelectorAll('.js-plotly-plot')].map(p => p.data[0].y)")
    assert all("end" in g for g in guesses), guesses  # both models' top 5 (bars best on top: the list reversed)
    screenshot(page, "shipped-fill_in-elmo.png")
    page.goto(f"{shipped_server}/elmo_layers")
    settle(page)
    no_traceback(page)
    screenshot(page, "shipped-elmo_layers.png")
    # the shipped fine-tuned model (bert-eltec-pos) beside its base: the comparison is there on a fresh install
    page.goto(f"{shipped_server}/fine_tuning")
    page.wait_for_selector(".js-plotly-plot", timeout=120_000)
    settle(page)
    no_traceback(page)
    text = page.evaluate("() => document.body.innerText")
    assert "bert-eltec-pos" in text and "No fine-tuned model" not in text
    screenshot(page, "shipped-fine_tuning.png")
    page.close()


PATHS = {"": "ctxmodels explorer", "overview": "ctxmodels explorer", "lesson": "A lesson in eight steps",
         "word_senses": "Word senses",
         "elmo_layers": "ELMo layers", "attention": "Attention", "fill_in": "Fill in the blank", "models": "Models",
         "fine_tuning": "What fine-tuning changes", "how_they_learn": "How they learn"}


def test_every_page_path_opens_its_page(server, browser):
    """Each page's own path, the Overview's included (the default page is served at "/" as well)."""
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    for path, title in PATHS.items():
        page.goto(f"{server}/{path}")
        settle(page)
        no_traceback(page)
        assert page.get_by_text("Page not found").count() == 0, path
        assert page.locator("h1").first.inner_text().strip() == title, path
        assert page.url.split("?")[0].rstrip("/") == f"{server}/{path}".rstrip("/"), page.url
    page.close()


def test_presentation_mode_fits_a_projector_and_is_easy_to_leave(shipped_server, browser):
    server = shipped_server  # the shipped models: their probe results are cached, so ELMo layers draws them
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    for name in ("elmo_layers", "fill_in"):  # the main figure starts on the first screen
        page.goto(f"{server}/{name}?present=1")
        settle(page)
        no_traceback(page)
        page.wait_for_selector(".js-plotly-plot")
        top = page.evaluate("() => document.querySelector('.js-plotly-plot').getBoundingClientRect().top")
        assert top < 720 - 150, (name, top)
        screenshot(page, f"present-{name}-1280.png")
    # the formulas scroll sideways rather than being cut off, even in a narrow window
    page.set_viewport_size({"width": 700, "height": 720})
    page.goto(f"{server}/overview?present=1")
    settle(page)
    page.get_by_text("What am I looking at?").first.click()
    page.wait_for_selector(".katex-display")
    wide = page.evaluate("() => Array.from(document.querySelectorAll('.katex-display')).map(e => "
                         "[e.scrollWidth > e.clientWidth, getComputedStyle(e).overflowX])")
    assert any(w for w, _ in wide) and all(o == "auto" for _, o in wide), wide
    # the way out: a visible button at the top of the page, which takes present off the URL
    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto(f"{server}/attention?present=1")
    settle(page)
    leave = page.get_by_role("button", name="Leave presentation")
    box = leave.bounding_box()
    assert leave.is_visible() and box["y"] < 80, box
    links = page.locator('[data-testid="stTopNavLink"]')  # every page's link is clear of the button
    assert links.count() == len(PAGES) - 1  # Models is the operator's: left off the projector's bar
    assert links.last.bounding_box()["x"] + links.last.bounding_box()["width"] <= box["x"]
    leave.click()
    settle(page)
    no_traceback(page)
    assert "present" not in page.url and page.locator("h1").first.inner_text().strip() == "Attention", page.url
    assert page.get_by_role("button", name="Leave presentation").count() == 0
    assert page.locator('[data-testid="stSidebar"]').is_visible()
    page.close()
