"""The How they learn page through AppTest, on the tiny random-weight models (tests/app_fixtures.py): BERT's
corruption draw reproduced from the link's seed, a new draw, whole words; a left-to-right model beside a both-ways
one, with and without a GPT; training curves; and bad input answered with a message, never a traceback."""

from __future__ import annotations

import numpy as np
import pytest

from app.kit.inputs import md
from tests import test_objectives
from tests.app_fixtures import assert_clean, charts, figure_array, open_explanation, page, texts, with_successors

pytest.importorskip("streamlit.testing.v1")

pytestmark = pytest.mark.usefixtures("app_env")
tiny_gpt = test_objectives.tiny_gpt  # a GPT trained for two steps by `ctxmodels train gpt` (a fixture)


def titles(at) -> list[str]:
    return [c["layout"].get("title", {}).get("text", "").replace("<br>", " ") for c in charts(at)]


def strip_texts(at) -> list[str]:
    return [a["text"] for a in charts(at)[0]["layout"]["annotations"]]


def with_gpt(monkeypatch, gpt) -> None:
    monkeypatch.setenv("CTXMODELS_APP_MODELS", str(gpt))


def test_the_page_opens_on_the_draw_and_the_models_guesses():
    at = page("how_they_learn")
    assert_clean(at)
    assert titles(at) == ["What bert-eltec reads after the draw (seed 0)", "The model's probability of the original "
                          "piece: as training hides it, and with nothing hidden"]
    assert any("pieces were chosen" in c and "nats" in c for c in texts(at.caption))
    assert at.query_params["learn_seed"] == "0" and at.query_params["learn_part"] == "corruption"
    bars = charts(at)[1]["data"]
    assert [b["name"] for b in bars] == ["as the draw left it (training)", "nothing hidden (as after fine-tuning)"]


def test_the_links_seed_gives_the_same_draw_and_another_seed_another():
    text = "The children were whispering excitedly about the extraordinary adventures of their grandfather."
    a, b = page("how_they_learn", learn_text=text, learn_seed="42"), page("how_they_learn", learn_text=text,
                                                                          learn_seed="42")
    assert_clean(a)
    assert strip_texts(a) == strip_texts(b) and charts(a)[1] == charts(b)[1]
    draws = {tuple(strip_texts(page("how_they_learn", learn_text=text, learn_seed=str(s)))) for s in (42, 43, 44)}
    assert len(draws) > 1


def test_new_draw_picks_a_new_seed_and_puts_it_in_the_link():
    at = page("how_they_learn")
    at = next(b for b in at.button if b.label == "New draw").click().run()
    assert_clean(at)
    seed = at.session_state["learn_seed"]
    assert at.query_params["learn_seed"] == str(seed) and seed != 0
    assert titles(at)[0] == f"What bert-eltec reads after the draw (seed {seed})"


def test_whole_word_masking_is_a_switch_in_the_link():
    at = page("how_they_learn", learn_wwm="1", learn_text="The bankers were banking on the riverside cafe.")
    assert_clean(at)
    assert at.toggle(key="learn_wwm").value is True and at.query_params["learn_wwm"] == "1"


@pytest.mark.parametrize("text, said", [("", "empty"), (" ".join(["word"] * 61), "at most 60"),
                                        ("The bank\x00 of the river.", "control character")])
def test_a_bad_sentence_gets_one_clear_line(text, said):
    at = page("how_they_learn", learn_text=text)
    assert not at.exception, texts(at.exception)
    assert any(said in e for e in texts(at.error)), texts(at.error)
    assert not charts(at)


def test_bad_link_values_are_reported_and_replaced():
    at = page("how_they_learn", learn_seed="lots", learn_part="everything", learn_bert="no-such-model")
    assert not at.exception and not at.error
    warned = " ".join(texts(at.warning))
    assert all(f"**{md(param)}**" in warned for param in ("learn_seed", "learn_part", "learn_bert"))
    assert titles(at)[0] == "What bert-eltec reads after the draw (seed 0)"


