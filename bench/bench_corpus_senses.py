"""Word senses at corpus scale (issue 16): the core, and the page as a person feels it in a browser (run by hand;
prints tables, no assertions).

    python bench/bench_corpus_senses.py                      # the core: embedding, projections, clusters, figure
    python bench/bench_corpus_senses.py --quick              # the same, 5,000 points with bert-eltec only
    python bench/bench_corpus_senses.py --browser            # also the served page in headless Chromium
    python bench/bench_corpus_senses.py --browser --no-core --cache ~/.cache/ctxmodels   # reuse a built index

The occurrences are those the page takes for ``/word_senses?source=corpus&corpus_word=light&inflect=1``: a seeded
sample (spread across the documents) of "light" and its inflections in the training novels
(``$CTXMODELS_DATA/corpus/eltec-eng.txt``, through the corpus index of ``ctxmodels/corpus_index.py``). The index is
built into a temporary cache unless ``--cache DIR`` names one to reuse (the first run builds it there).

Part 1, the core (always), with the shipped models, in this process: the time to embed 1,000 novel sentences
with each model; then, for 5,000 occurrences with bert-eltec (and elmo-eltec unless ``--quick``), what the page
computes for them: PCA of one layer and of two layers fitted jointly, UMAP of the same (after UMAP's warm-up on a
small input, as the server does at start), k-means with k chosen by the silhouette and the clusters' names, the
per-layer measurements (with the 300-sentence anisotropy baseline of a large view; the embedding cache is
cleared first, as on the page's first visit), and the 5,000-point WebGL scatter with its JSON. Medians over
``--repeat`` runs; every run's time is listed too (a first run that differs shows there).

Part 2, the page (``--browser``): ``streamlit run app/Home.py`` from a snapshot of the tree
(``bench_capacity.Server``, with the repository's ``.streamlit/config.toml``) and headless Chromium at 1440x900
(Debian's /usr/bin/chromium; WebGL is software-rendered there, on the same cores as the server). Each action is
timed from the action until the page is idle: the changed figure drawn, no spinner, skeleton or stale element,
and the script run it started finished (read from the page's websocket, which also tells a fragment run from a
whole-page run, and counts the bytes received). The actions: the first visit (index build and embedding; the index
build and the embedding are timed apart, from their progress bars; the server's UMAP warm-up runs meanwhile, as
after any start), a second visit from a new browser context, a visit to another sample of the word (embedding on a
warm server: no index build, no warm-up), the layer switch of bert-eltec (ArrowLeft / ArrowRight on the focused
slider, alternately: after the first switch both layers' figures are in the browser's message cache, so little is
sent), a click on a point of the right-hand panel until its nearest neighbours are listed, the layer switch with
fewer points for comparison, and with UMAP the time from opening until the UMAP result replaces the PCA stand-in.
Before each action the server is left to become idle.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("CTXMODELS_DATA", str(ROOT.parent / "shared" / "data"))

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
VIEWPORT = {"width": 1440, "height": 900}
MODELS = ("bert-eltec", "elmo-eltec", "static-eltec")


@dataclass
class Row:
    what: str
    points: int
    times: list[float]
    note: str = ""
    model: str = ""

    @property
    def median(self) -> float:
        return statistics.median(self.times) if self.times else float("nan")


def timed(fn, repeat: int, before=None) -> tuple[list[float], object]:
    """Every run's seconds, and the last result (``before()`` runs untimed ahead of each run)."""
    times, out = [], None
    for _ in range(repeat):
        if before is not None:
            before()
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return times, out


def runs(times: list[float]) -> str:
    return " ".join(f"{t:.2f}" for t in times)


# -- part 1: the core ---------------------------------------------------------------------------------------------


