"""Loss weights: fixed ones change nothing; LRA matches the paper's update, checked by hand."""

from __future__ import annotations

import io
import math

import pytest
import torch
from torch.func import grad

from pinn.errors import ConfigError
from pinn.problem.loss import weighted_sum
from pinn.training.strategies.weighting import LossWeights, is_residual

DTYPE = torch.float64
FIXED = {"pde_v": 2.0, "dirichlet": 3.0}  # pde_u and data count once


def _parameters(generator: torch.Generator) -> dict[str, torch.Tensor]:
    """A linear model u = x @ W.T + b (3 inputs, 2 outputs) and a parameter no term uses."""
    shapes = {"W": (2, 3), "b": (2,), "unused": (4,)}
    return {
        name: torch.randn(shape, generator=generator, dtype=DTYPE).requires_grad_()
        for name, shape in shapes.items()
    }


def _points(generator: torch.Generator) -> dict[str, torch.Tensor]:
    sizes = {"interior": (8, 3), "boundary": (5, 3), "g": (5, 2), "data": (6, 3)}
    return {
        name: torch.randn(size, generator=generator, dtype=DTYPE) for name, size in sizes.items()
    }


def _terms(params: dict[str, torch.Tensor], points: dict[str, torch.Tensor]) -> dict:
    """Two residual terms, a condition using W and b, a data term using W only."""

    def u(x):
        return x @ params["W"].T + params["b"]

    interior = u(points["interior"])
    return {
        "pde_u": (interior[:, 0] - torch.sin(points["interior"][:, 0])).square().mean(),
        "pde_v": (interior[:, 1] * interior[:, 0]).square().mean(),
        "dirichlet": (u(points["boundary"]) - points["g"]).square().mean(),
        "data": (points["data"] @ params["W"][0]).square().mean(),
    }


@pytest.fixture
def problem(generator):
    """(parameters, points, terms) of the hand-made problem, terms attached to the graph."""
    params, points = _parameters(generator), _points(generator)
    return params, points, _terms(params, points)


def _flat_abs(gradients: dict[str, torch.Tensor]) -> torch.Tensor:
    return torch.cat([g.reshape(-1) for g in gradients.values()]).abs()


def _expected_estimate(params, points, name: str) -> float:
    """max |grad L_r| / mean |grad L_name| with torch.func (which gives zeros for unused)."""
    values = {key: value.detach() for key, value in params.items()}

    def residual(p):
        terms = _terms(p, points)
        return terms["pde_u"] + FIXED["pde_v"] * terms["pde_v"]

    g_r = _flat_abs(grad(residual)(values))
    g_i = _flat_abs(grad(lambda p: _terms(p, points)[name])(values))
    return (g_r.max() / g_i.mean()).item()


# ---- fixed weights and configuration errors ----------------------------------------------


def test_fixed_equals_weighted_sum_exactly(problem, grad_calls):
    params, _, terms = problem
    weights = {"pde_v": 2, "dirichlet": 0.37}  # an int among them, as a config may give
    fixed = LossWeights(weights)
    assert not fixed.update(terms, params.values(), step=0)
    assert grad_calls[0] == 0
    assert torch.equal(fixed.total(terms), weighted_sum(terms, weights))


@pytest.mark.parametrize(
    ("kwargs", "key"),
    [
        ({"method": "softadapt"}, "trainer.weighting="),
        ({"every": 0}, "trainer.weighting_every"),
        ({"every": 2.5}, "trainer.weighting_every"),
        ({"alpha": 0.0}, "trainer.weighting_alpha"),
        ({"alpha": 1.5}, "trainer.weighting_alpha"),
        ({"alpha": True}, "trainer.weighting_alpha"),
        ({"initial": {"dirichlet": -1.0}}, "problem.weights.dirichlet"),
        ({"initial": {"dirichlet": math.nan}}, "problem.weights.dirichlet"),
        ({"initial": {"dirichlet": "10"}}, "problem.weights.dirichlet"),
    ],
)
def test_bad_settings_name_their_config_key(kwargs, key):
    with pytest.raises(ConfigError, match=key):
        LossWeights(**kwargs)


@pytest.mark.parametrize("method", ["fixed", "lra"])
def test_unknown_weight_name_is_refused(problem, method):
    _, _, terms = problem
    with pytest.raises(ConfigError, match=r"problem\.weights.*'neumann'"):
        LossWeights({"neumann": 2.0}, method=method).total(terms)


def test_lra_needs_a_residual_term(problem):
    params, _, terms = problem
    conditions = {name: value for name, value in terms.items() if not is_residual(name)}
    with pytest.raises(ConfigError, match="trainer.weighting=lra"):
        LossWeights(method="lra").update(conditions, params.values(), step=0)


# ---- the LRA update ------------------------------------------------------------------------


def test_lra_update_matches_hand_computation(problem):
    params, points, terms = problem
    alpha = 0.3
    weights = LossWeights(FIXED, method="lra", alpha=alpha)
    assert weights.update(terms, params.values(), step=0)
    now = weights.current()
    for name, old in [("dirichlet", FIXED["dirichlet"]), ("data", 1.0)]:
        expected = (1 - alpha) * old + alpha * _expected_estimate(params, points, name)
        assert now[name] == pytest.approx(expected, rel=1e-12, abs=0)
    assert now["pde_u"] == 1.0 and now["pde_v"] == FIXED["pde_v"]  # residual weights stay


