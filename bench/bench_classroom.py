"""The Word senses page as a class feels it (issue 15): one visitor's actions, then a class opening the same link at
once (run by hand; prints tables, no assertions).

    python bench/bench_classroom.py                 # one visitor, then 20 students within a minute
    python bench/bench_classroom.py --students 0    # one visitor only
    python bench/bench_classroom.py --students 20 --within 60 --repeat 7
    python bench/bench_classroom.py --students 0 --query find=river,water   # the same with a search on

The page is the lesson's default, ``/word_senses`` (the preset "bank", the three shipped models, UMAP), served by
``streamlit run app/Home.py`` from a snapshot of the tree (``bench_capacity.Server``) and read by headless Chromium
at 1440x900 (Debian's /usr/bin/chromium, software rendering, on the same cores as the server: a real class's
browsers run on the students' own machines, so these are upper bounds). Each action is timed from the action until
the page is idle: the changed figure drawn, no spinner, skeleton or stale element, and the script run it started
finished (read from the page's websocket, which also tells a fragment run from a whole-page run).

One visitor: the first visit after the server started (UMAP's warm-up, the models' first embeddings), a new visitor
once the server has every result cached (a new browser context), the layer switch of ELMo's row (ArrowLeft /
ArrowRight on its slider), the projection switch UMAP -> PCA -> UMAP once both are cached, and the view switch
2-D -> 3-D (the first one fits UMAP in 3-D for every model) and back, then again once both are cached. Then
``--students`` browser contexts open the same link at random moments within ``--within`` seconds (a fixed seed),
each timed from its own start until its page is complete and idle: p50 / p95 / max, errors, and the server's
memory before and after. What a new visitor costs the machine in CPU-seconds (the server's part, and everything
else: the browser drawing the page) says how much of the class's time on one machine is the browsers' own.

Beside the new visitor, in the same run and browser: the floor, a bare Streamlit page (a title and as many small
Plotly scatters as the page has figures) opened the same way. No page built on Streamlit and Plotly opens faster
here than that; what the page takes beyond it is the app's own.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_capacity import Server, machine_busy  # noqa: E402
from bench.bench_corpus_senses import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    STATE_JS,
    VIEWPORT,
    Action,
    Browser,
    server_idle,
)

PAGE = "/word_senses"
ELMO_RIGHT = 2  # the figures: static's one panel (0), then ELMo's (1: context-free, 2: the chosen layer)


def complete(s: dict, plots: int) -> bool:
    """Every figure of the page drawn, and each model row's caption naming the projection it shows."""
    return s["plots"] >= plots and len(s["methods"]) >= 3 and not s["busy"] and not s["progress"]


def visit(b: Browser, url: str, plots: int, action: Action, server=None, cpu: list | None = None) -> dict:
    """A new browser context opens the page; ``cpu`` gets (server, whole machine) CPU-seconds until it is idle."""
    b.new()
    machine0, server0 = machine_busy(), server.cpu() if server else 0.0
    t0 = time.perf_counter()
    b.page.goto(url, wait_until="commit")
    seconds, s = b.wait(t0, lambda s: complete(s, plots) and s["methods"][0] == "UMAP", every=0.05)
    if cpu is not None and server is not None:
        cpu.append((server.cpu() - server0, machine_busy() - machine0))
    full, frag = b.wire.counts(t0, time.perf_counter())
    action.times.append(seconds)
    action.full += full
    action.fragments += frag
    after = b.settle()
    if after:
        action.notes.append(f"{after} more run(s) after the page looked idle")
    return s


def switch(b: Browser, server, do, done, action: Action, plot: int) -> None:
    server_idle(server)
    before = b.state(plot)["fingerprint"]
    bytes0 = b.wire.bytes
    t0 = time.perf_counter()
    do()
    seconds, _ = b.wait(t0, lambda s: s["fingerprint"] not in (None, before) and done(s), plot=plot, timeout=180)
    full, frag = b.wire.counts(t0, time.perf_counter())
    action.times.append(seconds)
    action.full += full
    action.fragments += frag
    action.mbytes += (b.wire.bytes - bytes0) / 2**20
    b.settle()


def open_controls(b: Browser) -> None:
    """Open the page's folded "Controls" box once (a page opens on its figure, its inputs folded); opening it runs
    nothing on the server."""
    summary = b.page.locator('[data-testid="stExpander"] summary').filter(has_text="Controls").first
    if summary.count() and summary.locator("xpath=..").get_attribute("open") is None:
        summary.click()


def choose(b: Browser, label: str, option: str) -> None:
    open_controls(b)
    box = b.page.get_by_role("combobox", name=label, exact=True)
    box.click()
    box.fill(option)  # Streamlit's selectbox filters its options as one types
    b.page.keyboard.press("Enter")


