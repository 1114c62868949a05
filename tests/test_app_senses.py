"""The Word senses page at corpus scale, through AppTest: SemCor lemmas named by their glosses, any word of a
corpus through its index, clusters in place of labels, the concordance, and large views that project in the
background. Tiny random models (tests/app_fixtures.py), a tiny SemCor and corpora written by the tests."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from app.kit import background
from tests.app_fixtures import (
    GLOSSES,
    RIVER,
    assert_clean,
    charts,
    figure_array,
    page,
    texts,
    write_semcor,
    write_sense_corpus,
)

pytest.importorskip("streamlit.testing.v1")
pytestmark = pytest.mark.usefixtures("app_env")

@pytest.fixture
def semcor_data(tmp_path, monkeypatch) -> Path:
    root = write_semcor(tmp_path / "data")
    monkeypatch.setenv("CTXMODELS_DATA", str(root))
    return root


@pytest.fixture
def corpus(tmp_path, monkeypatch) -> Path:
    path = write_sense_corpus(tmp_path / "river-and-money.txt", 24)
    monkeypatch.setenv("CTXMODELS_DATA", str(tmp_path / "no-shared-data"))  # only the operator's corpus
    monkeypatch.setenv("CTXMODELS_APP_CORPORA", str(path))
    return path


def legend(at) -> list[str]:
    """The senses or clusters in the first model's two panels (not the ring marking shared points)."""
    return sorted({t.get("name") for c in charts(at)[:2] for t in c["data"]} - {"shared points"})


def test_semcor_occurrences_are_named_by_their_glosses(semcor_data):
    at = page("word_senses", source="semcor", lemma="bank.n", projection="pca", models="bert-eltec")
    assert_clean(at)
    assert any("12 sense-tagged occurrences of **bank** (noun) in SemCor" in c for c in texts(at.caption))
    river, money = legend(at)[1], legend(at)[0]
    assert river == GLOSSES[RIVER]
    assert money.startswith("a financial institution that accepts") and money.endswith("…") and len(money) <= 60
    at.session_state["layers_open"] = True  # the per-layer figure, drawn when its box is opened
    at.run()
    assert_clean(at)
    titles = [a["text"] for c in charts(at) for a in c["layout"].get("annotations", [])]
    assert "clusters vs senses (adjusted Rand index)" in titles
    assert at.query_params["source"] == "semcor" and at.query_params["lemma"] == "bank.n"


def test_a_semcor_sample_says_how_many_it_was_drawn_from(semcor_data):
    from app.kit import occurrence_sources as sources

    chosen = sources._semcor(sources.Spec(kind="semcor", word="bank", pos="n", limit=5))
    assert len(chosen.found.occurrences) == 5 and "(a sample of 5 of 12, spread evenly" in chosen.caption
    assert "a sample" not in sources._semcor(sources.Spec(kind="semcor", word="bank", pos="n")).caption


def test_a_semcor_occurrence_is_read_against_the_other_references_and_its_tag_named(semcor_data):
    at = page("word_senses", source="semcor", lemma="bank.n", projection="pca", models="bert-eltec", wsd="1",
              occ="2")
    assert_clean(at)
    said = " ".join(texts(at.markdown))
    assert "SemCor's annotators tagged it *" in said and ("the model is right" in said or "otherwise" in said)
    assert "this occurrence is one of them, so it was taken out of its sense's average" in " ".join(texts(at.caption))
    heat = next(s for s in charts(at) if "xaxis2" in s["layout"] or s["data"][0].get("xaxis") == "x")
    assert sum(name.startswith("<b>✓ ") for name in heat["data"][0]["y"]) == 1  # the annotators' sense


