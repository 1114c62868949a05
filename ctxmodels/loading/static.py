"""The ``static`` kind: our static-vector checkpoints (``static``) and word2vec / GloVe text files
(``static-text``)."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..model_files import is_file
from .base import LoadedModel

TEXT_VECTOR_SUFFIXES = (".txt", ".vec", ".gz")


class StaticLoaded(LoadedModel):
    kind = "static"

    def __init__(self, name: str, path: Path | None, model: Any, card: str = ""):
        super().__init__(name, path, model, model.config.to_dict(), ["static"], model.dim, None, card)
        self._table = model.input_embeddings.weight.detach().cpu().float().numpy()

    @classmethod
    def detect(cls, path: Path, config: dict | None) -> str | None:
        if config is not None:
            return "static" if config.get("model_type") == "static" else None
        if is_file(path):
            return "static-text" if path.name.lower().endswith(TEXT_VECTOR_SUFFIXES) else None
        return "static-text" if len(text_vector_files(path)) == 1 else None

    @classmethod
    def from_files(cls, path: Path, layout: str, name: str, device: str | torch.device, card: str) -> StaticLoaded:
        from ..static import StaticVectors, load_text_vectors

        if layout == "static":
            model = StaticVectors.load(path)
        else:
            model = load_text_vectors(path if is_file(path) else text_vector_files(path)[0])
        return cls(name, path, model.eval(), card)

    def row(self, word: str) -> int | None:
        """The word's row: exact (after the model's own lower-casing), else lower-cased, else None."""
        if word in self.model:
            return self.model.index(word)
        if word.lower() in self.model:
            return self.model.index(word.lower())
        return None

    def _embed(self, sentences: list[list[str]], pooling: str, batch_size: int) -> list[np.ndarray]:
        out, unknown, n_words = [], [], 0
        for s in sentences:
            v = np.full((1, len(s), self.dim), np.nan, np.float32)
            for j, w in enumerate(s):
                r = self.row(w)
                if r is not None:
                    v[0, j] = self._table[r]
                else:
                    unknown.append(w)
            n_words += len(s)
            out.append(v)
        if unknown:
            shown = ", ".join(repr(w[:40]) for w in list(dict.fromkeys(unknown))[:5])
            warnings.warn(f"{len(unknown)} of {n_words} word(s) have no vector in {self.name} and get NaN vectors, "
                          f"e.g. {shown}", stacklevel=3)
        return out

    def _probe(self) -> str | None:
        return None  # no computation: the table itself was checked for NaN and infinity when it was read


def text_vector_files(folder: Path) -> list[Path]:
    """The word-vector text files of a folder (not a vocabulary, readme or licence)."""
    return [p for p in folder.iterdir() if p.name.lower().endswith(TEXT_VECTOR_SUFFIXES) and is_file(p)
            and not p.name.lower().startswith(("vocab", "readme", "license"))]
