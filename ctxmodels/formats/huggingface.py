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

import warnings
from collections.abc import Sequence
from pathlib import Path

import torch

from ..bert import BertConfig, BertForPreTraining
from ..checkpoint import CheckpointError, load_tensors, read_json, save_tensors, write_json, write_text_atomic
from ..paths import hf_cache_dirs
from ..tokenization import WordPieceTokenizer

WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
INDEX_FILES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")
# Keys some checkpoints carry that hold nothing a model needs.
IGNORED_SUFFIXES = ("embeddings.position_ids", "embeddings.token_type_ids")
ENCODER_PREFIXES = ("embeddings.", "encoder.", "pooler.")


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
    rev = ref.read_text(encoding="utf-8").strip() if ref.is_file() else ""
    if rev and (snapshots / rev).is_dir():
        return snapshots / rev
    found = [p for p in snapshots.iterdir() if p.is_dir()] if snapshots.is_dir() else []
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


def _read_weights(directory: Path) -> tuple[dict[str, torch.Tensor], Path]:
    for name in WEIGHT_FILES:
        if (directory / name).is_file():
            return load_tensors(directory / name), directory / name
    for name in INDEX_FILES:
        index = directory / name
        if index.is_file():
            weight_map = read_json(index).get("weight_map")
            if not isinstance(weight_map, dict):
                raise CheckpointError(f"{index}: no weight_map")
            state: dict[str, torch.Tensor] = {}
            for shard in sorted(set(weight_map.values())):
                state.update(load_tensors(directory / shard))
            return state, index
    raise CheckpointError(f"{directory}: no weights file ({' or '.join(WEIGHT_FILES)})")


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
        if not k.startswith(("bert.", "cls.")):
            ignored.append(key)  # e.g. a classifier head; not part of BERT pre-training
            continue
        out[k] = t
    # The decoder bias is the same tensor as cls.predictions.bias in transformers; keep one.
    dec_bias = out.pop("cls.predictions.decoder.bias", None)
    if dec_bias is not None and "cls.predictions.bias" not in out:
        out["cls.predictions.bias"] = dec_bias
    return out, ignored


def build_from_state(
    config: BertConfig, state: dict[str, torch.Tensor], source: str | Path
) -> BertForPreTraining:
    """A model with exactly the heads ``state`` has, loaded from it (keys already normalised)."""
    mlm = any(k.startswith("cls.predictions.") for k in state)
    nsp = any(k.startswith("cls.seq_relationship.") for k in state)
    pooler = any(k.startswith("bert.pooler.") for k in state)
    if nsp and not pooler:
        raise CheckpointError(f"{source}: an NSP head (cls.seq_relationship) without bert.pooler weights")
    model = BertForPreTraining(config, mlm_head=mlm, nsp_head=nsp, add_pooling_layer=pooler)
    expected = model.state_dict()
    state = dict(state)
    if mlm:
        decoder = state.pop("cls.predictions.decoder.weight", None)
        embeddings = state.get("bert.embeddings.word_embeddings.weight")
        if decoder is not None and embeddings is not None and not torch.equal(decoder, embeddings):
            model.untie_weights()  # a checkpoint trained with an untied decoder keeps it
            expected = model.state_dict()
            state["cls.predictions.decoder.weight"] = decoder
        else:
            expected.pop("cls.predictions.decoder.weight")
    problems = []
    missing = [k for k in expected if k not in state]
    if missing:
        shown = ", ".join(missing[:6]) + (f" and {len(missing) - 6} more" if len(missing) > 6 else "")
        problems.append(f"missing {len(missing)} weights ({shown})")
    unexpected = [k for k in state if k not in expected]
    if unexpected:
        shown = ", ".join(unexpected[:6]) + (f" and {len(unexpected) - 6} more" if len(unexpected) > 6 else "")
        problems.append(f"{len(unexpected)} weights this BERT configuration has no place for ({shown})")
    bad_shapes = [
        f"{k} is {tuple(state[k].shape)}, config.json implies {tuple(expected[k].shape)}"
        for k in expected
        if k in state and tuple(state[k].shape) != tuple(expected[k].shape)
    ]
    if bad_shapes:
        problems.append("shape mismatch: " + "; ".join(bad_shapes[:4]) + (" ..." if len(bad_shapes) > 4 else ""))
    if problems:
        raise CheckpointError(f"{source}: does not fit the BERT config: " + " | ".join(problems))
    with torch.no_grad():
        for k, t in expected.items():
            t.copy_(state[k].to(t.dtype))
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
        config = BertConfig.from_dict(read_json(config_path))
    except CheckpointError:
        raise
    except (TypeError, ValueError) as e:
        raise CheckpointError(f"{config_path}: {e}") from e
    raw, weights_path = _read_weights(directory)
    state, ignored = normalize_keys(raw)
    if ignored:
        warnings.warn(f"{weights_path}: ignored {len(ignored)} non-BERT weights ({', '.join(ignored[:4])})",
                      stacklevel=2)
    model = build_from_state(config, state, weights_path)
    tokenizer = WordPieceTokenizer.load(directory)
    if tokenizer.vocab_size > config.vocab_size:
        raise CheckpointError(
            f"{directory}: the tokenizer has {tokenizer.vocab_size} tokens but config.json vocab_size is "
            f"{config.vocab_size}"
        )
    limit = config.max_position_embeddings
    tokenizer.max_length = min(tokenizer.max_length or limit, limit)
    return model, tokenizer
