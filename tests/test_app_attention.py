"""The Attention page through AppTest (issue 15): the detail's layer, head and line threshold in the link, checked
like every URL parameter; controls that keep their value while they are not drawn; BERT's next-sentence
probability for a pair. Tiny random-weight models (tests/app_fixtures.py)."""

from __future__ import annotations

import numpy as np
import pytest

import ctxmodels
from app.kit import inputs
from app.views.attention import figures as attention_figures
from ctxmodels.analysis import attention as att
from tests.app_fixtures import assert_clean, charts, figure_array, page, texts

pytest.importorskip("streamlit.testing.v1")

pytestmark = pytest.mark.usefixtures("app_env")

DEFAULT = "The bank raised its interest rates, so she moved her savings elsewhere."


def detail_charts(at) -> tuple[dict, dict | None]:
    """The detail heatmap and the line view (None when not drawn): the figures whose title names the layer."""
    found = [c for c in charts(at) if str(c["layout"].get("title", {}).get("text", "")).startswith(
        ("layer", "rollout"))]
    return found[0], (found[1] if len(found) > 1 else None)


def title(chart: dict) -> str:
    return chart["layout"]["title"]["text"]


def slider(at, key: str):
    return next((s for s in at.slider if s.key == key), None)


def param(at, name: str) -> str:
    """The link's value of ``name`` after a run (AppTest gives one value as a string, repeated ones as a list)."""
    value = at.query_params[name]
    return value[-1] if isinstance(value, list) else value


def warned(at, param: str) -> bool:
    return any(f"**{inputs.md(param)}**" in w for w in texts(at.warning))


