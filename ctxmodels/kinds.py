"""The model kinds: one registry saying, for every kind of model the package reads (``bert``, ``transformers``,
``elmo``, ``static``, and any registered later), what it is and what it can do.

Each kind is one :class:`ModelKind` entry, declared data only:

- how it is **detected and loaded**: ``adapter``, the :class:`~ctxmodels.loading.LoadedModel` subclass whose
  ``detect(path, config)`` recognises its files and whose ``from_files(...)`` reads them (:func:`detect_kind`,
  :func:`ctxmodels.load`); ``layouts``, the names ``detect`` gives its file layouts (``elmo-published``);
  ``reads``, the other kinds whose checkpoints it reads when asked (``load(..., backend="transformers")``);
- whether and how it is **trained** (``ctxmodels train KIND``): :class:`Training`;
- how it is **fine-tuned** (``ctxmodels finetune``): ``finetune``, its fine-tuning backend;
- how it is **shipped** (``ctxmodels quality`` and the measured model cards): :class:`Release`;
- its **capabilities** (:data:`CONTEXTUAL`, :data:`ATTENTION`, :data:`MASKED_LM`, :data:`LANGUAGE_MODEL`,
  :data:`LEFT_TO_RIGHT`, and the derived :data:`FILL_IN`, :data:`TRAIN`, :data:`FINETUNE`): which analyses,
  commands and app views apply to it.

Everything else asks this module (:func:`get`, :func:`kind_of`, :func:`declares`, :func:`supports`,
:func:`with_capability`, :func:`detect_kind`) instead of comparing kind strings or probing a model's attributes.

Why the code is named, not imported. This module is in the loading layer (README, "Layout"; ``tests/
test_layout.py``); the code that trains a kind, fine-tunes it (training) or measures it for its card (release)
sits above it and imports the loading layer. So an entry names that code by a dotted path (``"module:attribute"``)
and the registry never imports it: the layer that owns the named code resolves the name with :func:`named` when it
needs it (``commands/train.py`` the training module and its options, ``training/finetune_task.py`` the backend,
``release/`` the measurements and card parts). Adapters are named the same way, so that a question (which kinds
train? does this kind have attention?) imports neither torch nor transformers: ``ctxmodels train --help`` asks
the registry without loading a model library.

Adding a model family is one new adapter module (a ``LoadedModel`` subclass with ``detect`` and ``from_files``)
and one :func:`register` call; ``tests/test_kinds.py`` does it with a toy kind.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .checkpoint import CheckpointError
from .model_files import describe_kind, path_kind, read_json, require_file, shown

#: a word's vectors depend on its sentence (every kind but static vectors)
CONTEXTUAL = "contextual"
#: attention maps, rollout, queries and keys (the BERT family)
ATTENTION = "attention"
#: fills in blanks through a masked-LM head (a loaded model has one when ``can_fill_mask``)
MASKED_LM = "masked_lm"
#: forward and backward language models: blanks read from both sides, perplexity (a loaded model: ``has_lm``)
LANGUAGE_MODEL = "language_model"
#: reads only the words before each position (a GPT's causal attention): next-word guesses, no blanks filled in
LEFT_TO_RIGHT = "left_to_right"
#: fills in blanks either way (derived: :data:`MASKED_LM`, or :data:`LANGUAGE_MODEL` read from both sides, i.e.
#: without :data:`LEFT_TO_RIGHT`)
FILL_IN = "fill_in"
#: ``ctxmodels train KIND`` trains it from text (derived: the entry has :class:`Training`)
TRAIN = "train"
#: ``ctxmodels finetune`` fine-tunes it on a labelled task (derived: the entry names a backend)
FINETUNE = "finetune"

#: capabilities that a loaded model must also have itself (its weights may lack a head): the attribute saying so
_INSTANCE_ATTRIBUTE = {ATTENTION: "has_attention", MASKED_LM: "can_fill_mask", LANGUAGE_MODEL: "has_lm"}


class ModelNotFoundError(CheckpointError):
    """Nothing loadable at the given path or name; the message lists where we looked."""


@dataclass(frozen=True)
class Training:
    """How ``ctxmodels train KIND`` trains the kind: ``module`` (training layer) has ``build_task(settings, out,
    **extras)`` and the :class:`~ctxmodels.training.settings.RunSettings` subclass named ``settings``; ``options``
    (``"module:function"``, commands layer) adds the kind's own command-line options; ``extras`` are the parsed
    options handed to ``build_task`` by name; ``command`` is the word after ``ctxmodels train`` when it is not the
    kind's name (``roberta``: a RoBERTa trained here is read as a ``transformers`` encoder)."""

    module: str
    settings: str
    help: str
    options: str = ""
    extras: tuple[str, ...] = ()
    command: str = ""


