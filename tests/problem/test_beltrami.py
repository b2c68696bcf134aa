"""Ethier & Steinman's Beltrami flow (`beltrami`): its closed form against the paper's written
out and the PDE (torch.func, float64), its hard constraint's data on the faces and at t = 0
(and the transfinite blend behind it), its parameters' checks, and a tiny run with VTK."""

import json
import math

import meshio
import numpy as np
import pytest
import torch
from torch import nn
from torch.func import hessian, jacrev, vmap

from pinn import ConfigError, PointSampler, compose_config, train
from pinn.config.schema import check_config
from pinn.derivatives.engines import Engine
from pinn.outputs.vtk import SERIES_NAME, SERIES_TIMES
from pinn.problem.loss import residuals
from pinn.problems.beltrami import Beltrami
from pinn.problems.transfinite import face_blend
from pinn.run.build import build_model

DOUBLE = torch.float64
PARAMS = [{}, {"a": 1.0, "d": 1.0}, {"a": 0.5, "d": 2.0, "viscosity": 0.1}]


def space_time_points(n: int, generator: torch.Generator) -> torch.Tensor:
    """(n, 4) points (x, y, z, t) uniform in [-1, 1]³ x [0, 1]."""
    unit = torch.rand(n, 4, generator=generator, dtype=DOUBLE)
    return unit * torch.tensor([2.0, 2.0, 2.0, 1.0], dtype=DOUBLE) - torch.tensor(
        [1.0, 1.0, 1.0, 0.0], dtype=DOUBLE
    )


def ethier_steinman(x: torch.Tensor, a: float, d: float, nu: float) -> torch.Tensor:
    """(N, 4) u, v, w, p as Ethier & Steinman print them (eqs. 2-3), written out term by term."""
    x_, y, z, t = x.unbind(1)
    e, s, c = torch.exp, torch.sin, torch.cos
    decay = e(-nu * d**2 * t)
    u = -a * (e(a * x_) * s(a * y + d * z) + e(a * z) * c(a * x_ + d * y)) * decay
    v = -a * (e(a * y) * s(a * z + d * x_) + e(a * x_) * c(a * y + d * z)) * decay
    w = -a * (e(a * z) * s(a * x_ + d * y) + e(a * y) * c(a * z + d * x_)) * decay
    p = (
        -(a**2)
        / 2
        * (
            e(2 * a * x_)
            + e(2 * a * y)
            + e(2 * a * z)
            + 2 * s(a * x_ + d * y) * c(a * z + d * x_) * e(a * (y + z))
            + 2 * s(a * y + d * z) * c(a * x_ + d * y) * e(a * (z + x_))
            + 2 * s(a * z + d * x_) * c(a * y + d * z) * e(a * (x_ + y))
        )
        * decay**2
    )
    return torch.stack([u, v, w, p], dim=1)


@pytest.mark.parametrize("params", PARAMS)
def test_the_closed_form_is_the_papers(params, generator):
    problem = Beltrami(**params)
    points = space_time_points(500, generator)
    paper = ethier_steinman(points, problem.a, problem.d, problem.viscosity)
    torch.testing.assert_close(problem.exact(points), paper, rtol=0, atol=1e-13)


@pytest.mark.parametrize("params", PARAMS)
def test_the_exact_solution_satisfies_the_pde(params, generator):
    """Momentum and continuity at 500 points by torch.func in float64: the terms reach ~20 and
    cancel to round-off (measured 4e-15 on the defaults)."""
    problem = Beltrami(**params)
    points = space_time_points(500, generator)

    def solution(point: torch.Tensor) -> torch.Tensor:
        return problem.exact(point[None])[0]  # (4,): u, v, w, p

    jacobian = vmap(jacrev(solution))(points)  # (N, output, input)
    second = vmap(hessian(solution))(points)  # (N, output, input, input)
    velocity, space = problem.exact(points)[:, :3], slice(0, 3)
    laplacian = second[:, space, space, space].diagonal(dim1=2, dim2=3).sum(-1)  # (N, 3)
    advection = torch.einsum("nj,nij->ni", velocity, jacobian[:, space, space])
    momentum = (
        jacobian[:, space, 3] + advection + jacobian[:, 3, space] - problem.viscosity * laplacian
    )
    continuity = jacobian[:, space, space].diagonal(dim1=1, dim2=2).sum(-1)
    assert advection.abs().max() > 1.0  # the terms are not small themselves
    assert momentum.abs().max() < 1e-12
    assert continuity.abs().max() < 1e-12


