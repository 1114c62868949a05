"""The Attention page's layer/head change as a person feels it in a browser (issue 15; run by hand, prints a table,
no assertions).

    python bench/bench_attention.py                      # the shipped BERTs and a random 12 x 12 BERT-base
    python bench/bench_attention.py --changes 5 --model-dir /tmp/bert-base-random   # reuse the built model
    python bench/bench_attention.py --no-big             # the shipped model only
    python bench/bench_attention.py --tokens 64 256 --extra minilm /tmp/roberta-base-random   # issue 12: more
        # encoders (a name or folder ctxmodels.load reads; bench/bench_hub_models.py builds the random RoBERTa-base)
    python bench/bench_attention.py --no-big --query-key --tokens 40   # with "how this head computes its weights"
        # open: its redraw on head and layer changes, and changes of the token it starts from

The app runs as the README's command starts it (``streamlit run app/Home.py``, ``bench_capacity.Server``: a snapshot
of ``app/``, ``ctxmodels/``, ``assets/`` and ``.streamlit/``), with the shipped models and a random BERT with
BERT-base's shape (12 layers x 12 heads, hidden 768, built with ``ctxmodels.bert.BertConfig`` and bert-eltec's
tokenizer, saved as a model folder; the server gets it through ``CTXMODELS_APP_MODELS``). Headless Chromium at
1440x900 (Debian's /usr/bin/chromium, on the same cores as the server) opens ``/attention`` on two inputs per
model: a sentence of exactly ``--tokens`` word pieces ([CLS] and [SEP] included; merge and hide off, so the detail
map is ``--tokens`` square; beyond 60 positions the line view gives way to a note) and the page's default sentence
(word level, about 15 positions: heatmap and line view both drawn). On each, ``--changes`` head changes and as
many layer changes: ArrowRight / ArrowLeft on the focused slider, alternately. Each is timed from the key press
until the detail heatmap shows the new layer/head (its title, read from the drawn Plotly figure), no spinner,
skeleton or stale element is left, and the script run it started has finished (read from the page's websocket,
which also tells a fragment run from a whole-page run and counts the bytes received). Before each change the
server is left to become idle, and after it the page to stay the same for a second (runs that end then are
reported as "more runs").
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
from dataclasses import dataclass
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_corpus_senses import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    Action,
    Browser,
    server_idle,
)

STATE_JS = """() => {
    const q = (s) => Array.from(document.querySelectorAll(s));
    const busy = q('[data-testid="stSkeleton"], [data-testid="stSpinner"], [data-stale="true"]').length;
    const plots = q('.js-plotly-plot');
    // The detail heatmap: its title names the layer ("layer 2, head 1"; the overview grid has no title).
    let title = null, fingerprint = null;
    for (const gd of plots) {
        if (!gd._fullData || !gd._fullData.length || gd._fullData[0].type !== 'heatmap') continue;
        const t = ((gd._fullLayout.title || {}).text || '').replace(/<[^>]*>/g, '');  // Streamlit's theme adds <b>
        if (!/^(layer|rollout)/.test(t)) continue;
        const z = gd._fullData[0].z || [];
        let s = 0;
        for (let i = 0; i < z.length; i += 7) {
            const row = z[i] || [];
            for (let j = 0; j < row.length; j += 5) s += +row[j] || 0;
        }
        title = t;
        fingerprint = t + '#' + s.toFixed(6);
        break;
    }
    // How one head computes its weights: the figure whose title names the token it starts from.
    let qk = null;
    for (const gd of plots) {
        const t = ((gd._fullLayout || {}).title || {}).text || '';
        if (!t.includes(': from ')) continue;
        const bars = (gd._fullData || []).find(d => d.type === 'bar');
        qk = t + '#' + (bars ? Array.from(bars.x || []).map(v => (+v).toFixed(6)).join(',') : '');
        break;
    }
    const text = (s) => q(s).map(e => e.textContent || '');
    return {
        busy: busy, plots: plots.length, title: title, fingerprint: fingerprint, qk: qk, occurrence: '', methods: [],
        progress: text('[data-testid="stProgress"]').join(' | '),
        alerts: text('[data-testid="stAlert"]').join(' | '),
        exceptions: text('[data-testid="stException"]').map(t => t.slice(0, 300)),
        url: location.href,
    };
}"""


@dataclass
class Change(Action):
    cpu: float = 0.0  # the server's CPU-seconds per change, from the key press until the page is idle


class Page(Browser):
    """The Attention page in one browser context (``Browser`` of bench_corpus_senses with this page's state)."""

    def state(self, plot: int = 0) -> dict:
        return self.page.evaluate(STATE_JS)

    def slider(self, name: str):
        block = self.page.locator('[data-testid="stSlider"]').filter(has_text=name)
        block.first.wait_for(timeout=30_000)
        return block.first.get_by_role("slider")


def build_big_model(folder: Path, layers: int, heads: int, hidden: int) -> Path:
    """A random BERT of the given shape with bert-eltec's tokenizer, saved as a model folder (kept if there)."""
    if (folder / "config.json").is_file():
        return folder
    import torch

    import ctxmodels
    from ctxmodels.bert import BertConfig, BertForPreTraining
    from ctxmodels.formats.huggingface import save_pretrained

    tok = ctxmodels.load(str(ROOT / "assets" / "bert-eltec")).tokenizer
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=tok.vocab_size, hidden_size=hidden, num_hidden_layers=layers,
                     num_attention_heads=heads, intermediate_size=4 * hidden)
    save_pretrained(BertForPreTraining(cfg).eval(), tok, folder,
                    card=f"# random BERT {layers} x {heads}, hidden {hidden}\n\nRandom weights, for the bench.")
    return folder


