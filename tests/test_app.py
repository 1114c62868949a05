"""The explorer app through Streamlit's AppTest: every page on its defaults, its main widgets, and bad input.

The pages run on tiny random-weight models (tests/app_fixtures.py) found through ``CTXMODELS_ASSETS``.
Model loading and the analysis caches are per process, so later tests reuse what earlier ones loaded.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

from app.kit import inputs, training
from app.kit.places import home_short, source_of
from app.kit.registry import registry
from app.kit.settings import settings
from ctxmodels.analysis import attention as att
from ctxmodels.thread_warnings import caught_warnings
from tests.app_fixtures import assert_clean, charts, figure_array, open_explanation, page, texts

pytest.importorskip("streamlit.testing.v1")
from streamlit.testing.v1 import AppTest  # noqa: E402

PAGES = ["overview", "lesson", "word_senses", "elmo_layers", "attention", "fine_tuning", "fill_in", "how_they_learn",
         "models"]
pytestmark = pytest.mark.usefixtures("app_env")


# -- with no model at all --------------------------------------------------------------------------------------


def test_without_models_every_page_says_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setenv("CTXMODELS_ASSETS", str(tmp_path / "empty"))
    monkeypatch.setattr(registry(), "_extra", [])  # a server that added none (an earlier test here may have)
    for name in PAGES:
        at = page(name)
        assert not at.exception, (name, texts(at.exception))
        assert any("No model is available" in w for w in texts(at.warning)), (name, texts(at.warning))


# -- every page on its defaults --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", PAGES)
def test_every_page_runs_on_its_defaults(name):
    at = page(name)
    assert_clean(at)
    assert at.title and at.title[0].value
    if name in ("word_senses", "attention", "fill_in"):
        assert charts(at), f"{name} shows no figure"
    # every page explains itself, formulas included, in a box written when it is opened
    if name != "overview":
        box = [e for e in at.expander if e.label == "What am I looking at?"]
        assert box and not box[0].markdown and not box[0].latex
        open_explanation(at)
        assert_clean(at)
        box = [e for e in at.expander if e.label == "What am I looking at?"]
        assert box[0].markdown and (box[0].latex or name == "models")


# -- word senses -----------------------------------------------------------------------------------------------


def scatter_points(at: AppTest) -> list:
    return [trace["x"] for spec in charts(at) for trace in spec["data"] if trace.get("type") == "scatter"
            and trace.get("mode") == "markers"]


def test_word_senses_layer_slider_changes_the_plot():
    at = page("word_senses", projection="pca", models="bert-eltec")
    assert_clean(at)
    before = scatter_points(at)
    slider = at.select_slider(key="layer::bert-eltec")
    assert slider.value == 2  # the top layer by default
    slider.set_value(1).run()
    assert_clean(at)
    assert scatter_points(at) != before
    assert at.query_params["layer"] == ["1:bert-eltec"] or "1:bert-eltec" in at.query_params["layer"]


def test_word_senses_reads_its_state_from_the_url_and_writes_it_back():
    at = page("word_senses", preset="run", projection="pca", models=["elmo-eltec", "static-eltec"],
              layer="1:elmo-eltec")
    assert_clean(at)
    assert at.selectbox(key="preset").value == "run"
    assert at.multiselect(key="models").value == ["elmo-eltec", "static-eltec"]
    assert at.select_slider(key="layer::elmo-eltec").value == 1
    at.selectbox(key="projection").set_value("tsne").run()
    assert_clean(at)
    assert at.query_params["projection"] in ("tsne", ["tsne"])
    assert any("t-SNE" in c for c in texts(at.caption))


def test_word_senses_in_three_dimensions():
    """dims=3: every panel a 3-D scatter, the row's two panels on one cube of shared ranges, no click selection
    (Plotly has none in 3-D), the CSV with a z column; back to 2-D on the radio."""
    at = page("word_senses", projection="pca", models=["elmo-eltec", "static-eltec"], dims="3")
    assert_clean(at)
    assert at.radio(key="dims").value == 3
    specs = charts(at)
    assert specs and all(t["type"] == "scatter3d" and "z" in t for spec in specs for t in spec["data"])
    elmo = [spec["layout"]["scene"] for spec in specs[:2]]  # ELMo's row: the char CNN and the chosen layer
    assert elmo[0]["zaxis"]["range"] == elmo[1]["zaxis"]["range"] and elmo[0]["aspectmode"] == "cube"
    assert not any(c.proto.selection_mode for c in at.get("plotly_chart"))
    assert any(c.startswith("PCA, seed 0, in 3-D") for c in texts(at.caption))
    at.radio(key="dims").set_value(2).run()
    assert_clean(at)
    assert at.query_params["dims"] in ("2", ["2"])
    assert all(t["type"] != "scatter3d" for spec in charts(at) for t in spec["data"])
    assert all(c.proto.selection_mode for c in at.get("plotly_chart"))  # a click picks a point again


def test_word_senses_measurement_lines_per_model_with_baseline():
    at = page("word_senses", projection="pca", models=["elmo-eltec", "bert-eltec"])
    assert_clean(at)

    def across() -> list[dict]:
        return [spec for spec in charts(at) if spec["layout"].get("annotations")
                and any("1-NN" in a.get("text", "") for a in spec["layout"]["annotations"])]

    # Drawn when its box is opened (a first visit draws the model rows and the verdicts only) ...
    assert not across() and [e for e in at.expander if e.label.startswith("Per layer")]
    at.session_state["layers_open"] = True
    at.run()
    assert_clean(at)
    # ... as one figure of small panels (one Plotly figure draws much faster in a browser than five).
    assert len(across()) == 1
    spec = across()[0]
    titles = [a["text"] for a in spec["layout"]["annotations"]]
    assert any("self-similarity" in t for t in titles)
    knn = [t for t in spec["data"] if t.get("xaxis", "x") == "x"]  # the first panel: 1-NN accuracy
    assert {t["name"] for t in knn} == {"elmo-eltec", "bert-eltec"}
    assert spec["layout"]["yaxis"]["title"]["text"] == "accuracy"  # words, not a column name
    assert spec["layout"].get("shapes"), "the majority-sense baseline line is missing"
    # A model has one colour in every panel.
    colours = {}
    for t in spec["data"]:
        colours.setdefault(t["name"], set()).add(t["line"]["color"])
    assert all(len(c) == 1 for c in colours.values()) and len({c.pop() for c in colours.values()}) == 2


def test_overview_tries_one_word_in_two_sentences():
    """Off by default (the first page stays light); on, one line per default model of the word's cosine between
    the two sentences, layer by layer; a word missing from a sentence is said per model, with no traceback."""
    at = page("overview")
    assert_clean(at)
    assert not charts(at) and at.toggle(key="try").value is False
    at = page("overview", **{"try": "1", "try_a": "We sat on the bank of the river.",
                             "try_b": "She paid the money into the bank."})
    assert_clean(at)
    (chart,) = charts(at)
    solid = {t["name"]: t for t in chart["data"] if t["line"]["dash"] == "solid"}
    assert set(solid) == {"static-eltec", "elmo-eltec", "bert-eltec"}
    assert [round(y, 4) for y in solid["static-eltec"]["y"]] == [1.0]  # one vector for every "bank"
    assert len(solid["elmo-eltec"]["y"]) == 3 and solid["elmo-eltec"]["y"][0] == pytest.approx(1.0, abs=1e-5)
    at.multiselect(key="try_models").set_value(["bert-eltec"]).run()  # the models are the visitor's to choose
    assert_clean(at)
    assert [t["name"] for t in charts(at)[0]["data"] if t["line"]["dash"] == "solid"] == ["bert-eltec"]
    assert at.query_params["try_models"] == "bert-eltec"
    at.text_input(key="try_b").set_value("She paid the money into the vault.").run()
    assert not at.exception and not charts(at)
    (error,) = texts(at.error)  # said once, not once per model
    assert error.startswith("The sentences:") and "does not occur in sentence B" in error
    assert at.query_params["try_b"] == "She paid the money into the vault."


def test_overview_names_the_dictionary_sense_in_each_sentence(tmp_path, monkeypatch):
    """With the box ticked, a line per model names the sense its best layer on SemCor reads in A and in B, and how
    far to trust that layer; a static model is flagged as reading the word, not the sentences."""
    from tests.app_fixtures import GLOSSES, RIVER, write_semcor

    monkeypatch.setenv("CTXMODELS_DATA", str(write_semcor(tmp_path / "data")))
    query = {"try": "1", "try_a": "We sat on the bank of the river.", "try_b": "She paid the money into the bank."}
    at = page("overview", **query)
    assert_clean(at)
    assert at.checkbox(key="try_senses").value is False
    assert not any("Which dictionary sense" in m for m in texts(at.markdown))
    at.checkbox(key="try_senses").set_value(True).run()
    assert_clean(at)
    [said] = [m for m in texts(at.markdown) if "Which dictionary sense of *bank*" in m]
    lines = said.split("\n\n", 1)[1].splitlines()  # a list under its heading: a line each, not one paragraph
    assert all(line.startswith("- **") for line in lines), said
    assert [line.split("**")[1] for line in lines] == ["static-eltec", "elmo-eltec", "bert-eltec"]
    assert all(("; B " in line and "of SemCor's *bank* right" in line) for line in lines)
    # one spelling, one static vector: every sense's average is that vector, so the senses tie
    assert "A no sense nearer than another; B no sense nearer than another" in lines[0]
    assert "no better than the spelling alone" in lines[0]
    assert GLOSSES[RIVER] in said or "financial institution" in said
    assert at.query_params["try_senses"] == "1"
    at = page("overview", **{"try": "1", "try_senses": "1", "try_word": "the", "try_a": "the one",
                             "try_b": "the other"})
    assert not at.exception
    assert any("SemCor tags no sense of “the”" in m for m in texts(at.info))


def test_word_senses_layer_path_option():
    at = page("word_senses", projection="pca", models="elmo-eltec")
    at.toggle(key="path").set_value(True).run()
    assert_clean(at)
    assert any(t.get("name") == "path through layers" for spec in charts(at) for t in spec["data"])


def test_word_senses_which_words_shape_one_occurrence():
    at = page("word_senses", projection="pca")
    assert not [s for s in charts(at) if s["data"][0]["type"] == "heatmap"]
    at.toggle(key="shape").set_value(True).run()
    assert_clean(at)
    maps = [s for s in charts(at) if s["data"][0]["type"] == "heatmap"]
    assert len(maps) == len(at.multiselect(key="models").value) >= 2  # one map per model shown
    at_word = {s["layout"]["title"]["text"]: s for s in maps}
    for spec in maps:
        heat, names = spec["data"][0], spec["layout"]["xaxis"]["ticktext"]
        bold = [i for i, n in enumerate(names) if n.startswith("<b>")]
        assert len(bold) == 1 and all(row[bold[0]] is None for row in heat["z"])  # the occurrence's own column
        assert all(v == pytest.approx(0, abs=1e-6) for v in heat["z"][0] if v is not None), (
            spec["layout"]["title"]["text"], heat["z"][0], names)  # context-free layer
        assert heat["zmax"] == max(m["data"][0]["zmax"] for m in maps)  # one scale for all
    assert any("read as [MASK]" in t for t in at_word) and any("left out" in t for t in at_word)
    first = maps[0]["layout"]["xaxis"]["ticktext"]
    at.selectbox(key="occ").set_value(4).run()
    assert_clean(at)
    again = [s for s in charts(at) if s["data"][0]["type"] == "heatmap"]
    assert again[0]["layout"]["xaxis"]["ticktext"] != first  # another sentence


def test_word_senses_nearest_words_in_semcor(tmp_path, monkeypatch):
    """The switch embeds SemCor's reference sentences once per model in the background (a progress bar meanwhile),
    then draws per model a bar per layer of the nearest words' parts of speech; the index stays on disk."""
    from app.kit import background
    from tests.app_fixtures import write_semcor

    monkeypatch.setenv("CTXMODELS_DATA", str(write_semcor(tmp_path / "data")))
    at = page("word_senses", projection="pca", near="1", models=["bert-eltec", "static-eltec"])
    assert_clean(at)
    deadline = time.time() + 300
    while time.time() < deadline and any(not job.done() for job in background.jobs()._jobs.values()):
        time.sleep(0.2)
    at.run()
    assert_clean(at)
    bars = {s["layout"]["title"]["text"]: s for s in charts(at) if s["data"][0]["type"] == "bar"}
    assert set(bars) == {"bert-eltec", "static-eltec"}, list(bars)
    bert = bars["bert-eltec"]
    layers = [t["y"] for t in bert["data"]][0]
    assert list(layers) == ["embeddings", "layer 1", "layer 2"]
    # every layer's bar holds the k nearest: the tiny SemCor's 12 tagged "bank"s, all nouns and the word itself
    totals = np.sum([figure_array(t["x"]) for t in bert["data"]], axis=0)
    assert list(totals) == [12, 12, 12]
    assert [t["name"] for t in bert["data"]] == ["noun"] and bert["data"][0]["marker"]["pattern"]["shape"] == "/"
    assert at.query_params["near"] == "1"
    # the sentences of the nearest words, for any layer (the top one first)
    pick = at.selectbox(key="near_layer::bert-eltec")
    assert pick.value == 2
    pick.set_value(0).run()
    assert_clean(at)
    contexts = [list(df.value["in context"]) for df in at.dataframe if "in context" in df.value.columns]
    assert contexts and all(any("[bank]" in c for c in cs) for cs in contexts)
    assert len(list((tmp_path / "cache" / "token-index").glob("*.npz"))) == 2