class ExactFlow(nn.Module):
    """The exact solution as a pointwise 'network', (N, 4) -> (N, 4)."""

    def __init__(self, problem: Beltrami):
        super().__init__()
        self.problem = problem
        self.anchor = nn.Parameter(torch.zeros((), dtype=DOUBLE))  # engines want a parameter

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.problem.exact(x) + 0 * self.anchor


@pytest.mark.parametrize("engine", ["taylor", "autograd"])
def test_the_problems_residual_vanishes_on_the_exact_solution(engine):
    """The residual the problem trains on, through the library's engines: its four terms."""
    problem = Beltrami()
    model = ExactFlow(problem)
    sampler = PointSampler(
        problem.domain, 300, 0, "sobol", torch.Generator().manual_seed(0), DOUBLE
    )
    terms = residuals(problem, model, sampler.draw(), Engine(engine, model, announce=False))
    assert set(terms) == {
        "pde_momentum_x",
        "pde_momentum_y",
        "pde_momentum_z",
        "pde_continuity",
    }
    for name, values in terms.items():
        assert values.abs().max() < 1e-12, name


def face_points(axis: int, end: float, generator: torch.Generator) -> torch.Tensor:
    points = space_time_points(400, generator)
    points[:, axis] = end
    return points


@pytest.mark.parametrize("params", PARAMS[:2])
def test_the_velocity_is_held_on_every_face_and_at_t_0(params, generator):
    """B = 0 there (exactly) and g is the exact velocity (to round-off)."""
    problem = Beltrami(**params)
    faces = [(axis, end) for axis in range(3) for end in (-1.0, 1.0)] + [(3, 0.0)]
    for axis, end in faces:
        points = face_points(axis, end, generator)
        g, b = problem.hard_constraint(points)
        assert (b[:, :3] == 0).all(), (axis, end)
        torch.testing.assert_close(g[:, :3], problem.exact(points)[:, :3], rtol=0, atol=1e-13)


def test_the_pressure_is_held_on_every_face_but_not_at_t_0(generator):
    """p is given on the six faces (it fixes p's free function of time), not at t = 0."""
    problem = Beltrami(a=1.0, d=1.0)
    for axis, end in [(axis, end) for axis in range(3) for end in (-1.0, 1.0)]:
        points = face_points(axis, end, generator)
        g, b = problem.hard_constraint(points)
        assert (b[:, 3] == 0).all(), (axis, end)
        torch.testing.assert_close(g[:, 3], problem.exact(points)[:, 3], rtol=0, atol=1e-13)
    inside_at_t_0 = face_points(3, 0.0, generator)
    assert (problem.hard_constraint(inside_at_t_0)[1][:, 3] > 0).all()


def test_inside_the_constraint_leaves_the_network_an_order_one_field(generator):
    """B > 0 inside, at most 1; the N that u = g + B N asks for is O(1) (measured: at most 0.3
    for the velocity, 1.1 for p on 500 random points; here on more, near faces too)."""
    problem = Beltrami()
    points = space_time_points(4000, generator)
    g, b = problem.hard_constraint(points)
    assert (b > 0).all() and b.max() <= 1
    wanted = (problem.exact(points) - g) / b
    assert wanted[:, :3].abs().max() < 1.0 and wanted[:, 3].abs().max() < 2.0


