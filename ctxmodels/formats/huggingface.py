"""BERT checkpoints in the Hugging Face layout: ours and the ones people already have.

A directory holds ``config.json``, ``model.safetensors`` (or a legacy ``pytorch_model.bin``, read with
``weights_only=True``; or shards with an ``*.index.json``), and ``tokenizer.json`` and/or ``vocab.txt``.

Our module names are Hugging Face's, so loading is a key clean-up, not a mapping table. What the clean-up
accepts, because published checkpoints differ:

- saves of ``BertModel`` (no ``bert.`` prefix, no heads), ``BertForMaskedLM`` (no pooler, no NSP head) and
  ``BertForPreTraining``; keys with or without the ``bert.`` prefix;
- TF-era ``LayerNorm.gamma`` / ``LayerNorm.beta`` names;
- a missing ``cls.predictions.decoder.weight`` (tied to the word embeddings, as saved by recent transformers),
  a redundant ``cls.predictions.decoder.bias``, and the unused ``position_ids`` / ``token_type_ids`` buffers;
- the Hugging Face cache layout ``models--ORG--NAME/snapshots/REV/``, given as the snapshot, as the
  ``models--ORG--NAME`` folder, or as ``"ORG/NAME"`` plus a cache root (default: the Hugging Face caches of
  :func:`ctxmodels.paths.hf_cache_dirs`). :func:`hf_snapshot`, :func:`hf_repo_name` and :func:`hf_cached` are the
  package's one reading of that layout; :mod:`ctxmodels.loading` uses them too.

Anything else wrong (missing keys, shapes that do not fit the config, an unreadable file, a config that is not
BERT) raises one :class:`~ctxmodels.checkpoint.CheckpointError` naming the file and the problem.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from pathlib import Path

import torch

from ..bert import BertConfig, BertForPreTraining
from ..checkpoint import CheckpointError, load_tensors, read_json, save_tensors, write_json, write_text_atomic
from ..model_files import (
    check_weights,
    check_weights_file_size,
    is_dir,
    path_kind,
    read_text,
    require_file,
    safetensors_shapes,
    shape_problems,
    shown,
)
from ..model_files import read_json as read_json_file
from ..paths import hf_cache_dirs
from ..tokenization import WordPieceTokenizer

WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
INDEX_FILES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")
# Keys some checkpoints carry that hold nothing a model needs.
# a revision as refs/main names it (a commit hash, or a branch or tag name): one plain path component
_REVISION = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,254}")
IGNORED_SUFFIXES = ("embeddings.position_ids", "embeddings.token_type_ids")
ENCODER_PREFIXES = ("embeddings.", "encoder.", "pooler.")
#: the task heads of fine-tuned models (ctxmodels.heads): left out without a warning, the encoder is what loads
TASK_HEAD_PREFIXES = ("classifier.", "qa_outputs.")


# ----------------------------------------------------------------------------------------------------------
# saving


def _architecture(model: BertForPreTraining) -> str:
    if model.has_mlm_head and model.has_nsp_head:
        return "BertForPreTraining"
    if model.has_mlm_head:
        return "BertForMaskedLM"
    return "BertModel"


def save_pretrained(
    model: BertForPreTraining,
    tokenizer: WordPieceTokenizer | None,
    directory: str | Path,
    card: str | None = None,
) -> None:
    """Write config.json, model.safetensors, the tokenizer files and a README.md model card.

    ``transformers.BertForPreTraining.from_pretrained(directory)`` reads the result. A tied decoder weight is
    not written (transformers ties it on load, as we do). Without ``card`` an existing README.md is kept.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    config = model.config.to_dict()
    config["architectures"] = [_architecture(model)]
    write_json(directory / "config.json", config)
    state = model.state_dict()
    if model.decoder_is_tied:
        state.pop("cls.predictions.decoder.weight", None)
    save_tensors(directory / "model.safetensors", state, metadata={"format": "pt"})
    if tokenizer is not None:
        tokenizer.save(directory)
        # Readers (ours and transformers) truncate to model_max_length: never beyond the model's positions.
        limit = model.config.max_position_embeddings
        tok_config = read_json(directory / "tokenizer_config.json")
        tok_config["model_max_length"] = min(tokenizer.max_length or limit, limit)
        write_json(directory / "tokenizer_config.json", tok_config)
    if card is not None:
        write_text_atomic(directory / "README.md", card)
    elif not (directory / "README.md").exists():
        write_text_atomic(directory / "README.md", default_card(model))