def test_word_senses_which_dictionary_sense(tmp_path, monkeypatch):
    """The switch compares the picked occurrence with each SemCor sense's average, in every model and layer: one
    figure of a panel per model, a line per model naming the sense its best layer reads and how far to trust it;
    the occurrence is in the link; a word SemCor does not tag gets one message, not a traceback."""
    from tests.app_fixtures import write_semcor

    monkeypatch.setenv("CTXMODELS_DATA", str(write_semcor(tmp_path / "data")))
    at = page("word_senses", projection="pca", wsd="1", occ="3", models=["bert-eltec", "static-eltec"])
    assert_clean(at)
    assert at.selectbox(key="occ").value == 3 and at.query_params["occ"] == "3"
    maps = [s for s in charts(at) if s["data"][0]["type"] == "heatmap" and "xaxis2" in s["layout"]]
    assert len(maps) == 1, [s["layout"].get("title") for s in charts(at)]
    fig = maps[0]
    heats = [t for t in fig["data"] if t["type"] == "heatmap"]
    assert [fig["layout"][a]["title"]["text"] for a in ("xaxis", "xaxis2")] == ["<b>bert-eltec</b>",
                                                                                "<b>static-eltec</b>"]
    assert [len(h["x"]) for h in heats] == [3, 1] and all(len(h["y"]) == 2 for h in heats)
    said = " ".join(texts(at.markdown))
    assert "**bert-eltec**" in said and "**static-eltec**" in said and "SemCor's *bank* right" in said
    assert "12 SemCor occurrences of *bank* in 2 senses" in " ".join(texts(at.caption))
    # a preset sentence is not one of SemCor's: nothing was taken out of an average
    assert "taken out of its sense's average" not in " ".join(texts(at.caption))

    at = own(at, "The zebra ran off. | a\nA zebra slept. | b", "zebra")
    assert not at.exception
    assert any("SemCor tags no sense of “zebra”" in e for e in texts(at.error)), texts(at.error)