def test_points_coloured_by_the_dictionary_sense_each_layer_reads(semcor_data):
    """Each panel colours its points by the SemCor sense average nearest in its own layer, with one colour per sense
    in every panel, and says how often that layer reads SemCor's own occurrences right; the CSV has the readings."""
    at = page("word_senses", projection="pca", colour="dictionary", models=["bert-eltec", "static-eltec"])
    assert_clean(at)
    assert at.radio(key="colour").value == "dictionary" and at.query_params["colour"] == "dictionary"
    scatters = [c for c in charts(at) if c["data"][0]["type"] in ("scatter", "scattergl")]
    assert len(scatters) == 3  # bert-eltec's two panels, static-eltec's one
    names = {t.get("name") for c in scatters for t in c["data"]} - {"shared points", None}
    senses = {"a financial institution that accepts deposits and channels… (noun)",
              GLOSSES[RIVER] + " (noun)", "(no sense nearer than another)"}
    assert names and names <= senses, names
    colour = {}
    for c in scatters:
        for t in c["data"]:
            if t.get("name") in senses:
                assert colour.setdefault(t["name"], t["marker"]["color"]) == t["marker"]["color"]
    assert sum("of SemCor's *bank* right" in c for c in texts(at.caption)) == 3


def test_a_word_semcor_does_not_tag_is_coloured_by_clusters_with_a_message(semcor_data):
    at = page("word_senses", source="own", projection="pca", colour="dictionary", models="bert-eltec", word="zebra",
              sentences="The zebra ran. | a\nA zebra slept. | b\nThe zebra ate. | a")
    assert not at.exception
    assert any("SemCor tags no sense of “zebra”" in e for e in texts(at.error)), texts(at.error)
    assert all(n.startswith("cluster ") or n == "shared points" for n in
               {t.get("name") for c in charts(at) for t in c["data"]} - {None})


def test_semcor_folds_rare_senses_into_other(semcor_data):
    at = page("word_senses", source="semcor", lemma="bank.n", fold="7", projection="pca", models="bert-eltec")
    assert_clean(at)
    # Both senses have 6 occurrences, fewer than 7: one label is no sense distinction, so clusters colour the points.
    assert any("no sense labels (or only one)" in m for m in texts(at.caption))
    # no choice offered that the page would not honour: no labels to colour by, only clusters or dictionary senses
    assert at.radio(key="colour").options == ["clusters found in each layer", "the dictionary sense each layer reads"]
    assert at.radio(key="colour").value == "cluster"
    assert all(n.startswith("cluster ") for n in legend(at))
    assert any("1 sense(s)" in c and "fewer than 7" in c for c in texts(at.caption))


def test_a_lemma_the_link_names_but_semcor_lacks_is_a_warning(semcor_data):
    at = page("word_senses", source="semcor", lemma="nosuchword.n", projection="pca", models="bert-eltec")
    assert not at.exception
    assert any("lemma" in w and "nosuchword.n" in w for w in texts(at.warning))
    assert any("SemCor" in c for c in texts(at.caption))  # the default lemma instead


def test_any_word_of_a_corpus_coloured_by_clusters_with_a_concordance(corpus):
    at = page("word_senses", source="corpus", corpus_word="bank", projection="pca", models="bert-eltec")
    assert_clean(at)
    assert any("occurs 24 times in 24 sentences of 3 documents" in c for c in texts(at.caption))
    names = legend(at)
    assert names and all(n.startswith("cluster ") for n in names)
    # The concordance is built when its box is opened (a first visit does not draw it)
    box = [e for e in at.expander if e.label.startswith("Concordance")]
    assert box and "24 occurrences" in box[0].label and not box[0].dataframe
    at.session_state["kwic_open"] = True
    at.run()
    assert_clean(at)
    table = at.dataframe[-1].value
    assert len(table) == 24 and {"left", "word", "right", "document"} <= set(table.columns)
    assert set(table["word"]) == {"bank"}
    assert at.query_params["corpus_word"] == "bank" and at.query_params["limit"] == "1000"


