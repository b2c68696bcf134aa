"""The residual engine: a network's input derivatives at a batch of points.

    gradient(f, x)      -> (N, m, d)
    hessian_diag(f, x)  -> (N, m, d)     only the d diagonal second derivatives
    laplacian(f, x)     -> (N, m)
    hessian(f, x)       -> (N, m, d, d)  full, for mixed terms
    derivative(f, x, i, order) -> (N, m) d^order u / dx_i^order

Inside: the lazy `Field` a residual reads (`field`), the engines that fill it (`engines`), the
forward Taylor pass over a traced model (`taylor`, `taylor_pass`, `dependencies`, `rules`,
`elementwise`, `orders`), the univariate pass for orders >= 3 (`univariate`, `series`,
`elementwise_higher`) and the stochastic Laplacian estimators (`stochastic`).
"""

from pinn.derivatives.elementwise import register_elementwise
from pinn.derivatives.functions import (
    check_pointwise,
    derivative,
    gradient,
    hessian,
    hessian_diag,
    laplacian,
)
from pinn.derivatives.rules import register_taylor_rule

__all__ = [
    "check_pointwise",
    "derivative",
    "gradient",
    "hessian",
    "hessian_diag",
    "laplacian",
    "register_elementwise",
    "register_taylor_rule",
]
