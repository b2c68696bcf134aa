"""Elementwise functions' derivatives of every order, for the univariate Taylor pass.

The univariate pass (`pinn.derivatives.univariate`) composes σ with a series of degree K by
Faà di Bruno (`pinn.derivatives.series.compose`), which needs σ, σ', ..., σ^(K) at z:

    rule(z, degree, *arguments, **options) -> [σ(z), σ'(z), ..., σ^(degree)(z)]

with tensors shaped like z and the value computed by the operation the model called. Most are
closed forms: cycles (sin, cos), powers (z^p, 1/z, log), polynomials in the value for functions
whose slope is one (tanh' = 1 - tanh², sigmoid' = s - s²), and products with z (silu, gelu).
A function without a rule here makes the univariate pass refuse the model, and its
derivatives of order >= 3 come from nested forward mode instead (`univariate_supported`).

A rule extends the σ rule it was registered with (`pinn.derivatives.elementwise`): after
`register_elementwise` replaces σ without giving `higher`, the old higher rule no longer applies.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from pinn.derivatives.elementwise import ELEMENTWISE_RULES, derivatives_of
from pinn.derivatives.series import compose, series_product

Tensor = torch.Tensor
aten = torch.ops.aten
HigherRule = Callable[..., list[Tensor]]

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_GELU_TANH_CUBIC = 0.044715


# ---- polynomials in the value: σ' = G(σ) gives σ^(n) = P_n(σ), P_{n+1} = P_n' G ------------


def _polynomials(generator: list[float], degree: int) -> list[list[float]]:
    polynomials = [[0.0, 1.0]]  # P_0(s) = s
    for _ in range(degree):
        last = polynomials[-1]
        slope = [k * last[k] for k in range(1, len(last))]
        polynomials.append(_times(slope, generator))
    return polynomials


def _times(a: list[float], b: list[float]) -> list[float]:
    product = [0.0] * (len(a) + len(b) - 1)
    for i, p in enumerate(a):
        for j, q in enumerate(b):
            product[i + j] += p * q
    return product


def _horner(coefficients: list[float], s: Tensor) -> Tensor:
    result = torch.full_like(s, coefficients[-1])
    for c in reversed(coefficients[:-1]):
        result = result * s + c
    return result


def _in_value(value: Tensor, generator: list[float], degree: int) -> list[Tensor]:
    return [value] + [_horner(p, value) for p in _polynomials(generator, degree)[1:]]


def _tanh(z: Tensor, degree: int) -> list[Tensor]:
    return _in_value(aten.tanh(z), [1.0, 0.0, -1.0], degree)  # tanh' = 1 - tanh²


def _sigmoid(z: Tensor, degree: int) -> list[Tensor]:
    return _in_value(aten.sigmoid(z), [0.0, 1.0, -1.0], degree)  # s' = s - s²


# ---- cycles, exponentials and powers ------------------------------------------------------


def _sin(z: Tensor, degree: int) -> list[Tensor]:
    value, cosine = aten.sin(z), torch.cos(z)
    cycle = [value, cosine, -value, -cosine]
    return [cycle[n % 4] for n in range(degree + 1)]


def _cos(z: Tensor, degree: int) -> list[Tensor]:
    value, sine = aten.cos(z), torch.sin(z)
    cycle = [value, -sine, -value, sine]
    return [cycle[n % 4] for n in range(degree + 1)]


def _exp(z: Tensor, degree: int) -> list[Tensor]:
    return [aten.exp(z)] * (degree + 1)


def _expm1(z: Tensor, degree: int) -> list[Tensor]:
    return [aten.expm1(z)] + [torch.exp(z)] * degree


def _sinh(z: Tensor, degree: int) -> list[Tensor]:
    pair = [aten.sinh(z), torch.cosh(z)]
    return [pair[n % 2] for n in range(degree + 1)]


def _cosh(z: Tensor, degree: int) -> list[Tensor]:
    pair = [aten.cosh(z), torch.sinh(z)]
    return [pair[n % 2] for n in range(degree + 1)]


def _logarithm(value: Tensor, base: Tensor, degree: int) -> list[Tensor]:
    # log^(n)(base) = (-1)^(n-1) (n-1)! / base^n
    reciprocal = torch.reciprocal(base)
    return [value] + [
        (-1) ** (n - 1) * math.factorial(n - 1) * reciprocal**n for n in range(1, degree + 1)
    ]


def _log(z: Tensor, degree: int) -> list[Tensor]:
    return _logarithm(aten.log(z), z, degree)


def _log1p(z: Tensor, degree: int) -> list[Tensor]:
    return _logarithm(aten.log1p(z), 1 + z, degree)


def _power(value: Tensor, z: Tensor, exponent, degree: int) -> list[Tensor]:
    """z^p and its derivatives p (p-1) ... (p-n+1) z^(p-n); exactly 0 past an integer p >= 0."""
    derivatives, factor = [value], 1.0
    for n in range(1, degree + 1):
        factor = factor * (exponent - (n - 1))
        whole = isinstance(exponent, (int, float)) and float(exponent).is_integer()
        if whole and 0 <= exponent < n:
            derivatives.append(torch.zeros_like(z))
        else:
            derivatives.append(factor * aten.pow(z, exponent - n))
    return derivatives


def _pow(z: Tensor, degree: int, exponent) -> list[Tensor]:
    return _power(aten.pow(z, exponent), z, exponent, degree)


def _sqrt(z: Tensor, degree: int) -> list[Tensor]:
    return _power(aten.sqrt(z), z, 0.5, degree)


def _rsqrt(z: Tensor, degree: int) -> list[Tensor]:
    return _power(aten.rsqrt(z), z, -0.5, degree)


def _reciprocal(z: Tensor, degree: int) -> list[Tensor]:
    value = aten.reciprocal(z)  # (1/z)^(n) = (-1)^n n! / z^(n+1)
    derivatives = [(-1) ** n * math.factorial(n) * value ** (n + 1) for n in range(1, degree + 1)]
    return [value, *derivatives]


# ---- functions of the sigmoid and the normal density --------------------------------------


def _softplus(z: Tensor, degree: int, beta: float = 1.0, threshold: float = 20.0) -> list[Tensor]:
    # softplus_β' = s(β z), so softplus^(n) = β^(n-1) s^(n-1)(β z); torch returns z itself where
    # β z > threshold, whose slope is 1 and higher derivatives 0.
    linear = beta * z > threshold
    sigmoid = _sigmoid(beta * z, degree - 1)
    derivatives = [aten.softplus(z, beta, threshold)]
    for n in range(1, degree + 1):
        inside = 1.0 if n == 1 else 0.0
        derivatives.append(torch.where(linear, inside, beta ** (n - 1) * sigmoid[n - 1]))
    return derivatives


def _times_z(z: Tensor, factor: list[Tensor]) -> list[Tensor]:
    """(z f)^(n) = z f^(n) + n f^(n-1), from f^(0..degree)."""
    return [z * factor[0]] + [z * factor[n] + n * factor[n - 1] for n in range(1, len(factor))]


def _silu(z: Tensor, degree: int) -> list[Tensor]:
    return [aten.silu(z)] + _times_z(z, _sigmoid(z, degree))[1:]


def _hermite(z: Tensor, degree: int, physicists: bool) -> list[Tensor]:
    """He_0..He_degree(z) (probabilists') or H_0..H_degree(z) (physicists')."""
    scale = 2.0 if physicists else 1.0
    polynomials = [torch.ones_like(z), scale * z]
    for m in range(1, degree):
        polynomials.append(scale * (z * polynomials[m] - m * polynomials[m - 1]))
    return polynomials[: degree + 1]


def _gelu(z: Tensor, degree: int, approximate: str = "none") -> list[Tensor]:
    if approximate == "tanh":
        return _gelu_tanh(z, degree)
    # gelu = z Φ(z), Φ^(n) = φ^(n-1) = (-1)^(n-1) He_(n-1)(z) φ(z).
    density = _INV_SQRT_2PI * torch.exp(-0.5 * z * z)
    hermite = _hermite(z, degree, physicists=False)
    normal = [torch.special.ndtr(z)] + [(-1) ** n * hermite[n] * density for n in range(degree)]
    return [aten.gelu(z)] + _times_z(z, normal)[1:]


def _gelu_tanh(z: Tensor, degree: int) -> list[Tensor]:
    # z (1 + tanh u) / 2, u = c (z + a z³): composed as series in t of z + t.
    line = [z, torch.ones_like(z)] + [torch.zeros_like(z)] * (degree - 1)
    cube = [z**3, *series_product(line, [z * z, *series_product(line, line)])]
    inner = [_SQRT_2_OVER_PI * (p + _GELU_TANH_CUBIC * q) for p, q in zip(line, cube)]
    tanh = _tanh(inner[0], degree)
    half = [0.5 * (1 + tanh[0]), *(0.5 * c for c in compose(tanh, inner[1:]))]
    coefficients = series_product(line, half)
    return [aten.gelu(z, approximate="tanh")] + [
        math.factorial(n) * c for n, c in enumerate(coefficients, start=1)
    ]


def _erf(z: Tensor, degree: int) -> list[Tensor]:
    # erf^(n) = 2/√π (-1)^(n-1) H_(n-1)(z) e^(-z²).
    gaussian = (2 / math.sqrt(math.pi)) * torch.exp(-z * z)
    hermite = _hermite(z, degree, physicists=True)
    return [aten.erf(z)] + [(-1) ** n * hermite[n] * gaussian for n in range(degree)]


def _tan(z: Tensor, degree: int) -> list[Tensor]:
    return _in_value(aten.tan(z), [1.0, 0.0, 1.0], degree)  # tan' = 1 + tan²


# ---- inverse functions: the slope is a power of a quadratic in z ---------------------------


def _slopes_of_quadratic_power(
    z: Tensor, degree: int, constant: float, sign: float, exponent: float
) -> list[Tensor]:
    """σ', ..., σ^(degree) at z for σ' = (constant + sign z²)^exponent: the series of σ'(z + t),
    a power of a quadratic in t, gives σ^(n)(z) = (n-1)! [t^(n-1)] σ'(z + t)."""
    inner = constant + sign * z * z
    outer = _power(aten.pow(inner, exponent), inner, exponent, degree - 1)
    # The quadratic's own coefficients along t: 2 sign z, sign, then none.
    rows = [2 * sign * z, torch.full_like(z, sign)] + [torch.zeros_like(z)] * (degree - 3)
    slope_series = [outer[0], *compose(outer, rows[: degree - 1])]
    return [math.factorial(n - 1) * slope_series[n - 1] for n in range(1, degree + 1)]


