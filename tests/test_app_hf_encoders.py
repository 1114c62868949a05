"""The app with encoders read through transformers: every page renders with a tiny RoBERTa, the fill-in page says
why an ELECTRA discriminator is not offered, and the Models page lists the Hugging Face cache and shows cards."""

from __future__ import annotations

import warnings

import pytest

from tests.app_fixtures import assert_clean, charts, page, texts
from tests.hf_tiny import as_hub_cache, build

pytest.importorskip("streamlit.testing.v1")
pytestmark = pytest.mark.usefixtures("app_env", "hub_models")


@pytest.fixture(scope="module")
def hub_folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("app-hf")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        folders = {name: build(family, root / name) for name, family in
                   (("tiny-roberta", "roberta"), ("tiny-electra-d", "electra-discriminator"),
                    ("tiny-deberta", "deberta-v2"))}
    as_hub_cache(folders.pop("tiny-deberta"), root / "hub", "someone/tiny-deberta")
    (root / "hub" / "models--someone--tiny-deberta" / "snapshots" / "0123abcd" / "README.md").write_text(
        "---\nlicense: mit\n---\n# tiny DeBERTa\n\nRandom weights, for tests.\n")
    return root, folders


@pytest.fixture
def hub_models(hub_folders, monkeypatch):
    root, folders = hub_folders
    monkeypatch.setenv("CTXMODELS_APP_MODELS", ",".join(str(f) for f in folders.values()))
    monkeypatch.setenv("HF_HUB_CACHE", str(root / "hub"))


@pytest.mark.parametrize("name, param", [
    ("overview", None), ("word_senses", "models"), ("elmo_layers", None), ("attention", "att_model"),
    ("fill_in", "fill_models"), ("models", None),
])
def test_every_page_renders_with_a_tiny_roberta(hub_folders, name, param):
    roberta = str(hub_folders[1]["tiny-roberta"])
    at = page(name, **({param: roberta} if param else {}))
    assert_clean(at)
    assert not at.warning or name == "fill_in", texts(at.warning)  # the link's model was taken, not replaced
    if param:
        assert at.session_state[param] in (roberta, [roberta]), at.session_state[param]
    if name in ("word_senses", "attention", "fill_in"):
        assert charts(at), f"{name} shows no figure"


def test_attention_of_roberta_hides_its_own_specials(hub_folders):
    roberta = str(hub_folders[1]["tiny-roberta"])
    at = page("attention", att_model=roberta, sentence="The bankers were banking.", merge="false")
    assert_clean(at)
    tokens = at.dataframe[0].value.loc["token"].tolist()
    assert tokens[0] == "<s>" and tokens[-1] == "</s>" and "##er" in tokens, tokens
    at.checkbox(key="hide").set_value(True).run()
    assert_clean(at)
    assert "</s>" not in charts(at)[1]["data"][0]["y"]


def test_fill_in_uses_robertas_mask_and_says_why_a_discriminator_is_not_offered(hub_folders):
    roberta = str(hub_folders[1]["tiny-roberta"])
    at = page("fill_in", fill_models=roberta, text="The bank of the [MASK] was steep.")
    assert_clean(at)
    assert len(charts(at)) == 1 and at.multiselect(key="fill_models").value == [roberta]
    shown = " ".join(texts(at.caption))
    assert "tiny-electra-d" in shown and "ELECTRA discriminator" in shown


@pytest.fixture
def forget_added():
    """The model a test adds from the Models page is offered to every later test of the process unless removed."""
    from app.kit.registry import registry

    before = registry().extra()
    yield
    with registry()._lock:
        registry()._extra[:] = [m for m in registry()._extra if m in before]


def test_models_page_lists_the_hub_cache_and_shows_a_card(forget_added, monkeypatch):
    at = page("models")
    assert_clean(at)
    # without --allow-paths the list is shown, but a visitor cannot load from it (it would be offered to everyone)
    assert not [b for b in at.button if b.key == "found_load"]
    assert any("--allow-paths" in c for c in texts(at.caption))
    monkeypatch.setenv("CTXMODELS_ALLOW_PATHS", "1")
    at = page("models")
    assert_clean(at)
    found = next(d.value for d in at.dataframe if "source" in d.value.columns)
    row = found[found["name"] == "someone/tiny-deberta"].iloc[0]
    assert row["source"] == "Hugging Face cache" and row["type"] == "deberta-v2" and row["loadable"]
    facts = " ".join(texts(at.markdown))
    assert "2 layers × 2 heads" in facts and "read by transformers (roberta)" in facts
    at.selectbox(key="found_pick").set_value("someone/tiny-deberta").run()
    at.button(key="found_load").click().run()
    assert_clean(at)
    assert any("now selectable" in s for s in texts(at.success))
    at.run()  # the next run lists it with the others, its card's licence read from the front matter
    assert "licence mit" in " ".join(texts(at.markdown))


def test_models_page_lists_the_cache_it_is_pointed_at_now(hub_folders, tmp_path, monkeypatch):
    """The listing is cached for a minute, but per searched folders: a server pointed at another Hugging Face cache
    (or another test's) lists that one at once."""
    def listed() -> set[str]:
        at = page("models")
        assert_clean(at)
        found = next(d.value for d in at.dataframe if "source" in d.value.columns)
        return set(found["name"])

    assert "someone/tiny-deberta" in listed()
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-hub"))
    assert "someone/tiny-deberta" not in listed()


def test_attention_overview_as_head_summaries(hub_folders):
    roberta = str(hub_folders[1]["tiny-roberta"])
    at = page("attention", att_model=roberta)
    assert_clean(at)
    assert [t["type"] for t in charts(at)[0]["data"]] == ["heatmap"]  # 2 x 2 heads: the maps, tiled
    at = page("attention", att_model=roberta, overview="summary")
    assert_clean(at)
    grid = charts(at)[0]["data"]
    assert len(grid) == 6 and all(t["type"] == "heatmap" for t in grid)  # one small grid per measure
