"""``ctxmodels train gpt``: transformers' ``GPT2LMHeadModel`` at BERT's preset sizes, trained by the shared trainer
on the next-word loss (causal attention: each position reads only the pieces before it) over whole sentences packed
across documents (:mod:`.lm_data`, unmasked).

The folder is transformers' GPT-2 layout (config.json with model_type gpt2, model.safetensors, the run's WordPiece
tokenizer), which ``GPT2LMHeadModel.from_pretrained`` reads with nothing missing and ``ctxmodels.load`` opens as
the ``gpt`` kind (:mod:`ctxmodels.loading.gpt`). What it shares with ``train roberta`` (data, the task's loop
side, saving) is :mod:`.lm_task`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from ..bounds import Bound
from .bert_data import IGNORE_INDEX
from .lm_task import LanguageModelTask, PackedSettings, build_lm_task
from .trainer import Batch, TrainConfig


@dataclass
class GptSettings(PackedSettings):
    """A GPT run: the model size, vocabulary, sequences and schedule of ``train roberta``; nothing is masked."""

    KIND: ClassVar[str] = "gpt"
    TITLE: ClassVar[str] = "GPT"
    BOUNDS: ClassVar[dict[str, Bound]] = {}

    def check(self) -> None:
        if self.whole_word_masking:
            raise ValueError("--whole-word-masking does not fit a GPT: it predicts every next word, nothing is "
                             "masked")
        if self.mask_split != type(self).mask_split:  # the field's default: a GPT run stores it untouched
            raise ValueError("--mask-split does not fit a GPT: it predicts every next word, nothing is masked")
        super().check()


class GptTask(LanguageModelTask):
    name = "gpt"
    TITLE = "GPT"
    ARCHITECTURE = "GPT2LMHeadModel (left-to-right language model, causal attention)"
    LOSS_NAME = "lm_loss"

    def objective(self) -> str:
        return "the next piece at every position (cross-entropy), each position reading only the pieces before it"

    @staticmethod
    def score(lm: nn.Module, batch: Batch) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        logits = lm(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
        guesses, targets = logits[:, :-1].float(), batch["labels"][:, 1:]  # bf16 cross-entropy is too coarse
        chosen = targets != IGNORE_INDEX
        total = F.cross_entropy(guesses[chosen], targets[chosen], reduction="sum")
        return total, chosen.sum(), (guesses[chosen].argmax(-1) == targets[chosen]).sum()


def build_task(settings: GptSettings, out: str | Path, resume: bool = False) -> tuple[GptTask, TrainConfig]:
    return build_lm_task(GptTask, settings, out, resume, mlm=False)
