"""What a second visitor feels while a first asks for the heaviest view, and what happens when the first leaves
(issue: "no visitor can hold the server"; run by hand, prints a table, no assertions).

    python bench/bench_visitor_budget.py                                   # this checkout
    git worktree add /tmp/before b076cc5
    python bench/bench_visitor_budget.py --tree /tmp/before --tree .       # before / after, side by side

For each tree (``--tree``, default this checkout) a server runs as the README starts it (``bench_capacity.Server``:
a snapshot of ``app/``, ``ctxmodels/``, ``assets/`` and ``.streamlit/``), with the operator's defaults. Then:

1. Visitor B opens the Attention page in headless Chromium (Debian's /usr/bin/chromium, 1440x900) and changes the
   head ``--changes`` times (ArrowRight / ArrowLeft on the focused slider), each timed from the key press until the
   detail heatmap shows the new head and the page is idle (``bench_attention``'s measure): B *alone*.
2. Visitor A (a websocket session speaking Streamlit's protocol, ``bench_capacity.Visitor``) opens Word senses on
   SemCor's *be* (verb) with 5,000 occurrences, t-SNE in 3-D at perplexity 100, every shipped model: the request
   of the issue. While A's page runs, B changes the head ``--changes`` times again, 0.5 s apart (no wait for the
   server to be idle: it is not): B *beside A*.
3. A leaves (its websocket closes) ``--stay`` seconds after opening, or when its page run ends if sooner.
   Measured: the seconds from A's leaving until the server and its worker processes are idle (under 5 % of a core
   over 2 s; at most ``--idle-limit`` seconds are waited), the CPU-seconds they used meanwhile, and the peak
   memory (the server's, plus its worker's when there is one).

Every figure comes from one run of this script; the machine may be shared (its load is printed at the start).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_attention import Change, Page, open_page  # noqa: E402
from bench.bench_capacity import Server, Visitor, proc_cpu  # noqa: E402
from bench.bench_corpus_senses import CHROMIUM, CHROMIUM_ARGS, server_idle  # noqa: E402

MODELS = ("minilm-eltec", "bert-eltec", "elmo-eltec", "static-eltec")
HEAVY = dict(source="semcor", lemma="be.v", limit="5000", projection="tsne", dims="3", perplexity="100")


def tree_pids(pid: int) -> list[int]:
    """The process and all its descendants (the worker processes of the server)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
    return out


def tree_cpu(pid: int) -> float:
    total = 0.0
    for p in tree_pids(pid):
        try:
            total += proc_cpu(p)
        except OSError:
            pass
    return total


def tree_rss(pid: int) -> float:
    """MB resident in the process and its descendants now."""
    total = 0.0
    for p in tree_pids(pid):
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) / 1024
        except OSError:
            pass
    return total


@dataclass
class Heavy:
    """Visitor A's run: how long its page took, what it said, and the server's state meanwhile."""

    seconds: float = float("nan")
    ended: bool = False  # its page run ended before A left
    notes: list[str] = field(default_factory=list)
    peak_mb: float = 0.0
    left_at: float = 0.0


def heavy_visitor(server: Server, stay: float, out: Heavy, started: threading.Event) -> None:
    """A opens the heavy view, waits for its page run (at most ``stay`` seconds), then leaves."""
    async def go() -> None:
        v = Visitor(server.url, timeout=stay)
        async with v:
            started.set()
            t0 = time.perf_counter()
            run = await v.open("word_senses", **HEAVY, models=",".join(MODELS))
            out.seconds = time.perf_counter() - t0
            out.ended = not any(e.startswith("timeout") for e in run.errors)
            for kind in ("alert",):
                out.notes += [t[:160] for t in run.texts(kind) if "budget" in t or "server gives" in t
                              or "took longer" in t or "would take" in t]
            out.notes += [e[:160] for e in run.errors if not e.startswith("timeout")]
        out.left_at = time.perf_counter()

    asyncio.run(go())


