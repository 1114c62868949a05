"""ScalarMix: v = gamma * sum_j softmax(w)_j h_j, optional layer norm over the real tokens."""

from __future__ import annotations

import math

import pytest
import torch

from ctxmodels.scalar_mix import ScalarMix


def _layers(n=3, B=2, T=4, D=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(B, T, D, generator=g) * (j + 1) + j for j in range(n)]


def test_weights_are_a_softmax_and_sum_to_one():
    mix = ScalarMix(3, initial_scalars=[0.0, 1.0, 2.0])
    w = mix.weights()
    assert math.isclose(sum(w), 1.0, abs_tol=1e-6)
    expected = torch.softmax(torch.tensor([0.0, 1.0, 2.0]), 0).tolist()
    assert w == pytest.approx(expected)
    assert ScalarMix(4).weights() == pytest.approx([0.25] * 4)
    assert ScalarMix(4).gamma == 1.0


def test_output_is_gamma_times_weighted_sum():
    layers = _layers()
    mix = ScalarMix(3, initial_scalars=[0.5, -1.0, 2.0])
    s = torch.softmax(torch.tensor([0.5, -1.0, 2.0]), 0)
    expected = sum(s[j] * layers[j] for j in range(3))
    torch.testing.assert_close(mix(layers), expected)
    torch.testing.assert_close(mix(torch.stack(layers)), expected)  # [L, B, T, D] works too
    with torch.no_grad():
        mix.gamma_parameter.fill_(2.5)
    assert mix.gamma == 2.5
    torch.testing.assert_close(mix(layers), 2.5 * expected)


def test_one_hot_weights_select_a_layer():
    layers = _layers()
    mix = ScalarMix(3, initial_scalars=[-1e4, 1e4, -1e4], trainable=False)
    torch.testing.assert_close(mix(layers), layers[1])


def test_trainable_and_frozen():
    layers = _layers()
    mix = ScalarMix(3)
    mix(layers).sum().backward()
    assert mix.scalar_parameters.grad is not None and mix.gamma_parameter.grad is not None
    assert mix.gamma_parameter.grad.abs() > 0
    frozen = ScalarMix(3, trainable=False)
    assert not any(p.requires_grad for p in frozen.parameters())


def test_layer_norm_uses_only_real_tokens():
    layers = _layers()
    mask = torch.tensor([[True, True, True, False], [True, True, False, False]])
    mix = ScalarMix(3, do_layer_norm=True, initial_scalars=[-1e4, -1e4, 1e4])
    out = mix(layers, mask).detach()
    real = out[mask]
    assert abs(float(real.mean())) < 1e-5
    assert abs(float(real.var(unbiased=False)) - 1.0) < 1e-4
    # Changing what sits in padded positions changes nothing at the real ones.
    changed = [h.clone() for h in layers]
    for h in changed:
        h[~mask] = 1e3
    torch.testing.assert_close(mix(changed, mask).detach()[mask], real)
    # Without a mask the statistics cover every position.
    unmasked = ScalarMix(3, do_layer_norm=True, initial_scalars=[-1e4, -1e4, 1e4])(layers).detach()
    assert abs(float(unmasked.mean())) < 1e-5


@pytest.mark.parametrize(
    "make, call, message",
    [
        (lambda: ScalarMix(0), None, "at least one layer"),
        (lambda: ScalarMix(3, initial_scalars=[0.0]), None, "initial_scalars"),
        (lambda: ScalarMix(3), lambda m: m(_layers(2)), "3 layers"),
        (lambda: ScalarMix(2), lambda m: m([torch.zeros(1, 2, 3), torch.zeros(1, 2, 4)]), "same shape"),
        (lambda: ScalarMix(2, do_layer_norm=True), lambda m: m(_layers(2), torch.ones(3, 3, dtype=torch.bool)),
         "mask shape"),
    ],
)
def test_clear_errors(make, call, message):
    with pytest.raises(ValueError, match=message):
        mix = make()
        call(mix)
