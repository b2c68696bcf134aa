"""metrics.json's fresh_loss: the loss at points no run trained on, and the warning when a model
fits its training points rather than the PDE between them."""

import logging
import math

import pytest
import torch

from pinn import MLP, PointSampler, compose_config, loss_terms, train
from pinn.derivatives.engines import Engine
from pinn.problems.poisson import Poisson
from pinn.run.fresh_loss import FRESH_SEED, GAP, check_fresh_loss, fresh_loss


def small_model(seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    return MLP(2, 1, width=8, depth=2).double()


def test_fresh_loss_is_the_weighted_loss_at_uniform_points_of_its_own_seed():
    """Summed by hand here: 10 x the Dirichlet term + the PDE term, at the PointSampler's
    uniform draw from FRESH_SEED, with autograd fields; the same number on every call."""
    problem, model = Poisson(hard_boundary=False), small_model()
    sampler = PointSampler(
        problem.domain, 50, 20, "uniform", torch.Generator().manual_seed(FRESH_SEED), torch.float64
    )
    batch = sampler.draw()
    terms = loss_terms(problem, model, batch, Engine("autograd", model, announce=False))
    by_hand = (terms["pde"] + 10 * terms["dirichlet"]).item()

    weights = {"dirichlet": 10.0}
    got = fresh_loss(problem, model, 50, 20, weights)
    assert got == pytest.approx(by_hand, rel=1e-10)
    assert fresh_loss(problem, model, 50, 20, weights) == got
    assert fresh_loss(problem, model, 50, 20, {}) == pytest.approx(
        (terms["pde"] + terms["dirichlet"]).item(), rel=1e-10
    )
    # A weight for a term the batch has no rows for (an inverse problem's data) drops out.
    assert fresh_loss(problem, model, 50, 20, {**weights, "data": 3.0}) == got


def test_a_fresh_loss_far_above_the_final_one_is_warned_about(caplog):
    with caplog.at_level(logging.WARNING, logger="pinn"):
        assert check_fresh_loss(1.2e-3, 1e-3) and not caplog.records
        assert check_fresh_loss(math.nan, 1e-3) and not caplog.records
        assert check_fresh_loss(GAP * 1e-3, 1e-3) and not caplog.records
        assert not check_fresh_loss(159.0, 2.7e-5)
    (record,) = caplog.records
    message = record.getMessage()
    assert "159" in message and "2.7e-05" in message and "5.89e+06 times" in message
    assert "problem.n_interior" in message


def test_gauss_newton_on_a_few_points_fits_them_and_the_run_says_so(tmp_path, caplog):
    """Five interior points for a 16x2 network's 337 parameters: Gauss-Newton drives the
    training loss to almost nothing, the residual between the points stays large, the run
    warns and metrics.json keeps both losses."""
    cfg = compose_config(
        [
            "problem=poisson",
            "trainer.adam.steps=20",
            "trainer.gauss_newton.steps=30",
            "trainer.progress=false",
            "problem.n_interior=5",
            "model.width=16",
            "model.depth=2",
        ]
    )
    with caplog.at_level(logging.WARNING, logger="pinn"):
        metrics = train(cfg, tmp_path)
    assert metrics["fresh_loss"] > GAP * metrics["final_loss"]
    assert any("fresh points" in r.getMessage() for r in caplog.records)
