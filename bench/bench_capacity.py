"""What one visitor costs the served explorer, and how many students one machine serves (run by hand; prints tables).

    python bench/bench_capacity.py                          # per-action costs, a dragged slider, 1-20 students
    python bench/bench_capacity.py --no-costs --burst 0 --students 30 45 60 --think 3 8
    python bench/bench_capacity.py --server-cpus 0 --client-cpus 1   # the server pinned to one core

The app runs as the README's command starts it (``streamlit run app/Home.py``), from a copy of ``app/``,
``ctxmodels/`` and the shipped models ``assets/`` taken when the benchmark starts (``--tree`` names another
folder to copy them from): nothing here writes into the checkout, and edits made to it meanwhile do not reach
the running server. The load generator speaks Streamlit's own websocket protocol (``/_stcore/stream``: the
BackMsg/ForwardMsg protobufs a browser exchanges with the server) from one asyncio process: no browser runs on
the server's machine, as none does when students use their own laptops, and one light client plays a whole
class (its own CPU time is reported). A browser would add only its own rendering, on the student's machine.
Each client session does what the page's code in a browser does: it opens a page, and for an interaction sends
the page's widget states with the one changed value (naming the fragment when the widget is drawn inside an
``st.fragment``, so that only the fragment reruns), then waits for the run to finish (``script_finished``):
"response time" is from the click or keystroke to the page being idle again, as the server sees it (the
network of a classroom comes on top).

Part 1, one visitor at a time on an otherwise idle server (each action starts when the server is idle): for each
page view and each interaction, the server process's CPU-seconds (utime + stime from /proc/PID/stat, all threads)
and its resident memory (RSS) after it; means over ``--repeat`` actions with new inputs where a visitor's would be
new (another word, sentence, keystroke: nothing cached) and alternating values where a visitor toggles.

Part 1b, one visitor drags a control: on a large set of their own sentences (every preset sentence, target
"the"), ``--burst`` values of the t-SNE perplexity slider 0.15 s apart, each a new projection of every model.
Streamlit starts a new run for each without waiting for the last (fast reruns), so without a bound they all
compute at once. Reported with the app's per-session bound and with it lifted: the time until the page shows
the last value, and the server's CPU-seconds until it is idle again.

Part 2, N students at once, each class on a fresh server that the teacher has opened every page of once: every
student connects within the first ``--ramp`` seconds and works through a lesson (below) with ``--think``
seconds between actions; reported: response-time p50/p95/max over all actions, errors (exceptions, error boxes,
timeouts), "still computing" notices (app/limits.py), the server's CPU (cores busy on average) and peak RSS, the
client's CPU, and the CPU other processes on the machine used meanwhile (this may be a shared machine).

The lesson: overview; Word senses on the teacher's word (half of the class) or a preset of their own; switch
BERT's layer; switch the projection to PCA; a quarter of the class types their own sentences (always new work:
embedding and UMAP for three models); Attention on a preset sentence; change the layer, then the head; Fill in
the blank with four keystrokes of a cloze sentence; ELMo layers; Models. 14 to 16 actions in about 80 s: a
brisker pace than a class keeps, so the figures err on the safe side.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import websockets  # noqa: E402
from streamlit.proto.BackMsg_pb2 import BackMsg  # noqa: E402
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg  # noqa: E402
from streamlit.proto.WidgetStates_pb2 import WidgetState  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")
FINISHED, COMPILE_ERROR, EARLY_FOR_RERUN = 0, 1, 2
ALERT_ERROR, ALERT_WARNING = 1, 2
BUSY_TEXT = "previous computation is still running"
EXAMPLES = ROOT / "assets" / "examples"  # replaced by the snapshot's copy in main()


# -- the machine ------------------------------------------------------------------------------------------------


def proc_cpu(pid: int | str) -> float:
    """CPU-seconds (user + system, all threads) of a process so far."""
    with open(f"/proc/{pid}/stat") as f:
        rest = f.read().rsplit(")", 1)[1].split()
    return (int(rest[11]) + int(rest[12])) / TICK


def proc_mem(pid: int) -> tuple[float, float]:
    """(resident, peak resident) memory of a process, in MB."""
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(("VmRSS:", "VmHWM:")):
                out[line.split(":")[0]] = int(line.split()[1]) / 1024
    return out.get("VmRSS", 0.0), out.get("VmHWM", 0.0)


def machine_busy() -> float:
    """CPU-seconds all processes on the machine have used so far (from /proc/stat)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return (sum(fields[:8]) - idle) / TICK


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def snapshot(workdir: Path, source: Path = ROOT) -> Path:
    """A copy of the app, the package and the shipped models as they are now (in ``source``, the checkout by
    default): the server runs from it, so edits to the checkout during a run cannot reach it, and nothing it
    writes (probe results) lands in the checkout."""
    tree = workdir / "tree"
    if not tree.is_dir():
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
        for part in ("app", "ctxmodels", "assets", ".streamlit"):  # .streamlit: the app's own server settings
            if (source / part).is_dir():
                shutil.copytree(source / part, tree / part, ignore=ignore)
    return tree


