"""Reference solution of the lid-driven cavity (problems/cavity.py) at any Reynolds number: our own
steady Navier-Stokes solver, to validate PINN runs where no published table fits.

Problem, in the stream function psi (u = psi_y, v = -psi_x) on [0, 1]²::

    (1 / Re) ∇⁴psi - psi_y (∇²psi)_x + psi_x (∇²psi)_y = 0,
    psi = 0 on every wall,  psi_x = 0 on x = 0, 1,  psi_y = 0 on y = 0,  psi_y = lid(x) on y = 1,

with the lid of problems/cavity.py, lid(x) = 1 - cosh(c (x - 1/2)) / cosh(c / 2), c =
`lid_sharpness` (50 there; `math.inf` gives the classical lid u = 1, "sharp" below).

Method: Chebyshev collocation with the corner singularities subtracted, as Botella & Peyret
(1998), "Benchmark spectral results on the lid-driven cavity flow", Computers & Fluids 27, 421-433,
did for the sharp lid. Neither lid is compatible with the walls in the two top corners: the sharp
one jumps from 1 to 0, and the regularised one leaves its corner with slope a = c tanh(c / 2)
where continuity (u_x + v_y = 0, v_y = 0 on the side wall) wants 0. Each corner's Stokes flow is
known in closed form (local coordinates: xi along the lid away from the corner, eta into the
cavity, r and theta their polar ones, the walls at theta = 0 and pi / 2):

- regularised lid, u = a xi on the lid: psi_s = a r² (pi/8 - theta/2 - (pi/8) cos 2theta -
  (1/4) sin 2theta), whose vorticity is bounded but jumps at the corner;
- sharp lid, u = 1 on the lid (G. I. Taylor's scraper): psi_s = r (B sin theta + C theta cos theta
  + D theta sin theta), C = 1 / (pi²/4 - 1), D = C pi / 2, B = -C pi² / 4.

The solution is written psi = lift + x (1 - x) y (1 - y) q(x, y). The lift holds every wall
condition exactly: psi_s of both top corners, each times the cutoff h(xi) h(eta) (h(s) = 1 - 3 s²
+ 2 s³: 1 to second order at its corner, 0 with its slope on the far walls), plus rest(x) y² (y - 1)
with rest the lid speed those two leave (smooth, rest = rest' = 0 at both ends). The wall factor
clamps the polynomial part on every wall, so it need only be smooth up to the weaker singularities
left. q is the degree-N polynomial that vanishes on the walls, given by its values at the (N - 1)²
interior Chebyshev-Gauss-Lobatto points x_i = (1 + cos(i pi / N)) / 2; the equation is collocated
there and solved by Newton's method with dense LU (`dense_solve`), continuing in Re from the
Stokes flow (steps of at most 2x, shortened where Newton fails) on degree 32, then once on degree
N. The lift's derivatives are exact (theta's are Im((d/dz)^k log z)); the polynomial's are Chebyshev
differentiation of q, times the wall factor's by Leibniz.

Convergence: the max abs change of the centreline values u(0.5, y), v(x, 0.5) at the 129 points
j / 128 from each degree N to the next (lid c = 50; tests/problem/test_cavity_reference.py):

    Re = 100:   N 16 -> 24: 1.3e-2, 24 -> 32: 5.5e-4, 32 -> 40: 6.4e-5, 40 -> 48: 1.1e-5,
                48 -> 64: 5.4e-6
    Re = 1000:  N 32 -> 40: 3.0e-2, 40 -> 48: 6.2e-3, 48 -> 56: 1.5e-3, 56 -> 64: 4.4e-4,
                64 -> 72: 6.5e-5

At Re = 1000 the largest changes sit just under the lid (y = 0.98 to 0.99, where the lid's
corner layers, 1/c = 0.02 wide, cross the boundary layer); below y = 0.9 they are 9.7e-5, 1.9e-5
and 8.4e-6 from 48 on, on v 6.8e-5, 1.7e-5, 5.7e-6. The default degree, 64, is thus within about
1e-4 at Re = 1000 (1e-5 below y = 0.9) and 1e-5 at Re = 100. Cost on one core of a busy 2-core
machine: Re = 1000 at degree 64, 13 s (27 Newton steps on degree 32, then 4 on 64; a step
solves a dense 3969² system, ~2.5 s); degree 48, 3 s; Re = 100 at degree 40, 1 s. The
Re = 1000 centrelines ship with the package (STORED, `centreline_reference`).

Published solutions, at the 17 points a line of Ghia, Ghia & Shin (1982), "High-Re solutions for
incompressible flow using the Navier-Stokes equations and a multigrid method", J. Comput. Phys.
48, 387-411, Tables I and II (a 129² multigrid solve, sharp lid), max abs:

- Re = 100: c = 50 at degree 64 is 4.6e-3 (u, y = 0.8516) and 9.6e-3 (v, x = 0.8594) from Ghia's
  table; the sharp lid 4.9e-3 and 9.3e-3, and c = 50 moves the values from the sharp lid's by
  5.9e-4 (u) and 3.4e-4 (v). Ghia's table is accurate to about 1e-2 there.
- Re = 1000: c = 50 at degree 64 is 3.6e-3 (u, y = 0.1719) and 1.6e-2 (v, x = 0.9453) from
  Ghia's table. Botella & Peyret's sharp-lid values at the same points (their Tables 9 and 10,
  degree 160) are themselves 6.3e-3 (u, y = 0.9531) and 1.8e-2 (v, x = 0.9453) from Ghia's: his
  table is off by up to 2e-2 at Re = 1000, while c = 50 moves the values from Botella & Peyret's
  by 4.6e-3 (u, y = 0.9688) and 2.9e-3 (v, x = 0.0938), eight times its effect at Re = 100.
  Extremes at degree 72: u_min -0.38652 (y = 0.1723), v_max 0.37457 (x = 0.1585), v_min
  -0.52454 (x = 0.9090); the sharp lid's, Botella & Peyret's: -0.3885698, 0.3769447, -0.5270771.
  Erturk, Corke & Gökçöl (2005), Int. J. Numer. Methods Fluids 48, 747-774, publish another fine
  sharp-lid solution (a 601² grid).

The sharp lid is resolved here up to Re = 100 only (degree 64 gives a spurious flow at Re = 1000,
u_min -0.54: its corner needs more than the leading singular term subtracted, or degree 160 as
Botella & Peyret's); larger Re are refused for it. The regularised lid is verified up to Re =
1000 (c = 50); beyond, check the degree yourself as above.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from math import comb
from pathlib import Path

import numpy as np
import torch
from numpy.polynomial import Polynomial
from numpy.polynomial import polynomial as poly
from numpy.typing import ArrayLike, NDArray

# The first degree from which the Re = 1000 centrelines move by < 1e-3 (4.4e-4 from 56).
DEFAULT_DEGREE = 64
# Continuation in Re runs on this degree (or the requested one if lower): cheap Newton steps.
COARSE_DEGREE = 32
# Newton stops once its step is below this, relative to max |q| (absolute below 1).
NEWTON_TOLERANCE = 1e-10
NEWTON_STEPS = 25
# Each continuation step multiplies Re by at most this, from the Stokes flow up to Re = 100.
CONTINUATION_RATIO = 2.0
FIRST_REYNOLDS = 100.0
# The sharp lid is resolved up to here (Re = 1000 needs more than degree 80: below that Newton
# finds a spurious flow, u_min -0.54 at degree 64 against Botella & Peyret's -0.389).
SHARP_MAX_REYNOLDS = 100.0

Array = NDArray[np.float64]

# The cutoff h(s) = 1 - 3 s² + 2 s³; x h(x) + (1 - x) h(1 - x), the lid speed / a that both
# corners' cutoff flows give; and the lift's profile in y, y² (y - 1).
CUTOFF = Polynomial([1.0, 0.0, -3.0, 2.0])
_X = Polynomial([0.0, 1.0])
EDGES = _X * CUTOFF(_X) + (1 - _X) * CUTOFF(1 - _X)
PROFILE = _X**2 * (_X - 1)


def chebyshev(degree: int) -> tuple[Array, Array]:
    """The degree + 1 Chebyshev-Gauss-Lobatto points of [0, 1], x_i = (1 + cos(i pi / N)) / 2
    (from 1 down to 0), and the (N + 1, N + 1) matrix that differentiates a degree-N polynomial's
    values there (Trefethen, "Spectral methods in MATLAB", cheb, with the negative-sum diagonal)."""
    t = np.cos(np.pi * np.arange(degree + 1) / degree)
    weights = np.ones(degree + 1)
    weights[0] = weights[-1] = 2.0
    weights *= (-1.0) ** np.arange(degree + 1)
    d = np.outer(weights, 1 / weights) / (t[:, None] - t[None, :] + np.eye(degree + 1))
    d -= np.diag(d.sum(axis=1))
    return (1 + t) / 2, 2 * d


def interpolation_matrix(degree: int, targets: Array) -> Array:
    """(M, N + 1): values of a degree-N polynomial at the M targets in [0, 1] from its values at
    `chebyshev(degree)`'s points (barycentric formula, exact at the points themselves)."""
    nodes = chebyshev(degree)[0]
    weights = (-1.0) ** np.arange(degree + 1)
    weights[0] = weights[-1] = 0.5
    difference = targets[:, None] - nodes[None, :]
    on_node = difference == 0
    difference[on_node] = 1.0
    matrix = weights / difference
    matrix /= matrix.sum(axis=1, keepdims=True)
    rows, columns = np.nonzero(on_node)
    matrix[rows] = 0.0
    matrix[rows, columns] = 1.0
    return matrix


