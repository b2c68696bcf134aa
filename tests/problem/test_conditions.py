"""Conditions: each residual against hand-computed values, where they hold, engines, training."""

from collections.abc import Callable
from math import pi

import pytest
import torch
from torch import nn

from pinn import (
    MLP,
    Box,
    ConfigError,
    Dirichlet,
    Initial,
    Neumann,
    Periodic,
    PinnError,
    PointSampler,
    Polygon,
    Problem,
    Robin,
    TrainSettings,
    fit,
)
from pinn.derivatives.engines import Engine, TaylorField
from pinn.derivatives.field import Field
from pinn.geometry import Batch
from pinn.nn import InputOptions
from pinn.problem import loss_terms
from pinn.problem.conditions import select

TOL = {"atol": 1e-10, "rtol": 1e-10}
BOX = Box([0.0, 0.0], [1.0, 2.0])
SPACE_TIME = Box([0.0, 0.0], [1.0, 1.0], names=["x", "t"])


class Known(nn.Module):
    """A pointwise 'network' computing a known function of the (N, d) points: (N, 1)."""

    def __init__(self, function: Callable[[torch.Tensor], torch.Tensor]):
        super().__init__()
        self.function = function

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.function(x)[:, None]


def field_on(box: Box, function, generator, n: int = 40):
    """(field of `function` at n boundary points of `box`, those boundary points), float64."""
    boundary = box.sample_boundary(n, generator, dtype=torch.float64)
    return Field(Known(function), boundary.points, box.names, ("u",)), boundary


def zeros(n: int) -> torch.Tensor:
    return torch.zeros(n, dtype=torch.float64)


# ---- Dirichlet and where conditions hold ------------------------------------------------


def test_dirichlet_is_zero_for_a_matching_model_and_u_minus_value_otherwise(generator):
    u, boundary = field_on(BOX, lambda p: p[:, 0] + p[:, 1] ** 2, generator)
    on_right = boundary.points[boundary.on("x_max")]
    exact = Dirichlet(on="x_max", value=lambda p: 1.0 + p[:, 1] ** 2)
    torch.testing.assert_close(exact.residual(u, boundary), zeros(len(on_right)), **TOL)
    wrong = Dirichlet(on="x_max", value=0.5)
    torch.testing.assert_close(wrong.residual(u, boundary), 0.5 + on_right[:, 1] ** 2, **TOL)


def test_a_predicate_selects_part_of_a_face(generator):
    u, boundary = field_on(BOX, lambda p: p[:, 0] + p[:, 1], generator, n=120)
    lower_left = lambda p: (p[:, 0] == 0.0) & (p[:, 1] < 1.0)  # noqa: E731
    mask = select(lower_left, boundary, "part")
    expected = boundary.on("x_min") & (boundary.points[:, 1] < 1.0)
    assert torch.equal(mask, expected)
    assert 0 < int(mask.sum()) < int(boundary.on("x_min").sum())  # part of the face, not all
    residual = Dirichlet(on=lower_left, value=0.0, name="part").residual(u, boundary)
    torch.testing.assert_close(residual, boundary.points[expected][:, 1], **TOL)


@pytest.mark.parametrize(
    ("predicate", "complaint"),
    [
        (lambda p: p[:, 0] < 0.5, None),  # the right one, for contrast
        (lambda p: (p[:, 0] < 0.5).double(), "torch.float64"),
        (lambda p: p[:, :1] < 0.5, r"\(40, 1\)"),
        (lambda p: [True] * len(p), "got list"),
    ],
)
def test_a_predicate_of_the_wrong_shape_or_dtype_is_refused(predicate, complaint, generator):
    u, boundary = field_on(BOX, lambda p: p[:, 0], generator)
    condition = Dirichlet(on=predicate, name="half")
    if complaint is None:
        assert condition.residual(u, boundary).shape == (int(predicate(boundary.points).sum()),)
        return
    with pytest.raises(ConfigError, match=rf"'half'.*\(40,\) bool tensor.*{complaint}"):
        condition.residual(u, boundary)