def core(args, corpus: Path) -> list[Row]:
    import ctxmodels
    from app.kit import figures
    from app.kit.scatter import sense_scatter
    from ctxmodels.analysis import clusters, projections, sources, vectors
    from ctxmodels.analysis import word_senses as ws
    from ctxmodels.corpus_index import index_path

    rows: list[Row] = []

    def add(row: Row) -> None:
        rows.append(row)
        print(f"  {row.model:<13} {row.what:<48} {row.points:>6,} {row.median:>8.2f} s   [{runs(row.times)}]"
              + (f"  {row.note}" if row.note else ""), flush=True)

    built = not index_path(corpus).is_file()
    t = time.perf_counter()
    index = sources.open_corpus(corpus)
    add(Row("corpus index: build" if built else "corpus index: open (built before)", 0,
            [time.perf_counter() - t], f"{index.n_sentences:,} sentences, {index.n_words:,} words"))
    times, (found1k, lookup) = timed(lambda: sources.corpus_search(index, args.word, inflections=True, limit=1000,
                                                                    seed=0), args.repeat)
    add(Row(f"find {args.word!r} + inflections, limit 1,000", len(found1k.occurrences), times,
            f"{lookup.total:,} occurrences in the corpus"))

    models = {name: ctxmodels.load(name) for name in MODELS}
    for name, model in models.items():
        times, _ = timed(lambda m=model: vectors.occurrence_vectors(m, found1k, cache=False), args.repeat)
        n = len(found1k.sentences)
        add(Row(f"embed {n:,} novel sentences", n, times,
                f"{n / statistics.median(times):,.0f} sentences/s", model=name))

    times, (found, _) = timed(lambda: sources.corpus_search(index, args.word, inflections=True, limit=args.points,
                                                             seed=0), args.repeat)
    n = len(found.occurrences)
    add(Row(f"find, limit {args.points:,}", n, times))
    warm, _ = timed(projections.warm_up_umap, 1)
    add(Row("UMAP warm-up (import + compile, small input)", 40, warm))
    hover = [figures.highlight(o.sentence, o.char_span) for o in found.occurrences]

    for name in (("bert-eltec",) if args.quick else ("bert-eltec", "elmo-eltec")):
        model = models[name]

        def add_model(row: Row, name=name) -> None:
            row.model = name
            add(row)

        times, ov = timed(lambda m=model: vectors.occurrence_vectors(m, found, cache=False), 1)
        add_model(Row(f"embed {len(found.sentences):,} sentences (once per server)", n, times,
                      f"{len(found.sentences) / times[0]:,.0f} sentences/s"))
        static, top = model.static_layer, model.n_layers - 1
        one, two = (top,), (static, top)
        ws.project_layers(ov.vectors, two, method="pca", joint=True)  # imports, first BLAS call: not timed
        for method in ("pca", "umap"):
            shown = projections.DISPLAY[method]
            times, _ = timed(lambda o=ov, m=method, ls=one: ws.project_layers(o.vectors, ls, method=m, joint=False),
                             args.repeat)
            add_model(Row(f"{shown}, one layer ({model.layer_names[top]})", n, times))
            times, _ = timed(lambda o=ov, m=method, ls=two: ws.project_layers(o.vectors, ls, method=m, joint=True),
                             args.repeat)
            add_model(Row(f"{shown}, 2 layers jointly ({2 * n:,} points)", n, times))

        def cluster(o=ov, t=top):
            c = clusters.cluster_vectors(ws.layer_vectors(o.vectors, t), k=None, seed=0)
            c.names = clusters.name_clusters(found, c.labels)
            return c

        times, c = timed(cluster, args.repeat)
        add_model(Row("k-means, k by silhouette (2-8) + names", n, times, f"k = {c.k}"))
        times, m = timed(lambda mo=model, o=ov: ws.measure_word(mo, found, vectors=o, baseline_sentences=300),
                         args.repeat, before=vectors.CACHE.clear)
        add_model(Row("measurements per layer (300-sentence baseline)", n, times))

        groups = clusters.cluster_label_names(c)
        colours = figures.sense_colours(groups)
        xy = ws.project_layers(ov.vectors, one, method="pca", joint=False).coords[0]
        times, fig = timed(lambda xy=xy, g=groups, c=colours: sense_scatter(xy, g, hover, title="bench",
                                                                                    colours=c), args.repeat)
        kind = fig.data[0].type
        add_model(Row(f"scatter figure ({kind}, {len(fig.data)} traces)", n, times))
        times, js = timed(fig.to_json, args.repeat)
        add_model(Row("scatter figure to JSON", n, times, f"{len(js) / 2**20:.2f} MB"))
    index.close()
    return rows


