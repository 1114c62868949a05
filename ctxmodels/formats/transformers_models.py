"""Published encoders read through ``transformers``: RoBERTa, DistilBERT, ALBERT, ELECTRA, DeBERTa-v2/v3 (and
BERT itself when asked), with a tokenizer that speaks :mod:`ctxmodels.tokenization`'s language.

Which path a folder takes is decided in :mod:`ctxmodels.loading`: our own BERT reads ``model_type`` "bert"; the
other types of :data:`ENCODER_TYPES` come here. Everything is read from local files (``local_files_only``):
a model folder or a snapshot of the Hugging Face cache layout.

The model: ``AutoModelForMaskedLM`` when the weights hold a masked-LM head, else the bare encoder (``AutoModel``
architecture, taken from the same load: one read of the weights). Eager attention, so that every layer can return
its attention probabilities (the fused kernels do not).

The tokenizer (:class:`EncoderTokenizer`) wraps the folder's fast tokenizer and returns
:class:`~ctxmodels.tokenization.Encoded` like our WordPiece does, so pooling, attention and fill-in code need no
second version. The fast tokenizer is tokenizer.json or, where a model ships only a SentencePiece model (DeBERTa-v3's
spm.model), the one transformers converts from it on each load with the sentencepiece and protobuf packages (quicker
than reading the tokenizer.json it would make, so nothing is cached). What it returns:

- words: for a list of words, exactly those words (byte-level BPE and SentencePiece pieces get the word-initial
  space mark on every word, as ``add_prefix_space=True`` gives, so a word is split the same wherever it stands);
  for a string, the tokenizer's own pre-tokenizer words, the space marks not counted as part of a word;
- tokens are shown in BERT's convention whatever the tokenizer's marks (``Ġ``, ``▁``): the first piece of a word
  as its text, a later piece as ``##piece``; the template's special tokens as the model writes them
  (``<s>``, ``</s>``, ``[CLS]``);
- ``[MASK]`` (the one blank the user types) becomes the tokenizer's own mask token (``<mask>`` for RoBERTa);
- [CLS]/[SEP]-style specials come from the tokenizer's own template (its post-processor), pairs included.

Anything wrong with the files (a config transformers does not know, weights that do not fit it, a tokenizer that
does not fit the model) is one :class:`~ctxmodels.checkpoint.CheckpointError` naming the folder.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from ..checkpoint import CheckpointError
from ..model_files import read_json, shown
from ..thread_warnings import caught_warnings
from ..tokenization import MASK, Encoded

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


#: the largest sizes a config may state before anything is built (BERT-large is 24 x 1024, vocabularies ~250k)
_LIMITS = {"hidden": 16384, "layers": 256, "intermediate": 65536, "vocab": 2_000_000, "positions": 1_000_000}


def _config_int(cfg: dict, names: Sequence[str], what: str, limit: int, folder: Path, default: int | None = None
                ) -> int:
    value = next((cfg[n] for n in names if n in cfg), default)
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= limit:
        raise CheckpointError(f"{folder / 'config.json'}: {names[0]} {shown(value)} is not a {what} between 1 and "
                              f"{limit:,}")
    return value


def check_sizes(folder: Path, cfg: dict) -> None:
    """CheckpointError, before any model is built, when config.json states sizes beyond :data:`_LIMITS` or a model
    far larger than its weights files could hold (a hostile or mismatched config would otherwise make
    transformers allocate it)."""
    from .huggingface import _weight_files

    hidden = _config_int(cfg, ("hidden_size", "dim"), "width", _LIMITS["hidden"], folder)
    layers = _config_int(cfg, ("num_hidden_layers", "n_layers"), "layer count", _LIMITS["layers"], folder)
    inter = _config_int(cfg, ("intermediate_size", "hidden_dim"), "feed-forward width", _LIMITS["intermediate"],
                        folder, default=4 * hidden)
    vocab = _config_int(cfg, ("vocab_size",), "vocabulary size", _LIMITS["vocab"], folder)
    positions = _config_int(cfg, ("max_position_embeddings",), "position count", _LIMITS["positions"], folder,
                            default=512)
    embedding = _config_int(cfg, ("embedding_size",), "embedding width", _LIMITS["hidden"], folder, default=hidden)
    stored = _config_int(cfg, ("num_hidden_groups",), "layer group count", layers, folder, default=1) \
        if cfg.get("model_type") == "albert" else layers  # ALBERT shares one set of weights across its layers
    smallest = stored * (4 * hidden * hidden + 2 * hidden * inter) + vocab * embedding
    if cfg.get("position_embedding_type", "absolute") == "absolute" and cfg.get("model_type") != "deberta-v2":
        smallest += positions * embedding
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
                "guess words; the ELECTRA generator (…-generator) fills in blanks")
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


# ----------------------------------------------------------------------------------------------------------
# the tokenizer


@dataclass
class _Segment:
    """One segment's pieces (no specials), local word ids, the words, and the backend encoding they came from."""

    enc: Any  # tokenizers.Encoding, truncated along with the lists
    ids: list[int]
    tokens: list[str]
    word_ids: list[int | None]
    offsets: list[tuple[int, int]]
    words: list[str]

    def __len__(self) -> int:
        return len(self.ids)

    def cut(self, n: int) -> _Segment:
        """The first ``n`` pieces; words after the last kept piece are dropped (a word cut in half is kept)."""
        if n >= len(self):
            return self
        self.enc.truncate(n)
        word_ids = self.word_ids[:n]
        last = max((w for w in word_ids if w is not None), default=-1)
        return _Segment(self.enc, self.ids[:n], self.tokens[:n], word_ids, self.offsets[:n], self.words[: last + 1])