def sentence_of(pieces: int, model: str = "") -> str:
    """A text that the model's tokenizer (default bert-eltec's) encodes to exactly ``pieces`` word pieces, its
    special tokens included."""
    import ctxmodels

    tok = ctxmodels.load(model or str(ROOT / "assets" / "bert-eltec")).tokenizer
    words = ("the bank raised its interest rates so she moved her savings elsewhere and walked along the river "
             "where the boat lay on the bank in the evening light while children played near the water").split()
    out: list[str] = []
    i = 0
    while len(tok.encode(" ".join(out)).ids) < pieces:
        out.append(words[i % len(words)])
        if len(tok.encode(" ".join(out)).ids) > pieces:
            out.pop()
            out.append("a")  # one piece
        i += 1
    assert len(tok.encode(" ".join(out)).ids) == pieces
    return " ".join(out)


def seconds(times: list[float]) -> str:
    return " ".join(f"{t:.3f}" for t in times)


def timed(b: Page, server, action: Change, act, done, timeout: float = 120) -> None:
    """Time ``act()`` (a key press or a click) until ``done(state)`` holds and the page is idle, adding its seconds,
    script runs, bytes received and server CPU-seconds to ``action``."""
    bytes0, cpu0 = b.wire.bytes, server.cpu()
    t0 = time.perf_counter()
    act()
    seconds, _ = b.wait(t0, done, timeout=timeout)
    full, frag = b.wire.counts(t0, time.perf_counter())
    action.times.append(seconds)
    action.full += full
    action.fragments += frag
    action.mbytes += (b.wire.bytes - bytes0) / 2**20
    action.cpu += server.cpu() - cpu0


def per_change(action: Change, n: int) -> None:
    """The bytes and CPU-seconds added up over ``n`` changes, as a mean per change."""
    action.mbytes /= max(n, 1)
    action.cpu /= max(n, 1)


def changes(b: Page, server, what: str, n: int, action: Change) -> None:
    """``n`` changes of the ``what`` slider ("Layer" or "Head"), each until the heatmap's title shows the new
    value and the page is idle."""
    for i in range(n):
        server_idle(server)
        slider = b.slider(what)
        before = b.state()
        slider.focus()

        def done(s, before=before):
            return s["fingerprint"] not in (None, before["fingerprint"]) and s["title"] != before["title"]

        timed(b, server, action, partial(slider.press, "ArrowRight" if i % 2 == 0 else "ArrowLeft"), done)
        after = b.settle(quiet=1.0)
        if after:
            action.notes.append(f"change {i + 1}: {after} more run(s) after the page looked idle")
        param = {"Layer": "att_layer", "Head": "att_head"}[what]
        if param + "=" not in b.state()["url"] and i == 0:
            action.notes.append(f"{param} not in the URL")
    per_change(action, n)


