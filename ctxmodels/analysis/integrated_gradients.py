"""Integrated gradients (Sundararajan, Taly & Yan 2017): how much of a score each input vector accounts for.

For a score ``f`` of input vectors ``x`` [T, D] and a baseline ``b`` of the same shape (the input with its words
taken away), the attribution of position ``t`` is::

    IG_t = Σ_d (x_td − b_td) · ∫₀¹ ∂f/∂x_td (b + α (x − b)) dα

and the attributions add up to ``f(x) − f(b)`` ("completeness"), up to the error of the integral's approximation:
here the trapezoid rule over equal intervals, so ``f(x)`` and ``f(b)`` come out of the same runs. :class:`Integrated`
reports that error as ``gap``; without a set number of intervals the rule is refined until the gap is small, so a
reader is not asked to trust a sum that does not add up.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

#: Without a number of intervals, :func:`integrate` starts with ``FIRST_STEPS`` and doubles them (reusing every
#: point already run: the finer rule's points include the coarser one's) until the scores add up to within
#: ``TOLERANCE`` nats or ``RELATIVE_TOLERANCE`` of the whole rise f(x) − f(b), whichever is larger (a bar's error
#: then stays far below what the chart's log axis shows), or ``MAX_STEPS`` are reached. On the project's cloze
#: sentences 16 intervals leave a median gap of 0.003-0.09 nats by model and 32 of 0.001-0.006
#: (bench/bench_attributions.py). A gap of 0.1 nats is a factor of 1.1 over all the bars together.
FIRST_STEPS = 16
TOLERANCE = 0.1
RELATIVE_TOLERANCE = 0.01
MAX_STEPS = 256


@dataclass
class Integrated:
    attributions: torch.Tensor  # [T]: each position's share of score − baseline_score
    score: float  # f(x)
    baseline_score: float  # f(b)
    steps: int  # the intervals the integral was taken over

    @property
    def gap(self) -> float:
        """Σ attributions − (f(x) − f(b)): the integral's approximation error (0 with infinitely many steps)."""
        return float(self.attributions.sum()) - (self.score - self.baseline_score)


#: Positions per model run (blends x tokens): a short sentence's 17 blends go in one run (a sixth faster than in
#: runs of 16 on minilm-eltec), a long text's in several, so the activations kept for the gradients stay small.
POSITIONS_PER_RUN = 1024


def integrate(score: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, baseline: torch.Tensor,
              steps: int | None = None, rows_per_run: int | None = None) -> Integrated:
    """Integrated gradients of ``score`` at ``x`` [T, D] from ``baseline`` [T, D], over ``steps`` intervals, or
    (None) as many as it takes to add up (see :data:`TOLERANCE`).

    ``score`` maps blends [n, T, D] to scores [n], each row's score from its own row only (a model in eval mode
    reading a batch); it runs on at most ``rows_per_run`` blends at a time (None: :data:`POSITIONS_PER_RUN`
    positions)."""
    if steps is not None and steps < 1:
        raise ValueError(f"steps must be at least 1, got {steps}")
    if x.shape != baseline.shape:
        raise ValueError(f"the input {tuple(x.shape)} and its baseline {tuple(baseline.shape)} differ in shape")
    x, baseline = x.detach(), baseline.detach()
    diff = x - baseline
    rows_per_run = rows_per_run or max(1, POSITIONS_PER_RUN // max(1, x.shape[0]))

    def run(alphas: torch.Tensor, weights: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The scores at ``alphas`` and the sum of their gradients times ``weights``."""
        grad_sum, scores = torch.zeros_like(x), []
        with torch.enable_grad():
            for start in range(0, len(alphas), rows_per_run):
                a = alphas[start:start + rows_per_run, None, None]
                blends = (baseline + a * diff).requires_grad_(True)
                f = score(blends)
                (grad,) = torch.autograd.grad(f.sum(), blends)
                grad_sum += (weights[start:start + rows_per_run, None, None] * grad).sum(dim=0)
                scores.append(f.detach())
        f = torch.cat(scores)
        if not bool(f.isfinite().all()):
            raise ValueError("the model computed NaN or infinite scores on the way from the baseline to the "
                             "sentence, so the attributions are undefined; its weights are damaged")
        return f, grad_sum

    def points(values: list[float]) -> torch.Tensor:
        return torch.tensor(values, dtype=x.dtype, device=x.device)

    n = steps or FIRST_STEPS
    # the trapezoid rule: the two ends weigh half an interval each, every interior point a whole one
    alphas = [0.0, 1.0] + [k / n for k in range(1, n)]
    f, weighted = run(points(alphas), points([0.5, 0.5] + [1.0] * (n - 1)))
    while True:
        result = Integrated((diff * weighted / n).sum(dim=-1), float(f[1]), float(f[0]), n)
        allowed = max(TOLERANCE, RELATIVE_TOLERANCE * abs(result.score - result.baseline_score))
        if steps is not None or abs(result.gap) <= allowed or n >= MAX_STEPS:
            return result
        midpoints = [(2 * k + 1) / (2 * n) for k in range(n)]  # halve every interval: n more points
        weighted = weighted + run(points(midpoints), points([1.0] * n))[1]
        n *= 2
