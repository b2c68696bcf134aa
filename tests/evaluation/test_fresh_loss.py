"""metrics.json's fresh_loss: the loss at points no run trained on, which tells a model that
fits its training points rather than the PDE between them."""

import pytest
import torch

from pinn import MLP, ConfigError, PointSampler, compose_config, fresh_loss, train
from pinn.derivatives.engines import Engine
from pinn.evaluation.fresh_loss import FRESH_SEED
from pinn.problem import loss_terms
from pinn.problems.poisson import Poisson


def test_fresh_loss_is_the_weighted_loss_at_uniform_points_of_its_own_seed():
    """Summed by hand here: 10 x the Dirichlet term + the PDE term, at the PointSampler's
    uniform draw from FRESH_SEED, with autograd fields; the same number on every call."""
    torch.manual_seed(0)
    problem, model = Poisson(hard_boundary=False), MLP(2, 1, width=8, depth=2).double()
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
    # Every term training has is here (an inverse problem's "data" among the conditions), so a
    # weight for a term the problem lacks is refused, as training refuses it.
    with pytest.raises(ConfigError, match="data"):
        fresh_loss(problem, model, 50, 20, {**weights, "data": 3.0})


def test_gauss_newton_on_a_few_points_fits_them_and_fresh_loss_tells(tmp_path):
    """Five interior points for a 16x2 network's 337 parameters: Gauss-Newton drives the
    training loss to almost nothing while the residual between the points stays large; on
    the default's 1000 points the two agree."""
    settings = [
        "problem=poisson",
        "trainer.phases=[adam,gauss_newton]",
        "trainer.adam.steps=20",
        "trainer.gauss_newton.steps=30",
        "trainer.progress=false",
        "model.width=16",
        "model.depth=2",
    ]
    few = train(compose_config([*settings, "problem.n_interior=5"]), tmp_path / "few")
    assert few["final_loss"] < 1e-12 and few["fresh_loss"] > 1e-3

    enough = train(compose_config(settings), tmp_path / "enough")
    assert enough["fresh_loss"] == pytest.approx(enough["final_loss"], rel=0.5)