def from_changes(b: Page, server, n: int, action: Change) -> None:
    """``n`` changes of the token that "how this head computes its weights" starts from: the selectbox opened
    (untimed), the next (or previous) token clicked, until the figure shows the new token's row and the page is
    idle."""
    for i in range(n):
        server_idle(server)
        box = b.page.locator('[data-testid="stSelectbox"]').filter(has_text="From the token").first
        options = b.page.get_by_role("option")
        for attempt in range(3):  # a click that lands while the fragment redraws the box may not open it
            box.click()
            try:
                options.first.wait_for(timeout=10_000)
                break
            except Exception:  # noqa: BLE001 - Playwright's TimeoutError: try again, then let it fail
                if attempt == 2:
                    raise
        count = options.count()
        current = next((k for k in range(count) if options.nth(k).get_attribute("aria-selected") == "true"), 0)
        target = options.nth(min(current + 1, count - 1) if i % 2 == 0 else max(current - 1, 0))
        before = b.state()

        def done(s, before=before):
            return s["qk"] not in (None, before["qk"])

        timed(b, server, action, target.click, done)
        after = b.settle(quiet=1.0)
        if after:
            action.notes.append(f"change {i + 1}: {after} more run(s) after the page looked idle")
    per_change(action, n)


def redraws(b: Page, server, texts: list[str], n: int, action: Change) -> None:
    """``n`` whole-page redraws: a new sentence (``texts[1:]``, each one not seen before) typed into "Sentence A"
    and Enter (the page runs the model once and
    draws every head again: overview, detail and ranking), each until the detail heatmap has changed and the page
    is idle."""
    summary = b.page.locator('[data-testid="stExpander"] summary').filter(has_text="Controls").first
    if summary.count() and summary.locator("xpath=..").get_attribute("open") is None:
        summary.click()  # the page's inputs are folded under "Controls" (the maps come first); opening runs nothing
    box = b.page.get_by_label("Sentence A")
    for i in range(n):
        server_idle(server)
        before = b.state()
        box.fill(texts[i + 1])

        def done(s, before=before):
            return s["fingerprint"] not in (None, before["fingerprint"])

        timed(b, server, action, partial(box.press, "Enter"), done, timeout=300)
        b.settle(quiet=1.0)
    per_change(action, n)


