"""ELECTRA's replaced-token detection on one sentence: the generator fills the pieces BERT's draw chose with words
it samples, and the discriminator says, for every piece, how likely it is that the piece was replaced.

The draw is BERT's (:func:`ctxmodels.analysis.objectives.draw`: training's own 15% / 80-10-10, seeded); the
generator reads the corrupted sentence and samples a piece at each chosen position from its softmax (seeded too), as
``ctxmodels train electra`` does; the discriminator reads the sentence with those samples in place. A sample that
happens to be the original counts as not replaced (the paper's and the trainer's labels). Its loss is on every
piece, where BERT's is on the 15% chosen.

The folders are those ``ctxmodels train electra`` writes: the discriminator (transformers' ``ElectraForPreTraining``)
in the run folder and the generator (``ElectraForMaskedLM``) in ``generator/`` inside it.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from ..checkpoint import CheckpointError
from ..model_files import is_dir
from .objectives import _with_ids, draw, encode, head_probs

GENERATOR = "generator"  # the generator's folder inside the discriminator's

_HEADS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # loaded model -> ElectraForPreTraining


def generator_folder(model: Any) -> Path | None:
    """The generator beside an ELECTRA discriminator (``generator/`` in its folder), None when there is none."""
    path = getattr(model, "path", None)
    if path is None or getattr(model, "model_type", "") != "electra":
        return None
    folder = Path(path) if is_dir(Path(path)) else Path(path).parent
    found = folder / GENERATOR
    return found if (found / "config.json").is_file() else None


def is_discriminator(model: Any) -> bool:
    """Whether ``model`` is an ELECTRA discriminator with its generator beside it."""
    return generator_folder(model) is not None and not getattr(model, "can_fill_mask", True)


def _discriminator_head(model: Any) -> Any:
    """The discriminator with its head (transformers' ``ElectraForPreTraining``), read once per loaded model: the
    loaded model keeps the encoder alone, as every encoder's vectors are read."""
    if model not in _HEADS:
        import transformers

        from ..formats.transformers_models import _quiet

        folder = Path(model.path) if is_dir(Path(model.path)) else Path(model.path).parent
        try:
            with _quiet():
                head = transformers.ElectraForPreTraining.from_pretrained(folder, local_files_only=True)
        except Exception as e:  # noqa: BLE001 - safetensors, torch and transformers each raise their own errors
            raise CheckpointError(f"{folder}: the discriminator does not load with its head ({type(e).__name__})"
                                  ) from None
        _HEADS[model] = head.float().to(model.device).eval()
    return _HEADS[model]


@dataclass
class Replacements:
    """One sentence through ELECTRA: per piece, what the discriminator read, whether it was replaced, and its
    probability of "replaced"; the generator's samples at the chosen pieces."""

    pieces: list[str]  # the original pieces, [CLS] and [SEP] included
    reads: list[str]  # the discriminator's input: the generator's samples at the chosen pieces
    replaced: list[bool]  # the piece differs from the original
    chosen: list[bool]  # BERT's draw chose the piece (the generator filled it)
    special: list[bool]
    p_replaced: list[float]  # the discriminator's probability that the piece was replaced
    sample_prob: list[float]  # at each chosen piece, the generator's probability of the piece it sampled
    seed: int
    whole_words: bool

    @property
    def loss(self) -> float:
        """The discriminator's loss (binary cross-entropy, nats) averaged over every piece but the specials."""
        terms = [-math.log(max(p if r else 1 - p, 1e-45))
                 for p, r, s in zip(self.p_replaced, self.replaced, self.special) if not s]
        return sum(terms) / len(terms) if terms else math.nan

    def to_dict(self) -> dict:
        return {**asdict(self), "loss": self.loss}


def replacements(discriminator: Any, generator: Any, text: str, seed: int, whole_words: bool = False) -> Replacements:
    """The generator's replacements in ``text`` (the pieces BERT's draw with ``seed`` chose) and the
    discriminator's probability of "replaced" for every piece. ``discriminator`` and ``generator``: loaded models
    (:func:`ctxmodels.load` of the run folder and of its ``generator/``), reading the same vocabulary."""
    tok = discriminator.tokenizer
    if generator.tokenizer.vocab_size != tok.vocab_size:
        raise ValueError("the generator and the discriminator read different vocabularies; they are not one ELECTRA")
    enc = encode(discriminator, text)
    d = draw(tok, enc, seed, whole_words)
    if not d.positions:
        raise ValueError("the sentence has no piece that can be replaced")
    probs = head_probs(generator, _with_ids(enc, d.reads), d.positions)
    sampler = torch.Generator(device=probs.device).manual_seed(seed)
    sampled = torch.multinomial(probs, 1, generator=sampler).squeeze(-1).tolist()
    ids = list(d.ids)
    for p, s in zip(d.positions, sampled):
        ids[p] = int(s)
    head = _discriminator_head(discriminator)
    batch = tok.collate([_with_ids(enc, ids)], device=discriminator.device)
    with torch.inference_mode():
        logits = head(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                      token_type_ids=batch.get("token_type_ids")).logits[0].float()
    p_replaced = torch.sigmoid(logits).tolist()
    chosen = set(d.positions)
    return Replacements(
        pieces=d.pieces, reads=[tok.id_to_token(i) for i in ids], replaced=[a != b for a, b in zip(ids, d.ids)],
        chosen=[i in chosen for i in range(len(ids))], special=[f == "special" for f in d.fates],
        p_replaced=p_replaced[:len(ids)], sample_prob=[float(probs[j, s]) for j, s in enumerate(sampled)],
        seed=seed, whole_words=whole_words)
