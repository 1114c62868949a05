"""Fuzzing the explorer app: every page, every query parameter it reads and every text box, with generated hostile
input (issue 14).

What is fed: query parameters with out-of-range, non-finite, negative, huge and malformed numbers, unknown choices,
repeated keys, very long values, emoji, control characters, NUL bytes, right-to-left text, Markdown and HTML;
text boxes with empty, whitespace-only, huge, binary-ish and marked-up text. What is asserted, for every case:

* no traceback (``at.exception``) and no "failed unexpectedly" box (the app's message for a bug);
* a query parameter that is not allowed is either clamped (the widget shows the nearest allowed value) or
  replaced by the default, and in both cases a warning names the parameter: never a silent substitution;
  an allowed value reaches its widget unchanged and without a warning;
* nothing a visitor typed is read as Markdown or HTML: no element that renders Markdown holds an image, link,
  raw HTML, math or directive built from the input, and no figure holds an HTML tag other than the ones the
  figure functions write themselves;
* a bad text does not wipe what the page already showed (its last good input stays on screen, said so).

The pure pieces behind this (``app.kit.inputs.md``, the URL rule in ``app.url_state``, the figure functions,
``attention.map_table``) get many more examples, without Streamlit; a few hostile links also go through a real
browser (``browser`` marker).

The pages run on tiny random-weight models (tests/app_fixtures.py). The number of cases run is printed at the
end of the module and written to ``test-artifacts/fuzz-app-cases.json``. ``CTXMODELS_FUZZ_SCALE=10`` runs ten
times as many generated cases (for a longer hunt by hand).
"""

from __future__ import annotations

import json
import math
import os
import re
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from app.kit import figures, inputs, scatter
from app.kit.url_state import _LEFT_OUT, _read
from app.views.attention import figures as attention_figures
from app.views.elmo_layers import figures as layers_figures
from app.views.fill_in import figures as fill_figures
from app.views.overview import figures as overview_figures
from app.views.word_senses import figures as senses_figures
from ctxmodels.analysis import attention as att
from tests.app_fixtures import (
    build_tiny_assets,
    finetune_tiny,
    opening,
    write_semcor,
    write_sense_corpus,
    write_tag_task,
)
from tests.helpers import show_past_capture

pytest.importorskip("streamlit.testing.v1")
from streamlit.testing.v1 import AppTest  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
HOME = str(ROOT / "app" / "Home.py")
TIMEOUT = 180
SCALE = float(os.environ.get("CTXMODELS_FUZZ_SCALE", "1"))
CASES: Counter[str] = Counter()
FOUND: list[str] = []  # what failed, for the closing summary (the assertion fails too)


def n(examples: int) -> int:
    return max(1, round(examples * SCALE))


# -- hostile values ---------------------------------------------------------------------------------------------

MARKUP = [
    "![x](http://HOST/t.png)",
    "[click](http://HOST/)",
    "<img src=http://HOST/t.png>",
    "<i>HOST</i>",
    "<b>HOSTB</b>",
    "<a href='http://HOST'>a</a>",
    "<script>alert('HOST')</script>",
    "**HOST** _HOST_ ~~HOST~~",
    "$HOST^2$",
    ":red[HOST] :material/home:",
    "`HOST`",
    "# HOST",
    "- HOST",
    "1. HOST",
    "> HOST",
    "| HOST | a |\n|---|---|",
    "www.HOST.com",
    "user@HOST.com",
    "&lt;HOST&gt; &amp;",
    "\\*HOST\\*",
]
NUMBERS = ["nan", "NaN", "inf", "-inf", "Infinity", "-1", "0", "-0", "1e309", "1e-320", "10" * 200, "9" * 5000,
           "1_000", "0x10", "+5", " 7 ", "5.5", "15.0", "½", "²", "١٢", "1,5", "1e3", "-9223372036854775809",
           "18446744073709551616", "0.99", "0.990001", "100", "100.0000001", "2", "1"]
WEIRD = ["", " ", "\t\n", "\x00", "a\x00b", "\x1b[31mred", "\u202eevil\u202c", "שלום עולם", "مرحبا",
         "🏦", "🏦" * 300, "👨‍👩‍👧", "\ufeff", "\u200b", "\ud7ff", "x" * 20_000, "a,b,c", ",,,", "%00", "%",
         "true", "yes", "maybe", "None", "null", "[]", "{}", "'", '"', "\\", "..", "../../etc/passwd",
         "head,mean", "pca,tsne", "bert-eltec,bert-eltec", "BERT-ELTEC", " pca ", "Pca"]
HOSTILE = MARKUP + NUMBERS + WEIRD

# Every character a browser can send (no surrogates), control characters included.
any_text = st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=40)
scalar = st.one_of(
    st.sampled_from(HOSTILE),
    any_text,
    st.integers(min_value=-(10**40), max_value=10**40).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)


def values(valid: list[str]) -> st.SearchStrategy:
    """A parameter's value as a link may carry it: valid, hostile, or repeated (a list)."""
    one = st.one_of(st.sampled_from(valid), scalar) if valid else scalar
    return st.one_of(one, st.lists(one, min_size=2, max_size=3))


# -- what each page reads from the URL ---------------------------------------------------------------------------