def test_unknown_faces_empty_selections_and_bad_values_are_refused(generator):
    u, boundary = field_on(BOX, lambda p: p[:, 0], generator)
    with pytest.raises(ConfigError, match=r"'top'.*\['x_min', 'x_max', 'y_min', 'y_max'\]"):
        Neumann(on=["x_min", "top"]).residual(u, boundary)
    with pytest.raises(ConfigError, match="'far' selects none of the 40 boundary points"):
        Dirichlet(on=lambda p: p[:, 0] > 5.0, name="far").residual(u, boundary)
    with pytest.raises(ConfigError, match=r"value function must return.*shape \(\d+,\)"):
        Dirichlet(on="x_min", value=lambda p: p).residual(u, boundary)
    with pytest.raises(
        ConfigError, match=r"^condition 'flux': its value function .*got \(\d+, 1\)"
    ):
        Neumann(on="x_max", value=lambda p: p[:, :1], name="flux").residual(u, boundary)
    with pytest.raises(ConfigError, match="on=3"):
        Dirichlet(on=3)


# ---- Neumann and Robin: the outward normal ----------------------------------------------


@pytest.mark.parametrize(
    ("face", "outward"), [("x_min", -3.0), ("x_max", 3.0), ("y_min", -2.0), ("y_max", 2.0)]
)
def test_neumann_uses_the_outward_normal_on_each_face(face, outward, generator):
    u, boundary = field_on(BOX, lambda p: 3.0 * p[:, 0] + 2.0 * p[:, 1], generator)
    n = int(boundary.on(face).sum())
    torch.testing.assert_close(Neumann(on=face, value=outward).residual(u, boundary), zeros(n))
    # The inward normal would give -outward: a condition written with it is off by 2 |du/dn|.
    inward = Neumann(on=face, value=-outward).residual(u, boundary)
    torch.testing.assert_close(inward, torch.full((n,), 2 * outward, dtype=torch.float64))


def test_robin_combines_value_and_outward_flux(generator):
    u, boundary = field_on(Box([0.0], [1.0]), lambda p: (p[:, 0] + 1.0) ** 2, generator, n=4)
    # At x = 1: u = 4, du/dn = +u' = 4. At x = 0: u = 1, du/dn = -u' = -2.
    right = Robin(on="x_max", a=2.0, b=0.5, value=10.0).residual(u, boundary)
    torch.testing.assert_close(right, zeros(2), **TOL)
    left = Robin(on="x_min", a=lambda p: 2.0 + p[:, 0], b=1.0, value=1.0).residual(u, boundary)
    torch.testing.assert_close(left, torch.full((2,), 2.0 * 1 - 2 - 1.0, dtype=torch.float64))


def _u(p: torch.Tensor) -> torch.Tensor:
    return p[:, 0] ** 2 + 3 * p[:, 0] * p[:, 1]


