"""The two-soliton KdV problem (`kdv_solitons`): its closed form against the textbook ones and
the PDE (torch.func, float64), the exact slope of its boundary term, its hard constraint's data,
and its parameters' checks."""

from math import sqrt

import pytest
import torch
from torch.func import grad, vmap

from pinn import ConfigError
from pinn.problems.kdv_solitons import KdVSolitons

DOUBLE = torch.float64


def grid(nx: int = 81, nt: int = 41) -> torch.Tensor:
    """(nx * nt, 2) points (x, t) of a grid over [0, 20] x [0, 5], ends included."""
    x = torch.linspace(0.0, 20.0, nx, dtype=DOUBLE)
    t = torch.linspace(0.0, 5.0, nt, dtype=DOUBLE)
    return torch.cartesian_prod(x, t)


def pointwise(problem: KdVSolitons):
    """u(x, t) of two 0-d tensors, for torch.func."""
    return lambda x, t: problem.solution(x[None], t[None])[0]


def hirota(x: torch.Tensor, t: torch.Tensor, c=(6.0, 2.0), x0=(-2.0, 2.0)) -> torch.Tensor:
    """log F of Hirota's two-soliton tau function, u = 2 (log F)_xx: F = 1 + e^η1 + e^η2 +
    A e^(η1 + η2), A = ((√c1 - √c2) / (√c1 + √c2))², with the phases η_i = √c_i (x - c_i t -
    x0_i) - (log A) / 2 that put the interaction's shift half on each soliton, as the problem's
    x1, x2 do."""
    k1, k2 = sqrt(c[0]), sqrt(c[1])
    log_a = 2 * torch.log(torch.tensor((k1 - k2) / (k1 + k2), dtype=x.dtype))
    eta1 = k1 * (x - c[0] * t - x0[0]) - log_a / 2
    eta2 = k2 * (x - c[1] * t - x0[1]) - log_a / 2
    zero = torch.zeros_like(x)
    return torch.logsumexp(torch.stack([zero, eta1, eta2, eta1 + eta2 + log_a]), dim=0)


def test_the_closed_form_is_hirotas_two_soliton():
    """u = 2 ∂²/∂x² log F, differentiated by torch.func: an independent form of the solution."""
    points = grid()
    x, t = points[:, 0], points[:, 1]
    from_tau = 2 * vmap(grad(grad(hirota)))(x, t)
    u = KdVSolitons().exact(points)
    assert u.max() > 2.9  # the fast soliton's height, c1 / 2 = 3, away from the collision
    torch.testing.assert_close(u, from_tau, rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    "params", [{}, {"c1": 5.0, "c2": 1.0, "x1": 1.0, "x2": 6.0}, {"c1": 2.5, "c2": 2.0}]
)
def test_the_exact_solution_satisfies_the_pde(params):
    """u_t + 6 u u_x + u_xxx at 3321 points of the domain, by torch.func in float64: its terms
    reach ~30 and cancel to round-off (measured 5e-14 on the defaults)."""
    problem = KdVSolitons(**params)
    u = pointwise(problem)
    x, t = grid().unbind(1)
    u_t = vmap(grad(u, argnums=1))(x, t)
    u_x = vmap(grad(u, argnums=0))(x, t)
    u_xxx = vmap(grad(grad(grad(u, argnums=0), argnums=0), argnums=0))(x, t)
    residual = u_t + 6 * vmap(u)(x, t) * u_x + u_xxx
    assert u_xxx.abs().max() > 1.0  # the terms are not small themselves
    assert residual.abs().max() < 1e-11


def test_the_slope_is_the_derivative_of_the_exact_solution():
    """`slope`, the value of the u_x term at x = 20, is ∂u/∂x of the closed form in closed form."""
    problem = KdVSolitons()
    points = grid()
    by_autodiff = vmap(grad(pointwise(problem), argnums=0))(points[:, 0], points[:, 1])
    torch.testing.assert_close(problem.slope(points), by_autodiff, rtol=0, atol=1e-13)


def test_the_initial_value_is_two_separate_solitons():
    """At t = 0 the slow soliton has height c2 / 2 = 1 and its peak at x2 + 2δ/√c2, δ = artanh
    √(c2/c1): x2 but for its share of the collision's shift, the fast one being to its left (the
    fast one's tail adds little there); far right of both, u vanishes."""
    problem = KdVSolitons()
    x = torch.linspace(0.0, 20.0, 20001, dtype=DOUBLE)
    u0 = problem.solution(x, torch.zeros_like(x))
    shift = 2 * torch.atanh(torch.tensor(sqrt(2.0 / 6.0))).item() / sqrt(2.0)
    assert abs(x[u0.argmax()].item() - (2.0 + shift)) < 0.01
    assert abs(u0.max().item() - 1.0) < 0.01
    assert u0[x > 15].abs().max() < 1e-5


def test_the_hard_constraint_holds_the_initial_value_and_both_ends():
    """u = g + B N: B = 0 at t = 0 and x = 0, 20, where g is the exact solution; B > 0 inside."""
    problem = KdVSolitons()
    points = grid()
    x, t = points[:, 0], points[:, 1]
    g, b = problem.hard_constraint(points)
    held = (t == 0) | (x == 0) | (x == 20)
    assert held.sum() == 81 + 2 * 40
    assert (b[held] == 0).all() and (b[~held] > 0).all() and b.max() <= 25
    torch.testing.assert_close(g[held], problem.exact(points[held]), rtol=0, atol=1e-14)


def test_the_slope_at_x_20_is_the_only_loss_term_besides_the_pde():
    (condition,) = KdVSolitons().conditions
    assert condition.name == "neumann" and condition.on == "x_max"


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"c1": 2.0, "c2": 6.0}, "c1 must be greater than c2"),
        ({"c1": 2.0}, "c1 must be greater than c2"),
        ({"c1": -1.0}, "problem.params.c1 must be a number > 0"),
        ({"x1": "left"}, "problem.params.x1 must be a number"),
        ({"x2": float("nan")}, "problem.params.x2 must be finite"),
        ({"x2": True}, "problem.params.x2 must be a number"),
    ],
)
def test_bad_parameters_are_refused_by_their_key(params, message):
    with pytest.raises(ConfigError, match=message):
        KdVSolitons(**params)
