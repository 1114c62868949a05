"""The ``bert`` kind: our BERT, reading our checkpoints and Hugging Face BERT folders with our own code."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from ..encoding import Encoded, PieceTokenizer
from .base import PROBE_SENTENCE, first_nonfinite, folder_of
from .encoders import EncoderLoaded


class BertLoaded(EncoderLoaded):
    kind = "bert"

    def __init__(self, name: str, path: Path | None, model: Any, tokenizer: PieceTokenizer, card: str = ""):
        # The tokenizer may know a lower limit (model_max_length) than the position table.
        limit = min(model.config.max_position_embeddings, tokenizer.max_length or 1 << 62)
        super().__init__(name, path, model, tokenizer, card, limit)

    @classmethod
    def detect(cls, path: Path, config: dict | None) -> str | None:
        if config is None:
            return None
        model_type = config.get("model_type")
        if model_type == "bert":  # relative positions are beyond our BERT (transformers reads them)
            return "bert" if config.get("position_embedding_type", "absolute") == "absolute" else None
        if model_type is None and "num_attention_heads" in config and "hidden_size" in config:
            return "bert"  # old Hugging Face / Google configs carry no model_type
        return None

    @classmethod
    def from_files(cls, path: Path, layout: str, name: str, device: str | torch.device, card: str) -> BertLoaded:
        from ..formats.huggingface import load_bert

        model, tokenizer = load_bert(folder_of(path))
        return cls(name, path, model.to(device).eval(), tokenizer, card)

    @property
    def can_fill_mask(self) -> bool:  # type: ignore[override]
        return bool(getattr(self.model, "has_mlm_head", False))

    @property
    def no_fill_reason(self) -> str:  # type: ignore[override]
        if self.can_fill_mask:
            return ""
        return ("its weights hold no masked-LM head: it was saved as an encoder only (e.g. a sentence-embedding "
                "model)")

    @property
    def attention_module(self) -> torch.nn.Module:
        return getattr(self.model, "bert", self.model)  # a BertForPreTraining, or a bare BertModel

    def mask_runner(self) -> Any:
        return self.model

    def _hidden_states(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        out = self.attention_module(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"],
                                    output_hidden_states=True)
        return torch.stack(out.hidden_states)

    def encoder_output(self, enc: Encoded, attentions: bool = False) -> Any:
        batch = self.tokenizer.collate([enc], device=self.device)
        self.model.eval()
        with torch.no_grad():
            return self.attention_module(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"],
                                         output_hidden_states=True, output_attentions=attentions)

    def _probe(self) -> str | None:
        enc, _ = self._encode(list(PROBE_SENTENCE))
        batch = self.tokenizer.collate([enc], device=self.device)
        heads = self.model.has_mlm_head or getattr(self.model, "has_nsp_head", False)
        self.model.eval()
        with torch.inference_mode():
            if not heads:
                out = self.attention_module(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"],
                                            output_hidden_states=True)
            else:
                position = torch.ones(1, 1, dtype=torch.long, device=self.device)  # the first word's piece
                out = self.model(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"],
                                 mlm_positions=position if self.model.has_mlm_head else None,
                                 output_hidden_states=True)
        where = first_nonfinite(torch.stack(out.hidden_states)[:, 0], self.layer_names)
        if where is None and out.prediction_logits is not None and not bool(out.prediction_logits.isfinite().all()):
            where = "the masked-LM head"
        logits = out.seq_relationship_logits
        if where is None and logits is not None and not bool(logits.isfinite().all()):
            where = "the next-sentence head"
        return where
