"""Truncated power series along one direction: the arithmetic of a univariate Taylor pass.

Along x(t) = x + t v, every tensor the model computes is a series in t,

    z(t) = z_0 + z_1 t + z_2 t² + ... + z_K t^K        z_n = (d^n z / dt^n) / n!

and the derivatives of order 1..K of the output along v are n! times its coefficients. The pass
carries the coefficients z_1..z_K as the K rows of a `Terms`' first-order terms (the
`Univariate` order marks it), so every operation linear in its input (views, sums, cat,
select, Linear layers with constant weights) keeps its ordinary rule, applied to each row.
Only two kinds of operations need more:

    products a b          Leibniz:      c_n = Σ_{i=0}^{n} a_i b_{n-i}
    elementwise σ(z)      Faà di Bruno: σ(z_0 + δ) = Σ_j σ^(j)(z_0) δ^j / j!,  δ = Σ_{n≥1} z_n t^n

Normalised coefficients keep both rules free of binomials, and one pass costs about K² (rather
than 2^K, for K nested first-order passes) elementwise products per nonlinear operation.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch

from pinn.derivatives.orders import Order

Tensor = torch.Tensor
Product = Callable[[Tensor, Tensor], Tensor]


class Univariate(Order):
    """The order of a univariate pass of `degree` K: the first-order terms hold the K
    coefficients z_1..z_K, there are no second-order rows (products and elementwise functions
    have rules of their own, so `quadratic` and `cross` are never asked for)."""

    rows = 0

    def __init__(self, degree: int):
        self.degree = degree

    def quadratic(self, first: Tensor) -> None:
        raise NotImplementedError("a univariate pass carries no second-order rows")

    def cross(self, a: Tensor, b: Tensor, product: Product) -> None:
        raise NotImplementedError("a univariate pass carries no second-order rows")


def series_product(
    a: Sequence[Tensor], b: Sequence[Tensor], product: Product = torch.mul
) -> list[Tensor]:
    """Coefficients 1..K of a(t) b(t) for any bilinear `product` (elementwise, matmul).

    a, b: the K + 1 coefficients a_0..a_K (a_0 the value), broadcastable under `product`.
    Returns c_1..c_K.
    """
    degree = len(a) - 1
    return [_sum(product(a[i], b[n - i]) for i in range(n + 1)) for n in range(1, degree + 1)]


def compose(derivatives: Sequence[Tensor], rows: Sequence[Tensor]) -> list[Tensor]:
    """Coefficients 1..K of σ(z(t)) by Faà di Bruno, from σ^(j)(z_0) and z's coefficients.

    derivatives: σ^(0..K)(z_0), tensors like z_0; rows: z_1..z_K, broadcastable to z_0.
    Returns y_1..y_K, y_n = Σ_{j=1}^{n} σ^(j)(z_0) / j! [t^n] δ^j.
    """
    degree = len(rows)
    # powers[j][n]: the coefficient of t^n in δ^j (n >= j), built one factor of δ at a time.
    powers = {1: {n: rows[n - 1] for n in range(1, degree + 1)}}
    for j in range(2, degree + 1):
        previous = powers[j - 1]
        powers[j] = {
            n: _sum(previous[m] * rows[n - m - 1] for m in range(j - 1, n))
            for n in range(j, degree + 1)
        }
    return [
        _sum((derivatives[j] / math.factorial(j)) * powers[j][n] for j in range(1, n + 1))
        for n in range(1, degree + 1)
    ]


def to_derivatives(coefficients: Tensor) -> Tensor:
    """(K, ...) coefficients z_1..z_K -> (K, ...) derivatives n! z_n."""
    factorials = [float(math.factorial(n)) for n in range(1, coefficients.shape[0] + 1)]
    scale = torch.tensor(factorials, dtype=coefficients.dtype, device=coefficients.device)
    return coefficients * scale.view(-1, *[1] * (coefficients.ndim - 1))


def _sum(terms) -> Tensor:
    terms = iter(terms)
    total = next(terms)
    for term in terms:
        total = total + term
    return total