@dataclass(frozen=True)
class Release:
    """How a shipped model of the kind is measured and carded (release layer): ``measure``
    (``"module:function"``, ``f(model, corpus=, bert_sequences=, elmo_tokens=, log=) -> dict``) adds the kind's own
    figures to its ``ctxmodels quality`` entry; ``card`` (``"module:function"``) writes the held-out part of its
    measured card section; ``targets`` are the figures a shipped model of the kind was trained to."""

    measure: str = ""
    card: str = ""
    targets: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class ModelKind:
    """One kind of model: what it is and what it can do (the module docstring says how each field is used)."""

    name: str  # LoadedModel.kind, run.json's and finetune.json's kind
    title: str  # in messages: "BERT"
    adapter: str  # "module:Class", a LoadedModel subclass with detect() and from_files()
    description: str = ""  # what it reads, in messages: "ELMo (our checkpoints and AllenNLP's published files)"
    folder_hint: str = ""  # what marks its folders, in "no model found": "options.json + *weights*.hdf5 (...)"
    file_hint: str = ""  # the single files it reads, in "not a model file": "a word-vector .txt/.vec file"
    layouts: tuple[str, ...] = ()  # the names detect() gives its file layouts; () = (name,)
    reads: tuple[str, ...] = ()  # other kinds' checkpoints it reads when asked: load(..., backend=name)
    loose: tuple[str, ...] = ()  # layouts found from one loose file: no evidence of a model when scanning folders
    declared: frozenset[str] = frozenset()  # capabilities (the derived ones are added by ``capabilities``)
    training: Training | None = None
    #: more ``ctxmodels train`` commands whose models are read back as this kind, each naming its ``command``
    #: (``train roberta`` and ``train electra`` both write folders the transformers kind reads)
    more_training: tuple[Training, ...] = ()
    finetune: str = ""  # "module:Class", the fine-tuning backend (training layer)
    release: Release | None = None

    def __post_init__(self) -> None:
        if not self.layouts:
            object.__setattr__(self, "layouts", (self.name,))

    @property
    def capabilities(self) -> frozenset[str]:
        both_ways_lm = LANGUAGE_MODEL in self.declared and LEFT_TO_RIGHT not in self.declared
        derived = {FILL_IN} if MASKED_LM in self.declared or both_ways_lm else set()
        derived |= {TRAIN} if self.trainings else set()
        derived |= {FINETUNE} if self.finetune else set()
        return self.declared | derived

    @property
    def trainings(self) -> tuple[Training, ...]:
        """Every way ``ctxmodels train`` trains the kind: :attr:`training`, then :attr:`more_training`."""
        return ((self.training,) if self.training is not None else ()) + self.more_training

    def adapter_class(self) -> Any:
        return named(self.adapter)


_KINDS: dict[str, ModelKind] = {}


def register(kind: ModelKind) -> ModelKind:
    """Add ``kind`` (ValueError if its name, or one of its layouts, is taken); detection asks kinds in the order
    they were registered."""
    taken = {layout for k in _KINDS.values() for layout in k.layouts}
    if kind.name in _KINDS or taken & set(kind.layouts):
        raise ValueError(f"a model kind {kind.name!r} (or one of its layouts {kind.layouts}) is already registered")
    _KINDS[kind.name] = kind
    return kind


def unregister(name: str) -> None:
    """Remove the kind ``name`` (a test's toy kind); nothing happens when there is none."""
    _KINDS.pop(name, None)


def kinds() -> Iterator[ModelKind]:
    """Every registered kind, in registration order."""
    return iter(list(_KINDS.values()))


def names() -> tuple[str, ...]:
    return tuple(_KINDS)


def get(name: str) -> ModelKind:
    """The kind ``name``; ValueError naming the known kinds otherwise."""
    try:
        return _KINDS[name]
    except KeyError:
        raise ValueError(f"no model kind {name!r}; the kinds are {', '.join(_KINDS)}") from None


def kind_of(model: Any) -> ModelKind | None:
    """The kind of a loaded model (or of a kind's name); None for anything else (a bare torch module)."""
    name = model if isinstance(model, str) else getattr(model, "kind", None)
    return _KINDS.get(name) if isinstance(name, str) else None


