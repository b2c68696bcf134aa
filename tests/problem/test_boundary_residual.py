"""BoundaryResidual: any residual on a boundary part, against the built-in conditions and
known derivatives, on every engine, in training, and its mistakes refused."""

import pytest
import torch
from torch import nn

from pinn import MLP, BoundaryResidual, Box, ConfigError, Neumann, PointSampler, Problem, fit
from pinn import TrainSettings as Settings
from pinn.derivatives.engines import Engine
from pinn.geometry import Batch
from pinn.nn import InputOptions
from pinn.problem.loss import loss_terms

TOL = {"atol": 1e-10, "rtol": 1e-10}
SQUARE = Box([0.0, 0.0], [1.0, 1.0], names=["x", "t"])


def flux(x, u, normals):
    """du/dn + 1: Neumann(value=-1) written by hand."""
    return (u.grad() * normals).sum(dim=1) + 1.0


class WithCondition(Problem):
    domain = SQUARE

    def __init__(self, condition):
        self.conditions = [condition]

    def residual(self, x, u):
        return u.d2("x") - u.d("t")


def model_of(seed: int = 0) -> nn.Module:
    generator = torch.Generator().manual_seed(seed)
    return MLP(
        2,
        1,
        width=10,
        depth=2,
        inputs=InputOptions(lower=[0.0, 0.0], upper=[1.0, 1.0]),
        generator=generator,
    )


@pytest.mark.parametrize("engine", ["taylor", "autograd"])
def test_a_flux_written_by_hand_is_neumanns_term_on_the_faces_it_selects(engine, generator):
    model = model_of().double()
    boundary = SQUARE.sample_boundary(60, generator, dtype=torch.float64)
    batch = Batch(SQUARE.sample_interior(20, generator, dtype=torch.float64), boundary)
    by_hand = WithCondition(BoundaryResidual(flux, on=["x_min", "t_max"], name="flux"))
    built_in = WithCondition(Neumann(on=["x_min", "t_max"], value=-1.0, name="flux"))
    reference = loss_terms(built_in, model, batch, Engine("autograd", model, announce=False))
    run = Engine(engine, model, announce=False)
    for _ in range(2):  # the Taylor engine records the first call, runs its plan on the second
        terms = loss_terms(by_hand, model, batch, run)
        torch.testing.assert_close(terms["flux"], reference["flux"], **TOL)


class Known(nn.Module):
    """u = sin(3x) t² + x: u_xt = 6 t cos(3x), u_xx = -9 sin(3x) t²."""

    def forward(self, x):
        return (torch.sin(3 * x[:, :1]) * x[:, 1:] ** 2 + x[:, :1]).reshape(-1, 1)


@pytest.mark.parametrize("engine", ["taylor", "autograd"])
def test_mixed_and_second_derivatives_in_a_boundary_residual_are_exact(engine, generator):
    model = Known()
    boundary = SQUARE.sample_boundary(50, generator, dtype=torch.float64)
    batch = Batch(SQUARE.sample_interior(10, generator, dtype=torch.float64), boundary)

    def mixed(x, u, normals):
        return u.d2("x", "t") + u.d2("x") * normals[:, 0]

    problem = WithCondition(BoundaryResidual(mixed, on="t_max", name="mixed"))
    on_top = boundary.on("t_max")
    x, t = boundary.points[on_top, 0], boundary.points[on_top, 1]
    expected = 6 * t * torch.cos(3 * x) + (-9 * torch.sin(3 * x) * t**2) * 0.0  # n = (0, 1)
    run = Engine(engine, model, announce=False)
    for _ in range(2):
        term = loss_terms(problem, model, batch, run)["mixed"]
        torch.testing.assert_close(term, (expected**2).mean(), **TOL)


def test_fit_trains_a_boundary_residual_as_it_trains_neumann():
    histories = {}
    for kind, condition in {
        "by_hand": BoundaryResidual(flux, on="x_min", name="flux"),
        "built_in": Neumann(on="x_min", value=-1.0, name="flux"),
    }.items():
        points = PointSampler(
            SQUARE, 32, 40, "sobol", torch.Generator().manual_seed(1), dtype=torch.float64
        )
        settings = Settings(adam={"steps": 4}, lbfgs={"steps": 3}, log_every=1, progress=False)
        result = fit(WithCondition(condition), model_of().double(), settings, points)
        histories[kind] = result.history
    assert len(histories["by_hand"]) == len(histories["built_in"]) >= 7
    for by_hand, built_in in zip(histories["by_hand"], histories["built_in"]):
        assert by_hand["flux"] == pytest.approx(built_in["flux"], rel=1e-10, abs=1e-14)


def test_a_residual_of_the_wrong_shape_or_no_function_is_refused(generator):
    model = model_of().double()
    boundary = SQUARE.sample_boundary(20, generator, dtype=torch.float64)
    batch = Batch(SQUARE.sample_interior(10, generator, dtype=torch.float64), boundary)
    column = WithCondition(BoundaryResidual(lambda x, u, n: u.grad()[:, :1], name="traction"))
    with pytest.raises(
        ConfigError, match=r"condition 'traction': .* shape \(20,\) .* got \(20, 1\)"
    ):
        loss_terms(column, model, batch, Engine("autograd", model, announce=False))
    with pytest.raises(ConfigError, match="residual must be a function of"):
        BoundaryResidual(0.0, name="traction")


def test_the_hole_of_a_plate_takes_a_traction_free_condition():
    """sigma . n = 0 on a hole (plane stress, two outputs): the example of the docstring runs
    and is zero for a rigid translation, whose stresses vanish."""
    nu = 0.3

    def traction_x(x, u, n):
        sxx = u.d("x", "u") + nu * u.d("y", "v")
        sxy = 0.5 * (1 - nu) * (u.d("y", "u") + u.d("x", "v"))
        return sxx * n[:, 0] + sxy * n[:, 1]

    plate = Box([-1.0, -1.0], [1.0, 1.0]) - pinn_disk()

    class Plate(Problem):
        domain = plate
        outputs = ("u", "v")
        conditions = [BoundaryResidual(traction_x, on="hole", name="traction_x")]

        def residual(self, x, u):
            return u.laplacian("u")

    translation = nn.Linear(2, 2)
    with torch.no_grad():
        translation.weight.zero_()
        translation.bias.copy_(torch.tensor([0.3, -0.2]))
    translation.double()
    generator = torch.Generator().manual_seed(0)
    batch = Batch(
        plate.sample_interior(20, generator, dtype=torch.float64),
        plate.sample_boundary(80, generator, dtype=torch.float64),
    )
    terms = loss_terms(Plate(), translation, batch, Engine("taylor", translation, announce=False))
    assert terms["traction_x"] == 0.0


def pinn_disk():
    from pinn import Disk

    return Disk([0.0, 0.0], 0.3, name="hole")
