"""Elementwise activations with their first and second derivatives, in closed form.

Forward Taylor mode (`pinn.taylor`) needs σ(z), σ'(z) and σ''(z) at every pre-activation z.
Each rule below computes them together, sharing the expensive part (tanh, sigmoid, exp),
and returns the value with the very function the module itself calls, so Taylor mode's values
match the model's own output.

    rule(layer, z) -> Derivatives(σ(z), σ'(z), curvature, scale, relative), tensors shaped like z

σ'' comes as `scale * curvature`, times σ' too when `relative`. The pass updates the carried
second-order terms S with the products Q = J_i J_j as σ' S + σ'' Q, and elementwise passes
over (rows, N, w) tensors are most of its cost, so the rules avoid forming σ'' where they can:

    relative=False   σ'' = scale c         S -> addcmul(σ' S, c, Q, value=scale)
    relative=True    σ'' = scale c σ'      S -> σ' addcmul(S, c, Q, value=scale)

tanh, for one, has σ'' = -2 σ σ': with c = σ it needs neither σ'' nor a product for it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from pinn.models import Sin

Tensor = torch.Tensor


class Derivatives(NamedTuple):
    """σ(z), σ'(z) and σ''(z) = scale * curvature (* σ'(z) if relative), tensors like z."""

    value: Tensor
    slope: Tensor
    curvature: Tensor
    scale: float = 1.0
    relative: bool = False


ActivationRule = Callable[[nn.Module, Tensor], Derivatives]

_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_GELU_TANH_SCALE = math.sqrt(2.0 / math.pi)  # the constants torch's approximate="tanh" uses
_GELU_TANH_CUBIC = 0.044715


def _tanh(layer: nn.Module, z: Tensor) -> Derivatives:
    # tanh' = 1 - tanh², tanh'' = -2 tanh tanh'.
    value = torch.tanh(z)
    return Derivatives(value, 1 - value * value, value, scale=-2.0, relative=True)


def _sin(layer: nn.Module, z: Tensor) -> Derivatives:
    value = torch.sin(z)
    return Derivatives(value, torch.cos(z), value, scale=-1.0)  # sin'' = -sin


def _sigmoid(layer: nn.Module, z: Tensor) -> Derivatives:
    # s' = s (1 - s), s'' = s' (1 - 2 s); rsub(s, 1, alpha=2) is 1 - 2 s in one pass.
    value = torch.sigmoid(z)
    return Derivatives(value, value * (1 - value), torch.rsub(value, 1, alpha=2), relative=True)


def _softplus(layer: nn.Module, z: Tensor) -> Derivatives:
    # softplus_β(z) = log(1 + exp(β z)) / β, but torch returns z itself where β z > threshold
    # (for numerical stability); there the slope is exactly 1 and the curvature 0.
    beta, threshold = layer.beta, layer.threshold
    scaled = beta * z
    sigmoid = torch.sigmoid(scaled)
    linear = scaled > threshold
    slope = torch.where(linear, 1.0, sigmoid)
    curvature = torch.where(linear, 0.0, sigmoid * (1 - sigmoid))
    return Derivatives(F.softplus(z, beta, threshold), slope, curvature, scale=beta)


def _silu(layer: nn.Module, z: Tensor) -> Derivatives:
    # silu = z s(z): silu' = s + z s', silu'' = 2 s' + z s'' with s' = s(1 - s), s'' = s'(1 - 2s).
    sigmoid = torch.sigmoid(z)
    sigmoid_slope = sigmoid * (1 - sigmoid)
    slope = sigmoid + z * sigmoid_slope
    curvature = sigmoid_slope * (2 + z * torch.rsub(sigmoid, 1, alpha=2))
    return Derivatives(F.silu(z), slope, curvature)


def _gelu(layer: nn.Module, z: Tensor) -> Derivatives:
    if layer.approximate == "tanh":
        return _gelu_tanh(z)
    # gelu = z Φ(z): gelu' = Φ + z φ, gelu'' = 2 φ + z φ' = φ (2 - z²), as φ' = -z φ.
    z_squared = z * z
    density = _INV_SQRT_2PI * torch.exp(-0.5 * z_squared)
    slope = torch.addcmul(torch.special.ndtr(z), z, density)  # ndtr is Φ, in one pass
    return Derivatives(F.gelu(z), slope, density * (2 - z_squared))


def _gelu_tanh(z: Tensor) -> Derivatives:
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
    return Derivatives(F.gelu(z, approximate="tanh"), slope, curvature)


ACTIVATION_RULES: dict[type[nn.Module], ActivationRule] = {
    nn.Tanh: _tanh,
    Sin: _sin,
    nn.Sigmoid: _sigmoid,
    nn.Softplus: _softplus,
    nn.SiLU: _silu,
    nn.GELU: _gelu,
}