def head_changes(b: Page, n: int, action: Change, wait_idle: Server | None) -> None:
    """``n`` head changes, each timed until the heatmap shows the new head and the page is idle."""
    from bench.bench_attention import timed

    slider = b.slider("Head")
    for i in range(n):
        if wait_idle is not None:
            server_idle(wait_idle)
        else:
            time.sleep(0.5)
        before = b.state()
        slider.focus()

        def done(s, before=before):
            return s["fingerprint"] not in (None, before["fingerprint"]) and s["title"] != before["title"]

        timed(b, b.server, action, lambda i=i: slider.press("ArrowRight" if i % 2 == 0 else "ArrowLeft"), done,
              timeout=600)


def idle_after(server: Server, limit: float) -> tuple[float, float]:
    """Seconds until the server and its workers use under 5 % of a core over 2 s, and their CPU-seconds meanwhile
    (``limit`` seconds at most: then the seconds are reported as over the limit)."""
    t0, c0 = time.perf_counter(), tree_cpu(server.pid)
    while time.perf_counter() - t0 < limit:
        c = tree_cpu(server.pid)
        time.sleep(2.0)
        if tree_cpu(server.pid) - c < 0.1:
            break
    return time.perf_counter() - t0, tree_cpu(server.pid) - c0


def one_tree(tree: Path, args, chromium) -> dict:
    workdir = Path(tempfile.mkdtemp(prefix="bench-budget-"))
    server = Server(workdir, None, tree)
    row: dict = {"tree": str(tree)}
    try:
        b = Page(chromium, server)
        open_page(b, f"{server.url}/attention")
        server_idle(server)
        alone = Change("alone", 0)
        head_changes(b, args.changes, alone, wait_idle=server)
        heavy, started = Heavy(), threading.Event()
        a = threading.Thread(target=heavy_visitor, args=(server, args.stay, heavy, started), daemon=True)
        a.start()
        started.wait(60)
        time.sleep(3.0)  # A's run is under way
        beside = Change("beside", 0)
        peak = [0.0]
        watching = threading.Event()

        def watch() -> None:
            while not watching.is_set():
                peak[0] = max(peak[0], tree_rss(server.pid))
                time.sleep(0.5)

        threading.Thread(target=watch, daemon=True).start()
        head_changes(b, args.changes, beside, wait_idle=None)
        a.join()
        idle_s, cpu_s = idle_after(server, args.idle_limit)
        watching.set()
        row.update(alone=alone.times, beside=beside.times, heavy=heavy, idle_s=idle_s, cpu_after=cpu_s,
                   peak_mb=peak[0], idle_limit=args.idle_limit)
        b.context.close()
    finally:
        server.stop()
    return row


def show(rows: list[dict]) -> None:
    print()
    print(f"{'tree':34} {'B alone':>8} {'B beside A':>11} {'ratio':>6} {'A page':>8} {'A ended':>8} "
          f"{'idle after A left':>18} {'CPU-s then':>11} {'peak MB':>8}")
    for r in rows:
        alone, beside = statistics.median(r["alone"]), statistics.median(r["beside"])
        idle = (f">{r['idle_limit']:.0f} s" if r["idle_s"] >= r["idle_limit"] else f"{r['idle_s']:.1f} s")
        h: Heavy = r["heavy"]
        print(f"{r['tree'][-34:]:34} {alone:7.2f}s {beside:10.2f}s {beside / alone:6.1f} {h.seconds:7.1f}s "
              f"{'yes' if h.ended else 'no':>8} {idle:>18} {r['cpu_after']:11.1f} {r['peak_mb']:8.0f}")
    for r in rows:
        print(f"\n{r['tree']}: B alone {' '.join(f'{t:.2f}' for t in r['alone'])}; beside A "
              f"{' '.join(f'{t:.2f}' for t in r['beside'])}")
        for note in r["heavy"].notes:
            print(f"  A was told: {note}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tree", type=Path, action="append", help="a checkout to serve (repeat: side by side)")
    ap.add_argument("--changes", type=int, default=8, help="B's head changes per phase (median)")
    ap.add_argument("--stay", type=float, default=120.0, help="seconds A stays at most before leaving")
    ap.add_argument("--idle-limit", type=float, default=300.0, help="seconds waited at most for idle after A left")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    print("uptime at the start:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    rows = []
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for tree in args.tree or [ROOT]:
            print(f"serving {tree} …", flush=True)
            rows.append(one_tree(tree.resolve(), args, chromium))
            show(rows[-1:])
        chromium.close()
    print("\nall trees:")
    show(rows)


if __name__ == "__main__":
    main()
