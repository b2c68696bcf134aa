"""Point weights (residual-based attention, `pinn.problem.point_weights`): the RBA and vRBA
updates against hand computations, the weighted loss against a hand-weighted sum (with causal
and term weights), Gauss-Newton's rows, the weights of redrawn points, their state, refusals."""

import math

import pytest
import torch

from pinn import MLP, Box, ConfigError, Dirichlet, PointSampler, Problem, TrainSettings, fit
from pinn.derivatives.engines import Engine
from pinn.problem.causal import CausalSettings, CausalWeighting, causal_factors, chunk_index
from pinn.problem.loss import loss_terms, residuals, weighted_sum
from pinn.problem.point_weights import PointWeights, PointWeightSettings, attention_targets
from pinn.problems.heat import Heat
from pinn.problems.poisson import Poisson
from pinn.training.rows.residual_rows import ResidualRows, parameters

POINTS = torch.zeros(4, 2, dtype=torch.float64)  # where the weights below belong


def weights_after(method, residual_sequence, **settings):
    """The (4,) weights of one term after an update from each (4,) residual in turn."""
    weights = PointWeights(PointWeightSettings(method=method, **settings))
    for residual in residual_sequence:
        weights.request()
        scales = weights.scales({"pde": torch.tensor(residual, dtype=torch.float64)}, POINTS)
    return scales["pde"]


def test_rba_moves_each_weight_by_its_share_of_the_largest_residual():
    # lambda <- 0.5 lambda + 0.2 |r| / max|r|, from 1: |r| / max = 1, 1/3, 0, 2/3
    first = weights_after("rba", [[3.0, -1.0, 0.0, 2.0]], gamma=0.5, eta=0.2, initial=1.0)
    assert first.tolist() == pytest.approx([0.7, 0.5 + 0.2 / 3, 0.5, 0.5 + 0.4 / 3], abs=1e-15)
    # then every |r| alike: each ratio is 1, so lambda <- 0.5 lambda + 0.2
    second = weights_after(
        "rba", [[3.0, -1.0, 0.0, 2.0], [-5.0, 5.0, 5.0, 5.0]], gamma=0.5, eta=0.2, initial=1.0
    )
    expected = [0.55, 0.25 + 0.1 / 3 + 0.2, 0.45, 0.25 + 0.2 / 3 + 0.2]
    assert second.tolist() == pytest.approx(expected, abs=1e-15)


def test_vrba_targets_are_the_authors_normalised_exponential_density():
    # update k: eps = c max|r| / ln(k + 2), q = exp(|r| / eps) / max q (update_vRBA, phi = 1)
    residual = [3.0, -1.0, 0.0, 2.0]
    for k, temperature in [(1, 1.0), (2, 1.0), (7, 0.5)]:
        eps = temperature * 3.0 / math.log(k + 2)
        q = [math.exp(abs(r) / eps) for r in residual]
        expected = [value / max(q) for value in q]
        magnitude = torch.tensor([residual], dtype=torch.float64).abs()
        targets = attention_targets(magnitude, "vrba", k, temperature)[0]
        assert targets.tolist() == pytest.approx(expected, rel=1e-14)
    # the first update by hand: 3^((ratio - 1) / 1) for the ratios 1, 1/3, 0, 2/3
    first = weights_after("vrba", [residual], gamma=0.9, eta=0.1, initial=0.0)
    hand = [0.1, 0.1 * 3 ** (-2 / 3), 0.1 / 3, 0.1 * 3 ** (-1 / 3)]
    assert first.tolist() == pytest.approx(hand, rel=1e-14)
    assert pytest.approx(0.04807498568, rel=1e-10) == 0.1 * 3 ** (-2 / 3)


def test_an_exact_residual_counts_every_point_as_the_largest():
    assert attention_targets(torch.zeros(2, 3), "rba", 1).tolist() == [[1.0] * 3] * 2
    assert attention_targets(torch.zeros(1, 3), "vrba", 5).tolist() == [[1.0] * 3]


