"""A new visitor's first use of the slow views, on a cold server and on one warmed with ``python -m app.warm``
(run by hand; prints a table and writes ``bench/results/warm.json``, which docs/serving.md's table is written from).

    python bench/bench_warm.py                       # cold, then warmed; needs the shared data (SemCor, the corpus)
    python bench/bench_warm.py --results /tmp/w.json

Each state runs on a fresh server (``streamlit run app/Home.py`` from a copy of ``app/``, ``ctxmodels/`` and
``assets/`` taken when the bench starts, with its own empty ``CTXMODELS_CACHE``, so the corpus index is built
anew too). Cold: the views are opened in turn, each the first use of its kind on that server. Warmed: the server is
first warmed (the warm-up's own time is reported), then the same views are opened, each by a new visitor. A view's
time is from the request to the page having nothing left to compute, background projections included, as the
server sees it (``app.warm.visit``: Streamlit's own websocket protocol; a browser adds only its rendering). The
Lesson row is a new visitor going through every step with the answers shown (the sum of the steps).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.warm import LESSON_STEPS, visit, warm  # noqa: E402

VIEWS = [  # (row, page, query): the first uses issue 45 measured
    ("Word senses, first visit", "word_senses", ""),
    ("What fine-tuning changes, first visit", "fine_tuning", ""),
    ("Word senses, SemCor's play", "word_senses", "source=semcor&lemma=play.v"),
    ("Word senses, the corpus source (bank)", "word_senses", "source=corpus&corpus_word=bank"),
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def snapshot(workdir: Path) -> Path:
    """The app, the package and the shipped models as they are now: edits made meanwhile do not reach the server."""
    tree = workdir / "tree"
    for part in ("app", "ctxmodels", "assets", ".streamlit"):
        if (ROOT / part).is_dir():
            shutil.copytree(ROOT / part, tree / part, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return tree


def start(tree: Path, workdir: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = dict(os.environ, CTXMODELS_ASSETS=str(tree / "assets"), CTXMODELS_APP_RUNS=str(workdir / "runs"),
               CTXMODELS_CACHE=str(workdir / "cache"), PYTHONPATH=str(tree),
               CTXMODELS_DATA=os.environ.get("CTXMODELS_DATA", str(ROOT.parent / "shared" / "data")))
    log = open(workdir / "server.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app/Home.py", "--server.port", str(port),
                             "--server.address", "127.0.0.1"], cwd=tree, env=env, stdout=log,
                            stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 180
    while time.time() < deadline and proc.poll() is None:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2):
                return proc, url
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise SystemExit(f"the server did not start; see {workdir / 'server.log'}")


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()


def measure(tree: Path, workdir: Path, warmed: bool) -> dict:
    proc, url = start(tree, workdir)
    try:
        out: dict = {"warm_up_s": None, "views": {}}
        if warmed:
            t = time.monotonic()
            warm(url, report=lambda v: None)
            out["warm_up_s"] = time.monotonic() - t
        for row, page, query in VIEWS:
            v = visit(url, page, query)
            out["views"][row] = {"seconds": v.seconds, "runs": v.runs, "problems": v.problems}
            print(f"  {'warmed' if warmed else 'cold'}: {row}: {v.seconds:.1f} s", flush=True)
        steps = [visit(url, "lesson", f"step={n}&reveal=1") for n in range(1, LESSON_STEPS + 1)]
        out["views"][f"Lesson, {LESSON_STEPS} steps with answers"] = {
            "seconds": sum(s.seconds for s in steps), "runs": sum(s.runs for s in steps),
            "problems": [p for s in steps for p in s.problems], "slowest_step_s": max(s.seconds for s in steps)}
        return out
    finally:
        stop(proc)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=Path, default=ROOT / "bench" / "results" / "warm.json")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-warm-") as tmp:
        work = Path(tmp)
        tree = snapshot(work)
        cold = measure(tree, Path(tempfile.mkdtemp(dir=work)), warmed=False)
        hot = measure(tree, Path(tempfile.mkdtemp(dir=work)), warmed=True)
    rows = [{"view": row, "cold_s": cold["views"][row]["seconds"], "warmed_s": hot["views"][row]["seconds"],
             "problems": cold["views"][row]["problems"] + hot["views"][row]["problems"]} for row in cold["views"]]
    print(f"\n{'view':45s} {'cold s':>8s} {'warmed s':>9s}")
    for r in rows:
        print(f"{r['view']:45s} {r['cold_s']:8.1f} {r['warmed_s']:9.1f}" + ("  (problems)" if r["problems"] else ""))
    print(f"warm-up (python -m app.warm): {hot['warm_up_s']:.0f} s")
    result = {"command": "python bench/bench_warm.py", "warm_up_s": hot["warm_up_s"], "rows": rows,
              "machine": f"{platform.machine()}, {os.cpu_count()} cores, shared with other work while measured",
              "measured": time.strftime("%Y-%m-%d")}
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"written: {args.results}")


if __name__ == "__main__":
    main()
