"""The sampled softmax ELMo trains with: log-uniform candidates shared by the whole batch, the logQ correction,
accidental hits removed (as TensorFlow's ``sampled_softmax_loss`` with bilm-tf's settings).

Why sampled rather than adaptive: it trains exactly the [V, P] softmax that the exact evaluation, the saved
checkpoint and bilm-tf use, with no extra parameters or frequency clusters; with 1,024 candidates out of
30,003 words it made training 2-7x faster per token than the full softmax for the presets tiny, mini and
small-cpu (bench/bench_elmo.py; less for the larger presets, whose time goes to the CNN and the LSTMs).
"""

from __future__ import annotations

import math

import numpy as np
import torch


class LogUniformSampler:
    """Draws softmax candidates from the log-uniform (Zipfian) distribution over ids sorted by frequency:
    P(k) = log((k + 2) / (k + 1)) / log(V + 1), as TensorFlow's ``log_uniform_candidate_sampler``.

    :meth:`sample` draws until it has ``n`` distinct ids and returns, with each id, the log of its
    probability of being in such a sample, 1 - (1 - P(k))^tries: the logQ correction of the sampled softmax.
    """

    def __init__(self, n_classes: int):
        if n_classes < 2:
            raise ValueError(f"the sampled softmax needs at least 2 classes, got {n_classes}")
        self.n_classes = n_classes
        self._log_range = math.log(n_classes + 1)

    def prob(self, ids: torch.Tensor) -> torch.Tensor:
        ids = ids.double()
        return (torch.log(ids + 2) - torch.log(ids + 1)) / self._log_range

    def log_expected_count(self, ids: torch.Tensor, tries: int) -> torch.Tensor:
        """log of P(id is among the candidates) after ``tries`` draws (float32)."""
        p = self.prob(ids)
        return torch.log(-torch.expm1(tries * torch.log1p(-p))).float()

    def sample(self, n: int, rng: np.random.Generator) -> tuple[torch.Tensor, int]:
        """``n`` distinct ids (LongTensor, in order of first draw) and the number of draws it took."""
        if n >= self.n_classes:
            raise ValueError(f"cannot draw {n} distinct candidates from {self.n_classes} classes")
        draws = np.empty(0, dtype=np.int64)
        chunk = 2 * n
        while True:
            u = rng.random(chunk)
            new = np.floor(np.exp(u * self._log_range)).astype(np.int64) - 1
            draws = np.concatenate([draws, np.clip(new, 0, self.n_classes - 1)])
            uniq, first = np.unique(draws, return_index=True)
            if len(uniq) >= n:
                first = np.sort(first)[:n]  # the first n distinct ids, as sequential draws would find them
                return torch.from_numpy(draws[first]), int(first[-1]) + 1
            chunk *= 2


def sampled_softmax_loss(
    states: torch.Tensor,
    targets: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor,
    candidates: torch.Tensor,
    candidate_log_q: torch.Tensor | None = None,
    target_log_q: torch.Tensor | None = None,
) -> torch.Tensor:
    """Per-row sampled softmax cross-entropy, the candidates shared by all rows.

    ``states`` [N, P], ``targets`` [N]; ``weight`` [V, P] and ``bias`` [V] are the full softmax. Each row is
    scored against its true class and the candidates, all logits minus their log expected count (the logQ
    correction; None = no correction). A candidate equal to a row's target is masked out for that row
    ("accidental hit"), so with every class as a candidate and no correction this is exactly the full
    softmax cross-entropy.
    """
    true_logit = (states * weight[targets]).sum(-1) + bias[targets]
    cand_logits = states @ weight[candidates].t() + bias[candidates]
    if target_log_q is not None:
        true_logit = true_logit - target_log_q
    if candidate_log_q is not None:
        cand_logits = cand_logits - candidate_log_q
    hits = targets[:, None] == candidates[None, :]
    cand_logits = cand_logits.masked_fill(hits, float("-inf"))
    logits = torch.cat([true_logit[:, None], cand_logits], dim=1)
    return torch.logsumexp(logits, dim=1) - true_logit

