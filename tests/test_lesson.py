"""The Lesson page: eight questions for a class, each answered with the models the server offers, each linking to
the page that shows it in a state that page accepts without a warning."""

from __future__ import annotations

from urllib.parse import parse_qs

import numpy as np
import pytest

from tests import test_objectives
from tests.app_fixtures import assert_clean, charts, figure_array, page, texts, with_successors, write_semcor

pytestmark = pytest.mark.usefixtures("app_env")

TINY = ("static-eltec", "elmo-eltec", "bert-eltec")
tiny_gpt = test_objectives.tiny_gpt  # a GPT trained for two steps by `ctxmodels train gpt` (a fixture)


def links(at) -> list:
    """The page links the script drew (AppTest has no accessor for them), as their protos."""
    found = []

    def walk(node):
        for child in getattr(node, "children", {}).values():
            proto = getattr(child, "proto", None)
            if proto is not None and type(proto).__name__ == "PageLink":
                found.append(proto)
            walk(child)

    walk(at._tree)
    return found


def answer(at) -> list[str]:
    """The revealed answer's lines (a Markdown list)."""
    return [line[2:] for m in texts(at.markdown) for line in m.splitlines() if line.startswith("- ")]


def the_link(at):
    [link] = [p for p in links(at) if p.label.startswith("Open it on the")]
    return link


def test_the_lesson_asks_first_and_answers_when_asked():
    at = page("lesson")
    assert_clean(at)
    assert any("Step 1 of 8: One word, two sentences" in s for s in texts(at.subheader))
    assert texts(at.info)[0].startswith("**Ask the class.**")
    assert at.toggle(key="reveal").value is False and answer(at) == []

    at.toggle(key="reveal").set_value(True).run()
    assert_clean(at)
    lines = answer(at)
    assert [line.split("**")[1] for line in lines] == list(TINY)
    assert "one vector per word" in lines[0] and lines[0].split("**: ")[1].startswith("1.00")
    assert at.query_params["reveal"] == "1"

    at.button[1].click().run()  # Next: the next question, its answer hidden again
    assert_clean(at)
    assert at.session_state["step"] == 2 and at.query_params["step"] == "2"
    assert at.toggle(key="reveal").value is False and answer(at) == []
    at.button[0].click().run()  # Previous
    assert at.session_state["step"] == 1


def test_the_right_hand_button_moves_the_lesson_on_like_a_clicker():
    """One button (Page Down on a presenter's clicker) first shows the answer, then moves to the next question with
    its answer hidden; on the last step, once its answer shows, there is nowhere further to go."""
    at = page("lesson")
    assert [b.label for b in at.button] == ["Previous", "Answer"] and at.button[0].disabled
    at.button[1].click().run()
    assert_clean(at)
    assert at.session_state["step"] == 1 and at.toggle(key="reveal").value is True and answer(at)
    assert at.button[1].label == "Next"
    at.button[1].click().run()
    assert at.session_state["step"] == 2 and at.toggle(key="reveal").value is False and answer(at) == []
    assert at.button[1].label == "Answer"

    at = page("lesson", step="8")
    assert at.button[1].label == "Answer" and not at.button[1].disabled
    at.button[1].click().run()
    assert_clean(at)
    assert at.button[1].label == "Next" and at.button[1].disabled and answer(at)


def test_a_link_opens_the_lesson_at_a_step_and_a_bad_step_is_clamped():
    at = page("lesson", step="5", reveal="1")
    assert_clean(at)
    assert any("Step 5 of 8: Fill in the blank" in s for s in texts(at.subheader))
    # the models that fill blanks: not bert-no-mlm (no masked-LM head), not the tiny ELMo (no softmax)
    assert [line.split("**")[1] for line in answer(at)] == ["bert-eltec"]
    at = page("lesson", step="99")
    assert not at.exception
    assert any("step" in w and "99" in w for w in texts(at.warning))
    assert at.session_state["step"] == 8


