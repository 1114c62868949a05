"""Fill in the blank as a person feels it (issue 15): a keystroke to the updated chart, in headless Chromium, with
the shipped models (run by hand; prints a table, no assertions).

    python bench/bench_fill_in.py                 # 15 keystrokes, the median and its parts; 5 words typed
    python bench/bench_fill_in.py --keys 25 --label "after"
    python bench/bench_fill_in.py --tree /tmp/old-checkout --label before    # another version, to compare
    python bench/bench_fill_in.py --server-env OMP_NUM_THREADS=1             # the server's environment

``streamlit run app/Home.py`` from a snapshot of the tree (``bench_capacity.Server``: app/, ctxmodels/, the shipped
models in assets/ and the repository's .streamlit settings) and headless Chromium at 1440x900 (Debian's
/usr/bin/chromium). The page opens on ``/fill_in?text=...[MASK]...`` with the box focused at the end of the
sentence; then one letter at a time is typed (no spaces: every keystroke changes the pieces the model sees, so
every keystroke brings new guesses, computed afresh: nothing is cached), and each keystroke is timed from the key
press until the page is idle with the new guesses drawn: the chart's bars differ from those before the key (read
every animation frame in the page), no element is stale, no spinner or skeleton is shown, and the script run the
key started has finished (read from the page's websocket, which also tells a fragment run from a whole-page run
and counts the bytes received). Before each key the server is left to become idle.

Then (``--bursts``) words typed at a person's pace (``--gap`` ms between keys, 8 letters a word), each timed from
its last key until the page is idle with the chart for the whole word; with the runs the word cost the server
(whole page, fragment, and stopped early because a newer keystroke came) and its CPU-seconds: what a short
debounce costs when keys come faster than the page answers.

The parts of a keystroke: *to the server*: from the key until the browser sends the rerun (the box's debounce and
the component's own work); *server run*: from that message until the server's ``script_finished`` arrives;
*drawing*: from then until the page is idle with the new chart (when the chart is drawn before the run ends, the
page is idle when the run ends). The server's CPU-seconds per keystroke come from /proc.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
VIEWPORT = {"width": 1440, "height": 900}
START = "The boat drifted slowly towards the far [MASK] of the "
LETTERS = "riverbankswillowsandfieldsbeyondthehills"

# The first chart's bars (tokens and probabilities) and whether anything on the page is busy.
STATE_JS = """() => {
    const busy = document.querySelectorAll(
        '[data-testid="stSkeleton"], [data-testid="stSpinner"], [data-stale="true"]').length;
    const gd = document.querySelector('.js-plotly-plot');
    let bars = null;
    if (gd && gd.data && gd.data.length) {
        const t = gd.data[0];
        bars = Array.from(t.y || []).join('|') + '#' + Array.from(t.x || []).map(v => (+v).toFixed(6)).join('|');
    }
    const alerts = Array.from(document.querySelectorAll('[data-testid="stException"]')).map(e => e.textContent);
    return {busy: busy, bars: bars, exceptions: alerts, now: Date.now() / 1000};
}"""

# Resolves (polled every animation frame) with the time when the chart differs from ``before`` and nothing is busy.
CHANGED_JS = """(before) => {
    const busy = document.querySelectorAll(
        '[data-testid="stSkeleton"], [data-testid="stSpinner"], [data-stale="true"]').length;
    if (busy) return false;
    const gd = document.querySelector('.js-plotly-plot');
    if (!gd || !gd.data || !gd.data.length) return false;
    const t = gd.data[0];
    const bars = Array.from(t.y || []).join('|') + '#' + Array.from(t.x || []).map(v => (+v).toFixed(6)).join('|');
    return bars !== before ? Date.now() / 1000 : false;
}"""

# Installed once: every animation frame, the page notes (time, busy, the first chart's bars) when either changed.
RECORDER_JS = """() => {
    if (window.__record) return;
    window.__record = [];
    let last = null;
    const tick = () => {
        const busy = document.querySelectorAll(
            '[data-testid="stSkeleton"], [data-testid="stSpinner"], [data-stale="true"]').length > 0;
        const gd = document.querySelector('.js-plotly-plot');
        let bars = null;
        if (gd && gd.data && gd.data.length) {
            const t = gd.data[0];
            bars = Array.from(t.y || []).join('|') + '#' + Array.from(t.x || []).map(v => (+v).toFixed(6)).join('|');
        }
        const key = busy + '@' + bars;
        if (key !== last) { window.__record.push([Date.now() / 1000, busy, bars]); last = key; }
        requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
}"""

NOT_BUSY_JS = """() => document.querySelectorAll(
    '[data-testid="stSkeleton"], [data-testid="stSpinner"], [data-stale="true"]').length ? false : Date.now() / 1000"""


class Wire:
    """What the page's websocket carries: the reruns the browser asks for (time, whether for a fragment) and the
    ends of script runs (time, status: 0 the whole page, 3 a fragment, 2 stopped early for a rerun), with the bytes
    received. Times are ``time.time()``, as the page's ``Date.now()``."""

    def __init__(self, page) -> None:
        from streamlit.proto.BackMsg_pb2 import BackMsg
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        self._back, self._forward = BackMsg, ForwardMsg
        self.sent: list[tuple[float, bool]] = []
        self.finished: list[tuple[float, int]] = []
        self.bytes = 0
        page.on("websocket", self._socket)

    def _socket(self, ws) -> None:
        if ws.url.endswith("/_stcore/stream"):
            ws.on("framereceived", self._received)
            ws.on("framesent", self._sent)

    def _sent(self, payload) -> None:
        now = time.time()
        if isinstance(payload, str):
            return
        msg = self._back()
        try:
            msg.ParseFromString(payload)
        except Exception:  # noqa: BLE001 - not a BackMsg
            return
        if msg.WhichOneof("type") == "rerun_script":
            self.sent.append((now, bool(msg.rerun_script.fragment_id)))

    def _received(self, payload) -> None:
        now = time.time()
        if isinstance(payload, str):
            return
        self.bytes += len(payload)
        msg = self._forward()
        try:
            msg.ParseFromString(payload)
        except Exception:  # noqa: BLE001 - not a ForwardMsg
            return
        if msg.WhichOneof("type") == "script_finished":
            self.finished.append((now, int(msg.script_finished)))


@dataclass
class Key:
    total: float
    to_server: float
    server: float
    drawing: float
    cpu: float
    kbytes: float
    full: int
    fragments: int
    reruns: int


@dataclass
class Result:
    keys: list[Key] = field(default_factory=list)
    bursts: list = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def median(self, what: str) -> float:
        values = [getattr(k, what) for k in self.keys]
        return statistics.median(values) if values else float("nan")


def server_idle(server, quiet: float = 0.05, limit: float = 120) -> None:
    """Wait until the server process is idle (under ``quiet`` cores over a quarter of a second)."""
    t0 = time.time()
    while time.time() - t0 < limit:
        c = server.cpu()
        time.sleep(0.25)
        if server.cpu() - c < quiet * 0.25:
            return


def settle(page, wire: Wire, quiet: float = 0.8, timeout: float = 120) -> int:
    """Untimed: wait until the chart and the runs have not changed for ``quiet`` seconds; the runs that ended."""
    n0 = len(wire.finished)
    deadline = time.time() + timeout
    last, since = None, time.time()
    while time.time() < deadline:
        s = page.evaluate(STATE_JS)
        if s["exceptions"]:
            raise RuntimeError(f"a traceback on the page: {s['exceptions'][0][:300]}")
        key = None if s["busy"] else (s["bars"], len(wire.finished))
        if key is None or key != last:
            last, since = key, time.time()
        elif time.time() - since > quiet:
            break
        page.wait_for_timeout(100)
    return len(wire.finished) - n0


def keystroke(page, wire: Wire, server, letter: str, timeout: float = 60) -> Key:
    before = page.evaluate(STATE_JS)["bars"]
    n_sent, n_fin, bytes0, cpu0 = len(wire.sent), len(wire.finished), wire.bytes, server.cpu()
    t0 = time.time()
    page.keyboard.press(letter)
    drawn = page.wait_for_function(CHANGED_JS, arg=before, polling="raf", timeout=timeout * 1000).json_value()
    deadline = time.time() + timeout
    # the run the key started has ended (not one stopped early for a newer keystroke)
    while not [t for t, s in wire.finished[n_fin:] if s != 2] and time.time() < deadline:
        page.wait_for_timeout(5)
    ends = [t for t, s in wire.finished[n_fin:] if s != 2]
    if not ends:
        raise RuntimeError("the run did not finish")
    end = ends[0]
    idle = drawn
    if end > drawn:  # the chart came before the run ended: idle once nothing is stale any more
        idle = max(end, page.wait_for_function(NOT_BUSY_JS, polling="raf", timeout=timeout * 1000).json_value())
    sent = wire.sent[n_sent][0] if len(wire.sent) > n_sent else float("nan")
    settle(page, wire)
    server_idle(server)
    runs = wire.finished[n_fin:]
    return Key(total=idle - t0, to_server=sent - t0, server=end - sent, drawing=idle - end,
               cpu=server.cpu() - cpu0, kbytes=(wire.bytes - bytes0) / 1024,
               full=sum(1 for _, s in runs if s == 0), fragments=sum(1 for _, s in runs if s == 3),
               reruns=len(wire.sent) - n_sent)


@dataclass
class Burst:
    total: float
    cpu: float
    full: int
    fragments: int
    stopped: int
    sent: int


def burst(page, wire: Wire, server, letters: str, gap_ms: float, timeout: float = 60) -> Burst:
    """Type ``letters`` ``gap_ms`` apart; from the last key until the chart differs from before the word, the page
    is idle and every run asked for has ended."""
    before = page.evaluate(STATE_JS)["bars"]
    n_sent, n_fin, cpu0 = len(wire.sent), len(wire.finished), server.cpu()
    for i, letter in enumerate(letters):
        if i:
            page.wait_for_timeout(gap_ms)
        t0 = time.time()
        page.keyboard.press(letter)
    page.wait_for_function(CHANGED_JS, arg=before, polling="raf", timeout=timeout * 1000)
    page.wait_for_timeout(max(0.0, t0 + 0.4 - time.time()) * 1000)  # the box has sent the last key by then
    deadline = time.time() + timeout
    end = None
    while time.time() < deadline:  # a run ended after the last rerun asked for
        ends = [t for t, s in wire.finished[n_fin:] if s != 2]
        last_sent = wire.sent[-1][0] if len(wire.sent) > n_sent else t0
        if ends and ends[-1] >= last_sent:
            end = ends[-1]
            break
        page.wait_for_timeout(5)
    if end is None:
        raise RuntimeError("the runs did not finish")
    page.wait_for_timeout(300)
    # From the page's own record (every animation frame): when the word's chart was drawn, and when after the last
    # run's end nothing was busy any more.
    record = page.evaluate("() => window.__record")
    final, i = record[-1][2], len(record) - 1
    while i > 0 and record[i - 1][2] == final:  # the word's chart, on the page since record[i]
        i -= 1
    drawn = record[i][0]
    at_end = [r for r in record if r[0] <= end]
    calm = end if at_end and not at_end[-1][1] else min((t for t, busy, _ in record if t > end and not busy),
                                                        default=end)
    idle = max(drawn, calm)
    settle(page, wire)
    server_idle(server)
    runs = [s for _, s in wire.finished[n_fin:]]
    return Burst(total=idle - t0, cpu=server.cpu() - cpu0, full=runs.count(0), fragments=runs.count(3),
                 stopped=runs.count(2), sent=len(wire.sent) - n_sent)


def run(args) -> tuple[Result, dict]:
    from playwright.sync_api import sync_playwright

    from bench.bench_capacity import Server

    workdir = Path(tempfile.mkdtemp(prefix="bench-fill-in-"))
    result, info = Result(), {}
    try:
        server = Server(workdir, None, args.tree, **dict(args.server_env))
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                context = browser.new_context(viewport=VIEWPORT)
                page = context.new_page()
                wire = Wire(page)
                url = f"{server.url}/fill_in?" + urllib.parse.urlencode([("text", START), *args.query])
                page.goto(url)
                page.wait_for_selector(".js-plotly-plot", timeout=180_000)
                settle(page, wire, quiet=2.0)
                page.evaluate(RECORDER_JS)
                box = page.locator("input.stkeyup__input")
                box.click()
                page.keyboard.press("End")
                server_idle(server)
                letters = (LETTERS * (1 + args.keys // len(LETTERS)))[:args.keys + args.warm]
                for i, letter in enumerate(letters):
                    key = keystroke(page, wire, server, letter)
                    if i >= args.warm:
                        result.keys.append(key)
                    print(f"  {'warm-up' if i < args.warm else f'key {i - args.warm + 1:>2}'} {letter!r}: "
                          f"{key.total * 1000:6.0f} ms (to server {key.to_server * 1000:4.0f}, server "
                          f"{key.server * 1000:4.0f}, drawing {key.drawing * 1000:4.0f}); cpu {key.cpu:.3f} s, "
                          f"{key.kbytes:.1f} kB, runs {key.full} whole page / {key.fragments} fragment",
                          flush=True)
                words = [LETTERS[i:i + 8] for i in range(0, len(LETTERS) - 7, 8)] * 3
                for i in range(args.bursts):
                    b = burst(page, wire, server, words[i % len(words)], args.gap)
                    result.bursts.append(b)
                    print(f"  word {i + 1} ({args.gap:.0f} ms between keys): last key -> chart "
                          f"{b.total * 1000:.0f} ms; cpu {b.cpu:.3f} s; {b.sent} reruns asked, runs {b.full} whole "
                          f"page / {b.fragments} fragment / {b.stopped} stopped early", flush=True)
                info["typed"] = box.input_value()
                info["url"] = page.url
                browser.close()
        finally:
            server.stop()
            with open(server.log.name) as log:
                info["log"] = log.read()[-3000:]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return result, info


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--keys", type=int, default=15, help="timed keystrokes (the median is reported)")
    ap.add_argument("--warm", type=int, default=2, help="keystrokes first, not timed (the first draws, imports)")
    ap.add_argument("--bursts", type=int, default=5, help="words typed at a person's pace after the keystrokes")
    ap.add_argument("--gap", type=float, default=120, help="ms between the keys of a word (--bursts)")
    ap.add_argument("--tree", type=Path, default=ROOT,
                    help="the checkout whose app/, ctxmodels/ and assets/ are served (another version, to compare)")
    ap.add_argument("--server-env", nargs="*", default=[], type=lambda s: tuple(s.split("=", 1)),
                    help="environment of the server, NAME=VALUE (OMP_NUM_THREADS=1: torch on one thread)")
    ap.add_argument("--label", default="", help="a name for this run in the table (before, after, ...)")
    ap.add_argument("--query", nargs="*", default=[], type=lambda s: tuple(s.split("=", 1)),
                    help="more URL parameters, NAME=VALUE (a name given twice: both values, as "
                         "fill_models=minilm-eltec fill_models=bert-eltec)")
    args = ap.parse_args()
    load = os.getloadavg()
    print(f"machine: {os.cpu_count()} CPUs, load average {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} at the start")
    result, info = run(args)
    load = os.getloadavg()
    ms = lambda what: f"{result.median(what) * 1000:.0f}"  # noqa: E731
    times = sorted(k.total for k in result.keys)
    print(f"\nFill in the blank, the page's default models, headless Chromium 1440x900: a keystroke until the page "
          f"is idle with the new chart (medians of {len(result.keys)} keystrokes)"
          f"{' - ' + args.label if args.label else ''}\n")
    print("| keystroke → chart, median ms | min–max ms | to the server ms | server run ms | drawing ms | "
          "server CPU s / key | kB received / key | runs / key (whole page, fragment) |")
    print("|---|---|---|---|---|---|---|---|")
    full = sum(k.full for k in result.keys) / max(len(result.keys), 1)
    frag = sum(k.fragments for k in result.keys) / max(len(result.keys), 1)
    print(f"| {ms('total')} | {times[0] * 1000:.0f}–{times[-1] * 1000:.0f} | {ms('to_server')} | {ms('server')} | "
          f"{ms('drawing')} | {result.median('cpu'):.3f} | {result.median('kbytes'):.1f} | {full:.1f}, {frag:.1f} |")
    if result.bursts:
        bs = result.bursts
        per = lambda f: sum(f(b) for b in bs) / len(bs)  # noqa: E731
        print(f"\nWords typed {args.gap:.0f} ms a key (8 letters; {len(bs)} words): from the last key until the page "
              "is idle with the word's chart\n")
        print("| last key → chart, median ms | min–max ms | reruns asked / word | runs / word (whole page, fragment, "
              "stopped early) | server CPU s / word |")
        print("|---|---|---|---|---|")
        totals = sorted(b.total for b in bs)
        print(f"| {statistics.median(totals) * 1000:.0f} | {totals[0] * 1000:.0f}–{totals[-1] * 1000:.0f} | "
              f"{per(lambda b: b.sent):.1f} | {per(lambda b: b.full):.1f}, {per(lambda b: b.fragments):.1f}, "
              f"{per(lambda b: b.stopped):.1f} | {statistics.median(b.cpu for b in bs):.2f} |")
    print(f"\ntyped: {info.get('typed')!r}")
    load = os.getloadavg()
    print(f"load average at the end: {load[0]:.2f} (1 min), {load[1]:.2f} (5 min), {load[2]:.2f} (15 min)")
    problems = [line for line in info.get("log", "").splitlines() if "Traceback" in line or "Error" in line]
    if problems:
        print("server log (tail):\n" + info["log"])


if __name__ == "__main__":
    main()
