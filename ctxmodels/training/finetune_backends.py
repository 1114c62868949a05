"""What differs between the backbones fine-tuning builds on (:mod:`ctxmodels.training.finetune_task`): one
:class:`Backend` per kind, named by the kind's registry entry (:mod:`ctxmodels.kinds`, ``finetune``) and built by
:func:`~ctxmodels.training.finetune_task.backend_for`. A backend builds the task model (the backbone's weights and
a new head), turns encoded examples into the model's inputs, saves and restores the model, chooses the learning
rate, and gives the model card its words; the loop, the batches, scoring, ``finetune.json`` and the card are
shared.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from ..char_ids import batch_to_char_ids
from ..checkpoint import CheckpointError, load_tensors
from ..formats.finetuned import (
    HEAD_FILE,
    save_bert_task_model,
    save_elmo_task_model,
    save_transformers_task_model,
    transformers_task_head,
)
from ..heads import BertForQuestionAnswering, BertForSequenceClassification, BertForTokenClassification, ElmoForTask
from .lm_task import no_token_types
from .trainer import load_model_weights

if TYPE_CHECKING:
    from ..loading import LoadedModel
    from .finetune_task import Encoded, FinetuneSettings


#: how the card names the encoders transformers reads, by model_type
MODEL_NAMES = {"bert": "BERT", "roberta": "RoBERTa", "distilbert": "DistilBERT", "albert": "ALBERT",
               "electra": "ELECTRA", "deberta-v2": "DeBERTa-v2"}


class Backend:
    """What differs between the backbones fine-tuning builds on; one subclass per kind, named by the kind's registry
    entry and chosen by :func:`~ctxmodels.training.finetune_task.backend_for`.

    ``tokenizer`` is None for a backbone that reads words (ELMo); otherwise the examples are word pieces and the
    model takes the tokenizer's inputs by name (``input_ids``, ``attention_mask`` and, where the model has them,
    ``token_type_ids``)."""

    title = ""
    unit = "word pieces"
    tokenizer: Any = None
    hidden_size = 768

    def __init__(self, backbone: LoadedModel, settings: FinetuneSettings):
        self.backbone, self.settings = backbone, settings
        self.max_length = settings.max_length

    def build(self, labels: list[str], kind: str) -> nn.Module:
        """The task model: the backbone's weights (a copy: the loaded model is shared) and a new head."""
        raise NotImplementedError

    def save(self, model: nn.Module, directory: Path, labels: list[str]) -> None:
        raise NotImplementedError

    def load_weights(self, model: nn.Module, directory: Path) -> None:
        load_model_weights(model, directory / "model.safetensors")

    def trains(self, mode: str) -> str:
        """What trains in ``mode``, for the model card."""
        return {"finetune": f"every weight of the {self.title} encoder and a new task head trained",
                "feature": f"the {self.title} encoder frozen; only the new task head trained"}[mode]

    def head(self, kind: str) -> str:
        """The task head, for the model card."""
        raise NotImplementedError

    @property
    def base_type(self) -> str:
        """The backbone's type as finetune.json records it (``base_type``)."""
        return self.backbone.model_type

    def default_lr(self, mode: str) -> float:
        """The learning rate a fine-tune starts with when none is given (reasons in
        :mod:`~ctxmodels.training.finetune_task`'s docstring): 1e-3 wherever only a new layer learns; for a whole
        BERT-shaped encoder, by its hidden size."""
        if mode == "feature":
            return 1e-3
        if self.hidden_size >= 768:
            return 3e-5
        return 1e-4 if self.hidden_size > 256 else 3e-4

    def inputs(self, items: Sequence[Encoded], model: nn.Module) -> dict[str, torch.Tensor]:
        """The model's inputs for a batch of encoded examples (labels aside): the tokenizer's, by name
        (``input_ids``, ``attention_mask`` and, where the model reads them, ``token_type_ids``)."""
        T = max(len(e.ids) for e in items)
        ids = torch.full((len(items), T), self.tokenizer.pad_id, dtype=torch.long)
        mask = torch.zeros((len(items), T), dtype=torch.long)
        for i, e in enumerate(items):
            ids[i, : len(e.ids)] = torch.tensor(e.ids)
            mask[i, : len(e.ids)] = 1
        inputs = {"input_ids": ids, "attention_mask": mask}
        if self.tokenizer.uses_token_types:  # DistilBERT and RoBERTa take none
            types = torch.zeros_like(ids)
            for i, e in enumerate(items):
                if e.types is not None:  # a pair: 0 for the first text, 1 for the second
                    types[i, : len(e.types)] = torch.tensor(e.types)
            inputs["token_type_ids"] = types
        return inputs

    def learned(self, model: nn.Module) -> dict[str, Any]:
        """What the task made of the backbone that finetune.json records besides the weights ({} here)."""
        return {}

    def card_note(self, model: nn.Module) -> str:
        """A paragraph for the model card on what the task made of the backbone ("" here)."""
        return ""