OWN = "\n".join([
    "We sat on the bank of the river. | river",
    "The bank lent her the money. | money",
    "The grassy bank was wet after the rain. | river",
    "He paid the cheque into the bank. | money",
    "A heron stood still on the bank. | river",
    "The bank closed at noon. | money",
])


def own(at: AppTest, sentences: str, word: str) -> AppTest:
    at.radio(key="source").set_value("own")
    at.run()
    at.text_area(key="sentences").set_value(sentences)
    at.text_input(key="word").set_value(word)
    return at.run()


def test_word_senses_own_sentences_with_labels():
    at = own(page("word_senses", projection="pca", models="bert-eltec"), OWN, "bank")
    assert_clean(at)
    assert any("6 occurrences" in c for c in texts(at.caption))


@pytest.mark.parametrize("sentences, word, kind, phrase", [
    ("", "bank", "error", "no sentences"),
    (OWN, "", "error", "no target word"),
    (OWN, "zebra", "error", "occurs in none"),
    (OWN + "\nA sentence without the word.", "bank", "warning", "does not occur in 1"),
    ("bank " * 2000, "bank", "error", "2,000 words"),
    ("The 🏦 bank 🏦 is by the 🌊 river. | money\nThe bank 🌊 river. | river", "bank", None, None),
    ("🏦🏦🏦", "🏦", None, None),
])
def test_word_senses_bad_input_gives_a_message_not_a_traceback(sentences, word, kind, phrase):
    at = own(page("word_senses", projection="pca", models=["bert-eltec", "elmo-eltec", "static-eltec"]),
             sentences, word)
    assert not at.exception, texts(at.exception)
    if kind is not None:
        shown = texts(at.error if kind == "error" else at.warning)
        assert any(phrase in s for s in shown), shown


