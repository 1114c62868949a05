"""Published encoders read through ``transformers``: RoBERTa, DistilBERT, ALBERT, ELECTRA, DeBERTa-v2/v3 (and
BERT itself when asked), with a tokenizer that speaks :mod:`ctxmodels.tokenization`'s language.

Which path a folder takes is decided in :mod:`ctxmodels.loading`: our own BERT reads ``model_type`` "bert"; the
other types of :data:`ENCODER_TYPES` come here. Everything is read from local files (``local_files_only``):
a model folder or a snapshot of the Hugging Face cache layout.

The model: ``AutoModelForMaskedLM`` when the weights hold a masked-LM head, else the bare encoder (``AutoModel``
architecture, taken from the same load: one read of the weights). Eager attention, so that every layer can return
its attention probabilities (the fused kernels do not).

The tokenizer (:class:`~ctxmodels.formats.transformers_tokenizer.EncoderTokenizer`) wraps the folder's fast
tokenizer and returns :class:`~ctxmodels.tokenization.Encoded` like our WordPiece does. The fast tokenizer is
tokenizer.json or, where a model ships only a SentencePiece model (DeBERTa-v3's spm.model), the one transformers
converts from it on each load with the sentencepiece and protobuf packages (quicker than reading the tokenizer.json
it would make, so nothing is cached).

Anything wrong with the files (a config transformers does not know, weights that do not fit it, a tokenizer that
does not fit the model) is one :class:`~ctxmodels.checkpoint.CheckpointError` naming the folder.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from ..checkpoint import CheckpointError
from ..model_files import read_json, shown
from ..thread_warnings import caught_warnings
from .transformers_tokenizer import EncoderTokenizer

#: model types read through transformers; "bert" only when asked (our own BERT reads it by default)
ENCODER_TYPES = ("bert", "roberta", "distilbert", "albert", "electra", "deberta-v2")
#: keys of config.json that say "not an encoder": decoders and encoder-decoders are refused
_NOT_ENCODER = ("is_decoder", "is_encoder_decoder", "add_cross_attention")


def model_type(folder: Path) -> str | None:
    """The ``model_type`` in ``folder/config.json`` (None when it states none)."""
    value = read_json(folder / "config.json", "config.json").get("model_type")
    return value if isinstance(value, str) else None


def check_config(folder: Path) -> dict:
    """config.json of an encoder this module reads; CheckpointError saying what is supported otherwise."""
    cfg = read_json(folder / "config.json", "config.json")
    kind = cfg.get("model_type")
    if kind not in ENCODER_TYPES:
        raise CheckpointError(
            f"{folder / 'config.json'}: model_type {shown(kind)} is not an encoder ctxmodels reads; it reads "
            f"{', '.join(ENCODER_TYPES)} (through transformers), ELMo and static vectors")
    for key in _NOT_ENCODER:
        if cfg.get(key):
            raise CheckpointError(f"{folder / 'config.json'}: {key} is set: a decoder or an encoder-decoder, not an "
                                  "encoder; ctxmodels reads encoders (BERT, RoBERTa, DistilBERT, ALBERT, ELECTRA, "
                                  "DeBERTa-v2)")
    return cfg


#: the largest sizes a config may state before anything is built (BERT-large is 24 x 1024, vocabularies ~250k);
#: "work" bounds the layers a forward pass runs (ALBERT runs num_hidden_layers x inner_group_num of them)
_LIMITS = {"hidden": 16384, "layers": 256, "intermediate": 65536, "vocab": 2_000_000, "positions": 1_000_000,
           "heads": 4096, "token types": 1024, "work": 256}


def _config_int(cfg: dict, names: Sequence[str], what: str, limit: int, folder: Path, default: int | None = None,
                lo: int = 1) -> int:
    """The size config.json states under any of ``names`` (the spellings of one field, e.g. DistilBERT's ``dim``
    for ``hidden_size``), each checked to be a whole number in ``lo..limit``; the largest when several are given
    (transformers may take either). CheckpointError naming config.json and the field otherwise."""
    present = [n for n in names if n in cfg] or [names[0]]
    values = [cfg.get(n, default) for n in present]
    for name, value in zip(present, values):
        if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= limit:
            raise CheckpointError(f"{folder / 'config.json'}: {name} {shown(value)} is not a {what} between {lo:,} "
                                  f"and {limit:,}")
    return max(values)


def _relative_positions(cfg: dict, folder: Path, positions: int) -> int:
    """Rows of DeBERTa-v2's relative-position table (0 without relative attention): 2 x position_buckets, else
    2 x max_relative_positions, where a value below 1 means the next one (transformers' rule)."""
    buckets = _config_int(cfg, ("position_buckets",), "bucket count (or -1)", _LIMITS["positions"], folder,
                          default=-1, lo=-1)
    relative = _config_int(cfg, ("max_relative_positions",), "distance (or -1)", _LIMITS["positions"], folder,
                           default=-1, lo=-1)
    if not cfg.get("relative_attention", False):
        return 0
    return 2 * (buckets if buckets > 0 else relative if relative > 0 else positions)


def check_sizes(folder: Path, cfg: dict) -> None:
    """CheckpointError, before any model is built, when config.json states sizes beyond :data:`_LIMITS`, work
    beyond them (ALBERT's inner groups) or a model far larger than its weights files could hold (a hostile or
    mismatched config would otherwise make transformers allocate it or run for hours)."""
    from .huggingface import _weight_files

    hidden = _config_int(cfg, ("hidden_size", "dim"), "width", _LIMITS["hidden"], folder)
    layers = _config_int(cfg, ("num_hidden_layers", "n_layers"), "layer count", _LIMITS["layers"], folder)
    heads = _config_int(cfg, ("num_attention_heads", "n_heads"), "head count", _LIMITS["heads"], folder,
                        default=12)
    head_size = _config_int(cfg, ("attention_head_size",), "head width", _LIMITS["hidden"] // heads, folder,
                            default=max(1, hidden // heads))
    if "attention_head_size" not in cfg and hidden % heads:
        width, count = (next((n for n in names if n in cfg), names[0]) for names in (("hidden_size", "dim"),
                                                                          ("num_attention_heads", "n_heads")))
        raise CheckpointError(f"{folder / 'config.json'}: {count} {heads} does not divide {width} {hidden} (each "
                              "head takes an equal share of the width)")
    inter = _config_int(cfg, ("intermediate_size", "hidden_dim"), "feed-forward width", _LIMITS["intermediate"],
                        folder, default=4 * hidden)
    vocab = _config_int(cfg, ("vocab_size",), "vocabulary size", _LIMITS["vocab"], folder)
    positions = _config_int(cfg, ("max_position_embeddings",), "position count", _LIMITS["positions"], folder,
                            default=512)
    embedding = _config_int(cfg, ("embedding_size",), "embedding width", _LIMITS["hidden"], folder, default=hidden)
    types = _config_int(cfg, ("type_vocab_size",), "segment type count", _LIMITS["token types"], folder, default=2,
                        lo=0)
    stored = layers
    if cfg.get("model_type") == "albert":  # layers share weights: groups x inner_group_num layers are stored
        inner = _config_int(cfg, ("inner_group_num",), "layer count per group", _LIMITS["work"] // layers, folder,
                            default=1)
        stored = _config_int(cfg, ("num_hidden_groups",), "layer group count", layers, folder, default=1) * inner
    attention = heads * head_size
    smallest = stored * (3 * hidden * attention + attention * hidden + 2 * hidden * inter)
    smallest += (vocab + types) * embedding + _relative_positions(cfg, folder, positions) * hidden
    if cfg.get("position_embedding_type", "absolute") == "absolute" and cfg.get("model_type") != "deberta-v2":
        smallest += positions * embedding
    elif cfg.get("position_embedding_type") in ("relative_key", "relative_key_query"):
        smallest += stored * (2 * positions - 1) * head_size  # a table of distances in every layer
    files, source = _weight_files(folder)
    size = sum(f.stat().st_size for f in files)
    if size < smallest:  # even at 1 byte a weight the files could not hold this model
        raise CheckpointError(f"{source}: {size:,} bytes of weights cannot hold the model config.json describes "
                              f"(at least {smallest:,} weights); the weights and config.json do not belong together")


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """transformers' own log lines and warnings (unused weights, deprecations) kept off the console while loading;
    what matters for the user is checked here and said in one message."""
    from transformers.utils import logging as hf_logging

    level = hf_logging.get_verbosity()
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        with caught_warnings():  # dropped; this thread's only (catch_warnings would silence every thread)
            yield
    finally:
        hf_logging.set_verbosity(level)
        if bars:
            hf_logging.enable_progress_bar()


def _short(e: BaseException) -> str:
    return " ".join(str(e).split())[:300]


# ----------------------------------------------------------------------------------------------------------
# the model


@dataclass
class EncoderFiles:
    """What :func:`load_encoder` read: the model (with its MLM head, or the bare encoder), the tokenizer, and why
    there is no masked-LM head when there is none."""

    model: Any
    tokenizer: EncoderTokenizer
    model_type: str
    no_mlm_reason: str = ""


def _head_reason(model_type: str, architectures: Sequence[str], missing: Sequence[str]) -> str:
    if any(a.endswith(("ForTokenClassification", "ForSequenceClassification")) for a in architectures):
        return (f"it is a fine-tuned classifier (saved as {architectures[0]}): fine-tuning replaced the masked-LM "
                "head with a task head; its base model fills in blanks")
    if model_type == "electra" and any("Discriminator" in a or "PreTraining" in a for a in architectures):
        return ("it is an ELECTRA discriminator: its head tells replaced words from original ones and does not "
                "guess words; the ELECTRA generator (…-generator, or the generator/ folder of a `ctxmodels train "
                "electra` run) fills in blanks")
    saved = f" (saved as {architectures[0]})" if architectures else ""
    return (f"its weights hold no masked-LM head{saved}: it was published as an encoder only, e.g. for sentence "
            f"embeddings; missing {', '.join(missing[:3])}")


def load_encoder(folder: str | Path) -> EncoderFiles:
    """Read the encoder in ``folder`` (config.json, weights, fast tokenizer files) through transformers, offline.

    The model is float32, in eval mode, with eager attention; the masked-LM head is kept when the weights hold
    one. CheckpointError for anything that does not make a working model."""
    folder = Path(folder)
    cfg = check_config(folder)
    kind = cfg["model_type"]
    import transformers

    check_sizes(folder, cfg)
    tokenizer = load_tokenizer(folder)
    with _quiet():
        try:
            config = transformers.AutoConfig.from_pretrained(folder, local_files_only=True)
        except MemoryError:
            raise
        except Exception as e:  # noqa: BLE001 - a hostile config.json can trip transformers in many ways
            raise CheckpointError(f"{folder / 'config.json'}: transformers cannot read it ({type(e).__name__}: "
                                  f"{_short(e)})") from None
        try:
            model, info = transformers.AutoModelForMaskedLM.from_pretrained(
                folder, config=config, local_files_only=True, attn_implementation="eager",
                output_loading_info=True)
        except MemoryError:
            raise
        except Exception as e:  # noqa: BLE001 - safetensors, torch and transformers each have their own errors
            raise CheckpointError(f"{folder}: the weights do not load into a {kind} model ({type(e).__name__}: "
                                  f"{_short(e)}); the files are damaged or do not belong together") from None
    prefix = model.base_model_prefix
    missing = list(info.get("missing_keys", []))
    encoder_missing = [k for k in missing if k.startswith(prefix + ".")]
    if encoder_missing:
        raise CheckpointError(f"{folder}: the weights lack {len(encoder_missing)} tensor(s) of the encoder "
                              f"({', '.join(encoder_missing[:3])}); the file is damaged or belongs to another model")
    mismatched = info.get("mismatched_keys") or []
    if mismatched:
        raise CheckpointError(f"{folder}: weights of the wrong shape for config.json ({shown(mismatched[:3], 200)})")
    reason = ""
    if missing:  # only head tensors are missing: keep the encoder, drop the untrained head
        reason = _head_reason(kind, list(cfg.get("architectures") or []), missing)
        model = model.base_model
    model = model.float().eval()
    vocab = model.get_input_embeddings().num_embeddings
    if tokenizer.largest_id >= vocab:
        raise CheckpointError(f"{folder}: the tokenizer has ids up to {tokenizer.largest_id} but the model's "
                              f"vocabulary has {vocab} rows; the tokenizer files and the model do not belong together")
    fit_length(tokenizer, config)
    return EncoderFiles(model, tokenizer, kind, reason)


def fit_length(tokenizer: EncoderTokenizer, config: Any) -> None:
    """Lower the tokenizer's ``max_length`` to the positions the model has."""
    positions = getattr(config, "max_position_embeddings", None)
    if config.model_type == "roberta" and isinstance(positions, int):  # positions count from pad_token_id + 1
        positions -= (getattr(config, "pad_token_id", None) or 0) + 1  # (514 -> 512)
    if isinstance(positions, int) and positions > 0:
        tokenizer.max_length = min(tokenizer.max_length or positions, positions)


#: what transformers needs to turn a SentencePiece model (spm.model, spiece.model) into a fast tokenizer:
#: (module to import, package to install)
SENTENCEPIECE_PACKAGES = (("sentencepiece", "sentencepiece"), ("google.protobuf", "protobuf"))


def missing_sentencepiece_packages() -> list[str]:
    """The packages of :data:`SENTENCEPIECE_PACKAGES` that cannot be imported here (both are dependencies of
    ctxmodels, but an environment installed without them reads only folders that hold tokenizer.json)."""
    import importlib

    missing = []
    for module, package in SENTENCEPIECE_PACKAGES:
        try:
            importlib.import_module(module)
        except ImportError:
            missing.append(package)
    return missing


def _reads_as_sentencepiece(path: Path) -> bool:
    import sentencepiece

    try:
        sentencepiece.SentencePieceProcessor(model_file=str(path))
    except Exception:  # noqa: BLE001 - sentencepiece raises RuntimeError, OSError, ... on a bad file
        return False
    return True


def load_tokenizer(folder: Path) -> EncoderTokenizer:
    import transformers

    with _quiet():
        try:
            fast = transformers.AutoTokenizer.from_pretrained(folder, local_files_only=True, use_fast=True)
        except MemoryError:
            raise
        except Exception as e:  # noqa: BLE001 - tokenizer classes raise many kinds of errors on bad files
            hint = "a model folder needs tokenizer.json (or the files its tokenizer class reads)"
            spm_files = sorted(p.name for p in folder.glob("*.model"))
            if not (folder / "tokenizer.json").exists() and spm_files:
                what = (f"its tokenizer is a SentencePiece model ({', '.join(spm_files)}) without tokenizer.json (as "
                        "DeBERTa-v3 is published)")
                missing = missing_sentencepiece_packages()
                if missing:  # transformers' own message then names the wrong package (tiktoken): not shown
                    raise CheckpointError(f"{folder}: cannot read the tokenizer: {what}; transformers converts it "
                                          f"only with {' and '.join(missing)} installed: run `pip install "
                                          f"{' '.join(missing)}`") from None
                damaged = [name for name in spm_files if not _reads_as_sentencepiece(folder / name)]
                if damaged:  # transformers' own message then names the wrong package (tiktoken): not shown
                    raise CheckpointError(f"{folder}: cannot read the tokenizer: {what}, and {', '.join(damaged)} "
                                          "is not a SentencePiece model (a damaged or cut download?)") from None
                hint = f"{what}; it could not be converted"
            raise CheckpointError(f"{folder}: cannot read the tokenizer ({type(e).__name__}: {_short(e)}); "
                                  f"{hint}") from None
    if not getattr(fast, "is_fast", False) or getattr(fast, "backend_tokenizer", None) is None:
        raise CheckpointError(f"{folder}: only a slow tokenizer could be built; ctxmodels needs a fast one "
                              "(tokenizer.json) for word alignment")
    added = fast.get_added_vocab()
    if all(token in added for token in fast.get_vocab()):  # transformers builds this when no vocabulary file is there
        raise CheckpointError(f"{folder}: no tokenizer vocabulary: the tokenizer built knows only its special tokens "
                              f"({', '.join(sorted(added)[:6])}); the folder needs tokenizer.json or the file its "
                              "tokenizer reads (spm.model or spiece.model, vocab.txt, vocab.json and merges.txt)")
    return EncoderTokenizer(fast)


def run_encoder(model: Any, batch: dict[str, torch.Tensor], attentions: bool = False) -> Any:
    """The encoder's output (hidden states of every layer; attention maps when asked) for a collated batch,
    without the masked-LM head."""
    encoder = model.base_model
    return encoder(**batch, output_hidden_states=True, output_attentions=attentions, return_dict=True)
