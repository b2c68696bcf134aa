"""Elementwise activations with their first and second derivatives, in closed form.

Forward Taylor mode (`pinn.taylor`) needs σ(z), σ'(z) and σ''(z) at every pre-activation z.
Each rule below computes the three together, sharing the expensive part (tanh, sigmoid, exp),
and returns the value with the very function the module itself calls, so Taylor mode's values
match the model's own output.

    rule(layer, z) -> (σ(z), σ'(z), σ''(z)), each shaped like z
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from pinn.models import Sin

Tensor = torch.Tensor
ActivationRule = Callable[[nn.Module, Tensor], tuple[Tensor, Tensor, Tensor]]

_SQRT_2 = math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_GELU_TANH_SCALE = math.sqrt(2.0 / math.pi)  # the constants torch's approximate="tanh" uses
_GELU_TANH_CUBIC = 0.044715


def _tanh(layer: nn.Module, z: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    value = torch.tanh(z)
    slope = 1 - value * value
    return value, slope, -2 * value * slope


def _sin(layer: nn.Module, z: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    value = torch.sin(z)
    return value, torch.cos(z), -value


def _sigmoid(layer: nn.Module, z: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    value = torch.sigmoid(z)
    slope = value * (1 - value)
    return value, slope, slope * (1 - 2 * value)


def _softplus(layer: nn.Module, z: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    # softplus_β(z) = log(1 + exp(β z)) / β, but torch returns z itself where β z > threshold
    # (for numerical stability); there the slope is exactly 1 and the curvature 0.
    beta, threshold = layer.beta, layer.threshold
    scaled = beta * z
    sigmoid = torch.sigmoid(scaled)
    linear = scaled > threshold
    slope = torch.where(linear, 1.0, sigmoid)
    curvature = torch.where(linear, 0.0, beta * sigmoid * (1 - sigmoid))
    return F.softplus(z, beta, threshold), slope, curvature


def _silu(layer: nn.Module, z: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    # silu = z s(z): silu' = s + z s', silu'' = 2 s' + z s'' with s' = s(1 - s), s'' = s'(1 - 2s).
    sigmoid = torch.sigmoid(z)
    sigmoid_slope = sigmoid * (1 - sigmoid)
    slope = sigmoid + z * sigmoid_slope
    curvature = sigmoid_slope * (2 + z * (1 - 2 * sigmoid))
    return F.silu(z), slope, curvature


def _gelu(layer: nn.Module, z: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    if layer.approximate == "tanh":
        return _gelu_tanh(z)
    # gelu = z Φ(z): gelu' = Φ + z φ, gelu'' = 2 φ + z φ' = φ (2 - z²), as φ' = -z φ.
    density = _INV_SQRT_2PI * torch.exp(-0.5 * z * z)
    cumulative = 0.5 * (1 + torch.erf(z / _SQRT_2))
    return F.gelu(z), cumulative + z * density, density * (2 - z * z)


def _gelu_tanh(z: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    # gelu ≈ z (1 + tanh u) / 2 with u = c (z + a z³): differentiate through u(z).
    z_squared = z * z
    inner = _GELU_TANH_SCALE * (z + _GELU_TANH_CUBIC * z * z_squared)
    inner_slope = _GELU_TANH_SCALE * (1 + 3 * _GELU_TANH_CUBIC * z_squared)
    inner_curvature = 6 * _GELU_TANH_SCALE * _GELU_TANH_CUBIC * z
    t = torch.tanh(inner)
    sech_squared = 1 - t * t
    slope = 0.5 * (1 + t) + 0.5 * z * sech_squared * inner_slope
    curvature = sech_squared * (
        inner_slope + 0.5 * z * (inner_curvature - 2 * t * inner_slope * inner_slope)
    )
    return F.gelu(z, approximate="tanh"), slope, curvature


ACTIVATION_RULES: dict[type[nn.Module], ActivationRule] = {
    nn.Tanh: _tanh,
    Sin: _sin,
    nn.Sigmoid: _sigmoid,
    nn.Softplus: _softplus,
    nn.SiLU: _silu,
    nn.GELU: _gelu,
}
