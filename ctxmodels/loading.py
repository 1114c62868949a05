"""One loading entry point: ``ctxmodels.load(path_or_name)`` for every model the project knows.

What it accepts, tried in this order:

1. an existing path: our checkpoint directories (``config.json`` with ``model_type`` "bert" / "elmo" /
   "static"), a Hugging Face BERT directory, a Hugging Face cache entry (``models--ORG--NAME``, or one of its
   snapshots), a published ELMo folder (``options.json`` + ``*weights*.hdf5``, or either file), a static-vector
   directory, or a word2vec/GloVe ``.txt`` / ``.vec`` file;
2. a short name of a shipped model (``bert-eltec``, ``elmo-eltec``, ``static-eltec``, or any folder in
   ``assets/``), looked up in ``$CTXMODELS_ASSETS`` or the repository's ``assets/``;
3. ``ORG/NAME``: a model in the Hugging Face cache (:func:`ctxmodels.paths.hf_cache_dirs`: ``$HF_HUB_CACHE``,
   ``$HUGGINGFACE_HUB_CACHE``, ``$HF_HOME/hub``, ``$XDG_CACHE_HOME/huggingface/hub`` or ``~/.cache/huggingface/hub``).

Whatever the source, the result is a :class:`LoadedModel`: its kind, layer names, capabilities, tokenizer,
model card and one method that matters most, :meth:`LoadedModel.embed` (word-level vectors for every layer).
Each path is loaded once per process (the app asks for the same model on every rerun).
"""

from __future__ import annotations

import re
import threading
import warnings
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .checkpoint import CheckpointError, read_json
from .formats.huggingface import hf_cache_folder, hf_cached, hf_repo_name, hf_snapshot
from .paths import assets_dir, hf_cache_dirs

# The shipped models' folder and the Hugging Face cache are found by ctxmodels.paths, and the cache layout is read
# by ctxmodels.formats.huggingface; assets_dir, hf_cache_dirs and hf_snapshot stay importable from here.

SHORT_NAMES = ("bert-eltec", "elmo-eltec", "static-eltec")
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
        }

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}: {self.n_layers} layers x {self.dim}>"


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
        lost = [(i, int(np.isnan(a[0, :, 0]).sum())) for i, a in enumerate(out) if np.isnan(a[0, :, 0]).any()]
        n_trunc = sum(truncated)
        if n_trunc:
            warnings.warn(f"{n_trunc} sentence(s) longer than the model's {self.max_length} word pieces were "
                          f"truncated; the words cut off get NaN vectors", stacklevel=3)
        elif lost:
            warnings.warn(f"{sum(k for _, k in lost)} word(s) gave no word pieces (e.g. control characters) and "
                          f"get NaN vectors (sentences {[i for i, _ in lost][:10]})", stacklevel=3)
        return out  # type: ignore[return-value]