def one_visitor(server, repeat: int, cpu: list, page: str = PAGE) -> tuple[list[Action], int]:
    """The one-visitor actions; ``cpu`` gets each new visitor's (server, whole machine) CPU-seconds."""
    from playwright.sync_api import sync_playwright

    actions = {k: Action(k, 0) for k in ("first visit (server just started)", "new visitor, results cached",
                                         "layer switch (ELMo row)", "projection switch, cached (UMAP <-> PCA)",
                                         "view switch to 3-D, first (UMAP in 3-D)",
                                         "view switch, cached (2-D <-> 3-D)")}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        b = Browser(browser, server)
        url = server.url + page
        # The first visit: how many figures a complete page has is learnt here (and checked by the later ones).
        b.new()
        t0 = time.perf_counter()
        b.page.goto(url, wait_until="commit")
        seconds, s = b.wait(t0, lambda s: len(s["methods"]) >= 3 and s["methods"][0] == "UMAP" and not s["busy"],
                            timeout=600, every=0.1)
        b.settle(quiet=3.0)
        plots = b.state()["plots"]
        actions["first visit (server just started)"].times.append(seconds)
        for _ in range(repeat):
            server_idle(server)
            visit(b, url, plots, actions["new visitor, results cached"], server, cpu)
        slider = b.page.locator('[data-testid="stSlider"]').filter(has_text="Layer").first.get_by_role("slider")
        for i in range(repeat):
            key = "ArrowLeft" if i % 2 == 0 else "ArrowRight"
            switch(b, server, lambda key=key: (slider.focus(), slider.press(key)), lambda s: True,
                   actions["layer switch (ELMo row)"], ELMO_RIGHT)
        choose(b, "Projection", "PCA")  # both projections cached from here on
        b.settle()
        choose(b, "Projection", "UMAP")
        b.settle()
        for i in range(repeat):
            option = "PCA" if i % 2 == 0 else "UMAP"
            switch(b, server, lambda option=option: choose(b, "Projection", option),
                   lambda s, option=option: complete(s, plots) and s["methods"][0] == option,
                   actions["projection switch, cached (UMAP <-> PCA)"], ELMO_RIGHT)
        if b.state()["methods"][0] != "UMAP":
            choose(b, "Projection", "UMAP")
            b.settle()
        open_controls(b)
        for i in range(repeat + 1):
            dims = "3-D" if i % 2 == 0 else "2-D"
            name = "view switch to 3-D, first (UMAP in 3-D)" if i == 0 else "view switch, cached (2-D <-> 3-D)"
            switch(b, server, lambda dims=dims: b.page.get_by_text(dims, exact=True).click(),
                   lambda s: complete(s, plots), actions[name], ELMO_RIGHT)
        browser.close()
    return list(actions.values()), plots


FLOOR_APP = """
import numpy as np, plotly.graph_objects as go, streamlit as st
st.set_page_config(layout="wide")
st.title("Floor")
rng = np.random.default_rng(0)
cols = st.columns(2)
for i in range({plots}):
    xy = rng.normal(size=(60, 2))
    cols[i % 2].plotly_chart(go.Figure(go.Scatter(x=xy[:, 0], y=xy[:, 1], mode="markers")), key=f"p{{i}}")
"""


def floor(workdir: Path, plots: int, repeat: int) -> Action:
    """New visitors to a bare Streamlit page with ``plots`` small Plotly figures, timed like the page's."""
    from playwright.sync_api import sync_playwright

    app = workdir / "floor.py"
    app.write_text(FLOOR_APP.format(plots=plots))
    action = Action(f"floor: a bare page with {plots} small Plotly figures", 0)
    server = Server(workdir, cpus=None, script=str(app))  # the same snapshot's server settings
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            b = Browser(browser, server)
            for i in range(repeat + 1):  # the first one warms the server up and is not counted
                b.new()
                t0 = time.perf_counter()
                b.page.goto(server.url + "/", wait_until="commit")
                seconds, _ = b.wait(t0, lambda s: s["plots"] >= plots, every=0.05, timeout=120)
                if i:
                    action.times.append(seconds)
                    action.full += b.wire.counts(t0, time.perf_counter())[0]
            browser.close()
    finally:
        server.stop()
    return action


async def student(browser, url: str, delay: float, plots: int, results: list, errors: list) -> None:
    await asyncio.sleep(delay)
    context = await browser.new_context(viewport=VIEWPORT)
    page = await context.new_page()
    t0 = time.perf_counter()
    try:
        await page.goto(url, wait_until="commit", timeout=300_000)
        first_done = None
        while time.perf_counter() - t0 < 600:
            s = await page.evaluate(STATE_JS, 1)
            if s["exceptions"]:
                errors.append(s["exceptions"][0])
                return
            alerts = [a for a in s["alerts"].split(" | ") if "still running" in a or "failed" in a]
            if alerts:
                errors.append(alerts[0][:200])
            if complete(s, plots) and s["methods"][0] == "UMAP":
                first_done = first_done or time.perf_counter()
                if time.perf_counter() - first_done > 1.0:  # and it stays so: the page is idle
                    results.append(first_done - t0)
                    return
            else:
                first_done = None
            await asyncio.sleep(0.1)
        errors.append("not complete after 600 s")
    except Exception as e:  # noqa: BLE001 - a student's failure is a result, not the end of the bench
        errors.append(f"{type(e).__name__}: {e}"[:200])
    finally:
        await context.close()