BOOL = ["1", "0", "true", "false", "yes", "no", "on", "off"]
PRESETS = sorted(p.stem for p in (ROOT / "assets" / "examples" / "senses").glob("*.txt"))
MODELS = ["bert-eltec", "elmo-eltec", "static-eltec", "bert-no-mlm"]
NUMERIC = {  # param: (kind, low, high, widget)
    "seed": (int, 0, 10_000, "number_input"),
    "neighbors": (int, 2, 100, "slider"),
    "min_dist": (float, 0.0, 0.99, "slider"),
    "perplexity": (float, 2.0, 100.0, "slider"),
    "k": (int, 1, 20, "slider"),
    "fold": (int, 1, 50, "number_input"),
    "limit": (int, 100, 5000, "slider"),
    "sample": (int, 0, 10_000, "number_input"),
    "att_layer": (int, 1, 2, "slider"),  # the tiny BERTs: 2 layers, 2 heads
    "att_head": (int, 1, 2, "slider"),
    "att_threshold": (float, 0.0, 0.5, "slider"),
    "focus_k": (int, 1, 50, "number_input"),
    "ft_sentences": (int, 20, 500, "number_input"),
    "ft_att_layer": (int, 1, 2, "slider"),
    "ft_att_head": (int, 1, 2, "slider"),
    "step": (int, 1, 8, "selectbox"),  # the lesson's eight steps
    "learn_seed": (int, 0, 999_999, "number_input"),
    "learn_n": (int, 20, 500, "number_input"),
}
CHOICES = {  # param: (options, widget)
    "source": (["preset", "own", "semcor", "corpus"], "radio"),
    "lemma": (["bank.n"], "selectbox"),
    "corpus": (["banks.txt"], "selectbox"),
    "colour": (["sense", "cluster", "dictionary"], "radio"),
    "clusters": (["auto"] + [str(k) for k in range(2, 9)], "selectbox"),
    "projection": (["umap", "pca", "tsne"], "selectbox"),
    "preset": (PRESETS, "selectbox"),
    "view": (["head", "mean", "rollout"], "radio"),
    "overview": (["auto", "maps", "summary"], "radio"),
    "rank_by": (list(att.SUMMARY_COLUMNS), "selectbox"),
    "att_model": (["bert-eltec", "bert-no-mlm"], "selectbox"),
    "probe_model": (["bert-eltec", "elmo-eltec", "bert-no-mlm"], "selectbox"),
    "inflect": (BOOL, "checkbox"),
    "joint": (BOOL, "checkbox"),
    "merge": (BOOL, "checkbox"),
    "hide": (BOOL, "checkbox"),
    "rank_ascending": (BOOL, "checkbox"),
    "whole_words": (BOOL, "checkbox"),
    "why": (BOOL, "toggle"),
    "qk": (BOOL, "toggle"),
    "near": (BOOL, "toggle"),
    "wsd": (BOOL, "toggle"),
    "lens": (BOOL, "toggle"),
    "try": (BOOL, "toggle"),
    "try_senses": (BOOL, "checkbox"),
    "reveal": (BOOL, "toggle"),
    "dims": (["2", "3"], "radio"),
    "labels": (["off", "number", "words"], "radio"),
    "fill_mode": (["masks", "word"], "radio"),
    "why_by": (["hiding", "gradients", "both"], "radio"),
    "image_format": (["png", "svg"], "radio"),
    "ft_split": (["dev", "test"], "selectbox"),
    "ft_layer": (["0", "1", "2"], "selectbox"),  # the tiny BERT's embeddings, layer 1, layer 2
    "ft_projection": (["pca", "umap"], "radio"),
    "learn_part": (["corruption", "directions", "electra", "pairs", "curves", "compute"], "radio"),
    "learn_wwm": (BOOL, "toggle"),
    "learn_measure": (BOOL, "toggle"),
    "learn_bert": (["bert-eltec"], "selectbox"),
}
MANY = {"models": MODELS, "fill_models": ["bert-eltec"], "try_models": MODELS}
TEXT = {"word": ["bank", "zebra"], "corpus_word": ["bank", "zebra", "bank's"],
        "sentences": ["The bank. | a\nThe bank! | b"],
        "sentence": ["He came from the bank."], "pair": ["She went home."],
        "text": ["The [MASK] was by the river.", "The bank is here.", "The <mask> and the [mask]."],
        "blank": ["bank", "the (2)", "The", "river"], "why_guess": ["bank", "zebrafish", "river"],
        # a position among the sentence's pieces: its range depends on the sentence, so only sent, not checked
        "qk_from": ["0", "2", "15", "999"],
        "occ": ["1", "3", "0", "999"],  # an occurrence's number: its range depends on the word, as qk_from's
        "focus": ["1", "3", "0", "999"], "att_token": ["0", "2", "999"],  # as occ's and qk_from's
        "axis_from": ["money", "zebra", "", "two words", "bank"], "axis_to": ["river", "money", "bank's"],
        "point": ["2:bert-eltec:2", "999:bert-eltec:1", "x", "1:elmo-eltec:0"],
        "try_a": ["We sat on the bank.", ""], "try_b": ["The bank lent money.", "No such word here."],
        "try_word": ["bank", "Bank", "", "river bank"],
        "compare": ["The [MASK] was by the sea.", "No blank here.", "[MASK] and [MASK]"],
        "find": ["river", "river, money", " ,, ", "zebra", "a b c d e f g h i j k"],
        "learn_text": ["The bankers sat by the river.", "The [MASK] was here.", "x " * 61],
        "learn_a": ["She walked to the bank to fish.", "No such word here."],
        "learn_b": ["She walked to the bank to pay.", ""], "learn_word": ["bank", "zebra", "", "river bank"],
        "learn_pa": ["She opened the door.", ""], "learn_pb": ["It was dark.", "x " * 61],
        "learn_pc": ["Wheat was dear."]}
