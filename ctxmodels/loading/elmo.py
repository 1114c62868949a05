"""The ``elmo`` kind: our ELMo checkpoints (``elmo``) and AllenNLP's published options.json + weights.hdf5
(``elmo-published``)."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..checkpoint import CheckpointError
from ..model_files import is_file
from .base import PROBE_SENTENCE, LoadedModel, first_nonfinite, folder_of, length_batches, nonfinite_words

_WEIGHT_SUFFIXES = (".hdf5", ".h5")


class ElmoLoaded(LoadedModel):
    kind = "elmo"

    def __init__(self, name: str, path: Path | None, model: Any, card: str = ""):
        from ..formats.allennlp import config_to_options

        cfg = model.config
        n = cfg.lstm.n_layers
        layer_names = ["layer 0 (char CNN)"] + [f"layer {k} (LSTM)" for k in range(1, n + 1)]
        dim = 2 * cfg.lstm.projection_dim
        super().__init__(name, path, model, config_to_options(cfg), layer_names, dim, None, card)

    @classmethod
    def detect(cls, path: Path, config: dict | None) -> str | None:
        if config is not None:
            model_type = config.get("model_type")
            if model_type == "elmo" or (model_type is None and "char_cnn" in config and "lstm" in config):
                return "elmo"
            return None
        if is_file(path):
            name = path.name.lower()
            if path.suffix.lower() in _WEIGHT_SUFFIXES or (name.endswith(".json") and "options" in name):
                return "elmo-published"
            return None
        if any(is_file(p) for p in path.glob("*options*.json")) and any(is_file(p) for p in path.glob("*.hdf5")):
            return "elmo-published"
        return None

    @classmethod
    def from_files(cls, path: Path, layout: str, name: str, device: str | torch.device, card: str) -> ElmoLoaded:
        from ..formats.allennlp import load_elmo, load_published_elmo

        if layout == "elmo":
            model = load_elmo(folder_of(path))
        elif is_file(path) and path.suffix.lower() in _WEIGHT_SUFFIXES:
            options = sorted(p for p in path.parent.glob("*options*.json") if is_file(p))
            if len(options) != 1:
                raise CheckpointError(f"{path}: cannot tell which options file belongs to these ELMo weights "
                                      f"(found {[p.name for p in options] or 'none'} beside it)")
            model = load_published_elmo(options[0], weights=path)
        else:
            model = load_published_elmo(path)
        return cls(name, path, model.to(device).eval(), card)

    @property
    def has_lm(self) -> bool:  # type: ignore[override]
        return bool(getattr(self.model, "has_lm_head", False))

    def _embed(self, sentences: list[list[str]], pooling: str, batch_size: int) -> list[np.ndarray]:
        bilm = getattr(self.model, "bilm", self.model)
        out: list[np.ndarray | None] = [None] * len(sentences)
        self.model.eval()
        with torch.inference_mode():
            for idx in length_batches([len(s) for s in sentences], batch_size):
                # Each sentence gets <S> ... </S> for the LSTMs; embed_sentences removes them again.
                layers, _ = bilm.embed_sentences([sentences[i] for i in idx])
                layers = layers.float().cpu().numpy()
                for b, i in enumerate(idx):
                    out[i] = np.ascontiguousarray(layers[:, b, : len(sentences[i])])
        computed = []
        for i, a in enumerate(out):
            bad = nonfinite_words(a)
            if bad.any():
                a[:, bad] = np.nan
                computed += [i] * int(bad.sum())
        if computed:
            warnings.warn(f"the model computed NaN or infinite values for {len(computed)} word(s) (sentences "
                          f"{sorted(set(computed))[:10]}); they get NaN vectors: the model's weights may be "
                          "damaged", stacklevel=3)
        return out  # type: ignore[return-value]

    def _probe(self) -> str | None:
        bilm = getattr(self.model, "bilm", self.model)
        self.model.eval()
        with torch.inference_mode():
            layers, _ = bilm.embed_sentences([list(PROBE_SENTENCE)])
            where = first_nonfinite(layers[:, 0], self.layer_names)
            if where is None and self.has_lm:
                P = self.model.config.lstm.projection_dim
                logits = self.model.full_softmax_logits(layers[-1, 0, :1, :P])  # the forward LM's first state
                if not bool(logits.isfinite().all()):
                    where = "the language-model softmax"
        return where