def open_page(b: Page, url: str) -> float:
    b.new()
    t0 = time.perf_counter()
    b.page.goto(url, wait_until="commit")
    seconds, _ = b.wait(t0, lambda s: s["fingerprint"] is not None, every=0.1, timeout=300)
    b.settle(quiet=1.0)
    return seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--changes", type=int, default=10, help="changes of each slider per input (median)")
    ap.add_argument("--tokens", type=int, nargs="+", default=[64], help="word pieces of the long input(s)")
    ap.add_argument("--extra", nargs="*", default=[],
                    help="more models to measure (names or folders for ctxmodels.load: minilm, a RoBERTa folder…)")
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--hidden", type=int, default=768)
    ap.add_argument("--model-dir", type=Path, default=None,
                    help="where the random BERT is written (reused when there); default: a temporary folder")
    ap.add_argument("--no-big", action="store_true", help="the shipped models only")
    ap.add_argument("--redraws", type=int, default=0,
                    help="also time this many whole-page redraws (a new sentence) per input of --tokens pieces")
    ap.add_argument("--query-key", action="store_true",
                    help="with 'how this head computes its weights' open (qk=1): head and layer changes redraw it "
                         "too, and changes of the token it starts from are timed")
    ap.add_argument("--tree", type=Path, default=ROOT,
                    help="the checkout whose app/, ctxmodels/ and assets/ the server runs (default: this one), e.g. a "
                         "git worktree of an earlier commit for a before/after comparison")
    args = ap.parse_args()

    from playwright.sync_api import sync_playwright

    from bench.bench_capacity import Server

    print("uptime at the start:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    print(f"app from {args.tree}")
    workdir = Path(tempfile.mkdtemp(prefix="bench-attention-"))
    shipped = [m for m in ("minilm-eltec", "bert-eltec") if (args.tree / "assets" / m).is_dir()]  # the default first
    models = list(shipped)
    extra = {}
    if not args.no_big:
        big = build_big_model(args.model_dir or workdir / f"bert-random-{args.layers}x{args.heads}", args.layers,
                              args.heads, args.hidden)
        models.append(str(big))
    models += args.extra
    listed = [m for m in models if m not in shipped and m != "minilm"]  # minilm: offered by the app when installed
    if listed:
        extra["CTXMODELS_APP_MODELS"] = ",".join(listed)
    actions: list[Change] = []
    server = Server(workdir, None, args.tree, **extra)
    try:
        with sync_playwright() as p:
            chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            b = Page(chromium, server)
            try:
                for model in models:
                    name = Path(model).name
                    inputs = [(f"{n} pieces", {"sentence": sentence_of(n, model), "merge": "0", "hide": "0"})
                              for n in args.tokens] + [("default sentence, words", {})]
                    if args.query_key:
                        inputs = [(what + ", query · key", {**query, "qk": "1"}) for what, query in inputs]
                    for what_input, query in inputs:
                        url = f"{server.url}/attention?" + urllib.parse.urlencode({"att_model": model, **query})
                        server_idle(server)
                        first = open_page(b, url)
                        print(f"  {name}, {what_input}: page open after {first:.2f} s", flush=True)
                        if args.redraws and "sentence" in query:
                            # about the same length, one word changed each time: every redraw runs the model
                            # (the page keeps the maps of texts it has seen)
                            words = query["sentence"].split()
                            texts = [query["sentence"]] + [" ".join(words[:k] + ["boat"] + words[k + 1:])
                                                           for k in range(1, args.redraws + 1)]
                            a = Change(f"{name} · {what_input} · new sentence (whole page)", 0)
                            try:
                                redraws(b, server, texts, args.redraws, a)
                            except Exception as e:  # noqa: BLE001 - a failed target is a finding: report it
                                a.notes.append(f"FAILED: {type(e).__name__}: {str(e)[:200]}")
                            actions.append(a)
                            print(f"    {a.what}: {a.median:.3f} s median of {len(a.times)} [{seconds(a.times)}]; "
                                  f"{a.mbytes:.3f} MB/redraw; server {a.cpu:.3f} CPU-s/redraw", flush=True)
                        for what in ("Head", "Layer") + (("From",) if args.query_key else ()):
                            a = Change(f"{name} · {what_input} · {what.lower()} change", 0)
                            try:
                                if what == "From":
                                    from_changes(b, server, args.changes, a)
                                else:
                                    changes(b, server, what, args.changes, a)
                            except Exception as e:  # noqa: BLE001 - a failed target is a finding: report it
                                a.notes.append(f"FAILED: {type(e).__name__}: {str(e)[:200]}")
                            actions.append(a)
                            print(f"    {a.what}: {a.median:.3f} s median of {len(a.times)} [{seconds(a.times)}]; "
                                  f"runs: {a.full} whole page, {a.fragments} fragment; {a.mbytes:.3f} MB/change; "
                                  f"server {a.cpu:.3f} CPU-s/change"
                                  + (f"; {'; '.join(a.notes)}" if a.notes else ""), flush=True)
            finally:
                if b.context is not None:
                    b.context.close()
                chromium.close()
        rss, peak = server.mem()
    finally:
        server.stop()
        log = (workdir / f"server-{server.port}.log").read_text(errors="replace")
        shutil.rmtree(workdir, ignore_errors=True)  # the random BERT too, unless --model-dir put it elsewhere
    print(f"\nThe Attention page in headless Chromium (1440x900): from the key press until the changed heatmap is "
          f"drawn and the page is idle; {args.changes} changes each\n")
    print(f"| {'model · input · action':<58} | median s | {'runs s':<60} | whole-page runs | fragment runs | "
          "MB received / change | server CPU-s / change | notes |")
    print(f"|{'-' * 60}|----------|{'-' * 62}|---|---|---|---|---|")
    for a in actions:
        print(f"| {a.what:<58} | {a.median:>8.3f} | {seconds(a.times):<60} | {a.full} | {a.fragments} | "
              f"{a.mbytes:.3f} | {a.cpu:.3f} | {'; '.join(a.notes)} |")
    print(f"\nserver RSS at the end {rss:.0f} MB (peak {peak:.0f} MB)")
    problems = [line for line in log.splitlines() if "Traceback" in line or "Error" in line]
    if problems:
        print("server log (tail):\n" + log[-3000:])
    print("uptime at the end:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())


if __name__ == "__main__":
    main()