def test_without_a_gpt_the_page_says_so_in_one_line_with_the_command():
    at = page("how_they_learn", learn_part="directions")
    assert_clean(at)
    assert any("ctxmodels train gpt" in i for i in texts(at.info))
    masks, guesses, pair = charts(at)
    assert [t["type"] for t in masks["data"]] == ["heatmap", "heatmap"]
    assert "any GPT: left to right" in str(masks["layout"]["annotations"])
    assert [t["name"].split(":")[0] for t in guesses["data"]] == ["bert-eltec"]
    assert "sentence A and in sentence B" in pair["layout"]["title"]["text"]


def test_with_a_gpt_its_mask_is_a_triangle_and_its_two_banks_are_one(monkeypatch, tiny_gpt):
    with_gpt(monkeypatch, tiny_gpt)
    at = page("how_they_learn", learn_part="directions")
    assert_clean(at)
    assert not any("ctxmodels train gpt" in i for i in texts(at.info))
    masks, guesses, pair = charts(at)
    z = figure_array(masks["data"][0]["z"])
    assert z.shape[0] == z.shape[1] and (z == np.tril(np.ones_like(z))).all()
    assert {t["name"].split(":")[0] for t in guesses["data"]} == {"gpt-tiny", "bert-eltec"}
    assert any("are the same in every layer" in c for c in texts(at.caption))


def test_a_shipped_gpt_among_the_successors_is_on_the_page_without_the_operator(monkeypatch, tiny_assets, tiny_gpt,
                                                                                 tmp_path):
    (with_successors(monkeypatch, tiny_assets, tmp_path) / "gpt-eltec").symlink_to(tiny_gpt)
    at = page("how_they_learn", learn_part="directions")
    assert_clean(at)
    assert not any("ctxmodels train gpt" in i for i in texts(at.info))
    assert {t["name"].split(":")[0] for t in charts(at)[1]["data"]} == {"gpt-eltec", "bert-eltec"}


def test_training_curves_show_each_part_of_the_loss(monkeypatch, tiny_gpt):
    at = page("how_they_learn", learn_part="curves")
    assert_clean(at)
    assert any("record of its training" in i for i in texts(at.info))  # the tiny models have none
    with_gpt(monkeypatch, tiny_gpt)
    at = page("how_they_learn", learn_part="curves")
    assert_clean(at)
    (fig,) = charts(at)
    assert "next word" in [t["name"] for t in fig["data"]]


def test_a_word_not_in_both_sentences_is_an_error_not_a_traceback():
    at = page("how_they_learn", learn_part="directions", learn_word="zebra")
    assert not at.exception
    assert any("zebra" in e for e in texts(at.error)), texts(at.error)


def test_presentation_mode_and_the_explanation_with_its_formulas():
    at = page("how_they_learn", present="1")
    assert_clean(at)
    assert charts(at)[0]["layout"]["font"]["size"] == 17
    at = open_explanation(page("how_they_learn"))
    assert_clean(at)
    box = next(e for e in at.expander if e.label == "What am I looking at?")
    assert len(box.latex) == 4 and box.caption  # masked LM, NSP, left to right, ELECTRA


@pytest.mark.parametrize("part", ["directions", "electra", "pairs", "curves", "compute"])
def test_no_part_shows_an_internal_name(monkeypatch, tiny_gpt, tiny_electra, part):
    from tests.test_app_words import internal_names, visible_text

    monkeypatch.setenv("CTXMODELS_APP_MODELS", f"{tiny_gpt},{tiny_electra}")
    at = open_explanation(page("how_they_learn", learn_part=part, learn_measure="1"))
    assert_clean(at)
    found = {t[:80]: internal_names(t) for t in visible_text(at) if internal_names(t)}
    assert not found, "\n".join(f"{k!r}: {v}" for k, v in found.items())


@pytest.fixture(scope="module")
def tiny_electra(tmp_path_factory):
    """An ELECTRA in the layout ``ctxmodels train electra`` writes: the discriminator (ElectraForPreTraining) in the
    folder, the generator (ElectraForMaskedLM) in generator/, random tiny weights."""
    from tests import hf_tiny

    root = tmp_path_factory.mktemp("electra") / "electra-tiny"
    hf_tiny.build("electra-discriminator", root)
    hf_tiny.build("electra-generator", root / "generator")
    return root


def test_electra_without_one_says_so_with_the_command():
    at = page("how_they_learn", learn_part="electra")
    assert_clean(at)
    assert any("ctxmodels train electra" in i for i in texts(at.info)) and not charts(at)


