"""The package's layers (README, "Layout"): imports point down, never up or around in a cycle.

Every import counts, wherever it stands (module level, inside a function, under ``TYPE_CHECKING``): a lazy import
is still a dependency, and an upward one is a design tangle even when it happens not to fail at import time.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "ctxmodels"

# Layer of each module or package (the longest matching prefix wins), lowest first. A module may import its own
# layer and the layers below it; "training" and "analysis" are side by side and do not import each other, nor do
# "viz" and "training".
LAYERS: dict[str, tuple[int, str]] = {
    # shared ground: files, paths, text, character ids, word pieces, the SemCor and WordNet readers
    "ctxmodels.checkpoint": (0, "base"),
    "ctxmodels.paths": (0, "base"),
    "ctxmodels.bounds": (0, "base"),
    "ctxmodels.text": (0, "base"),
    "ctxmodels.cosine": (0, "base"),
    "ctxmodels.thread_warnings": (0, "base"),
    "ctxmodels.char_ids": (0, "base"),
    "ctxmodels.encoding": (0, "base"),
    "ctxmodels.tokenization": (0, "base"),
    "ctxmodels.semcor": (0, "base"),
    "ctxmodels.wordnet": (0, "base"),
    "ctxmodels.model_files": (0, "base"),
    "ctxmodels.corpus_index": (0, "base"),
    "ctxmodels.tasks": (0, "base"),
    "ctxmodels.download": (0, "base"),
    "ctxmodels.masking": (0, "base"),
    "ctxmodels.heldout": (0, "base"),
    # the models
    "ctxmodels.bert": (1, "models"),
    "ctxmodels.elmo": (1, "models"),
    "ctxmodels.static": (1, "models"),
    "ctxmodels.static_text": (1, "models"),
    "ctxmodels.scalar_mix": (1, "models"),
    "ctxmodels.heads": (1, "models"),
    "ctxmodels.formats": (2, "formats"),
    "ctxmodels.kinds": (3, "loading"),
    "ctxmodels.loading": (3, "loading"),
    "ctxmodels": (3, "loading"),  # the package itself offers ctxmodels.load
    "ctxmodels.training": (4, "training"),
    "ctxmodels.analysis": (4, "analysis"),
    "ctxmodels.viz": (5, "viz"),  # every view as a Plotly figure: draws what analysis computes
    "ctxmodels.release": (6, "release"),
    "ctxmodels.commands": (7, "commands"),
    "ctxmodels.cli": (7, "commands"),
}

# What the app may import: the public API.
APP_MAY_IMPORT = ("ctxmodels", "ctxmodels.loading", "ctxmodels.analysis", "ctxmodels.paths", "ctxmodels.text",
                  "ctxmodels.thread_warnings", "ctxmodels.checkpoint", "ctxmodels.download", "ctxmodels.viz")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_module(name: str) -> bool:
    rel = Path(*name.split("."))
    return (ROOT / rel).with_suffix(".py").is_file() or (ROOT / rel / "__init__.py").is_file()


def imports_of(path: Path) -> set[str]:
    """Project modules imported anywhere in ``path`` (relative imports resolved; ``from P import m`` -> ``P.m``
    when ``m`` is a module)."""
    here = module_name(path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for a in node.names:
                found.add(f"{source}.{a.name}" if _is_module(f"{source}.{a.name}") else source)
    return {m for m in found if m == "ctxmodels" or m.startswith(("ctxmodels.", "app.", "streamlit"))}


def layer(module: str) -> tuple[int, str]:
    matches = [k for k in LAYERS if module == k or module.startswith(k + ".")]
    assert matches, f"{module} is in no layer: add it to LAYERS (and to the README's layout)"
    return LAYERS[max(matches, key=len)]


def package_graph() -> dict[str, set[str]]:
    return {module_name(p): imports_of(p) for p in sorted(PACKAGE.rglob("*.py"))}


def test_every_module_has_a_layer():
    for module in package_graph():
        layer(module)


def test_imports_point_down():
    wrong = []
    for module, imported in package_graph().items():
        rank, name = layer(module)
        for target in imported:
            if target.startswith(("streamlit", "app.")):
                wrong.append(f"{module} imports {target} (the core never imports the app or Streamlit)")
                continue
            t_rank, t_name = layer(target)
            sideways = {name, t_name} in ({"training", "analysis"}, {"training", "viz"})
            if t_rank > rank or sideways:
                wrong.append(f"{module} ({name}) imports {target} ({t_name})")
    assert not wrong, "imports against the layering:\n" + "\n".join(sorted(wrong))


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_no_import_cycles():
    graph = {m: {t for t in imported if t != m} for m, imported in package_graph().items()}
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_only_commands_parse_command_lines():
    parsing = [module_name(p) for p in PACKAGE.rglob("*.py") if "argparse" in p.read_text(encoding="utf-8")
               and layer(module_name(p))[1] != "commands"]
    assert parsing == []


@pytest.mark.parametrize("path", sorted((ROOT / "app").rglob("*.py")), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_app_imports_only_the_public_api(path):
    def public(m: str) -> bool:  # "ctxmodels" itself, or a public module or anything inside it
        return m == "ctxmodels" or any(m == ok or m.startswith(ok + ".") for ok in APP_MAY_IMPORT[1:])

    private = [m for m in imports_of(path) if m.startswith("ctxmodels") and not public(m)]
    assert private == [], f"{path.name} imports {private}; use the public API ({', '.join(APP_MAY_IMPORT)})"


# The app's pages (README, "Layout"): each page is a folder of app/views/ whose page.py alone makes widgets; its
# state, computations and figures are plain Python, and what pages share lives in app/kit/.
VIEWS = ROOT / "app" / "views"
PAGES = sorted(p.parent.name for p in VIEWS.glob("*/page.py"))
WITHOUT_STREAMLIT = ("compute.py", "figures.py", "state.py")


def test_every_page_is_a_folder_with_its_script():
    assert PAGES and sorted(p.name for p in VIEWS.iterdir() if p.is_dir() and p.name != "__pycache__") == PAGES
    assert sorted(p.name for p in VIEWS.glob("*.py")) == ["__init__.py"], "a page is a folder, not a module"
    for page in PAGES:
        assert (VIEWS / page / "text.md").is_file(), f"{page}: its words go in text.md"
        assert (VIEWS / page / "compute.py").is_file() and (VIEWS / page / "state.py").is_file(), page


@pytest.mark.parametrize("path", sorted(p for p in VIEWS.rglob("*.py") if p.name in WITHOUT_STREAMLIT),
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_a_pages_state_compute_and_figures_do_not_import_streamlit(path):
    assert not [m for m in imports_of(path) if m.split(".")[0] == "streamlit"], f"{path} imports Streamlit"


@pytest.mark.parametrize("path", sorted(VIEWS.rglob("*.py")), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_page_imports_another_page(path):
    own = path.relative_to(VIEWS).parts[0]
    others = [m for m in imports_of(path) if m.startswith("app.views.") and m.split(".")[2] != own]
    assert others == [], f"{path.relative_to(ROOT)} imports {others}; what pages share belongs in app/kit/"
    assert not any(m == "app.views" for m in imports_of(path))


def test_no_module_is_over_600_lines():
    long = {str(p.relative_to(ROOT)): n for folder in (ROOT / "app", PACKAGE) for p in folder.rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 600}
    assert long == {}, f"modules over 600 lines: {long}"


def test_every_package_folder_is_a_regular_package():
    """setuptools' package discovery skips a folder without ``__init__.py``: an installed wheel would lack it."""
    folders = {p.parent for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts}
    assert sorted(str(f.relative_to(ROOT)) for f in folders if not (f / "__init__.py").is_file()) == []


def _project_imports_in(path: Path) -> set[tuple[str, str]]:
    """(module, name) for every ``from app... / ctxmodels... import name`` in ``path``, lazy ones included."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] in (
                "app", "ctxmodels"):
            found.update((node.module, a.name) for a in node.names)
    return found


@pytest.mark.parametrize("path", sorted((ROOT / "bench").glob("*.py")), ids=lambda p: p.name)
def test_every_bench_import_of_the_project_resolves(path):
    """Benchmarks run by hand and import inside their functions: a module moved under them fails only when someone
    runs them. Every name they import from the project must still be there."""
    import importlib

    missing = []
    for module, name in sorted(_project_imports_in(path)):
        try:
            imported = importlib.import_module(module)
        except ImportError as e:
            missing.append(f"{module} ({e})")
            continue
        if not hasattr(imported, name) and not _is_module(f"{module}.{name}"):
            missing.append(f"{module}.{name}")
    assert not missing, f"{path.name} imports what is not there: {missing}"
