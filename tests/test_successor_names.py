"""The shipped successors' short names (``gpt-eltec``, ...) resolve to ``assets/successors/NAME``, where the other
pages' scan of the assets folder does not list them."""

from __future__ import annotations

import json

from ctxmodels.loading import SUCCESSOR_NAMES, resolve, successor_models


def _model_folder(path):
    path.mkdir(parents=True)
    (path / "config.json").write_text(json.dumps({"model_type": "gpt2"}))
    return path


def test_a_successor_name_resolves_inside_the_successors_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("CTXMODELS_ASSETS", str(tmp_path))
    inside = _model_folder(tmp_path / "successors" / "gpt-eltec")
    _model_folder(tmp_path / "roberta-eltec")  # a top-level folder of that name is not the successor
    assert resolve("gpt-eltec") == (inside.resolve(), "gpt-eltec")
    assert successor_models() == {"gpt-eltec": inside}
    assert set(successor_models()) <= set(SUCCESSOR_NAMES)


def test_no_successors_folder_lists_none(tmp_path, monkeypatch):
    monkeypatch.setenv("CTXMODELS_ASSETS", str(tmp_path))
    assert successor_models() == {}


def test_the_app_does_not_list_the_successors_among_the_shipped_models(tmp_path, monkeypatch):
    from app.kit.registry import shipped_models

    monkeypatch.setenv("CTXMODELS_ASSETS", str(tmp_path))
    _model_folder(tmp_path / "successors" / "gpt-eltec")
    _model_folder(tmp_path / "bert-eltec")
    assert shipped_models() == ["bert-eltec"]
