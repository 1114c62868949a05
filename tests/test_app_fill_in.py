"""The Fill in the blank page through AppTest (issue 15): an axis that fits the probabilities, only whole words as
guesses (default on), blanks written ``[mask]`` or ``<mask>``, hiding a word as a plain choice that a link
reproduces, and every URL parameter checked.

The pages run on tiny random-weight models (tests/app_fixtures.py); their vocabulary has ``##`` pieces and
punctuation, and their guesses include them when the filter is off.
"""

from __future__ import annotations

import math

import pytest

from app.kit.inputs import md
from ctxmodels.analysis.blanks import rank_agreement
from ctxmodels.analysis.fill_in import (
    fill_mask,
    guess_attributions,
    guess_effects,
    guesses_by_layer,
    hidden_by_layer,
    is_whole_word,
    mask_word,
    word_attributions,
    word_effects,
)
from tests.app_fixtures import assert_clean, charts, page, script, texts

pytest.importorskip("streamlit.testing.v1")

pytestmark = pytest.mark.usefixtures("app_env")

RIVER = "The boat drifted towards the bank of the river."


def bar_traces(at) -> list[dict]:
    return [t for spec in charts(at) for t in spec["data"] if t.get("type") == "bar"]


def guesses(at) -> list[str]:
    return [tok for t in bar_traces(at) for tok in t["y"]]


def type_sentence(at, text: str) -> None:
    """What the browser's keystroke box (st_keyup) reports to the server as a person types."""
    at.session_state["_st_keyup_text_live"] = {"value": text}
    at.run()


def warned(at, param: str) -> bool:
    return any(f"**{md(param)}**" in w for w in texts(at.warning))


# -- the axis ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("present", ["0", "1"])
def test_the_axis_fits_the_probabilities_with_values_at_the_bar_ends(present):
    at = page("fill_in", text="The [MASK] was by the [MASK].", k="7", present=present)
    assert_clean(at)
    specs = charts(at)
    assert len(specs) == 2
    for spec in specs:
        bars, layout = spec["data"][0], spec["layout"]
        top = max(bars["x"])
        lo, hi = layout["xaxis"]["range"]
        assert lo == 0 and top < hi <= top * 1.25, (top, hi)  # a little above the largest, not a fixed 0-1
        assert hi < 1  # random weights: every guess is far from certain, so 0-1 would draw slivers
        assert bars["textposition"] == "outside" and bars["cliponaxis"] is False
        assert len(bars["text"]) == 7 and all(t.endswith("%") for t in bars["text"])
        assert layout["yaxis"]["automargin"] is True and layout["margin"]["r"] >= 60  # room for the values
        if present == "1":
            assert layout["font"]["size"] == 17
        # only the template's colour cycle travels (a light message for every keystroke)
        assert set(layout["template"]) <= {"layout"} and set(layout["template"].get("layout", {})) <= {"colorway"}


# -- whole words -------------------------------------------------------------------------------------------------


def test_only_whole_words_by_default_and_in_the_link():
    at = page("fill_in", text="The [MASK] was by the [MASK].", k="20")
    assert_clean(at)
    assert at.checkbox(key="whole_words").value is True
    shown = guesses(at)
    assert len(shown) == 40 and all(is_whole_word(t) for t in shown), shown
    at.checkbox(key="whole_words").uncheck().run()
    assert_clean(at)
    shown = guesses(at)
    assert len(shown) == 40 and any(not is_whole_word(t) for t in shown), "the tiny model guesses ## pieces too"
    assert at.query_params["whole_words"] == "0"
    at = page("fill_in", text="The [MASK] was by the [MASK].", k="20", whole_words="0")
    assert at.checkbox(key="whole_words").value is False and any(not is_whole_word(t) for t in guesses(at))


# -- blanks as written ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["The [mask] was by the <mask>.", "The [Mask] was by the <MASK>.",
                                  "The [MASK] was by the [mask]."])
def test_mask_and_roberta_mask_are_read_as_blanks(text):
    at = page("fill_in", text=text)
    assert_clean(at)
    assert len(bar_traces(at)) == 2
    assert not any("no `[MASK]`" in i for i in texts(at.info))
    assert at.query_params["text"] == text  # the link keeps the sentence as written


def test_typed_lowercase_mask_is_filled_in():
    at = page("fill_in", text="The boat drifted.")
    assert not bar_traces(at)
    type_sentence(at, "The boat drifted towards the <mask>.")
    assert_clean(at)
    assert len(bar_traces(at)) == 1


# -- hide a word ------------------------------------------------------------------------------------------------------


