"""A visitor who leaves stops their work, in a real server and a real browser: the t-SNE of a large view runs in the
server's worker process, and closing the tab kills it there (app/kit/workers.py), instead of leaving it to run for
nobody."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.app_fixtures import build_tiny_assets
from tests.test_browser import CHROMIUM_ARGS, chromium_path, no_traceback, start_server

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def server_pid(port: str) -> int:
    """The streamlit process serving ``port``."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"streamlit" in b" ".join(argv) and port.encode() in argv:
            return int(proc.name)
    raise AssertionError(f"no server on port {port}")


def workers_of(pid: int) -> list[int]:
    """The server's worker processes (children started by multiprocessing's spawn)."""
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            try:
                argv = Path(f"/proc/{child}/cmdline").read_bytes()
            except OSError:
                continue
            if b"spawn_main" in argv:  # not its resource tracker
                found.append(int(child))
    return found


def cpu_ticks(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as f:
            rest = f.read().rsplit(")", 1)[1].split()
    except OSError:
        raise AssertionError("the worker process ended while its visitor was still there") from None
    return int(rest[11]) + int(rest[12])


def distinct_banks(path: Path, n: int) -> Path:
    """``n`` different sentences with "bank" (a t-SNE of repeated sentences would be over in a moment: it fits each
    distinct vector once)."""
    import random

    words = "the boat drifted to river near willows lent farmer money for new barn water of".split()
    rng = random.Random(0)
    lines = {" ".join(rng.choices(words, k=rng.randint(2, 12)) + ["bank"] + rng.choices(words, k=rng.randint(2, 12)))
             for _ in range(3 * n)}
    path.write_text("\n".join(sorted(lines)[:n]) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def big_server(tmp_path_factory):
    assets = build_tiny_assets(tmp_path_factory.mktemp("tiny-assets"))
    corpus = distinct_banks(tmp_path_factory.mktemp("corpus") / "banks.txt", 5000)
    yield from start_server(tmp_path_factory, assets, CTXMODELS_APP_CORPORA=str(corpus),
                            CTXMODELS_DATA=str(tmp_path_factory.mktemp("no-shared-data")),  # the test's corpus only
                            CTXMODELS_CACHE=str(tmp_path_factory.mktemp("cache")), CTXMODELS_APP_WARMUP="0",
                            CTXMODELS_VISITOR_SECONDS="900")  # time is not what stops it here: leaving is


def test_closing_the_tab_kills_the_projection_it_asked_for(big_server):
    sync_api = pytest.importorskip("playwright.sync_api")
    pid = server_pid(big_server.rsplit(":", 1)[1])
    url = (f"{big_server}/word_senses?source=corpus&corpus_word=bank&limit=5000&models=bert-eltec"
           "&projection=tsne&dims=3&perplexity=100")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.goto(url)
        page.get_by_text("running in the background").first.wait_for(timeout=180_000)
        no_traceback(page)
        deadline = time.time() + 120
        while time.time() < deadline and not workers_of(pid):
            time.sleep(0.25)
        [worker] = workers_of(pid)
        busy = cpu_ticks(worker)
        while time.time() < deadline and cpu_ticks(worker) - busy < 500:  # past its start, into the t-SNE
            time.sleep(0.25)
        assert page.get_by_text("running in the background").count()  # still at work when the visitor leaves
        browser.close()
    left = time.time()
    while time.time() - left < 40 and worker in workers_of(pid):  # the worker waits 10 s for a reload
        time.sleep(0.25)
    assert worker not in workers_of(pid), "the projection went on after its only visitor left"