def declares(model: Any, capability: str) -> bool:
    """Whether the kind of ``model`` (a loaded model or a kind's name) has ``capability`` at all."""
    kind = kind_of(model)
    return kind is not None and capability in kind.capabilities


def supports(model: Any, capability: str) -> bool:
    """Whether ``model`` can do ``capability``: its kind declares it and, for a loaded model, its own weights have
    what it needs (a BERT saved without its masked-LM head declares :data:`MASKED_LM` but cannot fill in blanks).
    A kind's name answers for the kind."""
    if not declares(model, capability):
        return False
    if isinstance(model, str):
        return True
    if capability == FILL_IN:
        return supports(model, MASKED_LM) or supports(model, LANGUAGE_MODEL)
    attribute = _INSTANCE_ATTRIBUTE.get(capability)
    return attribute is None or bool(getattr(model, attribute))


def with_capability(capability: str) -> tuple[str, ...]:
    """The names of the kinds that declare ``capability``."""
    return tuple(k.name for k in _KINDS.values() if capability in k.capabilities)


def training_commands() -> dict[str, ModelKind]:
    """``ctxmodels train COMMAND``'s words, each with the kind it trains (in registration order)."""
    return {(t.command or k.name): k for k in _KINDS.values() for t in k.trainings}


def training_for(command: str) -> Training | None:
    """How ``ctxmodels train COMMAND`` trains (None for a word that is no training command)."""
    kind = training_commands().get(command)
    return None if kind is None else next(t for t in kind.trainings if (t.command or kind.name) == command)


def backends() -> tuple[str, ...]:
    """The kinds that read other kinds' checkpoints when asked (``load(..., backend=NAME)``)."""
    return tuple(k.name for k in _KINDS.values() if k.reads)


def for_layout(layout: str) -> ModelKind:
    """The kind that :func:`detect_kind`'s answer ``layout`` belongs to."""
    for k in _KINDS.values():
        if layout in k.layouts:
            return k
    raise ValueError(f"no model kind reads the layout {layout!r}")


def named(path: str) -> Any:
    """The object a dotted name ``"package.module:attribute"`` names, imported now. Called by the layer that owns
    the named code (see the module docstring), never by the registry for a layer above it."""
    module, _, attribute = path.partition(":")
    obj = importlib.import_module(module)
    return getattr(obj, attribute) if attribute else obj


# ----------------------------------------------------------------------------------------------------------
# detection: which kind (and layout) the files at a path are


def detect_kind(path: Path) -> str:
    """The layout of the files at ``path`` ("bert", "transformers", "elmo", "elmo-published", "static",
    "static-text", or a registered kind's), asking each kind's adapter in registration order."""
    kind = path_kind(path)
    if kind == "file":
        if path.name.lower() == "config.json":
            return detect_kind(path.parent)
        found = _ask_adapters(path, None)
        if found is None:
            hints = ", ".join(k.file_hint for k in _KINDS.values() if k.file_hint)
            raise ModelNotFoundError(f"{path}: not a model file; expected a model directory" + (f", {hints}"
                                     if hints else ""))
        return found
    if kind != "dir":
        raise CheckpointError(f"{path}: {describe_kind(kind)}, not a model; give a model folder or file")
    config = None
    if path_kind(path / "config.json") != "missing":
        config = read_json(require_file(path / "config.json", "config.json"), "config.json")
    found = _ask_adapters(path, config)
    if found is not None:
        return found
    if config is not None:
        raise CheckpointError(f"{path / 'config.json'}: model_type {shown(config.get('model_type'))} is not "
                              f"supported; ctxmodels reads {_what_is_read()}")
    looked = ", ".join(k.folder_hint for k in _KINDS.values() if k.folder_hint)
    found_names = sorted(p.name for p in path.iterdir())[:12]
    raise ModelNotFoundError(f"{path}: no model found. Looked for {looked}; found {found_names or 'nothing'}")


def _ask_adapters(path: Path, config: dict | None) -> str | None:
    for k in list(_KINDS.values()):
        layout = k.adapter_class().detect(path, config)
        if layout is not None:
            if layout not in k.layouts:
                raise ValueError(f"the {k.name} adapter detected {layout!r}, not one of its layouts {k.layouts}")
            return layout
    return None


def _what_is_read() -> str:
    return "; ".join(k.description or k.title for k in _KINDS.values())


# ----------------------------------------------------------------------------------------------------------
# the kinds the package ships with

