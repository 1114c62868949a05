"""A visitor's budget on the Word senses page (AppTest, tiny models): work over the time budget stops with a
warning that says what to choose instead, never a traceback or an error box, and the page still draws what it can."""

from __future__ import annotations

import time

import pytest

from app.kit import background
from tests.app_fixtures import assert_clean, charts, page, texts, write_sense_corpus

pytest.importorskip("streamlit.testing.v1")
pytestmark = pytest.mark.usefixtures("app_env")


@pytest.fixture
def big_corpus(tmp_path, monkeypatch):
    path = write_sense_corpus(tmp_path / "big.txt", 700)  # more than the 600 of a large view
    monkeypatch.setenv("CTXMODELS_DATA", str(tmp_path / "no-shared-data"))
    monkeypatch.setenv("CTXMODELS_APP_CORPORA", str(path))
    monkeypatch.setenv("CTXMODELS_APP_WARMUP", "0")  # the worker starts without UMAP's warm-up
    return dict(source="corpus", corpus_word="bank", models="bert-eltec", limit="700")


def test_embedding_over_its_time_stops_and_says_what_to_choose_instead(big_corpus, monkeypatch):
    monkeypatch.setenv("CTXMODELS_VISITOR_SECONDS", "0.001")
    at = page("word_senses", projection="pca", seed="1", **big_corpus)
    assert_clean(at)
    said = [w for w in texts(at.warning) if w.startswith("bert-eltec: Embedding 700 sentences")]
    assert said and "this server gives one computation" in said[0] and "Choose" in said[0], texts(at.warning)


def test_a_projection_over_its_time_is_stopped_and_pca_is_shown_with_the_reason(big_corpus, monkeypatch):
    at = page("word_senses", projection="pca", seed="2", **big_corpus)  # the vectors, on the default budget
    assert_clean(at)
    background.workers.clear()
    monkeypatch.setenv("CTXMODELS_VISITOR_SECONDS", "0.2")
    at = page("word_senses", projection="tsne", dims="3", perplexity="100", seed="2", **big_corpus)
    assert_clean(at)
    deadline = time.time() + 300
    while time.time() < deadline and background.workers().busy():
        time.sleep(0.2)
    assert background.workers().stats["over_time"] == 1
    at.run()
    assert_clean(at)
    said = [w for w in texts(at.warning) if "t-SNE of 700 occurrences in bert-eltec took longer" in w]
    assert said and "Showing PCA instead" in said[0], texts(at.warning)
    assert any(c.startswith("PCA") for c in texts(at.caption)), texts(at.caption)
    assert charts(at)  # the panels are drawn, on PCA
    at.run()  # asked again, it is not run again: it would go over again
    assert background.workers().stats["over_time"] == 1 and not background.workers().busy()
