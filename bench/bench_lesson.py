"""The Lesson page as a teacher feels it (run by hand; prints a table, no assertions).

    python bench/bench_lesson.py              # every step, 3 new visitors each after the first
    python bench/bench_lesson.py --repeat 5 --steps 1 5
    python bench/bench_lesson.py --keys       # the same with Page Down, as a presenter's clicker sends

The app is served from a snapshot of the tree on the shipped models (``bench_capacity.Server``) and read by headless
Chromium at 1440x900, as ``bench/bench_classroom.py`` does. Per step, in one server's life and in step order (as a
lesson goes):

- *first reveal*: a new visitor opens ``/lesson?step=N`` and clicks "Show what the models here answer", timed from
  the click until the answer's lines are on the page and the page is idle. The first visitor to reveal a step
  computes its answer (and loads the models it needs the first time any step uses them: step 1 loads three);
- *cached reveal*: ``--repeat`` more new visitors do the same; the server answers from its shared results;
- *Next*: from a click on Next until the next step's question is shown and the page is idle.

With ``--keys`` the reveal and the move to the next step are each a Page Down (the right-hand button's shortcut)
instead of a click.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_capacity import Server  # noqa: E402
from bench.bench_corpus_senses import CHROMIUM, CHROMIUM_ARGS, Browser, server_idle  # noqa: E402

LAST_STEP = 8  # the lesson's steps: no Next after the last

ANSWERED_JS = "() => document.querySelectorAll('[data-testid=\"stMainBlockContainer\"] li').length"
TITLE_JS = "() => Array.from(document.querySelectorAll('h3')).map(e => e.textContent).join(' | ')"


def reveal(b: Browser, url: str, step: int, keys: bool = False) -> float:
    b.new()
    b.page.goto(f"{url}/lesson?step={step}")
    b.page.get_by_text("Ask the class.").wait_for(timeout=120_000)
    b.settle()
    t0 = time.perf_counter()
    if keys:
        b.page.keyboard.press("PageDown")
    else:
        b.page.get_by_text("Show what the models here answer").click()
    seconds, _ = b.wait(t0, lambda s: b.page.evaluate(ANSWERED_JS) > 0, timeout=600)
    b.settle()
    return seconds


def next_step(b: Browser, step: int, keys: bool = False) -> float:
    t0 = time.perf_counter()
    if keys:
        b.page.keyboard.press("PageDown")
    else:
        b.page.get_by_role("button", name="Next").click()
    seconds, _ = b.wait(t0, lambda s: f"Step {step + 1} of" in b.page.evaluate(TITLE_JS), timeout=120)
    b.settle()
    return seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3, help="new visitors per step after the first (default 3)")
    ap.add_argument("--steps", type=int, nargs="*", default=list(range(1, LAST_STEP + 1)))
    ap.add_argument("--keys", action="store_true", help="Page Down instead of the clicks")
    ap.add_argument("--cpus", default=None, help="pin the server with taskset (e.g. 0)")
    args = ap.parse_args()

    from playwright.sync_api import sync_playwright

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        server = Server(Path(tmp), args.cpus)
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                b = Browser(browser, server)
                for step in args.steps:
                    server_idle(server)
                    first = reveal(b, server.url, step, args.keys)
                    cached = []
                    for _ in range(args.repeat):
                        server_idle(server)
                        cached.append(reveal(b, server.url, step, args.keys))
                    nxt = next_step(b, step, args.keys) if step < LAST_STEP else None
                    rows.append((step, first, cached, nxt))
                    print(f"step {step}: first {first:.2f} s, cached {[round(c, 2) for c in cached]}", flush=True)
                browser.close()
        finally:
            server.stop()

    print("\n| step | first reveal (s) | cached reveal, median (min-max) (s) | Next (s) |")
    print("|---:|---:|---:|---:|")
    for step, first, cached, nxt in rows:
        spread = f"{statistics.median(cached):.2f} ({min(cached):.2f}-{max(cached):.2f})" if cached else "-"
        print(f"| {step} | {first:.2f} | {spread} | {f'{nxt:.2f}' if nxt is not None else '-'} |")


if __name__ == "__main__":
    main()