def test_word_senses_without_labels_says_what_is_missing():
    at = own(page("word_senses", projection="pca", models="elmo-eltec"),
             "The bank was closed.\nWe sat on the bank.\nThe bank by the river.", "bank")
    assert_clean(at)
    assert any("need sense labels" in i for i in texts(at.info))


# -- fill in the blank -----------------------------------------------------------------------------------------


def bars(at: AppTest) -> list[dict]:
    return [t for spec in charts(at) for t in spec["data"] if t.get("type") == "bar"]


def type_sentence(at: AppTest, text: str) -> None:
    """What the browser's keystroke box (st_keyup) reports to the server as a person types."""
    at.session_state["_st_keyup_text_live"] = {"value": text}
    at.run()


def test_fill_in_one_chart_per_mask_and_top_k():
    at = page("fill_in", text="The [MASK] was by the [MASK].", k="3")
    assert_clean(at)
    found = bars(at)
    assert len(found) == 2 and all(len(b["y"]) == 3 for b in found)
    at.slider(key="k").set_value(7).run()
    assert all(len(b["y"]) == 7 for b in bars(at))
    assert any("bert-no-mlm" in c for c in texts(at.caption)), "the model without an MLM head is not mentioned"


def test_fill_in_without_mask_offers_to_hide_a_word_and_scores_it():
    at = page("fill_in", text="The boat drifted towards the bank of the river.")
    assert_clean(at)
    assert not at.warning, "a sentence without [MASK] is not a warning"
    assert any("no `[MASK]`" in i for i in texts(at.info))
    assert not bars(at)
    at.radio(key="fill_mode").set_value("word").run()
    assert not bars(at) and any("Pick a word" in i for i in texts(at.info))
    at.selectbox(key="blank").set_value("bank").run()
    assert_clean(at)
    assert [m.label for m in at.metric][:2] == ["P(bank)", "rank"]
    assert bars(at)
    assert at.query_params["blank"] == "bank" and at.query_params["fill_mode"] == "word"