def lid_speed(x: ArrayLike, lid_sharpness: float) -> Array:
    """u(x, 1) of problems/cavity.py, 1 - cosh(c (x - 1/2)) / cosh(c / 2); 1 for c = inf."""
    return _lid_derivative(np.asarray(x, np.float64), lid_sharpness, 0)


def _lid_derivative(x: Array, c: float, order: int) -> Array:
    """The order-th derivative of the lid speed at x (in exponentials that cannot overflow)."""
    constant = 1.0 if order == 0 else 0.0
    if math.isinf(c):
        return np.full_like(x, constant)
    ratio = (c**order * np.exp(c * (x - 1)) + (-c) ** order * np.exp(-c * x)) / (1 + math.exp(-c))
    return constant - ratio  # cosh(c (x - 1/2)) / cosh(c / 2) = ratio at order 0


def dense_solve(matrix: Array, right: Array) -> Array:
    """matrix^-1 right by LU, through torch: on the threads the run gives torch (`threads`; one
    a test worker), where numpy's own BLAS pool would take every core, shared or not."""
    return torch.linalg.solve(torch.from_numpy(matrix), torch.from_numpy(right)).numpy()


def _bivariate_product(a: Array, b: Array) -> Array:
    """Coefficients of the product of two polynomials in (xi, eta), [i, j] for xi^i eta^j."""
    product = np.zeros((a.shape[0] + b.shape[0] - 1, a.shape[1] + b.shape[1] - 1))
    for (i, j), value in np.ndenumerate(a):
        product[i : i + b.shape[0], j : j + b.shape[1]] += value * b
    return product


