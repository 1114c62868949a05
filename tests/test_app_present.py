"""Presentation mode, the model cards and the ELMo layers page's notes, through AppTest on the tiny models."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from app.kit.cards import card_markdown
from app.kit.explanations import first_sentence
from tests.app_fixtures import assert_clean, open_explanation, page, texts

pytestmark = pytest.mark.usefixtures("app_env")
ROOT = Path(__file__).resolve().parents[1]


def expanders(at, label: str) -> list:
    return [e for e in at.expander if e.label.startswith(label)]


# -- presentation mode -----------------------------------------------------------------------------------------------


def test_presentation_mode_folds_the_controls_and_shortens_the_intro():
    at = page("elmo_layers", present="1")
    assert_clean(at)
    box = expanders(at, "Controls")
    assert len(box) == 1 and not box[0].proto.expanded  # collapsed: the figures come first
    assert box[0].label == "Controls: elmo-eltec"  # what is chosen, readable while folded
    assert [s.key for s in box[0].selectbox] == ["probe_model"]
    assert not at.latex or all(_inside(at, "What am I looking at?", x) for x in at.latex)
    intro = at.main.markdown[1].value if "stSidebar" in at.main.markdown[0].value else at.main.markdown[0].value
    assert intro == "Look at the bars: each says how much a small task model leans on one of ELMo's layers."
    explained = " ".join(texts(expanders(open_explanation(at), "What am I looking at?")[0].markdown))
    assert "a small probe, trained on top of the frozen model" in explained  # the rest of the intro, kept
    assert "The bars are the weights" in explained


def _inside(at, label: str, element) -> bool:
    return any(element is e or element.proto == e.proto for x in expanders(at, label) for e in x.latex)


def test_normal_mode_folds_the_controls_too_and_shows_the_whole_intro():
    at = page("elmo_layers")
    assert_clean(at)
    box = expanders(at, "Controls")  # folded in both modes: the figure comes first on a laptop too
    assert len(box) == 1 and not box[0].proto.expanded and box[0].label == "Controls: elmo-eltec"
    assert [s.key for s in box[0].selectbox] == ["probe_model"]
    assert any("a small probe, trained on top of the frozen model" in m for m in texts(at.main.markdown))
    assert at.main.latex  # the scalar mix formula, under the figures
    assert not [b for b in at.button if b.key == "leave_present_button"]


@pytest.mark.parametrize("name", ["overview", "lesson", "word_senses", "elmo_layers", "attention", "fine_tuning",
                                  "fill_in", "how_they_learn", "models"])
def test_every_page_has_a_leave_button_that_clears_present(name):
    at = page(name, present="1")
    assert_clean(at)
    assert at.query_params.get("present") in ("1", ["1"])
    leave = at.button(key="leave_present_button")
    assert leave.label == "Leave presentation"
    at = leave.click().run()
    assert_clean(at)
    assert at.session_state["present"] is False and "present" not in at.query_params
    assert not [b for b in at.button if b.key == "leave_present_button"]
    assert at.sidebar.toggle(key="present_toggle").value is False  # the way back in
    assert not any("stSidebar" in m.value for m in at.markdown)  # the presentation styles are gone


def test_the_sidebar_toggle_starts_presenting():
    at = page("fill_in")
    assert "present" not in at.query_params  # off: no parameter at all, not present=0
    at = at.sidebar.toggle(key="present_toggle").set_value(True).run()
    assert at.session_state["present"] is True and at.query_params.get("present") in ("1", ["1"])
    assert at.button(key="leave_present_button")


def test_first_sentence():
    assert first_sentence("One. Two three.") == ("One.", "Two three.")
    assert first_sentence("Write `[MASK]` here; it guesses. **Or** not.") == ("Write `[MASK]` here; it guesses.",
                                                                              "**Or** not.")
    assert first_sentence("No end") == ("No end", "")
    assert first_sentence("e.g. lower-case starts do not split. Next.") == ("e.g. lower-case starts do not split.",
                                                                           "Next.")


# -- model cards -----------------------------------------------------------------------------------------------------


def test_card_markdown_drops_comments_and_empty_headers_but_not_code():
    card = ("# name\n\n<!-- measured: begin -->\n## Part\n\n| | |\n|---|---|\n| command | `a --b` |\n| steps | 5 |\n\n"
            "| | fp32 |\n|---|---:|\n| top-1 | 36.9% |\n\n```bash\n<!-- kept -->\n# a shell comment\n```\n"
            "<!-- measured:\nend -->\n")
    out = card_markdown(card)
    assert "<!--" not in out.replace("<!-- kept -->", "") and "<!-- kept -->" in out
    assert "| | |" not in out and "- **command**: `a --b`" in out and "- **steps**: 5" in out
    assert "| | fp32 |" in out  # a header with one empty corner cell is a real header: kept
    assert out.startswith("### name") and "#### Part" in out and "\n# a shell comment\n" in out


def test_models_page_renders_the_shipped_cards_cleanly(tiny_assets, tmp_path, monkeypatch):
    """The shipped cards (HTML comments, headerless tables, long commands) on the Models page: no comment shows."""
    extra = []
    for name in ("bert-eltec", "elmo-eltec", "static-eltec"):
        folder = tmp_path / f"carded-{name}"
        shutil.copytree(tiny_assets / name, folder)
        (folder / "README.md").write_text((ROOT / "assets" / name / "README.md").read_text(encoding="utf-8"),
                                          encoding="utf-8")
        extra.append(str(folder))
    monkeypatch.setenv("CTXMODELS_APP_MODELS", ",".join(extra))
    at = page("models")
    assert_clean(at)
    shown = [m.value for m in at.markdown if "<style>" not in m.value]
    cards = [m for m in shown if "Measured quality" in m]
    assert len(cards) == 3
    assert not [m for m in shown if "<!--" in m]
    assert not [m for m in cards if "| | |" in m]
    assert any("**Two top-1 figures.**" in m for m in cards)


# -- ELMo layers: the word-sense probe's baseline and small probes ---------------------------------------------------


def probe_result(task: str, n_test: int, n_classes: int, lemmas: int = 0, accuracy: float = 0.4):
    from ctxmodels.analysis.probes import ProbeResult

    settings = {"epochs": 10, "seed": 0, "n_sentences": 600}
    if task == "wsd":
        settings["max_per_sense"] = 20
    return ProbeResult(task=task, model="elmo-eltec", layer_names=["layer 0", "layer 1", "layer 2"],
                       labels=[f"c{i}" for i in range(n_classes)], mix_weights=[0.2, 0.3, 0.5], gamma=1.0,
                       mix_accuracy=accuracy, layer_accuracies=[0.3, 0.35, accuracy], baseline_accuracy=0.05,
                       n_train=4 * n_test, n_test=n_test, n_sentences=600, settings=settings, seconds={},
                       lemmas=[f"l{i}" for i in range(lemmas)])


def run_with(results: dict) -> object:
    from streamlit.testing.v1 import AppTest

    from tests.app_fixtures import HOME, TIMEOUT, opening

    at = AppTest.from_file(HOME, default_timeout=TIMEOUT)
    for task, r in results.items():
        at.session_state[f"probe::elmo-eltec::{task}"] = r
    return opening(at, "elmo_layers").run()


def test_elmo_layers_says_the_sense_probe_is_balanced_and_warns_on_small_probes():
    at = run_with({"pos": probe_result("pos", 853, 5, accuracy=0.87),
                   "wsd": probe_result("wsd", 131, 65, lemmas=10, accuracy=0.35)})
    assert_clean(at)
    captions = " ".join(texts(at.caption))
    assert "sense-balanced" in captions and "near chance" in captions and "about 15% here: 10 lemmas, 65 senses" \
        in captions
    assert "on 131 test items an accuracy is uncertain by about ±8 points" in captions
    assert not [w for w in texts(at.warning) if "Too small" in w]  # 131 items, 65 senses: enough to mean something
    explained = " ".join(texts(expanders(open_explanation(at), "What am I looking at?")[0].markdown))
    assert "sense-balanced" in explained

    at = run_with({"pos": probe_result("pos", 30, 5), "wsd": probe_result("wsd", 60, 65, lemmas=10)})
    assert_clean(at)
    warnings = [w for w in texts(at.warning) if "Too small" in w]
    assert len(warnings) == 2
    assert "only 30 test items (fewer than 50)" in warnings[0] and "±18 points" in warnings[0]
    assert "fewer test items (60) than classes (65)" in warnings[1] and "senses are never tested" in warnings[1]
