"""ELMo's held-out evaluation: the exact full-softmax perplexity of each direction (and of both) on fixed
windows of the held-out documents, for a training run's evaluations and for a trained model afterwards."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from ..elmo import ElmoLanguageModel
from .corpus import heldout_documents
from .elmo_data import IGNORE, EncodedCorpus, Vocabulary, eval_windows, window_batch


@torch.no_grad()
def heldout_perplexity(lm: ElmoLanguageModel, corpus: EncodedCorpus, starts: np.ndarray,
                       length: int) -> dict[str, float]:
    """Exact full-softmax perplexity forward, backward and both, on windows of ``corpus.heldout``."""
    if not len(starts):
        return {}
    device = next(lm.parameters()).device
    nll = {"fwd": 0.0, "bwd": 0.0}
    count = {"fwd": 0, "bwd": 0}
    per_batch = max(1, 4096 // length)
    for i in range(0, len(starts), per_batch):
        batch = window_batch(corpus, corpus.heldout, starts[i : i + per_batch], length)
        out = lm(batch["char_ids"].to(device))
        for key, states in (("fwd", out.forward_layers[-1]), ("bwd", out.backward_layers[-1])):
            s, c = full_softmax_nll(lm, states, batch[f"{key}_targets"].to(device))
            nll[key] += s
            count[key] += c
    fwd, bwd = nll["fwd"] / max(count["fwd"], 1), nll["bwd"] / max(count["bwd"], 1)
    both = (nll["fwd"] + nll["bwd"]) / max(count["fwd"] + count["bwd"], 1)
    return {"fwd_ppl": math.exp(fwd), "bwd_ppl": math.exp(bwd), "ppl": math.exp(both)}


def heldout_metrics(lm: ElmoLanguageModel, vocab: Sequence[str], corpus: str | Path, eval_tokens: int = 100_000,
                    seq_len: int = 20, heldout_docs: int | Sequence[int] | None = None,
                    seed: int = 0) -> dict[str, float]:
    """Held-out perplexities of a trained LM (its output vocabulary ``vocab``) on the documents of ``corpus``
    that a training run with the same ``heldout_docs`` and ``seed`` held out. Adds ``eval_tokens``, the
    number of windowed positions scored, and ``oov_rate`` of the held-out words."""
    docs, held = heldout_documents(corpus, heldout_docs, seed)
    encoded = EncodedCorpus.build([], [docs[i] for i in held], 0, vocab=Vocabulary(vocab))
    starts, length = eval_windows(len(encoded.heldout), seq_len, eval_tokens)
    lm.eval()
    out = heldout_perplexity(lm, encoded, starts, length)
    return {**out, "eval_tokens": int(len(starts) * length), "oov_rate": encoded.oov_rate(encoded.heldout)}


def full_softmax_nll(lm: ElmoLanguageModel, states: torch.Tensor, targets: torch.Tensor,
                     chunk: int = 2048) -> tuple[float, int]:
    """Summed exact negative log-likelihood and the number of scored positions (targets != IGNORE)."""
    keep = targets != IGNORE
    states, targets = states[keep], targets[keep]
    total = 0.0
    for i in range(0, len(targets), chunk):  # chunks keep the [N, V] logits small
        logits = lm.full_softmax_logits(states[i : i + chunk]).float()
        total += F.cross_entropy(logits, targets[i : i + chunk], reduction="sum").item()
    return total, int(len(targets))

