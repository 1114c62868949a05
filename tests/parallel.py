"""Running the suite on every core with pytest-xdist (pyproject's addopts say ``-n auto``).

* ``-n auto`` means every core for a run of the whole suite or of a folder, and no extra process at all when the
  command names test files or tests (``pytest tests/test_x.py -x``): such a run starts at once, and ``print``,
  ``-s`` and ``--pdb`` work as usual. ``-n 2`` or ``-n 0`` on the command line decide for themselves.
* A module's tests run on one worker, so that its module-scoped fixtures (tiny models, AppTest pages, fuzz
  harnesses counting their cases) are built once; the modules in :data:`SPREAD` are the exception: their tests
  are long and share only what every worker can start once for itself (a Streamlit server, a browser).
* The modules holding a test marked ``slow`` are handed out first, so that a long test never starts last while the
  other cores have nothing left to do.
* A line a module prints after its tests (:func:`tests.helpers.show_past_capture`) is printed by the main process
  at the end of the run: a worker's own output goes nowhere.
"""

from __future__ import annotations

import os

import pytest

SPREAD = {"tests/test_browser.py"}
LINES = "lines_past_capture"  # the key of a worker's lines in what it sends back when it ends
_SHOWN = pytest.StashKey[list]()  # the main process's lines from every worker


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    named = [config.invocation_params.dir / arg.split("::")[0] for arg in config.args]
    if named and all(path.is_file() for path in named):
        return 0  # test files named on the command line: run them here
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # xdist reads it
    # every core this process may run on (xdist would count physical cores where psutil is installed: 1 on a
    # machine of two hyperthreads)
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    if config.getvalue("dist") != "load":  # another --dist asked for by name
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ModulesSlowFirst(LoadScopeScheduling):
        """xdist's ``--dist loadscope`` by module, in the order of the workers' collection (slow tests first)."""

        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return nodeid if module in SPREAD else module

    config.option.loadscopereorder = False  # keep the collection's order rather than the largest module first
    return ModulesSlowFirst(config, log)


def module_of(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


@pytest.hookimpl(trylast=True)  # after pytest's own ordering by fixtures
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """In a worker: the modules holding a slow test first. A module's own tests keep their order (some look at
    what the process did before them), and every worker sorts alike, so their collections still agree."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        slow = {module_of(item) for item in items if item.get_closest_marker("slow")}
        items.sort(key=lambda item: module_of(item) not in slow)


def in_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workeroutput")


def send_line(config: pytest.Config, line: str) -> None:
    """Hand ``line`` to the main process, which prints it in its summary."""
    config.workeroutput.setdefault(LINES, []).append(line)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:
    lines = getattr(node, "workeroutput", {}).get(LINES, [])
    node.config.stash.setdefault(_SHOWN, []).extend(lines)


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    for line in config.stash.get(_SHOWN, []):
        terminalreporter.write_line(line)
