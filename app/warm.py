"""Warm a lesson before class: ``python -m app.warm [URL]`` (default http://localhost:8501), with the app already
running, visits what the first students would, so their first visit is quick.

Streamlit keeps its caches (the models loaded, the vectors, projections and answers computed) in the server process,
once per server: a warm-up must run inside that process. So this visits the running server as a browser does,
over its own connection (the websocket the page talks to), one new visitor per page: the Lesson's eight steps with
their answers shown, then the page each step links to with the step's settings, then the views that are slow the
first time (Word senses, What fine-tuning changes, SemCor's *play*, the corpus source). A view that finishes in the
background (a large projection) is visited again until it has nothing left to wait for. Nothing is written but the
server's caches; every visit is a visitor's, under the operator's limits.

:func:`visit` is also what ``bench/bench_warm.py`` times a new visitor with.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

LESSON_STEPS = 8
# The first views that are slow on a cold server (issue 45's measurements), as (page, query).
SLOW_FIRST = [
    ("word_senses", ""),
    ("fine_tuning", ""),
    ("word_senses", "source=semcor&lemma=play.v"),
    ("word_senses", "source=corpus&corpus_word=bank"),
]
WAIT_S = 900.0  # the longest a visit waits for the server (the corpus source on a busy 2-core machine: minutes)


@dataclass
class Visit:
    page: str
    query: str
    seconds: float = 0.0  # until the page had nothing left to compute (background work included)
    runs: int = 0  # page runs it took (more than one: it waited for work in the background)
    links: list[tuple[str, str]] = field(default_factory=list)  # the page links it showed: (page, query)
    problems: list[str] = field(default_factory=list)  # errors and exceptions the page showed


async def _run_once(url: str, page: str, query: str, timeout: float) -> tuple[bool, Visit]:
    """One page run as a new visitor; (whether the page asked to be run again by itself, what it showed)."""
    import websockets
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    parts = urlsplit(url)
    scheme = "wss" if parts.scheme == "https" else "ws"
    seen = Visit(page, query)
    again = False
    async with websockets.connect(f"{scheme}://{parts.netloc}{parts.path.rstrip('/')}/_stcore/stream",
                                  subprotocols=["streamlit"], max_size=None) as ws:
        msg = BackMsg()
        msg.rerun_script.query_string = query
        msg.rerun_script.page_name = page
        await ws.send(msg.SerializeToString())
        deadline = time.monotonic() + timeout
        while True:
            forward = ForwardMsg()
            forward.ParseFromString(await asyncio.wait_for(ws.recv(), max(deadline - time.monotonic(), 1.0)))
            kind = forward.WhichOneof("type")
            if kind == "auto_rerun":  # a fragment polls: work is still running in the background
                again = True
            elif kind == "delta" and forward.delta.WhichOneof("type") == "new_element":
                element = forward.delta.new_element
                what = element.WhichOneof("type")
                if what == "page_link" and not element.page_link.external:
                    seen.links.append((element.page_link.page, element.page_link.query_string))
                elif what == "exception":
                    seen.problems.append(element.exception.message[:200])
                elif what == "alert" and element.alert.format == element.alert.ERROR:
                    seen.problems.append(element.alert.body[:200])
            elif kind == "script_finished":
                return again, seen


def visit(url: str, page: str, query: str = "", timeout: float = WAIT_S) -> Visit:
    """Open ``page`` (its URL path: "word_senses") with ``query`` as a new visitor, and again while it waits for
    work in the background; the time until it had nothing left to wait for."""
    start = time.monotonic()
    runs = 0
    while True:
        left = timeout - (time.monotonic() - start)
        again, seen = asyncio.run(_run_once(url, page, query, left))
        runs += 1
        if not again or left <= 0:
            break
        time.sleep(2.0)  # as the page's own poll does
    seen.seconds, seen.runs = time.monotonic() - start, runs
    return seen


def _page_name(link: str) -> str:
    """A page link's target as its URL path: "views/word_senses/page.py" or "word_senses" -> "word_senses"."""
    parts = [p for p in link.replace("\\", "/").split("/") if p]
    if len(parts) >= 2 and parts[-1].endswith(".py"):
        return parts[-2]
    return parts[-1] if parts else ""


def lesson_visits(url: str, report=print) -> list[Visit]:
    """The Lesson's steps with their answers shown, then every page a step links to, with the step's settings."""
    done, links = [], []
    for step in range(1, LESSON_STEPS + 1):
        seen = visit(url, "lesson", f"step={step}&reveal=1")
        report(seen)
        done.append(seen)
        links += [(_page_name(page), query) for page, query in seen.links]
    for page, query in dict.fromkeys(links):
        seen = visit(url, page, query)
        report(seen)
        done.append(seen)
    return done


def warm(url: str, report=print) -> list[Visit]:
    """Everything :mod:`app.warm` visits, in order; each visit handed to ``report`` as it ends."""
    done = lesson_visits(url, report)
    for page, query in SLOW_FIRST:
        seen = visit(url, page, query)
        report(seen)
        done.append(seen)
    return done


def _line(v: Visit) -> None:
    where = f"/{v.page}" + (f"?{v.query}" if v.query else "")
    note = f"; {len(v.problems)} problem(s): {v.problems[0]}" if v.problems else ""
    print(f"{v.seconds:7.1f} s  {where[:100]}{' (' + str(v.runs) + ' runs)' if v.runs > 1 else ''}{note}",
          flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m app.warm", description=__doc__.split("\n\n")[0])
    parser.add_argument("url", nargs="?", default="http://localhost:8501", help="the running app's address")
    args = parser.parse_args(argv)
    start = time.monotonic()
    try:
        done = warm(args.url, _line)
    except OSError as e:
        print(f"cannot reach the app at {args.url}: {e}. Start it first (streamlit run app/Home.py).",
              file=sys.stderr)
        return 1
    problems = sum(bool(v.problems) for v in done)
    print(f"warmed {len(done)} views in {time.monotonic() - start:.0f} s"
          + (f"; {problems} showed a problem (above)" if problems else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