def print_core(rows: list[Row], repeat: int) -> None:
    print(f"\nPart 1, the core (medians of {repeat} unless n says otherwise)\n")
    print(f"| {'model':<12} | {'step':<48} | {'points':>6} | {'median s':>8} | n | {'runs s':<22} | note |")
    print(f"|{'-' * 14}|{'-' * 50}|{'-' * 8}|{'-' * 10}|---|{'-' * 24}|------|")
    for r in rows:
        print(f"| {r.model:<12} | {r.what:<48} | {r.points:>6,} | {r.median:>8.2f} | {len(r.times)} | "
              f"{runs(r.times):<22} | {r.note} |")


# -- part 2: the page in a browser ----------------------------------------------------------------------------------


STATE_JS = """(i) => {
    const q = (s) => Array.from(document.querySelectorAll(s));
    const busy = q('[data-testid="stSkeleton"], [data-testid="stSpinner"], [data-stale="true"]').length;
    const plots = q('.js-plotly-plot');
    let fingerprint = null;
    const gd = plots[i];
    if (gd && gd._fullData) {
        fingerprint = gd._fullData.map(t => {
            const x = t.x || [], y = t.y || [], n = x.length, step = Math.max(1, Math.floor(n / 97));
            let s = 0;
            for (let k = 0; k < n; k += step) s += (+x[k]) * 1.618 + (+y[k]);
            return n + ':' + s.toFixed(6);
        }).join('|') + '#' + ((gd._fullLayout.title || {}).text || '');
    }
    const text = (s) => q(s).map(e => e.textContent || '');
    const strong = text('strong');
    return {
        busy: busy,
        plots: plots.length,
        fingerprint: fingerprint,
        progress: text('[data-testid="stProgress"]').join(' | '),
        alerts: text('[data-testid="stAlert"]').join(' | '),
        methods: text('[data-testid="stCaptionContainer"]').filter(t => /^(PCA|UMAP|t-SNE), seed/.test(t))
            .map(t => t.split(',')[0]),
        occurrence: strong.filter(t => /^Occurrence \\d+/.test(t)).join(' '),
        nearest: strong.some(t => t.startsWith('Nearest neighbours')),
        exceptions: text('[data-testid="stException"]').map(t => t.slice(0, 300)),
    };
}"""

POINT_JS = """([i, which]) => {
    const gd = document.querySelectorAll('.js-plotly-plot')[i];
    gd.scrollIntoView({block: 'center'});
    const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, r = gd.getBoundingClientRect();
    const pts = [];
    gd._fullData.forEach((t, ti) => { for (let j = 0; j < (t.x || []).length; j++)
        if (Number.isFinite(+t.x[j]) && Number.isFinite(+t.y[j])) pts.push([+t.x[j], +t.y[j], ti, j]); });
    // Points on the outside of the cloud, where no other point sits under the pointer: the extremes in turn.
    const key = [p => p[0], p => -p[0], p => p[1], p => -p[1], p => p[0] + p[1], p => p[1] - p[0]][which % 6];
    pts.sort((a, b) => key(a) - key(b));
    const p = pts[Math.floor(which / 6) * 3];
    return [r.left + xa._offset + xa.c2p(p[0]), r.top + ya._offset + ya.c2p(p[1]),
            gd._fullData[p[2]].customdata[p[3]], pts.length];
}"""


class Wire:
    """The script runs the page's websocket reports: ``(time, status)`` for each run's end (0: the whole page,
    3: a fragment, 2: stopped early for a rerun), with the bytes received and whether a run is under way."""

    def __init__(self, page) -> None:
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        self._msg = ForwardMsg
        self.finished: list[tuple[float, int]] = []
        self.started: list[float] = []
        self.bytes = 0
        page.on("websocket", self._socket)

    def _socket(self, ws) -> None:
        if ws.url.endswith("/_stcore/stream"):
            ws.on("framereceived", self._frame)

    def _frame(self, payload) -> None:
        now = time.perf_counter()
        if isinstance(payload, str):
            return
        self.bytes += len(payload)
        msg = self._msg()
        try:
            msg.ParseFromString(payload)
        except Exception:  # noqa: BLE001 - not a ForwardMsg: not ours to count
            return
        kind = msg.WhichOneof("type")
        if kind == "new_session":
            self.started.append(now)
        elif kind == "script_finished":
            self.finished.append((now, int(msg.script_finished)))

    def idle_since(self, t0: float) -> bool:
        """A run ended after ``t0`` and none has started since the last end."""
        ends = [t for t, status in self.finished if t >= t0 and status != 2]
        return bool(ends) and not any(s > ends[-1] for s in self.started)

    def counts(self, t0: float, t1: float) -> tuple[int, int]:
        """(whole-page runs, fragment runs) that ended between t0 and t1."""
        ended = [s for t, s in self.finished if t0 <= t <= t1]
        return ended.count(0), ended.count(3)