def test_a_search_rings_the_occurrences_with_those_words_around_them(corpus):
    at = page("word_senses", source="corpus", corpus_word="bank", projection="pca", models="bert-eltec")
    assert not any(t.get("name", "").startswith("with ") for c in charts(at) for t in c["data"])
    at.text_input(key="find").input("river, Willows").run()
    assert_clean(at)
    assert any(c == "Ringed: the 12 of 24 occurrences (50%) whose sentence has *river*, *willows* (in any form)."
               for c in texts(at.caption)), texts(at.caption)
    for fig in charts(at)[:2]:  # both panels: the 12 river sentences ringed, each a click away like its dot
        [ring] = [t for t in fig["data"] if t.get("name") == "with river / willows"]
        assert len(figure_array(ring["customdata"])) == 12 and ring["marker"]["symbol"] == "circle-open"
        assert all("river" in h for h in ring["text"])
    together = [c for c in texts(at.caption) if c.startswith("Of the ringed occurrences' 5 nearest")]
    assert len(together) == 2 and all(c.endswith("(50% of all are).") for c in together)
    assert at.query_params["find"] == "river, Willows"
    # the concordance says which rows are ringed, and shows only those on request
    at.session_state["kwic_open"] = True
    at.run()
    table = at.dataframe[-1].value
    assert len(table) == 24 and table["ringed"].sum() == 12
    at.checkbox(key="kwic_ringed").check().run()
    table = at.dataframe[-1].value
    assert len(table) == 12 and table["ringed"].all() and all("river" in r for r in table["right"])
    at.text_input(key="find").input("zebra").run()
    assert_clean(at)
    assert any("No occurrence's sentence has *zebra*" in c for c in texts(at.caption))
    at.text_input(key="find").input(" ,, ").run()
    assert not at.exception and any("type one or more words" in e for e in texts(at.error))
    assert len(charts(at)) >= 2  # the panels stay


def test_the_sample_limit_and_seed_reproduce_a_view(corpus):
    first = page("word_senses", source="corpus", corpus_word="bank", limit="100", sample="3", projection="pca",
                 models="bert-eltec")
    again = page("word_senses", source="corpus", corpus_word="bank", limit="100", sample="3", projection="pca",
                 models="bert-eltec")
    assert_clean(first)
    assert charts(first)[0]["data"] == charts(again)[0]["data"]


@pytest.mark.parametrize("word, phrase", [("zebra", "does not occur"), ("two words", "one word"), ("", "no target")])
def test_a_corpus_word_that_cannot_be_found_says_why(corpus, word, phrase):
    at = page("word_senses", source="corpus", corpus_word=word, projection="pca", models="bert-eltec")
    assert not at.exception
    assert any(phrase in e for e in texts(at.error)), texts(at.error)


def test_without_corpora_the_corpus_source_is_not_offered(tmp_path, monkeypatch):
    monkeypatch.setenv("CTXMODELS_DATA", str(tmp_path / "nothing"))
    at = page("word_senses", source="corpus", projection="pca", models="bert-eltec")
    assert not at.exception
    assert "corpus" not in at.radio[0].options
    assert any("source" in w for w in texts(at.warning))


def test_a_large_view_draws_pca_at_once_and_the_projection_when_it_is_ready(tmp_path, monkeypatch):
    path = write_sense_corpus(tmp_path / "big.txt", 700)
    monkeypatch.setenv("CTXMODELS_APP_CORPORA", str(path))
    query = dict(source="corpus", corpus_word="bank", projection="tsne", models="bert-eltec", limit="700")
    at = page("word_senses", **query)
    assert_clean(at)
    assert any("running in the background" in i for i in texts(at.info))
    assert any(c.startswith("PCA") for c in texts(at.caption))
    assert {t["type"] for t in charts(at)[0]["data"] if t.get("name") != "shared points"} == {"scattergl"}  # WebGL
    deadline = time.time() + 300
    while time.time() < deadline and background.workers().busy():  # the worker process's projection
        time.sleep(0.5)
    at.run()
    assert_clean(at)
    assert not any("running in the background" in i for i in texts(at.info))
    assert any(c.startswith("t-SNE") for c in texts(at.caption)), texts(at.caption)