class EncoderTokenizer:
    """A fast transformers tokenizer behind :class:`~ctxmodels.tokenization.WordPieceTokenizer`'s interface."""

    def __init__(self, fast: Any, max_length: int | None = None):
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers

        self.fast = fast
        limit = getattr(fast, "model_max_length", None)
        self.max_length = max_length or (limit if isinstance(limit, int) and 3 <= limit <= 1_000_000 else None)
        self._tk = Tokenizer.from_str(fast.backend_tokenizer.to_str())
        self._tk.no_truncation()
        self._tk.no_padding()
        # Words given one by one get the word-initial mark each (add_prefix_space): a second copy for them.
        self._words_tk = Tokenizer.from_str(self._tk.to_str())
        pre = self._words_tk.pre_tokenizer
        if isinstance(pre, pre_tokenizers.ByteLevel):
            pre.add_prefix_space = True
            self._words_tk.pre_tokenizer = pre
        elif isinstance(pre, pre_tokenizers.Metaspace):
            pre.prepend_scheme = "always"
            self._words_tk.pre_tokenizer = pre
        model = self._tk.model
        self.style = ("wordpiece" if isinstance(model, models.WordPiece) else
                      "bytelevel" if isinstance(pre, pre_tokenizers.ByteLevel) else "sentencepiece")
        self._byte_decoder = decoders.ByteLevel() if self.style == "bytelevel" else None
        self.mask_token = fast.mask_token if fast.mask_token_id is not None else None
        self.mask_id = fast.mask_token_id
        self.cls_id, self.sep_id = fast.cls_token_id, fast.sep_token_id
        self.pad_id = fast.pad_token_id if fast.pad_token_id is not None else 0
        self.unk_id = fast.unk_token_id
        self._special_ids = {int(i) for i in fast.all_special_ids if i is not None}
        self.uses_token_types = "token_type_ids" in fast.model_input_names
        vocab = self._tk.get_vocab(with_added_tokens=True)
        self._table: dict[int, str] = {i: t for t, i in vocab.items()}
        self._readable: dict[int, str] = {}
        normalizer = self._tk.normalizer
        self._lowercase = bool(normalizer is not None and normalizer.normalize_str("A") == "a")

    # -- vocabulary --------------------------------------------------------------------------------------------

    @property
    def vocab_size(self) -> int:
        return self._tk.get_vocab_size(with_added_tokens=True)

    @property
    def largest_id(self) -> int:
        return max(self._table)

    @property
    def lowercase(self) -> bool:
        return self._lowercase

    @property
    def backend(self) -> Any:
        return self._tk

    def token_to_id(self, token: str) -> int | None:
        return self._tk.token_to_id(token)

    def raw_token(self, i: int) -> str:
        """The token as the vocabulary writes it (``Ġbank``, ``▁bank``, ``##s``)."""
        tok = self._table.get(int(i))
        if tok is None:
            raise ValueError(f"id {i} is outside the vocabulary (size {self.vocab_size})")
        return tok

    def _text_of(self, token: str) -> tuple[str, bool | None]:
        """(the token's text, whether it starts a word: True / False, or None when the token does not say)."""
        if self.style == "wordpiece":
            return (token[2:], False) if token.startswith("##") and len(token) > 2 else (token, None)
        if self.style == "bytelevel":
            text = self._byte_decoder.decode([token])
            if "\ufffd" in text:  # part of a character's bytes: shown as the vocabulary writes it
                return (token[1:], True) if token.startswith("Ġ") and len(token) > 1 else (token, False)
            return (text.lstrip(" "), True) if text.startswith(" ") else (text, False)
        return (token[1:].replace("▁", " "), True) if token.startswith("▁") else (token.replace("▁", " "), False)

    def id_to_token(self, i: int) -> str:
        """The token in BERT's convention: a word-initial piece as its text, a continuing piece as ``##piece``,
        specials as they are."""
        i = int(i)
        if i not in self._readable:
            tok = self.raw_token(i)
            text, starts = self._text_of(tok)
            if i in self._special_ids or self.style == "wordpiece" or not text:
                self._readable[i] = tok  # specials, WordPiece's own convention, a bare space mark
            else:
                self._readable[i] = "##" + text if starts is False else text
        return self._readable[i]

    def known_ids(self, size: int) -> torch.Tensor:
        known = torch.zeros(size, dtype=torch.bool)
        known[[i for i in self._table if 0 <= i < size]] = True
        return known

    def is_special(self, i: int) -> bool:
        return int(i) in self._special_ids

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = True) -> str:
        return self._tk.decode(list(ids), skip_special_tokens=skip_special_tokens)

    # -- encoding ---------------------------------------------------------------------------------------------

    def _with_mask(self, text: str) -> str:
        return text.replace(MASK, self.mask_token) if self.mask_token and MASK in text else text

    def _segment(self, text: str | list[str]) -> _Segment:
        if isinstance(text, str):
            return self._text_segment(text)
        if not all(isinstance(w, str) for w in text):
            raise ValueError("a pre-split text must be a list of strings")
        words = list(text)
        given = [self.mask_token if (w == MASK and self.mask_token) else w for w in words]
        enc = self._words_tk.encode(given, is_pretokenized=True, add_special_tokens=False) if words else \
            self._words_tk.encode("", add_special_tokens=False)
        starts, pos = [], 0
        for w in words:  # offsets from tokenizers are per word: shift them into " ".join(words)
            starts.append(pos)
            pos += len(w) + 1
        word_ids: list[int | None] = list(enc.word_ids)
        offsets = [(starts[w] + s, starts[w] + e) if w is not None else (0, 0)
                   for w, (s, e) in zip(word_ids, enc.offsets)]
        return _Segment(enc, list(enc.ids), self._shown_tokens(enc.ids, word_ids), word_ids, offsets, words)

    def _text_segment(self, text: str) -> _Segment:
        source = self._with_mask(text)
        enc = self._tk.encode(source, add_special_tokens=False)
        # Words from the pre-tokenizer's word ids; a piece that is only a space mark ("Ġ" or "▁" before a word the
        # vocabulary splits off) joins the word after it.
        groups: list[tuple[int | None, list[int]]] = []  # (backend word, piece positions)
        for p, w in enumerate(enc.word_ids):
            if groups and groups[-1][0] == w and w is not None:
                groups[-1][1].append(p)
            else:
                groups.append((w, [p]))
        spans: list[list[int]] = []
        word_ids: list[int | None] = [None] * len(enc.ids)
        carry: list[int] = []
        for _, positions in groups:
            s = min(enc.offsets[p][0] for p in positions)
            e = max(enc.offsets[p][1] for p in positions)
            while s < e and source[s].isspace():
                s += 1
            if s >= e:  # a space alone: part of the next word
                carry += positions
                continue
            spans.append([s, e])
            for p in carry + positions:
                word_ids[p] = len(spans) - 1
            carry = []
        if carry and spans:
            for p in carry:
                word_ids[p] = len(spans) - 1
        words = []
        for s, e in spans:
            w = source[s:e]
            words.append(MASK if self.mask_token and w == self.mask_token else w)
        offsets = [tuple(o) for o in enc.offsets]
        return _Segment(enc, list(enc.ids), self._shown_tokens(enc.ids, word_ids), word_ids, offsets, words)

    def _shown_tokens(self, ids: Sequence[int], word_ids: Sequence[int | None]) -> list[str]:
        """Tokens in BERT's convention by position: a word's first piece as its text, a later one as ##piece."""
        out, previous = [], None
        for i, w in zip(ids, word_ids):
            tok = self.raw_token(i)
            if self.style == "wordpiece" or int(i) in self._special_ids:
                out.append(tok)
            else:
                text, _ = self._text_of(tok)
                text = text or tok
                out.append(("##" + text) if (w is not None and w == previous) else text)
            previous = w
        return out

    def encode(self, text: str | list[str], pair: str | list[str] | None = None,
               max_length: int | None = None) -> Encoded:
        """The model's template around ``text`` (and ``pair``); longer than ``max_length`` (default
        ``self.max_length``) pieces -> truncated, longest segment first, with a warning."""
        enc, n_full = self._encode(text, pair, max_length)
        if enc.truncated:
            warnings.warn(f"text of {n_full} word pieces (with the special tokens) truncated to {len(enc)} "
                          "(max_length)", stacklevel=2)
        return enc

    def encode_words(self, words: list[str], max_length: int) -> tuple[Encoded, bool]:
        """``words`` in the template, cut at a word boundary to ``max_length`` pieces: a word is whole or absent."""
        a = self._segment(words)
        budget = max_length - self._tk.num_special_tokens_to_add(False)
        if len(a) <= budget:
            return self._assemble(a, None, False), False
        keep = budget
        while keep > 0 and a.word_ids[keep] is not None and a.word_ids[keep - 1] == a.word_ids[keep]:
            keep -= 1
        return self._assemble(a.cut(keep), None, True), True

    def _encode(self, text, pair, max_length) -> tuple[Encoded, int]:
        if max_length is None:
            max_length = self.max_length
        a = self._segment(text)
        b = self._segment(pair) if pair is not None else None
        n_special = self._tk.num_special_tokens_to_add(b is not None)
        n_full = len(a) + (len(b) if b is not None else 0) + n_special
        truncated = False
        if max_length is not None and n_full > max_length:
            if max_length <= n_special:
                raise ValueError(f"max_length {max_length} leaves no room beside the {n_special} special tokens")
            budget = max_length - n_special
            na, nb = len(a), len(b) if b is not None else 0
            while na + nb > budget:  # longest first, as BERT's pre-processing does
                if na >= nb:
                    na -= 1
                else:
                    nb -= 1
            a = a.cut(na)
            b = b.cut(nb) if b is not None else None
            truncated = True
        return self._assemble(a, b, truncated), n_full

    def _assemble(self, a: _Segment, b: _Segment | None, truncated: bool) -> Encoded:
        """The tokenizer's own post-processor places the specials and the token types; our lists fill the rest."""
        full = self._tk.post_process(a.enc, b.enc if b is not None else None, add_special_tokens=True)
        # The template's own tokens are marked in special_tokens_mask (a [MASK] typed in the text is not); the
        # others are A's pieces, then B's, in order. (post_process leaves A's sequence ids unset in a pair.)
        pieces = [(0, k) for k in range(len(a))] + ([(1, k) for k in range(len(b))] if b is not None else [])
        if len(full.ids) - sum(full.special_tokens_mask) != len(pieces):
            raise ValueError("the tokenizer's template changed the text's pieces; it cannot be aligned with words")
        segments = [a] if b is None else [a, b]
        shift = [0, len(a.words)]
        ids, tokens, word_ids, offsets, seq_ids = [], [], [], [], []
        n = 0
        for i, special in zip(full.ids, full.special_tokens_mask):
            if special:
                ids.append(i)
                tokens.append(self.raw_token(i))
                word_ids.append(None)
                offsets.append((0, 0))
                seq_ids.append(None)
                continue
            s, k = pieces[n]
            n += 1
            seg = segments[s]
            ids.append(seg.ids[k])
            tokens.append(seg.tokens[k])
            w = seg.word_ids[k]
            word_ids.append(w + shift[s] if w is not None else None)
            offsets.append(seg.offsets[k])
            seq_ids.append(s)
        types = list(full.type_ids) if self.uses_token_types else [0] * len(ids)
        words = a.words + (b.words if b is not None else [])
        return Encoded(ids, tokens, types, word_ids, offsets, seq_ids, words, truncated)

    def encode_batch(self, texts: Sequence[str | list[str]], pairs: Sequence[str | list[str] | None] | None = None,
                     max_length: int | None = None) -> list[Encoded]:
        if pairs is not None and len(pairs) != len(texts):
            raise ValueError(f"{len(texts)} texts but {len(pairs)} pairs")
        out = [self._encode(t, pairs[i] if pairs is not None else None, max_length)[0] for i, t in enumerate(texts)]
        n = sum(e.truncated for e in out)
        if n:
            warnings.warn(f"{n} of {len(texts)} texts truncated to max_length", stacklevel=2)
        return out

    def collate(self, encodings: Sequence[Encoded], device: torch.device | str | None = None
                ) -> dict[str, torch.Tensor]:
        """Pad a batch to its longest member: the inputs the model takes (input_ids, attention_mask and, for
        models with segments, token_type_ids)."""
        if not encodings:
            raise ValueError("collate needs at least one encoding")
        T = max(len(e) for e in encodings)
        ids = torch.full((len(encodings), T), self.pad_id, dtype=torch.long)
        types = torch.zeros((len(encodings), T), dtype=torch.long)
        mask = torch.zeros((len(encodings), T), dtype=torch.long)
        for i, e in enumerate(encodings):
            n = len(e)
            ids[i, :n] = torch.tensor(e.ids)
            types[i, :n] = torch.tensor(e.type_ids)
            mask[i, :n] = 1
        batch = {"input_ids": ids, "attention_mask": mask}
        if self.uses_token_types:
            batch["token_type_ids"] = types
        return {k: v.to(device) for k, v in batch.items()} if device is not None else batch


def run_encoder(model: Any, batch: dict[str, torch.Tensor], attentions: bool = False) -> Any:
    """The encoder's output (hidden states of every layer; attention maps when asked) for a collated batch,
    without the masked-LM head."""
    encoder = model.base_model
    return encoder(**batch, output_hidden_states=True, output_attentions=attentions, return_dict=True)
