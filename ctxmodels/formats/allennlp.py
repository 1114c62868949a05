"""ELMo checkpoints: the published AllenNLP / bilm-tf layout and our own.

Published: ``options.json`` + ``*_weights.hdf5`` written by bilm-tf's ``dump_weights``. The hdf5 stores
TensorFlow variables for ``x @ W`` (so matrices are transposed here), convolution kernels as
[1, width, dim, count], and each LSTM cell's input and recurrent weights together in ``W_0`` with TensorFlow's
gate order (i, j, f, o); TensorFlow adds ``forget_bias=1.0`` at run time, so it is not in ``B``. The file has no
character row for padding (we prepend a zero row) and no softmax.

Ours: ``config.json`` (the options.json fields) + ``model.safetensors`` + ``vocab.txt`` (the output vocabulary,
when the model has an LM head) + ``README.md`` (model card).

The config of both is ``options.json``'s layout: :func:`config_from_options` reads it (naming the bad field when
it is wrong), :func:`config_to_options` writes it. ``ctxmodels export-elmo`` writes ours in the published layout.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..char_ids import MAX_CHARS, N_CHARACTERS
from ..checkpoint import CheckpointError, load_tensors, save_tensors, write_json, write_text_atomic
from ..elmo import CharCNNConfig, ElmoBiLM, ElmoConfig, ElmoLanguageModel, LSTMConfig, options_error
from ..model_files import (
    MAX_VOCAB_BYTES,
    check_weights,
    check_weights_file_size,
    describe_kind,
    is_dir,
    is_file,
    path_kind,
    read_text,
    require_file,
    safetensors_shapes,
    shape_problems,
    shown,
)
from ..model_files import read_json as read_json_file

# Row blocks of our LSTM gates (i, f, o, g) taken from TensorFlow's (i, j, f, o), where j is the candidate g.
_OURS_FROM_TF = [0, 2, 3, 1]
_TF_FROM_OURS = [0, 3, 1, 2]
_FORGET = 1  # index of the forget gate in our order
_TF_FORGET_BIAS = 1.0

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
VOCAB_FILE = "vocab.txt"


# ----------------------------------------------------------------------------------------------------------
# options.json: ELMo's config file, published and ours


def _get(d: dict, key: str, kind: type | tuple[type, ...], where: str, default: Any = ...) -> Any:
    if key not in d:
        if default is ...:
            raise options_error(f"missing required field '{where}{key}'")
        return default
    value = d[key]
    # bool is an int in Python; a flag given where a number is expected is a mistake worth reporting.
    if not isinstance(value, kind) or (isinstance(value, bool) and bool not in _as_tuple(kind)):
        raise options_error(f"field '{where}{key}' must be {_kind_name(kind)}, got {shown(value)}")
    return value


def _as_tuple(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def _kind_name(kind: type | tuple[type, ...]) -> str:
    return " or ".join(k.__name__ for k in _as_tuple(kind))


def _clip_value(d: dict, key: str) -> float | None:
    value = _get(d, key, (int, float, type(None)), "lstm.", default=None)
    # bilm-tf treats a missing or zero clip as "no clipping".
    return _float(value, f"lstm.{key}") if value else None


def _float(value: int | float, where: str) -> float:
    try:
        return float(value)
    except OverflowError:  # an integer of hundreds of digits
        raise options_error(f"field '{where}' must be a number of sensible size, got {value}") from None


def config_from_options(options: dict) -> ElmoConfig:
    """Build from an ``options.json`` dict (published or ours); raises ValueError naming the bad field."""
    if not isinstance(options, dict):
        raise options_error(f"expected a JSON object, got {type(options).__name__}")
    model_type = options.get("model_type", "elmo")
    if model_type != "elmo":
        raise options_error(f"model_type is {shown(model_type)}, not 'elmo'")
    cnn = _get(options, "char_cnn", dict, "")
    lstm = _get(options, "lstm", dict, "")
    emb = _get(cnn, "embedding", dict, "char_cnn.")
    filters = _get(cnn, "filters", list, "char_cnn.")
    if not all(isinstance(f, (list, tuple)) for f in filters):
        raise options_error(f"char_cnn.filters must be a list of [width, count] pairs, got {shown(filters)}")
    n_characters = _get(cnn, "n_characters", int, "char_cnn.", default=N_CHARACTERS)
    # bilm-tf trains with 261 and reads with 262 (the extra row is the padding id 0); both mean the same.
    if n_characters == N_CHARACTERS - 1:
        n_characters = N_CHARACTERS
    return ElmoConfig(
        char_cnn=CharCNNConfig(
            embedding_dim=_get(emb, "dim", int, "char_cnn.embedding."),
            filters=[list(f) for f in filters],
            n_highway=_get(cnn, "n_highway", (int, type(None)), "char_cnn.", default=0) or 0,
            activation=_get(cnn, "activation", str, "char_cnn.", default="relu"),
            n_characters=n_characters,
            max_characters_per_token=_get(cnn, "max_characters_per_token", int, "char_cnn.", default=MAX_CHARS),
        ),
        lstm=LSTMConfig(
            dim=_get(lstm, "dim", int, "lstm."),
            projection_dim=_get(lstm, "projection_dim", int, "lstm."),
            n_layers=_get(lstm, "n_layers", int, "lstm.", default=1),  # bilm-tf's default
            cell_clip=_clip_value(lstm, "cell_clip"),
            proj_clip=_clip_value(lstm, "proj_clip"),
            use_skip_connections=_get(lstm, "use_skip_connections", bool, "lstm.", default=False),
        ),
        n_tokens_vocab=_get(options, "n_tokens_vocab", (int, type(None)), "", default=0) or 0,
        dropout=_float(_get(options, "dropout", (int, float), "", default=0.1), "dropout"),
    )

def config_to_options(config: ElmoConfig) -> dict:
    """The ``options.json`` fields of ``config`` (ours add ``model_type``, ``n_tokens_vocab`` and ``dropout``)."""
    c, s = config.char_cnn, config.lstm
    return {
        "model_type": "elmo",
        "char_cnn": {
            "embedding": {"dim": c.embedding_dim},
            "filters": [list(f) for f in c.filters],
            "n_highway": c.n_highway,
            "activation": c.activation,
            "n_characters": c.n_characters,
            "max_characters_per_token": c.max_characters_per_token,
        },
        "lstm": {
            "dim": s.dim,
            "projection_dim": s.projection_dim,
            "n_layers": s.n_layers,
            "cell_clip": s.cell_clip,
            "proj_clip": s.proj_clip,
            "use_skip_connections": s.use_skip_connections,
        },
        "n_tokens_vocab": config.n_tokens_vocab,
        "dropout": config.dropout,
    }

def save_config(config: ElmoConfig, directory: str | Path) -> None:
    write_json(Path(directory) / CONFIG_FILE, config_to_options(config))

def load_config(path: str | Path) -> ElmoConfig:
    """Read ``config.json`` (or any options file) from a directory or a file path."""
    path = Path(path)
    file = path / CONFIG_FILE if is_dir(path) else path
    try:
        return config_from_options(read_json_file(file, file.name))
    except CheckpointError:
        raise
    except ValueError as e:
        raise CheckpointError(f"{file}: {e}") from e


def _reorder_gates(w: np.ndarray, order: list[int]) -> np.ndarray:
    """Permute the four gate blocks along axis 0."""
    blocks = np.split(w, 4, axis=0)
    return np.concatenate([blocks[k] for k in order], axis=0)


# ----------------------------------------------------------------------------------------------------------
# Finding the files


def _find_published_files(dir_or_options: str | Path, weights: str | Path | None) -> tuple[Path, Path]:
    path = Path(dir_or_options)
    if is_dir(path):
        options = path / "options.json"
        if not is_file(options):
            found = sorted(p for p in path.glob("*options*.json") if is_file(p))
            if len(found) != 1:
                raise CheckpointError(
                    f"{path}: expected one options file (options.json or *_options.json), found "
                    f"{[p.name for p in found] or 'none'}; pass the options file and the weights file explicitly")
            options = found[0]
        if weights is None:
            found = (sorted(p for p in path.glob("*weights*.hdf5") if is_file(p))
                     or sorted(p for p in path.glob("*.hdf5") if is_file(p)))
            if len(found) != 1:
                raise CheckpointError(
                    f"{path}: expected one ELMo weights file (*_weights.hdf5), found "
                    f"{[p.name for p in found] or 'none'}; pass weights= explicitly")
            weights = found[0]
    else:
        options = require_file(path, "options file")
        if weights is None:
            found = sorted(p for p in options.parent.glob("*weights*.hdf5") if is_file(p))
            if len(found) != 1:
                raise CheckpointError(f"{options.parent}: cannot tell which ELMo weights file belongs to "
                                      f"{options.name} (found {[p.name for p in found] or 'none'}); pass weights=")
            weights = found[0]
    return options, require_file(weights, "ELMo weights file")


# ----------------------------------------------------------------------------------------------------------
# Published layout -> our modules


class _Reader:
    """Reads datasets from the hdf5 file, checking each shape against what options.json implies."""

    def __init__(self, h5, path: Path, options_path: Path):
        self.h5, self.path, self.options_path = h5, path, options_path

    def has(self, name: str) -> bool:
        """Whether ``name`` is in the file, reached by hard links only: a soft or external link (which would make
        HDF5 open another file, perhaps a pipe that never answers) is refused, never followed."""
        import h5py

        node = self.h5
        for part in name.split("/"):
            link = node.get(part, getlink=True) if isinstance(node, h5py.Group) else None
            if link is None:
                return False
            if not isinstance(link, h5py.HardLink):
                raise CheckpointError(f"{self.path}: '{name}' is a {type(link).__name__}; an ELMo weights file "
                                      "holds its weights itself")
            node = node[part]
        return True

    def __call__(self, name: str, shape: tuple[int, ...]) -> np.ndarray:
        if not self.has(name):
            raise CheckpointError(f"{self.path}: dataset '{name}' is missing (not a complete ELMo weights file)")
        data = self.h5[name]
        if not hasattr(data, "shape") or not hasattr(data, "dtype"):
            raise CheckpointError(f"{self.path}: '{name}' is a group, expected a dataset")
        if tuple(data.shape or ()) != tuple(shape):
            raise CheckpointError(f"{self.path}: dataset '{name}' has shape {tuple(data.shape or ())} but "
                                  f"{self.options_path.name} implies {tuple(shape)}; the weights and the options "
                                  "file do not belong together")
        if data.external or data.is_virtual:
            raise CheckpointError(f"{self.path}: dataset '{name}' keeps its data in other files; an ELMo weights "
                                  "file holds its weights itself")
        if data.dtype.kind not in "fiu":
            raise CheckpointError(f"{self.path}: dataset '{name}' holds {data.dtype}, not numbers")
        try:
            return np.asarray(data[...], dtype=np.float32)
        except (OSError, ValueError, TypeError, RuntimeError, KeyError) as e:
            raise CheckpointError(f"{self.path}: dataset '{name}' cannot be read ({type(e).__name__}: "
                                  f"{' '.join(str(e).split())[:200]}); the file is damaged") from None


def _set(param: torch.nn.Parameter | torch.Tensor, value: np.ndarray) -> None:
    with torch.no_grad():
        param.copy_(torch.from_numpy(np.ascontiguousarray(value)))


def _load_hdf5_into(bilm: ElmoBiLM, read: _Reader) -> None:
    cfg = bilm.config
    cnn, lstm = cfg.char_cnn, cfg.lstm
    enc = bilm.token_encoder
    D, n_filters, P, H = cnn.embedding_dim, cnn.n_filters, lstm.projection_dim, lstm.dim

    char_embed = read("char_embed", (cnn.n_characters - 1, D))
    _set(enc.char_embedding.weight, np.concatenate([np.zeros((1, D), np.float32), char_embed]))
    for k, (conv, (width, count)) in enumerate(zip(enc.convs, cnn.filters)):
        w = read(f"CNN/W_cnn_{k}", (1, width, D, count))
        _set(conv.weight, w[0].transpose(2, 1, 0))  # [width, D, count] -> [count, D, width]
        _set(conv.bias, read(f"CNN/b_cnn_{k}", (count,)))
    for k, hw in enumerate(enc.highways):
        for part in ("carry", "transform"):
            layer = getattr(hw, part)
            _set(layer.weight, read(f"CNN_high_{k}/W_{part}", (n_filters, n_filters)).T)
            _set(layer.bias, read(f"CNN_high_{k}/b_{part}", (n_filters,)))
    if read.has("CNN_proj") or n_filters != P:
        _set(enc.projection.weight, read("CNN_proj/W_proj", (n_filters, P)).T)
        _set(enc.projection.bias, read("CNN_proj/b_proj", (P,)))
    else:  # bilm-tf has no projection when the CNN already outputs P features
        _set(enc.projection.weight, np.eye(P, dtype=np.float32))
        _set(enc.projection.bias, np.zeros(P, np.float32))

    for direction, layers in enumerate((bilm.forward_lstm, bilm.backward_lstm)):
        for k, layer in enumerate(layers):
            prefix = f"RNN_{direction}/RNN/MultiRNNCell/Cell{k}/LSTMCell"
            w = read(f"{prefix}/W_0", (P + P, 4 * H)).T  # [4H, input + recurrent]
            w = _reorder_gates(w, _OURS_FROM_TF)
            b = _reorder_gates(read(f"{prefix}/B", (4 * H,)), _OURS_FROM_TF)
            b[_FORGET * H : (_FORGET + 1) * H] += _TF_FORGET_BIAS
            _set(layer.input_linear.weight, w[:, :P])
            _set(layer.recurrent_weight, w[:, P:])
            _set(layer.input_linear.bias, b)
            _set(layer.projection.weight, read(f"{prefix}/W_P_0", (H, P)).T)


def load_published_elmo(dir_or_options: str | Path, weights: str | Path | None = None) -> ElmoLanguageModel:
    """Load a published ELMo (options.json + *_weights.hdf5) as an :class:`ElmoLanguageModel` without LM head.

    ``dir_or_options`` is a directory holding both files, or the options file (then ``weights`` names the
    hdf5 file, or the one ``*weights*.hdf5`` beside it is used).
    """
    import h5py

    options_path, weights_path = _find_published_files(dir_or_options, weights)
    config = load_config(options_path)
    config.n_tokens_vocab = 0  # published files never hold the softmax
    check_weights_file_size(weights_path, config.num_parameters(), options_path.name)
    try:
        h5 = h5py.File(weights_path, "r")
    except Exception as e:  # h5py raises OSError for a non-HDF5 file, others for damaged ones
        raise CheckpointError(f"{weights_path}: not an HDF5 file ({' '.join(str(e).split())[:200]})") from None
    with h5:
        read = _Reader(h5, weights_path, options_path)
        try:
            missing = [g for g in ("char_embed", "CNN", "RNN_0", "RNN_1") if not read.has(g)]
            if missing:
                raise CheckpointError(f"{weights_path}: not an ELMo weights file (missing {', '.join(missing)}); "
                                      "expected the bilm-tf layout written by dump_weights (char_embed, CNN, RNN_0, "
                                      "RNN_1); note that ELMo files without character inputs are not supported")
            model = ElmoLanguageModel(config)
            _load_hdf5_into(model.bilm, read)
        except CheckpointError:
            raise
        except Exception as e:  # noqa: BLE001  h5py reports a damaged file in many types
            raise CheckpointError(f"{weights_path}: cannot be read as ELMo weights ({type(e).__name__}: "
                                  f"{' '.join(str(e).split())[:200]}); the file is damaged") from None
    check_weights(model.named_parameters(), weights_path)
    model.eval()
    return model


# ----------------------------------------------------------------------------------------------------------
# Our modules -> published layout


def _as_lm(model: ElmoLanguageModel | ElmoBiLM) -> ElmoLanguageModel:
    if isinstance(model, ElmoLanguageModel):
        return model
    if isinstance(model, ElmoBiLM):
        # A bare biLM has no head, whatever its config says about the vocabulary it was trained with.
        return ElmoLanguageModel(dataclasses.replace(model.config, n_tokens_vocab=0), bilm=model)
    raise ValueError(f"expected an ElmoLanguageModel or ElmoBiLM, got {type(model).__name__}")


def _np(t: torch.Tensor) -> np.ndarray:
    return t.detach().cpu().float().numpy()


def export_published(model: ElmoLanguageModel | ElmoBiLM, directory: str | Path) -> Path:
    """Write ``options.json`` + ``weights.hdf5`` in the bilm-tf layout, readable by AllenNLP and bilm-tf tools.

    The softmax (if any) is not part of that layout; it stays only in our own format. Returns the directory.
    """
    import h5py

    bilm = _as_lm(model).bilm
    cfg = bilm.config
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    # Exactly the two sections the published options files have.
    options = {key: config_to_options(cfg)[key] for key in ("lstm", "char_cnn")}
    # bilm-tf reads a missing clip as "no clipping" but chokes on null; write 0 for "off".
    options["lstm"]["cell_clip"] = options["lstm"]["cell_clip"] or 0
    options["lstm"]["proj_clip"] = options["lstm"]["proj_clip"] or 0
    write_json(directory / "options.json", options)

    enc = bilm.token_encoder
    H = cfg.lstm.dim
    tmp = directory / ".weights.hdf5.tmp"
    with h5py.File(tmp, "w") as h5:
        h5["char_embed"] = _np(enc.char_embedding.weight)[1:]
        for k, conv in enumerate(enc.convs):
            h5[f"CNN/W_cnn_{k}"] = _np(conv.weight).transpose(2, 1, 0)[None]
            h5[f"CNN/b_cnn_{k}"] = _np(conv.bias)
        for k, hw in enumerate(enc.highways):
            for part in ("carry", "transform"):
                h5[f"CNN_high_{k}/W_{part}"] = _np(getattr(hw, part).weight).T
                h5[f"CNN_high_{k}/b_{part}"] = _np(getattr(hw, part).bias)
        h5["CNN_proj/W_proj"] = _np(enc.projection.weight).T
        h5["CNN_proj/b_proj"] = _np(enc.projection.bias)
        for direction, layers in enumerate((bilm.forward_lstm, bilm.backward_lstm)):
            for k, layer in enumerate(layers):
                prefix = f"RNN_{direction}/RNN/MultiRNNCell/Cell{k}/LSTMCell"
                w = np.concatenate([_np(layer.input_linear.weight), _np(layer.recurrent_weight)], axis=1)
                b = _np(layer.input_linear.bias).copy()
                b[_FORGET * H : (_FORGET + 1) * H] -= _TF_FORGET_BIAS
                h5[f"{prefix}/W_0"] = _reorder_gates(w, _TF_FROM_OURS).T
                h5[f"{prefix}/B"] = _reorder_gates(b, _TF_FROM_OURS)
                h5[f"{prefix}/W_P_0"] = _np(layer.projection.weight).T
    tmp.replace(directory / "weights.hdf5")
    return directory


# ----------------------------------------------------------------------------------------------------------
# Our own format


def _default_card(config: ElmoConfig, vocab: list[str] | None) -> str:
    s, c = config.lstm, config.char_cnn
    head = f"an LM head over {len(vocab)} output words (`vocab.txt`)" if vocab else "no LM head"
    return (
        "# ELMo (ctxmodels)\n\n"
        f"A bidirectional LSTM language model: character CNN ({c.n_filters} filters, {c.n_highway} highway), "
        f"{s.n_layers} LSTM layers of {s.dim} cells projected to {s.projection_dim}, {head}.\n\n"
        "Load with `ctxmodels.formats.allennlp.load_elmo(dir)`; export to the published AllenNLP layout with "
        "`ctxmodels export-elmo --model DIR --out DIR`.\n"
    )


def save_elmo(
    model: ElmoLanguageModel | ElmoBiLM,
    directory: str | Path,
    vocab: list[str] | None = None,
    card: str | None = None,
) -> None:
    """Write config.json + model.safetensors (+ vocab.txt) + README.md; each file atomically.

    Other files in ``directory`` (metrics, checkpoints) are left alone. ``vocab`` is the output vocabulary
    (row i of the softmax = word i) and is required exactly when the model has an LM head.
    """
    lm = _as_lm(model)
    directory = Path(directory)
    vocab = vocab if vocab is not None else lm.vocab
    if lm.has_lm_head:
        if vocab is None:
            raise ValueError("this ELMo has an LM head: pass its output vocabulary (vocab=[...]) to save it")
        if len(vocab) != lm.config.n_tokens_vocab:
            raise ValueError(f"vocab has {len(vocab)} words but the LM head has {lm.config.n_tokens_vocab} rows")
        bad = [w for w in vocab if not w or any(ch in w for ch in "\n\r")]
        if bad:
            raise ValueError(f"vocabulary words must be non-empty single-line strings; bad: {bad[:5]!r}")
    else:
        vocab = None
    directory.mkdir(parents=True, exist_ok=True)
    save_config(lm.config, directory)
    save_tensors(directory / WEIGHTS_FILE, lm.state_dict(), metadata={"format": "pt", "model_type": "elmo"})
    if vocab is not None:
        write_text_atomic(directory / VOCAB_FILE, "\n".join(vocab) + "\n")
    elif (directory / VOCAB_FILE).exists():
        (directory / VOCAB_FILE).unlink()  # a stale vocabulary would describe a head that is not there
    write_text_atomic(directory / "README.md", card if card is not None else _default_card(lm.config, vocab))


def _load_ours(directory: Path) -> ElmoLanguageModel:
    config = load_config(directory / CONFIG_FILE)
    weights = directory / WEIGHTS_FILE
    # Compared with the config before anything is allocated: the header's shapes against a meta-device model's.
    with torch.device("meta"):
        expected = {k: tuple(v.shape) for k, v in ElmoLanguageModel(config).state_dict().items()}
    problems = shape_problems(expected, safetensors_shapes(weights), CONFIG_FILE)
    if problems:
        raise CheckpointError(f"{weights}: does not fit {CONFIG_FILE}: " + " | ".join(problems))
    check_weights_file_size(weights, config.num_parameters(), CONFIG_FILE)
    vocab = None
    if config.n_tokens_vocab:
        vocab_path = directory / VOCAB_FILE
        if path_kind(vocab_path) == "missing":
            raise CheckpointError(f"{vocab_path}: missing; the model has an LM head and needs its output vocabulary")
        text = read_text(vocab_path, MAX_VOCAB_BYTES, "vocabulary")
        if text.count("\n") > config.n_tokens_vocab + 1:
            raise CheckpointError(f"{vocab_path}: more than {config.n_tokens_vocab + 1:,} lines, but the LM head "
                                  f"has {config.n_tokens_vocab}")
        # split("\n"), not splitlines(): a word may hold U+2028 or other characters splitlines() breaks at
        vocab = text.split("\n")
        if vocab and vocab[-1] == "":
            vocab.pop()
        if len(vocab) != config.n_tokens_vocab:
            raise CheckpointError(f"{vocab_path}: {len(vocab)} words, but the LM head has {config.n_tokens_vocab}")
    state = load_tensors(weights)
    model = ElmoLanguageModel(config)
    if {k: tuple(v.shape) for k, v in state.items()} != expected:
        raise CheckpointError(f"{weights}: the tensors do not match the file's own header")
    model.load_state_dict(state)
    check_weights(model.named_parameters(), weights)
    model.vocab = vocab
    model.eval()
    return model


def load_elmo(directory: str | Path) -> ElmoLanguageModel:
    """Load our ELMo (config.json + model.safetensors) or a published one (options.json + *_weights.hdf5)."""
    directory = Path(directory)
    kind = path_kind(directory)
    if kind == "file":  # an options file
        return load_published_elmo(directory)
    if kind != "dir":
        raise CheckpointError(f"{directory}: " + ("not found" if kind == "missing" else
                                                  f"{describe_kind(kind)}, not an ELMo folder or options file"))
    if is_file(directory / CONFIG_FILE):
        options = read_json_file(directory / CONFIG_FILE, CONFIG_FILE)
        if options.get("model_type", "elmo") != "elmo":
            raise CheckpointError(f"{directory / CONFIG_FILE}: model_type is {shown(options.get('model_type'))}, "
                                  "not an ELMo")
        if path_kind(directory / WEIGHTS_FILE) != "missing":
            return _load_ours(directory)
    if any(directory.glob("*options*.json")):
        return load_published_elmo(directory)
    raise CheckpointError(f"{directory}: no ELMo found (expected config.json + {WEIGHTS_FILE}, or the published "
                          "options.json + *_weights.hdf5)")