class OwnBert(Backend):
    """Our BERT (kind "bert") with our heads (:mod:`ctxmodels.heads`), saved in transformers' BERT layout."""

    title = "BERT"

    def __init__(self, backbone: LoadedModel, settings: FinetuneSettings):
        super().__init__(backbone, settings)
        self.tokenizer = backbone.tokenizer
        self.hidden_size = backbone.model.config.hidden_size
        self.max_length = min(settings.max_length, backbone.model.config.max_position_embeddings)

    def build(self, labels: list[str], kind: str) -> nn.Module:
        from ..bert import BertConfig

        base = self.backbone.model
        encoder = getattr(base, "bert", None)
        if encoder is None or not isinstance(getattr(base, "config", None), BertConfig):
            raise ValueError(f"{self.settings.model}: fine-tuning needs a BERT that ctxmodels builds itself "
                             "(its own or a Hugging Face BERT checkpoint)")
        cls = {"sentence": BertForSequenceClassification, "pair": BertForSequenceClassification,
               "qa": BertForQuestionAnswering}.get(kind, BertForTokenClassification)
        model = cls(base.config, len(labels))
        missing, _ = model.bert.load_state_dict(encoder.state_dict(), strict=False)
        if [k for k in missing if not k.startswith("pooler.")]:  # a pooler may be new (a save without one)
            raise ValueError(f"{self.settings.model}: the encoder's weights do not fill a BERT ({missing[:3]})")
        if self.settings.mode == "feature":
            model.bert.requires_grad_(False)
        return model

    def save(self, model: nn.Module, directory: Path, labels: list[str]) -> None:
        save_bert_task_model(model, self.tokenizer, directory, labels)

    def head(self, kind: str) -> str:
        return {"sentence": "sequence classification ([CLS] -> pooler -> classifier)",
                "pair": "sentence-pair classification ([CLS] A [SEP] B [SEP] -> pooler -> classifier)",
                "qa": "span extraction (each piece -> start and end scores; the best valid span is the answer)",
                "token": "token classification (a label on each word's first piece)",
                "word": "word classification (the token head, scored at the target word only)"}[kind]


class TransformersEncoder(Backend):
    """An encoder read through transformers (kind "transformers") with transformers' own head class for its
    model type, read from the base model's folder and saved with ``save_pretrained``."""

    def __init__(self, backbone: LoadedModel, settings: FinetuneSettings):
        super().__init__(backbone, settings)
        self.tokenizer = backbone.tokenizer
        self.hidden_size = backbone.dim
        self.max_length = min(settings.max_length, backbone.max_length)
        self.model_type = backbone.model_type
        self.title = MODEL_NAMES.get(self.model_type, self.model_type or "transformers")
        path = Path(backbone.path) if backbone.path is not None else None
        if path is None or not (path.is_dir() or path.parent.is_dir()):
            raise ValueError(f"{settings.model}: no folder to read the encoder's weights from")
        self.folder = path if path.is_dir() else path.parent

    def build(self, labels: list[str], kind: str) -> nn.Module:
        model = transformers_task_head(self.folder, labels, sentence=kind in ("sentence", "pair"), qa=kind == "qa")
        self.architecture = type(model).__name__
        if self.settings.mode == "feature":
            model.base_model.requires_grad_(False)
        return model

    def save(self, model: nn.Module, directory: Path, labels: list[str]) -> None:
        save_transformers_task_model(model, self.tokenizer, directory)

    def head(self, kind: str) -> str:
        arch = getattr(self, "architecture", "")
        return {"sentence": f"sequence classification (transformers' {arch})",
                "pair": f"sentence-pair classification (transformers' {arch} on the pair template)",
                "qa": f"span extraction (transformers' {arch}: start and end scores; the best valid span)",
                "token": f"token classification (transformers' {arch}: a label on each word's first piece)",
                "word": f"word classification (transformers' {arch}, scored at the target word only)"}[kind]


