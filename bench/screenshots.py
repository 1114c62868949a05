"""Screenshots of every page of the explorer, normal and in presentation mode, at a projector's 1280×720 (run by
hand; prints where each image went and what the first screen holds).

    python bench/screenshots.py                       # every page, both modes, into test-artifacts/screens/
    python bench/screenshots.py --pages fill_in models --width 1440 --height 900

The app runs as the README's command starts it (``streamlit run app/Home.py``), on the shipped models in
``assets/``, from a snapshot of the checkout (``bench/bench_capacity.py``'s ``Server``: nothing is written into
the checkout but the images). For each page and mode there are two images:

- ``NAME-MODE-screen.png``: the viewport only, i.e. what a class sees before anyone scrolls;
- ``NAME-MODE-full.png``: the whole page (the viewport grown to the content's height).

The table printed at the end says, per view, how many figures the page has and how many start within the first
screen (and where the first one starts), how many expanders, how many boxes cut their text short (an ellipsis, a
clipped label: listed below the table), how many elements reach past the window's right edge, and errors.

On the Models page each model's card is opened too (``models-MODE-cards.png``, the whole page), to look at how
the cards render.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
# path -> query of the view shown (the defaults a teacher opens on, with the projection that needs no warm-up; the
# Overview with its Try it on, so that it has its figure)
PAGES = {"overview": "try=1", "lesson": "step=1&reveal=1", "word_senses": "projection=pca", "elmo_layers": "",
         "attention": "", "fine_tuning": "", "fill_in": "", "how_they_learn": "", "models": ""}
MODES = {"normal": "", "present": "present=1"}


def settle(page, timeout: float = 240.0) -> None:
    """Until the app has rendered and stopped changing, as the browser tests wait (a slower machine: more time)."""
    from tests.test_browser import settle as settled

    settled(page, timeout)


FIRST_SCREEN = """(height) => {
  const main = document.querySelector('[data-testid="stMain"]') || document.body;
  const figs = Array.from(main.querySelectorAll('.js-plotly-plot, [data-testid="stImage"]'));
  const tops = figs.map(f => f.getBoundingClientRect().top);
  const visible = figs.filter(f => { const r = f.getBoundingClientRect(); return r.top < height && r.bottom > 0; });
  const shown = e => e.offsetParent !== null && e.getClientRects().length > 0;
  const inside = (e, sel) => e.closest(sel) !== null;
  const skip = '.katex, .js-plotly-plot, [data-testid="stDataFrame"], [data-testid="stJson"], pre, table';
  // text cut short: a box that hides what overflows it (an ellipsis, a clipped label)
  const cut = Array.from(main.querySelectorAll('*')).filter(e => shown(e) && !inside(e, skip)
      && ['hidden', 'clip'].includes(getComputedStyle(e).overflowX) && e.scrollWidth > e.clientWidth + 1
      && (e.innerText || '').trim()).map(e => (e.innerText || '').trim().slice(0, 40));
  // anything reaching past the right edge of the window, unless a box around it clips or scrolls it
  const clipped = e => { for (let a = e.parentElement; a && a !== main; a = a.parentElement) {
      if (getComputedStyle(a).overflowX !== 'visible' && a.getBoundingClientRect().right <= window.innerWidth + 1)
        return true; } return false; };
  const past = Array.from(main.querySelectorAll('*')).filter(e => shown(e) && !inside(e, skip)
      && e.getBoundingClientRect().right > window.innerWidth + 1 && !clipped(e)).length;
  return {figures: figs.length, first_figure_top: tops.length ? Math.round(Math.min(...tops)) : null,
          figures_in_view: visible.length,
          expanders: main.querySelectorAll('[data-testid="stExpander"]').length,
          cut: cut, past_edge: past,
          heading: (main.querySelector('h1') || {innerText: ''}).innerText.trim()};
}"""


def full_page(page, path: Path, width: int, height: int) -> None:
    """The whole page: Streamlit scrolls inside its main section, so grow the viewport to the content first."""
    for _ in range(2):
        tall = page.evaluate("() => Math.max(document.body.scrollHeight, ...Array.from(document.querySelectorAll("
                             "'section, [data-testid=stMain]')).map(e => e.scrollHeight))")
        page.set_viewport_size({"width": width, "height": min(max(int(tall) + 40, height), 12000)})
        settle(page, 60)
    page.screenshot(path=str(path))
    page.set_viewport_size({"width": width, "height": height})


def open_cards(page) -> None:
    """Open every "card and configuration" expander of the Models page."""
    for summary in page.locator('[data-testid="stExpander"] summary').filter(has_text="card and configuration").all():
        summary.click()
    settle(page, 60)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pages", nargs="+", default=list(PAGES), choices=list(PAGES))
    ap.add_argument("--modes", nargs="+", default=list(MODES), choices=list(MODES))
    ap.add_argument("--width", type=int, default=1280)
    ap.add_argument("--height", type=int, default=720)
    ap.add_argument("--out", type=Path, default=ROOT / "test-artifacts" / "screens")
    args = ap.parse_args()

    from playwright.sync_api import sync_playwright

    from bench.bench_capacity import Server

    args.out.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="screenshots-"))
    rows = []
    try:
        server = Server(workdir, None, ROOT)
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                try:
                    for mode in args.modes:
                        for name in args.pages:
                            # a fresh visitor per view: presentation mode is a session's state
                            context = browser.new_context(viewport={"width": args.width, "height": args.height})
                            page = context.new_page()
                            query = "&".join(q for q in (PAGES[name], MODES[mode]) if q)
                            page.goto(f"{server.url}/{name}" + (f"?{query}" if query else ""))
                            settle(page)
                            info = page.evaluate(FIRST_SCREEN, args.height)
                            errors = page.locator('[data-testid="stException"]').count()
                            page.screenshot(path=str(args.out / f"{name}-{mode}-screen.png"))
                            full_page(page, args.out / f"{name}-{mode}-full.png", args.width, args.height)
                            rows.append((name, mode, info, errors))
                            if name == "models":
                                open_cards(page)
                                rows.append((f"{name}+cards", mode, page.evaluate(FIRST_SCREEN, args.height),
                                             page.locator('[data-testid="stException"]').count()))
                                full_page(page, args.out / f"{name}-{mode}-cards.png", args.width, args.height)
                            context.close()
                finally:
                    browser.close()
        finally:
            server.stop()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"\nScreenshots at {args.width}×{args.height} in {args.out}\n")
    print(f"{'page':<12} {'mode':<8} {'heading':<22} {'figures':>7} {'in view':>7} {'first fig. y':>12} "
          f"{'expanders':>9} {'cut text':>8} {'past edge':>9} {'errors':>6}")
    for name, mode, info, errors in rows:
        top = "-" if info["first_figure_top"] is None else str(info["first_figure_top"])
        print(f"{name:<12} {mode:<8} {info['heading'][:22]:<22} {info['figures']:>7} {info['figures_in_view']:>7} "
              f"{top:>12} {info['expanders']:>9} {len(info['cut']):>8} {info['past_edge']:>9} {errors:>6}")
    for name, mode, info, _ in rows:
        if info["cut"]:
            print(f"  {name} {mode}: text cut short: " + "; ".join(repr(t) for t in info["cut"][:6]))


if __name__ == "__main__":
    main()