class Server:
    """``streamlit run app/Home.py`` (or another ``script``) from the snapshot, optionally pinned with taskset."""

    def __init__(self, workdir: Path, cpus: str | None, source: Path = ROOT, script: str = "app/Home.py",
                 **extra_env: str) -> None:
        self.port = free_port()
        tree = snapshot(workdir, source)
        env = dict(os.environ, CTXMODELS_ASSETS=str(tree / "assets"), CTXMODELS_APP_RUNS=str(workdir / "runs"),
                   CTXMODELS_CACHE=str(workdir / "cache"), PYTHONPATH=str(tree),
                   CTXMODELS_DATA=os.environ.get("CTXMODELS_DATA", str(ROOT.parent / "shared" / "data")))
        for var in ("CTXMODELS_APP_MODELS", "CTXMODELS_ALLOW_PATHS", "CTXMODELS_ALLOW_UPLOADS",
                    "CTXMODELS_ALLOW_TRAINING", "CTXMODELS_HEAVY_PER_SESSION"):
            env.pop(var, None)
        env.update(extra_env)
        cmd = [sys.executable, "-m", "streamlit", "run", script, "--server.port", str(self.port),
               "--server.address", "127.0.0.1", "--server.headless", "true", "--browser.gatherUsageStats", "false"]
        if cpus:
            cmd = ["taskset", "-c", cpus, *cmd]
        self.log = open(workdir / f"server-{self.port}.log", "w+")
        self.proc = subprocess.Popen(cmd, cwd=tree, env=env, stdout=self.log, stderr=subprocess.STDOUT)
        self.url = f"http://127.0.0.1:{self.port}"
        deadline = time.time() + 180
        while True:
            try:
                with urllib.request.urlopen(f"{self.url}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if self.proc.poll() is not None or time.time() > deadline:
                self.stop()
                with open(self.log.name) as log:
                    raise SystemExit(f"the server did not start:\n{log.read()[-3000:]}")
            time.sleep(0.3)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def cpu(self) -> float:
        return proc_cpu(self.pid)

    def mem(self) -> tuple[float, float]:
        return proc_mem(self.pid)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


# -- one visitor, speaking Streamlit's protocol --------------------------------------------------------------------


@dataclass
class Run:
    seconds: float
    elements: dict = field(default_factory=dict)  # delta path -> Element of the finished run
    errors: list[str] = field(default_factory=list)
    busy: int = 0  # "still computing" notices (app/limits.py)
    received: int = 0  # bytes sent by the server
    fragment: bool = False  # a fragment's run (a widget inside an st.fragment), not the whole page's

    def texts(self, kind: str) -> list[str]:
        out = []
        for e in self.elements.values():
            if e.WhichOneof("type") == kind:
                sub = getattr(e, kind)
                out.append(getattr(sub, "body", "") or getattr(sub, "label", ""))
        return out


class Visitor:
    """One browser tab: a websocket session that opens pages and changes widgets as the frontend does."""

    def __init__(self, url: str, timeout: float = 300) -> None:
        self.ws_url = url.replace("http://", "ws://") + "/_stcore/stream"
        self.timeout = timeout
        self.page = ""
        self.query = ""
        self.values: dict[str, WidgetState] = {}  # widget key -> the state this visitor set on this page
        self.last: Run | None = None
        self.ws = None
        self.page_hash = ""  # the page's script hash, from the server (a fragment run names it)
        self.fragment_of: dict[str, str] = {}  # widget id -> the fragment it is drawn in ("" for none)

    async def __aenter__(self) -> Visitor:
        self.ws = await websockets.connect(self.ws_url, subprotocols=["streamlit"], max_size=None,
                                           open_timeout=60, ping_interval=None)
        return self

    async def __aexit__(self, *exc) -> None:
        await self.ws.close()

    async def open(self, page: str, **query: str) -> Run:
        """Navigate to a page (as following a link: the page's own URL parameters, no widget state)."""
        self.page, self.values = page, {}
        self.query = urllib.parse.urlencode(query)
        return await self._run({})

    async def change(self, expect: str | None = None, **values) -> Run:
        """Change widgets by key (a button by its label: ``press="Run probe"``) and wait for the page. An error box
        that contains ``expect`` is the page's answer to an input on its way (not counted as an error)."""
        if self.last is None:
            raise RuntimeError("open a page first")
        triggers = {}
        for key, value in values.items():
            if key == "press":
                triggers[value] = WidgetState(id=self._button(value).id, trigger_value=True)
            else:
                self.values[key] = self._state(key, value)
        # As the frontend does: a widget drawn inside an st.fragment reruns that fragment only.
        changed = [*triggers.values(), *(self.values[k] for k in values if k != "press")]
        fragments = {self.fragment_of.get(s.id, "") for s in changed}
        fragment = fragments.pop() if len(fragments) == 1 else ""
        return await self._run(triggers, expect, fragment)

    async def burst(self, changes: list[dict], gap: float) -> Run:
        """Several changes ``gap`` seconds apart without waiting for the page (a slider dragged, fast clicks),
        then wait for the page to settle on the last one."""
        t0 = time.perf_counter()
        for values in changes:
            for key, value in values.items():
                self.values[key] = self._state(key, value)
            await self._send({})
            await asyncio.sleep(gap)
        return await self._finish(t0, None)

    def option(self, key: str, index: int) -> str:
        kind, w = self._widget(key)
        return list(w.options)[index]

    def _widget(self, key: str):
        for e in self.last.elements.values():
            kind = e.WhichOneof("type")
            sub = getattr(e, kind)
            wid = getattr(sub, "id", "")
            if isinstance(wid, str) and (wid.endswith(f"-{key}") or wid.endswith(f"-_st_keyup_{key}")):
                return kind, sub
        raise KeyError(f"no widget {key!r} on {self.page}")

    def _button(self, label: str):
        for e in self.last.elements.values():
            if e.WhichOneof("type") == "button" and e.button.label == label:
                return e.button
        raise KeyError(f"no button {label!r} on {self.page}")

    def _state(self, key: str, value) -> WidgetState:
        """The widget's state as the frontend sends it (the id is the widget's current one)."""
        kind, w = self._widget(key)
        s = WidgetState(id=w.id)
        if kind in ("selectbox", "radio"):
            if value not in w.options:
                raise ValueError(f"{key}: {value!r} is not among {list(w.options)}")
            s.string_value = value
        elif kind == "slider" and w.options:  # a select_slider: the formatted option
            s.string_array_value.data.append(value)
        elif kind == "slider":
            s.double_array_value.data.append(float(value))
        elif kind == "multiselect":
            s.string_array_value.data.extend(value)
        elif kind == "checkbox":
            s.bool_value = bool(value)
        elif kind in ("text_area", "text_input"):
            s.string_value = value
        elif kind == "number_input":
            s.double_value = float(value)
        elif kind == "bidi_component":  # st_keyup: the component's state
            s.json_value = json.dumps({"value": value})
        else:
            raise ValueError(f"{key}: cannot set a {kind}")
        return s

    async def _send(self, triggers: dict[str, WidgetState], fragment: str = "") -> None:
        msg = BackMsg()
        cs = msg.rerun_script
        cs.query_string = self.query
        cs.page_name = self.page  # the page by its URL path, as a browser's first request names it
        if fragment:
            cs.fragment_id = fragment
            cs.page_script_hash = self.page_hash
        for s in [*self.values.values(), *triggers.values()]:
            cs.widget_states.widgets.append(s)
        await self.ws.send(msg.SerializeToString())

    async def _run(self, triggers: dict[str, WidgetState], expect: str | None = None, fragment: str = "") -> Run:
        t0 = time.perf_counter()
        await self._send(triggers, fragment)
        return await self._finish(t0, expect, fragment)

    async def _finish(self, t0: float, expect: str | None, fragment: str = "") -> Run:
        # A fragment run sends only the fragment's elements: the rest of the page stays as the last run left it.
        run = Run(0.0, elements=dict(self.last.elements) if fragment and self.last else {})
        run.fragment = bool(fragment)
        try:
            await asyncio.wait_for(self._collect(run), self.timeout)
        except asyncio.TimeoutError:
            run.errors.append(f"timeout after {self.timeout:.0f} s")
        run.seconds = time.perf_counter() - t0
        for e in run.elements.values():
            kind = e.WhichOneof("type")
            if kind == "exception":
                run.errors.append(f"exception: {e.exception.type}: {e.exception.message[:200]}")
            elif kind == "alert" and e.alert.format == ALERT_ERROR and not (expect and expect in e.alert.body):
                run.errors.append(f"error box: {e.alert.body[:200]}")
            elif kind == "alert" and e.alert.format == ALERT_WARNING and BUSY_TEXT in e.alert.body:
                run.busy += 1
        self.last = run
        return run

    async def _collect(self, run: Run) -> None:
        while True:
            raw = await self.ws.recv()
            run.received += len(raw)
            f = ForwardMsg()
            f.ParseFromString(raw)
            kind = f.WhichOneof("type")
            if kind == "new_session":  # a script run starts (again, after an st.rerun)
                self.page_hash = f.new_session.page_script_hash or self.page_hash
                if not run.fragment:
                    run.elements = {}
            elif kind == "delta" and f.delta.WhichOneof("type") == "new_element":
                run.elements[tuple(f.metadata.delta_path)] = f.delta.new_element
                element = f.delta.new_element
                wid = getattr(getattr(element, element.WhichOneof("type")), "id", "")
                if isinstance(wid, str) and wid:
                    self.fragment_of[wid] = f.delta.fragment_id
            elif kind == "page_info_changed":
                self.query = f.page_info_changed.query_string
            elif kind == "script_finished" and f.script_finished != EARLY_FOR_RERUN:
                if f.script_finished == COMPILE_ERROR:
                    run.errors.append("the script did not compile")
                return


def bert_layer(v: Visitor) -> str:
    """The key of the layer slider in Word senses' BERT row (the default BERT: minilm-eltec where shipped)."""
    for name in ("minilm-eltec", "bert-eltec"):
        try:
            v._widget(f"layer::{name}")
            return f"layer::{name}"
        except KeyError:
            continue
    raise KeyError("no BERT row on Word senses")


# -- what students type -------------------------------------------------------------------------------------------


def preset_lines(word: str) -> list[str]:
    return [x.strip() for x in (EXAMPLES / "senses" / f"{word}.txt").read_text().splitlines() if x.strip()]


def preset_words() -> list[str]:
    return sorted(p.stem for p in (EXAMPLES / "senses").glob("*.txt"))


def all_preset_lines() -> list[str]:
    return [line for word in preset_words() for line in preset_lines(word)]


def cloze() -> list[str]:
    lines = (EXAMPLES / "cloze.tsv").read_text().splitlines()
    return [line.split("\t")[0] for line in lines if "\t" in line]


def own_sentences(rng: random.Random, tag: int) -> tuple[str, str]:
    """Sentences a student types: a dozen preset ones for a word, in their own order, and one of their own."""
    word = rng.choice(["bank", "light", "play", "spring"])
    lines = rng.sample(preset_lines(word), 12)
    lines.append(f"On day {tag} the {word} was mentioned again. | other")
    return "\n".join(lines), word


def keystrokes(sentence: str) -> list[str]:
    """Four states of the box while a student types ``sentence``: the words up to and including [MASK], then more."""
    words = sentence.split()
    m = next(i for i, w in enumerate(words) if "[MASK]" in w)
    stops = sorted({m + 1, (m + 1 + len(words)) // 2, len(words) - 1, len(words)})
    while len(stops) < 4:
        stops.append(len(words))
    return [" ".join(words[:k]) for k in stops[:4]]


# -- part 1: one visitor at a time --------------------------------------------------------------------------------


@dataclass
class Cost:
    what: str
    seconds: float
    cpu: float
    rss: float
    errors: list[str]
    n: int = 1


async def settled(server: Server, quiet: float = 0.03) -> None:
    """Wait until the server is idle (under ``quiet`` cores busy over half a second)."""
    for _ in range(240):
        c = server.cpu()
        await asyncio.sleep(0.5)
        if server.cpu() - c < quiet * 0.5:
            return


async def measured(server: Server, what: str, action, repeat: int = 1) -> Cost:
    """The server's CPU-seconds and the response time of ``action`` (mean over ``repeat`` calls), RSS after."""
    secs, cpus, errors = [], [], []
    for i in range(repeat):
        await settled(server)  # nothing else running on the server (a warm-up, the previous run's tail)
        c0 = server.cpu()
        run = await action(i)
        cpus.append(server.cpu() - c0)
        secs.append(run.seconds)
        errors += run.errors
    cost = Cost(what, statistics.mean(secs), statistics.mean(cpus), server.mem()[0], errors, repeat)
    print(f"  {what:<62} {cost.seconds:7.2f} s {cost.cpu:7.2f} cpu-s {cost.rss:7.0f} MB"
          + (f"  ERRORS: {errors}" if errors else ""), flush=True)
    return cost


async def wait_for_umap(v: Visitor) -> None:
    """Open Word senses until UMAP has warmed up (once per server, in the background)."""
    deadline = time.time() + 300
    while time.time() < deadline:
        run = await v.open("word_senses")
        if not any("UMAP is warming up" in t for t in run.texts("alert")):
            return
        await asyncio.sleep(3)
    raise SystemExit("UMAP did not warm up within 5 minutes")


async def per_action_costs(server: Server, probe: bool, repeat: int) -> list[Cost]:
    """Each page view and interaction ``repeat`` times (means), with inputs that are new where a visitor's would
    be (another word, sentence, keystroke) and alternating where they toggle (layers, heads, projections)."""
    rows: list[Cost] = []
    r = repeat

    async def row(what: str, action, n: int = r) -> None:
        rows.append(await measured(server, what, action, n))

    words = [w for w in preset_words() if w != "bank"]
    layers = [1, 0, 1, 2]
    sentences = [x.split(" | ")[0] for x in preset_lines("match")]
    typed = [t for sentence in cloze()[:8] for t in keystrokes(sentence)]
    async with Visitor(server.url) as v, Visitor(server.url) as w:
        await row("Overview: first page view after start", lambda i: v.open("overview"), 1)
        await settled(server)  # the UMAP warm-up (once per server, in the background) has finished
        await row("Overview: page view", lambda i: w.open("overview"))
        await row("Word senses: page view, first ever (loads 3 models)", lambda i: v.open("word_senses"), 1)
        await row("Word senses: page view (cached)", lambda i: w.open("word_senses"))
        await row("Word senses: another preset word (new UMAP x3, measures)", lambda i: v.change(
            preset=words[i % len(words)]))
        await row("Word senses: BERT layer switch", lambda i: v.change(
            **{bert_layer(v): v.option(bert_layer(v), layers[i % 4])}))
        await row("Word senses: projection switch (PCA, t-SNE, UMAP)", lambda i: v.change(
            projection=["PCA", "t-SNE", "UMAP"][i % 3]))
        await v.change(projection="UMAP")
        await row("Word senses: switch to own sentences (empty box)", lambda i: v.change(
            source="my own sentences", expect="no sentences"), 1)
        own = [own_sentences(random.Random(k), k) for k in range(r)]
        await row("Word senses: own 13 sentences (new UMAP x3, measures)", lambda i: v.change(
            sentences=own[i][0], word=own[i][1]))
        await row("ELMo layers: page view", lambda i: v.open("elmo_layers"))
        await row("ELMo layers: model switch", lambda i: v.change(probe_model=v.option("probe_model", (i + 1) % 2)))
        if probe:
            await row("ELMo layers: run a probe (300 SemCor sentences, 10 epochs)", lambda i: v.change(
                probe_again=True, press="Run probe"), 1)
        await row("Attention: first page view (loads nothing new)", lambda i: v.open("attention"), 1)
        await row("Attention: page view (cached)", lambda i: w.open("attention"))
        await row("Attention: layer change", lambda i: v.change(att_layer=2 - i % 2))
        await row("Attention: head change", lambda i: v.change(att_head=2 - i % 2))
        await row("Attention: view switch (mean, rollout, one head)", lambda i: v.change(
            view=["mean over heads", "rollout", "one head"][i % 3]))
        await row("Attention: a new sentence", lambda i: v.change(sentence=sentences[i % len(sentences)]))
        await row("Fill in: page view", lambda i: v.open("fill_in"))
        await row("Fill in: keystroke", lambda i: v.change(text_live=typed[i % len(typed)]), 2 * r)
        await row("Models: page view", lambda i: v.open("models"))
    return rows


# -- part 1b: a dragged slider ------------------------------------------------------------------------------------


async def drag_slider(server: Server, changes: int, gap: float) -> tuple[Run, float, float]:
    """One visitor with a large set of their own (every preset sentence, target "the": some 400 occurrences)
    drags the t-SNE perplexity slider through ``changes`` values, ``gap`` s apart (each value a new t-SNE of
    every model): (the last run, seconds until the server is idle again, server CPU-seconds until then)."""
    async with Visitor(server.url) as v:
        await wait_for_umap(v)
        await v.change(source="my own sentences", expect="no sentences")
        await v.change(sentences="\n".join(all_preset_lines()), word="the", projection="t-SNE")
        await settled(server)
        c0, t0 = server.cpu(), time.perf_counter()
        run = await v.burst([{"perplexity": 20 + k} for k in range(changes)], gap)
        await settled(server)
        return run, time.perf_counter() - t0, server.cpu() - c0


def burst_rows(workdir: Path, args) -> list[tuple[str, Run, float, float]]:
    rows = []
    for bound in ("1", "16"):
        server = Server(workdir, args.server_cpus, args.tree, CTXMODELS_HEAVY_PER_SESSION=bound)
        try:
            run, idle, cpu = asyncio.run(drag_slider(server, args.burst, 0.15))
        finally:
            server.stop()
        what = "default bound (1 heavy block a session)" if bound == "1" else "bound lifted (16 at once)"
        rows.append((what, run, idle, cpu))
        print(f"  {what}: last page after {run.seconds:.2f} s, server idle after {idle:.2f} s, {cpu:.2f} cpu-s"
              + (f"  ERRORS: {run.errors}" if run.errors else ""), flush=True)
    return rows


# -- part 2: a class ----------------------------------------------------------------------------------------------


@dataclass
class Record:
    student: int
    what: str
    seconds: float
    errors: list[str]
    busy: int


async def lesson(url: str, i: int, seed: int, think: tuple[float, float], ramp: float, records: list[Record]) -> None:
    rng = random.Random(seed * 1000 + i)
    await asyncio.sleep(rng.uniform(0, ramp))

    async def act(what: str, coro, pause: tuple[float, float] | None = None) -> Run | None:
        try:
            run = await coro
        except Exception as e:  # noqa: BLE001 - a failed action is a result, not the end of the benchmark
            records.append(Record(i, what, float("nan"), [f"{type(e).__name__}: {e}"], 0))
            return None
        records.append(Record(i, what, run.seconds, run.errors, run.busy))
        await asyncio.sleep(rng.uniform(*(pause or think)))
        return run

    words = preset_words()
    try:
        async with Visitor(url) as v:
            await act("overview: view", v.open("overview"))
            word = "bank" if rng.random() < 0.5 else rng.choice(words)
            if await act("word senses: view", v.open("word_senses", preset=word)):
                await act("word senses: BERT layer", v.change(**{bert_layer(v): v.option(bert_layer(v), 1)}))
                await act("word senses: projection", v.change(projection="PCA"))
                if i % 4 == 3:
                    text, target = own_sentences(rng, seed * 1000 + i)
                    if await act("word senses: own sentences box", v.change(source="my own sentences",
                                                                            expect="no sentences")):
                        await act("word senses: own sentences", v.change(sentences=text, word=target))
            sentence = rng.choice(preset_lines(rng.choice(words))).split(" | ")[0]
            if await act("attention: view", v.open("attention", sentence=sentence)):
                await act("attention: layer", v.change(att_layer=2))
                await act("attention: head", v.change(att_head=rng.randint(1, 2)))
            if await act("fill in: view", v.open("fill_in")):
                typed = keystrokes(rng.choice(cloze()))
                for k, text in enumerate(typed):
                    await act("fill in: keystroke", v.change(text_live=text),
                              pause=(0.2, 0.8) if k < len(typed) - 1 else None)
            await act("ELMo layers: view", v.open("elmo_layers"))
            await act("models: view", v.open("models"))
    except Exception as e:  # noqa: BLE001 - e.g. the connection was refused: counted as an error
        records.append(Record(i, "connect", float("nan"), [f"{type(e).__name__}: {e}"], 0))


async def teacher_opens_everything(url: str) -> None:
    async with Visitor(url) as v:
        await v.open("overview")
        await v.open("word_senses")
        await wait_for_umap(v)
        for page in ("elmo_layers", "attention", "fill_in", "models"):
            await v.open(page)


def percentile(values: list[float], q: float) -> float:
    values = sorted(values)
    if not values:
        return float("nan")
    k = (len(values) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


@dataclass
class ClassResult:
    students: int
    actions: int
    p50: float
    p95: float
    worst: float
    errors: int
    busy: int
    wall: float
    server_cores: float
    peak_rss: float
    client_cores: float
    other_cores: float
    p95_views: float
    p95_interactions: float
    examples: list[str]


def run_class(workdir: Path, n: int, args) -> ClassResult:
    server = Server(workdir, args.server_cpus, args.tree)
    try:
        asyncio.run(teacher_opens_everything(server.url))
        records: list[Record] = []
        rss_peak = [server.mem()[0]]
        stop = False

        async def sample_memory() -> None:
            while not stop:
                rss_peak[0] = max(rss_peak[0], server.mem()[0])
                await asyncio.sleep(0.5)

        async def main() -> None:
            nonlocal stop
            sampler = asyncio.create_task(sample_memory())
            await asyncio.gather(*(lesson(server.url, i, args.seed, tuple(args.think), args.ramp, records)
                                   for i in range(n)))
            stop = True
            await sampler

        c0, m0, me0, t0 = server.cpu(), machine_busy(), proc_cpu("self"), time.perf_counter()
        asyncio.run(main())
        wall = time.perf_counter() - t0
        server_cpu, machine, mine = server.cpu() - c0, machine_busy() - m0, proc_cpu("self") - me0
    finally:
        server.stop()
    times = [r.seconds for r in records if r.seconds == r.seconds]
    views = [r.seconds for r in records if r.what.endswith(": view") and r.seconds == r.seconds]
    inter = [r.seconds for r in records if not r.what.endswith(": view") and r.seconds == r.seconds]
    errors = [e for r in records for e in r.errors]
    return ClassResult(n, len(records), percentile(times, 0.5), percentile(times, 0.95), max(times, default=0),
                       len(errors), sum(r.busy for r in records), wall, server_cpu / wall, rss_peak[0],
                       mine / wall, max(0.0, machine - server_cpu - mine) / wall, percentile(views, 0.95),
                       percentile(inter, 0.95), errors[:3])


# -- main -----------------------------------------------------------------------------------------------------------


def write_results(path: Path, results: list[ClassResult]) -> None:
    """Part 2's rows as JSON (peak_rss in MB as printed; the examples of errors left out)."""
    rows = [{k: v for k, v in asdict(r).items() if k != "examples"} for r in results]
    record = {"command": "python " + " ".join(["bench/bench_capacity.py", *sys.argv[1:]]),
              "machine": f"{os.cpu_count()} CPUs", "classes": rows}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print(f"part 2 written to {path}")


def main() -> None:
    global EXAMPLES
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--students", type=int, nargs="*", default=[1, 5, 10, 20], help="class sizes to simulate")
    ap.add_argument("--think", type=float, nargs=2, default=[3.0, 8.0], metavar=("MIN", "MAX"),
                    help="seconds a student spends between actions (uniform)")
    ap.add_argument("--ramp", type=float, default=10.0, help="students connect within this many seconds")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--server-cpus", default=None, help="taskset CPU list for the server (default: all)")
    ap.add_argument("--client-cpus", default=None, help="taskset CPU list for this load generator (default: all)")
    ap.add_argument("--tree", type=Path, default=ROOT, help="serve app/, ctxmodels/ and assets/ from this folder "
                                                             "(default: this checkout, copied at the start)")
    ap.add_argument("--no-costs", action="store_true", help="skip part 1 (per-action costs)")
    ap.add_argument("--repeat", type=int, default=4, help="part 1: times each action is measured (means)")
    ap.add_argument("--burst", type=int, default=8, help="part 1b: slider values in one drag (0: skip)")
    ap.add_argument("--no-probe", action="store_true", help="part 1 without running an ELMo probe")
    ap.add_argument("--results", type=Path, default=None,
                    help="also write part 2's table as JSON here (bench/results/capacity.json is the one "
                         "docs/serving.md's table is written from: python -m ctxmodels.release.docs)")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a kill still stops the server (finally blocks)
    if args.client_cpus:
        os.sched_setaffinity(0, {int(c) for c in args.client_cpus.split(",")})

    workdir = Path(tempfile.mkdtemp(prefix="bench-capacity-"))
    EXAMPLES = snapshot(workdir, args.tree) / "assets" / "examples"
    load0 = os.getloadavg()
    print(f"machine: {os.cpu_count()} CPUs, load average {load0[0]:.2f} at the start; server CPUs: "
          f"{args.server_cpus or 'all'}; load generator CPUs: {args.client_cpus or 'all'}; work folder {workdir}")
    try:
        if not args.no_costs:
            print("\nPart 1: one visitor at a time, on an otherwise idle server")
            server = Server(workdir, args.server_cpus, args.tree)
            try:
                time.sleep(2)
                idle0, t0 = server.cpu(), time.perf_counter()
                time.sleep(5)
                idle = (server.cpu() - idle0) / (time.perf_counter() - t0)
                rss0 = server.mem()[0]
                print(f"  server idle: {idle:.3f} cores busy, {rss0:.0f} MB resident")
                rows = asyncio.run(per_action_costs(server, probe=not args.no_probe, repeat=args.repeat))
                peak = server.mem()[1]
            finally:
                server.stop()
            print(f"\n{'page / action':<62} {'n':>2} {'response s':>10} {'server cpu-s':>12} {'RSS after MB':>12}")
            for r in rows:
                print(f"{r.what:<62} {r.n:>2} {r.seconds:>10.2f} {r.cpu:>12.2f} {r.rss:>12.0f}"
                      + ("  ERR" if r.errors else ""))
            print(f"server resident memory: {rss0:.0f} MB at start, peak {peak:.0f} MB")
        if args.burst:
            print(f"\nPart 1b: one visitor drags the t-SNE perplexity slider through {args.burst} values, 0.15 s apart "
                  "(~400 occurrences), with and without the per-session bound (app/limits.py)")
            burst_rows(workdir, args)

        results = []
        for n in args.students:
            print(f"\nPart 2: {n} student(s) (fresh server, the teacher opened every page first) …", flush=True)
            r = run_class(workdir, n, args)
            results.append(r)
            print(f"  {r.actions} actions in {r.wall:.0f} s: p50 {r.p50:.2f} s, p95 {r.p95:.2f} s, errors {r.errors}"
                  + (f" e.g. {r.examples}" if r.examples else ""), flush=True)
        if results:
            print(f"\n{'students':>8} {'actions':>7} {'p50 s':>6} {'p95 s':>6} {'max s':>6} {'p95 views':>9} "
                  f"{'p95 inter.':>10} {'errors':>6} {'busy':>4} {'server cores':>12} {'peak RSS MB':>11} "
                  f"{'client cores':>12} {'other cores':>11}")
            for r in results:
                print(f"{r.students:>8} {r.actions:>7} {r.p50:>6.2f} {r.p95:>6.2f} {r.worst:>6.2f} {r.p95_views:>9.2f} "
                      f"{r.p95_interactions:>10.2f} {r.errors:>6} {r.busy:>4} {r.server_cores:>12.2f} "
                      f"{r.peak_rss:>11.0f} {r.client_cores:>12.2f} {r.other_cores:>11.2f}")
            print("server cores = server CPU-seconds / wall time (2 = both cores of a 2-core machine busy); other "
                  "cores = what other processes on this machine used meanwhile; busy = 'still computing' notices.")
            if args.results:
                write_results(args.results, results)
        load1 = os.getloadavg()
        print(f"load average at the end: {load1[0]:.2f} (1 min), {load1[1]:.2f} (5 min)")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
