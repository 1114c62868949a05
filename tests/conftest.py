"""Shared test settings.

The shared data folder (corpus, SemCor, the ELMo reference) is found through one setting:
the environment variable ``CTXMODELS_DATA``, by default ``../shared/data`` beside the checkout.
Tests that need it fail (never skip) when it is missing.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

pytest_plugins = ["tests.app_fixtures"]  # tiny_assets, app_env: shared by the AppTest modules

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("CTXMODELS_DATA", ROOT.parent / "shared" / "data"))

# Tests use tiny models: one thread is faster than two (no sync overhead) and robust to a busy machine.
torch.set_num_threads(1)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.fail(f"shared data folder not found at {SHARED_DATA}; set CTXMODELS_DATA to its path")
    return SHARED_DATA


@pytest.fixture(scope="session")
def elmo_reference(shared_data: Path) -> Path:
    path = shared_data / "elmo-reference"
    if not (path / "options.json").is_file():
        pytest.fail(f"ELMo reference files not found in {path}")
    return path