def test_updates_only_every_few_steps(problem, grad_calls):
    params, _, terms = problem
    weights = LossWeights(method="lra", every=5)
    updated, history = [], []
    for step in range(12):
        updated.append(weights.update(terms, params.values(), step))
        history.append(weights.current()["dirichlet"])
    assert [step for step, done in enumerate(updated) if done] == [0, 5, 10]
    assert grad_calls[0] == 3 * (1 + 2)  # the residual, dirichlet and data at each update
    changes = [step for step in range(1, 12) if history[step] != history[step - 1]]
    assert changes == [5, 10]


def test_update_leaves_grad_alone_and_backward_still_works(problem):
    params, points, terms = problem
    params["W"].grad = torch.ones_like(params["W"])
    weights = LossWeights(FIXED, method="lra", alpha=0.5)
    weights.update(terms, params.values(), step=0)
    assert torch.equal(params["W"].grad, torch.ones_like(params["W"]))
    assert params["b"].grad is None and params["unused"].grad is None

    params["W"].grad = None
    weights.total(terms).backward()  # the graph survived the update's gradient passes
    now = weights.current()
    values = {key: value.detach() for key, value in params.items()}
    expected = grad(lambda p: weighted_sum(_terms(p, points), now))(values)
    for name in ("W", "b"):  # the weight enters the gradient as a constant factor only
        torch.testing.assert_close(params[name].grad, expected[name], rtol=1e-12, atol=0)


def test_flat_and_detached_terms_keep_their_weight(problem):
    params, _, terms = problem
    terms = {
        "pde_u": terms["pde_u"],
        "flat": (params["W"] * 0).sum(),  # gradient all zero: mean 0, no estimate
        "constant": torch.tensor(0.5, dtype=DTYPE),  # no graph at all
        "off": terms["dirichlet"],  # weighted 0: switched off, stays off
    }
    weights = LossWeights({"flat": 4.0, "off": 0.0}, method="lra", alpha=1.0)
    assert weights.update(terms, params.values(), step=0)
    assert weights.current() == {"flat": 4.0, "off": 0.0, "pde_u": 1.0, "constant": 1.0}


def test_lra_balances_gradients_differing_by_1e4(generator):
    """At fixed parameters the weight converges to max|g_r| / mean|g_b|: after 100 updates
    with alpha = 0.1 the weighted condition gradient is within a factor 1.001 of the
    residual's (the gap shrinks as 0.9**n), from a factor of order 1e4 unweighted."""
    params = _parameters(generator)
    points = _points(generator)
    terms = _terms(params, points)
    terms = {"pde": 1e4 * terms["pde_u"], "bc": terms["dirichlet"]}
    values = {key: value.detach() for key, value in params.items()}
    g_r = _flat_abs(grad(lambda p: 1e4 * _terms(p, points)["pde_u"])(values)).max().item()
    g_b = _flat_abs(grad(lambda p: _terms(p, points)["dirichlet"])(values)).mean().item()
    assert g_r / g_b > 1e3  # unbalanced to begin with

    weights = LossWeights(method="lra", every=1)
    for step in range(100):
        weights.update(terms, params.values(), step)
    balance = weights.current()["bc"] * g_b / g_r
    assert 1 / 1.001 < balance < 1.001


# ---- history and checkpoints ---------------------------------------------------------------


def test_row_has_a_weight_for_every_term_seen(problem):
    _, _, terms = problem
    weights = LossWeights(FIXED)
    weights.total(terms)
    row = weights.row()
    assert set(row) == {"weight_pde_u", "weight_pde_v", "weight_dirichlet", "weight_data"}
    assert row["weight_pde_v"] == 2.0 and row["weight_data"] == 1.0


def test_state_dict_round_trip_continues_identically(generator):
    params, points = _parameters(generator), _points(generator)

    def update(weights, step):  # parameters move between updates, as in training
        with torch.no_grad():
            params["W"].add_(0.01 * step)
        weights.update(_terms(params, points), params.values(), step)

    settings = {"initial": FIXED, "method": "lra", "every": 1, "alpha": 0.2}
    original = LossWeights(**settings)
    for step in range(3):
        update(original, step)
    buffer = io.BytesIO()
    torch.save(original.state_dict(), buffer)
    buffer.seek(0)
    resumed = LossWeights(**settings)
    resumed.load_state_dict(torch.load(buffer, weights_only=True))
    assert resumed.current() == original.current()

    saved_W = params["W"].detach().clone()
    for step in range(3, 6):
        update(original, step)
    with torch.no_grad():
        params["W"].copy_(saved_W)
    for step in range(3, 6):
        update(resumed, step)
    assert resumed.current() == original.current()  # bit for bit
    assert resumed.row() == original.row()


def test_state_from_another_method_is_refused():
    with pytest.raises(ConfigError, match="trainer.weighting=lra"):
        LossWeights(method="fixed").load_state_dict(LossWeights(method="lra").state_dict())
