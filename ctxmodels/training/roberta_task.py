"""``ctxmodels train roberta``: transformers' ``RobertaForMaskedLM`` trained by the shared trainer on a masked LM
alone (no next-sentence prediction), whole sentences packed across documents, dynamic or static masking
(:mod:`.lm_data`; what it shares with ``train gpt`` is :mod:`.lm_task`).

The word pieces are the run's WordPiece vocabulary (trained on the corpus, or ``--tokenizer``), as for ``train
bert``: ``[CLS]``/``[SEP]`` play RoBERTa's ``<s>``/``</s>``. The model folder is transformers' own layout
(config.json with model_type roberta, model.safetensors, tokenizer.json), which ``RobertaForMaskedLM
.from_pretrained`` reads with nothing missing and ``ctxmodels.load`` opens as a transformers encoder.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from ..bounds import Bound, int_range
from ..masking import describe_mask_split
from .bert_data import IGNORE_INDEX
from .lm_task import LanguageModelTask, PackedSettings, build_lm_task
from .trainer import Batch, TrainConfig


@dataclass
class RobertaSettings(PackedSettings):
    """A RoBERTa run: ``static_masking`` 0 = a new mask every time a sequence is seen, N = masks drawn once and kept
    N epochs."""

    KIND: ClassVar[str] = "roberta"
    TITLE: ClassVar[str] = "RoBERTa"
    BOUNDS: ClassVar[dict[str, Bound]] = {"static_masking": int_range(0, 10_000)}

    static_masking: int = 0


class RobertaTask(LanguageModelTask):
    name = "roberta"
    TITLE = "RoBERTa"
    ARCHITECTURE = "RobertaForMaskedLM (masked LM only, no next-sentence prediction)"
    LOSS_NAME = "mlm_loss"

    def objective(self) -> str:
        s = self.settings
        how = (f"static: drawn once, reused {s.static_masking} epochs" if s.static_masking
               else "dynamic: a new draw every time a sequence is seen")
        return (f"15% of pieces masked ({describe_mask_split(s.mask_shares)}, at most {s.max_predictions}); "
                f"{how}")

    @staticmethod
    def score(lm: nn.Module, batch: Batch) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        # The vocabulary projection only at the masked positions: 15% of the cost of scoring every position.
        hidden = lm.roberta(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
        chosen = batch["labels"] != IGNORE_INDEX
        logits = lm.lm_head(hidden[chosen]).float()  # bf16 cross-entropy is too coarse
        labels = batch["labels"][chosen]
        total = F.cross_entropy(logits, labels, reduction="sum")
        return total, chosen.sum(), (logits.argmax(-1) == labels).sum()


def build_task(settings: RobertaSettings, out: str | Path, resume: bool = False
               ) -> tuple[RobertaTask, TrainConfig]:
    return build_lm_task(RobertaTask, settings, out, resume, mlm=True)
