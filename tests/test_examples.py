"""The example notebooks (``examples/*.ipynb``) run top to bottom on the shipped models, and every figure they draw
is one the app draws for the same input: the same data in the figure objects.

Each notebook runs in a fresh kernel (nbclient); its figures are read from its outputs (Plotly's JSON). The same
inputs are then given to the app's pages through their links (AppTest), and each notebook figure must equal one of
the figures the pages draw, trace by trace (numbers to 1e-4: the app serves with one torch thread, the kernel with
several, and their sums round differently)."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import numpy as np
import pytest

from tests.app_fixtures import charts, page

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
PLOTLY = "application/vnd.plotly.v1+json"
MODELS = ["static-eltec", "elmo-eltec", "bert-eltec"]



def test_the_notebooks_are_kept_without_outputs():
    import nbformat

    for path in sorted(EXAMPLES.glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert code and not any(c.outputs or c.execution_count for c in code), f"{path.name}: clear its outputs"


@pytest.fixture
def shipped_app(monkeypatch, tmp_path):
    """The app (and the notebooks' kernel, which inherits this environment) on the shipped models."""
    monkeypatch.delenv("CTXMODELS_ASSETS", raising=False)
    monkeypatch.setenv("CTXMODELS_APP_RUNS", str(tmp_path / "runs"))
    monkeypatch.setenv("CTXMODELS_APP_WARMUP", "0")
    monkeypatch.setenv("CTXMODELS_APP_PACKAGED", "0")
    for var in ("CTXMODELS_APP_MODELS", "CTXMODELS_ALLOW_PATHS", "CTXMODELS_ALLOW_DOWNLOADS"):
        monkeypatch.delenv(var, raising=False)


def run_notebook(name: str, cwd: Path) -> list[dict]:
    """Execute ``examples/NAME`` top to bottom (an error fails the test) and return the figures it drew, in order."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(EXAMPLES / name, as_version=4)
    NotebookClient(nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(cwd)}}).execute()
    return [json.loads(json.dumps(o["data"][PLOTLY])) for cell in nb.cells for o in cell.get("outputs", [])
            if PLOTLY in o.get("data", {})]


def _plain(value):
    """A figure's JSON with typed arrays ({"dtype", "bdata", "shape"}) decoded and numbers as float arrays."""
    if isinstance(value, dict):
        if "bdata" in value and "dtype" in value:
            array = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
            if value.get("shape"):
                array = array.reshape([int(n) for n in str(value["shape"]).split(",")])
            return array.astype(float)
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        items = [_plain(v) for v in value]
        if items and all(v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)) for v in items):
            return np.array([np.nan if v is None else v for v in items], dtype=float)
        if items and all(isinstance(v, np.ndarray) for v in items) and len({v.shape for v in items}) == 1:
            return np.stack(items)
        return items
    return value


def same(a, b, where: str = "") -> str:
    """Where ``a`` and ``b`` (plain figure JSON) differ, or "" when they are the same."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
        ok = a.shape == b.shape and np.allclose(a, b, rtol=1e-4, atol=1e-5, equal_nan=True)
        return "" if ok else f"{where}: numbers differ"
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return f"{where}: keys {sorted(a.keys() ^ b.keys())}"
        return next((d for k in a if (d := same(a[k], b[k], f"{where}.{k}"))), "")
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{where}: {len(a)} vs {len(b)} items"
        return next((d for i, (x, y) in enumerate(zip(a, b)) if (d := same(x, y, f"{where}[{i}]"))), "")
    if isinstance(a, float) and isinstance(b, float):
        return "" if np.isclose(a, b, rtol=1e-4, atol=1e-5) else f"{where}: {a} vs {b}"
    return "" if a == b else f"{where}: {str(a)[:60]!r} vs {str(b)[:60]!r}"


def title(fig: dict) -> str:
    text = fig.get("layout", {}).get("title", {})
    return (text.get("text") if isinstance(text, dict) else text) or ""


def assert_drawn_by_the_app(notebook: list[dict], app: list[dict]) -> None:
    """Every notebook figure's traces equal one app figure's, and so does its title."""
    app = [_plain(f) for f in app]
    missing = []
    for k, fig in enumerate(notebook):
        mine = _plain(fig)
        candidates = [f for f in app if len(f["data"]) == len(mine["data"]) and title(f) == title(mine)]
        if not any(not same(mine["data"], f["data"]) for f in candidates):
            why = same(mine["data"], candidates[0]["data"]) if candidates else "no app figure with this title"
            missing.append(f"figure {k + 1} ({title(mine)[:60]!r}): {why}")
    assert not missing, "notebook figures the app does not draw:\n" + "\n".join(missing)


def app_charts(name: str, session: dict | None = None, **query) -> list[dict]:
    at = page(name, **query)
    if session:
        for key, value in session.items():
            at.session_state[key] = value
        at.run()
    assert not at.exception, [e.value for e in at.exception]
    return charts(at)


@pytest.mark.slow
@pytest.mark.usefixtures("shipped_app")
def test_bank_and_run(tmp_path):
    figures = run_notebook("bank_and_run.ipynb", tmp_path)
    assert len(figures) == 9
    sentence = "She deposited the money in the [MASK]."
    app = (app_charts("overview", **{"try": "1", "try_a": "We sat on the bank of the river.",
                                     "try_b": "She paid the money into the bank.", "try_word": "bank",
                                     "try_models": MODELS})
           + app_charts("word_senses", {"layers_open": True}, preset="bank", projection="pca", models=MODELS)
           + app_charts("word_senses", preset="run", projection="pca", models="bert-eltec")
           + app_charts("fill_in", text=sentence, fill_models="bert-eltec", lens="1")
           + app_charts("elmo_layers", probe_model="elmo-eltec"))
    assert_drawn_by_the_app(figures, app)


def _layer_head(fig: dict) -> tuple[str, str]:
    layer, head = re.match(r"layer (\d+), head (\d+)", title(fig)).groups()
    return layer, head


@pytest.mark.slow
@pytest.mark.usefixtures("shipped_app")
def test_attention_heads(tmp_path):
    figures = run_notebook("attention_heads.ipynb", tmp_path)
    assert len(figures) == 7
    sentence = "The keys to the old cabinet are on the table."
    base = dict(att_model="minilm-eltec", sentence=sentence)
    prev, agree, query_key = figures[1], figures[3], figures[4]
    layer, head = _layer_head(prev)
    a_layer, a_head = _layer_head(agree)
    row = re.search(r"·(\d+)$", title(query_key)).group(1)
    app = (app_charts("attention", **base, att_layer=layer, att_head=head)
           + app_charts("attention", **base, att_layer=a_layer, att_head=a_head, qk="1", qk_from=row)
           + app_charts("attention", **base, view="rollout", att_layer="6")
           + app_charts("attention", **base, overview="maps"))
    assert_drawn_by_the_app(figures, app)


@pytest.mark.slow
@pytest.mark.usefixtures("shipped_app")
def test_what_finetuning_changes(tmp_path):
    figures = run_notebook("what_finetuning_changes.ipynb", tmp_path)
    assert len(figures) == 5
    assert_drawn_by_the_app(figures, app_charts("fine_tuning", ft_model="bert-eltec-pos", ft_sentences="60"))