def test_a_sentence_without_blank_is_an_explained_choice_not_a_warning():
    at = page("fill_in", text=RIVER)
    assert_clean(at)
    assert not at.warning
    assert any("no `[MASK]`" in i for i in texts(at.info))
    assert at.radio(key="fill_mode").value == "masks"
    assert "a word I hide" in at.radio(key="fill_mode").options


def test_the_word_to_hide_from_a_link_is_hidden_and_scored(tiny_assets):
    at = page("fill_in", text=RIVER, blank="the (2)")  # a link that names a word opens in that mode
    assert_clean(at)
    assert at.radio(key="fill_mode").value == "word"
    assert at.selectbox(key="blank").value == "the (2)"
    assert [m.label for m in at.metric][:2] == ["P(the)", "rank"]
    import ctxmodels

    bert = ctxmodels.load(str(tiny_assets / "bert-eltec"))
    second = mask_word(bert.model, bert.tokenizer, RIVER, "the", occurrence=1)
    assert at.metric[0].value == f"{second.prob:.2%}" and at.metric[1].value == f"{second.rank:,}"
    assert at.query_params["blank"] == "the (2)" and at.query_params["fill_mode"] == "word"
    # the word's guesses: whole words, the hidden word highlighted if among them
    assert bar_traces(at) and all(is_whole_word(t) for t in guesses(at))


def test_the_word_to_hide_keeps_its_value_when_not_drawn():
    at = page("fill_in", text=RIVER, fill_mode="word", blank="bank")
    assert at.selectbox(key="blank").value == "bank"
    at.radio(key="fill_mode").set_value("masks").run()
    assert not at.get("selectbox")  # not drawn in this mode
    at.radio(key="fill_mode").set_value("word").run()
    assert_clean(at)
    assert at.selectbox(key="blank").value == "bank" and at.metric[0].label == "P(bank)"
    at.switch_page(script("models")).run()
    at.switch_page(script("fill_in")).run()
    assert at.radio(key="fill_mode").value == "word" and at.selectbox(key="blank").value == "bank"


def test_an_edit_that_removes_the_hidden_word_asks_for_another():
    at = page("fill_in", text=RIVER, fill_mode="word", blank="bank")
    type_sentence(at, "The boat drifted towards the shore of the river.")
    assert_clean(at)
    assert at.selectbox(key="blank").value is None
    assert any("Pick a word" in i for i in texts(at.info)) and not at.metric


# -- which words an answer rests on ---------------------------------------------------------------------------


def effect_charts(at) -> list[dict]:
    return [spec for spec in charts(at) if "rests on" in spec["layout"]["title"]["text"]]


def tiny_bert(tiny_assets):
    import ctxmodels

    return ctxmodels.load(str(tiny_assets / "bert-eltec"))


def test_which_words_the_first_guess_rests_on(tiny_assets):
    text = "The boat drifted towards the [MASK] of the river."
    at = page("fill_in", text=text)
    assert_clean(at)
    assert at.toggle(key="why").value is False and not effect_charts(at)  # off by default: one run per word
    at.toggle(key="why").set_value(True).run()
    assert_clean(at)
    bert = tiny_bert(tiny_assets)
    expected = guess_effects(bert, None, text)
    first = fill_mask(bert, None, text, top_k=1, whole_words=True)[0][0]["token"]
    [spec] = effect_charts(at)
    assert expected.answer == first and spec["layout"]["title"]["text"] == f"what “{first}” rests on"
    bars = spec["data"][0]
    assert bars["x"][5] is None  # the blank is not hidden
    shown = [b for i, b in enumerate(bars["x"]) if i != 5]
    assert shown == pytest.approx([math.log2(p / expected.prob) for p in expected.hidden_probs if p is not None])
    assert len(charts(at)) == 2 and at.query_params["why"] == "1"  # the guesses' bars stay
    at = page("fill_in", text=text, why="1")  # the link opens with it
    assert_clean(at)
    assert len(effect_charts(at)) == 1