EVERY_PAGE = {"present": BOOL, "image_format": ["png", "svg"]}
PAGE_PARAMS = {
    "overview": ["try", "try_a", "try_b", "try_word", "try_models", "try_senses"],
    "word_senses": ["source", "preset", "word", "sentences", "inflect", "models", "projection", "seed", "neighbors",
                    "min_dist", "perplexity", "joint", "layer", "lemma", "fold", "limit", "sample", "corpus",
                    "corpus_word", "colour", "clusters", "near", "find", "wsd", "occ", "dims", "labels", "focus",
                    "focus_k", "axis_from", "axis_to", "point"],
    "attention": ["att_model", "sentence", "pair", "merge", "hide", "view", "rank_by", "rank_ascending", "att_layer",
                  "att_head", "att_threshold", "overview", "qk", "qk_from", "att_token"],
    "fill_in": ["text", "fill_models", "k", "whole_words", "fill_mode", "blank", "why", "why_by", "why_guess",
                "compare", "lens"],
    "elmo_layers": ["probe_model"],
    "lesson": ["step", "reveal"],
    "models": [],
    "how_they_learn": ["learn_part", "learn_text", "learn_seed", "learn_wwm", "learn_bert", "learn_a", "learn_b",
                       "learn_word", "learn_pa", "learn_pb", "learn_pc", "learn_measure", "learn_n"],
    # ft_model and ft_base name the operator's folders (paths made by the fixture): hostile values only
    "fine_tuning": ["ft_model", "ft_base", "ft_split", "ft_sentences", "ft_layer", "ft_projection", "ft_att_layer",
                    "ft_att_head"],
}
PAGES = list(PAGE_PARAMS)
LAYER = ["2:bert-eltec", "1:elmo-eltec", "mix:elmo-eltec", "0:static-eltec", "9:bert-eltec", "²:bert-eltec",
         "bert-eltec", "-1:elmo-eltec"]


def valid_values(param: str) -> list[str]:
    if param in NUMERIC:
        kind, lo, hi, _ = NUMERIC[param]
        return [str(lo), str(hi), str(kind((lo + hi) / 2))]
    if param in CHOICES:
        return CHOICES[param][0]
    if param in MANY:
        return MANY[param] + [",".join(MANY[param][:2])]
    if param == "layer":
        return LAYER
    return TEXT.get(param) or EVERY_PAGE.get(param, [])


def query_for(page: str) -> st.SearchStrategy:
    params = PAGE_PARAMS[page] + list(EVERY_PAGE)
    return st.fixed_dictionaries({}, optional={p: values(valid_values(p)) for p in params})


# -- the app -----------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_assets(tmp_path_factory) -> Path:
    return build_tiny_assets(tmp_path_factory.mktemp("tiny-assets"))


@pytest.fixture(scope="module", autouse=True)
def app_env(tiny_assets, tmp_path_factory):
    mp = pytest.MonkeyPatch()
    tmp = tmp_path_factory.mktemp("fuzz")
    mp.setenv("CTXMODELS_ASSETS", str(tiny_assets))
    mp.setenv("CTXMODELS_APP_RUNS", str(tmp / "runs"))
    mp.setenv("CTXMODELS_CACHE", str(tmp / "cache"))
    # A tiny SemCor and a small corpus: the sources' code paths, at the cost of a few sentences a case.
    mp.setenv("CTXMODELS_DATA", str(write_semcor(tmp / "data")))
    mp.setenv("CTXMODELS_APP_CORPORA", str(write_sense_corpus(tmp / "banks.txt", 60)))
    # a fine-tuned tiny BERT for the fine-tuning page (a real `ctxmodels finetune`, a few steps)
    mp.setenv("CTXMODELS_APP_MODELS", str(finetune_tiny(tiny_assets / "bert-eltec", write_tag_task(tmp / "tags.conll"),
                                                        tmp / "bert-tags", steps=5)))
    for var in ("CTXMODELS_ALLOW_PATHS", "CTXMODELS_ALLOW_UPLOADS", "CTXMODELS_ALLOW_TRAINING",
                "CTXMODELS_HEAVY_PER_SESSION", "CTXMODELS_ALLOW_DOWNLOADS"):
        mp.delenv(var, raising=False)
    yield
    mp.undo()


@pytest.fixture(scope="module", autouse=True)
def report(request):
    yield
    total = sum(CASES.values())
    out = ROOT / "test-artifacts"
    out.mkdir(exist_ok=True)
    (out / "fuzz-app-cases.json").write_text(json.dumps({"total": total, "cases": dict(sorted(CASES.items())),
                                                         "found": FOUND}, indent=1), encoding="utf-8")
    line = f"fuzz harness (app): {total} cases run: " + ", ".join(f"{k} {v}" for k, v in sorted(CASES.items()))
    show_past_capture(request.config, line)


def open_page(name: str, query: dict | None = None) -> AppTest:
    at = AppTest.from_file(HOME, default_timeout=TIMEOUT)
    at.query_params.update(query or {})
    return opening(at, name).run()


def texts(elements) -> list[str]:
    return [str(e.value) for e in elements]


# -- the checks ---------------------------------------------------------------------------------------------------

WIDGETS = ("text_input", "text_area", "selectbox", "multiselect", "radio", "slider", "select_slider", "checkbox",
           "toggle", "number_input", "button", "expander", "tabs", "metric")