def default_card(model: BertForPreTraining) -> str:
    c = model.config
    return (
        "# BERT model (ctxmodels)\n\n"
        f"- architecture: {_architecture(model)}\n"
        f"- layers {c.num_hidden_layers}, hidden {c.hidden_size}, heads {c.num_attention_heads}, "
        f"feed-forward {c.intermediate_size}, vocabulary {c.vocab_size}, positions {c.max_position_embeddings}\n"
        f"- parameters: {model.num_parameters():,}\n\n"
        "Load with `ctxmodels.formats.huggingface.load_bert(dir)` or "
        "`transformers.BertForPreTraining.from_pretrained(dir)`.\n"
    )


# ----------------------------------------------------------------------------------------------------------
# finding the directory


def hf_cache_folder(name: str) -> str:
    """The cache folder name of the Hugging Face model ``ORG/NAME``: ``models--ORG--NAME``."""
    return "models--" + name.strip("/").replace("/", "--")


def hf_repo_name(path: Path) -> str | None:
    """"ORG/NAME" for a path at or inside a ``models--ORG--NAME`` cache folder; None for any other path."""
    for part in (path, *path.parents):
        if part.name.startswith("models--"):
            return part.name[len("models--"):].replace("--", "/")
    return None


def hf_snapshot(repo_dir: Path) -> Path:
    """The snapshot of a ``models--ORG--NAME`` cache folder that ``refs/main`` names, else the newest one."""
    snapshots = repo_dir / "snapshots"
    ref = repo_dir / "refs" / "main"
    rev = ""
    if path_kind(ref) != "missing":
        try:
            rev = read_text(ref, 4096, "revision file (refs/main)").strip()
        except CheckpointError as e:
            raise CheckpointError(f"{ref}: not a revision name ({e}); the cache entry is damaged: download the "
                                  "model again or point to a snapshot folder") from None
        if rev and (rev in (".", "..") or not _REVISION.fullmatch(rev)):
            raise CheckpointError(f"{ref}: {rev[:60]!r} is not a revision name; the cache entry is damaged: "
                                  "download the model again or point to a snapshot folder")
    if rev and is_dir(snapshots / rev):
        return snapshots / rev
    found = [p for p in snapshots.iterdir() if is_dir(p)] if is_dir(snapshots) else []
    if not found:
        raise CheckpointError(f"{repo_dir}: a Hugging Face cache entry without snapshots (an interrupted "
                              "download?); download it again or point to a model directory")
    return max(found, key=lambda p: (p.stat().st_mtime, p.name))


def hf_cached(name: str, cache_dirs: Sequence[str | Path] | None = None) -> Path | None:
    """The snapshot of the model ``ORG/NAME`` in the first of ``cache_dirs`` (default
    :func:`ctxmodels.paths.hf_cache_dirs`) that holds it; None when none does. Nothing is downloaded."""
    folder = hf_cache_folder(name)
    for root in (hf_cache_dirs() if cache_dirs is None else [Path(d).expanduser() for d in cache_dirs]):
        if (root / folder).is_dir():
            return hf_snapshot(root / folder)
    return None