@dataclass
class Action:
    what: str
    points: int
    times: list[float] = field(default_factory=list)
    full: int = 0  # whole-page runs during the measured actions
    fragments: int = 0
    mbytes: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.times) if self.times else float("nan")


class Timeout(Exception):
    pass


class Browser:
    """One page of headless Chromium on the served app, with its websocket read."""

    def __init__(self, browser, server) -> None:
        self.browser, self.server = browser, server
        self.context = self.page = self.wire = None

    def new(self) -> None:
        if self.context is not None:
            self.context.close()
        self.context = self.browser.new_context(viewport=VIEWPORT)
        self.page = self.context.new_page()
        self.wire = Wire(self.page)

    def state(self, plot: int = 1) -> dict:
        return self.page.evaluate(STATE_JS, plot)

    def wait(self, t0: float, done, plot: int = 1, timeout: float = 600, every: float = 0.05,
             seen: dict | None = None) -> tuple[float, dict]:
        """Poll until ``done(state)`` holds, nothing is busy and the run started after ``t0`` has ended: the
        seconds since ``t0`` and the last state. ``seen`` collects, per progress text, when it was first and
        last on the page."""
        deadline = t0 + timeout
        while True:
            now = time.perf_counter()
            s = self.state(plot)
            if seen is not None:
                for word in ("Indexing", "Embedding"):
                    if word in s["progress"]:
                        seen.setdefault(word, [now - t0, now - t0])[1] = now - t0
                if "UMAP is warming up" in s["alerts"]:
                    seen.setdefault("warming", [now - t0, now - t0])[1] = now - t0
                if s["methods"] and s["methods"][0] == "PCA" and "PCA" not in seen:
                    seen["PCA"] = [now - t0, now - t0]
            if s["exceptions"]:
                raise RuntimeError(f"a traceback on the page: {s['exceptions'][0]}")
            if done(s) and not s["busy"] and self.wire.idle_since(t0):
                return now - t0, s
            if now > deadline:
                raise Timeout(f"not idle after {timeout:.0f} s (last state: busy {s['busy']}, plots {s['plots']}, "
                              f"methods {s['methods']}, progress {s['progress'][:80]!r})")
            self.page.wait_for_timeout(every * 1000)

    def settle(self, quiet: float = 2.0, timeout: float = 120) -> int:
        """Untimed, after an action: wait until the page has stayed the same for ``quiet`` seconds; returns the
        script runs that ended meanwhile (after the measured end: work the action left behind)."""
        n0 = len(self.wire.finished)
        deadline = time.time() + timeout
        last, since = None, time.time()
        while time.time() < deadline:
            s = self.state()
            key = None if s["busy"] else (s["plots"], s["fingerprint"], s["occurrence"], tuple(s["methods"]),
                                          len(self.wire.finished))
            if key is None or key != last:
                last, since = key, time.time()
            elif time.time() - since > quiet:
                break
            self.page.wait_for_timeout(250)
        return len(self.wire.finished) - n0

    def layer_slider(self):
        from playwright.sync_api import Error

        block = self.page.locator('[data-testid="stSlider"]').filter(has_text="Layer")
        try:
            block.first.wait_for(timeout=10_000)
        except Error:
            raise RuntimeError("no Layer slider on the page") from None
        return block.first.get_by_role("slider")


