"""What a second visitor feels while a first asks for the heaviest view, and what happens when the first leaves
(issue: "no visitor can hold the server"; run by hand, prints a table, no assertions).

    python bench/bench_visitor_budget.py                                   # this checkout
    git worktree add /tmp/before b076cc5
    python bench/bench_visitor_budget.py --tree /tmp/before --tree .       # before / after, side by side
    python bench/bench_visitor_budget.py --tree /tmp/before --label before --tree . --label after \\
        --results bench/results/visitor_budget.json                       # the docs' table

For each tree (``--tree``, default this checkout) a server runs as the README starts it (``bench_capacity.Server``:
a snapshot of ``app/``, ``ctxmodels/``, ``assets/`` and ``.streamlit/``), with the operator's defaults. Then:

1. Visitor B opens the Attention page in headless Chromium (Debian's /usr/bin/chromium, 1440x900) and changes the
   head ``--changes`` times (ArrowRight / ArrowLeft on the focused slider; the server idle before each), each timed
   from the key press until the detail heatmap shows the new head and the page is idle (``bench_attention``'s
   measure): B *alone*.
2. Visitor A (a websocket session speaking Streamlit's protocol, ``bench_capacity.Visitor``) opens Word senses on
   SemCor's *be* (verb) with 5,000 occurrences, t-SNE in 3-D at perplexity 100, every shipped model (the request of
   the issue) and stays until the server and its worker processes are idle (``--stay`` seconds at most): how long
   one visitor *held the server*. Meanwhile B changes the head every half second: B *beside A* (median, 90th
   percentile, how many changes).
3. Visitor A' asks for the same with 4,900 occurrences (nothing of it computed yet) and leaves ``--leave-after``
   seconds later: the seconds from its leaving until the server and its workers are idle (under 0.1 CPU-seconds
   over 2 s) and the CPU-seconds they used meanwhile (a killed worker's included). Peak memory: the server's and
   its worker's resident memory, sampled during step 2.

Every figure comes from one run of this script; the machine may be shared (its load is printed at the start).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
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
from bench.bench_capacity import TICK, Server, Visitor, proc_cpu  # noqa: E402
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
    """CPU-seconds of the process, its live descendants, and the children it has already reaped (a killed worker)."""
    total = 0.0
    for p in tree_pids(pid):
        try:
            total += proc_cpu(p)
        except OSError:
            pass
    with open(f"/proc/{pid}/stat") as f:
        rest = f.read().rsplit(")", 1)[1].split()
    return total + (int(rest[13]) + int(rest[14])) / TICK


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
    """Visitor A: how long its page run took, what it was told, how long the server stayed busy for it."""

    seconds: float = float("nan")
    ended: bool = False  # its page run ended before A left
    notes: list[str] = field(default_factory=list)
    held: float = float("nan")  # seconds from A's opening until the server and its workers were idle
    idle_after_leaving: float = float("nan")
    cpu_after_leaving: float = float("nan")


def heavy_visitor(server: Server, query: dict, out: Heavy, leave_after: float | None, limit: float,
                  started: threading.Event) -> None:
    """A opens the heavy view; with ``leave_after`` it leaves that many seconds later (its page may still run),
    else it stays until the server is idle (``limit`` seconds at most) and then leaves."""
    async def go() -> None:
        v = Visitor(server.url, timeout=leave_after or limit)
        async with v:
            started.set()
            t0 = time.perf_counter()
            run = await v.open("word_senses", **query)
            out.seconds = time.perf_counter() - t0
            out.ended = not any(e.startswith("timeout") for e in run.errors)
            out.notes += [t[:200] for t in run.texts("alert") if "server gives" in t]
            out.notes += [e[:200] for e in run.errors if not e.startswith("timeout")]
            if leave_after is None:
                idle_after(server, limit - out.seconds)
                out.held = time.perf_counter() - t0
        if leave_after is not None:
            out.idle_after_leaving, out.cpu_after_leaving = idle_after(server, limit)

    asyncio.run(go())


def head_change(b: Page, i: int, action: Change) -> None:
    """One head change, timed until the heatmap shows the new head and the page is idle."""
    from bench.bench_attention import timed

    slider = b.slider("Head")
    before = b.state()
    slider.focus()

    def done(s, before=before):
        return s["fingerprint"] not in (None, before["fingerprint"]) and s["title"] != before["title"]

    timed(b, b.server, action, lambda: slider.press("ArrowRight" if i % 2 == 0 else "ArrowLeft"), done,
          timeout=600)


def idle_after(server: Server, limit: float) -> tuple[float, float]:
    """Seconds until the server and its workers use under 5 % of a core over 2 s, and their CPU-seconds meanwhile
    (``limit`` seconds at most)."""
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
    models = ",".join(m for m in MODELS if (tree / "assets" / m).is_dir())
    row: dict = {"tree": str(tree)}
    try:
        b = Page(chromium, server)
        open_page(b, f"{server.url}/attention")
        time.sleep(5.0)
        server_idle(server)
        alone = Change("alone", 0)
        for i in range(args.changes):
            server_idle(server)
            head_change(b, i, alone)
        # A stays: B changes heads every half second for as long as A holds the server.
        stays, started = Heavy(), threading.Event()
        peak = [0.0]
        a = threading.Thread(target=heavy_visitor, daemon=True, args=(
            server, dict(HEAVY, models=models), stays, None, args.stay, started))
        a.start()
        started.wait(60)
        time.sleep(3.0)
        beside = Change("beside", 0)
        i = 0
        while a.is_alive():
            head_change(b, i, beside)
            peak[0] = max(peak[0], tree_rss(server.pid))
            i += 1
            time.sleep(0.5)
        # A' asks for other occurrences (nothing computed yet) and leaves after --leave-after seconds.
        server_idle(server)
        leaves = Heavy()
        a = threading.Thread(target=heavy_visitor, daemon=True, args=(  # Playwright's loop runs in this thread
            server, dict(HEAVY, limit="4900", models=models), leaves, args.leave_after, args.stay, threading.Event()))
        a.start()
        a.join()
        row.update(alone=alone.times, beside=beside.times, stays=stays, leaves=leaves, peak_mb=peak[0],
                   limit=args.stay)
        b.context.close()
    finally:
        server.stop()
    return row


def p90(times: list[float]) -> float:
    return statistics.quantiles(times, n=10)[-1] if len(times) >= 2 else float("nan")


def show(rows: list[dict]) -> None:
    print()
    print(f"{'tree':24} {'B alone':>8} {'B beside A':>11} {'ratio':>6} {'B p90 beside':>13} {'changes':>8} "
          f"{'A page':>8} {'A held server':>14} {'idle after A left':>18} {'CPU-s then':>11} {'peak MB':>8}")
    for r in rows:
        alone, beside = statistics.median(r["alone"]), statistics.median(r["beside"])
        st_, lv = r["stays"], r["leaves"]
        held = f">{r['limit']:.0f} s" if st_.held >= r["limit"] else f"{st_.held:.0f} s"
        print(f"{r['tree'][-24:]:24} {alone:7.2f}s {beside:10.2f}s {beside / alone:6.1f} {p90(r['beside']):12.2f}s "
              f"{len(r['beside']):8d} {st_.seconds:7.0f}s {held:>14} {lv.idle_after_leaving:17.1f}s "
              f"{lv.cpu_after_leaving:11.1f} {r['peak_mb']:8.0f}")
    for r in rows:
        print(f"\n{r['tree']}: B alone {' '.join(f'{t:.2f}' for t in r['alone'])}")
        print(f"  beside A {' '.join(f'{t:.2f}' for t in r['beside'])}")
        for note in r["stays"].notes:
            print(f"  A was told: {note}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tree", type=Path, action="append", help="a checkout to serve (repeat: side by side)")
    ap.add_argument("--changes", type=int, default=8, help="B's head changes on an idle server (median)")
    ap.add_argument("--stay", type=float, default=900.0, help="seconds A stays at most, and waits for idle at most")
    ap.add_argument("--leave-after", type=float, default=20.0, help="seconds after which A' leaves")
    ap.add_argument("--label", action="append", help="a name for each --tree in the table (default: its path)")
    ap.add_argument("--results", type=Path, default=None,
                    help="also write the table's figures here as JSON (bench/results/visitor_budget.json: the docs' "
                         "table is generated from it)")
    args = ap.parse_args()
    args.load = os.getloadavg()[0]
    from playwright.sync_api import sync_playwright

    print("uptime at the start:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    rows = []
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        trees = args.tree or [ROOT]
        labels = args.label or [str(t) for t in trees]
        for tree, name in zip(trees, labels):
            print(f"serving {tree} …", flush=True)
            rows.append(one_tree(tree.resolve(), args, chromium))
            rows[-1]["tree"] = name
            show(rows[-1:])
        chromium.close()
    print("\nall trees:")
    show(rows)
    if args.results:
        write_results(args.results, rows, args)


def write_results(path: Path, rows: list[dict], args) -> None:
    """The figures of the table, per tree, for the docs (``python -m ctxmodels.release.docs`` renders them)."""
    out = {"command": "python bench/bench_visitor_budget.py " + shlex.join(sys.argv[1:]),
           "machine": f"{os.cpu_count()} cores; load at the start: {args.load:.1f}",
           "rows": []}
    for r in rows:
        st_, lv = r["stays"], r["leaves"]
        out["rows"].append(dict(
            tree=r["tree"], alone_median=statistics.median(r["alone"]), beside_median=statistics.median(r["beside"]),
            beside_p90=p90(r["beside"]), beside_changes=len(r["beside"]), heavy_page_s=st_.seconds,
            held_s=st_.held, held_limit=r["limit"], idle_after_leaving_s=lv.idle_after_leaving,
            cpu_after_leaving_s=lv.cpu_after_leaving, peak_mb=r["peak_mb"], told=st_.notes))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    print(f"written: {path}")


if __name__ == "__main__":
    main()