@pytest.mark.parametrize("text, phrase", [("", "empty"), ("word " * 2000 + "[MASK]", "2,001 words")])
def test_fill_in_bad_input(text, phrase):
    at = page("fill_in")
    type_sentence(at, text)
    assert not at.exception
    assert any(phrase in e for e in texts(at.error)), texts(at.error)


def test_fill_in_emoji_is_not_a_traceback():
    at = page("fill_in")
    type_sentence(at, "I 💙 the [MASK] 🏦 🌊")
    assert_clean(at)
    assert bars(at)


# -- attention ---------------------------------------------------------------------------------------------------


def test_attention_pair_views_and_ranking():
    at = page("attention", sentence="The bank was closed.", pair="She went home.")
    assert_clean(at)
    tokens = at.dataframe[0].value
    assert "B" in tokens.loc["segment"].tolist() and "[SEP]" in tokens.loc["token"].tolist()
    heat_before = charts(at)[1]["data"][0]["z"]
    at.radio(key="view").set_value("mean").run()
    assert_clean(at)
    assert charts(at)[1]["data"][0]["z"] != heat_before
    at.radio(key="view").set_value("rollout").run()
    assert_clean(at)
    at.checkbox(key="hide").set_value(True).run()
    assert_clean(at)
    assert "[SEP]" not in charts(at)[1]["data"][0]["y"][0]
    at.selectbox(key="rank_by").set_value("entropy").run()
    ranked = at.dataframe[-1].value
    assert list(ranked["entropy"]) == sorted(ranked["entropy"], reverse=True)


