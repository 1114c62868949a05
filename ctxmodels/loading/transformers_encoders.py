"""The ``transformers`` kind: the encoders read through transformers (RoBERTa, DistilBERT, ALBERT, ELECTRA,
DeBERTa-v2, BERT with relative positions, and any BERT when asked: ``load(..., backend="transformers")``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from ..encoding import Encoded
from ..formats.transformers_models import ENCODER_TYPES
from .base import PROBE_SENTENCE, first_nonfinite, folder_of
from .encoders import EncoderLoaded


class TransformersLoaded(EncoderLoaded):
    """An encoder read through ``transformers``: the same contract as our BERT, its tokenizer an
    :class:`~ctxmodels.formats.transformers_tokenizer.EncoderTokenizer`. Fill-in runs the model's own masked-LM
    head through its own mask token."""

    kind = "transformers"

    def __init__(self, name: str, path: Path | None, files: Any, card: str = ""):
        model, tokenizer = files.model, files.tokenizer
        limit = tokenizer.max_length or getattr(model.config, "max_position_embeddings", None) or 512
        super().__init__(name, path, model, tokenizer, card, limit)
        self._model_type = files.model_type
        self._no_fill = files.no_mlm_reason if tokenizer.mask_id is not None else "its tokenizer has no mask token"

    @classmethod
    def detect(cls, path: Path, config: dict | None) -> str | None:
        if config is None:
            return None
        model_type = config.get("model_type")
        if model_type == "bert":  # ours reads BERT unless it has relative positions
            return "transformers" if config.get("position_embedding_type", "absolute") != "absolute" else None
        return "transformers" if model_type in ENCODER_TYPES else None

    @classmethod
    def from_files(cls, path: Path, layout: str, name: str, device: str | torch.device,
                   card: str) -> TransformersLoaded:
        from ..formats.transformers_models import load_encoder

        files = load_encoder(folder_of(path))
        files.model = files.model.to(device).eval()
        return cls(name, path, files, card)

    @property
    def model_type(self) -> str:  # type: ignore[override]
        return self._model_type

    @property
    def can_fill_mask(self) -> bool:  # type: ignore[override]
        return not self._no_fill

    @property
    def no_fill_reason(self) -> str:  # type: ignore[override]
        return self._no_fill

    @property
    def attention_module(self) -> torch.nn.Module:
        return self.model.base_model

    def mask_runner(self) -> Any:
        return self

    def _hidden_states(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        from ..formats.transformers_models import run_encoder

        return torch.stack(run_encoder(self.model, batch).hidden_states)

    def encoder_output(self, enc: Encoded, attentions: bool = False) -> Any:
        from ..formats.transformers_models import run_encoder

        self.model.eval()
        with torch.inference_mode():
            return run_encoder(self.model, self.tokenizer.collate([enc], device=self.device), attentions)

    def mask_logits(self, enc: Encoded, positions: Sequence[int]) -> torch.Tensor:
        """The masked-LM head's scores [len(positions), vocabulary] at ``positions`` of one encoding."""
        if not self.can_fill_mask:
            raise ValueError(f"{self.name} cannot fill in blanks: {self.no_fill_reason or 'it has no mask token'}")
        self.model.eval()
        with torch.inference_mode():
            logits = self.model(**self.tokenizer.collate([enc], device=self.device)).logits
        return logits[0, list(positions)].float()

    def _probe(self) -> str | None:
        enc, _ = self._encode(list(PROBE_SENTENCE))
        self.model.eval()
        with torch.inference_mode():
            batch = self.tokenizer.collate([enc], device=self.device)
            if self.can_fill_mask:
                out = self.model(**batch, output_hidden_states=True)
                where = first_nonfinite(torch.stack(out.hidden_states)[:, 0], self.layer_names)
                if where is None and not bool(out.logits.isfinite().all()):
                    where = "the masked-LM head"
                return where
            return first_nonfinite(self._hidden_states(batch)[:, 0], self.layer_names)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "model_type": self.model_type}