def _bivariate_partial(coefficients: Array, a: int, b: int, xi: Array, eta: Array) -> Array:
    """d^a/dxi^a d^b/deta^b of a polynomial in (xi, eta), at the points."""
    derivative = poly.polyder(poly.polyder(coefficients, a, axis=0), b, axis=1)
    return poly.polyval2d(xi, eta, derivative)


def _angle_partial(a: int, b: int, xi: Array, eta: Array) -> Array:
    """d^a/dxi^a d^b/deta^b of theta = atan2(eta, xi) = Im log z, z = xi + i eta != 0:
    Im(i^b (d/dz)^k log z), k = a + b."""
    if a == b == 0:
        return np.arctan2(eta, xi)
    k = a + b
    z = xi + 1j * eta
    return (1j**b * (-1) ** (k - 1) * math.factorial(k - 1) / z**k).imag


@dataclass(frozen=True)
class Corner:
    """A top corner's Stokes flow psi_s times the cutoff h(xi) h(eta), in the corner's own
    coordinates: smooth + weight * theta, both polynomials in (xi, eta) (coefficient arrays)."""

    smooth: Array
    weight: Array

    @classmethod
    def of(cls, lid_sharpness: float) -> Corner:
        smooth, weight = np.zeros((3, 3)), np.zeros((3, 3))
        if math.isinf(lid_sharpness):  # r F(theta) = B eta + theta (C xi + D eta)
            c = 1 / (math.pi**2 / 4 - 1)
            smooth[0, 1] = -c * math.pi**2 / 4
            weight[1, 0], weight[0, 1] = c, c * math.pi / 2
        else:  # a r² F(theta) = a (pi/4 eta² - xi eta / 2) - (a / 2) r² theta
            a = lid_sharpness * math.tanh(lid_sharpness / 2)
            smooth[0, 2], smooth[1, 1] = a * math.pi / 4, -a / 2
            weight[2, 0] = weight[0, 2] = -a / 2
        cutoff = np.outer(CUTOFF.coef, CUTOFF.coef)
        return cls(_bivariate_product(smooth, cutoff), _bivariate_product(weight, cutoff))

    def partial(self, a: int, b: int, xi: Array, eta: Array) -> Array:
        """d^a/dxi^a d^b/deta^b at points off the corner (Leibniz on weight * theta)."""
        value = _bivariate_partial(self.smooth, a, b, xi, eta)
        for i in range(a + 1):
            for j in range(b + 1):
                weight = comb(a, i) * comb(b, j) * _bivariate_partial(self.weight, i, j, xi, eta)
                value = value + weight * _angle_partial(a - i, b - j, xi, eta)
        return value