def _inverse(op: object, constant: float, sign: float, exponent: float, flip: float = 1.0):
    """The higher rule of an inverse function whose slope is flip (constant + sign z²)^exponent."""

    def rule(z: Tensor, degree: int) -> list[Tensor]:
        slopes = _slopes_of_quadratic_power(z, degree, constant, sign, exponent)
        return [op(z)] + [flip * slope for slope in slopes]

    return rule


def _scaled(op: object, base: HigherRule, scale: float) -> HigherRule:
    """σ(z) = base(z) scaled by `scale` past the value (log2 = log / ln 2)."""

    def rule(z: Tensor, degree: int) -> list[Tensor]:
        return [op(z)] + [scale * d for d in base(z, degree)[1:]]

    return rule


def _exp2(z: Tensor, degree: int) -> list[Tensor]:
    value = aten.exp2(z)
    return [value] + [value * math.log(2.0) ** n for n in range(1, degree + 1)]


def _piecewise_linear(op: object) -> HigherRule:
    """σ and σ' from the σ rule, 0 beyond (almost everywhere), for relu, abs, clamp."""

    def rule(z: Tensor, degree: int, *arguments) -> list[Tensor]:
        first = derivatives_of(op, z, arguments)
        return [first.value, first.slope] + [torch.zeros_like(z)] * (degree - 1)

    return rule


