"""The cylinder benchmark (Schäfer & Turek 2D-1): its exact conditions and its force integrals,
checked against the surface integrals on an exact flow and on a field that is no solution."""

import math

import pytest
import torch
from torch import nn

from pinn import ConfigError
from pinn.problem.quantities import QuantityTools, evaluate_quantities, ring_quadrature
from pinn.problems.cylinder import (
    CENTRE,
    HEIGHT,
    LENGTH,
    RADIUS,
    Cylinder,
    ring_test_function,
)
from pinn.problems.kovasznay import Kovasznay

F64 = torch.float64


class Flow(nn.Module):
    """A pointwise 'network' with (u, v, p) = flow(x): (N, 3)."""

    def __init__(self, flow):
        super().__init__()
        self.flow = flow
        self.anchor = nn.Parameter(torch.zeros((), dtype=F64))

    def forward(self, x):
        return torch.stack(self.flow(x), dim=1) + 0 * self.anchor


def test_every_condition_holds_exactly():
    problem = Cylinder()
    y = torch.linspace(0, HEIGHT, 9, dtype=F64)
    inlet = torch.stack([torch.zeros_like(y), y], dim=1)
    g, b = problem.hard_constraint(inlet)
    torch.testing.assert_close(g[:, 0], 4 * 0.3 * y * (HEIGHT - y) / HEIGHT**2)
    assert g[:, 1:].abs().max() == 0 and b[:, :2].abs().max() < 1e-12
    angle = torch.linspace(0, 2 * math.pi, 13, dtype=F64)
    circle = torch.stack([CENTRE[0] + RADIUS * angle.cos(), CENTRE[1] + RADIUS * angle.sin()], 1)
    walls = torch.tensor([[1.0, 0.0], [1.7, HEIGHT]], dtype=F64)
    for points in (circle, walls):
        g, b = problem.hard_constraint(points)
        assert g[:, :2].abs().max() < 1e-12 and b[:, :2].abs().max() < 1e-12
    outlet = torch.stack([torch.full_like(y, LENGTH), y], dim=1)
    assert problem.hard_constraint(outlet)[1][:, 2].abs().max() < 1e-12
    inside = torch.tensor([[0.5, 0.2], [0.2, 0.3]], dtype=F64)
    assert (problem.hard_constraint(inside)[1] > 0).all()


def kovasznay(x):
    """Kovasznay's exact steady Navier-Stokes flow at Re = 20 (ν = 0.05): u, v, p."""
    return tuple(Kovasznay().exact(x).unbind(1))


def surface_forces(problem, model):
    """The force on the cylinder, ∮ σ n_body ds, by the boundary's trapezoidal rule."""
    q = QuantityTools(problem, model)

    def traction(component):
        def integrand(x, u, normals):
            n_x, n_y = -normals[:, 0], -normals[:, 1]  # the body's outward normals
            shear = problem.viscosity * (u.d("y", "u") + u.d("x", "v"))
            if component == 0:
                return (-u("p") + 2 * problem.viscosity * u.d("x", "u")) * n_x + shear * n_y
            return shear * n_x + (-u("p") + 2 * problem.viscosity * u.d("y", "v")) * n_y

        return q.boundary_integral(integrand, on="cylinder").item()

    return traction(0), traction(1)


def test_the_volume_forces_of_an_exact_flow_are_its_surface_forces():
    # On an exact solution of the equations the volume integral (momentum times the test
    # function, by parts) equals the surface integral of the traction: Kovasznay's flow, with
    # the viscosity it solves the equations for.
    problem = Cylinder(viscosity=1 / 20)
    model = Flow(kovasznay)
    values = evaluate_quantities(problem, model)
    scale = 2 / (problem.mean_inflow**2 * 2 * RADIUS)
    drag, lift = (scale * force for force in surface_forces(problem, model))
    assert abs(drag) > 1 and abs(lift) > 1  # both forces are there to be got right
    assert values["drag"] == pytest.approx(drag, rel=1e-10)
    assert values["lift"] == pytest.approx(lift, rel=1e-10)


def test_the_volume_forces_weigh_the_momentum_residual():
    # A pressure p = -k x alone (u = v = 0) is no solution: its momentum residual ∂_x p = -k
    # enters the volume integral. F_x = -∫ σ_xx ∂_x w = -∫ k x ∂_x w, by parts the surface
    # force k π r² plus k ∫ w over the ring.
    k = 0.7
    problem = Cylinder()
    model = Flow(lambda x: (0 * x[:, 0], 0 * x[:, 0], -k * x[:, 0]))
    values = evaluate_quantities(problem, model)
    points, weights = ring_quadrature(CENTRE, RADIUS, 2 * RADIUS)
    test_integral = (weights * ring_test_function(points)[0]).sum().item()
    scale = 2 / (0.2**2 * 0.1)
    surface = k * math.pi * RADIUS**2
    assert values["drag"] == pytest.approx(scale * (surface + k * test_integral), rel=1e-12)
    assert values["lift"] == pytest.approx(0, abs=1e-12)
    assert values["pressure_drop"] == pytest.approx(-k * (0.15 - 0.25), rel=1e-12)


def test_the_benchmark_values_only_stand_for_its_settings():
    benchmark = {"drag": 5.5795, "lift": 0.0106, "pressure_drop": 0.1175}
    assert Cylinder().quantity_reference == benchmark
    assert Cylinder(peak_inflow=1.5).quantity_reference == {}
    for bad in (0, True, math.inf):
        with pytest.raises(ConfigError, match="problem.params.viscosity must be a number > 0"):
            Cylinder(viscosity=bad)
