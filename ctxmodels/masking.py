"""BERT's corruption draw, shared by training and by the views that show it: which pieces a masked language model
is asked to restore, and what it reads in their place.

``mlm_probability`` (15%) of the pieces that may be masked are chosen; of those 80% become [MASK], 10% a random
piece of the vocabulary and 10% stay as they are (Devlin et al. 2019). Training calls :func:`mask_tokens` for every
sequence it makes (``training/bert_data.py``, ``training/lm_data.py``); the app's *How they learn* page calls the
same function on a visitor's sentence (``analysis/objectives.py``), so what it shows is what training does.

The split among the chosen pieces is a run setting (``--mask-split MASK/RANDOM/KEEP``, :func:`parse_mask_split`):
80/10/10 by default for every kind, so that the compute comparison corrupts every masked LM alike; ELECTRA's
released code feeds its generator 85/0/15 (no random pieces).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .encoding import PieceTokenizer

MLM_PROBABILITY = 0.15
MASK_SHARE, RANDOM_SHARE = 0.8, 0.1  # of the chosen pieces: [MASK], a random piece; the rest stay the same
#: the same in percent, as ``--mask-split`` takes it: [MASK] / a random piece / kept
MASK_SPLIT = (80, 10, 10)
MASK_SPLIT_TEXT = "80/10/10"  # the same as run.json stores it (format_mask_split)
_SPLIT_FORMAT = "three whole percentages MASK/RANDOM/KEEP that add up to 100, e.g. 80/10/10 or 85/0/15"


def parse_mask_split(text: str | Sequence[int]) -> tuple[int, int, int]:
    """``"85/0/15"`` (or the three numbers) -> (85, 0, 15): the percentages of the chosen pieces that become [MASK],
    a random piece and stay as they are. ValueError in one line for anything else."""
    parts = text.split("/") if isinstance(text, str) else list(text)
    try:
        split = tuple(int(str(p).strip()) for p in parts)
    except ValueError:
        split = ()
    if len(split) != 3:
        raise ValueError(f"--mask-split takes {_SPLIT_FORMAT}; got {text!r}")
    if min(split) < 0:
        raise ValueError(f"--mask-split {format_mask_split(split)}: a share cannot be negative; give {_SPLIT_FORMAT}")
    if sum(split) != 100:
        raise ValueError(f"--mask-split {format_mask_split(split)} adds up to {sum(split)}, not 100; give "
                         f"{_SPLIT_FORMAT}")
    return split  # type: ignore[return-value]


def format_mask_split(split: Sequence[int]) -> str:
    """(85, 0, 15) -> ``"85/0/15"``: how run.json stores the split."""
    return "/".join(str(int(p)) for p in split)


def describe_mask_split(split: Sequence[int]) -> str:
    """(80, 10, 10) -> ``"80% [MASK] / 10% random / 10% kept"``, for model cards and objectives."""
    mask, random, keep = split
    return f"{mask}% [MASK] / {random}% random / {keep}% kept"


@dataclass
class VocabInfo:
    """What the draw needs to know of a vocabulary."""

    size: int
    pad_id: int
    cls_id: int
    sep_id: int
    mask_id: int
    continuation: np.ndarray  # [size] bool: the piece continues a word ("##ing")
    random_ids: np.ndarray  # ids a masked token may be replaced by: everything but the special tokens

    @classmethod
    def from_tokens(cls, tokens: Sequence[str], pad="[PAD]", unk="[UNK]", cls_="[CLS]", sep="[SEP]", mask="[MASK]"):
        index = {t: i for i, t in enumerate(tokens)}
        missing = [t for t in (pad, unk, cls_, sep, mask) if t not in index]
        if missing:
            raise ValueError(f"the vocabulary lacks the special tokens {missing}")
        specials = {index[t] for t in (pad, unk, cls_, sep, mask)}
        return cls(
            size=len(tokens), pad_id=index[pad], cls_id=index[cls_], sep_id=index[sep], mask_id=index[mask],
            continuation=np.array([t.startswith("##") for t in tokens], dtype=bool),
            random_ids=np.array([i for i in range(len(tokens)) if i not in specials], dtype=np.int64),
        )

    @classmethod
    def from_tokenizer(cls, tok: PieceTokenizer) -> VocabInfo:
        tokens = [tok.id_to_token(i) for i in range(tok.vocab_size)]
        info = cls.from_tokens(tokens)
        info.pad_id, info.cls_id, info.sep_id, info.mask_id = tok.pad_id, tok.cls_id, tok.sep_id, tok.mask_id
        specials = {tok.pad_id, tok.unk_id, tok.cls_id, tok.sep_id, tok.mask_id}
        info.random_ids = np.array([i for i in range(tok.vocab_size) if i not in specials], dtype=np.int64)
        return info


def mask_tokens(
    tokens: np.ndarray,
    maskable: np.ndarray,
    rng: np.random.Generator,
    vocab: VocabInfo,
    max_predictions: int,
    word_start: np.ndarray | None = None,
    mlm_probability: float = MLM_PROBABILITY,
    split: Sequence[int] = MASK_SPLIT,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Choose tokens to predict and corrupt them as BERT does.

    ``mlm_probability`` of the maskable tokens (at least one, at most ``max_predictions``) are chosen; of those
    ``split`` (percent; BERT's 80/10/10 by default) become [MASK], a random token and stay. With ``word_start``
    (whole-word masking) whole words are chosen, each word's pieces together, skipping words that would overflow
    the budget (as the reference implementation does). Returns (corrupted tokens, chosen positions in increasing
    order, their original ids).
    """
    candidates = np.flatnonzero(maskable)
    n_pred = min(max_predictions, max(1, int(len(candidates) * mlm_probability + 0.5)))
    if len(candidates) == 0 or max_predictions <= 0:
        return tokens.copy(), np.zeros(0, np.int64), np.zeros(0, np.int64)
    if word_start is None:
        positions = rng.choice(candidates, size=min(n_pred, len(candidates)), replace=False)
    else:
        starts = word_start[candidates].copy()
        starts[0] = True
        word_of = np.cumsum(starts) - 1  # word index of every candidate
        bounds = np.concatenate([np.flatnonzero(starts), [len(candidates)]])
        chosen: list[np.ndarray] = []
        count = 0
        for w in rng.permutation(len(bounds) - 1):
            size = int(bounds[w + 1] - bounds[w])
            if count + size > n_pred:
                continue
            chosen.append(candidates[word_of == w])
            count += size
            if count == n_pred:
                break
        positions = np.concatenate(chosen) if chosen else np.zeros(0, np.int64)
    positions = np.sort(positions).astype(np.int64)
    labels = tokens[positions].astype(np.int64)
    out = tokens.copy()
    # 80 / 100 is the very float 0.8 (and 10 / 100 is 0.1): the default draws what it drew before the split was
    # a setting, so earlier runs resume and replay exactly
    mask_share, random_share = split[0] / 100, split[1] / 100
    r = rng.random(len(positions))
    out[positions[r < mask_share]] = vocab.mask_id
    swap = positions[(r >= mask_share) & (r < mask_share + random_share)]
    out[swap] = vocab.random_ids[rng.integers(len(vocab.random_ids), size=len(swap))]
    return out, positions, labels