def resolve_checkpoint_dir(path: str | Path, cache_dir: str | Path | None = None) -> Path:
    """Turn what a user typed into the directory that holds config.json.

    ``"ORG/NAME"`` is looked up in ``cache_dir`` when given, else in the Hugging Face caches
    (:func:`ctxmodels.paths.hf_cache_dirs`)."""
    p = Path(path).expanduser()
    if p.is_file():
        p = p.parent
    if p.is_dir():
        if (p / "config.json").is_file():
            return p
        if (p / "snapshots").is_dir():
            return hf_snapshot(p)
        raise CheckpointError(f"{p}: no config.json here; expected a BERT checkpoint directory")
    # "ORG/NAME" in a Hugging Face cache (read locally; nothing is downloaded).
    name = str(path).strip("/")
    if name.count("/") == 1:
        roots = [Path(cache_dir).expanduser()] if cache_dir is not None else hf_cache_dirs()
        found = hf_cached(name, roots)
        if found is not None:
            return found
        raise CheckpointError(f"{path}: not a directory, and no {hf_cache_folder(name)} in the cache "
                              f"({', '.join(map(str, roots))})")
    raise CheckpointError(f"{path}: no such checkpoint directory")


# ----------------------------------------------------------------------------------------------------------
# loading


def _weight_files(directory: Path) -> tuple[list[Path], Path]:
    """(the weights files, what to name in messages: the file or the shard index); nothing is read but the
    index. Shard names must be plain file names inside ``directory``."""
    for name in WEIGHT_FILES:
        if path_kind(directory / name) != "missing":
            return [require_file(directory / name, "weights file")], directory / name
    for name in INDEX_FILES:
        index = directory / name
        if path_kind(index) != "missing":
            weight_map = read_json_file(index, "shard index").get("weight_map")
            if not isinstance(weight_map, dict) or not weight_map:
                raise CheckpointError(f"{index}: no weight_map (tensor name -> shard file)")
            for value in weight_map.values():
                if not isinstance(value, str) or value in ("", ".", "..") or Path(value).name != value:
                    raise CheckpointError(f"{index}: shard {shown(value)} is not a file name in {directory}; the "
                                          "index is damaged")
            shards = [require_file(directory / shard, "weights shard") for shard in sorted(set(weight_map.values()))]
            return shards, index
    raise CheckpointError(f"{directory}: no weights file ({' or '.join(WEIGHT_FILES)})")


def _read_weights(directory: Path) -> tuple[dict[str, torch.Tensor], Path]:
    files, source = _weight_files(directory)
    state: dict[str, torch.Tensor] = {}
    for f in files:
        state.update(load_tensors(f))
    return state, source


def normalize_keys(state: dict[str, torch.Tensor]) -> tuple[dict[str, torch.Tensor], list[str]]:
    """Map a Hugging Face BERT state dict of any flavour onto our names; returns (state, ignored keys)."""
    out: dict[str, torch.Tensor] = {}
    ignored: list[str] = []
    for key, t in state.items():
        k = key
        if k.startswith(ENCODER_PREFIXES):
            k = "bert." + k
        if ".LayerNorm.gamma" in k or ".LayerNorm.beta" in k:
            k = k.replace(".LayerNorm.gamma", ".LayerNorm.weight").replace(".LayerNorm.beta", ".LayerNorm.bias")
        if k.endswith(IGNORED_SUFFIXES):
            continue
        if k.startswith(TASK_HEAD_PREFIXES):
            continue
        if not k.startswith(("bert.", "cls.")):
            ignored.append(key)  # e.g. a classifier head; not part of BERT pre-training
            continue
        out[k] = t
    # The decoder bias is the same tensor as cls.predictions.bias in transformers; keep one.
    dec_bias = out.pop("cls.predictions.decoder.bias", None)
    if dec_bias is not None and "cls.predictions.bias" not in out:
        out["cls.predictions.bias"] = dec_bias
    return out, ignored


def _heads(keys) -> tuple[bool, bool, bool]:
    """(MLM head, NSP head, pooler) that weights with these (normalised) names have."""
    keys = list(keys)
    return (any(k.startswith("cls.predictions.") for k in keys),
            any(k.startswith("cls.seq_relationship.") for k in keys),
            any(k.startswith("bert.pooler.") for k in keys))