def pool_pieces(hidden: torch.Tensor, word_ids: Sequence[int | None], n_words: int, pooling: str) -> np.ndarray:
    """Word vectors [L, n_words, H] from piece vectors ``hidden`` [L, T, H] and each piece's word index.

    mean: the average of a word's pieces; first / last: its first / last piece. A word without pieces
    (truncated away, or one the tokenizer drops) gets NaN.
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
    words = torch.matmul(weights, hidden)  # [L, n_words, H]: sums (mean) or the chosen piece
    if pooling == "mean":
        words = words / weights.sum(dim=1).clamp(min=1.0)[:, None]
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
        return out  # type: ignore[return-value]


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
        out = []
        for s in sentences:
            v = np.full((1, len(s), self.dim), np.nan, np.float32)
            for j, w in enumerate(s):
                r = self.row(w)
                if r is not None:
                    v[0, j] = self._table[r]
            out.append(v)
        return out


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


def resolve(path_or_name: str | Path) -> tuple[Path, str]:
    """(path to load, display name) for anything :func:`load` accepts; ModelNotFoundError listing the places
    looked at otherwise."""
    if not isinstance(path_or_name, (str, Path)) or not str(path_or_name).strip():
        raise ModelNotFoundError("no model given: pass a path, a short name "
                                 f"({', '.join(SHORT_NAMES)}) or a Hugging Face name ORG/NAME")
    raw = str(path_or_name).strip()
    path = Path(raw).expanduser()
    if path.exists():
        path = path.resolve()
        if path.is_file() and path.suffix in (".json", ".safetensors", ".bin") and "options" not in path.name \
                and (path.parent / "config.json").is_file():
            path = path.parent  # config.json or the weights of a checkpoint directory: the directory
        if path.is_dir() and path.name.startswith("models--") and (path / "snapshots").exists():
            return hf_snapshot(path), hf_repo_name(path) or path.name
        # A published ELMo's options or weights file, or a config.json: the model is the folder.
        named = path.parent if path.is_file() and path.suffix.lower() in (".json", ".hdf5", ".h5") else path
        return path, hf_repo_name(path) or named.name
    looked = [f"no file or directory {path}"]

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

    if re.fullmatch(r"[\w.-]+/[\w.-]+", raw):
        snapshot = hf_cached(raw)
        if snapshot is not None:
            return snapshot, raw
        looked.append(f"no {hf_cache_folder(raw)} in the Hugging Face cache "
                      f"({', '.join(str(d) for d in hf_cache_dirs())}); nothing is downloaded")
    raise ModelNotFoundError(f"cannot find a model {raw!r}: " + "; ".join(looked))


def detect_kind(path: Path) -> str:
    """"bert", "elmo", "elmo-published", "static" or "static-text" from the files at ``path``."""
    if path.is_file():
        name = path.name.lower()
        if name == "config.json":
            return detect_kind(path.parent)
        if path.suffix.lower() in (".hdf5", ".h5") or (name.endswith(".json") and "options" in name):
            return "elmo-published"
        if name.endswith(_TEXT_VECTOR_SUFFIXES):
            return "static-text"
        raise ModelNotFoundError(f"{path}: not a model file; expected a model directory, a published ELMo "
                                 "options.json / *weights*.hdf5, or a word-vector .txt/.vec file")
    if (path / "config.json").is_file():
        cfg = read_json(path / "config.json")
        model_type = cfg.get("model_type")
        if model_type in ("bert", "elmo", "static"):
            return model_type
        if model_type is None and "char_cnn" in cfg and "lstm" in cfg:
            return "elmo"
        if model_type is None and "num_attention_heads" in cfg and "hidden_size" in cfg:
            return "bert"  # old Hugging Face / Google configs carry no model_type
        raise CheckpointError(
            f"{path / 'config.json'}: model_type {model_type!r} is not supported; ctxmodels loads BERT "
            "(model_type 'bert'), ELMo and static vectors")
    if any(path.glob("*options*.json")) and any(path.glob("*.hdf5")):
        return "elmo-published"
    texts = [p for p in path.iterdir() if p.is_file() and p.name.lower().endswith(_TEXT_VECTOR_SUFFIXES)
             and not p.name.lower().startswith(("vocab", "readme", "license"))]
    if len(texts) == 1:
        return "static-text"
    found = sorted(p.name for p in path.iterdir())[:12]
    raise ModelNotFoundError(
        f"{path}: no model found. Looked for config.json (our checkpoints and Hugging Face BERT), options.json + "
        f"*weights*.hdf5 (published ELMo) and one word-vector .txt/.vec file; found {found or 'nothing'}")


def _read_card(path: Path) -> str:
    folder = path if path.is_dir() else path.parent
    card = folder / "README.md"
    try:
        return card.read_text(encoding="utf-8") if card.is_file() else ""
    except (OSError, UnicodeDecodeError):
        return ""


def _load_uncached(path: Path, name: str, device: str | torch.device) -> LoadedModel:
    kind = detect_kind(path)
    card = _read_card(path)
    if kind == "bert":
        from .formats.huggingface import load_bert

        model, tokenizer = load_bert(path.parent if path.is_file() else path)
        return BertLoaded(name, path, model.to(device).eval(), tokenizer, card)
    if kind in ("elmo", "elmo-published"):
        from .formats.allennlp import load_elmo, load_published_elmo

        if kind == "elmo":
            model = load_elmo(path.parent if path.is_file() else path)
        elif path.is_file() and path.suffix.lower() in (".hdf5", ".h5"):
            options = sorted(path.parent.glob("*options*.json"))
            if len(options) != 1:
                raise CheckpointError(f"{path}: cannot tell which options file belongs to these ELMo weights "
                                      f"(found {[p.name for p in options] or 'none'} beside it)")
            model = load_published_elmo(options[0], weights=path)
        else:
            model = load_published_elmo(path)
        return ElmoLoaded(name, path, model.to(device).eval(), card)
    from .static import StaticVectors, load_text_vectors

    model = StaticVectors.load(path) if kind == "static" else load_text_vectors(_text_vector_file(path))
    return StaticLoaded(name, path, model.eval(), card)


def _text_vector_file(path: Path) -> Path:
    if path.is_file():
        return path
    return next(p for p in path.iterdir() if p.is_file() and p.name.lower().endswith(_TEXT_VECTOR_SUFFIXES)
                and not p.name.lower().startswith(("vocab", "readme", "license")))


# ----------------------------------------------------------------------------------------------------------
# the entry point, with its per-process cache

_CACHE: dict[tuple, LoadedModel] = {}
_LOCK = threading.Lock()


def _stamp(path: Path) -> float:
    """Newest modification time of the files at ``path``, so a model retrained in place is loaded again."""
    if path.is_file():
        return path.stat().st_mtime
    return max((p.stat().st_mtime for p in path.iterdir() if p.is_file()), default=0.0)


def load(path_or_name: str | Path, device: str | torch.device = "cpu", reload: bool = False) -> LoadedModel:
    """Load a model by path or name (see the module docstring); the same object is returned on later calls."""
    path, name = resolve(path_or_name)
    key = (str(path), str(device))
    with _LOCK:
        cached = _CACHE.get(key)
        stamp = _stamp(path)
        if cached is not None and not reload and getattr(cached, "_stamp", None) == stamp:
            return cached
        model = _load_uncached(path, name, device)
        model._stamp = stamp  # type: ignore[attr-defined]
        _CACHE[key] = model
        return model


def clear_cache() -> None:
    with _LOCK:
        _CACHE.clear()
