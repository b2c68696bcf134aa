"""Every domain kind through the whole machinery: conditions on named parts, refinement,
validation, plots and a checkpoint that resumes bit for bit."""

import io

import pytest
import torch

from pinn import (
    MLP,
    Ball,
    Box,
    Dirichlet,
    Disk,
    Initial,
    Neumann,
    PointSampler,
    Polygon,
    Problem,
    Refinement,
    SpaceTime,
    TrainSettings,
    Validator,
    evaluation_points,
    fit,
)
from pinn.nn import InputOptions
from pinn.plots.solution import solution_figure

DOMAINS = {
    "annulus": (
        Disk([0.0, 0.0], 1.0, name="outer") - Disk([0.0, 0.0], 0.4, name="hole"),
        lambda: [Dirichlet(on="outer", value=exact), Neumann(on="hole", value=flux(0.0, -1.0))],
    ),
    "lshape": (
        Polygon([[0, 0], [1, 0], [1, 1], [-1, 1], [-1, -1], [0, -1]]),
        lambda: [Dirichlet(value=exact)],
    ),
    "union": (
        Box([0.0, 0.0], [1.0, 1.0]) | Disk([1.0, 0.5], 0.4),
        lambda: [
            Dirichlet(on=["x_min", "y_min", "y_max"], value=exact),
            Neumann(on="circle", value=flux(1.0, 1.0)),
        ],
    ),
    "ball": (Ball([0.0, 0.0, 0.0], 1.0), lambda: [Dirichlet(on="sphere", value=exact)]),
    "space_time": (
        SpaceTime(Disk([0.0, 0.0], 1.0), 0.0, 1.0),
        lambda: [Dirichlet(on="circle", value=exact), Initial(value=exact)],
    ),
}


def exact(x):
    """(N,) u = 1 + Σ x_i + x_0²: its Laplacian (over every coordinate) is 2."""
    return 1 + x.sum(dim=1) + x[:, 0] ** 2


def gradient(x):
    grad = torch.ones_like(x)
    grad[:, 0] += 2 * x[:, 0]
    return grad


def flux(center_x: float, outward: float):
    """du/dn on a circle centred at (center_x, 0.5 if center_x else 0): the normal is the
    radial direction, times `outward` (-1 on a hole: the domain's normal points into it)."""

    def value(points):
        center = torch.tensor([center_x, 0.5 if center_x else 0.0], dtype=points.dtype)
        radial = (points - center) / (points - center).norm(dim=1, keepdim=True)
        return outward * (gradient(points) * radial).sum(dim=1)

    return value


class OnShape(Problem):
    def __init__(self, name):
        self.domain, conditions = DOMAINS[name]
        self.conditions = conditions()

    def residual(self, x, u):
        return u.laplacian() - 2

    def exact(self, x):
        return exact(x)


SETTINGS = TrainSettings(
    adam={"steps": 24, "resample_every": 5, "refine_every": 6},
    lbfgs={"steps": 8},
    log_every=4,
    checkpoint_every=3,
    progress=False,
)


def run(name, method="rar", **options):
    problem = OnShape(name)
    domain = problem.domain
    generator = torch.Generator().manual_seed(0)
    model = MLP(
        domain.dim,
        1,
        8,
        2,
        inputs=InputOptions(lower=domain.lower, upper=domain.upper),
        generator=generator,
    )
    refinement = Refinement(method, candidates=200, add=8)
    points = PointSampler(
        domain,
        64,
        48,
        "sobol",
        torch.Generator().manual_seed(1),
        torch.float64,
        refinement=refinement,
    )
    validator = Validator(problem, evaluation_points(problem, n_points=500, dtype=torch.float64))
    result = fit(problem, model.double(), SETTINGS, points, validator=validator, **options)
    return problem, model, result


def flat(model):
    return torch.cat([p.detach().flatten() for p in model.parameters()])


@pytest.mark.parametrize("method", ["rar", "rad"])
@pytest.mark.parametrize("name", DOMAINS)
def test_a_run_on_any_shape_learns_and_resumes_exactly(name, method, written_checkpoints):
    written = written_checkpoints
    problem, model, result = run(name, method, checkpoint_path="unused.pt")
    history = result.history
    # Every condition is a loss term, and the run learns.
    assert {c.name for c in problem.conditions} <= set(history[0])
    assert history[-1]["loss"] < 0.2 * history[0]["loss"]
    assert history[-1]["rel_l2"] < history[0]["rel_l2"]
    # Refinement moved points inside the shape, and resuming (in Adam, in L-BFGS) changes
    # nothing.
    states = [torch.load(io.BytesIO(data), weights_only=True) for data in written]
    samplers = [state["training"]["sampler"] for state in states]
    moved = [s["added"] for s in samplers] + [
        s["refined"]["interior"] for s in samplers if "refined" in s
    ]
    assert sum(len(points) for points in moved) > 0
    assert all(problem.domain.contains(points).all() for points in moved)
    phases = [state["training"]["phase"] for state in states]
    for state in (states[phases.index("adam") + 4], states[phases.index("lbfgs")]):
        _, resumed_model, resumed = run(
            name, method, checkpoint_path="unused.pt", resume_from=state
        )
        assert torch.equal(flat(resumed_model), flat(model)), state["step"]
        assert resumed.final_loss == result.final_loss
    figure = solution_figure(problem, model, n_per_dim=21)
    assert any(axis.get_title().startswith("|error|") for axis in figure.axes)