def test_the_weights_stay_below_eta_over_one_minus_gamma():
    generator = torch.Generator().manual_seed(0)
    residuals_ = [torch.randn(4, generator=generator).tolist() for _ in range(300)]
    for method in ("rba", "vrba"):
        final = weights_after(method, residuals_, gamma=0.99, eta=0.05, initial=0.0)
        assert final.min().item() > 0 and final.max().item() <= 0.05 / (1 - 0.99)
        # a point always the largest rises to the bound: eta (1 - gamma^k) / (1 - gamma)
        largest = weights_after(method, [[1.0, 2.0, -2.0, 0.5]] * 300, gamma=0.99, eta=0.05)
        bound = 0.99**300 + 0.05 * (1 - 0.99**300) / (1 - 0.99)  # from initial 1
        assert largest[1].item() == largest[2].item() == pytest.approx(bound, rel=1e-12)


def test_each_pde_term_of_a_system_is_normalised_by_its_own_largest_residual():
    weights = PointWeights(PointWeightSettings("rba", gamma=0.0, eta=1.0))
    weights.request()
    terms = {
        "pde_a": torch.tensor([1.0, 2.0, 4.0, 0.0], dtype=torch.float64),
        "pde_b": torch.tensor([100.0, 50.0, 0.0, 25.0], dtype=torch.float64),
        "wall": torch.tensor([7.0, 7.0], dtype=torch.float64),  # a condition: not weighted
    }
    scales = weights.scales(terms, POINTS)
    assert list(scales) == ["pde_a", "pde_b"]
    assert scales["pde_a"].tolist() == [0.25, 0.5, 1.0, 0.0]
    assert scales["pde_b"].tolist() == [1.0, 0.5, 0.0, 0.25]
    row = weights.row()
    assert row == {"attention_mean_weight": 3.5 / 8, "attention_max_weight": 1.0}


def test_a_redrawn_point_starts_at_the_mean_weight_and_a_kept_one_keeps_its_own():
    weights = PointWeights(PointWeightSettings("rba", gamma=0.0, eta=1.0, initial=2.0))
    old = torch.rand(4, 2, dtype=torch.float64)
    assert weights.scales({"pde": torch.ones(4)}, old)["pde"].tolist() == [2.0] * 4  # initial
    weights.request()
    residual = torch.tensor([4.0, 2.0, 1.0, 1.0], dtype=torch.float64)
    assert weights.scales({"pde": residual}, old)["pde"].tolist() == [1.0, 0.5, 0.25, 0.25]
    # the same points in a new tensor (a resumed batch): nothing changes
    again = weights.scales({"pde": torch.ones(4)}, old.clone())["pde"]
    assert again.tolist() == [1.0, 0.5, 0.25, 0.25]
    # RAR: the points so far, then 2 added: those start at the mean, 0.5
    grown = torch.cat([old, torch.rand(2, 2, dtype=torch.float64)])
    assert weights.scales({"pde": torch.ones(6)}, grown)["pde"].tolist() == [
        1.0,
        0.5,
        0.25,
        0.25,
        0.5,
        0.5,
    ]
    # a fresh draw: every point at the mean of the six, 0.5
    fresh = torch.rand(3, 2, dtype=torch.float64)
    assert weights.scales({"pde": torch.ones(3)}, fresh)["pde"].tolist() == [0.5] * 3


def test_a_requested_update_is_made_once_then_the_weights_hold():
    weights = PointWeights(PointWeightSettings("rba", gamma=0.5, eta=1.0))
    weights.request()
    first = weights.scales({"pde": torch.tensor([2.0, 1.0, 0.0, 1.0])}, POINTS)["pde"].clone()
    held = weights.scales({"pde": torch.tensor([0.0, 0.0, 9.0, 0.0])}, POINTS)["pde"]
    assert torch.equal(first, held) and weights.updates == 1


