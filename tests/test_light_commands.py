"""A command that runs no model starts without the model libraries: ``ctxmodels occurrences`` answers a count in a
fraction of a second, so it must not import torch (seconds), transformers or numpy on its way."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

HEAVY = ("torch", "transformers", "safetensors", "tokenizers", "numpy", "pandas", "sklearn", "scipy")

RUN = """
import json, sys
from ctxmodels.cli import main
code = main(sys.argv[1:])
heavy = sorted({m.split(".")[0] for m in sys.modules} & set(json.loads(sys.stdin.read())))
print(json.dumps({"code": code, "heavy": heavy}))
"""


def _run(args: list[str], tmp_path) -> tuple[dict, str]:
    env = {**os.environ, "CTXMODELS_CACHE": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-c", RUN, *args], env=env, input=json.dumps(HEAVY),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    *printed, last = done.stdout.strip().splitlines()
    return json.loads(last), "\n".join(printed)


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text("The bank by the river.\nShe sat on the bank.\n\nA second document, no such word.\n",
                    encoding="utf-8")
    return path


def test_occurrences_count_imports_no_model_library(corpus, tmp_path):
    result, printed = _run(["occurrences", "--corpus", str(corpus), "--word", "bank", "--count"], tmp_path)
    assert result == {"code": 0, "heavy": []} and printed == "2"


def test_occurrences_listing_and_help_import_no_model_library(corpus, tmp_path):
    result, printed = _run(["occurrences", "--corpus", str(corpus), "--word", "bank"], tmp_path)
    assert result["heavy"] == [] and "2 occurrence(s) of bank" in printed
    result, _ = _run(["occurrences", "--help"], tmp_path)
    assert result == {"code": 0, "heavy": []}