def server_idle(server, quiet: float = 0.05, limit: float = 300) -> float:
    """Wait until the server process is idle (under ``quiet`` cores over half a second); the seconds waited."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < limit:
        c = server.cpu()
        time.sleep(0.5)
        if server.cpu() - c < quiet * 0.5:
            break
    return time.perf_counter() - t0


def page_url(server, word: str, limit: int, projection: str = "pca", sample: int = 0) -> str:
    return (f"{server.url}/word_senses?source=corpus&corpus_word={word}&inflect=1&limit={limit}&sample={sample}"
            f"&models=bert-eltec&projection={projection}")


def visit(b: Browser, url: str, action: Action | None = None, umap: bool = False) -> dict:
    """Open ``url`` in a new browser context, timed into ``action`` (None: untimed) until the page is idle with
    both panels drawn (``umap``: until the caption under them says UMAP). Returns what was seen on the way (when
    the progress bars and the PCA stand-in were on the page)."""
    action = action or Action("", 0)
    b.new()
    seen: dict = {}
    t0 = time.perf_counter()
    b.page.goto(url, wait_until="commit")
    if umap:
        done = lambda s: s["plots"] >= 2 and s["methods"][:1] == ["UMAP"]  # noqa: E731
    else:
        done = lambda s: s["plots"] >= 2 and bool(s["methods"])  # noqa: E731
    seconds, s = b.wait(t0, done, every=0.1, seen=seen)
    t1 = time.perf_counter()
    full, frag = b.wire.counts(t0, t1)
    action.times.append(seconds)
    action.full += full
    action.fragments += frag
    action.mbytes += b.wire.bytes / 2**20
    after = b.settle()
    if after:
        action.notes.append(f"{after} more run(s) after the page looked idle")
    seen["state"] = s
    return seen


def layer_switches(b: Browser, server, n: int, action: Action) -> None:
    """``n`` layer switches of bert-eltec (ArrowLeft, ArrowRight, ...) on the open page, each until the right-hand
    panel shows the new layer and the page is idle."""
    slider = b.layer_slider()
    for i in range(n):
        server_idle(server)
        before = b.state()["fingerprint"]
        bytes0 = b.wire.bytes
        slider.focus()
        t0 = time.perf_counter()
        slider.press("ArrowLeft" if i % 2 == 0 else "ArrowRight")
        seconds, _ = b.wait(t0, lambda s, before=before: s["fingerprint"] not in (None, before), timeout=180)
        full, frag = b.wire.counts(t0, time.perf_counter())
        action.times.append(seconds)
        action.full += full
        action.fragments += frag
        action.mbytes += (b.wire.bytes - bytes0) / 2**20
        after = b.settle()
        if after:
            action.notes.append(f"switch {i + 1}: {after} more run(s) after the page looked idle")
    action.mbytes /= max(n, 1)


def point_clicks(b: Browser, server, n: int, action: Action) -> None:
    """``n`` clicks on points of the right-hand panel, each until that occurrence's nearest neighbours are listed."""
    for i in range(n):
        server_idle(server)
        before = b.state()["occurrence"]
        x, y, occurrence, _ = b.page.evaluate(POINT_JS, [1, i])
        b.page.mouse.move(x, y)  # hover first, as a person does: Plotly picks the point under the pointer
        b.page.wait_for_timeout(400)
        bytes0 = b.wire.bytes
        t0 = time.perf_counter()
        b.page.mouse.click(x, y)
        try:
            seconds, s = b.wait(t0, lambda s, before=before: s["nearest"] and s["occurrence"] not in ("", before),
                                timeout=60)
        except Timeout as e:
            action.notes.append(f"click {i + 1} (occurrence {occurrence + 1}): {e}")
            continue
        full, frag = b.wire.counts(t0, time.perf_counter())
        action.times.append(seconds)
        action.full += full
        action.fragments += frag
        action.mbytes += (b.wire.bytes - bytes0) / 2**20
        if f"Occurrence {occurrence + 1}" not in s["occurrence"]:
            action.notes.append(f"click {i + 1}: aimed at occurrence {occurrence + 1}, got {s['occurrence']!r}")
        after = b.settle()
        if after:
            action.notes.append(f"click {i + 1}: {after} more run(s) after the page looked idle")
    action.mbytes /= max(len(action.times), 1)