# What Markdown would turn into something other than the characters typed, when it is not escaped.
UNESCAPED = [re.compile(p) for p in (
    r"(?<!\\)!(?<!\\)\[",  # image
    r"(?<!\\)\]\(",  # link
    r"(?<!\\)<(?:img|i|a|b|script)\b",  # raw HTML
    r"(?<!\\)\$HOST",  # math
    r"(?<!\\):red\[",  # Streamlit's colour directive
    r"(?<!\\)`HOST",  # code
    r"(?i)www\.HOST",  # autolink
    r"@HOST",  # e-mail autolink
)]
# the tags the figures write themselves (hover text, highlighted words, a word that is not hidden in a "rests on"
# chart, the subtitle of the guesses layer by layer)
FIGURE_TAGS = {"b", "br", "extra", "i", "sup"}


def markdown_bodies(at: AppTest) -> list[str]:
    """Every text the page hands to Streamlit's Markdown renderer: bodies, labels, options."""
    out = []
    for kind in ("markdown", "caption", "info", "warning", "error", "success", "title", "subheader", "header"):
        out += [str(e.value) for e in at.get(kind)]
    for kind in WIDGETS:
        for w in at.get(kind):
            label = getattr(w, "label", None) or getattr(getattr(w, "proto", None), "label", None)
            if label:
                out.append(str(label))
            if kind in ("radio", "select_slider"):
                out += [str(o) for o in getattr(w, "options", [])]
    return out


def figure_strings(at: AppTest) -> list[str]:
    found: list[str] = []
    for chart in at.get("plotly_chart"):
        _strings(json.loads(chart.proto.spec), found)
    return found


def _strings(x, found: list[str]) -> None:
    if isinstance(x, str):
        found.append(x)
    elif isinstance(x, dict):
        for v in x.values():
            _strings(v, found)
    elif isinstance(x, (list, tuple)):
        for v in x:
            _strings(v, found)


def check_page(at: AppTest, case: str) -> None:
    """The checks every case shares: no traceback, no bug box, nothing rendered as markup."""
    problems = [f"traceback: {t[:300]}" for t in texts(at.exception)]
    problems += [f"bug box: {e[:300]}" for e in texts(at.error) if "failed unexpectedly" in e]
    for body in markdown_bodies(at):
        for pattern in UNESCAPED:
            if "HOST" in body and pattern.search(body):
                problems.append(f"markup from the input in {body[:200]!r}")
    for s in figure_strings(at):
        tags = {t.lower() for t in re.findall(r"<\s*/?\s*([a-zA-Z]+)", s)}
        if tags - FIGURE_TAGS or "<b>HOSTB" in s:
            problems.append(f"HTML in a figure: {s[:200]!r}")
    if problems:
        FOUND.extend(f"{case}: {p}" for p in problems)
    assert not problems, (case, problems)


def last(value):
    return value[-1] if isinstance(value, list) else value


def expected_number(raw: str, kind: type, lo: float, hi: float) -> float | None:
    """The value a link's number should reach its widget as, or None when it is not allowed as given."""
    text = raw.strip()
    if len(text) > 40:
        return None
    try:
        x = float(text)
    except ValueError:
        return None
    if not math.isfinite(x) or (kind is int and not x.is_integer()) or not lo <= x <= hi:
        return None
    return int(x) if kind is int else x


def warned_about(at: AppTest, param: str) -> bool:
    name = inputs.md(param)
    return any(f"**{name}**" in w for w in texts(at.warning))


def widget(at: AppTest, kind: str, key: str):
    return next((w for w in at.get(kind) if getattr(w, "key", None) == key), None)


def check_query(at: AppTest, page: str, query: dict) -> None:
    """Each parameter given: allowed → its widget shows it, no warning; not allowed → a warning names it and the
    widget holds an allowed value."""
    problems = []
    for param, value in query.items():
        raw = last(value)
        repeated = isinstance(value, list)
        if param in NUMERIC and param in PAGE_PARAMS[page]:
            kind, lo, hi, wkind = NUMERIC[param]
            w = widget(at, wkind, param)
            if w is None:
                continue
            want = expected_number(raw, kind, lo, hi)
            if not lo <= w.value <= hi:
                problems.append(f"{param}={raw!r}: widget holds {w.value}, outside {lo}..{hi}")
            if want is None and not warned_about(at, param):
                problems.append(f"{param}={raw!r}: replaced by {w.value} without a warning")
            if want is not None and not math.isclose(w.value, want, rel_tol=1e-9, abs_tol=1e-9):
                problems.append(f"{param}={raw!r}: widget holds {w.value}, not {want}")
            if want is not None and not repeated and warned_about(at, param):
                problems.append(f"{param}={raw!r}: an allowed value was warned about")
        elif param in CHOICES and param in PAGE_PARAMS[page] + list(EVERY_PAGE):
            options, wkind = CHOICES[param]
            w = widget(at, wkind, param)
            if w is None:
                continue
            if wkind in ("checkbox", "toggle"):
                ok = raw.strip().lower() in BOOL
                if ok and w.value != (raw.strip().lower() in ("1", "true", "yes", "on")):
                    problems.append(f"{param}={raw!r}: checkbox is {w.value}")
            else:
                ok = raw.strip().casefold() in {o.casefold() for o in options}
                if ok and str(w.value).casefold() != raw.strip().casefold():
                    problems.append(f"{param}={raw!r}: widget holds {w.value!r}")
            if not ok and not warned_about(at, param):
                problems.append(f"{param}={raw!r}: replaced by {w.value!r} without a warning")
        elif param in MANY and param in PAGE_PARAMS[page]:
            entries = [e.strip() for v in (value if repeated else [value]) for e in v.split(",") if e.strip()]
            known = {m.casefold() for m in MANY[param]}
            if any(e.casefold() not in known for e in entries) and not warned_about(at, param):
                problems.append(f"{param}={value!r}: unknown models left out without a warning")
    if problems:
        FOUND.extend(f"{page} {query!r}: {p}" for p in problems)
    assert not problems, problems


