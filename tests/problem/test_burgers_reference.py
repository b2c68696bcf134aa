"""The Cole-Hopf reference for viscous Burgers: accuracy, conditions, PDE residual, known values."""

from __future__ import annotations

import numpy as np
import pytest

from pinn.problems.burgers_reference import NU, cole_hopf, reference_grid

# Basdevant et al. 1986: the largest |du/dx|, at x = 0, is 152.00516, reached at t = 1.6037 / pi.
MAX_SLOPE = 152.00516
MAX_SLOPE_TIME = 1.6037 / np.pi


def _trapezoid_in_eta(x: np.ndarray, t: np.ndarray, half_width: float, n: int) -> np.ndarray:
    """u at points x, t of shape (m,) (t > 0) by the trapezoid rule in eta itself; returns (m,).

    Independent of the module's Gauss-Hermite rule: n equispaced nodes on eta in
    [-half_width, half_width] * sqrt(4 nu t), the Gaussian kept inside the integrand. Beyond
    half_width = 13 the Gaussian has fallen by e^-169 while f varies by at most e^100, so the
    cut-off tails are negligible, and the trapezoid rule converges exponentially for these
    smooth, rapidly decaying integrands. Logs with the max shift avoid overflow, as in the module.
    """
    eta = np.linspace(-1.0, 1.0, n) * half_width * np.sqrt(4 * NU * t)[:, None]  # (m, n)
    y = x[:, None] - eta
    log_end_weights = np.zeros(n)
    log_end_weights[[0, -1]] = np.log(0.5)
    exponent = -np.cos(np.pi * y) / (2 * np.pi * NU) - eta**2 / (4 * NU * t[:, None])
    exponent += log_end_weights
    weight = np.exp(exponent - exponent.max(axis=1, keepdims=True))
    return -(np.sin(np.pi * y) * weight).sum(axis=1) / weight.sum(axis=1)


@pytest.fixture(scope="module")
def accuracy_points() -> tuple[np.ndarray, np.ndarray]:
    """(x, t) of shape (m,) each: all over the domain, densely around the shock at x = 0."""
    x = np.concatenate([np.linspace(-1, 1, 81), np.linspace(-0.02, 0.02, 41)])
    t = np.concatenate([[1e-6, 1e-3, 0.01, 0.1], np.linspace(0.3, 1.0, 15)])
    grid_x, grid_t = np.meshgrid(x, t)
    return grid_x.ravel(), grid_t.ravel()


@pytest.fixture(scope="module")
def independent(accuracy_points) -> np.ndarray:
    """The trapezoid reference at accuracy_points, checked converged to 1e-10 by refining."""
    x, t = accuracy_points
    coarse = _trapezoid_in_eta(x, t, half_width=14.0, n=801)
    fine = _trapezoid_in_eta(x, t, half_width=18.0, n=1601)  # wider and finer
    assert np.max(np.abs(fine - coarse)) <= 1e-10
    return fine


def test_matches_independent_quadrature(accuracy_points, independent):
    x, t = accuracy_points
    assert np.max(np.abs(cole_hopf(x, t) - independent)) <= 1e-7


def test_comparison_detects_too_few_nodes(accuracy_points, independent):
    # 40 nodes under-resolve the peaked integrand near the shock at late t (error ~3e-5):
    # the comparison above must be able to see that.
    x, t = accuracy_points
    assert np.max(np.abs(cole_hopf(x, t, nodes=40) - independent)) > 1e-7


def test_initial_condition():
    x = np.linspace(-1, 1, 201)
    assert np.array_equal(cole_hopf(x, 0.0), -np.sin(np.pi * x))
    # u(x, t) = u(x, 0) + O(t) with |u_t| <= pi / 2 + nu pi^2 at t = 0.
    assert np.max(np.abs(cole_hopf(x, 1e-6) + np.sin(np.pi * x))) <= 1e-4


def test_boundary_values():
    t = np.linspace(0, 1, 41)
    assert np.max(np.abs(cole_hopf(np.array([[-1.0], [1.0]]), t))) <= 1e-10


def test_odd_symmetry():
    x = np.linspace(0, 1, 101)
    t = np.linspace(0, 1, 21)[:, None]
    assert np.max(np.abs(cole_hopf(-x, t) + cole_hopf(x, t))) <= 1e-12