register(ModelKind(
    name="bert", title="BERT", adapter="ctxmodels.loading.bert:BertLoaded",
    description="BERT (model_type bert, with its own code)",
    folder_hint="config.json (our checkpoints and Hugging Face encoders)",
    declared=frozenset({CONTEXTUAL, ATTENTION, MASKED_LM}),
    training=Training("ctxmodels.training.bert_task", "BertSettings", "BERT: masked LM + next-sentence prediction",
                      options="ctxmodels.commands.train:bert_options", extras=("resume",)),
    finetune="ctxmodels.training.finetune_backends:OwnBert",
    release=Release(measure="ctxmodels.release.quality:bert_heldout",
                    card="ctxmodels.release.shipping:bert_heldout_part",
                    targets={"top1": 0.35, "top5": 0.55, "senses_gain": 10}),
))
register(ModelKind(
    name="transformers", title="transformers encoder",
    adapter="ctxmodels.loading.transformers_encoders:TransformersLoaded",
    description="the encoders roberta, distilbert, albert, electra and deberta-v2 through transformers (and bert "
                "when asked)",
    reads=("bert",),
    declared=frozenset({CONTEXTUAL, ATTENTION, MASKED_LM}),
    training=Training("ctxmodels.training.roberta_task", "RobertaSettings",
                      "RoBERTa: masked LM only, sentences packed across documents, dynamic masking",
                      options="ctxmodels.commands.train:roberta_options", extras=("resume",), command="roberta"),
    more_training=(
        Training("ctxmodels.training.electra_task", "ElectraSettings",
                 "ELECTRA: a small generator fills in masked words, a discriminator spots the replaced ones",
                 options="ctxmodels.commands.train:electra_options", extras=("resume",), command="electra"),
        Training("ctxmodels.training.albert_task", "AlbertSettings",
                 "ALBERT: masked LM + sentence-order prediction, factorised embeddings, layers sharing weights",
                 options="ctxmodels.commands.train:albert_options", extras=("resume",), command="albert"),
    ),
    finetune="ctxmodels.training.finetune_backends:TransformersEncoder",
    # the held-out figures of a model `ctxmodels train roberta|albert|electra` wrote (nothing for other encoders)
    release=Release(measure="ctxmodels.release.successors:heldout", card="ctxmodels.release.successors:heldout_part"),
))
register(ModelKind(
    name="elmo", title="ELMo", adapter="ctxmodels.loading.elmo:ElmoLoaded", layouts=("elmo", "elmo-published"),
    description="ELMo (our checkpoints and AllenNLP's published files)",
    folder_hint="options.json + *weights*.hdf5 (published ELMo)",
    file_hint="a published ELMo options.json / *weights*.hdf5",
    declared=frozenset({CONTEXTUAL, LANGUAGE_MODEL}),
    training=Training("ctxmodels.training.elmo_task", "ElmoSettings",
                      "ELMo: forward and backward LSTM language models",
                      options="ctxmodels.commands.train:elmo_options", extras=("data_cache", "resume")),
    finetune="ctxmodels.training.finetune_backends:Elmo",
    release=Release(measure="ctxmodels.release.quality:elmo_heldout",
                    card="ctxmodels.release.shipping:elmo_heldout_part",
                    targets={"ppl": 200, "senses_gain": 10}),
))
register(ModelKind(
    name="static", title="static vectors", adapter="ctxmodels.loading.static:StaticLoaded",
    layouts=("static", "static-text"), description="static word vectors (ours, word2vec and GloVe text files)",
    folder_hint="one word-vector .txt/.vec file", file_hint="a word-vector .txt/.vec file", loose=("static-text",),
    training=Training("ctxmodels.training.static_task", "StaticSettings",
                      "static word vectors: skip-gram with negative sampling",
                      options="ctxmodels.commands.train:static_options"),
    release=Release(measure="ctxmodels.release.quality:static_neighbours"),
))
register(ModelKind(
    name="gpt", title="GPT", adapter="ctxmodels.loading.gpt:GptLoaded",
    description="left-to-right GPT-2 language models (model_type gpt2, as ctxmodels train gpt writes them)",
    declared=frozenset({CONTEXTUAL, ATTENTION, LANGUAGE_MODEL, LEFT_TO_RIGHT}),
    training=Training("ctxmodels.training.gpt_task", "GptSettings",
                      "GPT: a left-to-right language model (next-word loss, causal attention)",
                      options="ctxmodels.commands.train:gpt_options", extras=("resume",)),
    finetune="ctxmodels.training.finetune_backends:Gpt",
    release=Release(measure="ctxmodels.release.successors:heldout", card="ctxmodels.release.successors:heldout_part"),
))