@pytest.mark.parametrize("n", range(1, 9))
def test_each_step_answers_and_its_link_opens_its_page_without_a_warning(n, tmp_path, monkeypatch):
    from app.views.lesson.compute import STEPS

    monkeypatch.setenv("CTXMODELS_DATA", str(write_semcor(tmp_path / "data")))
    at = page("lesson", step=str(n), reveal="1")
    assert_clean(at)
    assert answer(at), f"step {n} revealed nothing"
    link = the_link(at)
    step = STEPS[n - 1]
    assert f"**{step.page_name}**" in link.label and link.page_script_hash
    query = {k: v if len(v) > 1 else v[0] for k, v in parse_qs(link.query_string).items()}
    target = page(step.page, **query)
    assert_clean(target)
    assert not [w for w in texts(target.warning) if "The link" in w]
    for key, value in query.items():  # the page took the state the lesson gave it
        assert target.query_params[key] in (value, [value]) or target.query_params[key] == value, key


def test_step_answers_say_what_the_tiny_models_show(tmp_path, monkeypatch):
    """The answers are measured, not written: on random tiny models the lines still carry each model's numbers."""
    monkeypatch.setenv("CTXMODELS_DATA", str(write_semcor(tmp_path / "data")))
    at = page("lesson", step="3", reveal="1")
    lines = answer(at)
    assert lines[0].startswith("**static-eltec**: 50% in its only layer")
    assert "does not separate them: one vector per word" in lines[0]
    assert "layer 0 (char CNN)" in lines[1] and "best" in lines[1]
    at = page("lesson", step="7", reveal="1")
    lines = answer(at)
    assert lines[0].startswith("**bert-eltec**, ") and "Most on the previous word: layer " in lines[0]
    assert "[CLS] or [SEP]" in lines[2]
    link = the_link(at)
    assert "att_layer=" in link.query_string and "qk=1" in link.query_string


def with_shipped_gpt(monkeypatch, tiny_assets, tiny_gpt, tmp_path) -> None:
    """The tiny models, with the tiny GPT shipped among the successors as ``gpt-eltec`` (no operator adds it)."""
    (with_successors(monkeypatch, tiny_assets, tmp_path) / "gpt-eltec").symlink_to(tiny_gpt)


def test_step_8_shows_the_gpt_cannot_tell_the_banks_apart_at_the_word(monkeypatch, tiny_assets, tiny_gpt, tmp_path):
    """The words before *bank* are the same in both sentences: the shipped GPT's two vectors are the same in every
    layer (cosine 1), BERT's are not; the link opens How they learn's part on the same pair."""
    from app.views.lesson.compute import PAIR_A, PAIR_B

    with_shipped_gpt(monkeypatch, tiny_assets, tiny_gpt, tmp_path)
    at = page("lesson", step="8", reveal="1")
    assert_clean(at)
    assert any("Step 8 of 8: Left to right or both ways" in s for s in texts(at.subheader))
    gpt, bert, *_ = answer(at)
    assert gpt.startswith("**gpt-eltec** (left to right): 1.00 in every layer, from embeddings to layer 2: the same "
                          "vector in both sentences")
    assert bert.startswith("**bert-eltec** (both ways): 1.00 → ") and "least alike in layer" in bert
    (fig,) = charts(at)
    cosines = {t["name"]: figure_array(t["y"]) for t in fig["data"] if t.get("showlegend")}
    assert np.allclose(cosines["gpt-eltec"], 1.0, atol=1e-4) and cosines["bert-eltec"].min() < 1 - 1e-6
    query = parse_qs(the_link(at).query_string)
    assert query == {"learn_part": ["directions"], "learn_a": [PAIR_A], "learn_b": [PAIR_B], "learn_word": ["bank"]}
    target = page("how_they_learn", **{k: v[0] for k, v in query.items()})
    assert_clean(target)
    assert any("are the same in every layer" in c for c in texts(target.caption))  # the page reads the GPT alike