def _pde_residual(x: np.ndarray, t: np.ndarray, h: float) -> np.ndarray:
    """u_t + u u_x - nu u_xx by central differences of step h in x and t (broadcast shape)."""
    u = cole_hopf(x, t)
    left, right = cole_hopf(x - h, t), cole_hopf(x + h, t)
    u_t = (cole_hopf(x, t + h) - cole_hopf(x, t - h)) / (2 * h)
    u_x = (right - left) / (2 * h)
    u_xx = (right - 2 * u + left) / h**2
    return u_t + u * u_x - NU * u_xx


def test_pde_residual_away_from_shock():
    x = np.concatenate([np.linspace(-0.99, -0.2, 40), np.linspace(0.2, 0.99, 40)])[:, None]
    t = np.linspace(0.05, 0.95, 19)
    # The terms u_t and u u_x reach ~1.9 here; central differences leave O(h^2) truncation
    # (h^2 / 6 u_xxx etc., ~4e-5 at h = 1e-3), while round-off (~1e-15 / h^2 * nu) is ~1e-11.
    coarse = np.max(np.abs(_pde_residual(x, t, 1e-3)))
    finer = np.max(np.abs(_pde_residual(x, t, 5e-4)))
    assert coarse <= 1e-4
    # Halving h divides the residual by ~4: it is truncation error, not an error of u.
    assert finer <= coarse / 3


def _slope_at_origin(t: float | np.ndarray, h: float = 1e-6) -> np.ndarray:
    """du/dx(0, t) by a central difference (truncation ~ h^2 u_xxx / 6, ~1e-8 relative here)."""
    return (cole_hopf(h, t) - cole_hopf(-h, t)) / (2 * h)


def test_shock_slope_matches_basdevant():
    slope = _slope_at_origin(MAX_SLOPE_TIME)
    assert slope < 0
    assert abs(abs(slope) - MAX_SLOPE) <= 1e-6 * MAX_SLOPE
    # ... and it is the maximum over time: the shock steepens up to t ~ 0.51, then relaxes.
    nearby = np.abs(_slope_at_origin(np.array([MAX_SLOPE_TIME - 0.02, MAX_SLOPE_TIME + 0.02])))
    assert np.all(nearby < abs(slope))


def test_shock_slope_at_three_quarters():
    # At t = 0.75 the slope has relaxed to ~119.167 (not the maximum 152.005): check against
    # the independent trapezoid rule, differenced the same way.
    h = 1e-6
    x, t = np.array([h, -h]), np.full(2, 0.75)
    ours = _slope_at_origin(0.75, h)
    theirs = np.diff(_trapezoid_in_eta(x, t, half_width=18.0, n=1601))[0] / (-2 * h)
    assert abs(ours - theirs) <= 1e-6 * abs(theirs)
    assert abs(abs(ours) - 119.167) <= 1e-3


def test_reference_grid():
    nx, nt = 256, 100
    points, values = reference_grid(nx, nt)
    assert points.shape == (nx * nt, 2) and values.shape == (nx * nt,)
    assert points.dtype == np.float64 and values.dtype == np.float64
    # t-major: row i * nx + j is (x[j], t[i]).
    x, t = np.linspace(-1, 1, nx), np.linspace(0, 0.99, nt)
    assert np.array_equal(points[:nx, 0], x) and np.all(points[:nx, 1] == 0)
    assert np.array_equal(points[::nx, 1], t) and np.all(points[::nx, 0] == -1)
    np.testing.assert_allclose(values, cole_hopf(points[:, 0], points[:, 1]), rtol=0, atol=1e-14)
    np.testing.assert_allclose(values[:nx], -np.sin(np.pi * x), rtol=0, atol=0)


def test_broadcasting_and_validation():
    assert cole_hopf(0.5, 0.5).shape == ()
    u = cole_hopf(np.linspace(-1, 1, 7)[:, None], np.linspace(0, 1, 3))
    assert u.shape == (7, 3) and u.dtype == np.float64
    with pytest.raises(ValueError):
        cole_hopf(0.0, -0.1)
    with pytest.raises(ValueError):
        cole_hopf(0.0, 0.5, nodes=400)  # hermgauss weights overflow: refuse, don't return NaN
    with pytest.raises(ValueError):
        cole_hopf(0.0, 0.5, nodes=1)
