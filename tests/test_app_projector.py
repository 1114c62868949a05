"""The Embedding Projector's tools on Word senses (AppTest on the tiny models, tests/app_fixtures.py): labels on a
few points, one occurrence with only its nearest, a custom axis from one word to another, a clicked point ringed;
each in the link, so a copied link shows the same picture."""

from __future__ import annotations

import numpy as np
import pytest

from ctxmodels.analysis import projector, vectors
from tests.app_fixtures import assert_clean, charts, figure_array, page, texts

pytest.importorskip("streamlit.testing.v1")
pytestmark = pytest.mark.usefixtures("app_env")

OWN = "\n".join(["The bank lent her the money. | money", "We sat on the bank of the river. | river",
                 "The bank raised its interest rates. | money", "The river bank was green. | river",
                 "He walked along the bank of the stream. | river"])
BASE = dict(projection="pca", models="bert-eltec", source="own", word="bank", sentences=OWN)


def traces(at, name: str) -> list[dict]:
    return [t for c in charts(at) for t in c["data"] if t.get("name") == name]


def test_labels_on_points_are_numbers_or_the_words_around_and_stay_in_the_link():
    at = page("word_senses", **BASE, labels="number")
    assert_clean(at)
    labelled = traces(at, "labels")
    assert labelled and all(t["mode"] == "text" for t in labelled)
    shown = {t for chart in labelled for t in chart["text"]}
    assert shown and shown <= {"1", "2", "3", "4", "5"}  # a label that would land on another is left to the hover
    assert at.query_params["labels"] == "number"
    words = page("word_senses", **BASE, labels="words")
    assert "on the bank of the" in {t for chart in traces(words, "labels") for t in chart["text"]}
    off = page("word_senses", **BASE)
    assert not traces(off, "labels") and off.query_params["labels"] == "off"


def test_one_occurrence_with_its_nearest_fades_the_rest_and_says_where_they_were_found():
    at = page("word_senses", **BASE, focus="2", focus_k="2")
    assert_clean(at)
    star = traces(at, "occurrence 2")
    assert star and star[0]["marker"]["symbol"] == "star" and list(figure_array(star[0]["customdata"])) == [1]
    notes = [c for c in texts(at.caption) if c.startswith("The star: occurrence 2")]
    assert notes and "nearest in this layer" in notes[0] and "not the distance on this picture" in notes[0]
    faded = [float(o) for c in charts(at) for t in c["data"] if "opacity" in t.get("marker", {})
             and not isinstance(t["marker"]["opacity"], (int, float)) for o in figure_array(t["marker"]["opacity"])]
    assert faded.count(1.0) >= 3 and 0.12 in faded  # per panel: the star and its 2 nearest bright, 2 faded
    assert at.query_params["focus"] == "2" and at.query_params["focus_k"] == "2"
    out = page("word_senses", **BASE, focus="99")  # a number beyond the occurrences: clamped, with a warning
    assert not out.exception and any("focus" in w for w in texts(out.warning))


def test_a_custom_axis_places_each_occurrence_between_the_two_words(tiny_assets):
    import ctxmodels

    at = page("word_senses", **BASE, axis_from="money", axis_to="river")
    assert_clean(at)
    assert any(c.startswith("Across: where each occurrence sits between") for c in texts(at.caption))
    fig = charts(at)[-1]  # the chosen layer's panel
    assert fig["layout"]["xaxis"]["ticktext"] == ["<b>money</b>", "<b>river</b>"]
    dots = [t for t in fig["data"] if t.get("mode") == "markers" and t.get("name") in ("money", "river")]
    xs = np.concatenate([figure_array(t["x"]) for t in dots])
    ids = np.concatenate([figure_array(t["customdata"]).astype(int) for t in dots])
    model = ctxmodels.load(str(tiny_assets / "bert-eltec"))
    found = vectors.find_occurrences(OWN.splitlines(), "bank")
    X = vectors.occurrence_vectors(model, found).vectors[:, model.n_layers - 1]
    a, b = (projector.word_anchor(model, w)[model.n_layers - 1] for w in ("money", "river"))
    np.testing.assert_allclose(xs, projector.axis_positions(X, a, b)[ids], rtol=1e-4, atol=1e-5)
    assert at.query_params["axis_from"] == "money" and at.query_params["axis_to"] == "river"


def test_an_axis_word_a_model_has_no_vector_for_says_so_and_draws_the_projection():
    at = page("word_senses", **dict(BASE, models="static-eltec"), axis_from="zzqxv", axis_to="river")
    assert not at.exception and not at.error
    assert any("No axis from" in w and "Showing the projection instead" in w for w in texts(at.warning))
    assert charts(at)


def test_a_clicked_point_in_the_link_is_ringed_on_its_panel_and_can_be_cleared():
    at = page("word_senses", **BASE, point="3:bert-eltec:2")
    assert_clean(at)
    ring = traces(at, "the clicked occurrence")
    assert len(ring) == 1 and list(figure_array(ring[0]["customdata"])) == [2]
    clear = [b for b in at.button if b.label == "Clear the clicked point"]
    clear[0].click().run()
    assert not traces(at, "the clicked occurrence") and "point" not in at.query_params
    focus = [b for b in page("word_senses", **BASE, point="3:bert-eltec:2").button
             if b.label == "Show only it and its nearest"]
    at2 = focus[0].click().run()
    assert at2.session_state["focus"] == 3 and traces(at2, "occurrence 3")


def test_the_folded_controls_name_the_tools_in_use():
    from app.views.word_senses import state

    plain = {"source": "preset", "preset": "bank", "models": ["bert-eltec"], "projection": "pca", "dims": 2}
    assert state.summary(plain) == "“bank” in preset sentences · bert-eltec · PCA, 2-D"
    tools = dict(plain, axis_from="money", axis_to="river", focus=3)
    assert state.summary(tools) == ("“bank” in preset sentences · bert-eltec · axis money → river, 2-D · "
                                    "occurrence 3 and its nearest")
    assert state.summary(dict(plain, axis_from="money")) == state.summary(plain)  # one word: no axis yet


def test_the_tools_in_3d_shrink_the_others_and_put_the_words_on_the_first_axis():
    at = page("word_senses", **BASE, dims="3", labels="number", focus="2", focus_k="1", axis_from="money",
              axis_to="river")
    assert_clean(at)
    fig = charts(at)[-1]
    assert fig["layout"]["scene"]["xaxis"]["ticktext"] == ["<b>money</b>", "<b>river</b>"]
    assert traces(at, "occurrence 2")[0]["marker"]["symbol"] == "diamond"
    sizes = [s for t in fig["data"] if t.get("name") in ("money", "river") and t.get("showlegend") is False
             for s in figure_array(t["marker"]["size"])]
    assert 2 in sizes and max(sizes) > 2  # the others a speck, the occurrence's nearest full size
