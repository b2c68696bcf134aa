"""Elementwise functions with their first and second derivatives, in closed form.

The Taylor pass (`pinn.derivatives.taylor_pass`) meets an elementwise function σ as one aten
operation of the traced model (`aten.tanh`, `aten.sin`, ...) and needs σ(z), σ'(z) and σ''(z)
at its input z. Each rule below computes them together, sharing the expensive part (tanh,
sigmoid, exp), and returns the value with the very operation the model called, so the pass's
values match the model's own output.

    rule(z, *arguments, **options) -> Derivatives(σ(z), σ'(z), curvature, scale, relative)

with tensors shaped like z; `arguments` and `options` are the operation's other, constant
arguments (softplus's beta and threshold, pow's exponent, gelu's approximate). σ'' comes as
`scale * curvature`, times σ' too when `relative`. The pass
updates the carried second-order terms S with the products Q = J_i J_j as σ' S + σ'' Q, and
elementwise passes over (rows, N, w) tensors are most of its cost, so the rules avoid forming
σ'' where they can:

    relative=False   σ'' = scale c         S -> addcmul(σ' S, c, Q, value=scale)
    relative=True    σ'' = scale c σ'      S -> σ' addcmul(S, c, Q, value=scale)

tanh, for one, has σ'' = -2 σ σ': with c = σ it needs neither σ'' nor a product for it.

`register_elementwise(op, rule)` adds one more function; the rule may return a plain triple
(σ, σ', σ'') instead of `Derivatives`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import torch

Tensor = torch.Tensor
aten = torch.ops.aten


class Derivatives(NamedTuple):
    """σ(z), σ'(z) and σ''(z) = scale * curvature (* σ'(z) if relative), tensors like z."""

    value: Tensor
    slope: Tensor
    curvature: Tensor
    scale: float = 1.0
    relative: bool = False


ElementwiseRule = Callable[..., Derivatives | tuple[Tensor, Tensor, Tensor]]

_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_GELU_TANH_SCALE = math.sqrt(2.0 / math.pi)  # the constants torch's approximate="tanh" uses
_GELU_TANH_CUBIC = 0.044715


def _tanh(z: Tensor) -> Derivatives:
    # tanh' = 1 - tanh², tanh'' = -2 tanh tanh'.
    value = aten.tanh(z)
    return Derivatives(value, 1 - value * value, value, scale=-2.0, relative=True)


def _sin(z: Tensor) -> Derivatives:
    value = aten.sin(z)
    return Derivatives(value, torch.cos(z), value, scale=-1.0)  # sin'' = -sin


def _cos(z: Tensor) -> Derivatives:
    value = aten.cos(z)
    return Derivatives(value, -torch.sin(z), value, scale=-1.0)  # cos'' = -cos


def _exp(z: Tensor) -> Derivatives:
    value = aten.exp(z)
    return Derivatives(value, value, value)


def _log(z: Tensor) -> Derivatives:
    reciprocal = torch.reciprocal(z)
    return Derivatives(aten.log(z), reciprocal, reciprocal * reciprocal, scale=-1.0)


def _log1p(z: Tensor) -> Derivatives:
    reciprocal = torch.reciprocal(1 + z)
    return Derivatives(aten.log1p(z), reciprocal, reciprocal * reciprocal, scale=-1.0)


def _expm1(z: Tensor) -> Derivatives:
    exp = torch.exp(z)
    return Derivatives(aten.expm1(z), exp, exp)


def _sqrt(z: Tensor) -> Derivatives:
    # sqrt' = 1 / (2 sqrt), sqrt'' = -sqrt' / (2 z).
    value = aten.sqrt(z)
    slope = 0.5 / value
    return Derivatives(value, slope, torch.reciprocal(z), scale=-0.5, relative=True)


def _rsqrt(z: Tensor) -> Derivatives:
    # z^(-1/2): slope -z^(-3/2)/2, curvature 3 z^(-5/2)/4 = slope * (-3 / (2 z)).
    value = aten.rsqrt(z)
    slope = -0.5 * value / z
    return Derivatives(value, slope, torch.reciprocal(z), scale=-1.5, relative=True)


def _reciprocal(z: Tensor) -> Derivatives:
    value = aten.reciprocal(z)
    square = value * value
    return Derivatives(value, -square, square * value, scale=2.0)


def _sigmoid(z: Tensor) -> Derivatives:
    # s' = s (1 - s), s'' = s' (1 - 2 s); rsub(s, 1, alpha=2) is 1 - 2 s in one pass.
    value = aten.sigmoid(z)
    return Derivatives(value, value * (1 - value), torch.rsub(value, 1, alpha=2), relative=True)


def _softplus(z: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Derivatives:
    # softplus_β(z) = log(1 + exp(β z)) / β, but torch returns z itself where β z > threshold
    # (for numerical stability); there the slope is exactly 1 and the curvature 0.
    scaled = beta * z
    sigmoid = torch.sigmoid(scaled)
    linear = scaled > threshold
    slope = torch.where(linear, 1.0, sigmoid)
    curvature = torch.where(linear, 0.0, sigmoid * (1 - sigmoid))
    return Derivatives(aten.softplus(z, beta, threshold), slope, curvature, scale=beta)


def _silu(z: Tensor) -> Derivatives:
    # silu = z s(z): silu' = s + z s', silu'' = 2 s' + z s'' with s' = s(1 - s), s'' = s'(1 - 2s).
    sigmoid = torch.sigmoid(z)
    sigmoid_slope = sigmoid * (1 - sigmoid)
    slope = sigmoid + z * sigmoid_slope
    curvature = sigmoid_slope * (2 + z * torch.rsub(sigmoid, 1, alpha=2))
    return Derivatives(aten.silu(z), slope, curvature)


def _gelu(z: Tensor, approximate: str = "none") -> Derivatives:
    if approximate == "tanh":
        return _gelu_tanh(z)
    # gelu = z Φ(z): gelu' = Φ + z φ, gelu'' = 2 φ + z φ' = φ (2 - z²), as φ' = -z φ.
    z_squared = z * z
    density = _INV_SQRT_2PI * torch.exp(-0.5 * z_squared)
    slope = torch.addcmul(torch.special.ndtr(z), z, density)  # ndtr is Φ, in one pass
    return Derivatives(aten.gelu(z), slope, density * (2 - z_squared))


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
    return Derivatives(aten.gelu(z, approximate="tanh"), slope, curvature)


def _erf(z: Tensor) -> Derivatives:
    # erf' = 2/√π e^(-z²), erf'' = -2 z erf'.
    slope = (2 / math.sqrt(math.pi)) * torch.exp(-z * z)
    return Derivatives(aten.erf(z), slope, z, scale=-2.0, relative=True)


def _sinh(z: Tensor) -> Derivatives:
    value = aten.sinh(z)
    return Derivatives(value, torch.cosh(z), value)


def _cosh(z: Tensor) -> Derivatives:
    value = aten.cosh(z)
    return Derivatives(value, torch.sinh(z), value)


def _atan(z: Tensor) -> Derivatives:
    # atan' = 1 / (1 + z²), atan'' = -2 z atan'².
    slope = torch.reciprocal(1 + z * z)
    return Derivatives(aten.atan(z), slope, z * slope, scale=-2.0, relative=True)


def _tan(z: Tensor) -> Derivatives:
    # tan' = 1 + tan², tan'' = 2 tan tan'.
    value = aten.tan(z)
    return Derivatives(value, 1 + value * value, value, scale=2.0, relative=True)


def _asin(z: Tensor) -> Derivatives:
    # asin' = (1 - z²)^(-1/2), asin'' = z asin'³.
    slope = torch.rsqrt(1 - z * z)
    return Derivatives(aten.asin(z), slope, z * slope * slope, relative=True)


def _acos(z: Tensor) -> Derivatives:
    # acos = π/2 - asin: acos' = -asin', acos'' = -z asin'³ = z asin'² acos'.
    slope = torch.rsqrt(1 - z * z)
    return Derivatives(aten.acos(z), -slope, z * slope * slope, relative=True)


def _asinh(z: Tensor) -> Derivatives:
    # asinh' = (1 + z²)^(-1/2), asinh'' = -z asinh'³.
    slope = torch.rsqrt(1 + z * z)
    return Derivatives(aten.asinh(z), slope, z * slope * slope, scale=-1.0, relative=True)


def _acosh(z: Tensor) -> Derivatives:
    # acosh' = (z² - 1)^(-1/2), acosh'' = -z acosh'³.
    slope = torch.rsqrt(z * z - 1)
    return Derivatives(aten.acosh(z), slope, z * slope * slope, scale=-1.0, relative=True)


def _atanh(z: Tensor) -> Derivatives:
    # atanh' = 1 / (1 - z²), atanh'' = 2 z atanh'².
    slope = torch.reciprocal(1 - z * z)
    return Derivatives(aten.atanh(z), slope, z * slope, scale=2.0, relative=True)


def _log_base(op: Callable[..., Tensor], base: float) -> ElementwiseRule:
    # log_b' = 1 / (z ln b), log_b'' = -1 / (z² ln b).
    def rule(z: Tensor) -> Derivatives:
        reciprocal = torch.reciprocal(z)
        slope = reciprocal / math.log(base)
        return Derivatives(op(z), slope, reciprocal, scale=-1.0, relative=True)

    return rule


def _exp2(z: Tensor) -> Derivatives:
    value = aten.exp2(z)
    return Derivatives(value, math.log(2.0) * value, value, scale=math.log(2.0) ** 2)


def _pow(z: Tensor, exponent: float) -> Derivatives:
    value = aten.pow(z, exponent)
    if not isinstance(exponent, (int, float)):  # a tensor of exponents
        slope = exponent * aten.pow(z, exponent - 1)
        return Derivatives(value, slope, exponent * (exponent - 1) * aten.pow(z, exponent - 2))
    if exponent == 2:
        return Derivatives(value, 2 * z, torch.ones_like(z), scale=2.0)
    if exponent == 1:
        return Derivatives(value, torch.ones_like(z), torch.zeros_like(z))
    slope = exponent * aten.pow(z, exponent - 1)
    return Derivatives(value, slope, exponent * (exponent - 1) * aten.pow(z, exponent - 2))


def _piecewise_linear(op: Callable[..., Tensor], slope: Callable[..., Tensor]) -> ElementwiseRule:
    """A rule for an elementwise function linear on each piece: σ'' = 0 (almost everywhere)."""

    def rule(z: Tensor, *arguments) -> Derivatives:
        return Derivatives(op(z, *arguments), slope(z, *arguments), torch.zeros_like(z))

    return rule


def _clamp_slope(z: Tensor, low=None, high=None) -> Tensor:
    inside = torch.ones_like(z, dtype=torch.bool)
    if low is not None:
        inside = inside & (z >= low)
    if high is not None:
        inside = inside & (z <= high)
    return inside.to(z.dtype)


ELEMENTWISE_RULES: dict[object, ElementwiseRule] = {
    aten.tanh.default: _tanh,
    aten.sin.default: _sin,
    aten.cos.default: _cos,
    aten.exp.default: _exp,
    aten.log.default: _log,
    aten.log1p.default: _log1p,
    aten.expm1.default: _expm1,
    aten.sqrt.default: _sqrt,
    aten.rsqrt.default: _rsqrt,
    aten.reciprocal.default: _reciprocal,
    aten.sigmoid.default: _sigmoid,
    aten.softplus.default: _softplus,
    aten.silu.default: _silu,
    aten.gelu.default: _gelu,
    aten.erf.default: _erf,
    aten.sinh.default: _sinh,
    aten.cosh.default: _cosh,
    aten.atan.default: _atan,
    aten.tan.default: _tan,
    aten.asin.default: _asin,
    aten.acos.default: _acos,
    aten.asinh.default: _asinh,
    aten.acosh.default: _acosh,
    aten.atanh.default: _atanh,
    aten.log2.default: _log_base(aten.log2, 2.0),
    aten.log10.default: _log_base(aten.log10, 10.0),
    aten.exp2.default: _exp2,
    aten.pow.Tensor_Scalar: _pow,
    aten.abs.default: _piecewise_linear(aten.abs, lambda z: torch.sign(z)),
    aten.relu.default: _piecewise_linear(aten.relu, lambda z: (z > 0).to(z.dtype)),
    aten.clamp.default: _piecewise_linear(aten.clamp, _clamp_slope),
    aten.clamp_min.default: _piecewise_linear(aten.clamp_min, lambda z, low: _clamp_slope(z, low)),
    aten.clamp_max.default: _piecewise_linear(
        aten.clamp_max, lambda z, high: _clamp_slope(z, None, high)
    ),
}


def register_elementwise(
    op: object, rule: ElementwiseRule, higher: Callable[..., list[Tensor]] | None = None
) -> None:
    """Teach the Taylor pass one more elementwise function of a single tensor.

    Args:
        op: the aten operation as it appears in a traced model, e.g. `torch.ops.aten.erfc`
            (every overload) or `torch.ops.aten.erfc.default` (one).
        rule: `rule(z, *arguments) -> (σ(z), σ'(z), σ''(z))`, tensors shaped like z, or a
            `Derivatives`; `arguments` are the operation's other, constant arguments.
        higher: for derivatives of order >= 3 (`u.d("x", order=3)`) by the univariate pass,
            `higher(z, degree, *arguments) -> [σ(z), σ'(z), ..., σ^(degree)(z)]`; without it
            those come from nested forward mode (`pinn.derivatives.univariate`).

    Example, for erfc(z) = 1 - erf(z):

        def erfc(z):
            slope = -2 / math.sqrt(math.pi) * torch.exp(-z * z)
            return torch.special.erfc(z), slope, -2 * z * slope
        register_elementwise(torch.ops.aten.erfc, erfc)
    """
    if not callable(rule):
        raise TypeError(f"rule must be callable, got {type(rule).__name__}")
    ELEMENTWISE_RULES[op] = rule
    if higher is not None:
        # Imported here: the higher rules build on this module's table.
        from pinn.derivatives.elementwise_higher import register_higher

        register_higher(op, higher)


def derivatives_of(op: object, z: Tensor, arguments: tuple, **options) -> Derivatives:
    """σ, σ', σ'' of the elementwise `op` at z, from its registered rule."""
    rule = elementwise_rule(op)
    result = rule(z, *arguments, **options)
    return result if isinstance(result, Derivatives) else Derivatives(*result)


def elementwise_rule(op: object) -> ElementwiseRule | None:
    """The rule for an aten overload (or its packet), None if there is none."""
    rule = ELEMENTWISE_RULES.get(op)
    if rule is None and hasattr(op, "overloadpacket"):
        rule = ELEMENTWISE_RULES.get(op.overloadpacket)
    return rule
