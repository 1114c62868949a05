"""A GPT added as an operator adds a model folder (``CTXMODELS_APP_MODELS``), through AppTest: Fill in the blank
guesses a blank from the words before it (and says so), the word after the sentence and every word of it; Attention
shows its causal triangle, ranks its heads and breaks a head's weights into query · key with the later words
masked; the other pages take it or say plainly why not, never with a traceback."""

from __future__ import annotations

import numpy as np
import pytest

from ctxmodels.analysis import next_word
from tests import test_objectives
from tests.app_fixtures import assert_clean, charts, figure_array, open_explanation, page, texts

pytest.importorskip("streamlit.testing.v1")

pytestmark = pytest.mark.usefixtures("app_env")
tiny_gpt = test_objectives.tiny_gpt  # a GPT trained for two steps by `ctxmodels train gpt` (a fixture)


@pytest.fixture
def gpt(monkeypatch, tiny_gpt) -> str:
    """The GPT on every page, as the operator adds it; its id (its folder) as the links name it."""
    monkeypatch.setenv("CTXMODELS_APP_MODELS", str(tiny_gpt))
    return str(tiny_gpt)


def titles(at) -> list[str]:
    return [str(c["layout"].get("title", {}).get("text", "")) for c in charts(at)]


def loaded(path: str):
    import ctxmodels

    return ctxmodels.load(path)


def test_fill_in_offers_the_gpt_and_guesses_the_blank_from_the_words_before_it(gpt):
    text = "The boat drifted towards the far [MASK] of the river."
    at = page("fill_in", fill_models=gpt, text=text, k="5")
    assert_clean(at)
    assert gpt in at.multiselect[0].options or "gpt-tiny" in at.multiselect[0].options
    assert titles(at) == ["[MASK]: from the words before it"]
    assert any("from the words before it only" in c and "cannot read the words after" in c
               for c in texts(at.caption))
    bars = charts(at)[0]["data"][0]
    want = next_word.blank_guesses(loaded(gpt), text, top_k=5, whole_words=True)[0]
    assert np.allclose(figure_array(bars["x"])[::-1], [g["prob"] for g in want])  # best on top


def test_beside_bert_it_guesses_only_the_first_of_two_blanks(gpt):
    at = page("fill_in", fill_models=f"bert-eltec,{gpt}", text="The [MASK] was by the [MASK].")
    assert_clean(at)
    assert titles(at) == ["[MASK] 1", "[MASK] 2", "[MASK] 1: from the words before it"]
    assert any("first blank only" in c for c in texts(at.caption))


def test_with_no_blank_it_guesses_the_next_word_and_each_word_of_the_sentence(gpt):
    text = "The boat drifted towards the far bank"
    at = page("fill_in", fill_models=f"bert-eltec,{gpt}", text=text, k="4", whole_words="0")
    assert_clean(at)
    assert any("No `[MASK]`" in i for i in texts(at.info))
    assert titles(at)[0] == "the next word"
    want = next_word.next_guesses(loaded(gpt), text, top_k=4)
    assert np.allclose(figure_array(charts(at)[0]["data"][0]["x"])[::-1], [g["prob"] for g in want])
    lines = charts(at)[1]["data"]
    assert {t["name"].split(":")[0] for t in lines} == {"gpt-tiny", "bert-eltec"}
    assert any("words before it" in t["name"] for t in lines) and any("hidden" in t["name"] for t in lines)


def test_a_word_it_hides_is_rated_from_the_words_before_it_and_the_extras_say_no(gpt):
    text = "The boat drifted to the bank of the river."
    at = page("fill_in", fill_models=f"{gpt},bert-eltec", fill_mode="word", blank="bank", text=text, why="1",
              lens="1")
    assert_clean(at)
    prob = next_word.word_score(loaded(gpt), text, "bank").prob
    assert at.metric[0].value == f"{prob:.2%}"
    assert any("rates the word from the words before it only" in c for c in texts(at.caption))
    assert any("not for this left-to-right model" in c for c in texts(at.caption))
    assert "what “bank” rests on" in titles(at)  # BERT's explanation still comes
    lenses = [t for t in titles(at) if t.startswith("the guesses, layer by layer")]
    assert len(lenses) == 2  # each model's, the GPT's read at the word before
    assert any("at the word before the hidden word" in c for c in texts(at.caption))