def test_a_head_picked_in_the_ranking_opens_in_the_detail():
    """The ranking table's row pick (a browser click, see test_browser) hands (layer, head) to the next run, which
    shows that head alone in the detail, even from the mean-over-heads view."""
    at = page("attention", view="mean")
    ranked = at.dataframe[-1].value
    assert list(ranked.columns) == ["layer", "head", *att.SUMMARY_COLUMNS]
    layer, head = int(ranked["layer"].iloc[1]), int(ranked["head"].iloc[1])
    at.session_state["_att_pick"] = (layer, head)
    at.run()
    assert_clean(at)
    assert at.radio(key="view").value == "head"
    assert (at.slider(key="att_layer").value, at.slider(key="att_head").value) == (layer, head)
    assert charts(at)[1]["layout"]["title"]["text"].endswith(f"layer {layer}, head {head}")
    assert "_att_pick" not in at.session_state


def test_attention_long_input_stays_light():
    at = page("attention")
    at.text_input(key="sentence").set_value(" ".join(["bank", "river", "money"] * 150)).run()  # 450 words
    assert not at.exception
    assert any("truncat" in w for w in texts(at.warning)), "the cut to the model's length is not reported"
    assert any("line view draws up to" in i for i in texts(at.info))
    grid = charts(at)[0]["data"][0]["z"]  # 2 layers x 2 heads, tiled: each map cut to 48 positions (+ a gap)
    rows = int(str(grid["shape"]).split(",")[0]) if isinstance(grid, dict) else len(grid)  # Plotly's typed array
    assert rows <= 2 * (48 + 6)


@pytest.mark.parametrize("text, kind", [("", "error"), ("x " * 2000, "error"), ("🏦 💙 🌊", None)])
def test_attention_bad_input(text, kind):
    at = page("attention")
    at.text_input(key="sentence").set_value(text).run()
    assert not at.exception, texts(at.exception)
    if kind:
        assert at.error


# -- ELMo layers --------------------------------------------------------------------------------------------------


def write_probe_cache(tiny_assets: Path, task: str = "pos") -> None:
    """A probe result in the cache beside the tiny ELMo, as ``run_probe`` would leave it (values made up)."""
    import ctxmodels
    from ctxmodels.analysis import probes

    model = ctxmodels.load(str(tiny_assets / "elmo-eltec"))
    fp = probes.model_fingerprint(model)
    result = probes.ProbeResult(
        task=task, model=model.name, layer_names=model.layer_names, labels=["NOUN", "VERB"],
        mix_weights=[0.2, 0.5, 0.3], gamma=1.1, mix_accuracy=0.8, layer_accuracies=[0.6, 0.75, 0.7],
        baseline_accuracy=0.4, n_train=80, n_test=20, n_sentences=30, settings={"epochs": 2, "seed": 0},
        seconds={"embed": 1.0, "train": 1.0}, model_fingerprint=fp)
    path = probes.cache_paths(model, task, fp)[0]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"version": 1, "entries": {"k": result.to_dict()}}), encoding="utf-8")


def test_elmo_layers_shows_cached_probe_results(tiny_assets):
    write_probe_cache(tiny_assets)
    try:
        at = page("elmo_layers")
        assert_clean(at)
        bars_ = [t for spec in charts(at) for t in spec["data"] if t.get("type") == "bar"]
        assert len(bars_) == 1 and list(bars_[0]["y"]) == [0.2, 0.5, 0.3]
        assert any("No word sense probe" in i for i in texts(at.info))
        assert any("γ" in spec["layout"]["title"]["text"] for spec in charts(at))
    finally:
        for p in (tiny_assets / "elmo-eltec" / "probes").glob("*"):
            p.unlink()


def test_word_senses_offers_elmos_scalar_mix_when_a_sense_probe_exists(tiny_assets):
    write_probe_cache(tiny_assets, "wsd")
    try:
        at = page("word_senses", projection="pca", models="elmo-eltec", layer="mix:elmo-eltec")
        assert_clean(at)
        slider = at.select_slider(key="layer::elmo-eltec")
        assert slider.value == "mix" and slider.options[-1] == "scalar mix (word-sense probe)"
        assert any("scalar mix" in spec["layout"]["title"]["text"] for spec in charts(at))
        assert any("γ = 1.10" in c for c in texts(at.caption))
    finally:
        for p in (tiny_assets / "elmo-eltec" / "probes").glob("*"):
            p.unlink()