# -- query parameters, every page -------------------------------------------------------------------------------


def run_query_case(page: str, query: dict) -> AppTest:
    base = {"projection": "pca"} if page == "word_senses" and "projection" not in query else {}
    at = open_page(page, {**base, **query})
    CASES[f"query:{page}"] += 1
    check_page(at, f"{page} {query!r}")
    check_query(at, page, query)
    return at


@pytest.mark.parametrize("page", PAGES)
def test_hostile_query_parameters(page):
    """Every page, every parameter it reads, generated values."""

    @settings(max_examples=n(6 if page in ("overview", "models") else 10), deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(query=query_for(page))
    def case(query):
        run_query_case(page, query)

    case()


@pytest.mark.parametrize("page", [p for p in PAGES if PAGE_PARAMS[p]])
@pytest.mark.parametrize("value", ["1000", "0", "-1", "5", "inf", "nan", "9" * 400, "🏦", "\x00",
                                   "![x](http://HOST/t.png)", "<img src=http://HOST/t.png>", "x" * 20_000])
def test_every_parameter_of_a_page_at_once(page, value):
    """The issue's classes, deterministic: one hostile value in every parameter of a page at once; in as few groups
    as Streamlit reads (it ignores a whole query string over 512 KiB, and 32 parameters of 20,000 characters are
    more, so the page would see none of them)."""
    params = PAGE_PARAMS[page]
    from streamlit.runtime.state.query_params import CLIENT_STATE_QUERY_STRING_MAX_LENGTH as limit

    per_query = max(1, limit // (len(value.encode()) * 3 + len(max(params, key=len)) + 2))  # %-escaped, at worst
    for start in range(0, len(params), per_query):
        run_query_case(page, {p: value for p in params[start:start + per_query]})



def test_hostile_query_parameters_on_a_spent_budget(monkeypatch):
    """Word senses with a visitor's budget too small for anything (app/kit/budget.py): whatever the link asks, the
    work it cannot do ends in a warning, never a traceback or a "bug" box."""
    monkeypatch.setenv("CTXMODELS_VISITOR_SECONDS", "0.001")
    said: list[str] = []

    @settings(max_examples=n(10), deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(query=query_for("word_senses"))
    @example(query={"source": "corpus", "corpus_word": "drifted", "limit": "4300"})  # embedded by no other case
    def case(query):
        at = run_query_case("word_senses", query)
        said.extend(w for w in texts(at.warning) if "this server gives one computation" in w)

    case()
    assert said, "no case went over the budget: the test did not test it"


@pytest.mark.slow
@pytest.mark.parametrize("page", ["word_senses", "attention", "fill_in"])
def test_hostile_query_parameters_more(page):
    @settings(max_examples=n(25), deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(query=query_for(page))
    def case(query):
        run_query_case(page, query)

    case()


def test_issue_examples():
    """The cases issue 14 names."""
    at = run_query_case("attention", {"sentence": "He came from the bank."})
    assert at.get("plotly_chart"), "no attention figure for a sentence with 'from'"
    for query in ({"neighbors": "1000"}, {"neighbors": "0"}, {"min_dist": "5"}, {"perplexity": "inf"}):
        at = run_query_case("word_senses", query)
        assert warned_about(at, next(iter(query))), texts(at.warning)
    at = run_query_case("word_senses", {"source": "own", "word": "bank",
                                        "sentences": "![x](http://HOST/t.png)\nThe bank. | a\nThe bank! | b"})
    assert any("does not occur" in w for w in texts(at.warning))


# -- text boxes -----------------------------------------------------------------------------------------------

bad_text = st.one_of(
    st.sampled_from(HOSTILE + ["[MASK]", "[MASK] " * 300, "[mask]", "[MASK]" * 3, "word " * 2000, "bank " * 700,
                               "\n".join(["bank"] * 500), " \u3000\u2003 ", "\x00" * 50, "🏦 bank 🌊 [MASK]",
                               "The <b>bank</b> of the [MASK]. | ![x](http://HOST/t.png)"]),
    any_text,
    st.text(alphabet=st.characters(codec="ascii"), max_size=300),
    st.lists(st.sampled_from(MARKUP + ["bank", "[MASK]", "from", "index", "the", "\x00", "🏦"]), max_size=12).map(
        " ".join),
)


@pytest.fixture(scope="module")
def attention_app() -> AppTest:
    return open_page("attention", {"qk": "1"})  # with the query · key view: each text's tokens are its rows too


@pytest.fixture(scope="module")
def fill_in_app() -> AppTest:
    return open_page("fill_in")


@pytest.fixture(scope="module")
def senses_app() -> AppTest:
    at = open_page("word_senses", {"projection": "pca", "models": "bert-eltec,static-eltec", "near": "1"})
    at.radio(key="source").set_value("own").run()
    return at


INPUT_ERRORS = ("The sentence:", "Your sentences:")  # the boxes a page's own input checks write


def kept_what_it_had(at: AppTest, case: str) -> None:
    """After an input error, the page still shows the last input that worked (this session had one). (An error
    about one model, such as static vectors without the word, leaves the other models' results on the page.)"""
    refused = any(e.startswith(INPUT_ERRORS) for e in texts(at.error))
    if refused and not any("Below: the last" in i for i in texts(at.info)):
        FOUND.append(f"{case}: the error replaced what the page showed")
        raise AssertionError((case, texts(at.error)))


@settings(max_examples=n(20), deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(sentence=bad_text, pair=st.one_of(st.just(""), bad_text))
def test_attention_text_boxes(attention_app, sentence, pair):
    at = attention_app
    at.text_input(key="sentence").set_value(sentence)
    at.text_input(key="pair").set_value(pair)
    at.run()
    CASES["text:attention"] += 1
    case = f"attention sentence={sentence[:80]!r} pair={pair[:80]!r}"
    check_page(at, case)
    kept_what_it_had(at, case)
    assert at.get("plotly_chart"), "the last good maps are gone"


@settings(max_examples=n(20), deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(text=bad_text)
def test_fill_in_text_box(fill_in_app, text):
    at = fill_in_app
    at.session_state["_st_keyup_text_live"] = {"value": text}  # what the keystroke box reports
    at.run()
    CASES["text:fill_in"] += 1
    case = f"fill_in text={text[:80]!r}"
    check_page(at, case)
    kept_what_it_had(at, case)
    if not any("no `[MASK]`" in i for i in texts(at.info)):
        return
    at.radio(key="fill_mode").set_value("word").run()  # no [MASK]: hide a word or two in turn
    CASES["text:fill_in"] += 1
    check_page(at, case + " hiding a word")
    box = widget(at, "selectbox", "blank")
    for i in range(min(2, len(box.options)) if box is not None else 0):
        option = box.options[i].rsplit("  · word ", 1)[0]  # shown with its position: "bank  · word 6"
        widget(at, "selectbox", "blank").set_value(option).run()
        CASES["text:fill_in"] += 1
        check_page(at, case + f" hiding {option[:40]!r}")
    at.radio(key="fill_mode").set_value("masks").run()


@settings(max_examples=n(15), deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(sentences=st.one_of(bad_text, st.lists(bad_text, min_size=1, max_size=5).map("\n".join),
                           st.just("The bank was closed. | money\nWe sat on the bank. | river")),
       word=st.one_of(st.sampled_from(["bank", "Bank", "banks", "", " ", "[MASK]", "🏦", "\x00", "from",
                                       "river bank", "x" * 500, "<b>bank</b>", "![x](http://HOST/t.png)"]),
                      any_text))
def test_word_senses_text_boxes(senses_app, sentences, word):
    at = senses_app
    at.text_area(key="sentences").set_value(sentences)
    at.text_input(key="word").set_value(word)
    at.run()
    CASES["text:word_senses"] += 1
    case = f"word_senses sentences={sentences[:80]!r} word={word[:40]!r}"
    check_page(at, case)
    kept_what_it_had(at, case)


@pytest.fixture
def models_app(monkeypatch) -> AppTest:
    monkeypatch.setenv("CTXMODELS_ALLOW_PATHS", "1")  # the operator allows loading from a path: a text box
    return open_page("models")


ASSETS = "{assets}"  # the tiny models' folder, filled in by the test


@settings(max_examples=n(10), deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(source=st.one_of(
    st.sampled_from(["", " ", "no/such/model", "../../etc/passwd", "models--x--y", "ORG/NAME", "a\x00b", ASSETS,
                     f"{ASSETS}/corpus.txt", f"{ASSETS}/examples", f"{ASSETS}/static-eltec/config.json", "~"]),
    st.sampled_from(MARKUP), any_text))
@example(source="." * 300)  # found by this test: a name too long for the file system was a "bug" box
def test_models_page_path_box(models_app, tiny_assets, source):
    """What a visitor may type as a model's path or name when the operator allows it (no device files or pipes
    here: opening those is the loaders' part, tested with them)."""
    at = models_app
    source = source.replace(ASSETS, str(tiny_assets))
    at.text_input[0].set_value(source)
    next(b for b in at.get("form_submit_button") if b.label == "Load").click()
    at.run()
    CASES["text:models"] += 1
    check_page(at, f"models path={source[:80]!r}")
    assert at.error or at.success, texts(at.warning)


# The classes the issue names, each on every text page: (text, the pages that must refuse it with a message).
ALL = {"attention", "fill_in"}
NAMED_TEXTS = [
    ("", ALL), ("  \t \u3000 ", ALL), ("word " * 2000, ALL), ("x" * 10_000, ALL), ("\x00" * 5, ALL),
    ("\x07\x1b[31m", ALL), ("a\x00b bank [MASK]", ALL), ("[MASK] " * 50, {"fill_in"}), ("🏦 💙 🌊", set()),
    ("שלום bank [MASK] עולם", set()), ("\u202ebank [MASK]\u202c", set()), ("The boat reached the river.", set()),
    ("The <b>bank</b> ![x](http://HOST/t.png) [MASK] $HOST$", set()),
]


@pytest.mark.parametrize("text, says", NAMED_TEXTS, ids=range(len(NAMED_TEXTS)))
def test_text_boxes_with_the_named_classes(attention_app, fill_in_app, senses_app, text, says):
    """Empty, whitespace, 2,000 words, emoji, control characters, NUL, right-to-left, no [MASK], markup: a message
    where the input cannot be used, never a traceback, and the last good result stays."""
    at = attention_app
    at.text_input(key="sentence").set_value(text)
    at.text_input(key="pair").set_value("")
    at.run()
    CASES["named:attention"] += 1
    check_page(at, f"attention {text[:40]!r}")
    kept_what_it_had(at, f"attention {text[:40]!r}")
    assert "attention" not in says or at.error, ("attention", text[:40], texts(at.warning))

    at = fill_in_app
    at.session_state["_st_keyup_text_live"] = {"value": text}
    at.run()
    CASES["named:fill_in"] += 1
    check_page(at, f"fill_in {text[:40]!r}")
    kept_what_it_had(at, f"fill_in {text[:40]!r}")
    assert "fill_in" not in says or at.error, ("fill_in", text[:40])
    if "[MASK]" not in text and not at.error:  # hiding a word instead is a plain choice: an info, not a warning
        assert any("no `[MASK]`" in i for i in texts(at.info)), texts(at.info)

    at = senses_app
    at.text_area(key="sentences").set_value(text + "\nThe bank was closed. | money\nWe sat on the bank. | river")
    at.text_input(key="word").set_value("bank")
    at.run()
    CASES["named:word_senses"] += 1
    check_page(at, f"word_senses {text[:40]!r}")
    kept_what_it_had(at, f"word_senses {text[:40]!r}")
    if text.strip() and "bank" not in text:  # a sentence without the word is named and left out, or refused
        assert at.error or any("does not occur" in w for w in texts(at.warning)), texts(at.warning)
    at.text_input(key="word").set_value("zebra").run()  # a word that is in no sentence
    CASES["named:word_senses"] += 1
    assert at.error and not at.exception
    kept_what_it_had(at, "word_senses zebra")


# -- the pure pieces, many examples --------------------------------------------------------------------------------


def rendered_inline(markdown: str) -> tuple[list[str], str]:
    """What CommonMark (with GitHub's tables and strikethrough) makes of ``markdown``: the token types and the
    text shown."""
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").enable(["table", "strikethrough"]).parse(markdown)
    kinds, shown = [], []
    for t in tokens:
        if t.type == "inline":
            for c in t.children or []:
                kinds.append(c.type)
                shown.append(c.content if c.type == "text" else "\n" if c.type in ("hardbreak", "softbreak") else "")
        elif t.type not in ("paragraph_open", "paragraph_close"):
            kinds.append(t.type)
    return kinds, "".join(shown)


@settings(max_examples=n(400), deadline=None, database=None)
@given(text=st.one_of(st.sampled_from(HOSTILE), any_text,
                      st.lists(st.sampled_from(MARKUP + list("*_[]()!<>&`$:|#~-+=.\\ \n") + ["1.", "www."]),
                               max_size=10).map("".join)))
def test_md_shows_exactly_the_characters(text):
    """Markdown made by ``md`` is one paragraph of plain text (and line breaks) showing the input's characters."""
    CASES["pure:md"] += 1
    out = inputs.md(text)
    kinds, shown = rendered_inline(out)
    assert set(kinds) <= {"text", "hardbreak", "softbreak"}, (text, out, kinds)
    lines = [line.strip() for line in re.split(r"\r\n|[\r\n\x0b\x0c\x1c-\x1e\x85\u2028\u2029]", text)]
    want = "\n".join(line for line in lines if line).replace("\x00", "\ufffd")
    assert shown.replace("\x00", "\ufffd").replace("\u2060", "") == want, (text, out)
    # Streamlit's own syntax on top of CommonMark: $math$, :directives[...] and :material/icons:
    assert not re.search(r"(?<!\\)[$:]", out), out
    assert ":material/" not in out
    # GitHub's autolinks, which are found in the text after escapes are read
    assert not re.search(r"(?i)https?://|www\.|@[-\w]", shown), (text, out)


@settings(max_examples=n(400), deadline=None, database=None)
@given(raw=scalar, spec=st.sampled_from(list(NUMERIC.items())))
def test_url_numbers_are_clamped_or_replaced_with_a_reason(raw, spec):
    CASES["pure:url numbers"] += 1
    param, (kind, lo, hi, _) = spec
    default = kind((lo + hi) / 2)
    value, problem = _read(raw, default, None, kind, lo, hi, None, None)
    assert isinstance(value, kind) and lo <= value <= hi and math.isfinite(value)
    want = expected_number(raw, kind, lo, hi)
    if want is None:
        assert problem and ("from" in problem or "range" in problem), (raw, problem)
    else:
        assert problem is None and value == want


@settings(max_examples=n(300), deadline=None, database=None)
@given(raw=scalar, options=st.sampled_from([["head", "mean", "rollout"], [0, 1, 2, "mix"], ["png", "svg"], []]),
       many=st.booleans())
def test_url_choices_are_one_of_the_options_or_reported(raw, options, many):
    CASES["pure:url choices"] += 1
    default = _LEFT_OUT if many else (options[0] if options else None)
    value, problem = _read(raw, default, options, None, None, None, None, None)
    if problem is None:
        assert value in options and str(value).casefold() == raw.strip().casefold()
    else:
        assert value is default


@settings(max_examples=n(200), deadline=None, database=None)
@given(raw=scalar)
def test_url_booleans(raw):
    CASES["pure:url booleans"] += 1
    value, problem = _read(raw, True, None, bool, None, None, None, None)
    assert isinstance(value, bool)
    assert (problem is None) == (raw.strip().lower() in BOOL)


tokens = st.lists(st.one_of(st.sampled_from(["from", "index", "to", "from", "[CLS]", "[SEP]", "0:x", "", " ",
                                             "<b>", "<i>HOST</i>", "&amp;", "🏦", "\x00", "nan"]), any_text),
                  min_size=1, max_size=12)


@settings(max_examples=n(200), deadline=None, database=None)
@given(toks=tokens)
def test_attention_map_table_any_tokens(toks):
    """Issue 14's "cannot insert from": any tokens, repeated or named like a column, make a table."""
    CASES["pure:map_table"] += 1
    m = np.random.default_rng(0).random((len(toks), len(toks)))
    table = att.map_table(m, toks)
    assert table.shape == (len(toks), len(toks) + 1)
    assert table.columns.is_unique and table.columns[0] == "from"
    assert np.allclose(table.iloc[:, 1:].to_numpy(dtype=float), m)
    table.to_csv(index=False)


def tags_in(fig) -> set[str]:
    strings: list[str] = []
    _strings(fig.to_plotly_json(), strings)
    return {t.lower() for s in strings for t in re.findall(r"<\s*/?\s*([a-zA-Z]+)", s)}


@settings(max_examples=n(100), deadline=None, database=None)
@given(toks=tokens, title=st.one_of(st.sampled_from(MARKUP), any_text))
def test_figures_show_text_as_typed(toks, title):
    """No figure turns a token, label, name or title into HTML."""
    CASES["pure:figures"] += 1
    k = len(toks)
    m = np.full((k, k), 1.0 / k)
    figs = [
        figures.attention_heatmap(m, toks, title=title),
        attention_figures.attention_lines(m, toks, title=title),
        fill_figures.fill_bars([{"token": t, "prob": 0.1} for t in dict.fromkeys(toks)], title=title, truth=toks[0]),
        scatter.sense_scatter(np.zeros((k, 2)), toks, [figures.highlight(t, (0, len(t))) for t in toks], title=title),
        figures.layer_panels([{"model": t, "layer": i, "layer_name": t, "x": 0.5} for i, t in enumerate(toks)],
                             [("x", title, title, {title: 0.5})]),
        layers_figures.mix_weights_bars(toks, [1.0 / k] * k, 1.0, title=title),
        figures.loss_chart([{"step": 1, "loss": 1.0}], title=title),
        attention_figures.query_key_view(toks, k - 1, np.ones(3), np.ones((k, 3)), np.ones((k, 3)),
                                         np.full(k, 1.0 / k), title=title),
        fill_figures.blank_change_bars({"words": list(dict.fromkeys(toks)), "prob_a": [0.1] * len(set(toks)),
                                        "prob_b": [0.2] * len(set(toks))}, title=title),
        overview_figures.same_word_lines(
            {t: {"layer_names": [t, title], "cosine": [1.0, 0.5], "baseline": [0.2, None]}
             for t in dict.fromkeys(toks)}, toks[0], title=title),
        senses_figures.neighbour_pos_bars(
            [{"layer": t, "pos": "NOUN", "same": 1, "other": 2} for t in dict.fromkeys(toks)],
            {t: title for t in toks}, 3, title=title),
    ]
    senses_figures.add_layer_path(figs[3], np.zeros((k, 2)), toks)
    for fig in figs:
        assert tags_in(fig) <= FIGURE_TAGS, (toks, title, tags_in(fig))


# -- in a real browser ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def served(tmp_path_factory, tiny_assets):
    from tests.test_browser import start_server

    yield from start_server(tmp_path_factory, tiny_assets)


@pytest.fixture(scope="module")
def chromium():
    from tests.test_browser import CHROMIUM_ARGS, chromium_path

    path = chromium_path()
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
        yield b
        b.close()


HOSTILE_LINKS = [
    "attention?sentence=He+came+from+the+bank.&pair=%3Cimg+src%3Dhttp%3A%2F%2F127.0.0.1%3A9%2Fa.png%3E",
    "word_senses?projection=pca&source=own&word=bank&neighbors=1000&min_dist=5&perplexity=inf"
    "&sentences=%21%5Bx%5D%28http%3A%2F%2F127.0.0.1%3A9%2Ft.png%29+www.example.com+a%40example.com%0A"
    "The+bank+was+closed.+%7C+money%0AWe+sat+on+the+bank.+%7C+river",
    "word_senses?projection=pca&source=own&word=%21%5Bx%5D%28http%3A%2F%2F127.0.0.1%3A9%2Fw.png%29"
    "&sentences=The+bank.",
    "fill_in?text=%5BMASK%5D+%2A%2Abold%2A%2A+%3Ared%5Bx%5D+%24x%24&k=-5",
]


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.parametrize("link", HOSTILE_LINKS, ids=["attention", "senses-sentences", "senses-word", "fill_in"])
def test_hostile_links_in_a_real_browser(served, chromium, link):
    """What the browser draws from a hostile link: no traceback, no image, link or markup from it, nothing
    fetched from an address in it."""
    from tests.test_browser import no_traceback, settle

    page = chromium.new_page(viewport={"width": 1400, "height": 1000})
    fetched = []
    outside = ("127.0.0.1:9", "example.com", "www.example.com")
    page.on("request", lambda r: fetched.append(r.url) if urlsplit(r.url).netloc in outside else None)
    page.goto(f"{served}/{link}")
    settle(page)
    CASES["browser"] += 1
    no_traceback(page)
    main = page.locator('[data-testid="stMain"]')
    links = main.locator("a").evaluate_all("els => els.map(e => e.getAttribute('href') || '')")
    assert not [h for h in links if "127.0.0.1:9" in h or "example.com" in h], links
    assert main.locator("img").count() == 0
    assert main.locator("strong", has_text="bold").count() == 0
    math_shown = main.locator(".katex").evaluate_all(
        "els => els.filter(e => !e.closest('[data-testid=stExpander]')).length")
    assert math_shown == 0  # the formulas a page explains itself with sit in its "What am I looking at?" box
    assert not fetched, fetched
    page.close()