def lift_partial(lid_sharpness: float, a: int, b: int, x: Array, y: Array) -> Array:
    """d^a/dx^a d^b/dy^b of the lift (module docstring) at the points (x, y), each (M,), which
    must avoid the two top corners: psi_s of both corners times their cutoffs, plus the rest of
    the lid speed times y² (y - 1)."""
    corner = Corner.of(lid_sharpness)
    # Top-left corner: xi = x, eta = 1 - y; top-right: xi = 1 - x, eta = 1 - y.
    value = (-1) ** b * corner.partial(a, b, x, 1 - y)
    value += (-1) ** (a + b) * corner.partial(a, b, 1 - x, 1 - y)
    if math.isinf(lid_sharpness):
        return value  # the two cutoffs add up to 1 along the lid: no rest
    slope = lid_sharpness * math.tanh(lid_sharpness / 2)
    rest = _lid_derivative(x, lid_sharpness, a) - slope * EDGES.deriv(a)(x)
    return value + rest * PROFILE.deriv(b)(y)


# The partial derivatives (a, b) of psi the equation takes.
ORDERS = ((1, 0), (0, 1), (3, 0), (1, 2), (2, 1), (0, 3), (4, 0), (2, 2), (0, 4))


class Collocation:
    """The collocated equation on degree N: its residual and Jacobian in q's (N - 1)² interior
    values, flattened x-major ([i, j] at (x_i, x_j) is entry i (N - 1) + j)."""

    def __init__(self, degree: int, lid_sharpness: float):
        self.degree, self.lid_sharpness = degree, lid_sharpness
        nodes, d = chebyshev(degree)
        inner = slice(1, degree)
        # Derivatives k = 0..4 of w q, w = x (1 - x), at the interior points, from q's values
        # there (q = 0 on the walls): sum over l of C(k, l) w^(l) q^(k - l).
        wall = [nodes * (1 - nodes), 1 - 2 * nodes, np.full_like(nodes, -2.0)]
        powers = [np.eye(degree + 1)]
        for _ in range(4):
            powers.append(d @ powers[-1])
        self.factor = []
        for k in range(5):
            terms = (comb(k, j) * wall[j][:, None] * powers[k - j] for j in range(min(k, 2) + 1))
            self.factor.append(sum(terms)[inner, inner])
        x, y = np.meshgrid(nodes[inner], nodes[inner], indexing="ij")
        self.size = degree - 1
        self.lift = {
            order: lift_partial(lid_sharpness, *order, x.ravel(), y.ravel()).reshape(x.shape)
            for order in ORDERS
        }

    def partial(self, q: Array, a: int, b: int) -> Array:
        """(N - 1, N - 1): d^a/dx^a d^b/dy^b of psi at the interior points, q (N - 1, N - 1)."""
        return self.factor[a] @ q @ self.factor[b].T + self.lift[(a, b)]

    def _matrix(self, rows: dict[tuple[int, int], Array | float]) -> Array:
        """(n, n), n = (N - 1)²: the sum over (a, b) of diag(rows[a, b]) times the matrix of
        d^a/dx^a d^b/dy^b, rows[a, b] a number or (N - 1, N - 1) values, one per equation.
        Built as [i, j, k, l] = sum over b of C_b[i, j, k] factor_b[j, l]: one pass over the
        (n, n) array for each distinct b, not one a term."""
        m = self.size
        matrix = np.zeros((m, m, m, m))
        for b in sorted({b for _, b in rows}):
            left = sum(
                np.broadcast_to(scale, (m, m))[:, :, None] * self.factor[a][:, None, :]
                for (a, b_), scale in rows.items()
                if b_ == b
            )
            matrix += left[:, :, :, None] * self.factor[b][None, :, None, :]
        return matrix.reshape(m * m, m * m)

    def stokes(self) -> Array:
        """q of the Stokes flow (Re -> 0): ∇⁴psi = 0."""
        biharmonic = self._matrix({(4, 0): 1.0, (2, 2): 2.0, (0, 4): 1.0})
        lift = self.lift[(4, 0)] + 2 * self.lift[(2, 2)] + self.lift[(0, 4)]
        return dense_solve(biharmonic, -lift.ravel()).reshape(self.size, self.size)

    def newton_step(self, q: Array, reynolds: float) -> Array:
        """The Newton correction to q (N - 1, N - 1) at this Reynolds number."""
        psi = {order: self.partial(q, *order) for order in ORDERS}
        laplacian_x = psi[(3, 0)] + psi[(1, 2)]
        laplacian_y = psi[(2, 1)] + psi[(0, 3)]
        biharmonic = psi[(4, 0)] + 2 * psi[(2, 2)] + psi[(0, 4)]
        residual = biharmonic / reynolds - psi[(0, 1)] * laplacian_x + psi[(1, 0)] * laplacian_y
        jacobian = self._matrix(
            {
                (4, 0): 1 / reynolds,
                (2, 2): 2 / reynolds,
                (0, 4): 1 / reynolds,
                (3, 0): -psi[(0, 1)],
                (1, 2): -psi[(0, 1)],
                (2, 1): psi[(1, 0)],
                (0, 3): psi[(1, 0)],
                (0, 1): -laplacian_x,
                (1, 0): laplacian_y,
            }
        )
        return dense_solve(jacobian, -residual.ravel()).reshape(q.shape)

    def newton(self, q: Array, reynolds: float) -> tuple[Array, int] | None:
        """(q, steps) converged from the guess q at this Reynolds number, or None where Newton
        diverges or does not converge within NEWTON_STEPS."""
        previous = math.inf
        for step in range(1, NEWTON_STEPS + 1):
            correction = self.newton_step(q, reynolds)
            q = q + correction
            size = np.abs(correction).max()
            if not np.isfinite(size) or (step > 3 and size > previous):
                return None
            if size <= NEWTON_TOLERANCE * max(1.0, np.abs(q).max()):
                return q, step
            previous = size
        return None


