"""Integrated gradients (Sundararajan, Taly & Yan 2017): how much of a score each input vector accounts for.

For a score ``f`` of input vectors ``x`` [T, D] and a baseline ``b`` of the same shape (the input with its words
taken away), the attribution of position ``t`` is::

    IG_t = Σ_d (x_td − b_td) · ∫₀¹ ∂f/∂x_td (b + α (x − b)) dα

and the attributions add up to ``f(x) − f(b)`` ("completeness"), up to the error of the integral's approximation:
here the trapezoid rule over ``steps`` equal intervals, so ``f(x)`` and ``f(b)`` come out of the same runs.
:class:`Integrated` reports that error as ``gap``, so a reader sees when more steps are needed instead of trusting a
sum that does not add up.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

#: Default number of intervals: on the shipped models the bars then add up to within a few hundredths of a nat of
#: the score's rise (bench/bench_attributions.py measures the gap).
STEPS = 32


@dataclass
class Integrated:
    attributions: torch.Tensor  # [T]: each position's share of score − baseline_score
    score: float  # f(x)
    baseline_score: float  # f(b)

    @property
    def gap(self) -> float:
        """Σ attributions − (f(x) − f(b)): the integral's approximation error (0 with infinitely many steps)."""
        return float(self.attributions.sum()) - (self.score - self.baseline_score)


def integrate(score: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, baseline: torch.Tensor,
              steps: int = STEPS, rows_per_run: int = 16) -> Integrated:
    """Integrated gradients of ``score`` at ``x`` [T, D] from ``baseline`` [T, D].

    ``score`` maps blends [n, T, D] to scores [n], each row's score from its own row only (a model in eval mode
    reading a batch); it runs on at most ``rows_per_run`` blends at a time, ``steps + 1`` blends in all."""
    if steps < 1:
        raise ValueError(f"steps must be at least 1, got {steps}")
    if x.shape != baseline.shape:
        raise ValueError(f"the input {tuple(x.shape)} and its baseline {tuple(baseline.shape)} differ in shape")
    x, baseline = x.detach(), baseline.detach()
    diff = x - baseline
    alphas = torch.linspace(0.0, 1.0, steps + 1, dtype=x.dtype, device=x.device)
    weights = torch.full_like(alphas, 1.0 / steps)
    weights[0] = weights[-1] = 0.5 / steps  # the trapezoid rule
    mean_grad = torch.zeros_like(x)
    scores = []
    with torch.enable_grad():
        for start in range(0, steps + 1, rows_per_run):
            a = alphas[start:start + rows_per_run, None, None]
            blends = (baseline + a * diff).requires_grad_(True)
            f = score(blends)
            (grad,) = torch.autograd.grad(f.sum(), blends)
            mean_grad += (weights[start:start + rows_per_run, None, None] * grad).sum(dim=0)
            scores.append(f.detach())
    f = torch.cat(scores)
    if not bool(f.isfinite().all()):
        raise ValueError("the model computed NaN or infinite scores on the way from the baseline to the sentence, "
                         "so the attributions are undefined; its weights are damaged")
    return Integrated((diff * mean_grad).sum(dim=-1), float(f[-1]), float(f[0]))
