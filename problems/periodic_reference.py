"""Reference solutions of two periodic 1-D benchmarks, to validate PINN runs: our own solver.

Equations, on x in [-1, 1] periodic and t in [0, 1]::

    Allen-Cahn:  u_t = D u_xx + 5 u - 5 u^3,     u(x, 0) = x^2 cos(pi x),   D = 1e-4,
    KdV:         u_t + u u_x + mu^2 u_xxx = 0,   u(x, 0) = cos(pi x),       mu = 0.022.

Allen-Cahn is the problem of Raissi, Perdikaris & Karniadakis (2019), J. Comput. Phys. 378, with
D = 1e-4, as reused by jaxpi and by Wang et al. (2023), "An expert's guide to training
physics-informed neural networks". KdV with mu = 0.022 (Zabusky & Kruskal's constant) is the
setting of Wang et al. (2023) and jaxpi; Raissi et al. (2019) solved the same problem with
mu^2 = 0.0025 (mu = 0.05), which the `mu` argument gives.

Method: Fourier pseudo-spectral in x (real FFTs on n_modes equispaced points of [-1, 1)) and
exponential time differencing in t, ETDRK4 of Cox & Matthews (2002), "Exponential time
differencing for stiff systems", J. Comput. Phys. 176. The linear part L (diffusion plus the 5 u
of Allen-Cahn; dispersion of KdV) is integrated exactly by e^{hL}; the nonlinear part by a
fourth-order Runge-Kutta-like combination whose coefficients are the phi-functions of hL. Those
suffer cancellation for small |hL|; following Kassam & Trefethen (2005), "Fourth-order
time-stepping for stiff PDEs", SIAM J. Sci. Comput. 26, each is evaluated as the mean of its
values on a circle of radius 1 around hL (the trapezoid rule for Cauchy's integral; the functions
are entire, so it converges geometrically). Everything is float64.

Details that set the accuracy:
- KdV's quadratic term is dealiased by the 2/3 rule, which makes the semi-discrete scheme a
  Fourier-Galerkin method: integral u and integral u^2 are then exact invariants in space.
- Allen-Cahn's initial value is not smooth as a periodic function: u_x jumps from -2 (x = 1) to
  +2 (x = -1), a kink that diffusion smooths at once. Its Fourier coefficients decay only like
  1/m^2, so sampling it on the grid would alias an O(n^-2) error into every mode, which the
  unstable state u = 0 then amplifies: 3e-5 at 4096 modes (2.6e-6 for t >= 0.1). The solver
  starts instead from the exact Fourier coefficients of x^2 cos(pi x), truncated: the error left
  sits in the highest modes, which diffusion damps by exp(-D pi^2 m^2 t) within a few steps
  (1.5e-10 at 4096 modes, below). The row at t = 0 returns u(x, 0) itself.

Grid: x is the periodic grid [-1, 1), x_j = -1 + 2 j / n (the value at x = 1 equals the one at
x = -1); `*_reference_grid` returns nx of these points (every (n_modes / nx)-th solver point, no
interpolation) at nt times t = linspace(0, 1, nt): 512 x 201 by default (a snapshot every 0.005).

Accuracy, max |error| over the default 512 x 201 grid, estimated against a run with half the step
and twice the modes (tests/problem/test_periodic_reference.py):
- Allen-Cahn (4096 modes, dt = 1e-3): 1.5e-10, the time error (doubling the modes alone: 4.9e-12;
  2048 modes would be off by 1.7e-7 at t = 0.005 by the kink). Fourth order: halving dt from 5e-3
  divides the change by 16.3. A constant u0 matches the ODE's closed form to 1.9e-11.
- KdV (512 modes, 170 kept, dt = 2e-4): 1.9e-8, the time error (doubling the modes: 1.9e-13).
  Halving dt from 1e-3 divides the change by 16.7 on t in [0, 0.5]. A soliton of amplitude 1.5
  is kept to 1.3e-11 (dt = 1e-4); integral u^2 drifts by 4.4e-10 at the default dt. With
  mu = 0.05 (Raissi et al.) the defaults are within 1.2e-10.
Each default grid takes 0.6-1.0 s (Allen-Cahn) and 1.0-1.4 s (KdV) on one core of a busy
machine, once: it is cached.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numpy.typing import ArrayLike, NDArray

ALLEN_CAHN_DIFFUSION = 1e-4
ALLEN_CAHN_MODES = 4096
ALLEN_CAHN_DT = 1e-3
KDV_MU = 0.022
KDV_MODES = 512
KDV_DT = 2e-4
# Points on the circle of Kassam & Trefethen's contour mean; 64 gives round-off accuracy.
CONTOUR_POINTS = 64

Spectrum = NDArray[np.complex128]
Coefficient = NDArray[np.float64] | NDArray[np.complex128]
Nonlinear = Callable[[Spectrum], Spectrum]


def periodic_grid(n_modes: int) -> NDArray[np.float64]:
    """The n_modes equispaced points x_j = -1 + 2 j / n_modes of [-1, 1); shape (n_modes,)."""
    return -1.0 + 2.0 * np.arange(n_modes) / n_modes


def wavenumbers(n_modes: int) -> NDArray[np.float64]:
    """k = pi m, m = 0 .. n_modes / 2, of the real FFT on [-1, 1); shape (n_modes // 2 + 1,)."""
    return np.pi * np.arange(n_modes // 2 + 1, dtype=np.float64)


@dataclass(frozen=True)
class Etdrk4Step:
    """The ETDRK4 coefficients of one step h for the linear part L, each of L's shape (K,)."""

    exp_full: Coefficient  # e^z, z = hL
    exp_half: Coefficient  # e^{z/2}
    half: Coefficient  # (e^{z/2} - 1) / L
    f1: Coefficient  # h (-4 - z + e^z (4 - 3z + z^2)) / z^3
    f2: Coefficient  # h (2 + z + e^z (z - 2)) / z^3
    f3: Coefficient  # h (-4 - 3z - z^2 + e^z (4 - z)) / z^3


def _contour_mean(function: Callable[[Spectrum], Spectrum], z: Spectrum) -> Spectrum:
    """The mean of function over the circle of radius 1 around each z (shape (K,)): f(z) for an
    entire f, without the cancellation that a direct evaluation suffers for small |z|."""
    # Half-integer angles keep every point off the real axis, so none lands on w = 0 (the
    # removable singularity) when z is real.
    angles = 2 * np.pi * (np.arange(CONTOUR_POINTS) + 0.5) / CONTOUR_POINTS
    points = z[:, None] + np.exp(1j * angles)[None, :]  # (K, CONTOUR_POINTS)
    return function(points).mean(axis=1)


def etdrk4_step(linear: ArrayLike, h: float) -> Etdrk4Step:
    """ETDRK4 coefficients (Cox & Matthews 2002, eq. 26) for the diagonal linear part `linear`
    (K,), real or complex, and the step h; real coefficients for a real L."""
    linear = np.asarray(linear)
    z = h * linear.astype(np.complex128)

    def mean(function: Callable[[Spectrum], Spectrum]) -> Spectrum:
        return h * _contour_mean(function, z)

    coefficients = {
        "exp_full": np.exp(z),
        "exp_half": np.exp(z / 2),
        "half": mean(lambda w: (np.exp(w / 2) - 1) / w),
        "f1": mean(lambda w: (-4 - w + np.exp(w) * (4 - 3 * w + w**2)) / w**3),
        "f2": mean(lambda w: (2 + w + np.exp(w) * (w - 2)) / w**3),
        "f3": mean(lambda w: (-4 - 3 * w - w**2 + np.exp(w) * (4 - w)) / w**3),
    }
    if not np.iscomplexobj(linear):
        # The circle is symmetric about the real axis, so the means are real up to round-off;
        # real arrays also make each product with a spectrum cheaper.
        coefficients = {name: value.real.copy() for name, value in coefficients.items()}
    return Etdrk4Step(**coefficients)


def _advance(v: Spectrum, nonlinear: Nonlinear, c: Etdrk4Step) -> Spectrum:
    """One ETDRK4 step of Cox & Matthews (2002) from the spectrum v (K,)."""
    nv = nonlinear(v)
    decayed = c.exp_half * v
    a = decayed + c.half * nv
    na = nonlinear(a)
    b = decayed + c.half * na
    nb = nonlinear(b)
    cc = c.exp_half * a + c.half * (2 * nb - nv)
    nc = nonlinear(cc)
    return c.exp_full * v + c.f1 * nv + 2 * c.f2 * (na + nb) + c.f3 * nc


def integrate(
    v0: Spectrum, linear: Spectrum, nonlinear: Nonlinear, times: NDArray[np.float64], dt: float
) -> NDArray[np.complex128]:
    """v_t = L v + N(v) from v0 (K,) at t = 0 to each of the sorted times (T,); returns (T, K).

    Each interval between consecutive times is split into the fewest equal steps h <= dt, so every
    output time is hit; the coefficients are computed once per distinct h.
    """
    out = np.empty((len(times), len(v0)), dtype=np.complex128)
    v, now, steps = v0, 0.0, {}
    for i, target in enumerate(times):
        interval = target - now
        count = int(np.ceil(interval / dt - 1e-9)) if interval > 0 else 0
        if count:
            # Intervals of linspace differ in the last bits: rounding h to 14 digits lets one set
            # of coefficients serve them all, at a cost (~1e-14 relative in h) far below the error.
            h = float(f"{interval / count:.13e}")
            if h not in steps:
                steps[h] = etdrk4_step(linear, h)
            for _ in range(count):
                v = _advance(v, nonlinear, steps[h])
        out[i], now = v, target
    return out


def _check_times(times: ArrayLike) -> NDArray[np.float64]:
    """times as float64 (T,), checked to be >= 0 and non-decreasing."""
    t = np.atleast_1d(np.asarray(times, dtype=np.float64))
    if t.ndim != 1 or np.any(t < 0) or np.any(np.diff(t) < 0):
        raise ValueError(f"times must be a 1-D non-decreasing array of t >= 0, got {times!r}")
    return t


def _check_resolution(n_modes: int, dt: float) -> int:
    """n_modes as an int, checked to be even and >= 8, with dt > 0."""
    n = operator.index(n_modes)
    if n < 8 or n % 2:
        raise ValueError(f"n_modes must be an even int >= 8, got {n_modes!r}")
    if not dt > 0:
        raise ValueError(f"dt must be > 0, got {dt!r}")
    return n


def allen_cahn_initial(x: ArrayLike) -> NDArray[np.float64]:
    """The benchmark's u(x, 0) = x^2 cos(pi x), of x's shape."""
    x = np.asarray(x, dtype=np.float64)
    return x**2 * np.cos(np.pi * x)


def _allen_cahn_initial_spectrum(n_modes: int) -> Spectrum:
    """The exact Fourier coefficients of x^2 cos(pi x) on [-1, 1), truncated to |m| < n / 2, in the
    scaling of np.fft.rfft on the periodic grid; shape (n_modes // 2 + 1,).

    u = sum_m c_m e^{i pi m x} with c_m = (I(m + 1) + I(m - 1)) / 4 and I(n) the integral of
    x^2 cos(pi n x) over [-1, 1]: 2 / 3 for n = 0, 4 (-1)^n / (pi n)^2 otherwise. On the grid
    x_j = -1 + 2 j / n that is sum_m c_m (-1)^m e^{2 pi i m j / n}, so rfft's m-th entry is
    n (-1)^m c_m.
    """
    m = np.arange(n_modes // 2 + 1)

    def integral(order: NDArray[np.int64]) -> NDArray[np.float64]:
        safe = np.where(order == 0, 1, order)
        return np.where(order == 0, 2.0 / 3.0, 4.0 * (-1.0) ** order / (np.pi * safe) ** 2)

    c = (integral(m + 1) + integral(m - 1)) / 4
    c[-1] = 0.0  # the Nyquist mode is dropped: keep the truncation symmetric in m
    return (n_modes * (-1.0) ** m * c).astype(np.complex128)


def solve_allen_cahn(
    times: ArrayLike,
    diffusion: float = ALLEN_CAHN_DIFFUSION,
    n_modes: int = ALLEN_CAHN_MODES,
    dt: float = ALLEN_CAHN_DT,
    initial: Callable[[NDArray[np.float64]], ArrayLike] | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """u_t = D u_xx + 5 u - 5 u^3 on [-1, 1) periodic, by Fourier ETDRK4.

    Args:
        times: output times (T,), >= 0 and non-decreasing.
        diffusion: D.
        n_modes: grid points (even); the FFT carries wavenumbers pi m, |m| <= n_modes / 2.
        dt: the largest time step.
        initial: u(x, 0) as a function of x (n,) -> (n,), periodic and smooth (it is sampled on
            the grid); None for the benchmark's x^2 cos(pi x), taken from its exact coefficients.

    Returns:
        x (n_modes,), times (T,) and u (T, n_modes), float64.
    """
    n_modes = _check_resolution(n_modes, dt)
    t = _check_times(times)
    x, k = periodic_grid(n_modes), wavenumbers(n_modes)
    if initial is None:
        v0, initial = _allen_cahn_initial_spectrum(n_modes), allen_cahn_initial
    else:
        v0 = np.fft.rfft(np.asarray(initial(x), dtype=np.float64))
    # The 5 u goes into L: integrated exactly, and N(u) = -5 u^3 is then the only explicit term.
    linear = 5.0 - diffusion * k**2

    def nonlinear(v: Spectrum) -> Spectrum:
        u = np.fft.irfft(v, n_modes)
        return -5.0 * np.fft.rfft(u * u * u)  # not u**3: numpy's power is ~30x slower

    u = np.fft.irfft(integrate(v0, linear, nonlinear, t, dt), n_modes, axis=1)
    u[t == 0] = initial(x)
    return x, t, u


def kdv_initial(x: ArrayLike) -> NDArray[np.float64]:
    """The benchmark's u(x, 0) = cos(pi x), of x's shape."""
    return np.cos(np.pi * np.asarray(x, dtype=np.float64))


def solve_kdv(
    times: ArrayLike,
    mu: float = KDV_MU,
    n_modes: int = KDV_MODES,
    dt: float = KDV_DT,
    initial: Callable[[NDArray[np.float64]], ArrayLike] | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """u_t + u u_x + mu^2 u_xxx = 0 on [-1, 1) periodic, by Fourier ETDRK4 with 2/3 dealiasing.

    Args:
        times: output times (T,), >= 0 and non-decreasing.
        mu: the dispersion constant (Zabusky & Kruskal's 0.022 by default).
        n_modes: grid points (even); modes |m| <= n_modes / 3 are kept (2/3 rule).
        dt: the largest time step.
        initial: u(x, 0) as a function of x (n,) -> (n,), periodic and smooth; None for the
            benchmark's cos(pi x).

    Returns:
        x (n_modes,), times (T,) and u (T, n_modes), float64.
    """
    n_modes = _check_resolution(n_modes, dt)
    t = _check_times(times)
    x, k = periodic_grid(n_modes), wavenumbers(n_modes)
    initial = initial or kdv_initial
    # 2/3 rule: with |m| <= n / 3 kept, the aliases of u^2 (modes up to 2n / 3) fold onto
    # modes above n / 3, which the mask removes.
    keep = np.arange(len(k)) <= n_modes // 3
    v0 = np.fft.rfft(np.asarray(initial(x), dtype=np.float64)) * keep
    linear = 1j * mu**2 * k**3  # from -mu^2 (ik)^3
    flux_derivative = -0.5j * k * keep  # u u_x = (u^2 / 2)_x

    def nonlinear(v: Spectrum) -> Spectrum:
        u = np.fft.irfft(v, n_modes)
        return flux_derivative * np.fft.rfft(u * u)

    u = np.fft.irfft(integrate(v0, linear, nonlinear, t, dt), n_modes, axis=1)
    u[t == 0] = initial(x)
    return x, t, u


def _grid_points(
    x: NDArray[np.float64], t: NDArray[np.float64], u: NDArray[np.float64], nx: int
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Every (n / nx)-th grid point (nx divides n), t-major: row i * nx + j is (x[j], t[i]);
    x (n,), t (T,), u (T, n) -> points (T * nx, 2), values (T * nx,)."""
    stride = len(x) // nx
    grid_x, grid_t = np.meshgrid(x[::stride], t)  # (nt, nx) each
    points = np.stack([grid_x.ravel(), grid_t.ravel()], axis=1)
    return points, np.ascontiguousarray(u[:, ::stride]).ravel()


@lru_cache(maxsize=4)
def _cached_grid(
    equation: str, nx: int, nt: int, parameter: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The grid of `equation` ("allen_cahn" or "kdv"), solved once per arguments; read-only."""
    solve, n_modes = {
        "allen_cahn": (solve_allen_cahn, ALLEN_CAHN_MODES),
        "kdv": (solve_kdv, KDV_MODES),
    }[equation]
    nx = operator.index(nx)
    if nx < 1 or n_modes % nx:  # before the solve, not after
        raise ValueError(f"nx must divide the solver's {n_modes} grid points, got {nx}")
    x, t, u = solve(np.linspace(0.0, 1.0, nt), parameter)
    points, values = _grid_points(x, t, u, nx)
    points.flags.writeable = values.flags.writeable = False
    return points, values


def allen_cahn_reference_grid(
    nx: int = 512, nt: int = 201, diffusion: float = ALLEN_CAHN_DIFFUSION
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Allen-Cahn on nx points of [-1, 1) (nx divides ALLEN_CAHN_MODES) x linspace(0, 1, nt).

    Solved once per arguments (0.6-1.0 s for the defaults) and cached; each call returns copies.

    Returns:
        points (nx * nt, 2) holding (x, t), t-major (row i * nx + j is (x[j], t[i])), and values
        (nx * nt,), float64.
    """
    points, values = _cached_grid("allen_cahn", nx, nt, float(diffusion))
    return points.copy(), values.copy()


def kdv_reference_grid(
    nx: int = 512, nt: int = 201, mu: float = KDV_MU
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """KdV on nx points of [-1, 1) (nx divides KDV_MODES) x linspace(0, 1, nt).

    Solved once per arguments (1.0-1.4 s for the defaults) and cached; each call returns copies.

    Returns:
        points (nx * nt, 2) holding (x, t), t-major (row i * nx + j is (x[j], t[i])), and values
        (nx * nt,), float64.
    """
    points, values = _cached_grid("kdv", nx, nt, float(mu))
    return points.copy(), values.copy()