@dataclass(frozen=True)
class CavityFlow:
    """A converged solve: psi = lift + x (1 - x) y (1 - y) q, q given by its values `q` at the
    Chebyshev points (`chebyshev(degree)`, [i, j] at (x_i, x_j), 0 on the walls); read-only."""

    reynolds: float
    lid_sharpness: float
    degree: int
    q: Array
    newton_steps: int  # in all, continuation included

    def velocity(self, points: ArrayLike) -> Array:
        """(M, 2): u, v at the (M, 2) points of [0, 1]². At the two top corners, where the lid
        meets the walls, the lid's own speed there (0 but for the sharp lid's 1) and v = 0."""
        points = np.asarray(points, np.float64)
        x, y = points[:, 0], points[:, 1]
        corner = (y == 1) & ((x == 0) | (x == 1))
        x, y = np.where(corner, 0.5, x), np.where(corner, 0.5, y)  # anything off the corners
        _, d = chebyshev(self.degree)
        at_x = interpolation_matrix(self.degree, x)
        at_y = interpolation_matrix(self.degree, y)

        def values(grid: Array) -> Array:
            return np.einsum("mi,ij,mj->m", at_x, grid, at_y)

        q, q_x, q_y = values(self.q), values(d @ self.q), values(self.q @ d.T)
        wall_x, wall_y = x * (1 - x), y * (1 - y)
        psi_x = wall_y * ((1 - 2 * x) * q + wall_x * q_x)
        psi_y = wall_x * ((1 - 2 * y) * q + wall_y * q_y)
        psi_x += lift_partial(self.lid_sharpness, 1, 0, x, y)
        psi_y += lift_partial(self.lid_sharpness, 0, 1, x, y)
        u = np.where(corner, lid_speed(points[:, 0], self.lid_sharpness), psi_y)
        return np.stack([u, np.where(corner, 0.0, -psi_x)], axis=1)