@pytest.mark.slow
def test_elmo_layers_runs_a_probe_with_progress(semcor_data, monkeypatch):
    monkeypatch.setenv("CTXMODELS_DATA", str(semcor_data))  # the shipped SemCor: the tiny assets hold none
    at = page("elmo_layers")
    at.number_input(key="probe_sentences").set_value(20)
    at.number_input(key="probe_epochs").set_value(1)
    at.checkbox(key="probe_again").check()
    at.get("form_submit_button")[0].click()
    at.run()
    assert_clean(at)
    assert [t for spec in charts(at) for t in spec["data"] if t.get("type") == "bar"]


# -- models ---------------------------------------------------------------------------------------------------------


def test_models_page_lists_models_and_keeps_paths_off():
    at = page("models")
    assert_clean(at)
    listed = at.dataframe[0].value
    assert {"bert-eltec", "elmo-eltec", "static-eltec"} <= set(listed["model"])
    # where each came from, not the server's absolute paths
    assert "path" not in listed.columns
    assert set(listed.set_index("model").loc[["bert-eltec", "elmo-eltec", "static-eltec"], "from"]) == {"shipped"}
    assert any("Loading from a server path is off" in i for i in texts(at.info))
    assert any("Training from the app is off" in i for i in texts(at.info))
    assert not [b for b in at.get("form_submit_button") if b.label == "Start training"]


def test_models_page_loads_a_path_when_allowed(tiny_assets, tmp_path, monkeypatch):
    monkeypatch.setenv("CTXMODELS_ALLOW_PATHS", "1")
    mine = shutil.copytree(tiny_assets / "bert-no-mlm", tmp_path / "mine")
    at = page("models")
    at.text_input[0].set_value(str(mine))
    at.get("form_submit_button")[0].click()
    at.run()
    assert not at.exception
    assert any("now selectable" in s for s in texts(at.success))
    at.run()  # the next run lists it by the path it came from
    listed = at.dataframe[0].value.set_index("model")
    assert listed.loc["mine", "from"] == f"path {mine}"
    at.text_input[0].set_value("/no/such/model")
    at.get("form_submit_button")[0].click()
    at.run()
    assert not at.exception and any("cannot find a model" in e for e in texts(at.error))


def test_a_shipped_model_loaded_again_by_its_folder_or_name_is_not_listed_twice(tiny_assets, monkeypatch):
    monkeypatch.setenv("CTXMODELS_ALLOW_PATHS", "1")
    at = page("models")
    before = list(at.dataframe[0].value["model"])
    for source in (str(tiny_assets / "bert-eltec"), str(tiny_assets / "bert-eltec" / "config.json"), "bert-eltec"):
        at.text_input[0].set_value(source)
        at.get("form_submit_button")[0].click()
        at.run()
        assert_clean(at)
        assert any("That is **bert-eltec**, already selectable" in i for i in texts(at.info)), source
        assert not at.success
    at.run()
    assert list(at.dataframe[0].value["model"]) == before