def test_electra_colours_every_piece_by_the_discriminators_probability(monkeypatch, tiny_electra):
    monkeypatch.setenv("CTXMODELS_APP_MODELS", str(tiny_electra))
    text = "The old bank by the river was steep and muddy."
    at = page("how_they_learn", learn_part="electra", learn_text=text, learn_seed="1")
    assert_clean(at)
    (fig,) = charts(at)
    assert "discriminator reads" in fig["layout"]["title"]["text"]
    scale = fig["data"][0]["marker"]
    assert scale["showscale"] and scale["cmin"] == 0 and scale["cmax"] == 1
    assert len(fig["layout"]["shapes"]) == len(figure_array(scale["color"]))  # a box and a probability per piece
    assert any("Every one of the" in c and "15%" in c for c in texts(at.caption))
    again = page("how_they_learn", learn_part="electra", learn_text=text, learn_seed="1")
    assert charts(again)[0]["layout"]["annotations"] == fig["layout"]["annotations"]  # the seed fixes the samples


tiny_albert = test_objectives.tiny_albert  # an ALBERT with its sentence-order head (a fixture)


def test_nsp_alone_gives_its_answer_for_the_typed_pair_and_says_how_to_get_sop():
    at = page("how_they_learn", learn_part="pairs")
    assert_clean(at)
    (fig,) = charts(at)
    assert [t["name"] for t in fig["data"]] == ["bert-eltec: next sentence (NSP)"]
    assert list(fig["data"][0]["x"]) == ["B follows A", "B and A swapped", "B from another book"]
    assert any("ctxmodels train albert" in i for i in texts(at.info))
    assert at.query_params["learn_measure"] == "0"


def test_the_held_out_measure_with_nsp_and_sop(monkeypatch, tiny_assets, tiny_albert, tmp_path):
    import shutil

    bert = test_objectives.with_run_settings(shutil.copytree(tiny_assets / "bert-eltec", tmp_path / "bert-run"),
                                             tiny_assets / "corpus.txt", heldout_docs=2)
    albert = test_objectives.with_run_settings(tiny_albert, tiny_assets / "corpus.txt", heldout_docs=2)
    monkeypatch.setenv("CTXMODELS_APP_MODELS", f"{bert},{albert}")
    at = page("how_they_learn", learn_part="pairs", learn_measure="1", learn_n="20")
    assert_clean(at)
    typed, measured = charts(at)
    names = {t["name"] for t in measured["data"]}
    assert {"bert-run: next sentence (NSP)", "albert-tiny: sentence order (SOP)"} <= names
    assert not any("ctxmodels train albert" in i for i in texts(at.info))
    said = " ".join(texts(at.caption))
    assert "documents of corpus.txt that its training held out" in said and "20 pairs of each kind" in said
    # bert-eltec of the tiny assets has no record of its training: said in a line, the others measured
    assert any("Not measured: bert" in i and "no record of the text" in i for i in texts(at.info))


def test_a_bad_pair_sentence_is_an_error_not_a_traceback():
    at = page("how_they_learn", learn_part="pairs", learn_pb="")
    assert not at.exception
    assert any("sentence B" in e and "empty" in e for e in texts(at.error)), texts(at.error)


# -- per unit of compute -----------------------------------------------------------------------------------------


def with_comparison(monkeypatch, tiny_assets, tmp_path, text: str) -> None:
    """The tiny models, with ``text`` as the comparison beside the successors (successors/compute.json)."""
    (with_successors(monkeypatch, tiny_assets, tmp_path) / "compute.json").write_text(text, encoding="utf-8")


def test_without_the_comparison_the_page_says_how_to_make_it():
    at = page("how_they_learn", learn_part="compute")
    assert_clean(at)
    assert any("compute.json" in i and "bench/bench_objectives.py" in i for i in texts(at.info)) and not charts(at)