def test_the_guesses_layer_by_layer(tiny_assets):
    """Off by default; on, each blank gets under its bars a grid of the head's guesses in every layer (the model's
    answer outlined, its rank per layer at the row's end) and a line with the ranks; it is in the link; with a
    word hidden, the grid follows the rank of that word."""
    text = "The [MASK] drifted towards the [MASK] of the river."
    at = page("fill_in", text=text)
    assert_clean(at)
    assert at.toggle(key="lens").value is False
    at.toggle(key="lens").set_value(True).run()
    assert_clean(at)
    grids = [c for c in charts(at) if c["data"][0]["type"] == "heatmap"]
    assert len(grids) == 2 and at.query_params["lens"] == "1"  # one per blank
    bert = tiny_bert(tiny_assets)
    for blank, grid in enumerate(grids):
        expected = guesses_by_layer(bert, None, text, blank=blank, top_k=5)
        assert list(grid["data"][0]["y"]) == ["emb.", "1", "2"]
        assert [a["text"] for a in grid["layout"]["annotations"]] == [f"#{r:,}" for r in expected.answer_ranks]
        assert grid["data"][0]["text"][-1][0].startswith(expected.answer)
    lines = [c for c in texts(at.caption) if "from the first layer to the last" in c]
    assert len(lines) == 2
    at = page("fill_in", text=RIVER, fill_mode="word", blank="river", lens="1")
    assert_clean(at)
    [grid] = [c for c in charts(at) if c["data"][0]["type"] == "heatmap"]
    expected = hidden_by_layer(bert, None, RIVER, "river")
    assert expected.answer == "river"
    assert [a["text"] for a in grid["layout"]["annotations"]] == [f"#{r:,}" for r in expected.answer_ranks]
    assert any("The hidden word “river” ranks" in c for c in texts(at.caption))


def test_a_typed_guess_is_explained_and_a_word_the_model_lacks_is_an_error_that_keeps_the_guesses(tiny_assets):
    text = "The boat drifted towards the [MASK] of the river."
    bert = tiny_bert(tiny_assets)
    third = fill_mask(bert, None, text, top_k=3, whole_words=True)[0][2]["token"]
    at = page("fill_in", text=text, why="1", why_guess=third)
    assert_clean(at)
    assert at.text_input(key="why_guess").value == third
    [spec] = effect_charts(at)
    assert spec["layout"]["title"]["text"] == f"what “{third}” rests on"
    at.text_input(key="why_guess").input("zebrafish").run()
    assert not at.exception
    assert any("not one piece of this model's vocabulary" in e for e in texts(at.error))
    assert not effect_charts(at) and len(charts(at)) == 1  # the guesses are still shown
    assert at.query_params["why_guess"] == "zebrafish"


def test_which_words_a_hidden_word_rests_on(tiny_assets):
    at = page("fill_in", text=RIVER, blank="bank", why="1")
    assert_clean(at)
    assert not at.get("text_input")  # no guess to type: the hidden word is what is explained
    [spec] = effect_charts(at)
    assert spec["layout"]["title"]["text"] == "what “bank” rests on"
    expected = word_effects(tiny_bert(tiny_assets), None, RIVER, "bank")
    hidden = spec["data"][0]["x"]
    assert [x is None for x in hidden] == [p is None for p in expected.hidden_probs]
    assert hidden[RIVER.split().index("bank")] is None


def test_which_words_an_answer_rests_on_by_integrated_gradients(tiny_assets):
    text = "The boat drifted towards the [MASK] of the river."
    at = page("fill_in", text=text, why="1")
    assert at.radio(key="why_by").value == "hiding"
    at.radio(key="why_by").set_value("gradients").run()
    assert_clean(at)
    bert = tiny_bert(tiny_assets)
    expected = guess_attributions(bert, None, text)
    [spec] = effect_charts(at)
    assert spec["layout"]["title"]["text"] == f"what “{expected.answer}” rests on (gradients)"
    bars = spec["data"][0]["x"]
    assert bars[5] is None  # the blank has no score
    assert [b for b in bars if b is not None] == pytest.approx(
        [-s / math.log(2) for s in expected.scores if s is not None], abs=1e-6)
    assert any("Together the scored words account for a factor of" in c for c in texts(at.caption))
    assert at.query_params["why_by"] == "gradients"
    # both ways: two bars per word in one chart, on one scale
    at.radio(key="why_by").set_value("both").run()
    assert_clean(at)
    [spec] = effect_charts(at)
    assert spec["layout"]["title"]["text"] == f"what “{expected.answer}” rests on (both ways)"
    assert [t["name"] for t in spec["data"]] == ["hiding the word", "its share (gradients)"]
    rho = rank_agreement(guess_effects(bert, None, text), expected)
    assert any(f"(Spearman ρ = {rho:.2f}, 1: the same order)" in c for c in texts(at.caption)), texts(at.caption)
    assert [b for b in spec["data"][1]["x"] if b is not None] == pytest.approx(
        [-s / math.log(2) for s in expected.scores if s is not None], abs=1e-6)
    # the link opens with it, for a hidden word too
    at = page("fill_in", text=RIVER, blank="bank", why="1", why_by="gradients")
    assert_clean(at)
    [spec] = effect_charts(at)
    hidden = word_attributions(bert, None, RIVER, "bank")
    assert spec["layout"]["title"]["text"] == "what “bank” rests on (gradients)"
    assert [x is None for x in spec["data"][0]["x"]] == [s is None for s in hidden.scores]