# op -> (the σ rule it extends, its higher rule); see `higher_rule`.
HIGHER_RULES: dict[object, tuple[object, HigherRule]] = {}


def register_higher(op: object, rule: HigherRule) -> None:
    """Give the elementwise `op` (registered with `register_elementwise`) derivatives of every
    order: `rule(z, degree, *arguments, **options) -> [σ(z), σ'(z), ..., σ^(degree)(z)]`."""
    if op not in ELEMENTWISE_RULES:
        raise KeyError(f"{op} has no elementwise rule; register one with register_elementwise")
    if not callable(rule):
        raise TypeError(f"rule must be callable, got {type(rule).__name__}")
    HIGHER_RULES[op] = (ELEMENTWISE_RULES[op], rule)


def higher_rule(op: object) -> HigherRule | None:
    """The higher rule for an aten overload (or its packet), resolved as its σ rule is; None if
    there is none, or if σ's rule was replaced after it was given."""
    key = op if op in ELEMENTWISE_RULES else getattr(op, "overloadpacket", None)
    entry = HIGHER_RULES.get(key)
    if entry is None or ELEMENTWISE_RULES.get(key) is not entry[0]:
        return None
    return entry[1]


for _op, _rule in {
    aten.tanh.default: _tanh,
    aten.sigmoid.default: _sigmoid,
    aten.sin.default: _sin,
    aten.cos.default: _cos,
    aten.exp.default: _exp,
    aten.expm1.default: _expm1,
    aten.sinh.default: _sinh,
    aten.cosh.default: _cosh,
    aten.log.default: _log,
    aten.log1p.default: _log1p,
    aten.pow.Tensor_Scalar: _pow,
    aten.sqrt.default: _sqrt,
    aten.rsqrt.default: _rsqrt,
    aten.reciprocal.default: _reciprocal,
    aten.softplus.default: _softplus,
    aten.silu.default: _silu,
    aten.gelu.default: _gelu,
    aten.erf.default: _erf,
    aten.tan.default: _tan,
    aten.atan.default: _inverse(aten.atan, 1.0, 1.0, -1.0),  # atan' = 1 / (1 + z²)
    aten.asin.default: _inverse(aten.asin, 1.0, -1.0, -0.5),  # asin' = (1 - z²)^(-1/2)
    aten.acos.default: _inverse(aten.acos, 1.0, -1.0, -0.5, flip=-1.0),
    aten.asinh.default: _inverse(aten.asinh, 1.0, 1.0, -0.5),
    aten.acosh.default: _inverse(aten.acosh, -1.0, 1.0, -0.5),  # (z² - 1)^(-1/2)
    aten.atanh.default: _inverse(aten.atanh, 1.0, -1.0, -1.0),
    aten.log2.default: _scaled(aten.log2, _log, 1 / math.log(2.0)),
    aten.log10.default: _scaled(aten.log10, _log, 1 / math.log(10.0)),
    aten.exp2.default: _exp2,
    **{
        op: _piecewise_linear(op)
        for op in (aten.abs.default, aten.relu.default, aten.clamp.default)
        + (aten.clamp_min.default, aten.clamp_max.default)
    },
}.items():
    register_higher(_op, _rule)
