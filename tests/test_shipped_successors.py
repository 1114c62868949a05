"""The shipped successors (assets/successors/: RoBERTa, ALBERT, ELECTRA, GPT trained here on the novels to the same
compute as each other, ``bench/bench_objectives.py``) and their cards: each loads by its short name as its kind,
its card names the weights beside it, and its measured section is what ``assets/successors/quality.json`` (the
output of ``ctxmodels quality``) renders to."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import ctxmodels
from ctxmodels.analysis.fill_in import fill_mask
from ctxmodels.checkpoint import file_sha256, read_json
from ctxmodels.loading import SUCCESSOR_NAMES, successor_models
from ctxmodels.release.shipping import BEGIN, END, measured_section, training_evaluation

ROOT = Path(__file__).resolve().parents[1]
FOLDER = ROOT / "assets" / "successors"


@pytest.fixture(autouse=True)
def _shipped_assets(monkeypatch):
    monkeypatch.delenv("CTXMODELS_ASSETS", raising=False)  # the repository's own assets/


@pytest.fixture(scope="module")
def report() -> dict:
    return read_json(FOLDER / "quality.json")


def test_every_successor_is_shipped():
    assert list(successor_models()) == list(SUCCESSOR_NAMES)


@pytest.mark.parametrize("name, kind, fills_in, left_to_right", [
    ("roberta-eltec", "transformers", True, False), ("albert-eltec", "transformers", True, False),
    ("electra-eltec", "transformers", False, False), ("gpt-eltec", "gpt", False, True)])
def test_each_loads_by_name_as_its_kind(name, kind, fills_in, left_to_right):
    model = ctxmodels.load(name)
    assert model.kind == kind and model.can_fill_mask == fills_in
    assert ctxmodels.loading.declares(model, ctxmodels.loading.LEFT_TO_RIGHT) == left_to_right
    assert model.card.startswith("#") and BEGIN in model.card
    (vectors,) = model.embed([["The", "bank", "of", "the", "river", "."]])
    assert vectors.shape[:2] == (model.n_layers, 6) and np.isfinite(vectors).all()


def test_electras_generator_ships_beside_it_and_fills_in():
    generator = ctxmodels.load(FOLDER / "electra-eltec" / "generator")
    assert generator.can_fill_mask
    assert len(fill_mask(generator, None, "She put the money in the [MASK].", top_k=3)[0]) == 3


@pytest.mark.parametrize("name", SUCCESSOR_NAMES)
def test_card_names_the_weights_beside_it_and_their_precision(name, report):
    card = (FOLDER / name / "README.md").read_text(encoding="utf-8")
    sha = file_sha256(FOLDER / name / "model.safetensors")
    assert report["models"][name]["weights_sha256"] == sha
    assert re.search(rf"sha256 `{sha}`", card), "the card does not name these weights"
    assert "fp16" in card


@pytest.mark.parametrize("name", SUCCESSOR_NAMES)
def test_card_figures_are_the_measured_ones(name, report):
    card = (FOLDER / name / "README.md").read_text(encoding="utf-8")
    section = card[card.index(BEGIN): card.index(END) + len(END)] + "\n"
    command = re.search(r"\n    (ctxmodels quality .*)\n", section).group(1)
    assert section == measured_section(name, report, command, training_evaluation(FOLDER / name))
    assert "ELTeC" in card and "held-out" in card.lower()