def test_a_server_path_is_shown_by_where_it_came_from(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    assert home_short(tmp_path / "models" / "mine") == "~/models/mine" and home_short(tmp_path) == "~"
    assert home_short("/srv/models/mine") == "/srv/models/mine"
    found = [{"path": str(tmp_path / "assets" / "elmo-eltec"), "source": "shipped"}]
    assert source_of(tmp_path / "assets" / "." / "elmo-eltec", found) == "shipped"
    assert source_of(tmp_path / "runs" / "mine", found) == "path ~/runs/mine"


@pytest.mark.slow
def test_models_page_trains_a_model_that_becomes_selectable(tmp_path, monkeypatch):
    monkeypatch.setenv("CTXMODELS_ALLOW_TRAINING", "1")
    at = page("models")
    at.selectbox(key="train_kind").set_value("static")
    at.number_input(key="train_steps").set_value(20)
    next(b for b in at.get("form_submit_button") if b.label == "Start training").click()
    at.run()
    assert_clean(at)
    deadline = time.time() + 240
    while time.time() < deadline and not at.success:
        time.sleep(2)
        at.run()
    assert_clean(at)
    assert any("now selectable" in s for s in texts(at.success)), texts(at.markdown)[-3:]
    assert charts(at), "no loss chart"
    trained = next(i for i in registry().extra() if Path(i).parent == tmp_path / "runs")
    at = page("word_senses", projection="pca")
    assert Path(trained).name in at.multiselect(key="models").options  # options are shown by their label


# -- presentation mode and pieces -----------------------------------------------------------------------------------


def test_presentation_mode_from_the_url():
    at = page("fill_in", present="1")
    assert_clean(at)
    assert any("stSidebar" in m.value for m in at.markdown)
    assert not at.sidebar.toggle


def test_settings_from_environment_and_arguments(monkeypatch):
    monkeypatch.setenv("CTXMODELS_APP_MODELS", "/a, /b")
    monkeypatch.setenv("CTXMODELS_ALLOW_UPLOADS", "1")
    s = settings(["--models", "/c", "/a", "--allow-paths"])
    assert s.models == ["/a", "/b", "/c"] and s.allow_paths and s.allow_uploads
    assert not settings([]).allow_paths


def test_own_sentence_limits():
    with pytest.raises(ValueError, match="no sentences"):
        inputs.own_sentences("  \n ")
    with pytest.raises(ValueError, match="at most"):
        inputs.own_sentences("word " * (inputs.MAX_WORDS_PER_SENTENCE + 1))
    with pytest.raises(ValueError, match="more than"):
        inputs.own_sentences("bank\n" * (inputs.MAX_SENTENCES + 1))
    assert inputs.own_sentences("a bank | money\n\nthe bank") == ["a bank | money", "the bank"]


def test_training_command_and_metrics_reader(tmp_path):
    cmd = training.train_command("bert", tmp_path / "c.txt", tmp_path / "out", 100)
    assert cmd[1:5] == ["-m", "ctxmodels.cli", "train", "bert"] and "--steps" in cmd
    with pytest.raises(ValueError):
        training.train_command("gpt", tmp_path / "c.txt", tmp_path / "out", 100)
    with pytest.raises(ValueError):
        training.train_command("bert", tmp_path / "c.txt", tmp_path / "out", training.MAX_STEPS + 1)
    m = tmp_path / "metrics.jsonl"
    m.write_text('{"step": 5, "loss": 2.0}\n{"step": 10, "lo', encoding="utf-8")  # being written
    assert training.read_metrics(m) == [{"step": 5, "loss": 2.0}]
    with pytest.raises(ValueError, match="empty"):
        training.check_corpus("   ")
    with pytest.raises(ValueError, match="only 3 words"):
        training.check_corpus("a b c")


@pytest.mark.slow
def test_training_job_runs_one_at_a_time_and_cancels_with_a_checkpoint(tiny_assets, tmp_path):
    runner = training.JobRunner()
    job = runner.start("static", tiny_assets / "corpus.txt", tmp_path / "run", training.MAX_STEPS)
    try:
        with pytest.raises(ValueError, match="already running"):
            runner.start("static", tiny_assets / "corpus.txt", tmp_path / "other", 10)
        deadline = time.time() + 180
        while job.step() == 0 and job.running and time.time() < deadline:
            time.sleep(0.5)
        assert job.running, job.log_tail()
        job.cancel()
        job.proc.wait(timeout=120)
        assert job.status == "cancelled", job.log_tail()
        assert job.has_model() and job.step() < training.MAX_STEPS
        import ctxmodels

        assert ctxmodels.load(str(job.out)).kind == "static"  # what it learned so far is usable
    finally:
        runner.stop()


def test_warnings_reach_the_visitor_who_caused_them():
    """Two visitors' scripts run in two threads at once: each page shows only its own warnings."""
    import threading
    import warnings

    barrier = threading.Barrier(2)
    got: dict[str, list[str]] = {}

    def visitor(name: str) -> None:
        with caught_warnings() as caught:
            for i in range(3):
                barrier.wait()  # both threads warn in lockstep, interleaved
                warnings.warn(f"{name} {i}", UserWarning, stacklevel=1)
        got[name] = [str(m) for m, _ in caught]

    threads = [threading.Thread(target=visitor, args=(n,)) for n in ("alice", "bob")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == {"alice": ["alice 0", "alice 1", "alice 2"], "bob": ["bob 0", "bob 1", "bob 2"]}
