"""What the word-piece encoders share (BERT with our own code, the others through transformers):
:class:`EncoderLoaded` runs words through the tokenizer's pieces and every layer, then pools the pieces back into
words (:func:`pool_pieces`)."""

from __future__ import annotations

import warnings
from abc import abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..encoding import Encoded, PieceTokenizer
from .base import POOLINGS, LoadedModel, length_batches, nonfinite_words


class EncoderLoaded(LoadedModel):
    """A word-piece encoder: words -> the tokenizer's pieces (cut at a word boundary to ``max_length``) -> every
    layer's states -> one vector per word. A subclass says how its encoder runs (:meth:`_hidden_states`,
    :meth:`encoder_output`), which module holds its attention (:attr:`attention_module`) and what runs its
    masked-LM head (:meth:`mask_runner`)."""

    has_attention = True

    def __init__(self, name: str, path: Path | None, model: Any, tokenizer: PieceTokenizer, card: str,
                 max_length: int):
        cfg = model.config
        layer_names = ["embeddings"] + [f"layer {i}" for i in range(1, cfg.num_hidden_layers + 1)]
        super().__init__(name, path, model, cfg.to_dict(), layer_names, cfg.hidden_size, tokenizer, card)
        #: the most pieces one text may have, specials included (the tokenizer's limit and the model's positions)
        self.max_length = max_length

    @abstractmethod
    def _hidden_states(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """[n_layers, B, T, H] for a collated batch (layer 0 = embeddings). The encoder alone: no heads."""

    @abstractmethod
    def encoder_output(self, enc: Encoded, attentions: bool = False) -> Any:
        """The encoder's output for one encoding (hidden states; attention maps when asked; the pooler's output
        where there is a pooler), in eval mode without gradients."""

    @property
    @abstractmethod
    def attention_module(self) -> torch.nn.Module:
        """The torch module whose layers compute the attention (query and key projections inside it)."""

    @abstractmethod
    def mask_runner(self) -> Any:
        """What runs the masked-LM head for :mod:`ctxmodels.analysis.fill_in`: our BERT's torch module, or a model
        with ``mask_logits(enc, positions)`` (the encoders read through transformers)."""

    def _encode(self, words: list[str]) -> tuple[Encoded, bool]:
        """Encode pre-split words, cut at a word boundary to the model's maximum length."""
        return self.tokenizer.encode_words(words, self.max_length)

    def _embed(self, sentences: list[list[str]], pooling: str, batch_size: int) -> list[np.ndarray]:
        encs, truncated = zip(*(self._encode(s) for s in sentences))
        out: list[np.ndarray | None] = [None] * len(sentences)
        device = self.device
        self.model.eval()
        with torch.inference_mode():
            for idx in length_batches([len(e.ids) for e in encs], batch_size):
                batch = self.tokenizer.collate([encs[i] for i in idx], device=device)
                hidden = self._hidden_states(batch).float()
                for b, i in enumerate(idx):
                    n = len(encs[i].ids)
                    out[i] = pool_pieces(hidden[:, b, :n], encs[i].word_ids, len(sentences[i]), pooling)
        self._warn_missing(out, encs, truncated)  # type: ignore[arg-type]
        return out  # type: ignore[return-value]

    def _warn_missing(self, out: list[np.ndarray], encs: Sequence[Encoded], truncated: Sequence[bool]) -> None:
        """Three reasons for a NaN row, each said once: cut off by the length limit, no word pieces at all, or NaN /
        infinity the model computed itself (never handed on as numbers)."""
        cut, pieceless, computed = [], [], []
        for i, a in enumerate(out):
            with_pieces = np.zeros(a.shape[1], dtype=bool)
            with_pieces[[w for w in encs[i].word_ids if w is not None and w < a.shape[1]]] = True
            last = int(np.flatnonzero(with_pieces)[-1]) if with_pieces.any() else -1
            missing = np.flatnonzero(~with_pieces)
            n_cut = int((missing > last).sum()) if truncated[i] else 0
            cut += [i] * n_cut
            pieceless += [i] * (len(missing) - n_cut)
            bad = nonfinite_words(a) & with_pieces
            if bad.any():
                a[:, bad] = np.nan
                computed += [i] * int(bad.sum())
        if cut:
            warnings.warn(f"{sum(truncated)} sentence(s) longer than the model's {self.max_length} word pieces were "
                          f"truncated; the words cut off get NaN vectors", stacklevel=4)
        if pieceless:
            warnings.warn(f"{len(pieceless)} word(s) gave no word pieces (e.g. control characters) and get NaN "
                          f"vectors (sentences {sorted(set(pieceless))[:10]})", stacklevel=4)
        if computed:
            warnings.warn(f"the model computed NaN or infinite values for {len(computed)} word(s) (sentences "
                          f"{sorted(set(computed))[:10]}); they get NaN vectors: the model's weights may be "
                          "damaged", stacklevel=4)


def pool_pieces(hidden: torch.Tensor, word_ids: Sequence[int | None], n_words: int, pooling: str) -> np.ndarray:
    """Word vectors [L, n_words, H] from piece vectors ``hidden`` [L, T, H] and each piece's word index.

    mean: the average of a word's pieces; first / last: its first / last piece. A word without pieces
    (truncated away, or one the tokenizer drops) gets NaN, and so does a word in a layer where one of its pieces
    is NaN or infinite.
    """
    T = hidden.shape[1]
    weights = torch.zeros(n_words, T, dtype=hidden.dtype, device=hidden.device)
    pos = [(t, w) for t, w in enumerate(word_ids[:T]) if w is not None and w < n_words]
    if pooling == "mean":
        for t, w in pos:
            weights[w, t] = 1.0
    elif pooling in ("first", "last"):
        chosen: dict[int, int] = {}
        for t, w in pos:
            if pooling == "last" or w not in chosen:
                chosen[w] = t
        for w, t in chosen.items():
            weights[w, t] = 1.0
    else:
        raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
    # A piece the model computed NaN or infinity for must spoil only its own word (0 * inf is NaN in the matmul)
    finite = torch.isfinite(hidden)
    spoilt = None
    if not bool(finite.all()):
        spoilt = torch.matmul((~finite.all(dim=-1)).to(weights.dtype), weights.T) > 0  # [L, n_words]
        hidden = torch.where(finite, hidden, torch.zeros((), dtype=hidden.dtype, device=hidden.device))
    words = torch.matmul(weights, hidden)  # [L, n_words, H]: sums (mean) or the chosen piece
    if pooling == "mean":
        words = words / weights.sum(dim=1).clamp(min=1.0)[:, None]
    if spoilt is not None:
        words[spoilt] = float("nan")
    has_pieces = torch.zeros(n_words, dtype=torch.bool)
    has_pieces[[w for _, w in pos]] = True
    words[:, ~has_pieces.to(words.device)] = float("nan")
    return words.cpu().numpy().astype(np.float32, copy=False)