def line_segments(chart: dict) -> int:
    """Segments drawn in the line view (each is x = 0, 1, gap)."""
    return sum(len(figure_array(t["x"])) // 3 for t in chart["data"] if t.get("mode") == "lines")


def test_layer_head_and_threshold_from_the_link_reproduce_the_detail_view(tiny_assets):
    # A visitor moves the detail's controls; the URL follows.
    at = page("attention", merge="0")
    assert_clean(at)
    opened = (slider(at, "att_layer").value, slider(at, "att_head").value)  # the previous-token head
    assert title(detail_charts(at)[0]) == "layer {}, head {}".format(*opened)
    at.slider(key="att_layer").set_value(2).run()
    at.slider(key="att_head").set_value(2).run()
    at.slider(key="att_threshold").set_value(0.2).run()
    assert_clean(at)
    heat, lines = detail_charts(at)
    assert title(heat) == "layer 2, head 2"
    assert param(at, "att_layer") == "2" and param(at, "att_head") == "2" and param(at, "att_threshold") == "0.2"

    # Their link, opened in a new session, shows the same head with the same lines, and nothing is warned about.
    link = {k: param(at, k) for k in at.query_params}
    again = page("attention", **link)
    assert_clean(again)
    assert not again.warning, texts(again.warning)
    heat2, lines2 = detail_charts(again)
    assert title(heat2) == "layer 2, head 2"
    assert np.array_equal(figure_array(heat2["data"][0]["z"]), figure_array(heat["data"][0]["z"]))
    assert lines2 == lines
    assert slider(again, "att_layer").value == 2 and slider(again, "att_head").value == 2
    assert slider(again, "att_threshold").value == pytest.approx(0.2)

    # And it is the model's layer 2, head 2, with the lines at or above 0.2.
    maps = att.compute_attention(ctxmodels.load(str(tiny_assets / "bert-eltec")), None, DEFAULT)
    assert np.allclose(figure_array(heat2["data"][0]["z"]), maps.attentions[1, 1], atol=1e-6)
    expected = attention_figures.attention_lines(maps.attentions[1, 1], maps.tokens, threshold=0.2)
    assert line_segments(lines2) == int((maps.attentions[1, 1] >= 0.2).sum())
    assert line_segments(lines2) == sum(len(t.x) // 3 for t in expected.data if t.mode == "lines")


def test_the_mean_and_the_rollout_read_the_layer_from_the_link():
    at = page("attention", view="mean", att_layer="2")
    assert_clean(at)
    assert title(detail_charts(at)[0]) == "layer 2, mean over heads"
    assert slider(at, "att_head") is None  # one head is not drawn for the mean
    at = page("attention", view="rollout", att_layer="2")
    assert title(detail_charts(at)[0]) == "rollout up to layer 2"


OPENING = None  # the head the page opens on without a link (the previous-token head), read from a plain visit


@pytest.mark.parametrize("query, param, layer, head, threshold", [
    ({"att_layer": "9"}, "att_layer", 2, OPENING, 0.05),  # above the model's 2 layers: the nearest, 2
    ({"att_layer": "0"}, "att_layer", 1, OPENING, 0.05),
    ({"att_layer": "1.5"}, "att_layer", OPENING, OPENING, 0.05),  # not a whole number: the default
    ({"att_head": "three"}, "att_head", OPENING, OPENING, 0.05),
    ({"att_head": "-4"}, "att_head", OPENING, 1, 0.05),
    ({"att_head": "nan"}, "att_head", OPENING, OPENING, 0.05),
    ({"att_threshold": "0.9"}, "att_threshold", OPENING, OPENING, 0.5),
    ({"att_threshold": "inf"}, "att_threshold", OPENING, OPENING, 0.05),
    ({"att_threshold": "-1"}, "att_threshold", OPENING, OPENING, 0.0),
])
def test_bad_detail_values_in_the_link_are_warned_about(query, param, layer, head, threshold):
    plain = page("attention")
    layer = slider(plain, "att_layer").value if layer is OPENING else layer
    head = slider(plain, "att_head").value if head is OPENING else head
    at = page("attention", **query)
    assert not at.exception, texts(at.exception)
    assert warned(at, param), texts(at.warning)
    assert slider(at, "att_layer").value == layer
    assert slider(at, "att_head").value == head
    assert slider(at, "att_threshold").value == pytest.approx(threshold)
    assert title(detail_charts(at)[0]) == f"layer {layer}, head {head}"


def test_the_page_opens_on_the_previous_word_head_and_says_why():
    """Without a link the detail shows the head that looks most at the previous token (its pattern, one line under
    the diagonal, is the clearest to see), and a caption says so; a link's head is shown without it."""
    at = page("attention")
    assert_clean(at)
    ranked = at.dataframe[-1].value  # ranked by the previous token, highest first, by default
    top = (int(ranked["layer"].iloc[0]), int(ranked["head"].iloc[0]))
    assert (slider(at, "att_layer").value, slider(at, "att_head").value) == top
    assert title(detail_charts(at)[0]) == f"layer {top[0]}, head {top[1]}"
    assert any("looks most at the previous word" in c for c in texts(at.caption)), texts(at.caption)
    other = page("attention", att_layer=str(3 - top[0]), att_head=str(top[1]))
    assert not any("looks most at the previous word" in c for c in texts(other.caption))


def test_controls_keep_their_value_while_they_are_not_drawn():
    at = page("attention", att_head="2", att_threshold="0.3")
    # The mean has no head slider; back to one head, the head is still 2.
    at.radio(key="view").set_value("mean").run()
    assert slider(at, "att_head") is None
    at.radio(key="view").set_value("head").run()
    assert slider(at, "att_head").value == 2
    assert title(detail_charts(at)[0]) == f"layer {slider(at, 'att_layer').value}, head 2"
    # A long input has no line view (and no threshold); a short one again has it at 0.3.
    at.text_input(key="sentence").set_value(" ".join(["bank", "river"] * 40)).run()
    assert slider(at, "att_threshold") is None and detail_charts(at)[1] is None
    assert param(at, "att_threshold") == "0.3"
    at.text_input(key="sentence").set_value(DEFAULT).run()
    assert slider(at, "att_threshold").value == pytest.approx(0.3)
    assert_clean(at)


def test_the_next_sentence_probability_is_shown_for_a_pair(tiny_assets):
    at = page("attention", sentence="The bank was closed.", pair="She went home.")
    assert_clean(at)
    assert len(at.metric) == 1 and "IsNext" in at.metric[0].label
    shown = float(at.metric[0].value.rstrip("%")) / 100
    model = ctxmodels.load(str(tiny_assets / "bert-eltec"))
    p = att.next_sentence_probability(model, None, "The bank was closed.", "She went home.")
    assert 0.0 <= p <= 1.0
    assert shown == pytest.approx(p, abs=0.0005)


def test_no_next_sentence_probability_without_a_pair_or_a_head():
    at = page("attention", sentence="The bank was closed.")
    assert_clean(at)
    assert not at.metric
    at = page("attention", att_model="bert-no-mlm", sentence="The bank was closed.", pair="She went home.")
    assert_clean(at)
    assert not at.metric
    assert any("no next-sentence (NSP) head" in c for c in texts(at.caption)), texts(at.caption)
    assert detail_charts(at)[0]  # its attention over the pair is still shown


def query_key_chart(at) -> dict | None:
    return next((c for c in charts(at) if ": from " in str(c["layout"].get("title", {}).get("text", ""))), None)


def test_how_a_head_computes_its_weights_from_the_link(tiny_assets):
    at = page("attention", sentence="The bank was closed.", att_layer="2", att_head="1", qk="1", qk_from="2")
    assert_clean(at)
    chart = query_key_chart(at)
    assert chart is not None
    model = ctxmodels.load(str(tiny_assets / "bert-eltec"))
    qk = att.query_keys(model, None, "The bank was closed.")
    assert title(chart) == f"layer 2, head 1: from {qk.tokens[2]} ·2"
    bars = chart["data"][2]
    assert np.allclose(figure_array(bars["x"]), qk.attentions[1, 0, 2], atol=1e-6)  # the map's row 2, layer 2, head 1
    assert any("gives most weight to" in c for c in texts(at.caption)), texts(at.caption)
    assert param(at, "qk") == "1" and param(at, "qk_from") == "2"
    # another head reruns the detail with its own queries and keys
    slider(at, "att_head").set_value(2).run()
    assert np.allclose(figure_array(query_key_chart(at)["data"][2]["x"]), qk.attentions[1, 1, 2], atol=1e-6)


def test_the_query_key_view_only_for_one_head_and_in_range():
    at = page("attention", sentence="The bank was closed.", qk="1", qk_from="999")
    assert_clean(at)
    assert warned(at, "qk_from")  # outside the sentence's pieces: clamped, with a warning
    assert query_key_chart(at) is not None
    at = page("attention", sentence="The bank was closed.", qk="1", view="mean")
    assert_clean(at)
    assert query_key_chart(at) is None and not [t for t in at.toggle if t.key == "qk"]
    at = page("attention", sentence="The bank was closed.")
    assert_clean(at)
    assert query_key_chart(at) is None  # off by default: the toggle is there, closed
    assert [t.value for t in at.toggle if t.key == "qk"] == [False]


def test_a_word_picked_on_the_line_view_draws_its_lines_in_orange_and_the_rest_faded(tiny_assets):
    """BertViz's hover, as a click: the word's own lines stand out (the same lines, restyled), from the link too."""
    def orange(chart) -> int:
        return sum(len(t["x"]) // 3 for t in chart["data"] if t.get("mode") == "lines"
                   and t["line"]["color"].startswith("rgba(230,120,20"))

    plain = page("attention", att_layer="2", att_head="2", att_threshold="0.2")
    at = page("attention", att_layer="2", att_head="2", att_threshold="0.2", att_token="3")
    assert_clean(at)
    lines, before = detail_charts(at)[1], detail_charts(plain)[1]
    maps = att.merge_word_pieces(att.compute_attention(ctxmodels.load(str(tiny_assets / "bert-eltec")), None,
                                                       DEFAULT))  # words, as the page reads them
    assert orange(lines) == int((maps.attentions[1, 1][2] >= 0.2).sum())
    assert orange(before) == 0
    count = lambda c: sum(len(t["x"]) // 3 for t in c["data"] if t.get("mode") == "lines")  # noqa: E731
    assert count(lines) == count(before)  # no line added or lost
    words = next(t for t in lines["data"] if t.get("mode") == "markers+text")
    assert words["text"][2].startswith("<b>") and "looks at" in words["hovertext"][2]
    assert param(at, "att_token") == "3"
    back = [b for b in at.button if b.key == "att_token_clear"][0].click().run()
    assert orange(detail_charts(back)[1]) == 0 and param(back, "att_token") == "0"