def test_the_state_continues_exactly():
    settings = PointWeightSettings("vrba", gamma=0.9, eta=0.3)
    generator = torch.Generator().manual_seed(1)
    sequence = [torch.randn(4, generator=generator, dtype=torch.float64) for _ in range(6)]
    whole = PointWeights(settings)
    for residual in sequence:
        whole.request()
        whole.scales({"pde": residual}, POINTS)
    first = PointWeights(settings)
    for residual in sequence[:3]:
        first.request()
        first.scales({"pde": residual}, POINTS)
    resumed = PointWeights(settings)
    resumed.load_state_dict(first.state_dict(), "cpu")
    for residual in sequence[3:]:
        resumed.request()
        resumed.scales({"pde": residual}, POINTS.clone())  # a batch restored from a checkpoint
    assert torch.equal(resumed.weights, whole.weights) and resumed.updates == 6
    with pytest.raises(ConfigError, match="method=vrba, this run has rba"):
        PointWeights(PointWeightSettings("rba")).load_state_dict(first.state_dict(), "cpu")


# ---- the weighted loss --------------------------------------------------------------------------


def small(problem, generator, n_interior=24, n_boundary=16):
    model = MLP(2, 1, width=6, depth=2, generator=generator).double()
    points = PointSampler(
        problem.domain, n_interior, n_boundary, "uniform", generator, torch.float64
    )
    batch = points.draw()
    return model, batch, Engine("taylor", model, probe=batch.interior[:2], announce=False)


def hand_weights(residual, gamma, eta, initial=1.0):
    """(N,) weights after one RBA update from `initial`, by the formula."""
    magnitude = residual.detach().abs()
    return gamma * initial + eta * magnitude / magnitude.max()


def test_the_weighted_loss_is_the_hand_weighted_sum_of_squares():
    problem = Poisson(hard_boundary=False)
    model, batch, engine = small(problem, torch.Generator().manual_seed(3))
    raw = residuals(problem, model, batch, engine)
    weights = PointWeights(PointWeightSettings("rba", gamma=0.6, eta=0.7))
    weights.request()
    terms = loss_terms(problem, model, batch, engine, point_weights=weights)
    lam = hand_weights(raw["pde"], 0.6, 0.7)
    assert terms["pde"].item() == pytest.approx((lam * raw["pde"]).square().mean().item(), 1e-13)
    assert terms["dirichlet"].item() == pytest.approx(raw["dirichlet"].square().mean().item())
    loss = weighted_sum(terms, {"dirichlet": 10.0}).item()
    by_hand = (lam**2 * raw["pde"] ** 2).mean() + 10 * raw["dirichlet"].square().mean()
    assert loss == pytest.approx(by_hand.item(), rel=1e-13)
    assert lam.min().item() < 0.7 < lam.max().item()  # weights that differ between points


def test_point_weights_and_causal_weights_multiply():
    problem = Heat()
    generator = torch.Generator().manual_seed(4)
    model, batch, engine = small(problem, generator, n_interior=40)
    settings = CausalSettings(chunks=4, tolerance=2.0)
    raw = residuals(problem, model, batch, engine)["pde"]
    weights = PointWeights(PointWeightSettings("rba", gamma=0.5, eta=2.0))
    weights.request()
    terms = loss_terms(problem, model, batch, engine, CausalWeighting(settings), weights)
    chunk = chunk_index(batch.interior[:, 1], 0.0, 1.0, 4)
    factor = causal_factors(raw[None], chunk, settings)[0]
    lam = hand_weights(raw, 0.5, 2.0)
    expected = (lam**2 * factor[chunk] * raw**2).mean().item()
    assert terms["pde"].item() == pytest.approx(expected, rel=1e-12)
    assert factor[chunk].min().item() < 0.99  # causal weights that matter


