"""Shared test settings.

Where the tests' data comes from:

* what the repository ships: SemCor and the WordNet glosses from ``assets/semcor`` (the ``shipped_semcor`` and
  ``semcor_data`` fixtures), tiny models built on the fly (``tests/app_fixtures.py``);
* ``tests/data/``: AllenNLP's published tiny ELMo and its recorded outputs (the ``elmo_reference`` fixture;
  source and licence in ``tests/data/elmo-reference/README.md``);
* the shared data folder (the full novels corpus, SemCor and WordNet as published, ``$CTXMODELS_DATA``, by default
  ``../shared/data`` beside the checkout), only for the tests that check the shipped models and copies against
  it. Those carry the ``shared_data`` marker, given to every test that uses the ``shared_data`` fixture too.
  Without the folder they are skipped, with one line naming ``CTXMODELS_DATA``; under CI (``$CI`` set, as
  ``.ci/run`` does) they fail instead, so a CI machine that lost the folder cannot pass without them.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

# tiny_assets, app_env: shared by the AppTest modules; parallel: the suite on every core (pytest-xdist)
pytest_plugins = ["tests.app_fixtures", "tests.parallel"]

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("CTXMODELS_DATA", ROOT.parent / "shared" / "data"))
TEST_DATA = Path(__file__).resolve().parent / "data"

# Tests use tiny models: one thread is faster than two (no sync overhead) and robust to a busy machine.
torch.set_num_threads(1)


def _under_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # a test that asks for the folder needs it, marked or not: `-m "not shared_data"` then leaves it out too
    for item in items:
        if "shared_data" in getattr(item, "fixturenames", ()) and not item.get_closest_marker("shared_data"):
            item.add_marker(pytest.mark.shared_data)


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("shared_data") and not SHARED_DATA.is_dir():
        message = f"needs the shared data folder, not found at {SHARED_DATA}: set CTXMODELS_DATA to its path"
        if _under_ci():
            pytest.fail(message + " (CI is set: a missing folder fails)", pytrace=False)
        pytest.skip(message)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The shared data folder; a test using it is marked ``shared_data`` (skipped or failed above when absent)."""
    return SHARED_DATA


@pytest.fixture(scope="session")
def elmo_reference() -> Path:
    """AllenNLP's published tiny ELMo and the outputs it must give, shipped under ``tests/data``."""
    path = TEST_DATA / "elmo-reference"
    if not (path / "options.json").is_file():
        pytest.fail(f"ELMo reference files not found in {path}")
    return path


@pytest.fixture(scope="session")
def shipped_semcor() -> Path:
    """The SemCor copy the project ships (``assets/semcor``): the shared data's sentences and tags, gzipped."""
    return ROOT / "assets" / "semcor"


@pytest.fixture(scope="session")
def semcor_data(tmp_path_factory, shipped_semcor: Path) -> Path:
    """A data folder laid out as the shared one for SemCor and the WordNet glosses (links to the shipped copy),
    for code that finds them through ``$CTXMODELS_DATA`` while ``$CTXMODELS_ASSETS`` points elsewhere."""
    root = tmp_path_factory.mktemp("semcor-data")
    (root / "semcor").mkdir()
    (root / "wordnet").mkdir()
    for name in ("sentences", "tags"):
        (root / "semcor" / f"{name}.tsv.gz").symlink_to(shipped_semcor / f"{name}.tsv.gz")
    (root / "wordnet" / "senses.tsv.gz").symlink_to(shipped_semcor / "senses.tsv.gz")
    return root