def _flux_of(p: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
    """grad u . n for u = x^2 + 3 x y: grad u = (2x + 3y, 3x)."""
    return (2 * p[:, 0] + 3 * p[:, 1]) * n[:, 0] + 3 * p[:, 0] * n[:, 1]


def test_neumann_and_robin_values_may_take_the_outward_normals(generator):
    # A triangular hole (its normals point into it, slanted): no constant flux would do.
    plate = Box([-1.0, -1.0], [1.0, 1.0]) - Polygon([[-0.3, -0.3], [0.4, -0.2], [0.0, 0.5]])
    boundary = plate.sample_boundary(200, generator, dtype=torch.float64)
    u = Field(Known(_u), boundary.points, ("x", "y"))
    hole = ["edge0", "edge1", "edge2"]
    on_hole = boundary.on(hole)
    neumann = Neumann(on=hole, value=_flux_of, normals=True)
    torch.testing.assert_close(neumann.residual(u, boundary), zeros(int(on_hole.sum())), **TOL)
    # Robin: a u + b du/dn = value, each of a, b, value given the normals (b = |n|^2 = 1).
    robin = Robin(
        on="boundary",
        a=lambda p, n: n[:, 0],
        b=lambda p, n: (n * n).sum(dim=1),
        value=lambda p, n: n[:, 0] * _u(p) + _flux_of(p, n),
        normals=True,
    )
    torch.testing.assert_close(robin.residual(u, boundary), zeros(len(boundary.points)), **TOL)
    # Without normals=True the value is called with the points alone: a two-argument function
    # is refused naming the flag (and one of the points alone with it), and a constant with
    # normals=True is refused as pointless.
    needs = r"called with \(points\) but takes \(points, normals\): give the condition normals=True"
    with pytest.raises(ConfigError, match=needs):
        Neumann(on="boundary", value=_flux_of).residual(u, boundary)
    with pytest.raises(ConfigError, match=r"takes \(points\) only: give the condition normals=F"):
        Robin(on="boundary", a=lambda p, n: n[:, 0], value=_u, normals=True).residual(u, boundary)
    failing = Dirichlet(on="boundary", value=lambda p: p[:, 5])  # its own error stays its own
    with pytest.raises(IndexError):
        failing.residual(u, boundary)
    with pytest.raises(ConfigError, match="normals=True passes the outward normals"):
        Neumann(on="boundary", value=1.0, normals=True)
    with pytest.raises(ConfigError, match="normals must be True or False"):
        Robin(on="boundary", value=_flux_of, normals="yes")


# ---- Periodic ---------------------------------------------------------------------------


def test_periodic_matches_points_across_opposite_faces(generator):
    periodic = lambda p: torch.sin(2 * pi * p[:, 0]) + p[:, 1] ** 2  # noqa: E731
    u, boundary = field_on(BOX, periodic, generator)
    n = int(boundary.on("x_min").sum())
    both = Periodic(on=("x_min", "x_max"), derivative=True)
    torch.testing.assert_close(both.residual(u, boundary), zeros(2 * n), **TOL)

    u, boundary = field_on(BOX, lambda p: p[:, 0] ** 2 + p[:, 1], generator)
    # u(0, y) - u(1, y) = -1, and u_x(0, y) - u_x(1, y) = 0 - 2.
    expected = torch.cat([torch.full((n,), -1.0), torch.full((n,), -2.0)]).double()
    torch.testing.assert_close(both.residual(u, boundary), expected, **TOL)
    reverse = Periodic(on=("x_max", "x_min")).residual(u, boundary)
    torch.testing.assert_close(reverse, torch.ones(int(boundary.on("x_max").sum())).double())


@pytest.mark.parametrize("faces", [("x_min", "y_max"), ("x_min", "x_min"), "x", ("x_min",)])
def test_periodic_refuses_faces_that_are_not_opposite(faces):
    with pytest.raises(ConfigError, match="two opposite faces"):
        Periodic(on=faces)


def test_periodic_refuses_faces_the_box_does_not_have(generator):
    u, boundary = field_on(BOX, lambda p: p[:, 0], generator)
    with pytest.raises(ConfigError, match=r"'z_min'.*\['x_min', 'x_max', 'y_min', 'y_max'\]"):
        Periodic(on=("z_min", "z_max")).residual(u, boundary)


# ---- Initial ----------------------------------------------------------------------------


def test_initial_value_and_rate_hold_on_t_min_only(generator):
    solution = lambda p: torch.sin(pi * p[:, 0]) * (1.0 + 2.0 * p[:, 1])  # noqa: E731
    u, boundary = field_on(SPACE_TIME, solution, generator)
    at_start = boundary.points[boundary.on("t_min")]
    value = Initial(value=lambda p: torch.sin(pi * p[:, 0]))
    rate = Initial(rate=lambda p: 2.0 * torch.sin(pi * p[:, 0]))
    assert (value.name, rate.name) == ("initial", "initial_rate")
    torch.testing.assert_close(value.residual(u, boundary), zeros(len(at_start)), **TOL)
    torch.testing.assert_close(rate.residual(u, boundary), zeros(len(at_start)), **TOL)
    still = Initial(rate=0.0).residual(u, boundary)
    torch.testing.assert_close(still, 2.0 * torch.sin(pi * at_start[:, 0]), **TOL)


def test_initial_refuses_a_missing_time_coordinate_and_an_unclear_request(generator):
    u, boundary = field_on(SPACE_TIME, lambda p: p[:, 0], generator)
    with pytest.raises(ConfigError, match=r"no coordinate is named 'tau'.*\['x', 't'\]"):
        Initial(value=0.0, time="tau").residual(u, boundary)
    with pytest.raises(ConfigError, match="exactly one of value= and rate="):
        Initial(value=0.0, rate=0.0)
    with pytest.raises(ConfigError, match="exactly one of value= and rate="):
        Initial()


class HeatLike(Problem):
    """u_t = u_xx on [0, 1]²: Dirichlet in x, Initial at t = 0, nothing at t = 1."""

    domain = SPACE_TIME
    conditions = [
        Dirichlet(on=["x_min", "x_max"], value=0.0),
        Initial(value=lambda p: torch.sin(pi * p[:, 0])),
    ]

    def residual(self, x, u):
        return u.d("t") - u.d2("x")


def test_each_condition_sees_only_its_faces(generator):
    """A model wrong only on t_max costs nothing; wrong on t_min costs only `initial`."""
    boundary = SPACE_TIME.sample_boundary(64, generator, dtype=torch.float64)
    batch = Batch(SPACE_TIME.sample_interior(16, generator, dtype=torch.float64), boundary)

    def exact(p):
        return torch.exp(-(pi**2) * p[:, 1]) * torch.sin(pi * p[:, 0])

    wrong_at_end = Known(lambda p: exact(p) + torch.where(p[:, 1] == 1.0, 5.0, 0.0))
    terms = loss_terms(HeatLike(), wrong_at_end, batch)
    assert terms["dirichlet"].item() < 1e-25 and terms["initial"].item() < 1e-25
    wrong_at_start = Known(lambda p: exact(p) + torch.where(p[:, 1] == 0.0, 5.0, 0.0))
    terms = loss_terms(HeatLike(), wrong_at_start, batch)
    assert terms["dirichlet"].item() < 1e-25
    assert terms["initial"].item() == pytest.approx(25.0)


# ---- engines: the Taylor path plans the boundary requests too ---------------------------


class EveryCondition(Problem):
    """Not physics: every condition at once, to compare the engines."""

    domain = SPACE_TIME
    conditions = [
        Periodic(on=("x_min", "x_max"), derivative=True),
        Initial(value=lambda p: torch.sin(2 * pi * p[:, 0])),
        Initial(rate=0.5),
        Neumann(on="t_max", value=lambda p: p[:, 0]),
        Robin(on=lambda p: (p[:, 1] == 1.0) & (p[:, 0] < 0.5), a=2.0, b=-1.0, value=1.0),
    ]

    def residual(self, x, u):
        return u.d("t") - u.d2("x")


def small_mlp(generator, d=2, width=10):
    return MLP(
        d,
        1,
        width=width,
        depth=2,
        inputs=InputOptions(lower=[0.0] * d, upper=[1.0] * d),
        generator=generator,
    )


def test_taylor_and_autograd_agree_on_every_condition(generator):
    model = small_mlp(generator).double()
    boundary = SPACE_TIME.sample_boundary(60, generator, dtype=torch.float64)
    batch = Batch(SPACE_TIME.sample_interior(20, generator, dtype=torch.float64), boundary)
    reference = loss_terms(
        EveryCondition(), model, batch, Engine("autograd", model, announce=False)
    )
    taylor = Engine("taylor", model, announce=False)
    for _ in range(2):  # the first call records the requests, the second runs the planned pass
        terms = loss_terms(EveryCondition(), model, batch, taylor)
        for name, value in reference.items():
            torch.testing.assert_close(terms[name], value, **TOL)
    planned = taylor.field(boundary.points, ("x", "t"), ("u",), "boundary")
    assert isinstance(planned, TaylorField) and planned.plan.first == {0, 1}
    opposite = taylor.field(boundary.points, ("x", "t"), ("u",), "periodic:periodic")
    assert isinstance(opposite, TaylorField) and opposite.plan.first == {0}


def test_fit_gives_the_same_losses_on_both_engines():
    histories = {}
    for engine in ("taylor", "autograd"):
        model = small_mlp(torch.Generator().manual_seed(0)).double()
        points = PointSampler(
            SPACE_TIME, 32, 40, "sobol", torch.Generator().manual_seed(1), dtype=torch.float64
        )
        settings = TrainSettings(adam={"steps": 4}, lbfgs={"steps": 3}, log_every=1, progress=False)
        histories[engine] = fit(EveryCondition(), model, settings, points, engine=engine).history
    assert len(histories["taylor"]) == len(histories["autograd"]) >= 7
    for taylor, autograd in zip(histories["taylor"], histories["autograd"]):
        for name in ("loss", "pde", "periodic", "initial", "initial_rate", "neumann", "robin"):
            assert taylor[name] == pytest.approx(autograd[name], rel=1e-10, abs=1e-14)


# ---- training runs with known solutions -------------------------------------------------


class PoissonNeumann(Problem):
    """u'' = -pi² sin(pi x) on [0, 1], du/dn = -u'(0) = -pi, u(1) = 0; exact u = sin(pi x)."""

    domain = Box([0.0], [1.0])
    conditions = [Neumann(on="x_min", value=-pi), Dirichlet(on="x_max", value=0.0)]

    def residual(self, x, u):
        return u.d2("x") + pi**2 * torch.sin(pi * x[:, 0])

    def exact(self, x):
        return torch.sin(pi * x[:, 0])


class Heat(HeatLike):
    """u_t = u_xx on [0, 1] x [0, 0.5], u = 0 at x = 0, 1, u(x, 0) = sin(pi x)."""

    domain = Box([0.0, 0.0], [1.0, 0.5], names=["x", "t"])

    def exact(self, x):
        return torch.exp(-(pi**2) * x[:, 1]) * torch.sin(pi * x[:, 0])


class PeriodicReaction(Problem):
    """-u'' + u = (1 + 4 pi²) sin(2 pi x) on [0, 1], periodic in u and u'; exact sin(2 pi x).

    Periodicity of both u and u' alone makes the solution unique: no pinning condition.
    """

    domain = Box([0.0], [1.0])
    conditions = [Periodic(on=("x_min", "x_max"), derivative=True)]

    def residual(self, x, u):
        return -u.d2("x") + u() - (1 + 4 * pi**2) * torch.sin(2 * pi * x[:, 0])

    def exact(self, x):
        return torch.sin(2 * pi * x[:, 0])


# (problem, width, depth, interior, boundary points, L-BFGS steps, weights, tolerance).
# Measured rel_l2 over seeds 0-2: Poisson 1.7e-5 to 2.9e-5, heat 6.0e-4 to 2.1e-3,
# periodic 3.0e-4 to 5.1e-3, each 1 to 2 s on one thread.
RUNS = {
    "poisson_neumann": (PoissonNeumann, 16, 2, 64, 2, 200, None, 1e-3),
    "heat": (Heat, 16, 3, 256, 64, 400, {"initial": 10.0, "dirichlet": 10.0}, 1e-2),
    "periodic": (PeriodicReaction, 16, 2, 64, 2, 300, None, 2e-2),
}


@pytest.mark.parametrize("run", RUNS)
def test_training_reaches_the_known_solution(run):
    problem_class, width, depth, n_interior, n_boundary, lbfgs_steps, weights, tolerance = RUNS[run]
    problem = problem_class()
    domain = problem.domain
    model = MLP(
        domain.dim,
        1,
        width=width,
        depth=depth,
        inputs=InputOptions(lower=domain.lower, upper=domain.upper),
        generator=torch.Generator().manual_seed(0),
    ).double()
    points = PointSampler(
        domain, n_interior, n_boundary, "sobol", torch.Generator().manual_seed(1), torch.float64
    )
    settings = TrainSettings(
        adam={"steps": 100, "lr": 1e-2}, lbfgs={"steps": lbfgs_steps}, progress=False
    )
    fit(problem, model, settings, points, weights=weights)
    x = domain.grid(201 if domain.dim == 1 else 41, dtype=torch.float64)
    with torch.no_grad():
        error = model(x)[:, 0] - problem.exact(x)
    assert (error.norm() / problem.exact(x).norm()).item() < tolerance


# ---- unknown names, said where they were asked for ---------------------------------------


class Misnamed(Problem):
    """A residual or a condition asking for names the problem does not have."""

    domain = BOX

    def __init__(self, residual_name="x", condition_out=None):
        self.residual_name = residual_name
        self.conditions = [Dirichlet(on="x_min", value=0.0, out=condition_out, name="wall")]

    def residual(self, x, u):
        return u.d(self.residual_name) + u()


@pytest.mark.parametrize(
    ("problem", "message"),
    [
        (Misnamed(residual_name="z"), "Misnamed.residual: unknown input 'z'; the inputs are"),
        (Misnamed(condition_out="w"), "condition 'wall': unknown output 'w'; the outputs are"),
        (Misnamed(condition_out=3), "condition 'wall': output index 3 out of range"),
    ],
)
def test_an_unknown_name_is_said_with_where_it_was_asked_for(problem, message, generator):
    points = PointSampler(BOX, 16, 8, "sobol", generator, dtype=torch.float64)
    model = Known(lambda x: x[:, 0] * x[:, 1])
    with pytest.raises(PinnError) as refused:
        loss_terms(problem, model, points.draw())
    assert str(refused.value).startswith(message)