def test_a_text_too_long_to_explain_says_so_and_keeps_its_guesses():
    text = " ".join(["the river"] * 60) + " [MASK] 🙂."  # 122 words to hide, an emoji among them
    at = page("fill_in", text=text, why="1")
    assert not at.exception
    assert [e for e in texts(at.error) if "words to hide one at a time" in e and "shorten it" in e], texts(at.error)
    assert len(charts(at)) == 1 and not effect_charts(at)  # the guesses stay
    at = page("fill_in", text="The 🙂 boat reached the [MASK].", why="1", present="1")
    assert_clean(at)
    assert len(effect_charts(at)) == 1
    assert [e.label for e in at.expander if e.label.startswith("Controls")] == [
        "Controls: the blanks I write, 5 guesses, whole words, which words it rests on (hiding each word)"]


# -- the link is checked ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("param, value", [("blank", "zebra"), ("blank", "<b>x</b>"), ("fill_mode", "bogus"),
                                          ("whole_words", "maybe"), ("k", "99"), ("fill_models", "nope"),
                                          ("why", "maybe"), ("why_guess", "x" * 41), ("why_by", "saliency")])
def test_bad_values_in_the_link_are_warned_about(param, value):
    query = {"text": RIVER, param: value}
    if param == "blank":
        query["fill_mode"] = "word"
    if param == "why_by":
        query["why"] = "1"
    at = page("fill_in", **query)
    assert not at.exception
    assert warned(at, param), texts(at.warning)
    if param == "blank":
        assert at.selectbox(key="blank").value is None
    if param == "fill_mode":
        assert at.radio(key="fill_mode").value == "masks"
    if param == "whole_words":
        assert at.checkbox(key="whole_words").value is True
    if param == "k":
        assert at.slider(key="k").value == 20
    if param == "why":
        assert at.toggle(key="why").value is False
    if param == "why_by":
        assert at.radio(key="why_by").value == "hiding"


def test_a_blank_in_the_link_is_checked_against_the_sentence():
    at = page("fill_in", text=RIVER, fill_mode="word", blank="BANK")  # a word of the sentence, in any case
    assert_clean(at)
    assert not at.warning and at.selectbox(key="blank").value == "bank"


# -- presentation mode -------------------------------------------------------------------------------------------


def test_presentation_mode_folds_the_controls_but_not_the_sentence_or_the_word():
    at = page("fill_in", present="1", text=RIVER, blank="bank")
    assert_clean(at)
    box = [e for e in at.expander if e.label.startswith("Controls")]
    assert len(box) == 1 and not box[0].proto.expanded
    assert box[0].label == "Controls: a word I hide, 5 guesses, whole words"  # readable while folded
    assert [r.key for r in box[0].radio] == ["fill_mode"] and not box[0].selectbox  # the word to hide stays out
    assert at.selectbox(key="blank").value == "bank" and at.metric[0].label == "P(bank)"
    at = page("fill_in", text=RIVER)  # folded in normal mode too, the sentence box still out
    [box] = [e for e in at.expander if e.label.startswith("Controls")]
    assert not box.proto.expanded and box.label == "Controls: the blanks I write, 5 guesses, whole words"


# -- two sentences ---------------------------------------------------------------------------------------------


def change_charts(at) -> list[dict]:
    return [spec for spec in charts(at) if spec["layout"]["title"]["text"] == "from A to B: gained and lost"]


def test_a_second_sentence_shows_its_guesses_and_what_gained_and_lost(tiny_assets):
    from ctxmodels.analysis.fill_in import compare_blanks

    a, b = "The boat drifted towards the [MASK] of the river.", "The boat drifted towards the [MASK] of the sea."
    at = page("fill_in", text=a)
    assert_clean(at)
    assert not change_charts(at) and at.text_input(key="compare").value == ""
    at.text_input(key="compare").set_value(b).run()
    assert_clean(at)
    [spec] = change_charts(at)
    expected = compare_blanks(tiny_bert(tiny_assets), a, b, top_k=5, whole_words=True)
    assert list(spec["layout"]["yaxis"]["ticktext"]) == expected.words
    assert spec["data"][0]["x"] == pytest.approx([math.log2(q / p) for p, q in zip(expected.prob_a, expected.prob_b)])
    b_bars = [s for s in charts(at) if s["layout"]["title"]["text"] == "sentence B: [MASK]"]
    assert len(b_bars) == 1 and at.query_params["compare"] == b
    # a sentence B without one blank: one message, the first sentence's guesses stay
    at.text_input(key="compare").set_value("The boat drifted towards the sea.").run()
    assert not at.exception and not change_charts(at)
    (error,) = texts(at.error)  # said once, not once per model
    assert error.startswith("Sentence B:") and "sentence B has 0" in error
    assert guesses(at)
