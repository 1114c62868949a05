"""The registry of model kinds (ctxmodels.kinds): a new family is one adapter module and one registry entry.

The toy kind below is registered from this test module only: ``ctxmodels.load`` detects and loads its folders,
and every capability query (the registry's, the analyses', fine-tuning's, training's) answers for it, with nothing
else in the package changed; unregistered, its folders are refused again.
"""

from __future__ import annotations

import json
import zlib

import numpy as np
import pytest

import ctxmodels
from ctxmodels import kinds
from ctxmodels.analysis import attention, fill_in
from ctxmodels.checkpoint import CheckpointError
from ctxmodels.loading import LoadedModel, clear_cache, peek_kind
from ctxmodels.training.finetune_task import FinetuneSettings, backend_for


class ToyLoaded(LoadedModel):
    """A toy family: config.json says ``"model_type": "toy"`` and its width; a word's vector is a fixed function
    of the word (layer "toy")."""

    kind = "toy"

    @classmethod
    def detect(cls, path, config):
        return "toy" if config is not None and config.get("model_type") == "toy" else None

    @classmethod
    def from_files(cls, path, layout, name, device, card):
        config = json.loads((path / "config.json").read_text())
        return cls(name, path, None, config, ["toy"], int(config["dim"]), card=card)

    def _embed(self, sentences, pooling, batch_size):
        return [np.stack([[np.random.default_rng(zlib.crc32(w.encode())).random(self.dim, dtype=np.float32)
                           for w in s]]) for s in sentences]


TOY = kinds.ModelKind(name="toy", title="toy", adapter=f"{__name__}:ToyLoaded", description="toy vectors",
                      declared=frozenset({kinds.CONTEXTUAL}))


@pytest.fixture
def toy_kind():
    kinds.register(TOY)
    clear_cache()
    try:
        yield TOY
    finally:
        kinds.unregister("toy")
        clear_cache()


@pytest.fixture
def toy_folder(tmp_path):
    folder = tmp_path / "toy-model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "toy", "dim": 4}))
    (folder / "README.md").write_text("---\nlicense: mit\n---\n# A toy\n")
    return folder


def test_a_registered_kind_is_detected_and_loaded(toy_kind, toy_folder):
    assert kinds.detect_kind(toy_folder) == "toy" and peek_kind(toy_folder) == "toy"
    model = ctxmodels.load(toy_folder)
    assert isinstance(model, ToyLoaded) and model.kind == "toy" and model.name == "toy-model"
    assert ctxmodels.load(toy_folder) is model  # the process cache holds it like any other kind
    (v,) = model.embed([["the", "bank"]])
    assert v.shape == (1, 2, 4) and np.isfinite(v).all()
    described = model.describe()
    assert described["kind"] == "toy" and described["capabilities"] == ["contextual"]
    assert described["licence"] == "mit"
    assert model.finetune_info is None  # the kind names no fine-tuning backend: no finetune.json is read


def test_capability_queries_answer_for_a_registered_kind(toy_kind, toy_folder):
    model = ctxmodels.load(toy_folder)
    assert kinds.kind_of(model) is toy_kind and kinds.get("toy") is toy_kind
    assert kinds.supports(model, kinds.CONTEXTUAL) and kinds.supports("toy", kinds.CONTEXTUAL)
    for capability in (kinds.ATTENTION, kinds.MASKED_LM, kinds.LANGUAGE_MODEL, kinds.FILL_IN, kinds.TRAIN,
                       kinds.FINETUNE):
        assert not kinds.supports(model, capability) and not kinds.declares("toy", capability)
    assert "toy" in kinds.with_capability(kinds.CONTEXTUAL)
    assert "toy" not in kinds.with_capability(kinds.ATTENTION) and "toy" not in kinds.backends()
    # the analyses and fine-tuning ask the registry, so they answer for the toy without knowing it
    assert not fill_in.fills_blanks(model) and "toy model has no masked-LM head" in fill_in.why_no_fill(model)
    with pytest.raises(ValueError, match="has no attention maps"):
        attention.compute_attention(model, None, "the bank")
    assert not attention.has_next_sentence_head(model)
    with pytest.raises(ValueError, match="is a toy model: only BERT, transformers encoder, ELMo, GPT models"):
        backend_for(model, FinetuneSettings(model="toy-model"))