@pytest.mark.parametrize("engine_name", ["taylor", "autograd"])
def test_gauss_newton_rows_are_the_weighted_residuals_and_square_sum_to_the_loss(engine_name):
    problem = Poisson(hard_boundary=False)
    model, batch, _ = small(problem, torch.Generator().manual_seed(5))
    engine = Engine(engine_name, model, probe=batch.interior[:2], announce=False)
    term_weights = {"dirichlet": 10.0}
    weights = PointWeights(PointWeightSettings("rba", gamma=0.3, eta=1.5))
    rows_of = ResidualRows(problem, model, engine, term_weights, point_weights=weights)
    rows_of(batch)  # records the plans; the weights start at 1
    weights.request()
    rows = rows_of(batch, jacobian=True)  # the update falls here, before the rows
    raw = residuals(problem, model, batch, engine)
    lam = hand_weights(raw["pde"], 0.3, 1.5)
    n = len(raw["pde"])
    pde_rows = rows.values[rows.layout["pde"]]
    assert torch.allclose(pde_rows, (lam * raw["pde"] / n**0.5).detach(), rtol=0, atol=1e-13)
    terms = loss_terms(problem, model, batch, engine, point_weights=weights)  # held since
    loss = weighted_sum(terms, term_weights).item()
    assert rows.loss.item() == pytest.approx(loss, rel=1e-12) and weights.updates == 1
    # the Jacobian: a reverse pass of every row, the weights constants
    vectors = residuals(problem, model, batch, engine, point_weights=weights.fixed())
    scaled = torch.cat(
        [(term_weights.get(k, 1.0) / v.numel()) ** 0.5 * v for k, v in vectors.items()]
    )
    params = parameters(model, problem)
    eye = torch.eye(scaled.numel(), dtype=scaled.dtype)
    grads = torch.autograd.grad(scaled, params, grad_outputs=eye, is_grads_batched=True)
    expected = torch.cat([g.reshape(scaled.numel(), -1) for g in grads], dim=1)
    assert (rows.jacobian - expected).abs().max().item() <= 1e-10


# ---- refusals -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "settings, key",
    [
        (dict(method="sa"), "trainer.point_weights.method"),
        (dict(method="rba", gamma=-0.1), "trainer.point_weights.gamma"),
        (dict(method="rba", gamma=1.0), "trainer.point_weights.gamma"),
        (dict(method="rba", gamma=float("nan")), "trainer.point_weights.gamma"),
        (dict(method="rba", eta=0.0), "trainer.point_weights.eta"),
        (dict(method="rba", eta=-0.01), "trainer.point_weights.eta"),
        (dict(method="rba", initial=-1.0), "trainer.point_weights.initial"),
        (dict(method="rba", every=0), "trainer.point_weights.every"),
        (dict(method="rba", every=1.5), "trainer.point_weights.every"),
        (dict(method="vrba", temperature=0.0), "trainer.point_weights.temperature"),
        (dict(method="vrba", temperature=float("inf")), "trainer.point_weights.temperature"),
    ],
)
def test_bad_settings_are_refused_in_one_line_naming_the_key(settings, key):
    with pytest.raises(ConfigError) as refused:
        PointWeightSettings(**settings)
    assert key in str(refused.value) and "\n" not in str(refused.value)
    with pytest.raises(ConfigError, match=key):
        TrainSettings(point_weights=settings)


class DataOnly(Problem):
    """No PDE term: u fitted to values on the boundary only."""

    domain = Box([0.0, 0.0], [1.0, 1.0])
    conditions = [Dirichlet(on="boundary", value=1.0)]

    def residual(self, x, u):
        return {}


def test_point_weights_on_a_problem_without_a_pde_term_are_refused_in_one_line():
    problem = DataOnly()
    generator = torch.Generator().manual_seed(0)
    model = MLP(2, 1, width=4, depth=1, generator=generator).double()
    points = PointSampler(problem.domain, 8, 8, "uniform", generator, torch.float64)
    settings = TrainSettings(
        phases=["adam"], adam={"steps": 2}, point_weights={"method": "rba"}, progress=False
    )
    with pytest.raises(ConfigError) as refused:
        fit(problem, model, settings, points)
    message = str(refused.value)
    assert "trainer.point_weights.method=rba weighs the PDE residual" in message
    assert "set trainer.point_weights.method=none" in message and "\n" not in message


def test_off_makes_no_weights():
    with pytest.raises(ValueError, match="point_weights=None"):
        PointWeights(PointWeightSettings())