def _continuation(collocation: Collocation, reynolds: float, q: Array) -> tuple[Array, int]:
    """q at `reynolds` by Newton from the Stokes flow q, Re growing by at most
    CONTINUATION_RATIO a step (from FIRST_REYNOLDS), each failed step halved; (q, Newton steps)."""
    current, steps = 0.0, 0
    while current < reynolds:
        aim = min(reynolds, FIRST_REYNOLDS if current == 0 else CONTINUATION_RATIO * current)
        while (result := collocation.newton(q, aim)) is None:
            aim = (current + aim) / 2
            if aim - current < 1e-3 * aim:
                raise RuntimeError(
                    f"the cavity's Newton iteration fails beyond Re = {current:g} on degree "
                    f"{collocation.degree} (lid_sharpness {collocation.lid_sharpness:g}); a "
                    "higher degree may resolve the flow"
                )
        q, taken = result
        current, steps = aim, steps + taken
    return q, steps


@lru_cache(maxsize=8)
def solve_cavity(
    reynolds: float, lid_sharpness: float = 50.0, degree: int = DEFAULT_DEGREE
) -> CavityFlow:
    """The steady flow at this Reynolds number, on polynomials of `degree` (the module
    docstring gives its accuracy; cached). Raises RuntimeError where Newton does not converge.

    Args:
        reynolds: Re > 0. Verified up to 1000 at the default degree.
        lid_sharpness: c of the lid 1 - cosh(c (x - 1/2)) / cosh(c / 2), > 0; math.inf for the
            sharp lid u = 1.
        degree: N >= 8, the polynomial degree in x and in y; each Newton step solves a dense
            (N - 1)² system (~0.5 s at N = 48, ~3 s at N = 64 on one busy core).
    """
    if not (isinstance(reynolds, (int, float)) and math.isfinite(reynolds) and reynolds > 0):
        raise ValueError(f"reynolds must be a finite number > 0, got {reynolds!r}")
    if not (isinstance(lid_sharpness, (int, float)) and lid_sharpness > 0):
        raise ValueError(f"lid_sharpness must be a number > 0 (inf: sharp), got {lid_sharpness!r}")
    if not (isinstance(degree, int) and degree >= 8):
        raise ValueError(f"degree must be an int >= 8, got {degree!r}")
    if math.isinf(lid_sharpness) and reynolds > SHARP_MAX_REYNOLDS:
        raise ValueError(
            f"the sharp lid (lid_sharpness = inf) is resolved up to Re = {SHARP_MAX_REYNOLDS:g}, "
            f"not {reynolds:g}: its corner singularity needs a far higher degree; use a finite "
            "lid_sharpness (50: problems/cavity.py's lid)"
        )
    fine = Collocation(degree, lid_sharpness)
    result, steps = None, 0
    if degree > COARSE_DEGREE:  # continue on the coarse degree, then Newton on this one
        coarse = Collocation(COARSE_DEGREE, lid_sharpness)
        try:
            q, steps = _continuation(coarse, reynolds, coarse.stokes())
        except RuntimeError:  # the coarse degree cannot resolve the flow: continue on this one
            pass
        else:
            inner = chebyshev(degree)[0][1:-1]
            to_fine = interpolation_matrix(COARSE_DEGREE, inner)[:, 1:-1]  # q = 0 on the walls
            result = fine.newton(to_fine @ q @ to_fine.T, reynolds)
    if result is None:
        result = _continuation(fine, reynolds, fine.stokes())
    q, steps = result[0], steps + result[1]
    full = np.zeros((degree + 1, degree + 1))
    full[1:-1, 1:-1] = q
    full.flags.writeable = False
    return CavityFlow(float(reynolds), float(lid_sharpness), degree, full, steps)


