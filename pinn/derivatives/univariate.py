"""Derivatives of any order along one input: a univariate Taylor pass, and nested forward mode.

    taylor_derivatives(model, x, input, order)  one forward pass carrying the series of
                                                every tensor along e_input to degree `order`
    jvp_derivative(f, x, input, order)          nested torch.func.jvp on the whole batch
    per_point_jvp_derivative(f, x, input, order)  the same under vmap, point by point

The Taylor pass reuses the traced graph of `pinn.derivatives.taylor_pass`: the coefficients
ride as first-order terms, linear operations keep their rules, products and elementwise
functions switch to the series rules (`pinn.derivatives.series`). It needs every elementwise
function's derivatives up to the order (`pinn.derivatives.elementwise_higher`); where one is
missing, `univariate_supported` says so and nested forward mode is the way.

Nested forward mode is exact for any pointwise model: with the tangent e_input on every row,
one jvp of the batch gives every point's directional derivative (row i depends only on row i),
and `order` nested jvps give the order-th. It costs about 2^order forward passes and stays
differentiable in the parameters, without the points requiring grad.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import torch

from pinn.derivatives.series import Univariate, to_derivatives
from pinn.derivatives.taylor_pass import (
    TaylorModeUnsupported,
    propagate,
    trace_model,
    unsupported_message,
)

Tensor = torch.Tensor
Model = Callable[[Tensor], Tensor]


class Series(NamedTuple):
    """value (N, m) and derivatives (N, m, K): d^n u / dx_input^n for n = 1..K."""

    value: Tensor
    derivatives: Tensor


def taylor_derivatives(model: Model, x: Tensor, input: int, order: int) -> Series:
    """Value and derivatives of orders 1..order along input `input`, in one forward pass.

    x: (N, d) points. Differentiable in the model's parameters (not in x).

    Raises:
        TaylorModeUnsupported: the model uses an operation with no rule of that order
            (`univariate_supported` names it).
    """
    check_order(order)
    traced = trace_model(model, x)
    supported, reason = _supported(traced)
    if not supported:
        raise TaylorModeUnsupported(reason)
    seed = x.new_zeros(order, 1, x.shape[1])
    seed[0, 0, input] = 1.0  # x(t) = x + t e_input: coefficient 1 is e_input, the rest 0
    # (input, order) make the seed and order: a hard constraint's terms are kept for the next
    # pass at the same points (`propagate`).
    terms = propagate(traced, model, x, seed, Univariate(order), reuse=("series", input, order))
    value, coefficients = terms.value, terms.first
    if value.ndim == 1:
        value, coefficients = value[:, None], coefficients[..., None]
    return Series(value, to_derivatives(coefficients).movedim(0, -1))


def univariate_supported(model: object, x: Tensor) -> tuple[bool, str]:
    """(True, "") if `taylor_derivatives` can run `model` at points shaped like x (N, d), else
    (False, why)."""
    try:
        traced = trace_model(model, x)
    except TaylorModeUnsupported as error:
        return False, str(error)
    return _supported(traced)


def _supported(traced) -> tuple[bool, str]:
    if traced.unsupported:
        return False, unsupported_message(traced.unsupported)
    if traced.without_series:
        return False, (
            f"{traced.without_series[0]} (give an elementwise function `higher=` in "
            "pinn.register_elementwise)"
        )
    return True, ""


def jvp_derivative(f: Model, x: Tensor, input: int, order: int) -> Tensor:
    """(N, m) d^order u / dx_input^order by `order` nested jvps of the whole batch."""
    check_order(order)
    tangent = torch.zeros_like(x)
    tangent[:, input] = 1.0
    return _nested(lambda points: _as_matrix(f(points)), tangent, order)(x.detach())


def per_point_jvp_derivative(f: Model, x: Tensor, input: int, order: int) -> Tensor:
    """(N, m) the same, by nested jvps of the model at one point under vmap (the torch.func
    baseline)."""
    check_order(order)
    unit = torch.zeros_like(x[0])
    unit[input] = 1.0
    single = _nested(lambda point: f(point[None]).reshape(-1), unit, order)
    return torch.func.vmap(single)(x)


def _nested(g: Callable[[Tensor], Tensor], tangent: Tensor, order: int):
    for _ in range(order):
        g = _along(g, tangent)
    return g


def _along(g: Callable[[Tensor], Tensor], tangent: Tensor) -> Callable[[Tensor], Tensor]:
    return lambda points: torch.func.jvp(g, (points,), (tangent,))[1]


def _as_matrix(values: Tensor) -> Tensor:
    return values[:, None] if values.ndim == 1 else values


def check_order(order: object) -> int:
    """`order` if it is an int >= 1, else a ValueError saying what is allowed."""
    if isinstance(order, bool) or not isinstance(order, int) or order < 1:
        raise ValueError(
            f"order must be an int >= 1 (1 for du/dx, 2 for d²u/dx², 3 for d³u/dx³, ...), "
            f"got {order!r}"
        )
    return order