def browser_part(args, cache: Path | None) -> tuple[list[Action], dict]:
    from playwright.sync_api import sync_playwright

    from bench.bench_capacity import Server, snapshot

    workdir = Path(tempfile.mkdtemp(prefix="bench-corpus-senses-"))
    actions: list[Action] = []
    info: dict = {}
    try:
        snapshot(workdir)  # with the repository's .streamlit settings, as the README's command runs it
        server_cache = cache or workdir / "cache"
        server = Server(workdir, None, ROOT, CTXMODELS_DATA=os.environ["CTXMODELS_DATA"],
                        CTXMODELS_CACHE=str(server_cache))
        try:
            time.sleep(2)
            info["rss_start"] = server.mem()[0]
            with sync_playwright() as p:
                chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                b = Browser(chromium, server)
                try:
                    actions += browse(args, b, server, info)
                finally:
                    if b.context is not None:
                        b.context.close()
                    chromium.close()
            info["rss_end"], info["rss_peak"] = server.mem()
        finally:
            server.stop()
            info["log"] = (workdir / f"server-{server.port}.log").read_text(errors="replace")[-3000:]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return actions, info


def browse(args, b: Browser, server, info: dict) -> list[Action]:
    actions: list[Action] = []
    n = args.points

    def step(what: str, fn) -> None:
        print(f"  {what} …", flush=True)
        k = len(actions)
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - a failed target is a finding: report it and go on
            print(f"    FAILED: {type(e).__name__}: {e}", flush=True)
            if len(actions) > k and not actions[-1].times:
                actions[-1].notes.append(f"FAILED: {type(e).__name__}: {str(e)[:200]}")
        for a in actions[k:]:
            print(f"    {a.what}: {a.median:.2f} s median of {len(a.times)}  [{runs(a.times)}]; runs: {a.full} whole "
                  f"page, {a.fragments} fragment" + (f"; {'; '.join(a.notes)}" if a.notes else ""), flush=True)

    def first() -> None:
        actions.append(Action("first visit (cold: index + embedding)", n))
        seen = visit(b, page_url(server, args.word, n), actions[-1])
        info["first_seen"] = seen
        a = actions[-1]
        if "Indexing" not in seen:
            a.notes.append("index built before (no progress bar)")
        for word, what in (("Indexing", "index build"), ("Embedding", "embedding")):
            if word in seen:
                start, end = seen[word]
                a.notes.append(f"{what}: progress bar on the page from {start:.1f} to {end:.1f} s")
                actions.append(Action(f"  of which {what} (progress bar shown)", n, [end - start]))

    def second() -> None:
        server_idle(server)
        actions.append(Action("second visit (new context, caches warm)", n))
        for _ in range(args.visits):
            server_idle(server)
            visit(b, page_url(server, args.word, n), actions[-1])
        actions[-1].mbytes /= args.visits

    def new_sample() -> None:
        server_idle(server)
        actions.append(Action("visit, another sample (index warm: embedding)", n))
        seen = visit(b, page_url(server, args.word, n, sample=1), actions[-1])
        if "Embedding" in seen:
            start, end = seen["Embedding"]
            actions[-1].notes.append(f"embedding: progress bar on the page from {start:.1f} to {end:.1f} s")
            actions.append(Action("  of which embedding (progress bar shown)", n, [end - start]))

    def switch(points: int) -> None:
        if points != n:
            server_idle(server)
            visit(b, page_url(server, args.word, points))  # embeds these occurrences (not timed)
        actions.append(Action("layer switch (bert-eltec, 2 <-> 1)", points))
        layer_switches(b, server, args.switches, actions[-1])

    def clicks() -> None:
        server_idle(server)
        visit(b, page_url(server, args.word, n))
        actions.append(Action("click a point -> nearest neighbours", n))
        point_clicks(b, server, args.clicks, actions[-1])

    def umap() -> None:
        server_idle(server)
        actions.append(Action("UMAP replaces the PCA stand-in (from opening)", n))
        seen = visit(b, page_url(server, args.word, n, "umap"), actions[-1], umap=True)
        if "PCA" in seen:
            actions[-1].notes.append(f"PCA stand-in drawn after {seen['PCA'][0]:.1f} s")
        if "warming" in seen:
            actions[-1].notes.append("UMAP was still warming up")

    step(f"first visit, {n:,} points", first)
    info["rss_after_first"] = server.mem()[0]
    step(f"second visit x{args.visits}", second)
    step("another sample", new_sample)
    b.new()
    b.page.goto(page_url(server, args.word, n))
    b.settle()
    step(f"layer switch x{args.switches}, {n:,} points", lambda: switch(n))
    step(f"click x{args.clicks}, {n:,} points", clicks)
    for points in args.compare:
        step(f"layer switch x{args.switches}, {points:,} points", lambda points=points: switch(points))
    step(f"UMAP, {n:,} points", umap)
    return actions


