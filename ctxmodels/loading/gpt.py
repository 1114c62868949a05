"""The ``gpt`` kind: a left-to-right language model (transformers' GPT-2 layout, as ``ctxmodels train gpt``
writes it) read through transformers: word vectors of every layer, attention maps (each position sees only the
ones before it) and next-word guesses. It fills in no blanks: a blank's right-hand words are beyond what it reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from ..checkpoint import CheckpointError
from ..encoding import Encoded
from .base import PROBE_SENTENCE, first_nonfinite, folder_of
from .encoders import EncoderLoaded

NO_FILL = ("it is a left-to-right language model: it guesses the next word from the words before it, and cannot "
           "read the words after a blank")


class GptLoaded(EncoderLoaded):
    kind = "gpt"
    has_lm = True
    can_fill_mask = False
    no_fill_reason = NO_FILL

    def __init__(self, name: str, path: Path | None, model: Any, tokenizer: Any, card: str = ""):
        super().__init__(name, path, model, tokenizer, card, tokenizer.max_length or model.config.n_positions)

    @classmethod
    def detect(cls, path: Path, config: dict | None) -> str | None:
        return "gpt" if config is not None and config.get("model_type") == "gpt2" else None

    @classmethod
    def from_files(cls, path: Path, layout: str, name: str, device: str | torch.device, card: str) -> GptLoaded:
        import transformers

        from ..formats.finetuned import TRANSFORMERS_HEADS
        from ..formats.transformers_models import _quiet, _short, fit_length, load_tokenizer

        folder = folder_of(path)
        tokenizer = load_tokenizer(folder)
        with _quiet():
            try:
                model, info = transformers.GPT2LMHeadModel.from_pretrained(
                    folder, local_files_only=True, attn_implementation="eager", output_loading_info=True)
            except MemoryError:
                raise
            except Exception as e:  # noqa: BLE001 - safetensors, torch and transformers each have their own errors
                raise CheckpointError(f"{folder}: the weights do not load into a GPT-2 model ({type(e).__name__}: "
                                      f"{_short(e)})") from None
        wrong = list(info.get("missing_keys", [])) + list(info.get("mismatched_keys", []))
        if wrong:
            raise CheckpointError(f"{folder}: the weights lack or misshape {len(wrong)} tensor(s) "
                                  f"({', '.join(map(str, wrong[:3]))}); the files do not belong together")
        if tokenizer.largest_id >= model.config.vocab_size:
            raise CheckpointError(f"{folder}: the tokenizer has ids up to {tokenizer.largest_id} but the model's "
                                  f"vocabulary has {model.config.vocab_size} rows")
        fit_length(tokenizer, model.config)
        loaded = cls(name, path, model.float().to(device).eval(), tokenizer, card)
        # a folder `ctxmodels finetune` wrote holds a task head: its word embeddings moved for the task, so the
        # next-word head tied to them no longer guesses words
        loaded.has_lm = not str((model.config.architectures or [""])[0]).endswith(TRANSFORMERS_HEADS)
        return loaded

    @property
    def n_heads(self) -> int:
        return int(self.model.config.n_head)

    @property
    def model_type(self) -> str:  # type: ignore[override]
        return "gpt2"

    @property
    def attention_module(self) -> torch.nn.Module:
        return self.model.transformer

    def mask_runner(self) -> Any:
        raise ValueError(f"{self.name} cannot fill in blanks: {NO_FILL}")

    def _run(self, batch: dict[str, torch.Tensor], attentions: bool = False) -> Any:
        # GPT-2 would add token_type_ids through its word embeddings: a single text has none
        return self.model.transformer(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                                      output_hidden_states=True, output_attentions=attentions, return_dict=True)

    def _hidden_states(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        return torch.stack(self._run(batch).hidden_states)

    def encoder_output(self, enc: Encoded, attentions: bool = False) -> Any:
        self.model.eval()
        with torch.inference_mode():
            return self._run(self.tokenizer.collate([enc], device=self.device), attentions)

    def next_word_logits(self, words: Sequence[str]) -> tuple[Encoded, torch.Tensor]:
        """(the encoding of ``words``, scores [pieces, vocabulary]): row t guesses the piece after piece t."""
        enc, _ = self._encode(list(words))
        self.model.eval()
        with torch.inference_mode():
            batch = self.tokenizer.collate([enc], device=self.device)
            logits = self.model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
        return enc, logits[0].float()

    def _probe(self) -> str | None:
        enc, _ = self._encode(list(PROBE_SENTENCE))
        self.model.eval()
        with torch.inference_mode():
            batch = self.tokenizer.collate([enc], device=self.device)
            out = self.model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                             output_hidden_states=True)
        where = first_nonfinite(torch.stack(out.hidden_states)[:, 0], self.layer_names)
        if where is None and not bool(out.logits.isfinite().all()):
            where = "the next-word head"
        return where

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "model_type": self.model_type}