def test_each_measure_against_compute_with_the_unmeasured_said(monkeypatch, tiny_assets, tmp_path):
    import json

    from ctxmodels.analysis.compute_comparison import from_results
    from tests.test_compute_comparison import RESULTS

    with_comparison(monkeypatch, tiny_assets, tmp_path, json.dumps(from_results(RESULTS)))
    at = page("how_they_learn", learn_part="compute")
    assert_clean(at)
    assert at.query_params["learn_metric"] == "guesses"
    (fig,) = charts(at)
    assert [t["name"] for t in fig["data"]] == ["BERT (masked words + next sentence)", "GPT (next word, left to right)"]
    said = " ".join(texts(at.caption))
    assert "GPT 20.0%, BERT 15.0%" in said and RESULTS["command"] in said and "Not measured" not in said
    assert any("unigram plateau" in m for m in texts(at.markdown))
    at = page("how_they_learn", learn_part="compute", learn_metric="pos")
    assert_clean(at)
    (fig,) = charts(at)
    assert fig["data"][1]["name"] == "GPT (next word, left to right): not measured"
    assert any("Not measured: GPT" in c and "30 steps" in c for c in texts(at.caption))
    assert at.radio(key="learn_metric").value == "pos"


def test_the_shipped_comparison_shows_on_a_fresh_install(monkeypatch, tiny_assets, tmp_path):
    import json

    from tests.app_fixtures import ROOT

    shipped = (ROOT / "assets" / "successors" / "compute.json").read_text(encoding="utf-8")
    with_comparison(monkeypatch, tiny_assets, tmp_path, shipped)
    monkeypatch.delenv("CTXMODELS_DATA", raising=False)
    at = page("how_they_learn", learn_part="compute", learn_metric="senses", present="1")
    assert_clean(at)
    (fig,) = charts(at)
    # a line per objective, from its untrained start (compute 0) through a quarter, half and all of the budget
    assert len(fig["data"]) == 5 and all(len(t["x"]) == 4 and t["x"][0] == 0 for t in fig["data"])
    bert = sorted((r for r in json.loads(shipped)["rows"] if r["kind"] == "bert"), key=lambda r: r["tflop"])
    said = " ".join(texts(at.caption))
    assert f"BERT {bert[-1]['senses']:.1%} (from {bert[0]['senses']:.1%})" in said, said
    assert fig["layout"]["font"]["size"] == 17  # presentation mode
    from tests.test_app_words import internal_names, visible_text

    found = {t[:80]: internal_names(t) for t in visible_text(open_explanation(at)) if internal_names(t)}
    assert not found, found


def test_a_damaged_comparison_is_an_error_not_a_traceback(monkeypatch, tiny_assets, tmp_path):
    with_comparison(monkeypatch, tiny_assets, tmp_path, '{"rows": [{"kind": "bert", "step": 1, "tflop": 1, '
                                                        '"pos": 75}]}')
    at = page("how_they_learn", learn_part="compute", learn_metric="nonsense")
    assert not at.exception
    assert any("pos is not a share" in e for e in texts(at.error)), texts(at.error)


def test_a_part_loads_only_the_models_it_shows(monkeypatch, tiny_gpt, tiny_electra):
    import ctxmodels
    from app.kit.registry import label
    from tests.app_fixtures import forget_app_state

    monkeypatch.setenv("CTXMODELS_APP_MODELS", f"{tiny_gpt},{tiny_electra}")
    loaded, load = [], ctxmodels.load
    monkeypatch.setattr(ctxmodels, "load", lambda name, *a, **k: loaded.append(label(str(name))) or load(name, *a, **k))
    forget_app_state()  # a first visit: no model loaded yet
    assert_clean(page("how_they_learn"))
    assert loaded == ["bert-eltec"]  # not the GPT, the ELECTRA, the encoder without a head, ELMo or the vectors
    loaded.clear()
    assert_clean(page("how_they_learn", learn_part="electra"))
    assert loaded == ["electra-tiny", "generator"]
    loaded.clear()
    assert_clean(page("how_they_learn", learn_part="compute"))
    assert loaded == []


def test_a_gpt_finetuned_for_a_task_is_not_offered_as_a_language_model(tiny_gpt, tmp_path):
    from app.views.how_they_learn import compute
    from tests.app_fixtures import finetune_tiny, write_tag_task

    tagger = finetune_tiny(tiny_gpt, write_tag_task(tmp_path / "tags.conll"), tmp_path / "gpt-tags", steps=1)
    assert compute.left_to_right([str(tiny_gpt), str(tagger)]) == [str(tiny_gpt)]