def print_browser(actions: list[Action], info: dict) -> None:
    print("\nPart 2, the page in headless Chromium (1440x900): from the action until the page is idle\n")
    print(f"| {'action':<46} | {'points':>6} | {'median s':>8} | {'n':>2} | {'runs s':<40} | whole-page runs | "
          "fragment runs | MB received / action | notes |")
    print(f"|{'-' * 48}|{'-' * 8}|{'-' * 10}|{'-' * 4}|{'-' * 42}|---|---|---|---|")
    for a in actions:
        print(f"| {a.what:<46} | {a.points:>6,} | {a.median:>8.2f} | {len(a.times):>2} | {runs(a.times):<40} | "
              f"{a.full} | {a.fragments} | {a.mbytes:.2f} | {'; '.join(a.notes)} |")
    if "rss_start" in info:
        print(f"\nserver RSS: {info['rss_start']:.0f} MB after start, {info.get('rss_after_first', float('nan')):.0f}"
              f" MB after the first visit, {info.get('rss_end', float('nan')):.0f} MB at the end (peak "
              f"{info.get('rss_peak', float('nan')):.0f} MB)")
    problems = [line for line in info.get("log", "").splitlines() if "Traceback" in line or "Error" in line]
    if problems:
        print("server log (tail):\n" + info["log"])


# -- main -----------------------------------------------------------------------------------------------------------


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--word", default="light", help="the word looked up in the corpus (with its inflections)")
    ap.add_argument("--points", type=int, default=5000, help="occurrences of the large view (the page's maximum)")
    ap.add_argument("--repeat", type=int, default=3, help="part 1: runs per step (medians)")
    ap.add_argument("--quick", action="store_true", help="part 1: 5,000 points with bert-eltec only")
    ap.add_argument("--no-core", action="store_true", help="skip part 1")
    ap.add_argument("--browser", action="store_true", help="part 2: the served page in headless Chromium")
    ap.add_argument("--cache", type=Path, default=None,
                    help="CTXMODELS_CACHE to reuse (the corpus index is built there once); default: a new temporary "
                         "folder, so the index is built (and timed) afresh")
    ap.add_argument("--switches", type=int, default=7, help="part 2: layer switches per size (median)")
    ap.add_argument("--clicks", type=int, default=5, help="part 2: clicks on points (median)")
    ap.add_argument("--visits", type=int, default=1, help="part 2: warm second visits (median)")
    ap.add_argument("--compare", type=int, nargs="*", default=[1000, 2000],
                    help="part 2: smaller views whose layer switch is timed too")
    args = ap.parse_args()

    tmp = None
    if args.cache is None:
        tmp = Path(tempfile.mkdtemp(prefix="bench-corpus-cache-"))
    os.environ["CTXMODELS_CACHE"] = str(args.cache or tmp)
    from ctxmodels.paths import data_dir

    corpus = data_dir() / "corpus" / "eltec-eng.txt"
    load = os.getloadavg()
    print(f"machine: {os.cpu_count()} CPUs, load average {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} at the "
          f"start; corpus {corpus} ({corpus.stat().st_size / 1e6:.0f} MB); cache {os.environ['CTXMODELS_CACHE']}"
          f"{' (temporary)' if tmp else ''}")
    try:
        if not args.no_core:
            print(f"\nPart 1, the core: {args.word!r} and its inflections in the novels", flush=True)
            rows = core(args, corpus)
            print_core(rows, args.repeat)
        if args.browser:
            print(f"\nPart 2, the page: {args.word!r}, bert-eltec, PCA unless said otherwise", flush=True)
            actions, info = browser_part(args, None if tmp else args.cache)
            print_browser(actions, info)
        load = os.getloadavg()
        print(f"\nload average at the end: {load[0]:.2f} (1 min), {load[1]:.2f} (5 min), {load[2]:.2f} (15 min)")
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