async def a_class(url: str, n: int, within: float, plots: int, seed: int) -> tuple[list[float], list[str]]:
    from playwright.async_api import async_playwright

    rng = random.Random(seed)
    delays = sorted(rng.uniform(0, within) for _ in range(n))
    results: list[float] = []
    errors: list[str] = []
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        await asyncio.gather(*(student(browser, url, d, plots, results, errors) for d in delays))
        await browser.close()
    return results, errors


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    v = sorted(values)
    return v[min(len(v) - 1, max(0, round(q * (len(v) - 1))))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=7, help="timed repetitions of each one-visitor action")
    ap.add_argument("--students", type=int, default=20, help="browser contexts that open the page at once (0: none)")
    ap.add_argument("--within", type=float, default=60.0, help="seconds over which the students arrive")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--query", nargs="*", default=[], type=lambda s: tuple(s.split("=", 1)),
                    help="more URL parameters, NAME=VALUE (find=river,water: the page with a search on)")
    args = ap.parse_args()
    page = PAGE + ("?" + urllib.parse.urlencode(args.query) if args.query else "")

    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    print(f"machine: {os.cpu_count()} CPUs, load average {' / '.join(load)} at the start")
    workdir = Path(tempfile.mkdtemp(prefix="bench-classroom-"))
    server = Server(workdir, cpus=None)
    try:
        cpu: list[tuple[float, float]] = []
        actions, plots = one_visitor(server, args.repeat, cpu, page)
        server_idle(server)
        actions.insert(2, floor(workdir, plots, args.repeat))
        print(f"\nOne visitor, {page} (the page has {plots} figures; from the action until the page is idle)\n")
        print("| action | median s | n | runs s | whole-page runs | fragment runs | MB received / action |")
        print("|---|---|---|---|---|---|---|")
        for a in actions:
            runs = " ".join(f"{t:.2f}" for t in a.times)
            print(f"| {a.what} | {a.median:.2f} | {len(a.times)} | {runs} | {a.full} | {a.fragments} | "
                  f"{a.mbytes / max(len(a.times), 1):.2f} |")
            for note in a.notes:
                print(f"|   note | {note} | | | | | |")
        single = statistics.median(actions[1].times)
        server_cpu = statistics.median(c[0] for c in cpu)
        machine = statistics.median(c[1] for c in cpu)
        print(f"\nA new visitor costs the machine {machine:.2f} CPU-s (median): the server {server_cpu:.2f}, "
              f"the browser and this bench the other {machine - server_cpu:.2f}.")
        if args.students:
            server_idle(server)
            rss0, _ = server.mem()
            cpu0, t0 = server.cpu(), time.perf_counter()
            results, errors = asyncio.run(a_class(server.url + page, args.students, args.within, plots, args.seed))
            rss1, peak = server.mem()
            busy = (server.cpu() - cpu0) / (time.perf_counter() - t0)
            print(f"\n{args.students} students open {page} within {args.within:.0f} s (results cached on the server)\n")
            print("| students | complete | errors | p50 s | p95 s | max s | p95 / one visitor | server RSS before -> "
                  "after (peak) |")
            print("|---|---|---|---|---|---|---|---|")
            p95 = percentile(results, 0.95)
            print(f"| {args.students} | {len(results)} | {len(errors)} | {percentile(results, 0.5):.2f} | "
                  f"{p95:.2f} | {max(results, default=float('nan')):.2f} | {p95 / single:.1f}x | "
                  f"{rss0 / 1024:.2f} -> {rss1 / 1024:.2f} GB ({peak / 1024:.2f}) |")
            for e in errors[:10]:
                print(f"  error: {e}")
            cores = os.cpu_count() or 1
            print(f"\nthe server used {busy:.2f} cores on average meanwhile. The {args.students} browsers bring "
                  f"{args.students} x {machine - server_cpu:.1f} = {args.students * (machine - server_cpu):.0f} "
                  f"CPU-s of their own drawing, arriving within {args.within:.0f} s on a machine of {cores} cores "
                  f"({cores * args.within:.0f} CPU-s): on one machine this part times the browsers more than the "
                  "server (in a class they run on the students' own machines; bench_capacity.py times the server "
                  "alone)")
    finally:
        server.stop()
    with open("/proc/loadavg") as f:
        print(f"\nload average at the end: {' / '.join(f.read().split()[:3])}")


if __name__ == "__main__":
    main()
