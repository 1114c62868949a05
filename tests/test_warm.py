"""``python -m app.warm``: a running server's caches filled by visiting it as students would (the Lesson's steps with
their answers, every page they link to, the views slow on first use), through the server's own websocket. On a
server of the tiny models (tests/app_fixtures.py); the timings cold and warmed are bench/bench_warm.py's."""

from __future__ import annotations

import pytest

from app import warm
from tests.app_fixtures import build_tiny_assets
from tests.test_browser import start_server

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    assets = build_tiny_assets(tmp_path_factory.mktemp("tiny-assets"))
    yield from start_server(tmp_path_factory, assets, CTXMODELS_CACHE=str(tmp_path_factory.mktemp("cache")))


def test_page_names_from_links():
    assert warm._page_name("views/word_senses/page.py") == "word_senses"
    assert warm._page_name("fill_in") == "fill_in"
    assert warm._page_name("") == ""


def test_a_visit_runs_the_page_in_the_server(server):
    v = warm.visit(server, "attention", "sentence=The+bank+was+closed.")
    assert v.runs >= 1 and v.seconds > 0 and not v.problems, v
    again = warm.visit(server, "lesson", "step=1&reveal=1")
    assert again.links and all(isinstance(q, str) for _, q in again.links)


def test_warming_visits_every_lesson_step_and_the_pages_it_links_to(server, capsys):
    done = warm.warm(server, report=lambda v: None)
    lesson = [v for v in done if v.page == "lesson"]
    assert [v.query for v in lesson] == [f"step={n}&reveal=1" for n in range(1, warm.LESSON_STEPS + 1)]
    linked = {v.page for v in done[len(lesson):-len(warm.SLOW_FIRST)]}
    assert {"word_senses", "fill_in", "attention"} <= linked, linked
    assert not [v for v in done if v.problems and v.page == "lesson"], [v.problems for v in done]
    assert warm.main([server]) == 0
    assert "warmed" in capsys.readouterr().out


def test_an_unreachable_server_is_one_line(capsys):
    assert warm.main(["http://127.0.0.1:9"]) == 1
    assert "cannot reach the app" in capsys.readouterr().err


def test_the_start_up_option_warms_the_lesson_once_per_server(tmp_path_factory):
    """``CTXMODELS_WARM_LESSON=1`` (``--warm-lesson``): the server's first visit starts the same visits in the
    background, inside the server; its console says when they are done."""
    import time

    assets = build_tiny_assets(tmp_path_factory.mktemp("tiny-assets-warm"))
    base = tmp_path_factory.getbasetemp()
    logs_before = set(base.glob("**/server.log"))
    served = start_server(tmp_path_factory, assets, CTXMODELS_WARM_LESSON="1",
                          CTXMODELS_CACHE=str(tmp_path_factory.mktemp("cache-warm")))
    url = next(served)
    try:
        log = max(set(base.glob("**/server.log")) - logs_before, key=lambda p: p.stat().st_mtime)
        warm.visit(url, "models")  # the first visitor
        deadline = time.time() + 600
        while time.time() < deadline and "views warmed" not in log.read_text():  # done, or the deadline
            time.sleep(1)
        text = log.read_text()
        # inside the server: at least the first step visited (on a machine busy with other suites the whole
        # warm-up may take longer than the wait; test_warming_visits_every_lesson_step checks the whole of it)
        assert "lesson warm-up: " in text and "/lesson?step=1&reveal=1" in text, text[-2000:]
        assert text.count("views warmed") <= 1
        warm.visit(url, "models")  # a second visitor starts nothing more
        time.sleep(2)
        assert log.read_text().count("lesson warm-up:") == text.count("lesson warm-up:")
    finally:
        next(served, None)