class Elmo(Backend):
    """ELMo (kind "elmo"): the biLM, a scalar mix of its layers and a task layer (:class:`ElmoForTask`)."""

    title = "ELMo"
    unit = "words"

    def default_lr(self, mode: str) -> float:
        return 1e-3 if mode == "feature" else 5e-4  # the biLM moves: half of its pre-training rate

    def inputs(self, items: Sequence[Encoded], model: nn.Module) -> dict[str, torch.Tensor]:
        """Character ids of the words with ELMo's sentence boundaries, and the mask."""
        char_ids, mask = batch_to_char_ids([e.words for e in items], add_boundaries=True,
                                           max_chars=model.bilm.config.char_cnn.max_characters_per_token)
        return {"char_ids": char_ids, "mask": mask}

    def learned(self, model: nn.Module) -> dict[str, Any]:
        mix = model.scalar_mix  # what the task made of ELMo's layers (eq. 1: s_j and gamma)
        return {"scalar_mix": {"weights": [round(w, 4) for w in mix.weights()], "gamma": round(mix.gamma, 4)}}

    def card_note(self, model: nn.Module) -> str:
        m = model.scalar_mix
        return ("\nLearned layer weights s_j (layer 0 = character CNN, then the LSTM layers): "
                + ", ".join(f"{w:.3f}" for w in m.weights()) + f"; gamma {m.gamma:.3f}.\n")

    def build(self, labels: list[str], kind: str) -> nn.Module:
        if kind in ("pair", "qa"):
            what = "sentence-pair tasks" if kind == "pair" else "question answering"
            raise ValueError(f"{self.settings.model} is an ELMo model, whose task layer here reads one text and "
                             f"labels it or its words: {what} need BERT or another encoder (RoBERTa, DistilBERT, ...)")
        bilm = copy.deepcopy(self.backbone.model.bilm)  # the loaded model is shared (ctxmodels.load caches it)
        return ElmoForTask(bilm, len(labels), pooling="sentence" if kind == "sentence" else "token",
                           freeze_bilm=self.settings.mode == "feature")

    def save(self, model: nn.Module, directory: Path, labels: list[str]) -> None:
        save_elmo_task_model(model, self.backbone.model, directory, labels)

    def load_weights(self, model: nn.Module, directory: Path) -> None:
        state = {k[len("bilm."):]: v for k, v in load_tensors(directory / "model.safetensors").items()
                 if k.startswith("bilm.")}
        try:
            model.bilm.load_state_dict(state)
            model.load_state_dict(load_tensors(directory / HEAD_FILE), strict=False)
        except RuntimeError as e:
            raise CheckpointError(f"{directory}: does not fit this fine-tuning run ({str(e)[:200]})") from e

    def trains(self, mode: str) -> str:
        return {"feature": "the biLM frozen; the scalar mix (s_j, gamma) and a task layer trained",
                "finetune": "the biLM, the scalar mix (s_j, gamma) and a task layer trained"}[mode]

    def head(self, kind: str) -> str:
        return {"sentence": "scalar mix -> mean over the words -> linear",
                "token": "scalar mix -> linear on each word", "word": "scalar mix -> linear on the target word"}[kind]


class Gpt(TransformersEncoder):
    """A left-to-right GPT-2 (kind "gpt", as ``ctxmodels train gpt`` writes it) with transformers' own GPT-2 heads:
    ``GPT2ForTokenClassification`` (a label on each word's first piece, which has read only the words before it and
    itself), ``GPT2ForSequenceClassification`` (the last piece that is not padding: the only one that has read the
    whole text, or both texts of a pair) and ``GPT2ForQuestionAnswering`` (start and end scores, each from the pieces
    up to it). Saved with ``save_pretrained``, so transformers' Auto classes read the folder."""

    def __init__(self, backbone: LoadedModel, settings: FinetuneSettings):
        super().__init__(backbone, settings)
        self.title = "GPT"

    def build(self, labels: list[str], kind: str) -> nn.Module:
        model = super().build(labels, kind)
        if model.config.pad_token_id is None:  # the sentence head finds each text's last piece by the padding id
            model.config.pad_token_id = self.tokenizer.pad_id
        if hasattr(model, "dropout"):  # the token head's dropout follows the GPT's own, as BERT's heads do
            model.config.classifier_dropout = model.config.resid_pdrop
            model.dropout.p = model.config.resid_pdrop
        return model

    def inputs(self, items: Sequence[Encoded], model: nn.Module) -> dict[str, torch.Tensor]:
        """The ids and the mask: GPT-2 would add token types through its word embeddings, which it was never
        trained with (a pair's texts are told apart by the [SEP] between them)."""
        batch = super().inputs(items, model)
        batch.pop("token_type_ids", None)
        return batch

    def save(self, model: nn.Module, directory: Path, labels: list[str]) -> None:
        save_transformers_task_model(model, self.tokenizer, directory)
        no_token_types(directory)

    def trains(self, mode: str) -> str:
        return {"finetune": "every weight of the GPT (a left-to-right decoder) and a new task head trained",
                "feature": "the GPT (a left-to-right decoder) frozen; only the new task head trained"}[mode]

    def head(self, kind: str) -> str:
        arch = getattr(self, "architecture", "")
        return {"sentence": f"sequence classification (transformers' {arch}: the last piece, the only one that has "
                            "read the whole text)",
                "pair": f"sentence-pair classification (transformers' {arch} on [CLS] A [SEP] B [SEP]: the last "
                        "piece, the only one that has read both texts)",
                "qa": f"span extraction (transformers' {arch}: start and end scores, each piece's from the pieces up "
                      "to it; the best valid span)",
                "token": f"token classification (transformers' {arch}: a label on each word's first piece, which "
                         "has read only the words before it and itself)",
                "word": f"word classification (transformers' {arch}, scored at the target word only, which has read "
                        "only the words before it)"}[kind]
