"""Pictures of every figure the example notebooks draw, for docs/notebooks.md and examples/README.md (run by hand;
prints where each image went).

    python bench/notebook_images.py                      # every notebook in examples/, into docs/images/notebooks/
    python bench/notebook_images.py --width 900 --out /tmp/images bank_and_run

Each notebook runs top to bottom in a fresh kernel (nbclient), on the shipped models, as tests/test_examples.py runs
it; each figure it draws (Plotly's JSON in its outputs) is written to an HTML page with plotly.js inside and
photographed by Chromium (Playwright) at ``--width`` pixels and the figure's own height: ``NOTEBOOK-K.png`` for the
K-th figure of the notebook.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
PLOTLY = "application/vnd.plotly.v1+json"


def notebook_figures(path: Path) -> list[dict]:
    """The figures ``path`` draws when it runs top to bottom (an error in a cell stops it)."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    with tempfile.TemporaryDirectory() as cwd:
        NotebookClient(nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": cwd}}).execute()
    return [o["data"][PLOTLY] for cell in nb.cells for o in cell.get("outputs", []) if PLOTLY in o.get("data", {})]


def photograph(figures: dict[str, dict], out: Path, width: int) -> None:
    """Each figure (name -> Plotly JSON) as ``out/NAME.png``, ``width`` pixels wide and as tall as it is drawn."""
    import plotly.io as pio
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": width, "height": 600}, device_scale_factor=1)
        for name, fig in figures.items():
            height = int((fig.get("layout") or {}).get("height") or 450)
            html = Path(tmp) / f"{name}.html"
            html.write_text(pio.to_html(fig, include_plotlyjs=True, full_html=True, default_width=f"{width}px",
                                        default_height=f"{height}px", config={"staticPlot": True}),
                            encoding="utf-8")
            page.set_viewport_size({"width": width + 20, "height": height + 20})
            page.goto(html.as_uri())
            page.wait_for_selector(".js-plotly-plot .main-svg")
            page.wait_for_timeout(300)
            page.locator(".js-plotly-plot").first.screenshot(path=str(out / f"{name}.png"))
            print(out / f"{name}.png", f"{width}x{height}")
        browser.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("notebooks", nargs="*", help="notebook names in examples/ (default: all)")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "images" / "notebooks")
    ap.add_argument("--width", type=int, default=900)
    args = ap.parse_args(argv)
    names = args.notebooks or sorted(p.stem for p in EXAMPLES.glob("*.ipynb"))
    for name in names:
        figures = notebook_figures(EXAMPLES / f"{name}.ipynb")
        photograph({f"{name}-{k}": fig for k, fig in enumerate(figures, 1)}, args.out, args.width)
    return 0


if __name__ == "__main__":
    sys.exit(main())
