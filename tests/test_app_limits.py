"""A model's limits where they bite (AppTest on the tiny models): what each model read is said next to its guesses,
published models that read present-day English are offered by name only where the operator allows downloads, and
the next-sentence score says what it learned and shows a measured pair where it fails."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.kit.model_limits import PUBLISHED, what_it_read
from tests.app_fixtures import ROOT, assert_clean, build_tiny_assets, page, texts

pytest.importorskip("streamlit.testing.v1")
pytestmark = pytest.mark.usefixtures("app_env")

MASKED = "Paris is the capital of [MASK]."


@pytest.mark.parametrize("name", ["bert-eltec", "elmo-eltec", "static-eltec", "minilm-eltec"])
def test_every_shipped_card_says_what_its_model_read(name):
    said = what_it_read((ROOT / "assets" / name / "README.md").read_text(encoding="utf-8"))
    assert said is not None and "1840–1920" in said, said


def test_a_published_card_and_a_card_that_does_not_say():
    card = ("# BERT base model (uncased)\n\nPretrained model on English language using a masked language modeling "
            "(MLM) objective.\n\n## Training data\n\nThe BERT model was pretrained on BookCorpus, a dataset of "
            "11,038 unpublished books and English Wikipedia.")
    assert what_it_read(card) == "BookCorpus"
    assert what_it_read("# my model\n\nA BERT.") is None


@pytest.fixture
def carded_assets(tmp_path: Path, monkeypatch) -> Path:
    assets = build_tiny_assets(tmp_path / "assets")
    (assets / "bert-eltec" / "README.md").write_text(
        "# bert-eltec: a small BERT trained with ctxmodels on ELTeC-eng novels\n", encoding="utf-8")
    monkeypatch.setenv("CTXMODELS_ASSETS", str(assets))
    return assets


def test_fill_in_says_what_each_model_read_beside_its_guesses(carded_assets):
    at = page("fill_in", text=MASKED, fill_models="bert-eltec")
    assert_clean(at)
    captions = texts(at.caption)
    assert "Read English novels of 1840–1920 (ELTeC-eng): it guesses as they would." in captions, captions
    # downloads are off (the default): the published models are named, with how the operator adds them
    offer = [c for c in captions if "present-day English can be added by the operator" in c]
    assert offer and all(name in offer[0] for name in PUBLISHED)
    assert not [b for b in at.button if b.key and b.key.startswith("fill::")]


def test_the_operator_who_allows_downloads_gets_a_button_per_published_model(monkeypatch):
    monkeypatch.setenv("CTXMODELS_ALLOW_DOWNLOADS", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # nothing is fetched here: the buttons say why they are off
    at = page("fill_in", text=MASKED)
    assert not at.exception, texts(at.exception)
    buttons = [b for b in at.button if b.key and b.key.startswith("fill::")]
    assert [b.key.removeprefix("fill::") for b in buttons] == list(PUBLISHED)
    assert all(b.disabled for b in buttons)


def test_the_next_sentence_score_says_what_it_learned_and_where_it_fails():
    at = page("attention", pair="The cat sat on the mat.")
    assert_clean(at)
    said = [m for m in texts(at.markdown) if "What this number learned" in m]
    assert said and "98%" in said[0] and "Photosynthesis" in said[0]


def test_the_lesson_s_fill_in_step_says_what_each_model_read(carded_assets):
    at = page("lesson", step="5", reveal="1")
    assert_clean(at)
    shown = " ".join(texts(at.markdown))
    assert "(it read English novels of 1840–1920 (ELTeC-eng))" in shown, shown[-800:]
