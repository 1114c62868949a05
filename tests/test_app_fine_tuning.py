"""The What fine-tuning changes page through AppTest (issue 17): a tiny BERT fine-tuned for a few steps with the
real ``ctxmodels finetune`` on a made-up tagging task, beside its base; the cases where there is nothing to compare
(no fine-tuned model, base model gone, another architecture as the base, the task's file gone); fine-tuning from
the page where the operator allows training. Plus the page's pure figure functions."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from app.kit import training
from app.views.fine_tuning import figures as tuning_figures
from tests import test_objectives
from tests.app_fixtures import assert_clean, charts, figure_array, finetune_tiny, page, texts, write_tag_task

pytest.importorskip("streamlit.testing.v1")

pytestmark = pytest.mark.usefixtures("app_env")


@pytest.fixture(scope="module")
def tuned(tiny_assets, tmp_path_factory):
    """A fine-tuned tiny BERT (20 steps on the tag task) and its task file."""
    root = tmp_path_factory.mktemp("finetuned")
    task = write_tag_task(root / "tags.conll")
    return finetune_tiny(tiny_assets / "bert-eltec", task, root / "bert-tags"), task


def copy_with(folder, dest, **changes):
    """A copy of a fine-tuned folder with its finetune.json changed."""
    shutil.copytree(folder, dest)
    info = json.loads((dest / "finetune.json").read_text(encoding="utf-8"))
    (dest / "finetune.json").write_text(json.dumps({**info, **changes}), encoding="utf-8")
    return dest


def titles(at) -> list[str]:
    return [str(c["layout"].get("title", {}).get("text", "")) for c in charts(at)]


def test_the_page_compares_a_finetuned_model_with_its_base(tuned, monkeypatch):
    folder, _ = tuned
    monkeypatch.setenv("CTXMODELS_APP_MODELS", str(folder))
    at = page("fine_tuning", ft_layer="2", ft_att_layer="2", ft_att_head="1")
    assert_clean(at)
    assert not at.warning, texts(at.warning)
    found = charts(at)
    # CKA and cosine per layer, the layers named in words
    cka = next(c for c in found if any(t.get("name", "").endswith("bert-tags") and "→" in t.get("name", "")
                                       for t in c["data"]))
    assert cka["layout"]["xaxis"]["ticktext"] == ["embeddings", "layer 1", "layer 2"]
    assert all(0.0 < y <= 1.0 + 1e-9 for t in cka["data"] for y in t["y"])
    # class separation before and after, two sides
    sep = next(c for c in found if {t.get("name") for t in c["data"]} >= {"before: bert-eltec", "after: bert-tags"})
    assert len(sep["data"]) == 4  # 1-NN and silhouette, before and after
    # the projections of the chosen layer, before and after, and the heads
    t = titles(at)
    assert any(x.startswith("before: bert-eltec, layer 2") for x in t) and any(x.startswith("after: bert-tags, "
                                                                                            "layer 2") for x in t)
    heat = next(c for c in found if c["layout"].get("title", {}).get("text", "").startswith("mean Jensen"))
    assert heat["layout"]["yaxis"]["ticktext"] == ["layer 1", "layer 2"]
    assert "before: bert-eltec, layer 2, head 1" in t and "after: bert-tags, layer 2, head 1" in t
    maps = [c["data"][0] for c in found if c["layout"].get("title", {}).get("text", "").endswith("layer 2, head 1")]
    assert len(maps) == 2 and maps[0]["zmin"] == maps[1]["zmin"] == 0  # one colour scale for before and after
    assert maps[0]["zmax"] == maps[1]["zmax"] == pytest.approx(max(float(figure_array(m["z"]).max()) for m in maps))
    # the model's own scores, from its finetune.json
    info = json.loads((folder / "finetune.json").read_text(encoding="utf-8"))
    shown = {m.label: m.value for m in at.metric}
    assert shown["test accuracy"] == f"{info['metrics']['test']['accuracy']:.1%}"
    # what the figures show, in words
    assert any("changed most" in m.value for m in at.markdown)
    assert at.query_params["ft_layer"] in ("2", ["2"])


def test_url_parameters_out_of_range_are_clamped_with_a_warning(tuned, monkeypatch):
    monkeypatch.setenv("CTXMODELS_APP_MODELS", str(tuned[0]))
    at = page("fine_tuning", ft_layer="7", ft_att_head="9", ft_sentences="5", ft_split="train")
    assert_clean(at)
    warned = " ".join(texts(at.warning))
    for param in ("ft_layer", "ft_att_head", "ft_sentences", "ft_split"):
        assert param.replace("_", "\\_") in warned or param in warned, (param, warned)
    assert next(w for w in at.number_input if w.key == "ft_sentences").value == 20


def test_without_a_finetuned_model_the_page_says_how_to_make_one():
    at = page("fine_tuning")
    assert_clean(at)
    info = " ".join(texts(at.info))
    assert "No fine-tuned model is loaded" in info and "ctxmodels finetune --model" in info
    assert not charts(at)


def test_a_missing_base_model_is_said_and_can_be_chosen_by_hand(tuned, tmp_path, monkeypatch):
    gone = copy_with(tuned[0], tmp_path / "orphan", base_path=str(tmp_path / "nowhere"), base_model="no-such-model")
    monkeypatch.setenv("CTXMODELS_APP_MODELS", str(gone))
    at = page("fine_tuning")
    assert not at.exception
    assert any("cannot be loaded" in e for e in texts(at.error)), texts(at.error)
    assert any("by hand" in w for w in texts(at.warning))
    at = page("fine_tuning", ft_base="bert-eltec")
    assert_clean(at)
    assert charts(at)


def test_a_base_of_another_architecture_is_refused(tuned, tiny_assets, tmp_path, monkeypatch):
    odd = copy_with(tuned[0], tmp_path / "odd", base_path=str(tiny_assets / "elmo-eltec"), base_model="elmo-eltec")
    monkeypatch.setenv("CTXMODELS_APP_MODELS", str(odd))
    at = page("fine_tuning")
    assert not at.exception
    assert any("same architecture" in e for e in texts(at.error)), texts(at.error)
    assert not charts(at)


def test_missing_task_data_is_said(tuned, tmp_path, monkeypatch):
    lost = copy_with(tuned[0], tmp_path / "lost", task=str(tmp_path / "moved.conll"))
    monkeypatch.setenv("CTXMODELS_APP_MODELS", str(lost))
    at = page("fine_tuning")
    assert not at.exception
    assert any("file not found" in e or "no such file" in e for e in texts(at.error)), texts(at.error)
    assert any("No comparison" in w for w in texts(at.warning))


@pytest.mark.parametrize("kind", ["pair", "qa"])
def test_a_pair_or_question_answering_model_shows_its_scores_and_says_why_no_comparison(kind, tuned, tmp_path,
                                                                                       monkeypatch):
    metrics = {"qa": {"exact_match": 0.5, "f1": 0.625, "n": 8}, "pair": {"accuracy": 0.75, "macro_f1": 0.7, "n": 8}}
    other = copy_with(tuned[0], tmp_path / kind, task_kind=kind, metrics={"test": metrics[kind], "dev": metrics[kind]})
    monkeypatch.setenv("CTXMODELS_APP_MODELS", str(other))
    at = page("fine_tuning")
    assert_clean(at)
    assert not at.error and not charts(at)
    assert any("shows only the scores above" in i for i in texts(at.info)), texts(at.info)
    shown = {m.label: m.value for m in at.metric}
    expected = {"test exact match": "50.0%", "test F1": "62.5%"} if kind == "qa" else {"test accuracy": "75.0%"}
    assert expected.items() <= shown.items(), shown


def test_finetuning_from_the_page_adds_the_new_model(tuned, tiny_assets, monkeypatch):
    """With training allowed, the form starts ``ctxmodels finetune`` as a job; when it ends, the new folder is
    a fine-tuned model the page offers."""
    _, task = tuned
    monkeypatch.setenv("CTXMODELS_ALLOW_TRAINING", "1")
    monkeypatch.setenv("CTXMODELS_ALLOW_PATHS", "1")  # the operator's own task file (no SemCor in the tests)
    at = page("fine_tuning")
    assert_clean(at)
    assert any("No fine-tuned model" in i for i in texts(at.info))
    at.selectbox(key="ft_train_model").set_value("bert-eltec")
    at.text_input(key="ft_train_file").set_value(str(task))
    at.number_input(key="ft_train_steps").set_value(10)
    next(b for b in at.get("form_submit_button") if b.label == "Start fine-tuning").click()
    at.run()
    deadline = time.time() + 240
    while time.time() < deadline and not any("now selectable" in s for s in texts(at.success)):
        time.sleep(2)
        at.run()
    assert any("now selectable" in s for s in texts(at.success)), (texts(at.error), texts(at.code))
    at.run()
    assert_clean(at)
    assert at.selectbox(key="ft_model").options  # the new model is offered
    assert charts(at)


# -- the figures, without Streamlit ---------------------------------------------------------------------------


def table() -> pd.DataFrame:
    return pd.DataFrame({"layer": [0, 1, 2], "layer_name": ["embeddings", "layer 1", "layer 2"],
                         "cka": [1.0, 0.9, 0.5], "cosine": [1.0, 0.8, 0.3], "knn_before": [0.5, 0.6, 0.6],
                         "knn_after": [0.5, 0.7, 0.9], "silhouette_before": [0.0, 0.1, 0.1],
                         "silhouette_after": [0.0, 0.2, np.nan]})


def test_representation_change_figure():
    fig = tuning_figures.representation_change(table(), "base <b>", "tuned")
    assert [list(t.y) for t in fig.data] == [[1.0, 0.9, 0.5], [1.0, 0.8, 0.3]]
    assert fig.data[0].name == "base &lt;b&gt; → tuned"
    assert list(fig.layout.xaxis.ticktext) == ["embeddings", "layer 1", "layer 2"]


def test_class_separation_figure_draws_both_sides_and_the_majority_line():
    fig = tuning_figures.class_separation(table(), "base", "tuned", majority=0.4)
    names = [t.name for t in fig.data]
    assert names.count("before: base") == 2 and names.count("after: tuned") == 2
    assert any(s.y0 == 0.4 for s in fig.layout.shapes)


def test_head_change_heatmap_outlines_the_chosen_head():
    changes = np.array([[0.0, 0.1, 0.0], [0.3, 0.0, 0.2]])
    fig = tuning_figures.head_change_heatmap(changes, selected=(2, 1))
    assert np.allclose(np.asarray(fig.data[0].z, dtype=float), changes)
    rect = fig.layout.shapes[0]
    assert (rect.x0, rect.y0) == (-0.5, 0.5)
    assert list(fig.layout.yaxis.ticktext) == ["layer 1", "layer 2"]


def test_finetune_command():
    cmd = training.finetune_command("bert-eltec", "wsd:bank", training.ROOT / "runs" / "x", 50)
    assert cmd[1:4] == ["-m", "ctxmodels.cli", "finetune"]
    assert cmd[cmd.index("--task") + 1] == "wsd:bank" and cmd[cmd.index("--steps") + 1] == "50"
    assert "--no-progress" in cmd and cmd[cmd.index("--threads") + 1] == "1"
    with pytest.raises(ValueError):
        training.finetune_command("bert-eltec", "pos", training.ROOT, 0)
    with pytest.raises(ValueError):
        training.finetune_command("bert-eltec", "pos", training.ROOT, 10, mode="both")


def test_an_unchanged_model_is_read_as_unchanged(tuned, tiny_assets, tmp_path, monkeypatch):
    """A folder whose weights are its base's (what feature-based fine-tuning leaves): the page says no layer and no
    head changed, instead of naming a 'most changed' layer."""
    from tests.app_fixtures import write_finetuned

    same = write_finetuned(tiny_assets / "bert-eltec", tmp_path / "same", task=str(tuned[1]), scale=0.0)
    monkeypatch.setenv("CTXMODELS_APP_MODELS", str(same))
    at = page("fine_tuning")
    assert_clean(at)
    said = " ".join(m.value for m in at.markdown)
    assert "No layer changed" in said and "No head's attention changed" in said
    assert "the same before and after in every layer" in said


@pytest.fixture(scope="module")
def tuned_roberta(tmp_path_factory):
    """A tiny random RoBERTa (tests/hf_tiny.py) fine-tuned with the real ``ctxmodels finetune`` on the tag task."""
    from tests import hf_tiny

    root = tmp_path_factory.mktemp("finetuned-roberta")
    task = write_tag_task(root / "tags.conll")
    base = hf_tiny.build("roberta", root / "roberta-tiny")
    return finetune_tiny(base, task, root / "roberta-tags"), base


def test_the_page_compares_a_finetuned_roberta_with_its_base(tuned_roberta, monkeypatch):
    at = assert_compared_with_base(*tuned_roberta, "roberta-tiny", "transformers", monkeypatch)
    heat = next(c for c in charts(at) if c["layout"].get("title", {}).get("text", "").startswith("mean Jensen"))
    assert heat["layout"]["yaxis"]["ticktext"] == ["layer 1", "layer 2"]


def assert_compared_with_base(folder: Path, base: Path, base_name: str, base_kind: str, monkeypatch):
    """The page, with the fine-tuned ``folder`` added, draws it against ``base_name`` layer by layer and shows the
    test accuracy its finetune.json records; returns the page."""
    monkeypatch.setenv("CTXMODELS_APP_MODELS", str(folder))
    at = page("fine_tuning")
    assert_clean(at)
    assert not at.error, texts(at.error)
    cka = next(c for c in charts(at) if any(t.get("name", "").endswith(folder.name) and "→" in t.get("name", "")
                                            for t in c["data"]))
    assert cka["layout"]["xaxis"]["ticktext"] == ["embeddings", "layer 1", "layer 2"]
    assert any(x.startswith(f"before: {base_name}, layer 2") for x in titles(at)), titles(at)
    info = json.loads((folder / "finetune.json").read_text(encoding="utf-8"))
    assert info["base_kind"] == base_kind and info["base_path"] == str(base)
    shown = {m.label: m.value for m in at.metric}
    assert shown["test accuracy"] == f"{info['metrics']['test']['accuracy']:.1%}"
    return at


tiny_gpt = test_objectives.tiny_gpt  # a GPT trained for two steps by `ctxmodels train gpt` (a fixture)


@pytest.fixture(scope="module")
def tuned_gpt(tiny_gpt, tmp_path_factory):
    """The tiny GPT fine-tuned with the real ``ctxmodels finetune`` on the tag task."""
    root = tmp_path_factory.mktemp("finetuned-gpt")
    return finetune_tiny(tiny_gpt, write_tag_task(root / "tags.conll"), root / "gpt-tags"), tiny_gpt


def test_the_page_compares_a_finetuned_gpt_with_its_base(tuned_gpt, monkeypatch):
    assert_compared_with_base(*tuned_gpt, "gpt-tiny", "gpt", monkeypatch)
