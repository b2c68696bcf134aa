"""Exact solution of the viscous Burgers problem of Raissi et al. (2019), to validate PINN runs.

Equation::

    u_t + u u_x = nu u_xx,   x in [-1, 1], t in [0, 1],   nu = 0.01 / pi,
    u(x, 0) = -sin(pi x),    u(-1, t) = u(1, t) = 0.

Formula (Cole-Hopf transformation, as given by Basdevant et al. 1986)::

    u(x, t) = - I[sin(pi (x - eta))] / I[1],
    I[g] = integral over the real line of g f(x - eta) exp(-eta^2 / (4 nu t)) d eta,
    f(y) = exp(-cos(pi y) / (2 pi nu)),

with u(x, 0) = -sin(pi x).

Method: substitute eta = sqrt(4 nu t) z, so that both integrals carry the weight exp(-z^2), and
apply Gauss-Hermite quadrature (``numpy.polynomial.hermite.hermgauss``). Since 1 / (2 pi nu) = 50,
f spans e^-50..e^50 and the Hermite weights go down to ~6e-79 (100 nodes), so each term is kept as a
logarithm, -cos(pi y) / (2 pi nu) + log(w_k), and the largest exponent of each point is subtracted
before exponentiating (the common factor cancels in the ratio); everything is float64. For t near
1 the integrand is sharply peaked near z = +-7 (x near the shock at 0), which sets the node count.

Accuracy measured against an independent trapezoid rule in eta (itself converged to ~1e-15) on
x in [-1, 1] (densely around the shock at x = 0) and t in [1e-6, 1]: max |error| is 2e-7 with 50
nodes, 1e-9 with 60, 1e-11 with 70, 1e-13 with 80 and ~4e-15 (round-off) from 90 nodes on; the
default of 100 nodes leaves a margin. The 256 x 100 grid of `reference_grid` takes ~0.06 s (0.1 s
on a first call). The steepest shock, du/dx(0, t) at t = 1.6037 / pi ~ 0.5105, comes out as
-152.00516, the value of Basdevant et al.; at t = 0.75 the slope has relaxed to -119.167. For t
well beyond 1 the Gaussian widens (in eta) and more nodes may be needed.
"""

from __future__ import annotations

import operator
from functools import lru_cache

import numpy as np
from numpy.typing import ArrayLike, NDArray

NU = 0.01 / np.pi
DEFAULT_NODES = 100
MAX_NODES = 350
# Points x nodes evaluated at once: bounds each temporary array to ~8 MiB for any input size.
_CHUNK_ELEMENTS = 1 << 20


@lru_cache(maxsize=8)
def _hermite_rule(nodes: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Gauss-Hermite nodes z and log-weights log(w), both of shape (nodes,), read-only."""
    # hermgauss's weights overflow float64 (NaN) past ~370 nodes; refuse before that.
    if not isinstance(nodes, int) or not 2 <= nodes <= MAX_NODES:
        raise ValueError(f"nodes must be an int in [2, {MAX_NODES}], got {nodes!r}")
    z, w = np.polynomial.hermite.hermgauss(nodes)
    log_w = np.log(w)
    z.flags.writeable = False
    log_w.flags.writeable = False
    return z, log_w


def _quadrature(
    x: NDArray[np.float64],
    t: NDArray[np.float64],
    nu: float,
    z: NDArray[np.float64],
    log_w: NDArray[np.float64],
) -> NDArray[np.float64]:
    """The Cole-Hopf ratio at points x, t of shape (n,) with the rule (z, log_w); returns (n,)."""
    scale = np.sqrt(4.0 * nu * t)[:, None]
    y = x[:, None] - scale * z  # (n, nodes): the argument x - eta of f
    exponent = -np.cos(np.pi * y) / (2.0 * np.pi * nu) + log_w
    # Shift so the largest term is exp(0) = 1: no overflow, and the denominator is >= 1.
    exponent -= exponent.max(axis=1, keepdims=True)
    weight = np.exp(exponent)
    return -(np.sin(np.pi * y) * weight).sum(axis=1) / weight.sum(axis=1)


def cole_hopf(
    x: ArrayLike, t: ArrayLike, nu: float = NU, nodes: int = DEFAULT_NODES
) -> NDArray[np.float64]:
    """The exact u(x, t) of the Burgers problem above, by Gauss-Hermite quadrature.

    Args:
        x: positions, any shape broadcastable with t (the formula holds for any real x).
        t: times >= 0; t == 0 returns -sin(pi x) exactly.
        nu: viscosity (the benchmark's 0.01 / pi by default).
        nodes: Gauss-Hermite nodes, 2 to MAX_NODES; 100 gives round-off accuracy (~4e-15) for
            t in [0, 1].

    Returns:
        u as float64, of the broadcast shape of x and t.
    """
    x_b, t_b = np.broadcast_arrays(np.asarray(x, np.float64), np.asarray(t, np.float64))
    if np.any(t_b < 0):
        raise ValueError("cole_hopf needs t >= 0")
    z, log_w = _hermite_rule(operator.index(nodes))
    flat_x, flat_t = x_b.ravel(), t_b.ravel()
    u = np.empty(flat_x.shape, np.float64)
    step = max(1, _CHUNK_ELEMENTS // nodes)
    for start in range(0, flat_x.size, step):
        part = slice(start, start + step)
        u[part] = _quadrature(flat_x[part], flat_t[part], nu, z, log_w)
    # At t = 0 the Gaussian collapses to a delta; take the initial condition exactly.
    initial = flat_t == 0
    u[initial] = -np.sin(np.pi * flat_x[initial])
    return u.reshape(x_b.shape)


def reference_grid(nx: int = 256, nt: int = 100) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The exact solution on the grid of Raissi et al. 2019's burgers_shock data.

    x = linspace(-1, 1, nx), t = linspace(0, 0.99, nt). The order is t-major, as their X_star
    and u_star: row i * nx + j holds (x[j], t[i]), i.e. all of x at t[0], then at t[1], ...

    Returns:
        points of shape (nx * nt, 2) holding (x, t), and values of shape (nx * nt,), float64.
    """
    x = np.linspace(-1.0, 1.0, nx)
    t = np.linspace(0.0, 0.99, nt)
    grid_x, grid_t = np.meshgrid(x, t)  # (nt, nx) each: t along rows, so ravel is t-major
    points = np.stack([grid_x.ravel(), grid_t.ravel()], axis=1)
    return points, cole_hopf(points[:, 0], points[:, 1])
