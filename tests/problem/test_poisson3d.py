"""Poisson's equation on a cube minus a ball (`poisson3d`): its exact solution against the PDE
(torch.func, float64) and through the engines, zero on the whole boundary as the hard
constraint u = φ N holds it, its domain, and a tiny run."""

import json
import math

import pytest
import torch
from torch import nn
from torch.func import hessian, jacrev, vmap

from pinn import ConfigError, PointSampler, compose_config, load_problem, train
from pinn.config.schema import check_config
from pinn.derivatives.engines import Engine
from pinn.problem.loss import residuals
from pinn.problems.poisson3d import CENTRE, RADIUS, Poisson3D, exact_solution
from pinn.run.build import build_model

DOUBLE = torch.float64


def interior(n: int, generator: torch.Generator) -> torch.Tensor:
    return Poisson3D().domain.sample_interior(n, generator, "sobol", dtype=DOUBLE)


def test_the_source_is_minus_the_laplacian_of_the_exact_solution(generator):
    """Δu by torch.func in float64 at 2000 points against the closed-form Laplacian the source
    is made of, and the gradient likewise (Δu reaches ~17; measured 4e-15 apart)."""
    problem, points = Poisson3D(), interior(2000, generator)

    def solution(point: torch.Tensor) -> torch.Tensor:
        return problem.exact(point[None])[0]

    laplacian = vmap(hessian(solution))(points).diagonal(dim1=1, dim2=2).sum(-1)
    closed_form = exact_solution(points)
    assert laplacian.abs().max() > 5.0
    torch.testing.assert_close(closed_form.laplacian, laplacian, rtol=0, atol=1e-12)
    gradient = vmap(jacrev(solution))(points)
    torch.testing.assert_close(closed_form.gradient, gradient, rtol=0, atol=1e-13)


class ExactSolution(nn.Module):
    """The exact solution as a pointwise 'network', (N, 3) -> (N, 1)."""

    def __init__(self):
        super().__init__()
        self.anchor = nn.Parameter(torch.zeros((), dtype=DOUBLE))  # engines want a parameter

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return Poisson3D().exact(x)[:, None] + 0 * self.anchor


@pytest.mark.parametrize("engine", ["taylor", "autograd"])
def test_the_problems_residual_vanishes_on_the_exact_solution(engine):
    problem, model = Poisson3D(), ExactSolution()
    sampler = PointSampler(
        problem.domain, 500, 0, "sobol", torch.Generator().manual_seed(0), DOUBLE
    )
    terms = residuals(problem, model, sampler.draw(), Engine(engine, model, announce=False))
    assert list(terms) == ["pde"] and terms["pde"].abs().max() < 1e-12


def test_the_hard_constraint_is_the_exact_solution_on_the_whole_boundary(generator):
    """At 3000 points on the faces and the sphere: g = 0, φ = 0 (to round-off on the sphere),
    so u = g + φ N is the exact solution there (0) whatever N; inside φ > 0."""
    problem = Poisson3D()
    boundary = problem.domain.sample_boundary(3000, generator, "sobol", dtype=DOUBLE)
    on_sphere = boundary.part == problem.domain.part_names.index("hole")
    assert 0 < int(on_sphere.sum()) < 3000  # both kinds of piece are drawn
    g, phi = problem.hard_constraint(boundary.points)
    assert (g == 0).all()
    assert phi.abs().max() < 1e-14
    assert problem.exact(boundary.points).abs().max() < 1e-14
    inside = interior(3000, generator)
    g, phi = problem.hard_constraint(inside)
    assert (phi > 0).all()
    # N = u / φ, what the network must learn, stays O(1) (measured: at most 4.5, rms 1.6)
    assert (problem.exact(inside) / phi).abs().max() < 10.0


def test_the_domain_is_the_cube_less_an_off_centre_ball():
    domain = Poisson3D().domain
    assert domain.part_names == ("x_min", "x_max", "y_min", "y_max", "z_min", "z_max", "hole")
    assert domain.volume == pytest.approx(8 - 4 / 3 * math.pi * RADIUS**3, rel=1e-3)
    centre = torch.tensor([CENTRE], dtype=DOUBLE)
    assert not domain.contains(centre).any()
    assert all(abs(c) + RADIUS < 1 for c in CENTRE)  # the ball inside the cube


def test_the_problem_takes_no_parameters():
    with pytest.raises(ConfigError, match="radius"):
        load_problem("pinn.problems.poisson3d.Poisson3D", {"radius": 0.3})


def test_the_yaml_gives_a_network_of_10_4_parameters():
    cfg = compose_config(["problem=poisson3d"])
    model = build_model(Poisson3D(), check_config(cfg).model, 0)
    assert sum(p.numel() for p in model.parameters()) >= 10_000 and cfg.problem.n_boundary == 0


TINY = [
    "problem=poisson3d",
    "trainer.adam.steps=3",
    "trainer.kfac.steps=0",
    "trainer.progress=false",
    "problem.n_interior=64",
    "model.width=8",
    "model.depth=2",
]


def test_a_tiny_run_gives_finite_errors(tmp_path):
    train(compose_config(TINY), tmp_path)
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["steps"] == 3
    assert math.isfinite(metrics["rel_l2"]) and metrics["rel_l2"] > 0
    assert math.isfinite(metrics["max_abs_error"])