def _expected_shapes(config: BertConfig, keys, source: str | Path) -> dict[str, tuple[int, ...]]:
    """The shapes a model with the heads of ``keys`` has, computed on the meta device (nothing allocated). The
    decoder weight is expected only when ``keys`` hold it (a tied one is often left out)."""
    mlm, nsp, pooler = _heads(keys)
    if nsp and not pooler:
        raise CheckpointError(f"{source}: an NSP head (cls.seq_relationship) without bert.pooler weights")
    with torch.device("meta"):
        model = BertForPreTraining(config, mlm_head=mlm, nsp_head=nsp, add_pooling_layer=pooler)
        model.untie_weights()
    shapes = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    if "cls.predictions.decoder.weight" not in keys:
        shapes.pop("cls.predictions.decoder.weight", None)
    return shapes


def check_shapes(config: BertConfig, shapes: dict[str, tuple[int, ...]], source: str | Path) -> None:
    """CheckpointError unless weights of these shapes (keys already normalised) fill a model of ``config``."""
    problems = shape_problems(_expected_shapes(config, shapes, source), shapes)
    if problems:
        raise CheckpointError(f"{source}: does not fit the BERT config: " + " | ".join(problems))


def build_from_state(
    config: BertConfig, state: dict[str, torch.Tensor], source: str | Path
) -> BertForPreTraining:
    """A model with exactly the heads ``state`` has, loaded from it (keys already normalised)."""
    check_shapes(config, {k: tuple(v.shape) for k, v in state.items()}, source)
    mlm, nsp, pooler = _heads(state)
    model = BertForPreTraining(config, mlm_head=mlm, nsp_head=nsp, add_pooling_layer=pooler)
    state = dict(state)
    if mlm:
        decoder = state.pop("cls.predictions.decoder.weight", None)
        embeddings = state.get("bert.embeddings.word_embeddings.weight")
        if decoder is not None and embeddings is not None and not torch.equal(decoder, embeddings):
            model.untie_weights()  # a checkpoint trained with an untied decoder keeps it
            state["cls.predictions.decoder.weight"] = decoder
    expected = model.state_dict()
    if model.decoder_is_tied:
        expected.pop("cls.predictions.decoder.weight", None)
    with torch.no_grad():
        for k, t in expected.items():
            t.copy_(state[k].to(t.dtype))
    check_weights(model.named_parameters(), source)
    return model.eval()


def load_bert(
    path: str | Path, cache_dir: str | Path | None = None
) -> tuple[BertForPreTraining, WordPieceTokenizer]:
    """Load a BERT checkpoint directory (ours or Hugging Face's, or a cache entry) with its tokenizer.

    The model is in eval mode, float32, with the heads the checkpoint has (``has_mlm_head``/``has_nsp_head``).
    """
    directory = resolve_checkpoint_dir(path, cache_dir)
    config_path = directory / "config.json"
    try:
        config = BertConfig.from_dict(read_json_file(config_path, "config.json"))
    except CheckpointError:
        raise
    except (TypeError, ValueError) as e:
        raise CheckpointError(f"{config_path}: {e}") from e
    # The tokenizer first: it is small, and a vocabulary larger than the model's is a clear error on its own.
    tokenizer = WordPieceTokenizer.load(directory)
    largest = tokenizer.largest_id
    if largest >= config.vocab_size:
        raise CheckpointError(
            f"{directory}: the tokenizer has ids up to {largest} but config.json vocab_size is "
            f"{config.vocab_size}; the tokenizer files and the model do not belong together"
        )
    # Weights are compared with the config before they are read: by the safetensors header's shapes, and by
    # size (so a file far larger than the config allows is never read into memory).
    files, source = _weight_files(directory)
    n_params = config.num_parameters() + config.vocab_size * config.hidden_size  # an untied decoder too
    if len(files) == 1 and files[0].suffix == ".safetensors":
        check_shapes(config, normalize_keys(safetensors_shapes(files[0]))[0], files[0])
    check_weights_file_size(files, n_params, source=source)
    raw, weights_path = _read_weights(directory)
    state, ignored = normalize_keys(raw)
    if ignored:
        warnings.warn(f"{weights_path}: ignored {len(ignored)} non-BERT weights ({', '.join(ignored[:4])})",
                      stacklevel=2)
    model = build_from_state(config, state, weights_path)
    limit = config.max_position_embeddings
    tokenizer.max_length = min(tokenizer.max_length or limit, limit)
    return model, tokenizer