def test_attention_shows_the_causal_triangle_and_masks_later_keys(gpt):
    at = page("attention", att_model=gpt, qk="1", qk_from="3")
    assert_clean(at)
    assert any("reads left to right" in c and "triangle" in c for c in texts(at.caption))
    assert any("looks most at the previous word" in c for c in texts(at.caption))
    heat = next(c for c in charts(at) if c["data"] and c["data"][0].get("type") == "heatmap"
                and c["layout"].get("title", {}).get("text", "").startswith("layer"))
    z = figure_array(heat["data"][0]["z"])
    assert np.allclose(np.triu(np.nan_to_num(z), 1), 0) and np.tril(np.nan_to_num(z)).sum() > 0
    qk = next(c for c in charts(at) if "from" in str(c["layout"].get("title", {}).get("text", "")))
    bar_text = qk["data"][2]["text"]
    assert bar_text[4:] == ["later: not seen"] * (len(bar_text) - 4) and "not seen" not in "".join(bar_text[:4])
    assert any("sees only itself and the tokens before it" in c for c in texts(at.caption))


@pytest.mark.parametrize("view", ["rollout", "mean"])
def test_attention_other_views_of_a_gpt(gpt, view):
    at = page("attention", att_model=gpt, view=view, hide="1", pair="She went home.")
    assert_clean(at)
    assert any("no next-sentence" in c for c in texts(at.caption))


@pytest.mark.parametrize("name, query", [
    ("overview", {"try": "1", "try_models": "bert-eltec,{gpt}"}),
    ("word_senses", {"models": "{gpt},bert-eltec"}),
    ("elmo_layers", {"probe_model": "{gpt}"}),
    ("how_they_learn", {}),
    ("fine_tuning", {}),
    ("lesson", {"step": "5", "reveal": "1"}),
    ("models", {}),
])
def test_every_other_page_takes_the_gpt(gpt, name, query):
    at = page(name, **{k: v.format(gpt=gpt) for k, v in query.items()})
    assert_clean(at)
    assert not at.warning or all("gpt" not in w.lower() for w in texts(at.warning)), texts(at.warning)
    if name == "models":
        table = at.dataframe[0].value.set_index("model")
        assert table.loc["gpt-tiny", "fill in"] and table.loc["gpt-tiny", "kind"] == "gpt"
    if name == "word_senses":
        assert any(t.replace("<br>", " ").startswith("gpt-tiny · embeddings (input embeddings: word + position)")
                   for t in titles(at))


@pytest.mark.parametrize("name, query", [
    ("fill_in", {"fill_models": "bert-eltec,{gpt}", "text": "The [MASK] was by the [MASK].", "why": "1", "lens": "1"}),
    ("fill_in", {"fill_models": "bert-eltec,{gpt}", "text": "The boat drifted towards the far bank"}),
    ("attention", {"att_model": "{gpt}", "qk": "1"}),
])
def test_the_gpt_views_show_no_internal_name(gpt, name, query):
    from tests.test_app_words import internal_names, visible_text

    at = open_explanation(page(name, **{k: v.format(gpt=gpt) for k, v in query.items()}))
    assert_clean(at)
    found = {t[:80]: internal_names(t) for t in visible_text(at) if internal_names(t)}
    assert not found, "\n".join(f"{k!r}: {v}" for k, v in found.items())


@pytest.mark.parametrize("text", ["[MASK]", "[MASK] [MASK] [MASK]", "[MASK] of the river.", "bank " * 200 + "[MASK].",
                                  "[MASK] " + "bank " * 200, "🏦 [MASK] 🏦", ".", "the bank " * 200])
@pytest.mark.parametrize("mode", ["masks", "word"])
def test_hostile_sentences_get_a_message_never_a_traceback(gpt, text, mode):
    at = page("fill_in", fill_models=gpt, text=text, fill_mode=mode, blank="bank")
    assert not at.exception, texts(at.exception)
    assert all("Traceback" not in e for e in texts(at.error))
