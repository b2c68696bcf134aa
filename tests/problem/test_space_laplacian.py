"""On a SpaceTime a residual's u.laplacian() is the Laplacian in space: u_t = Δu is the heat
equation, on every engine, in the first (checked) step and the planned ones after it, and in
Gauss-Newton's rows; a stochastic estimate draws its directions over the space coordinates."""

import pytest
import torch

from pinn import (
    Box,
    ConfigError,
    LaplacianEstimator,
    PointSampler,
    Problem,
    SpaceTime,
    TrainSettings,
    fit,
)
from pinn.derivatives.engines import Engine
from pinn.geometry import Batch
from pinn.problem.loss import residuals

SPACE_TIME = SpaceTime(Box([0.0, 0.0], [1.0, 1.0]), 0.0, 1.0)


class HeatByLaplacian(Problem):
    domain = SPACE_TIME

    def residual(self, x, u):
        return u.d("t") - u.laplacian()


class HeatBySecondDerivatives(HeatByLaplacian):
    def residual(self, x, u):
        return u.d("t") - u.d2("x") - u.d2("y")


class HeatWithTime(HeatByLaplacian):  # what u.laplacian() would be over every input
    def residual(self, x, u):
        return u.d("t") - u.d2("x") - u.d2("y") - u.d2("t")


def network():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(3, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1)
    ).double()


def batch():
    generator = torch.Generator().manual_seed(0)
    interior = SPACE_TIME.sample_interior(32, generator, "uniform", torch.float64)
    return Batch(interior, SPACE_TIME.sample_boundary(8, generator, "uniform", torch.float64))


@pytest.mark.parametrize("engine", ["autograd", "taylor", "functorch"])
def test_the_laplacian_on_a_space_time_is_over_space(engine):
    model, points = network(), batch()
    engines = {kind: Engine(engine, model, points.interior[:2], announce=False) for kind in "abc"}
    for _ in range(2):  # the checked first step, then the planned one
        by_laplacian = residuals(HeatByLaplacian(), model, points, engines["a"])["pde"]
        by_hand = residuals(HeatBySecondDerivatives(), model, points, engines["b"])["pde"]
        with_time = residuals(HeatWithTime(), model, points, engines["c"])["pde"]
        torch.testing.assert_close(by_laplacian, by_hand, rtol=0, atol=1e-12)
        assert (by_laplacian - with_time).abs().max() > 1e-3  # u_tt is not in it


def test_a_box_with_a_time_coordinate_keeps_the_laplacian_over_every_input():
    class OnABox(HeatByLaplacian):
        domain = Box([0.0, 0.0, 0.0], [1.0, 1.0, 1.0], names=["x", "y", "t"])

    class OnABoxWithTime(OnABox):
        residual = HeatWithTime.residual

    model, points = network(), batch()
    torch.testing.assert_close(
        residuals(OnABox(), model, points)["pde"],
        residuals(OnABoxWithTime(), model, points)["pde"],
        rtol=0,
        atol=1e-12,
    )


def test_gauss_newton_rows_take_the_laplacian_in_space():
    settings = TrainSettings(
        phases=["adam", "gauss_newton"], adam={"steps": 5}, gauss_newton={"steps": 3}
    )
    settings.progress = False
    histories = []
    for problem in (HeatByLaplacian(), HeatBySecondDerivatives()):
        generator = torch.Generator().manual_seed(1)
        points = PointSampler(SPACE_TIME, 64, 16, "sobol", generator, dtype=torch.float64)
        histories.append(fit(problem, network(), settings, points).history)
    losses = [[row["loss"] for row in history] for history in histories]
    assert len(losses[0]) > 3  # Adam's rows and Gauss-Newton's: the same up to rounding
    assert losses[0] == pytest.approx(losses[1], rel=1e-6)  # Gauss-Newton ends near 1e-7


class OffSpace(torch.nn.Module):
    """u = sin(3t) (x + y): no curvature in space (Δu = 0), u_tt = -9 u."""

    def forward(self, x):
        return torch.sin(3 * x[:, 2:]) * (x[:, :1] + x[:, 1:2])


def estimated_residuals(problem, model, engine, estimator):
    """The PDE residual of the checked first step and of a planned one, with the estimator."""
    engine = Engine(engine, model, batch().interior[:2], announce=False, estimator=estimator)
    return [residuals(problem, model, batch(), engine)["pde"] for _ in range(2)]


@pytest.mark.parametrize("method", ["sparse", "rademacher", "gaussian"])
@pytest.mark.parametrize("engine", ["autograd", "taylor"])
def test_a_stochastic_laplacian_on_a_space_time_leaves_time_out(engine, method):
    model = OffSpace().double()
    estimator = LaplacianEstimator(1, method, torch.Generator().manual_seed(0))
    u_t = residuals(HeatBySecondDerivatives(), model, batch())["pde"]  # Δu = 0 exactly
    for residual in estimated_residuals(HeatByLaplacian(), model, engine, estimator):
        torch.testing.assert_close(residual, u_t, rtol=0, atol=1e-12)


@pytest.mark.parametrize("engine", ["autograd", "taylor"])
def test_a_sparse_estimate_over_every_space_coordinate_is_the_laplacian_in_space(engine):
    model = network()
    estimator = LaplacianEstimator(2, "sparse", torch.Generator().manual_seed(0))
    exact = residuals(HeatBySecondDerivatives(), model, batch())["pde"]
    for residual in estimated_residuals(HeatByLaplacian(), model, engine, estimator):
        torch.testing.assert_close(residual, exact, rtol=0, atol=1e-12)


def test_a_space_time_trains_with_a_stochastic_laplacian_over_space():
    settings = TrainSettings(adam={"steps": 3}, lbfgs={"steps": 0})
    settings.progress = False
    generator = torch.Generator().manual_seed(1)
    points = PointSampler(SPACE_TIME, 16, 8, "sobol", generator, dtype=torch.float64)
    estimator = LaplacianEstimator(1, "sparse", torch.Generator().manual_seed(0))
    result = fit(HeatByLaplacian(), network(), settings, points, estimator=estimator)
    assert result.steps == 3 and 0 < result.final_loss < float("inf")
    too_many = LaplacianEstimator(3, "sparse", torch.Generator().manual_seed(0))
    with pytest.raises(ConfigError, match="more than the problem's 2 space coordinates"):
        fit(HeatByLaplacian(), network(), settings, points, estimator=too_many)
