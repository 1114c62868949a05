"""The package as a user installs it: a wheel built from the repository, installed into a fresh virtual environment
outside the checkout, draws every view of ``ctxmodels.viz`` from Python and serves the app with ``ctxmodels app``.

Nothing is downloaded: the wheel is built without build isolation, installed without its dependencies, and the new
environment reads them from this one's site-packages (a ``.pth`` line; this one's editable install of the checkout
is not read, its finder runs only from its own site folder). The wheel holds no models: the views and the app read
the shipped ones through ``CTXMODELS_ASSETS`` (``--assets``), as docs/notebooks.md tells a user to."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import textwrap
import time
import urllib.request
from pathlib import Path

import pytest

from tests.test_browser import CHROMIUM_ARGS, chromium_path, free_port

ROOT = Path(__file__).resolve().parents[1]
ASSETS = ROOT / "assets"
SOURCES = ["ctxmodels", "app", "setup.py", "pyproject.toml", "README.md"]  # what the wheel is built from

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A fresh environment with the wheel installed; returns its ``bin`` folder."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "source"  # a copy, so the build writes nothing into the checkout
    for name in SOURCES:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(src, source / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(tmp / "dist")], check=True, cwd=tmp)
    wheel = next((tmp / "dist").glob("ctxmodels-*.whl"))
    env = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(env)], check=True, cwd=tmp)
    python = env / "bin" / "python"
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    (Path(site) / "project-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)], check=True, cwd=tmp)
    return env / "bin"


def run_there(bin_dir: Path, code: str, cwd: Path) -> str:
    out = subprocess.run([bin_dir / "python", "-c", textwrap.dedent(code)], cwd=cwd, capture_output=True, text=True,
                         env=dict(os.environ, CTXMODELS_ASSETS=str(ASSETS)), timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def test_the_installed_package_is_the_wheel_not_the_checkout(installed, tmp_path):
    where = json.loads(run_there(installed, """
        import json, ctxmodels
        from ctxmodels.commands.app import app_script
        print(json.dumps([ctxmodels.__file__, str(app_script())]))""", tmp_path))
    venv = str(installed.parent)
    assert all(path.startswith(venv) for path in where), where
    assert where[1].endswith("ctxmodels/_explorer/app/Home.py")


def test_every_view_draws_from_python(installed, tmp_path):
    drawn = json.loads(run_there(installed, """
        import json
        import plotly.graph_objects as go
        from ctxmodels import viz

        bank = viz.preset_sentences("bank")
        s = "The keys to the old cabinet are on the table."
        figures = {
            "same_word": viz.same_word(["static-eltec", "bert-eltec"], "The bank of the river.", "Money in the bank.",
                                       "bank"),
            "word_senses": viz.word_senses("elmo-eltec", bank, "bank", method="pca"),
            "word_senses_row": viz.word_senses_row("static-eltec", bank, "bank", method="pca")[0],
            "layer_measurements": viz.layer_measurements(["static-eltec", "bert-eltec"], bank, "bank"),
            "elmo_layer_weights": viz.elmo_layer_weights("elmo-eltec", "pos"),
            "heads_grid": viz.heads_grid("minilm-eltec", s),
            "heads_summary": viz.heads_summary("minilm-eltec", s),
            "head_map": viz.head_map("minilm-eltec", s, layer=1, head=3),
            "head_lines": viz.head_lines("minilm-eltec", s, layer=4, head=2),
            "head_query_key": viz.head_query_key("minilm-eltec", s, layer=4, head=2, token=7),
            "rollout": viz.rollout("minilm-eltec", s),
            "fill_in_guesses": viz.fill_in_guesses("bert-eltec", "She deposited the money in the [MASK]."),
            "guesses_by_layer": viz.guesses_by_layer("bert-eltec", "She deposited the money in the [MASK]."),
            "finetuning_layers": viz.finetuning_layers("bert-eltec-pos", n_sentences=20),
            "finetuning_classes": viz.finetuning_classes("bert-eltec-pos", n_sentences=20),
            "finetuning_heads": viz.finetuning_heads("bert-eltec-pos", n_sentences=20),
            "finetuning_points": viz.finetuning_points("bert-eltec-pos", n_sentences=20)[1],
        }
        figures["word_senses"].write_html("word-senses.html", include_plotlyjs=True)
        print(json.dumps({name: [isinstance(f, go.Figure), len(f.data)] for name, f in figures.items()}))
        """, tmp_path))
    assert {name for name in drawn} >= {"word_senses", "head_map", "fill_in_guesses", "finetuning_heads"}
    assert all(is_figure and traces > 0 for is_figure, traces in drawn.values()), drawn
    assert (tmp_path / "word-senses.html").stat().st_size > 1_000_000  # plotly.js inside: it opens offline


@pytest.mark.browser
def test_ctxmodels_app_serves_the_explorer(installed, tmp_path):
    port = free_port()
    log = open(tmp_path / "server.log", "w+")
    env = dict(os.environ, CTXMODELS_APP_RUNS=str(tmp_path / "runs"), CTXMODELS_APP_WARMUP="0")
    env.pop("CTXMODELS_ASSETS", None)
    server = subprocess.Popen([installed / "ctxmodels", "app", "--port", str(port), "--address", "127.0.0.1",
                               "--assets", str(ASSETS)], cwd=tmp_path, env=env, stdout=log,
                              stderr=subprocess.STDOUT, start_new_session=True)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=5) as r:
                    if r.read() == b"ok":
                        break
            except OSError:
                pass
            assert server.poll() is None and time.monotonic() < deadline, log.seek(0) or log.read()[-3000:]
            time.sleep(1)
        with urllib.request.urlopen(url, timeout=10) as r:
            assert r.status == 200
        sync_api = pytest.importorskip("playwright.sync_api")
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 720})
            page.goto(f"{url}/word_senses?projection=pca&models=bert-eltec", wait_until="domcontentloaded")
            page.wait_for_selector(".js-plotly-plot", timeout=180_000)  # a figure, drawn from the shipped models
            text = page.inner_text("body")
            browser.close()
        assert "Word senses" in text and "Traceback" not in text
        # the command became the server (exec): it runs the wheel's copy of the app
        served = Path(f"/proc/{server.pid}/cmdline").read_bytes().split(b"\0")
        assert str(installed.parent).encode() in b" ".join(served) and b"_explorer/app/Home.py" in b" ".join(served)
        log.seek(0)
        assert "Error" not in log.read()
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
        log.close()