def test_a_fresh_install_without_shared_data_offers_semcor_from_the_shipped_copy(tiny_assets, tmp_path, monkeypatch):
    """No shared folder: the SemCor source reads the compact copy in assets/semcor (here beside the tiny models)."""
    assets = tmp_path / "assets"
    assets.mkdir()
    for item in tiny_assets.iterdir():
        (assets / item.name).symlink_to(item)
    (assets / "semcor").symlink_to(Path(__file__).resolve().parents[1] / "assets" / "semcor")
    monkeypatch.setenv("CTXMODELS_ASSETS", str(assets))
    monkeypatch.setenv("CTXMODELS_DATA", str(tmp_path / "no-shared-data"))
    at = page("word_senses", source="semcor", lemma="bank.n", projection="pca", models="bert-eltec")
    assert_clean(at)
    assert "corpus" not in at.radio[0].options  # no novels, no operator corpus, no uploads
    assert any("sense-tagged occurrences of **bank** (noun) in SemCor" in c for c in texts(at.caption))
    assert "sloping land (especially the slope beside a body of water)" in legend(at)


def test_a_static_vector_shared_by_every_occurrence_shows_its_count_and_senses():
    at = page("word_senses", projection="pca", models="static-eltec", inflect="0")
    assert_clean(at)
    fig = charts(at)[0]
    ring = next(t for t in fig["data"] if t.get("name") == "shared points")
    n = next(int(c.split()[0]) for c in texts(at.caption) if " occurrences of **bank**" in c)
    assert ring["text"] == [f"×{n}"]  # one point for every occurrence of "bank"
    assert "money" in ring["hovertext"][0] and "river" in ring["hovertext"][0]
    bert = page("word_senses", projection="pca", models="bert-eltec")
    titles = [c["layout"]["title"]["text"].replace("<br>", " ") for c in charts(bert)[:2]]  # long ones wrap
    assert "input embeddings: word + position + segment" in titles[0] and "context-free" not in titles[0]


# -- the defaults and whether the senses separate ----------------------------------------------------------------


def test_the_page_opens_on_bank_with_static_elmo_and_the_shipped_bert():
    at = page("word_senses", projection="pca")
    assert_clean(at)
    assert at.selectbox(key="preset").value == "bank"
    assert at.multiselect(key="models").value == ["static-eltec", "elmo-eltec", "bert-eltec"]  # no minilm-eltec here


def test_minilm_eltec_is_the_default_bert_where_it_is_shipped(tiny_assets, tmp_path, monkeypatch):
    assets = tmp_path / "assets"
    assets.mkdir()
    for entry in tiny_assets.iterdir():
        (assets / entry.name).symlink_to(entry)
    shutil.copytree(tiny_assets / "bert-eltec", assets / "minilm-eltec")  # a BERT under the new short name
    monkeypatch.setenv("CTXMODELS_ASSETS", str(assets))
    at = page("word_senses", projection="pca")
    assert_clean(at)
    assert at.multiselect(key="models").value == ["static-eltec", "elmo-eltec", "minilm-eltec"]
    assert "bert-eltec" in at.multiselect(key="models").options  # still there to choose
    assert at.select_slider(key="layer::minilm-eltec").value == 2


def test_a_model_whose_senses_do_not_separate_is_named_with_its_figures():
    at = page("word_senses", projection="pca", models="static-eltec", preset="bank")
    assert_clean(at)
    said = [i for i in texts(at.info) if "does not separate" in i]
    assert len(said) == 1, texts(at.info)
    assert said[0].startswith("**static-eltec** does not separate the senses of **bank**: in its only layer")
    assert "always guessing the most common sense gets 50%" in said[0] and "separated from 65%" in said[0]
    assert "same vector" in said[0]  # why a static model cannot
    assert not any("senses of **bank** separate in" in c for c in texts(at.caption))


def test_a_model_whose_senses_separate_is_named_in_a_caption():
    # Two forms, one per sense: even static vectors tell "run" from "ran", so the senses separate perfectly.
    lines = ["We run to the station every morning. | now", "They run along the river. | now",
             "I run when it rains. | now", "She ran all the way home. | then", "He ran to catch the bus. | then",
             "The dog ran after the ball. | then"]
    at = page("word_senses", projection="pca", models="static-eltec", source="own", sentences="\n".join(lines),
              word="run")
    assert_clean(at)
    assert not any("does not separate" in i for i in texts(at.info))
    assert any(c.startswith("The senses of **run** separate in **static-eltec** 100% (static)")
               for c in texts(at.caption)), texts(at.caption)
