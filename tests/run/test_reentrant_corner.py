"""A hard constraint whose quotient u/φ is singular: u = 0 held by the distance function on the
L-shape, whose re-entrant corner makes u ~ r^(2/3) while φ ~ r (issue 45 §3).

The network must then learn N = u/φ ~ r^(-1/3), unbounded at the corner. It cannot, but φ
multiplies whatever it learns: where N falls short near the corner, the error in u is at most
about φ |N| ~ r^(2/3), over a region of small area, so rel_l2 stays small. Written from the
README as a new user would (a module and a yaml in the folder pinn runs from, pinn's default
network and phases), with an exact solution that vanishes on every edge:

    u = r^(2/3) sin(2θ/3) (1 - x²)(1 - y²),   -Δu = f,   u = φ N.

Measured, one thread beside other jobs: the default command (2000 points, 1000 Adam + 1000
L-BFGS) rel_l2 7.6e-3, max abs 2.8e-2, in 236 s; the reduced run below 6.5e-3, 3.1e-2 in 98 s.
The default run's error is spread, not held at the corner (its squared error on a 401² grid:
3 % within r < 0.02, 27 % for 0.02 <= r < 0.1, 37 % for 0.1 <= r < 0.3, 34 % beyond).
"""

import pytest

from pinn import compose_config, train

MODULE = '''
import torch

from pinn import Polygon, Problem

CORNERS = [[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [-1.0, 1.0], [-1.0, -1.0], [0.0, -1.0]]


def polar(x):
    """The angle in [-π/4, 7π/4) (continuous on the L-shape) and the radius."""
    angle = torch.remainder(torch.atan2(x[:, 1], x[:, 0]) + torch.pi / 4, 2 * torch.pi)
    return angle - torch.pi / 4, torch.hypot(x[:, 0], x[:, 1])


class Reentrant(Problem):
    """-Δu = f on the L-shape, u = 0 on every edge, held by its distance function."""

    domain = Polygon(CORNERS)

    def residual(self, x, u):
        return -u.laplacian() - self.source(x)

    def hard_constraint(self, x):
        distance = self.domain.distance(x)
        return torch.zeros_like(distance), distance

    def exact(self, x):
        angle, radius = polar(x)
        bubble = (1 - x[:, 0] ** 2) * (1 - x[:, 1] ** 2)
        return radius ** (2 / 3) * torch.sin(2 * angle / 3) * bubble

    def source(self, x):
        """-Δ(s w) = -(2 ∇s·∇w + s Δw), s = r^(2/3) sin(2θ/3) harmonic, w the bubble."""
        angle, radius = polar(x)
        X, Y = x[:, 0], x[:, 1]
        s = radius ** (2 / 3) * torch.sin(2 * angle / 3)
        s_x = -(2 / 3) * radius ** (-1 / 3) * torch.sin(angle / 3)
        s_y = (2 / 3) * radius ** (-1 / 3) * torch.cos(angle / 3)
        w_x, w_y = -2 * X * (1 - Y**2), -2 * Y * (1 - X**2)
        laplacian_w = -2 * (1 - Y**2) - 2 * (1 - X**2)
        return -(2 * (s_x * w_x + s_y * w_y) + s * laplacian_w)
'''

YAML = """# @package _global_
problem:
  target: reentrant.Reentrant
  params: {}
  n_interior: 2000
  n_boundary: 0
  sampler: sobol
"""


@pytest.fixture
def user_folder(tmp_path, monkeypatch):
    """A folder holding reentrant.py and conf/problem/reentrant.yaml, as the working directory."""
    (tmp_path / "reentrant.py").write_text(MODULE)
    (tmp_path / "conf" / "problem").mkdir(parents=True)
    (tmp_path / "conf" / "problem" / "reentrant.yaml").write_text(YAML)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def test_the_source_is_minus_the_laplacian_of_the_exact_solution(user_folder):
    import torch
    from reentrant import Reentrant

    problem = Reentrant()
    x = torch.tensor([[0.3, 0.4], [-0.5, -0.2], [0.7, 0.6], [-0.1, 0.05], [0.02, -0.9]])
    x = x.double()

    def exact_at(point):
        return problem.exact(point[None])[0]

    laplacian = torch.stack([torch.func.hessian(exact_at)(p).trace() for p in x])
    assert torch.allclose(-laplacian, problem.source(x), rtol=1e-12, atol=1e-12)
    on_edges = torch.tensor([[0.5, 0.0], [0.0, -0.5], [1.0, 0.5], [-0.3, 1.0]]).double()
    assert problem.exact(on_edges).abs().max() < 1e-12


@pytest.mark.slow
def test_a_singular_quotient_at_a_reentrant_corner_still_trains_to_1e_2(user_folder):
    overrides = [
        "problem=reentrant",
        "problem.n_interior=1000",
        "trainer.lbfgs.steps=500",
        "trainer.progress=false",
        "threads=1",
    ]
    metrics = train(compose_config(overrides), user_folder / "run")
    assert metrics["rel_l2"] <= 1e-2  # measured 6.5e-3
    assert metrics["max_abs_error"] <= 0.1  # measured 3.1e-2 (u at most 0.48)