@lru_cache(maxsize=8)
def centrelines(
    reynolds: float,
    lid_sharpness: float = 50.0,
    degree: int = DEFAULT_DEGREE,
    points: int = 129,
) -> tuple[Array, Array, Array]:
    """The centreline profiles: s = linspace(0, 1, points), u(0.5, s) and v(s, 0.5), each
    (points,) and read-only; 129 points (j / 128) hold Ghia et al.'s 17 of each table."""
    flow = solve_cavity(reynolds, lid_sharpness, degree)
    s = np.linspace(0.0, 1.0, points)
    half = np.full_like(s, 0.5)
    u = flow.velocity(np.stack([half, s], axis=1))[:, 0]
    v = flow.velocity(np.stack([s, half], axis=1))[:, 1]
    for array in (s, u, v):
        array.flags.writeable = False
    return s, u, v


# Centrelines computed once and shipped (write_centrelines): {(Re, lid_sharpness): file}.
STORED = {(1000.0, 50.0): "cavity_centrelines_re1000.csv"}


def write_centrelines(
    path: str | Path, reynolds: float, lid_sharpness: float = 50.0, degree: int = DEFAULT_DEGREE
) -> None:
    """Write `centrelines(reynolds, lid_sharpness, degree)` to a CSV file: three columns s,
    u(0.5, s), v(s, 0.5), 129 rows, under a header that says how it was made. The shipped files
    (STORED) were written so, e.g. for Re = 1000 from the repository root:

        python -c "from pinn.problems.cavity_reference import write_centrelines;
                   write_centrelines('problems/cavity_centrelines_re1000.csv', 1000.0)"
    """
    s, u, v = centrelines(reynolds, lid_sharpness, degree)
    flow = solve_cavity(reynolds, lid_sharpness, degree)
    header = (
        f"Lid-driven cavity, Re = {reynolds:g}, lid_sharpness = {lid_sharpness:g}: the centreline "
        f"velocities of\npinn.problems.cavity_reference.centrelines({reynolds!r}, "
        f"{lid_sharpness!r}, {degree}) (Chebyshev degree {degree},\n"
        f"{flow.newton_steps} Newton steps), written by write_centrelines.\n"
        "s, u(0.5, s), v(s, 0.5)"
    )
    table = np.round(np.stack([s, u, v], axis=1), 10) + 0.0  # + 0.0: no "-0.0000000000"
    np.savetxt(path, table, fmt="%.10f", delimiter=",", header=header)


def centreline_reference(reynolds: float, lid_sharpness: float = 50.0) -> tuple[Array, ...]:
    """`centrelines(reynolds, lid_sharpness)` at the default degree: read from the shipped file
    where there is one (STORED; tests/problem/test_cavity_reference.py recomputes it), computed
    (and cached) otherwise. s, u(0.5, s), v(s, 0.5), each (129,)."""
    name = STORED.get((float(reynolds), float(lid_sharpness)))
    if name is None:
        return centrelines(float(reynolds), float(lid_sharpness))
    return _read_centrelines(name)


@lru_cache(maxsize=4)
def _read_centrelines(name: str) -> tuple[Array, Array, Array]:
    table = np.loadtxt(Path(__file__).with_name(name), delimiter=",")
    columns = tuple(np.ascontiguousarray(column) for column in table.T)
    for column in columns:
        column.flags.writeable = False
    return columns