def test_an_unregistered_kind_is_refused_again(toy_folder, tmp_path):
    other = tmp_path / "t5"  # a model type no kind reads (gpt2 is the gpt kind's)
    other.mkdir()
    (other / "config.json").write_text('{"model_type": "t5"}')
    kinds.register(TOY)
    try:
        with pytest.raises(CheckpointError, match="toy vectors"):  # a refusal lists what is read, the toy too
            ctxmodels.load(other)
    finally:
        kinds.unregister("toy")
        clear_cache()
    with pytest.raises(CheckpointError, match="model_type 'toy' is not supported") as e:
        ctxmodels.load(toy_folder)
    assert "toy vectors" not in str(e.value) and "toy" not in kinds.names()


def test_names_and_layouts_are_unique():
    with pytest.raises(ValueError, match="already registered"):
        kinds.register(kinds.ModelKind(name="bert", title="again", adapter="x:y"))
    with pytest.raises(ValueError, match="already registered"):
        kinds.register(kinds.ModelKind(name="elmo2", title="again", adapter="x:y", layouts=("elmo-published",)))
    assert kinds.names() == ("bert", "transformers", "elmo", "static", "gpt")
    assert kinds.for_layout("static-text").name == "static" and kinds.for_layout("elmo-published").name == "elmo"


def test_every_name_a_shipped_kind_gives_resolves():
    """Adapters, training modules with their settings and options, fine-tuning backends and release code: each
    name in the built-in entries imports (a typo would otherwise surface only when that path runs)."""
    for kind in kinds.kinds():
        adapter = kind.adapter_class()
        assert issubclass(adapter, LoadedModel) and adapter.kind == kind.name
        for training in kind.trainings:
            module = kinds.named(training.module)
            assert callable(module.build_task) and kinds.named(f"{training.module}:{training.settings}")
            assert not training.options or callable(kinds.named(training.options))
        assert not kind.finetune or callable(kinds.named(kind.finetune))
        if kind.release is not None:
            for name in (kind.release.measure, kind.release.card):
                assert not name or callable(kinds.named(name))


def test_capabilities_of_the_shipped_kinds():
    assert kinds.with_capability(kinds.ATTENTION) == ("bert", "transformers", "gpt")
    assert kinds.with_capability(kinds.FILL_IN) == ("bert", "transformers", "elmo")  # a GPT reads one way only
    assert kinds.with_capability(kinds.LANGUAGE_MODEL) == ("elmo", "gpt")
    assert kinds.with_capability(kinds.LEFT_TO_RIGHT) == ("gpt",)
    assert kinds.with_capability(kinds.TRAIN) == ("bert", "transformers", "elmo", "static", "gpt")
    # a RoBERTa or an ELECTRA trained here is read back as a transformers encoder: `train roberta`, `train electra`
    assert tuple(kinds.training_commands()) == ("bert", "roberta", "electra", "albert", "elmo", "static", "gpt")
    assert kinds.training_commands()["roberta"].name == kinds.training_commands()["electra"].name == "transformers"
    assert kinds.training_commands()["albert"].name == "transformers"
    assert kinds.training_for("electra").settings == "ElectraSettings" and kinds.training_for("bart") is None
    assert kinds.with_capability(kinds.FINETUNE) == ("bert", "transformers", "elmo", "gpt")
    assert kinds.with_capability(kinds.CONTEXTUAL) == ("bert", "transformers", "elmo", "gpt")
    assert kinds.backends() == ("transformers",) and kinds.get("transformers").reads == ("bert",)
    with pytest.raises(ValueError, match="no model kind 'gpt2'"):
        kinds.get("gpt2")