def test_the_face_blend_reads_the_data_on_the_boundary_only_and_keeps_it_there(generator):
    """P[f] on [-1, 2] x [0, 1] x [-2, 2]: each of the 26 points asked lies on a face; P[f] = f
    on the faces; a function linear in one coordinate is reproduced everywhere, e^(xyz) not."""
    lower, upper = [-1.0, 0.0, -2.0], [2.0, 1.0, 2.0]
    asked = []

    def data(coordinates):
        asked.append(torch.stack(coordinates, -1))
        x, y, z = coordinates
        return torch.stack([x * torch.sin(y) * torch.cos(z), torch.exp(x * y * z)], -1)

    low, high = torch.tensor(lower, dtype=DOUBLE), torch.tensor(upper, dtype=DOUBLE)
    points = low + torch.rand(300, 3, generator=generator, dtype=DOUBLE) * (high - low)
    blend = face_blend(data, points.unbind(1), lower, upper)
    (on_faces,) = asked
    assert on_faces.shape == (300, 26, 3)
    assert ((on_faces == low) | (on_faces == high)).any(dim=-1).all()
    exact = data(points.unbind(1))
    torch.testing.assert_close(blend[:, 0], exact[:, 0], rtol=0, atol=1e-14)  # linear in x
    assert (blend[:, 1] - exact[:, 1]).abs().max() > 1e-3  # not the data inside
    for axis in range(3):
        for end in (lower[axis], upper[axis]):
            on_face = points.clone()
            on_face[:, axis] = end
            torch.testing.assert_close(
                face_blend(data, on_face.unbind(1), lower, upper),
                data(on_face.unbind(1)),
                rtol=0,
                atol=1e-13,
            )


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"a": -1.0}, "problem.params.a must be a number > 0"),
        ({"d": 0.0}, "problem.params.d must be a number > 0"),
        ({"viscosity": "one"}, "problem.params.viscosity must be a number > 0"),
        ({"viscosity": math.inf}, "problem.params.viscosity must be a number > 0"),
        ({"a": True}, "problem.params.a must be a number > 0"),
    ],
)
def test_bad_parameters_are_refused_by_their_key(params, message):
    with pytest.raises(ConfigError, match=message):
        Beltrami(**params)


def test_the_yaml_keeps_the_papers_parameters_and_a_network_of_10_4_parameters():
    cfg = compose_config(["problem=beltrami"])
    problem = Beltrami(**cfg.problem.params)
    assert (problem.a, problem.d, problem.viscosity) == (math.pi / 4, math.pi / 2, 1.0)
    model = build_model(problem, check_config(cfg).model, 0)
    assert sum(p.numel() for p in model.parameters()) >= 10_000 and cfg.problem.n_boundary == 0


TINY = [
    "problem=beltrami",
    "trainer.adam.steps=3",
    "trainer.kfac.steps=0",
    "trainer.progress=false",
    "problem.n_interior=64",
    "model.width=8",
    "model.depth=2",
    "outputs.vtk=true",
]


def test_a_tiny_run_measures_every_output_and_writes_a_vtk_time_series(tmp_path):
    train(compose_config(TINY), tmp_path)
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["steps"] == 3
    for key in ("rel_l2", "rel_l2_u", "rel_l2_v", "rel_l2_w", "rel_l2_p"):
        assert math.isfinite(metrics[key]) and metrics[key] > 0, key
    series = json.loads((tmp_path / SERIES_NAME).read_text())
    times = [entry["time"] for entry in series["files"]]
    assert np.allclose(times, np.linspace(0.0, 1.0, SERIES_TIMES), rtol=0, atol=1e-15)
    first, last = (meshio.read(tmp_path / series["files"][k]["name"]) for k in (0, -1))
    assert list(first.cells_dict) == ["hexahedron"]
    names = {f"{n}{s}" for n in "uvwp" for s in ("", "_reference", "_error")}
    assert set(first.point_data) == names
    # at t = 0 the velocity is held exactly: the network's part vanishes
    for name in "uvw":
        assert np.abs(first.point_data[f"{name}_error"]).max() < 1e-12
    assert np.abs(last.point_data["u_error"]).max() > 0
