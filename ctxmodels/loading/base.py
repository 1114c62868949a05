"""The common interface of every loaded model, :class:`LoadedModel`, and what its adapters share (checked sentences,
batches of similar length, finding NaN and infinity)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .. import kinds
from ..checkpoint import CheckpointError
from ..model_files import is_dir, is_file
from ..thread_warnings import caught_warnings
from .cards import card_licence

#: what every model is run on when it loads (:meth:`LoadedModel.check_outputs`)
PROBE_SENTENCE = ["The", "old", "bank", "by", "the", "river"]
POOLINGS = ("mean", "first", "last")


class LoadedModel(ABC):
    """A loaded model behind one small interface; one subclass (an adapter) per kind of :mod:`ctxmodels.kinds`.

    An adapter says how its kind's files are recognised (:meth:`detect`) and read (:meth:`from_files`) and
    implements :meth:`_embed`; what the model can do beyond vectors is asked of the registry
    (:func:`ctxmodels.kinds.supports`), which reads the flags below for what depends on the weights."""

    kind: str = ""
    static_layer: int = 0  # the context-free layer (BERT's input embeddings, ELMo's char CNN, static vectors)

    def __init__(self, name: str, path: Path | None, model: Any, config: dict, layer_names: list[str], dim: int,
                 tokenizer: Any = None, card: str = ""):
        self.name = name
        self.path = path
        self.model = model
        self.config = config
        self.layer_names = layer_names
        self.dim = dim
        self.tokenizer = tokenizer
        self.card = card

    # -- the adapter's side of the registry ---------------------------------------------------------------------

    @classmethod
    def detect(cls, path: Path, config: dict | None) -> str | None:
        """The layout (one of the kind's ``layouts``) of the files at ``path``, a file or a folder, when this kind
        reads them, else None. ``config``: the folder's config.json, read, or None when there is none (or ``path``
        is a file)."""
        return None

    @classmethod
    def from_files(cls, path: Path, layout: str, name: str, device: str | torch.device, card: str) -> LoadedModel:
        """Read the model at ``path`` (in ``layout``) onto ``device``, in eval mode."""
        raise NotImplementedError(f"{cls.__name__} does not read model files")

    # -- what the weights have --------------------------------------------------------------------------------

    can_fill_mask: bool = False
    has_attention: bool = False
    has_lm: bool = False
    #: a model written by ``ctxmodels finetune``: its finetune.json (base model, task, labels, mode, metrics);
    #: None for every other model. The model itself is the fine-tuned backbone (a plain BERT, transformers encoder
    #: or ELMo).
    finetune_info: dict[str, Any] | None = None
    #: why the model cannot fill in blanks, in words, when it cannot ("" otherwise)
    no_fill_reason: str = ""

    def task_model(self):
        """The whole fine-tuned model (backbone + task head) with ``predict(words)``; ValueError for a model that
        ``ctxmodels finetune`` did not write."""
        if self.finetune_info is None or self.path is None:
            raise ValueError(f"{self.name} is not a fine-tuned model (no finetune.json): it has no task head")
        from ..formats.finetuned import load_task_model

        return load_task_model(self.path if is_dir(self.path) else self.path.parent)

    @property
    def capabilities(self) -> list[str]:
        """What this model can do (:mod:`ctxmodels.kinds`): its kind's capabilities that its weights allow."""
        kind = kinds.kind_of(self)
        return sorted(c for c in kind.capabilities if kinds.supports(self, c)) if kind is not None else []

    @property
    def model_type(self) -> str:
        """The architecture within the kind (``roberta`` for an encoder read through transformers); the kind's
        name where the kind has one architecture."""
        return self.kind

    @property
    def n_heads(self) -> int:
        """Attention heads per layer (0 for a model without attention)."""
        if not self.has_attention:
            return 0
        return int(self.config.get("num_attention_heads") or self.config.get("n_heads") or 0)

    @property
    def n_layers(self) -> int:
        return len(self.layer_names)

    @property
    def device(self) -> torch.device:
        if isinstance(self.model, torch.nn.Module):
            for p in self.model.parameters():
                return p.device
        return torch.device("cpu")

    def num_parameters(self) -> int:
        if isinstance(self.model, torch.nn.Module):
            return sum(p.numel() for p in self.model.parameters())
        return 0

    # -- vectors ----------------------------------------------------------------------------------------------

    def embed(
        self, sentences: Sequence[Sequence[str]], pooling: str = "mean", batch_size: int = 32
    ) -> list[np.ndarray]:
        """Word-level vectors of every layer: one float32 array [n_layers, n_words, dim] per sentence.

        ``sentences`` are lists of words (already split). ``pooling`` says how BERT's word pieces become one
        vector per word (mean, first or last piece; ignored by the other kinds). Words a model cannot represent
        (beyond BERT's maximum length, unknown to static vectors) get NaN rows, with a warning.
        """
        sentences = check_sentences(sentences)
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        out: list[np.ndarray | None] = [None] * len(sentences)
        todo = []
        for i, s in enumerate(sentences):
            if s:
                todo.append(i)
            else:  # nothing to run for an empty sentence
                out[i] = np.zeros((self.n_layers, 0, self.dim), np.float32)
        if todo:
            arrays = self._embed([sentences[i] for i in todo], pooling, batch_size)
            for i, a in zip(todo, arrays):
                out[i] = a
        return out  # type: ignore[return-value]

    @abstractmethod
    def _embed(self, sentences: list[list[str]], pooling: str, batch_size: int) -> list[np.ndarray]:
        """``embed`` for non-empty, checked sentences."""

    def check_outputs(self) -> None:
        """CheckpointError when the model fails on, or computes NaN or infinity for, a plain six-word sentence
        (:data:`PROBE_SENTENCE`), heads included. Weights that are each finite can still overflow together, and a
        tokenizer can be readable and still broken; :func:`~ctxmodels.loading.load` runs this on every model it
        loads."""
        try:
            with caught_warnings():  # this thread's only: catch_warnings would silence every visitor's
                where = self._probe()
        except (ValueError, RuntimeError, IndexError) as e:
            raise CheckpointError(f"{self.path or self.name}: the model fails on a plain sentence "
                                  f"({type(e).__name__}: {' '.join(str(e).split())[:200]}); the files do not "
                                  "make a working model") from None
        if where:
            raise CheckpointError(f"{self.path or self.name}: the model computes NaN or infinite values ({where}) "
                                  "for a plain six-word sentence; its weights are damaged: use an earlier "
                                  "checkpoint or train again")

    def _probe(self) -> str | None:
        """Where the model's output for :data:`PROBE_SENTENCE` is not finite ("layer 2", "the masked-LM head"),
        or None."""
        (layers,) = self._embed([list(PROBE_SENTENCE)], "mean", 1)
        return first_nonfinite(layers, self.layer_names)

    def describe(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "name": self.name,
            "path": str(self.path) if self.path is not None else None,
            "layers": list(self.layer_names),
            "static_layer": self.static_layer,
            "dim": self.dim,
            "can_fill_mask": self.can_fill_mask,
            "has_attention": self.has_attention,
            "has_lm": self.has_lm,
            "capabilities": self.capabilities,
            "parameters": self.num_parameters(),
            "heads": self.n_heads,
            "vocab_size": int(self.config.get("vocab_size") or 0) or None,
            "licence": card_licence(self.card),
        }

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}: {self.n_layers} layers x {self.dim}>"