def test_step_8_without_a_gpt_says_so_in_one_line_and_still_links(monkeypatch, tiny_gpt):
    """No GPT shipped (the tiny assets have no successors) and none added: one line says so, the both-ways models
    still answer and the link still opens the page. A GPT the operator adds is the step's GPT, never a BERT."""
    from app.kit.registry import model_ids
    from app.views.lesson.compute import NO_GPT, cast

    at = page("lesson", step="8", reveal="1")
    assert_clean(at)
    lines = answer(at)
    assert lines[0] == NO_GPT and "(left to right)" not in " ".join(lines)
    assert lines[1].startswith("**bert-eltec** (both ways): ")
    link = the_link(at)
    assert "**How they learn**" in link.label and "learn_part=directions" in link.query_string
    monkeypatch.setenv("CTXMODELS_APP_MODELS", str(tiny_gpt))
    c = cast(model_ids())
    assert c.gpt is not None and c.gpt not in c.berts and c.bert == "bert-eltec"


def test_without_an_elmo_or_a_bert_the_steps_say_what_to_add(monkeypatch, tiny_assets):
    from app.kit.registry import Registry

    monkeypatch.setattr(Registry, "extra", lambda self: [])  # models another test trained stay out
    monkeypatch.setenv("CTXMODELS_APP_MODELS", str(tiny_assets / "static-eltec"))
    monkeypatch.setenv("CTXMODELS_ASSETS", str(tiny_assets / "nothing-here"))
    for n, phrase in [(4, "No ELMo is offered"), (5, "No model here fills in blanks"), (7, "No BERT is offered")]:
        at = page("lesson", step=str(n), reveal="1")
        assert_clean(at)
        assert any(phrase in line for line in answer(at)), (n, answer(at))


def test_the_probe_step_reads_the_probes_afresh(tiny_assets):
    """Step 4 is not kept once per server: a probe stored beside the model (the operator's `ctxmodels probe`) shows
    in the lesson at once."""
    from tests.test_app import write_probe_cache

    at = page("lesson", step="4", reveal="1")
    assert_clean(at)
    assert all("no probe has been run on **elmo-eltec**" in line for line in answer(at))
    write_probe_cache(tiny_assets)
    try:
        at.run()
        assert_clean(at)
        pos, wsd = answer(at)
        assert pos.startswith("Part of speech: weights 0.20 / 0.50 / 0.30") and "the most on **layer 1" in pos
        assert "no probe has been run" in wsd
    finally:
        for p in (tiny_assets / "elmo-eltec" / "probes").glob("*"):
            p.unlink()


def test_the_lesson_plan_holds_every_question_answer_and_link(tmp_path, monkeypatch):
    """The Markdown a teacher downloads: eight steps, each with its question, the answer computed here and the
    step's link with the app's address; a step that cannot be answered says so and the plan goes on."""
    from app.kit.registry import model_ids
    from app.views.lesson.compute import STEPS, cast, link, plan

    monkeypatch.setenv("CTXMODELS_DATA", str(write_semcor(tmp_path / "data")))
    c = cast(model_ids())

    def answers(n: int) -> list[str]:
        if n == 2:
            raise FileNotFoundError("no SemCor here")
        return STEPS[n - 1].reveal(c)

    text = plan(c, answers, base="http://teacher.local:8501/", when="2026-12-02")
    assert text.count("\n## Step ") == 8 and text.count("**Ask the class.**") == 8
    assert "on 2026-12-02" in text.splitlines()[2]
    assert "open <http://teacher.local:8501/lesson?present=1> on the projector. Page Down" in text.splitlines()[4]
    assert "- Not computed on this server (FileNotFoundError: no SemCor here)" in text
    assert "- **static-eltec**: 1.00 (one vector per word, whatever the sentence)" in text
    for step in STEPS:
        address = link(step, c, "http://teacher.local:8501/")
        assert f"<{address}>" in text and address.startswith("http://teacher.local:8501/")
        page_name, _, query = address.removeprefix("http://teacher.local:8501/").partition("?")
        assert page_name == step.page
        given = {k: v if len(v) > 1 else v[0] for k, v in parse_qs(query).items()}
        wanted = {k: v if isinstance(v, str) or len(v) > 1 else v[0] for k, v in step.params(c).items()}
        assert given == wanted
    assert link(STEPS[3], c) == "/elmo_layers?probe_model=elmo-eltec"  # no address known: a path
