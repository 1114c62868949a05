"""The words a student reads: no page shows an internal name (a file name, a class's attribute, a snake_case
identifier), the jargon has a glossary, and every formula comes with its symbols named. Through AppTest on the tiny
models, every page as it opens."""

from __future__ import annotations

import json
import re

import pytest

from app.kit import glossary
from app.kit.explanations import FORMULAS, SYMBOLS
from tests import test_app_fine_tuning
from tests.app_fixtures import assert_clean, open_explanation, page, unglossed

pytestmark = pytest.mark.usefixtures("app_env")
tuned = test_app_fine_tuning.tuned  # a tiny BERT fine-tuned for a few steps (a fixture)

PAGES = {"overview": {"try": "1"}, "lesson": {"step": "1", "reveal": "1"}, "word_senses": {"projection": "pca"},
         "elmo_layers": {}, "attention": {}, "fine_tuning": {}, "fill_in": {}, "how_they_learn": {},
         "models": {}}
# What a visitor never needs to read: a file's name, a class's attribute, a programmer's identifier. Code spans and
# links' addresses are left out: a command an operator runs (`ctxmodels probe ...`) is shown on purpose.
INTERNAL = [
    re.compile(r"\b[\w-]+\.(?:json|jsonl|py|safetensors|pt|bin|npz)\b"),
    re.compile(r"\b[A-Z][a-z]+(?:[A-Z][a-z0-9]+)+\.[a-z_]+\b"),  # OccurrenceVectors.finite
    re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b"),  # snake_case
    re.compile(r"\b\d+\.\d{4,}\b"),  # a number printed as Python prints it: clipped from 30 to 10.6667
]
_CODE = re.compile(r"<(style|script)>.*?</\1>|`[^`]*`|\]\([^)]*\)|<[^>]+>|\$\$.*?\$\$|\$[^$]*\$", re.S)
# Visible text in the proto of an element: its body, label, help, placeholder, options, value, caption.
_FIELDS = {"body", "label", "help", "placeholder", "options", "caption", "text", "value", "default_value"}


def visible_text(at) -> list[str]:
    """Every string a visitor can read on the page as drawn: element bodies and labels, widget help and options,
    table columns, and the titles, axis titles and legend names of the figures."""
    out: list[str] = []

    def walk(node) -> None:
        if getattr(node, "type", "") == "json":  # a model's configuration, shown as the data it is
            return
        proto = getattr(node, "proto", None)
        if proto is not None and hasattr(proto, "ListFields"):
            _strings(proto, out)
        for child in getattr(node, "children", {}).values():
            walk(child)

    walk(at._tree)
    for chart in at.get("plotly_chart"):
        spec = json.loads(chart.proto.spec)
        out += _figure_words(spec)
    for frame in at.dataframe:  # a column's header: its configured label, else its name
        config = json.loads(frame.proto.columns or "{}")
        out += [str((config.get(str(c)) or {}).get("label") or c) for c in getattr(frame.value, "columns", [])]
    return [unglossed(t) for t in out if t]


def _strings(proto, out: list[str]) -> None:
    for field, value in proto.ListFields():
        if field.name == "spec" or field.type not in (field.TYPE_MESSAGE, field.TYPE_STRING):
            continue
        many = [value] if isinstance(value, str) or hasattr(value, "ListFields") else list(value)
        if field.type == field.TYPE_MESSAGE:
            for v in many:
                _strings(v, out)
        elif field.type == field.TYPE_STRING and field.name in _FIELDS:
            out += many


def _figure_words(spec: dict) -> list[str]:
    layout = spec.get("layout", {})
    words = [str(t.get("name", "")) for t in spec.get("data", [])]
    for value in layout.values():
        if isinstance(value, dict):
            title = value.get("title")
            words.append(str(title.get("text", "")) if isinstance(title, dict) else str(title or ""))
    words += [str(a.get("text", "")) for a in layout.get("annotations", [])]
    return words


def internal_names(text: str) -> list[str]:
    prose = _CODE.sub(" ", text)
    return [m.group(0) for p in INTERNAL for m in p.finditer(prose)]


@pytest.mark.parametrize("name", list(PAGES))
def test_no_page_shows_an_internal_name(name):
    at = page(name, **PAGES[name])
    assert_clean(at)
    at = open_explanation(at)
    found = {t[:80]: internal_names(t) for t in visible_text(at) if internal_names(t)}
    assert not found, "\n".join(f"{k!r}: {v}" for k, v in found.items())


def test_the_fine_tuning_page_of_a_fine_tuned_model_shows_no_internal_name(tuned, monkeypatch):
    """With a fine-tuned model, whose saved settings file the page reads: its scores, the comparison, the heads."""
    folder, _ = tuned
    monkeypatch.setenv("CTXMODELS_APP_MODELS", str(folder))
    at = open_explanation(page("fine_tuning", ft_att_layer="2", ft_att_head="1"))
    assert_clean(at)
    found = {t[:80]: internal_names(t) for t in visible_text(at) if internal_names(t)}
    assert not found, "\n".join(f"{k!r}: {v}" for k, v in found.items())


def test_the_check_finds_what_it_looks_for():
    for bad in ("the base named in finetune.json", "OccurrenceVectors.finite has no row", "see probe_model",
                "t-SNE perplexity clipped from 30 to 10.6667"):
        assert internal_names(bad), bad
    for fine in ("Run `ctxmodels probe --model elmo-eltec`.", "macro-F1 87.1%, γ = 1.23", "[a link](/x?try_a=1)",
                 "bert-eltec-pos, layer 2 (LSTM)"):
        assert not internal_names(fine), fine


def test_the_glossary_explains_the_jargon():
    names = {form.lower() for t in glossary.terms().values() for form in t.forms}
    for word in ("cosine", "probe", "frozen", "scalar mix", "γ", "softmax", "cka", "jensen–shannon", "macro-f1",
                 "silhouette", "ari", "anisotropy", "nan", "dev split", "perplexity"):
        assert word in names, word
    assert all(t.meaning and len(t.meaning) < 400 for t in glossary.terms().values())
    text = "Train a probe on the frozen model; `probe_model` and $s_j$ stay as they are."
    glossed = glossary.gloss(text)
    assert glossed.count('<abbr class="gloss"') == 2 and "`probe_model`" in glossed and "$s_j$" in glossed
    assert unglossed(glossed) == text


def test_every_formula_has_its_symbols_named():
    assert set(SYMBOLS) == set(FORMULAS)


def test_the_explanation_box_lists_the_words_it_uses_and_comes_in_short_parts():
    at = open_explanation(page("word_senses", projection="pca"))
    assert_clean(at)
    box = next(e for e in at.expander if e.label == "What am I looking at?")
    parts = [unglossed(m.value) for m in box.markdown]
    assert any(p.startswith("**Words used here**") for p in parts)
    assert max(len(p.split()) for p in parts if not p.startswith("**Words used here**")) <= 150
    assert box.caption  # the symbols under each formula