def first_nonfinite(layers: np.ndarray | torch.Tensor, names: Sequence[str]) -> str | None:
    """The name of the first layer of ``layers`` [n_layers, ...] holding NaN or infinity, or None."""
    for name, layer in zip(names, layers):
        finite = torch.isfinite(layer).all() if isinstance(layer, torch.Tensor) else np.isfinite(layer).all()
        if not bool(finite):
            return name
    return None


def nonfinite_words(a: np.ndarray) -> np.ndarray:
    """Words (axis 1 of [n_layers, n_words, dim]) with NaN or infinity in some layer."""
    return ~np.isfinite(a).all(axis=(0, 2))


def check_sentences(sentences: Sequence[Sequence[str]]) -> list[list[str]]:
    if isinstance(sentences, str):
        raise ValueError("embed() takes a list of sentences, each a list of words, e.g. [['the', 'bank']]")
    out = []
    for i, s in enumerate(sentences):
        if isinstance(s, str) or not isinstance(s, (list, tuple)):
            raise ValueError(f"sentence {i} must be a list of words, got {type(s).__name__}; split it into words "
                             "first (ctxmodels.text.tokenize, or str.split)")
        if not all(isinstance(w, str) for w in s):
            raise ValueError(f"sentence {i}: every word must be a string")
        out.append(list(s))
    return out


def length_batches(lengths: Sequence[int], batch_size: int) -> Iterator[list[int]]:
    """Indices grouped into batches of similar length, longest first, so padding wastes little."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    for start in range(0, len(order), batch_size):
        yield order[start : start + batch_size]


def folder_of(path: Path) -> Path:
    """The model's folder: ``path`` itself, or the folder of a model file."""
    return path.parent if is_file(path) else path
