"""The cylinder benchmark (Schäfer & Turek 2D-1): its exact conditions and its force integrals,
checked on fields whose forces are known in closed form."""

import math

import pytest
import torch
from torch import nn

from pinn import ConfigError
from pinn.problem.quantities import evaluate_quantities
from pinn.problems.cylinder import CENTRE, HEIGHT, LENGTH, RADIUS, Cylinder

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


def test_forces_of_known_fields():
    # p = -k x pushes the cylinder downstream with F_x = k π r² (divergence theorem); a shear
    # u = a y² adds F_x = 2 ν a π r²; v = b x² adds F_y = 2 ν b π r²; none of them lifts or drags
    # across. Coefficients are 2 F / (Ū² D).
    problem = Cylinder()
    k, a, b = 0.7, 3.0, -2.0

    def flow(x):
        return a * x[:, 1] ** 2, b * x[:, 0] ** 2, -k * x[:, 0]

    values = evaluate_quantities(problem, Flow(flow))
    scale = 2 / (0.2**2 * 0.1)
    area = math.pi * RADIUS**2
    assert values["drag"] == pytest.approx(scale * (k + 2e-3 * a) * area, rel=1e-6)
    assert values["lift"] == pytest.approx(scale * 2e-3 * b * area, rel=1e-6)
    assert values["pressure_drop"] == pytest.approx(-k * (0.15 - 0.25), rel=1e-12)


def test_the_benchmark_values_only_stand_for_its_settings():
    benchmark = {"drag": 5.5795, "lift": 0.0106, "pressure_drop": 0.1175}
    assert Cylinder().quantity_reference == benchmark
    assert Cylinder(peak_inflow=1.5).quantity_reference == {}
    for bad in (0, True, math.inf):
        with pytest.raises(ConfigError, match="problem.params.viscosity must be a number > 0"):
            Cylinder(viscosity=bad)
