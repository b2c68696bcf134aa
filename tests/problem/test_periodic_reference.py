"""The Fourier ETDRK4 references for Allen-Cahn and KdV: order in time, spatial convergence, exact
solutions, invariants, and the look of the published solutions.

Every difference is a max norm over the 512 points of the reference grid's x at all its times
(t = linspace(0, 1, 201)) unless a test says otherwise; the numbers in comments were measured.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from pinn.problems.periodic_reference import (
    ALLEN_CAHN_DT,
    ALLEN_CAHN_MODES,
    KDV_DT,
    KDV_MODES,
    KDV_MU,
    allen_cahn_initial,
    allen_cahn_reference_grid,
    etdrk4_step,
    kdv_reference_grid,
    periodic_grid,
    solve_allen_cahn,
    solve_kdv,
)

NX, NT = 512, 201
TIMES = np.linspace(0.0, 1.0, NT)
ALLEN_CAHN_TOLERANCE = 1e-7
KDV_TOLERANCE = 1e-6


def _on_grid(u: np.ndarray) -> np.ndarray:
    """u (T, n) on the solver's grid, taken at the reference grid's NX points: (T, NX)."""
    return u[:, :: u.shape[1] // NX]


def _max_difference(a: np.ndarray, b: np.ndarray) -> float:
    """Max |a - b| over the reference x of two solutions (T, n_a) and (T, n_b)."""
    return float(np.max(np.abs(_on_grid(a) - _on_grid(b))))


@pytest.fixture(scope="module")
def allen_cahn() -> np.ndarray:
    """The default reference, (NT, NX), from the (cached) grid function."""
    return allen_cahn_reference_grid(NX, NT)[1].reshape(NT, NX)


@pytest.fixture(scope="module")
def kdv() -> np.ndarray:
    """The default reference, (NT, NX), from the (cached) grid function."""
    return kdv_reference_grid(NX, NT)[1].reshape(NT, NX)


# --- (1) Fourth order in time, at a fixed spatial resolution -------------------------------------


def _ratio_of_successive_differences(
    solve: Callable, times: np.ndarray, n_modes: int, dts: tuple[float, float, float]
) -> tuple[float, float, float]:
    """|u(dt) - u(dt / 2)|, |u(dt / 2) - u(dt / 4)| and their ratio, for dts = (dt, dt/2, dt/4)."""
    u = [solve(times, n_modes=n_modes, dt=dt)[2] for dt in dts]
    coarse, fine = _max_difference(u[0], u[1]), _max_difference(u[1], u[2])
    return coarse, fine, coarse / fine


def test_allen_cahn_is_fourth_order_in_time():
    # Measured: 1.14e-8 then 6.97e-10, ratio 16.3. (Steps must divide the 0.005 between outputs,
    # or the step actually taken is not halved.) At 4096 modes the largest time error sits at
    # t = 0.005 by the kink of u(x, 0) at x = +-1, pre-asymptotic at these dt (ratio ~28);
    # 1024 modes isolate the smooth dynamics.
    coarse, fine, ratio = _ratio_of_successive_differences(
        solve_allen_cahn, TIMES, 1024, (5e-3, 2.5e-3, 1.25e-3)
    )
    assert fine < coarse < 1e-6
    assert 13 < ratio < 20


def test_kdv_is_fourth_order_in_time():
    # Measured on t in [0, 0.5]: 2.13e-6 then 1.28e-7, ratio 16.7. Up to t = 1, where the
    # solitons have formed and collide, these dt are still pre-asymptotic (ratios 20 and 25);
    # 2e-4 -> 1e-4 -> 5e-5 there gives 18.5 and 16.1.
    times = np.linspace(0.0, 0.5, 11)
    coarse, fine, ratio = _ratio_of_successive_differences(
        solve_kdv, times, KDV_MODES, (1e-3, 5e-4, 2.5e-4)
    )
    assert fine < coarse < 1e-5
    assert 13 < ratio < 20


def test_allen_cahn_default_error(allen_cahn):
    # Against half the step and twice the modes: measured 1.5e-10 (the time error, largest at
    # t = 0.005 near x = +-1).
    fine = solve_allen_cahn(TIMES, n_modes=2 * ALLEN_CAHN_MODES, dt=ALLEN_CAHN_DT / 2)[2]
    assert _max_difference(fine, allen_cahn) < ALLEN_CAHN_TOLERANCE


def test_kdv_default_error(kdv):
    # Against half the step and twice the modes: measured 1.9e-8 (time error, at t = 1).
    fine = solve_kdv(TIMES, n_modes=2 * KDV_MODES, dt=KDV_DT / 2)[2]
    assert _max_difference(fine, kdv) < KDV_TOLERANCE


# --- (2) Spatial refinement ----------------------------------------------------------------------


def test_allen_cahn_modes_converged(allen_cahn):
    # Doubling the modes at the default step changes u by 4.9e-12 (spectral convergence: 2048 ->
    # 4096 changed it by 1.7e-7, 1024 -> 2048 by 4e-5, all at t = 0.005 near the kink).
    finer = solve_allen_cahn(TIMES, n_modes=2 * ALLEN_CAHN_MODES)[2]
    assert _max_difference(finer, allen_cahn) < ALLEN_CAHN_TOLERANCE


def test_allen_cahn_comparison_detects_too_few_modes(allen_cahn):
    # Half the default modes under-resolve the first output time: the check above can see that.
    coarser = solve_allen_cahn(TIMES, n_modes=ALLEN_CAHN_MODES // 2)[2]
    assert _max_difference(coarser, allen_cahn) > ALLEN_CAHN_TOLERANCE


def test_kdv_modes_converged(kdv):
    # Doubling the modes at the default step: measured 1.9e-13. (256 modes, 85 kept, would be off
    # by 2.3e-6.)
    finer = solve_kdv(TIMES, n_modes=2 * KDV_MODES)[2]
    assert _max_difference(finer, kdv) < KDV_TOLERANCE


# --- (3) Independent exact checks ----------------------------------------------------------------


@pytest.mark.parametrize("u0", [0.1, -0.3, 0.9])
def test_allen_cahn_constant_initial_value_solves_the_ode(u0):
    # A constant u stays constant in x and solves u' = 5 u - 5 u^3, whose solution is
    # u^2 = u0^2 e^{10 t} / (1 - u0^2 + u0^2 e^{10 t}). Measured: <= 1.9e-11 at the default dt.
    times = np.linspace(0.0, 1.0, 11)
    x, t, u = solve_allen_cahn(times, n_modes=16, initial=lambda x: np.full_like(x, u0))
    growth = u0**2 * np.exp(10 * t)
    exact = np.sign(u0) * np.sqrt(growth / (1 - u0**2 + growth))
    assert np.max(np.abs(u - exact[:, None])) <= 1e-10


def _soliton(x: np.ndarray, t: float, c: float, x0: float) -> np.ndarray:
    """3c sech^2(sqrt(c) / (2 mu) (x - c t - x0)), wrapped onto [-1, 1): (n,) for x (n,).

    Its tails fall like 12 c exp(-sqrt(c) |x| / mu): ~1e-14 at distance 1 for c = 0.5, so the
    single soliton is exact on the periodic domain to round-off.
    """
    shift = (x - c * t - x0 + 1.0) % 2.0 - 1.0
    return 3 * c / np.cosh(np.sqrt(c) / (2 * KDV_MU) * shift) ** 2


def test_kdv_travelling_soliton():
    # Amplitude 1.5, speed 0.5, width ~0.06, over t in [0, 0.5] (0.25 in x, 4 widths). Measured
    # with dt = 1e-4: 1.3e-11 (2.2e-11 up to t = 1; 3.4e-10 there at the default 2e-4: the check
    # is for the scheme, so it takes a finer step).
    c, x0 = 0.5, -0.5
    times = np.linspace(0.0, 0.5, 6)
    x, t, u = solve_kdv(times, dt=1e-4, initial=lambda x: _soliton(x, 0.0, c, x0))
    exact = np.stack([_soliton(x, ti, c, x0) for ti in t])
    assert np.max(np.abs(u - exact)) <= 1e-10


def test_kdv_invariants(kdv):
    # With the 2/3 rule the semi-discrete scheme conserves integral u and integral u^2 exactly
    # (and the grid's mean is the exact integral / 2 for the kept modes): integral u is kept to
    # round-off, integral u^2 (= 1 at t = 0) to the time-stepping error, measured 4.4e-10.
    integral = 2 * kdv.mean(axis=1)
    energy = 2 * (kdv**2).mean(axis=1)
    assert np.max(np.abs(integral - integral[0])) <= 1e-14
    assert abs(energy[0] - 1.0) <= 1e-14
    assert np.max(np.abs(energy - 1.0)) <= 1e-9


# --- (4) The published look ----------------------------------------------------------------------


def test_allen_cahn_metastable_plateaus_at_t1(allen_cahn):
    x, final = periodic_grid(NX), allen_cahn[-1]
    # Measured: min -0.9999989, max 0.99270; 70% of the points within 0.02 of +-1.
    assert final.min() < -0.9999 and 0.99 < final.max() < 1.0
    assert np.mean(np.abs(np.abs(final) - 1) < 0.02) > 0.6
    # Two interfaces, at x = -0.496 and 0.5: u ~ -1 for |x| > 1/2, ~ +1 inside, with a dip
    # to 0.03 at x = 0.
    crossings = x[np.sign(final) != np.sign(np.roll(final, 1))]
    np.testing.assert_allclose(np.sort(np.abs(crossings)), [0.49609375, 0.5])
    # The initial value is even, and so is the solution.
    np.testing.assert_allclose(final[1:], final[1:][::-1], rtol=0, atol=1e-12)


def test_kdv_solitons_at_t1(kdv):
    # Measured: max 2.40 at t = 1 (2.51 at t = 0.5, 2.63 over all t), from max 1 at t = 0.
    assert kdv[-1].max() > 2.0
    assert kdv.max() > 2.5


# --- The grid, the coefficients and the arguments ------------------------------------------------


@pytest.mark.parametrize("grid_function", [allen_cahn_reference_grid, kdv_reference_grid])
def test_reference_grid_layout(grid_function):
    points, values = grid_function(NX, NT)
    assert points.shape == (NX * NT, 2) and values.shape == (NX * NT,)
    assert points.dtype == np.float64 and values.dtype == np.float64
    # t-major on the periodic grid [-1, 1): row i * NX + j is (x[j], t[i]).
    x = -1.0 + 2.0 * np.arange(NX) / NX
    assert np.array_equal(points[:NX, 0], x) and np.all(points[:NX, 1] == 0)
    assert np.array_equal(points[::NX, 1], TIMES) and np.all(points[::NX, 0] == -1)
    # Each call returns copies of the cached arrays.
    values[:] = np.nan
    assert np.all(np.isfinite(grid_function(NX, NT)[1]))


def test_reference_grid_initial_rows():
    assert np.array_equal(
        allen_cahn_reference_grid()[1][:NX], allen_cahn_initial(periodic_grid(NX))
    )
    assert np.array_equal(kdv_reference_grid()[1][:NX], np.cos(np.pi * periodic_grid(NX)))


def test_contour_coefficients_match_closed_forms():
    h = 0.1
    linear = np.array([-50.0, -3.0, 7.0, 1e-9, 0.0])  # z = h L = -5, -0.3, 0.7, 1e-10, 0
    step = etdrk4_step(linear, h)
    z = h * linear[:3]  # no cancellation here: the closed forms are accurate
    np.testing.assert_allclose(step.exp_full, np.exp(h * linear), rtol=1e-15)
    np.testing.assert_allclose(step.half[:3], (np.exp(z / 2) - 1) / linear[:3], rtol=1e-13)
    f1 = h * (-4 - z + np.exp(z) * (4 - 3 * z + z**2)) / z**3
    f2 = h * (2 + z + np.exp(z) * (z - 2)) / z**3
    f3 = h * (-4 - 3 * z - z**2 + np.exp(z) * (4 - z)) / z**3
    # Near z = 0 the closed forms cancel to nothing; their Taylor series, to first order in z:
    small = h * linear[3:]
    f1_series = h * (1 / 6 + small / 6)
    f2_series = h * (1 / 6 + small / 12)
    f3_series = h * (1 / 6 + 0 * small)
    for ours, closed, series in [
        (step.f1, f1, f1_series),
        (step.f2, f2, f2_series),
        (step.f3, f3, f3_series),
    ]:
        np.testing.assert_allclose(ours[:3], closed, rtol=1e-12)
        np.testing.assert_allclose(ours[3:], series, rtol=1e-13)
    np.testing.assert_allclose(step.half[3:], h * (1 / 2 + small / 8), rtol=1e-13)
    # A complex L (KdV's dispersion) keeps complex coefficients.
    assert np.iscomplexobj(etdrk4_step(1j * linear, h).f1)


def test_arguments_are_checked():
    with pytest.raises(ValueError, match="n_modes"):
        solve_kdv([0.1], n_modes=511)
    with pytest.raises(ValueError, match="times"):
        solve_allen_cahn([0.5, 0.1], n_modes=16)
    with pytest.raises(ValueError, match="dt"):
        solve_allen_cahn([0.1], n_modes=16, dt=0.0)
    with pytest.raises(ValueError, match="nx"):
        kdv_reference_grid(nx=500, nt=3)
