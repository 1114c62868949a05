"""Task heads: what fine-tuning puts on top of a pre-trained BERT or ELMo.

BERT's heads follow Hugging Face's ``modeling_bert`` attribute by attribute (``bert.*``, ``classifier.*``,
``qa_outputs.*``), so a saved fine-tuned model loads in ``transformers`` as the same class with the same logits:

* :class:`BertForSequenceClassification`: [CLS] -> pooler (dense + tanh) -> dropout -> ``classifier``;
* :class:`BertForTokenClassification`: every token -> dropout -> ``classifier`` (no pooler, as in transformers);
* :class:`BertForQuestionAnswering`: every token -> ``qa_outputs`` -> start and end logits (no pooler).

:class:`ElmoForTask` is ELMo's own recipe (Peters et al. 2018, eq. 1): a learned scalar mix of the biLM's layers
(softmax-normalised s_j and a scale gamma, :class:`~ctxmodels.scalar_mix.ScalarMix`), then a linear task layer
over the mixed word vectors (token tasks) or over their mean (sentence tasks). With ``freeze_bilm`` the biLM
does not learn and runs without dropout ("feature" mode); otherwise it is trained too ("finetune" mode).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from .bert import BertConfig, BertModel, Dropout, _init_weights
from .elmo import ElmoBiLM
from .scalar_mix import ScalarMix

#: the label id transformers' losses skip (a word piece after a word's first, [CLS], [SEP], padding)
IGNORE_INDEX = -100
#: the head classes, by the name transformers gives them in config.json's ``architectures``
BERT_HEADS = ("BertForSequenceClassification", "BertForTokenClassification", "BertForQuestionAnswering")


def label_fields(labels: list[str] | tuple[str, ...]) -> dict[str, Any]:
    """The config.json fields transformers reads the classes from (``id2label`` keys are strings in JSON)."""
    labels = list(labels)
    return {"num_labels": len(labels), "id2label": {str(i): lab for i, lab in enumerate(labels)},
            "label2id": {lab: i for i, lab in enumerate(labels)}}


def labels_from_config(d: dict[str, Any]) -> list[str]:
    """The class names of a config.json written by :func:`label_fields` (or by transformers), in id order."""
    id2label = d.get("id2label")
    if not isinstance(id2label, dict) or not id2label:
        raise ValueError("config.json has no id2label: not a fine-tuned classifier")
    try:
        return [str(id2label[str(i)]) for i in range(len(id2label))]
    except KeyError as e:
        raise ValueError(f"config.json: id2label is not numbered 0..{len(id2label) - 1} (missing {e})") from None


@dataclass
class TaskOutput:
    """Logits of a head: [B, labels] (sequence), [B, T, labels] (token), or start/end [B, T] (span)."""

    logits: torch.Tensor | None = None
    start_logits: torch.Tensor | None = None
    end_logits: torch.Tensor | None = None


class _BertHead(nn.Module):
    architecture = ""
    pooler = False

    def __init__(self, config: BertConfig, num_labels: int):
        super().__init__()
        if num_labels < 1:
            raise ValueError(f"a classifier needs at least one label, got num_labels={num_labels}")
        self.config, self.num_labels = config, num_labels
        self.bert = BertModel(config, add_pooling_layer=self.pooler)

    def _init_head(self) -> None:
        for name, module in self.named_children():
            if name != "bert":
                module.apply(lambda m: _init_weights(m, self.config.initializer_range))

    def encode(self, input_ids, token_type_ids=None, attention_mask=None):
        return self.bert(input_ids, token_type_ids, attention_mask)


class BertForSequenceClassification(_BertHead):
    architecture = "BertForSequenceClassification"
    pooler = True

    def __init__(self, config: BertConfig, num_labels: int):
        super().__init__(config, num_labels)
        self.dropout = Dropout(config.hidden_dropout_prob)
        self.classifier = nn.Linear(config.hidden_size, num_labels)
        self._init_head()

    def forward(self, input_ids, token_type_ids=None, attention_mask=None) -> TaskOutput:
        pooled = self.encode(input_ids, token_type_ids, attention_mask).pooler_output
        return TaskOutput(logits=self.classifier(self.dropout(pooled)))


class BertForTokenClassification(_BertHead):
    architecture = "BertForTokenClassification"

    def __init__(self, config: BertConfig, num_labels: int):
        super().__init__(config, num_labels)
        self.dropout = Dropout(config.hidden_dropout_prob)
        self.classifier = nn.Linear(config.hidden_size, num_labels)
        self._init_head()

    def forward(self, input_ids, token_type_ids=None, attention_mask=None) -> TaskOutput:
        hidden = self.encode(input_ids, token_type_ids, attention_mask).last_hidden_state
        return TaskOutput(logits=self.classifier(self.dropout(hidden)))


class BertForQuestionAnswering(_BertHead):
    """Span extraction (SQuAD-style): a start and an end score for every token."""

    architecture = "BertForQuestionAnswering"

    def __init__(self, config: BertConfig, num_labels: int = 2):
        if num_labels != 2:
            raise ValueError("the question-answering head has exactly two outputs (start, end)")
        super().__init__(config, num_labels)
        self.qa_outputs = nn.Linear(config.hidden_size, 2)
        self._init_head()

    def forward(self, input_ids, token_type_ids=None, attention_mask=None) -> TaskOutput:
        hidden = self.encode(input_ids, token_type_ids, attention_mask).last_hidden_state
        start, end = self.qa_outputs(hidden).unbind(-1)
        return TaskOutput(start_logits=start, end_logits=end)


HEAD_CLASSES: dict[str, type[_BertHead]] = {
    c.architecture: c for c in (BertForSequenceClassification, BertForTokenClassification, BertForQuestionAnswering)
}


def bert_head(architecture: str, config: BertConfig, num_labels: int) -> _BertHead:
    if architecture not in HEAD_CLASSES:
        raise ValueError(f"unknown BERT head {architecture!r}; one of {', '.join(HEAD_CLASSES)}")
    return HEAD_CLASSES[architecture](config, num_labels)


# ----------------------------------------------------------------------------------------------------------
# ELMo


class ElmoForTask(nn.Module):
    """biLM -> scalar mix of its L+1 layers -> dropout -> linear, per word (``token``) or on the mean of the
    words (``sentence``). Inputs are character ids with <S> and </S> around each sentence
    (``batch_to_char_ids(..., add_boundaries=True)``); outputs are per word, boundaries removed."""

    def __init__(self, bilm: ElmoBiLM, num_labels: int, pooling: str = "token", freeze_bilm: bool = False,
                 dropout: float = 0.1):
        super().__init__()
        if pooling not in ("token", "sentence"):
            raise ValueError(f"pooling must be 'token' or 'sentence', got {pooling!r}")
        self.bilm, self.pooling, self.freeze_bilm = bilm, pooling, freeze_bilm
        self.scalar_mix = ScalarMix(bilm.num_layers)
        self.dropout = nn.Dropout(dropout)
        self.classifier = nn.Linear(bilm.output_dim, num_labels)
        nn.init.normal_(self.classifier.weight, std=bilm.output_dim ** -0.5)
        nn.init.zeros_(self.classifier.bias)
        self.bilm.requires_grad_(not freeze_bilm)

    def train(self, mode: bool = True) -> ElmoForTask:
        super().train(mode)
        if self.freeze_bilm:
            self.bilm.eval()  # a frozen biLM gives fixed features: no dropout inside it
        return self

    def head_state_dict(self) -> dict[str, torch.Tensor]:
        """The weights that are not the biLM's: the scalar mix and the task layer."""
        return {k: v for k, v in self.state_dict().items() if not k.startswith("bilm.")}

    def word_vectors(self, char_ids: torch.Tensor, mask: torch.Tensor | None = None
                     ) -> tuple[torch.Tensor, torch.Tensor]:
        """(mixed vectors [B, T, 2P], word mask [B, T]) with T the longest sentence's words."""
        with torch.set_grad_enabled(torch.is_grad_enabled() and not self.freeze_bilm):
            out = self.bilm(char_ids, mask)
            layers = out.layers()  # [L+1, B, T+2, 2P]
        lengths = out.mask.sum(dim=1) - 2
        T = max(int(lengths.max()), 0) if lengths.numel() else 0
        word_mask = torch.arange(T, device=lengths.device)[None, :] < lengths[:, None]
        words = layers[:, :, 1 : T + 1]
        return self.scalar_mix(words, word_mask), word_mask

    def forward(self, char_ids: torch.Tensor, mask: torch.Tensor | None = None) -> TaskOutput:
        mixed, word_mask = self.word_vectors(char_ids, mask)
        if self.pooling == "sentence":
            m = word_mask[..., None].to(mixed.dtype)
            mixed = (mixed * m).sum(1) / m.sum(1).clamp_min(1.0)
        return TaskOutput(logits=self.classifier(self.dropout(mixed)))
