"""Random weight factorisation (Wang, Wang & Perdikaris 2022): every weight row is a trained scale
times a trained direction, W = diag(exp(s)) V, which reshapes the loss landscape for gradient
descent without changing what the network can represent.

S. Wang, H. Wang, P. Perdikaris, "Random weight factorization improves the training of
continuous neural representations", arXiv:2210.01274 (2022).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional

from pinn.errors import ConfigError, is_finite_number


class FactorizedLinear(nn.Module):
    """y = x (diag(exp(s)) V)^T + b, s of shape (fan_out,), V (fan_out, fan_in), b (fan_out,).

    `factorize_(weight, generator)` sets s ~ N(mean, std²) and V = W / exp(s) for a given W (a
    Xavier draw), so the layer starts as the plain Linear layer it replaces.

    Args:
        fan_in: the layer's input size.
        fan_out: its output size.
        mean: the mean of the normal distribution of the log-scales s (jaxpi: 1.0).
        std: its standard deviation (jaxpi: 0.1).
    """

    def __init__(self, fan_in: int, fan_out: int, mean: float = 1.0, std: float = 0.1):
        super().__init__()
        for name, value in (("factorize_mean", mean), ("factorize_std", std)):
            if not is_finite_number(value):
                raise ConfigError(f"model.{name} must be a finite number, got {value!r}")
        if std < 0:
            raise ConfigError(f"model.factorize_std must be >= 0, got {std!r}")
        self.in_features, self.out_features = fan_in, fan_out
        self.mean, self.std = float(mean), float(std)
        self.log_scale = nn.Parameter(torch.zeros(fan_out))
        self.direction = nn.Parameter(torch.empty(fan_out, fan_in))
        self.bias = nn.Parameter(torch.zeros(fan_out))

    @property
    def weight(self) -> torch.Tensor:
        """W = diag(exp(s)) V, (fan_out, fan_in)."""
        return torch.exp(self.log_scale)[:, None] * self.direction

    def factorize_(self, weight: torch.Tensor, generator: torch.Generator | None) -> None:
        """Start at W = `weight`: draw s, then V = W / exp(s) (biases to zero)."""
        with torch.no_grad():
            draw = torch.randn(self.out_features, generator=generator, dtype=weight.dtype)
            self.log_scale.copy_(self.mean + self.std * draw)
            self.direction.copy_(weight / torch.exp(self.log_scale)[:, None])
            self.bias.zero_()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return functional.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"mean={self.mean}, std={self.std}"
        )


def dense(fan_in: int, fan_out: int, factorize: tuple[float, float] | None) -> nn.Module:
    """A plain `nn.Linear`, or a `FactorizedLinear` with log-scales ~ N(mean, std²) when
    `factorize` = (mean, std)."""
    if factorize is None:
        return nn.Linear(fan_in, fan_out)
    return FactorizedLinear(fan_in, fan_out, *factorize)


def initialise(network: nn.Module, generator: torch.Generator | None) -> None:
    """Xavier-normal weights (seeded by `generator`) and zero biases for every dense layer, in
    module order; a `FactorizedLinear` is factorised from its Xavier draw."""
    for layer in network.modules():
        if isinstance(layer, nn.Linear):
            nn.init.xavier_normal_(layer.weight, generator=generator)
            nn.init.zeros_(layer.bias)
        elif isinstance(layer, FactorizedLinear):
            weight = torch.empty_like(layer.direction)
            nn.init.xavier_normal_(weight, generator=generator)
            layer.factorize_(weight, generator)
