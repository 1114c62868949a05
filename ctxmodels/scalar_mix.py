"""ScalarMix: ELMo's learned weighting of layers, v_t = gamma * sum_j s_j h_t^j with s = softmax(w).

The module a downstream head puts on top of a frozen ELMo (or BERT); its weights are what the app shows.
With ``do_layer_norm`` each layer is normalised first (mean and variance over the real tokens and all
features, as AllenNLP does), so layers of different scale contribute by their weight alone.
"""

from __future__ import annotations

import torch
from torch import nn


class ScalarMix(nn.Module):
    def __init__(
        self,
        n_layers: int,
        do_layer_norm: bool = False,
        initial_scalars: list[float] | None = None,
        trainable: bool = True,
    ):
        super().__init__()
        if n_layers < 1:
            raise ValueError(f"ScalarMix needs at least one layer, got n_layers={n_layers}")
        if initial_scalars is None:
            initial_scalars = [0.0] * n_layers
        if len(initial_scalars) != n_layers:
            raise ValueError(f"initial_scalars has {len(initial_scalars)} values for {n_layers} layers")
        self.n_layers = n_layers
        self.do_layer_norm = do_layer_norm
        self.scalar_parameters = nn.Parameter(torch.tensor(initial_scalars, dtype=torch.float),
                                              requires_grad=trainable)
        self.gamma_parameter = nn.Parameter(torch.tensor(1.0), requires_grad=trainable)

    def weights(self) -> list[float]:
        """The normalised layer weights s_j (they sum to 1)."""
        return torch.softmax(self.scalar_parameters.detach(), dim=0).tolist()

    @property
    def gamma(self) -> float:
        return float(self.gamma_parameter.detach())

    @staticmethod
    def _layer_norm(x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        if mask is None:
            mean = x.mean()
            var = ((x - mean) ** 2).mean()
        else:
            m = mask[..., None].to(x.dtype)
            count = (m.sum() * x.shape[-1]).clamp_min(1.0)
            mean = (x * m).sum() / count
            var = (((x - mean) * m) ** 2).sum() / count
        return (x - mean) / torch.sqrt(var + 1e-12)

    def forward(self, layers: list[torch.Tensor] | torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """layers: L tensors [B, T, D] (or one Tensor [L, B, T, D]); mask [B, T] (used by the layer norm)."""
        if isinstance(layers, torch.Tensor):
            if layers.dim() < 2:
                raise ValueError(f"expected a Tensor [layers, ..., dim], got shape {tuple(layers.shape)}")
            layers = list(layers.unbind(0))
        if len(layers) != self.n_layers:
            raise ValueError(f"ScalarMix was built for {self.n_layers} layers but got {len(layers)}")
        shapes = {tuple(t.shape) for t in layers}
        if len(shapes) != 1:
            raise ValueError(f"all layers must have the same shape, got {sorted(shapes)}")
        if self.do_layer_norm and mask is not None and tuple(mask.shape) != tuple(layers[0].shape[:-1]):
            raise ValueError(f"mask shape {tuple(mask.shape)} does not match layers {tuple(layers[0].shape[:-1])}")
        s = torch.softmax(self.scalar_parameters, dim=0)
        total = None
        for j, h in enumerate(layers):
            if self.do_layer_norm:
                h = self._layer_norm(h, mask)
            term = s[j].to(h.dtype) * h
            total = term if total is None else total + term
        return self.gamma_parameter.to(total.dtype) * total
